//! Benchmark: the cost of flakelab's clock preload (issue #34).
//!
//! First, the clock cell (`faketime=+365d`) and its sham against the
//! baseline cell, from one session whose runs of `/bin/true` interleave
//! (each run's duration covers the spawn, the preload's start-up in the
//! child and its announcement, up to the end of the process).
//!
//! Then the parts of that cost, each alone, outside flakelab: `/bin/true`
//! spawned with nothing preloaded, with an empty library, with the clock
//! preload without and with its record (see [`parts`]). flakelab's own
//! per-run work for a clock cell (creating, reading and removing the
//! record file, reading the programs the launch execs for the `/proc`
//! watch, the watch's last look) happens before the spawn or after the
//! leader's end, outside a run's measured time; the first part above is
//! what the subject's processes pay.
//!
//! Run with `cargo bench --bench clock` (optionally `-- RUNS ROUNDS`).
//! Target: the clock cell at most 1.05x the baseline cell.

#[path = "common/mod.rs"]
mod common;

use common::time;
use std::process::{Command, Stdio};
use std::time::Instant;

fn main() {
    let (runs, rounds) = common::runs_and_rounds(400);
    let flakelab = env!("CARGO_BIN_EXE_flakelab");
    let dir = tempfile::tempdir().expect("temp dir");
    cell_costs(flakelab, dir.path(), runs);
    parts(dir.path(), runs, rounds);
    record_file(runs * rounds);
}

/// Mean run duration per cell of one interleaved session, as ratios to the
/// baseline.
fn cell_costs(flakelab: &str, dir: &std::path::Path, runs: u32) {
    let store = dir.join("cells");
    let status = Command::new(flakelab)
        .args(["run", "-n", &runs.to_string(), "--seed", "1"])
        .args(["-p", "faketime=+365d"])
        .arg("--store")
        .arg(&store)
        .arg("-C")
        .arg(dir)
        .args(["--", "/bin/true"])
        .env_remove("FAKETIME_LIB")
        .stdout(Stdio::null())
        .status()
        .expect("flakelab runs");
    assert!(status.success(), "the clock session failed: {status}");
    let (records, _) = flakelab::store::Store::at(&store)
        .load_runs()
        .expect("records");
    let mut by_cell: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for r in &records {
        by_cell
            .entry(r.cell.clone())
            .or_default()
            .push(r.duration_s);
    }
    let stat = |c: &str| {
        let mut v = by_cell.get(c).cloned().unwrap_or_default();
        v.sort_by(f64::total_cmp);
        let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
        (mean, v.get(v.len() / 2).copied().unwrap_or(f64::NAN))
    };
    let (base_mean, base_median) = stat("baseline");
    println!("per-run cost by cell ({runs} interleaved runs of /bin/true each):");
    for c in by_cell.keys() {
        let (mean, median) = stat(c);
        println!(
            "  {c:<16} mean {:7.1} µs ({:.3}x baseline), median {:7.1} µs ({:.3}x)",
            mean * 1e6,
            mean / base_mean,
            median * 1e6,
            median / base_median
        );
    }
}

