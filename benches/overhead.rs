//! Benchmark: flakelab's cost per run of `/bin/true` as a ratio against a
//! plain shell loop running `/bin/true` the same number of times, both
//! measured in this one process, alternating, so host drift hits both alike.
//!
//! The same loop with the warden switched off (`FLAKELAB_TEST_NO_WARDEN=1`),
//! for what the warden's roll costs per run (three stores to a shared
//! mapping).
//!
//! Then the per-run cost of the `netns`, `cpu-pin`, `rlimit` and `faketime`
//! cells as ratios to the baseline cell, from one interleaved session's own
//! records (each run's duration covers the spawn, the setup in the child
//! before its exec, and the preload).
//!
//! Last, libfaketime's own start-up, outside flakelab: a shell loop with
//! the preload against the same loop without it.
//!
//! Run with `cargo bench --bench overhead` (optionally `-- RUNS ROUNDS`).
//! Targets (issue #15): flakelab at most 1.10x the shell loop, a netns cell
//! at most 1.3x the baseline cell, faketime at most 1.1x.

#[path = "common/mod.rs"]
mod common;

use common::time;
use std::process::{Command, Stdio};
use std::time::Duration;

fn main() {
    let (runs, rounds) = common::runs_and_rounds(500);
    let flakelab = env!("CARGO_BIN_EXE_flakelab");
    let dir = tempfile::tempdir().expect("temp dir");
    let loop_script = format!("i=0; while [ $i -lt {runs} ]; do /bin/true; i=$((i+1)); done");

    let mut lab = Vec::new();
    let mut shell = Vec::new();
    let mut unwarded = Vec::new();
    for round in 0..rounds {
        let mut sh = Command::new("sh");
        sh.args(["-c", &loop_script]);
        shell.push(time(sh));
        let session = |warden: bool, name: &str| {
            let mut fl = Command::new(flakelab);
            fl.args(["run", "-n", &runs.to_string(), "--seed", &round.to_string()])
                .arg("--store")
                .arg(dir.path().join(format!("{name}{round}")))
                .arg("-C")
                .arg(dir.path())
                .args(["--", "/bin/true"]);
            if !warden {
                fl.env("FLAKELAB_TEST_NO_WARDEN", "1");
            }
            fl
        };
        lab.push(time(session(true, "store")));
        unwarded.push(time(session(false, "nowarden")));
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (l, s, u) = (median(&mut lab), median(&mut shell), median(&mut unwarded));
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
    println!(
        "without the warden: {:8.1} µs per run, {:.2}x the shell loop; the warden costs {:+.1} µs per run",
        per(u),
        u.as_secs_f64() / s.as_secs_f64(),
        per(l) - per(u)
    );

    cell_costs(flakelab, dir.path(), runs);
    preload_cost(runs, rounds);
}

/// libfaketime's own start-up: a shell loop running `/bin/true` with the
/// preload against the same loop without it, alternating (the reference
/// for the faketime cells' ratio: what no harness can take away).
fn preload_cost(runs: u32, rounds: u32) {
    let Ok(lib) = flakelab::perturb::faketime::locate(None) else {
        println!("libfaketime start-up: skipped (no libfaketime here)");
        return;
    };
    let with = format!(
        "i=0; while [ $i -lt {runs} ]; do LD_PRELOAD={} FAKETIME=+365d /bin/true; i=$((i+1)); done",
        lib.display()
    );
    let without = format!(
        "i=0; while [ $i -lt {runs} ]; do X={} Y=+365d /bin/true; i=$((i+1)); done",
        lib.display()
    );
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let mut sh = Command::new("sh");
        sh.args(["-c", &without]);
        a.push(time(sh));
        let mut sh = Command::new("sh");
        sh.args(["-c", &with]);
        b.push(time(sh));
    }
    a.sort();
    b.sort();
    let (a, b) = (a[a.len() / 2], b[b.len() / 2]);
    let per = |d: Duration| d.as_secs_f64() * 1e6 / f64::from(runs);
    println!(
        "libfaketime start-up in a shell loop: {:.1} µs per run with the preload, {:.1} without: {:.2}x",
        per(b),
        per(a),
        b.as_secs_f64() / a.as_secs_f64()
    );
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
            "cpu-pin=1",
            "-p",
            "rlimit=nofile:256",
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
    // The shams run too: `cpu-pin=N` (every CPU) and `faketime=+0`.
    for c in sums.keys() {
        println!(
            "  {c:<16} {:8.1} µs  {:.2}x baseline",
            mean(c) * 1e6,
            mean(c) / base
        );
    }
}
