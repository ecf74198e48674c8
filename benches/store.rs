//! Benchmark: the size and speed of the store's run records, the compact
//! encoding (`flakelab.run/2`) beside the whole-record one it replaced
//! (`flakelab.run/1`), measured in the same run.
//!
//! Size: flakelab runs the generated 2,000-test suite
//! (`tests/fixtures/generated-suite`) under 4 cells × 10 runs; the figure is
//! bytes of the session's runs file per (test, run), against the bytes the
//! same records take as `flakelab.run/1` lines. The compact store must hold
//! at most 2 bytes per (test, run).
//!
//! Speed: the same records appended through `Store::append_run` and read
//! back through `Store::runs_iter`, against v1 lines appended the way the
//! old store did (open, lock, one write) and read back by the same reader;
//! and 100,000 small runs (no per-test data) both ways.
//!
//! Run with `cargo bench --bench store` (needs python3 and libfaketime).

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use flakelab::record::RunRecord;
use flakelab::store::{compact, Store};

const SMALL_RUNS: usize = 100_000;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Appends v1 lines as the old store did: open, lock, one write, per record.
fn write_v1(path: &Path, runs: &[RunRecord]) {
    for r in runs {
        let mut line = compact::v1_line(r).unwrap();
        line.push('\n');
        let mut f = OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .unwrap();
        f.lock().unwrap();
        f.write_all(line.as_bytes()).unwrap();
        f.flush().unwrap();
        f.unlock().unwrap();
    }
}

/// Seconds to append `runs` compactly and to read them back; and the same
/// for v1 lines. Each store is fresh.
fn speeds(runs: &[RunRecord]) -> [f64; 4] {
    let dir = tempfile::tempdir().unwrap();
    let v2 = Store::open(&dir.path().join("v2")).unwrap();
    let t = Instant::now();
    for r in runs {
        v2.append_run(r).unwrap();
    }
    let write2 = t.elapsed().as_secs_f64();
    let session = &runs[0].session;
    let t = Instant::now();
    let n = v2.runs_iter(Some(session)).unwrap().count();
    let read2 = t.elapsed().as_secs_f64();
    assert_eq!(n, runs.len());

    let v1 = Store::open(&dir.path().join("v1")).unwrap();
    let t = Instant::now();
    write_v1(&v1.root().join(flakelab::store::RUNS_FILE), runs);
    let write1 = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let n = v1.runs_iter(Some(session)).unwrap().count();
    let read1 = t.elapsed().as_secs_f64();
    assert_eq!(n, runs.len());
    [write2, read2, write1, read1]
}

fn print_speeds(what: &str, n: usize, [w2, r2, w1, r1]: [f64; 4]) {
    let rate = |s: f64| n as f64 / s;
    println!("{what} ({n} records):");
    println!(
        "  write  run/2 {:>10.0} records/s   run/1 {:>10.0} records/s   ratio {:.2}",
        rate(w2),
        rate(w1),
        rate(w2) / rate(w1)
    );
    println!(
        "  read   run/2 {:>10.0} records/s   run/1 {:>10.0} records/s   ratio {:.2}",
        rate(r2),
        rate(r1),
        rate(r2) / rate(r1)
    );
}

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/generated-suite"),
        dir.path(),
    );
    let expires = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 180 * 86_400;
    let out = Command::new(env!("CARGO_BIN_EXE_flakelab"))
        .current_dir(dir.path())
        .env("SUITE_EXPIRES", expires.to_string())
        .args([
            "run",
            "--format",
            "json",
            "--seed",
            "1",
            "--no-sham",
            "-n",
            "10",
        ])
        .args([
            "-p",
            "tz=Pacific/Kiritimati",
            "-p",
            "faketime=+365d",
            "-p",
            "shuffle",
        ])
        .args(["--", "python3", "suite.py"])
        .output()
        .expect("flakelab runs");
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let store = Store::at(&dir.path().join(".flakelab"));
    let (runs, stats) = store.load_runs().unwrap();
    assert_eq!(stats.skipped_lines, 0);
    let session = runs[0].session.clone();
    let cells: std::collections::BTreeSet<&str> = runs.iter().map(|r| r.cell.as_str()).collect();
    let pairs: usize = runs.iter().map(|r| r.tests.len()).sum();
    let v2_bytes = std::fs::metadata(store.runs_path(&session).unwrap())
        .unwrap()
        .len() as f64;
    let v1_bytes: usize = runs
        .iter()
        .map(|r| compact::v1_line(r).unwrap().len() + 1)
        .sum();
    let (v2, v1) = (v2_bytes / pairs as f64, v1_bytes as f64 / pairs as f64);
    println!(
        "store size: {} runs in {} cells, {} (test, run) pairs",
        runs.len(),
        cells.len(),
        pairs
    );
    println!("  run/2 {v2_bytes:>10.0} bytes  {v2:>7.3} bytes per (test, run)");
    println!("  run/1 {v1_bytes:>10} bytes  {v1:>7.3} bytes per (test, run)");
    println!("  ratio run/1 : run/2 = {:.1} : 1", v1 / v2);
    assert_eq!(cells.len(), 4);
    assert!(pairs >= 4 * 10 * 2000, "{pairs} pairs");
    assert!(
        v2 <= 2.0,
        "the compact store holds {v2:.3} bytes per (test, run)"
    );

    print_speeds("runs of the 2,000-test suite", runs.len(), speeds(&runs));

    // Small runs: a suite without per-test data, many runs.
    let mut small = Vec::with_capacity(SMALL_RUNS);
    for i in 0..SMALL_RUNS {
        let mut r = runs[i % runs.len()].clone();
        r.tests.clear();
        r.junit = None;
        r.index = i;
        r.id = compact::run_id(&r.session, i);
        let old = runs[i % runs.len()].id.clone();
        r.env.set.insert("FLAKELAB_RUN_ID".into(), r.id.clone());
        r.repro = r.repro.replace(&old, &r.id);
        r.argv = vec!["true".into()];
        small.push(r);
    }
    print_speeds("small runs (no per-test data)", SMALL_RUNS, speeds(&small));
}
