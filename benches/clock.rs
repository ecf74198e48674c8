//! Benchmark: the cost of flakelab's clock preload (issue #34).
//!
//! First, the clock cell (`faketime=+365d`) and its sham against the
//! baseline cell, from one session whose runs of `/bin/true` interleave
//! (each run's duration covers the spawn, the preload's start-up in the
//! child and its announcement, up to the end of the process).
//!
//! Then the preload's start-up alone, outside flakelab: a shell loop running
//! `/bin/true` with the preload, with an empty preloaded library, and with
//! nothing preloaded, alternating round by round.
//!
//! Run with `cargo bench --bench clock` (optionally `-- RUNS ROUNDS`).
//! Target: the clock cell at most 1.05x the baseline cell.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn time(mut cmd: Command) -> Duration {
    let start = Instant::now();
    let status = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("benchmark command runs");
    let elapsed = start.elapsed();
    assert!(status.success(), "benchmark command failed: {status}");
    elapsed
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let runs: u32 = args.first().and_then(|a| a.parse().ok()).unwrap_or(400);
    let rounds: u32 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    let flakelab = env!("CARGO_BIN_EXE_flakelab");
    let dir = tempfile::tempdir().expect("temp dir");
    cell_costs(flakelab, dir.path(), runs);
    startup(dir.path(), runs, rounds);
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

/// The preload's start-up in a shell loop, against an empty library and
/// against nothing.
fn startup(dir: &std::path::Path, runs: u32, rounds: u32) {
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
    let looped = |prefix: String| {
        format!("i=0; while [ $i -lt {runs} ]; do {prefix} /bin/true; i=$((i+1)); done")
    };
    let mut loops = vec![
        ("nothing preloaded", looped("X=1 Y=+31536000".into())),
        (
            "clock preload",
            looped(format!(
                "LD_PRELOAD={} FLAKELAB_CLOCK=+31536000 FLAKELAB_CLOCK_RECORD={}",
                lib.display(),
                record.display()
            )),
        ),
    ];
    if built {
        loops.push((
            "empty library",
            looped(format!("LD_PRELOAD={} Y=+31536000", empty.display())),
        ));
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); loops.len()];
    for _ in 0..rounds {
        for (i, (_, script)) in loops.iter().enumerate() {
            let mut sh = Command::new("sh");
            sh.args(["-c", script]);
            times[i].push(time(sh));
        }
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2].as_secs_f64() * 1e6 / f64::from(runs)
    };
    let medians: Vec<f64> = times.iter_mut().map(median).collect();
    println!("start-up in a shell loop ({runs} runs, median of {rounds} rounds):");
    for ((name, _), m) in loops.iter().zip(&medians) {
        println!(
            "  {name:<18} {m:7.1} µs per run of /bin/true ({:.3}x nothing preloaded)",
            m / medians[0]
        );
    }
}
