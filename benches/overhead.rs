//! Benchmark: flakelab's cost per run of `/bin/true` as a ratio against a
//! plain shell loop running `/bin/true` the same number of times, both
//! measured in this one process, alternating, so host drift hits both alike.
//!
//! Then the per-run cost of the `netns` and `faketime` cells as ratios to the
//! baseline cell, from one interleaved session's own records (each run's
//! duration covers the helper's exec and the namespace or preload setup).
//!
//! Run with `cargo bench --bench overhead` (optionally `-- RUNS ROUNDS`).

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
    let runs: u32 = args.first().and_then(|a| a.parse().ok()).unwrap_or(500);
    let rounds: u32 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    let flakelab = env!("CARGO_BIN_EXE_flakelab");
    let dir = tempfile::tempdir().expect("temp dir");
    let loop_script = format!("i=0; while [ $i -lt {runs} ]; do /bin/true; i=$((i+1)); done");

    let mut lab = Vec::new();
    let mut shell = Vec::new();
    for round in 0..rounds {
        let mut sh = Command::new("sh");
        sh.args(["-c", &loop_script]);
        shell.push(time(sh));
        let mut fl = Command::new(flakelab);
        fl.args(["run", "-n", &runs.to_string(), "--seed", &round.to_string()])
            .arg("--store")
            .arg(dir.path().join(format!("store{round}")))
            .arg("-C")
            .arg(dir.path())
            .args(["--", "/bin/true"]);
        lab.push(time(fl));
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (l, s) = (median(&mut lab), median(&mut shell));
    let per = |d: Duration| d.as_secs_f64() * 1e6 / f64::from(runs);
    println!("runs per measurement: {runs}, rounds: {rounds} (medians)");
    println!("shell loop:    {:8.1} µs per run of /bin/true", per(s));
    println!(
        "flakelab run:  {:8.1} µs per run of /bin/true (spawn, log, record, report)",
        per(l)
    );
    println!(
        "ratio flakelab / shell loop: {:.2}x",
        l.as_secs_f64() / s.as_secs_f64()
    );

    cell_costs(flakelab, dir.path(), runs);
}

/// Mean run duration per cell of one interleaved session, as ratios to the baseline.
fn cell_costs(flakelab: &str, dir: &std::path::Path, runs: u32) {
    let store = dir.join("cells");
    let status = Command::new(flakelab)
        .args([
            "run",
            "-n",
            &runs.to_string(),
            "--seed",
            "1",
            "-p",
            "netns",
            "-p",
            "faketime=+365d",
        ])
        .arg("--store")
        .arg(&store)
        .arg("-C")
        .arg(dir)
        .args(["--", "/bin/true"])
        .stdout(Stdio::null())
        .status()
        .expect("flakelab runs");
    if !status.success() {
        println!("per-cell costs: skipped (a cell was not applied here: see `flakelab doctor`)");
        return;
    }
    let (records, _) = flakelab::store::Store::at(&store)
        .load_runs()
        .expect("records");
    let mut sums: std::collections::BTreeMap<String, (f64, u32)> = Default::default();
    for r in &records {
        let e = sums.entry(r.cell.clone()).or_default();
        e.0 += r.duration_s;
        e.1 += 1;
    }
    let mean = |c: &str| {
        sums.get(c)
            .map(|(s, n)| s / f64::from(*n))
            .unwrap_or(f64::NAN)
    };
    let base = mean("baseline");
    println!("per-run cost by cell (mean of {runs} interleaved runs of /bin/true):");
    for c in ["baseline", "netns", "faketime=+365d"] {
        println!(
            "  {c:<16} {:8.1} µs  {:.2}x baseline",
            mean(c) * 1e6,
            mean(c) / base
        );
    }
}
