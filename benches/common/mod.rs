//! What the process benches share: timing one command to its end, and the
//! `RUNS ROUNDS` arguments after `cargo bench --bench NAME --`.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The wall time of `cmd` run to its end, its output discarded; panics when
/// it fails (a failing command measures nothing).
pub fn time(mut cmd: Command) -> Duration {
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

/// `RUNS ROUNDS` from the arguments (flags such as `--bench` skipped),
/// else `default_runs` and 5.
pub fn runs_and_rounds(default_runs: u32) -> (u32, u32) {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let runs = args
        .first()
        .and_then(|a| a.parse().ok())
        .unwrap_or(default_runs);
    let rounds = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    (runs, rounds)
}
