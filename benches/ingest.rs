//! Ingest throughput: 200 generated JUnit reports (about 26 MB in all,
//! 500 cases each with 2% failures carrying a body, properties and
//! system-out) ingested by `flakelab::history::ingest::ingest_reports` into a fresh
//! store, against a reference measured in the same run: reading the same
//! files and hashing them with SHA-256 (the least any ingest must do), and
//! `flakelab::results::junit::parse_file` alone.
//!
//! Run with `cargo bench --bench ingest`. Target: at least 100 MB/s of
//! JUnit ingested. Each figure is given per second of wall time and per
//! second of CPU time (user + system, `getrusage`): on a machine shared
//! with other builds the wall time mostly measures the wait for a core. Memory per report, not per number of reports: each
//! report is parsed and written before the next is opened.
//!
//! `cargo bench --bench ingest -- write DIR N` writes the first N of the
//! same reports into DIR and exits, for measuring the binary's memory:
//! `/usr/bin/time -v flakelab ingest --no-detect --store S DIR` with N = 1
//! and N = 200 (see the book's Performance page).

use std::fmt::Write as _;
use std::io::Read as _;
use std::path::Path;
use std::time::Instant;

use sha2::Digest as _;

const FILES: usize = 200;
const CASES: usize = 500;
const RUNS: usize = 3;

fn report(seed: usize) -> String {
    let mut s = String::with_capacity(400 * CASES);
    s.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
    let _ = writeln!(
        s,
        "  <testsuite name=\"suite{seed}\" tests=\"{CASES}\" timestamp=\"2026-11-01T10:00:00\">\n    <properties><property name=\"python\" value=\"3.12\"/></properties>"
    );
    for c in 0..CASES {
        let _ = write!(
            s,
            "    <testcase classname=\"tests.module{}.TestService{seed}\" name=\"test_case_{c}[param-{}]\" time=\"0.{:03}\" file=\"tests/module{}.py\" line=\"{}\">",
            c % 13,
            c % 7,
            c % 1000,
            c % 13,
            10 + c
        );
        if (c * 7 + seed).is_multiple_of(50) {
            s.push_str("<failure message=\"assert response.status == 200\">");
            for l in 0..20 {
                let _ = write!(
                    s,
                    "tests/module.py:{l}: in test_case\n    assert response.status == 200\n"
                );
            }
            s.push_str("</failure>");
        }
        s.push_str("<system-out>request id 8f14e45fceea167a5a36dedd4bea2543 served in 12 ms</system-out></testcase>\n");
    }
    s.push_str("  </testsuite>\n</testsuites>\n");
    s
}

/// CPU time (user + system) of this process so far, in seconds: on a
/// loaded machine the wall time mostly measures the wait for a core.
fn cpu() -> f64 {
    use nix::sys::resource::{getrusage, UsageWho};
    let u = getrusage(UsageWho::RUSAGE_SELF).unwrap();
    let s = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    s(u.user_time()) + s(u.system_time())
}

/// The best of [`RUNS`] rounds: (wall seconds, CPU seconds).
fn best(mut f: impl FnMut()) -> (f64, f64) {
    (0..RUNS)
        .map(|_| {
            let (t, c) = (Instant::now(), cpu());
            f();
            (t.elapsed().as_secs_f64(), cpu() - c)
        })
        .fold((f64::INFINITY, f64::INFINITY), |a, b| {
            (a.0.min(b.0), a.1.min(b.1))
        })
}

fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    v.sort();
    v
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if args.first().map(String::as_str) == Some("write") {
        let dir = Path::new(args.get(1).expect("write DIR N"));
        let n: usize = args
            .get(2)
            .and_then(|n| n.parse().ok())
            .expect("write DIR N");
        std::fs::create_dir_all(dir).unwrap();
        for i in 0..n {
            std::fs::write(dir.join(format!("junit-{i:04}.xml")), report(i)).unwrap();
        }
        println!("wrote {n} report(s) into {}", dir.display());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let reports = dir.path().join("reports");
    std::fs::create_dir_all(&reports).unwrap();
    let mut bytes = 0u64;
    for i in 0..FILES {
        let r = report(i);
        bytes += r.len() as u64;
        std::fs::write(reports.join(format!("junit-{i:04}.xml")), r).unwrap();
    }
    let mb = bytes as f64 / 1e6;
    let paths = files(&reports);

    let hash = best(|| {
        for p in &paths {
            let mut f = std::fs::File::open(p).unwrap();
            let mut h = sha2::Sha256::new();
            let mut buf = vec![0u8; 1 << 18];
            loop {
                let n = f.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                h.update(&buf[..n]);
            }
            std::hint::black_box(h.finalize());
        }
    });
    let parse = best(|| {
        for p in &paths {
            std::hint::black_box(flakelab::results::junit::parse_file(p).unwrap());
        }
    });
    let recorded = flakelab::history::context::Recorded {
        context: [("os".to_string(), "linux".to_string())].into(),
        commit: Some("c1".into()),
        provenance: Default::default(),
    };
    let mut round = 0;
    let ingest = best(|| {
        round += 1;
        let store =
            flakelab::store::Store::open(&dir.path().join(format!("store{round}"))).unwrap();
        let s = flakelab::history::ingest::ingest_reports(
            &store,
            std::slice::from_ref(&reports),
            &recorded,
            &flakelab::redact::Redaction::default(),
        )
        .unwrap();
        assert_eq!(s.recorded, FILES as u64);
    });
    let history =
        std::fs::metadata(flakelab::store::Store::at(&dir.path().join("store1")).history_path())
            .unwrap()
            .len();
    println!(
        "ingest: {FILES} reports, {mb:.1} MB of JUnit, {} cases (MB/s of wall time, then of CPU time)",
        FILES * CASES
    );
    let line = |what: &str, (wall, cpu): (f64, f64)| {
        println!(
            "  {what:<28} {:7.1} MB/s wall  {:7.1} MB/s CPU",
            mb / wall,
            mb / cpu.max(1e-9)
        );
    };
    line("read + SHA-256 (reference)", hash);
    line("junit::parse_file alone", parse);
    line("flakelab ingest", ingest);
    println!(
        "  ingest / reference: {:.2}x the wall time, {:.2}x the CPU time; target >= 100 MB/s",
        ingest.0 / hash.0,
        ingest.1 / hash.1.max(1e-9)
    );
    println!(
        "  history written: {:.1} MB ({:.1} bytes per observation)",
        history as f64 / 1e6,
        history as f64 / (FILES * CASES) as f64
    );
}