/// The parts of a clock cell's per-run cost, each measured alone: `/bin/true`
/// spawned directly (as flakelab spawns a run) with nothing preloaded, with
/// an empty library preloaded (the dynamic loader maps one more library),
/// with the clock preload and no record (its constructor reads its setting),
/// with the clock preload and its record (each process announces
/// itself: `readlink /proc/self/exe` and one append), and with its record
/// and the executable flakelab resolved before the spawn
/// (`FLAKELAB_CLOCK_EXES`: no `readlink`). The five alternate
/// spawn by spawn, so a busy machine slows each alike; medians over
/// `runs * rounds` spawns each.
fn parts(dir: &std::path::Path, runs: u32, rounds: u32) {
    let cache = dir.join("cache");
    let lib = flakelab::perturb::clock::install(Some(&cache)).expect("the clock preload");
    let empty_c = dir.join("empty.c");
    std::fs::write(&empty_c, "int flakelab_bench_empty;\n").unwrap();
    let empty = dir.join("empty.so");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&empty)
        .arg(&empty_c)
        .status()
        .is_ok_and(|s| s.success());
    let record = dir.join("record");
    std::fs::write(&record, "").unwrap();
    let lib = lib.display().to_string();
    let record = record.display().to_string();
    let empty = empty.display().to_string();
    let clock = ("FLAKELAB_CLOCK", "+31536000");
    // What flakelab tells the preload when it spawns `/bin/true` itself.
    let exes = format!(
        "/bin/true\t{}\n",
        std::fs::canonicalize("/bin/true").unwrap().display()
    );
    let mut variants: Vec<(&str, Vec<(&str, &str)>)> = vec![
        ("nothing preloaded", vec![("FLAKELAB_BENCH", "1")]),
        ("empty library", vec![("LD_PRELOAD", &empty)]),
        ("preload, no record", vec![("LD_PRELOAD", &lib), clock]),
        (
            "preload and record",
            vec![
                ("LD_PRELOAD", &lib),
                clock,
                ("FLAKELAB_CLOCK_RECORD", &record),
            ],
        ),
        (
            "record, exe known",
            vec![
                ("LD_PRELOAD", &lib),
                clock,
                ("FLAKELAB_CLOCK_RECORD", &record),
                ("FLAKELAB_CLOCK_EXES", &exes),
            ],
        ),
    ];
    if !built {
        println!("  (no C compiler: the empty library is left out)");
        variants.remove(1);
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
    for _ in 0..runs * rounds {
        for (i, (_, env)) in variants.iter().enumerate() {
            let mut cmd = Command::new("/bin/true");
            cmd.env_remove("LD_PRELOAD").envs(env.iter().copied());
            times[i].push(time(cmd).as_secs_f64() * 1e6);
        }
    }
    let medians: Vec<f64> = times
        .iter_mut()
        .map(|v| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        })
        .collect();
    println!(
        "the parts, spawning /bin/true directly ({} alternating spawns each, medians):",
        runs * rounds
    );
    for (i, ((name, _), m)) in variants.iter().zip(&medians).enumerate() {
        let step = if i == 0 {
            String::new()
        } else {
            format!(", {:+6.1} µs over the line above", m - medians[i - 1])
        };
        println!(
            "  {name:<20} {m:7.1} µs ({:.3}x nothing preloaded{step})",
            m / medians[0]
        );
    }
    let text = std::fs::read_to_string(dir.join("record")).unwrap_or_default();
    let lines = text.lines().count() as u32;
    assert_eq!(
        lines,
        2 * runs * rounds,
        "each preloaded spawn with a record announces itself once"
    );
}

/// flakelab's own per-run work on a clock run's record file, outside the
/// run's measured time: what `exec::clock_record` does (a new file of a
/// name no one else has, then, once the run has ended, one read and its
/// removal), timed over `times` files in the temporary directory (where
/// records went before) and in `/dev/shm` (a tmpfs: where they go now when
/// there is no `$XDG_RUNTIME_DIR`).
fn record_file(times: u32) {
    let line = "A 4242 4241 /usr/bin/true\n";
    let tmp = std::env::temp_dir();
    for dir in [tmp.as_path(), std::path::Path::new("/dev/shm")] {
        if !dir.is_dir() {
            continue;
        }
        let mut each: Vec<f64> = Vec::with_capacity(times as usize);
        for _ in 0..times {
            let start = Instant::now();
            let file = tempfile::Builder::new()
                .prefix("flakelab-clock-")
                .suffix(".record")
                .tempfile_in(dir)
                .expect("a record file");
            let created = start.elapsed();
            // The run's process announces itself: the child's cost, not
            // timed here.
            std::fs::write(file.path(), line).unwrap();
            let again = Instant::now();
            let text = std::fs::read(file.path()).unwrap();
            file.close().unwrap();
            assert_eq!(text, line.as_bytes());
            each.push((created + again.elapsed()).as_secs_f64() * 1e6);
        }
        each.sort_by(f64::total_cmp);
        println!(
            "flakelab's per-run record file in {} (created before the spawn, read once and removed after the end; {times} files): median {:.1} µs",
            dir.display(),
            each[each.len() / 2]
        );
    }
}
