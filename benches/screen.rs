//! Benchmark: the screen-then-confirm design against the fixed design on a
//! generated suite of 2,000 fast tests (`tests/fixtures/generated-suite`)
//! with planted zone, clock and order dependencies, side by side in one
//! run. Both must call exactly the planted (test, cell) pairs different;
//! the figures are the shares of test executions and of wall-clock time
//! the screen design used, on the suite as it is and on the same suite
//! paying 2 s of start-up per run (`SUITE_STARTUP`).
//!
//! The fixed design runs at the N the screen design reports the fixed
//! design needs; when that N does not reach the same verdicts, N grows
//! until it does, so the comparison is against a fixed design that really
//! reaches them.
//!
//! Run with `cargo bench --bench screen` (needs python3 and libfaketime);
//! `cargo bench --bench screen -- fast` measures the suite without start-up
//! only.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

const PLANTED: &[(&str, &str)] = &[
    ("tz=Pacific/Kiritimati", "mod_03::test_zone_a"),
    ("tz=Pacific/Kiritimati", "mod_41::test_zone_b"),
    ("tz=Pacific/Kiritimati", "mod_77::test_zone_c"),
    ("faketime=+365d", "mod_12::test_clock_a"),
    ("faketime=+365d", "mod_58::test_clock_b"),
    ("shuffle", "mod_25::test_order_a"),
    ("shuffle", "mod_66::test_order_b"),
];

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

/// Runs flakelab on the suite; returns the JSON report.
fn run(dir: &Path, store: &str, extra: &[&str], startup: &str) -> serde_json::Value {
    let expires = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 180 * 86_400;
    let out = Command::new(env!("CARGO_BIN_EXE_flakelab"))
        .current_dir(dir)
        .env("SUITE_EXPIRES", expires.to_string())
        .env("SUITE_STARTUP", startup)
        .args(["run", "--format", "json", "--seed", "1", "--store", store])
        // The designs are compared on the planted cells alone (the shams'
        // cost is the same share of runs in both designs).
        .args([
            "--no-sham",
            "-p",
            "tz=Pacific/Kiritimati",
            "-p",
            "faketime=+365d",
            "-p",
            "shuffle",
        ])
        .args(extra)
        .args(["--", "python3", "suite.py"])
        .output()
        .expect("flakelab runs");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no report ({e}): {}", String::from_utf8_lossy(&out.stderr)))
}

fn differing(report: &serde_json::Value) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for cell in report["cells"].as_array().unwrap() {
        for t in cell["tests"].as_array().unwrap() {
            if t["vs_baseline"]["differs"] == true {
                out.insert((
                    cell["name"].as_str().unwrap().to_string(),
                    t["id"].as_str().unwrap().to_string(),
                ));
            }
        }
    }
    out
}

/// Process runs and test executions (test cases in every run's report)
/// in a store.
fn executions(dir: &Path, store: &str) -> (u64, u64) {
    let (runs, _) = flakelab::store::Store::at(&dir.join(store))
        .load_runs()
        .unwrap();
    (
        runs.len() as u64,
        runs.iter().map(|r| r.tests.len() as u64).sum(),
    )
}

/// The load average, as `/proc/loadavg` gives it (1, 5, 15 minutes).
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// One side-by-side measurement: the screen design, then the fixed design
/// at the N the screen reports (grown until it reaches the same verdicts).
/// `from`: an N already known to fall short (the same seeds, another
/// start-up), so the search starts above it. Returns the fixed design's N,
/// executions and wall-clock time.
fn measure(
    dir: &Path,
    tag: &str,
    startup: &str,
    planted: &BTreeSet<(String, String)>,
    from: u64,
) -> (u64, u64, std::time::Duration) {
    let screen_store = format!(".screen{tag}");
    let start = std::time::Instant::now();
    let screen = run(dir, &screen_store, &["--design", "screen"], startup);
    let screen_time = start.elapsed();
    let (screen_runs, screen_x) = executions(dir, &screen_store);
    assert_eq!(&differing(&screen), planted, "the screen design's verdicts");
    let mut n = screen["design"]["fixed_runs_per_cell"]
        .as_u64()
        .expect("a fixed N")
        .max(from);
    let ((fixed_runs, fixed_x), fixed_time) = loop {
        let store = format!(".fixed{tag}{n}");
        let start = std::time::Instant::now();
        let fixed = run(
            dir,
            &store,
            &["--design", "fixed", "-n", &n.to_string()],
            startup,
        );
        let elapsed = start.elapsed();
        if &differing(&fixed) == planted {
            break (executions(dir, &store), elapsed);
        }
        println!(
            "fixed design at N = {n} did not reach the same verdicts; trying N = {}",
            n + 1
        );
        n += 1;
    };
    println!("suite: 2,000 tests, start-up {startup} s per run, cells baseline + tz + faketime + shuffle, 7 planted pairs (load {})", load());
    println!(
        "screen then confirm: {screen_x:>7} test executions, {screen_runs:>3} runs ({:.1} s), {} candidates, {} confirmation sessions",
        screen_time.as_secs_f64(),
        screen["design"]["candidates"],
        screen["design"]["confirm_sessions"]
    );
    println!(
        "fixed, N = {n:>2}:      {fixed_x:>7} test executions, {fixed_runs:>3} runs ({:.1} s)",
        fixed_time.as_secs_f64()
    );
    println!(
        "ratios: {:.3} of the fixed design's executions, {:.3} of its wall-clock time (same verdicts: the 7 planted pairs, nothing else)",
        screen_x as f64 / fixed_x as f64,
        screen_time.as_secs_f64() / fixed_time.as_secs_f64()
    );
    (n, fixed_x, fixed_time)
}

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/generated-suite"),
        dir.path(),
    );
    let planted: BTreeSet<(String, String)> = PLANTED
        .iter()
        .map(|(c, t)| (c.to_string(), t.to_string()))
        .collect();
    let (n, fixed_x, fixed_time) = measure(dir.path(), "", "0", &planted, 0);
    // The adaptive screen with two further runs (not one) in the random
    // cells, against the same fixed design.
    let start = std::time::Instant::now();
    let screen = run(
        dir.path(),
        ".screen3",
        &["--design", "screen", "--screen", "3"],
        "0",
    );
    let time = start.elapsed();
    let (runs, x) = executions(dir.path(), ".screen3");
    assert_eq!(&differing(&screen), &planted, "--screen 3's verdicts");
    println!(
        "screen then confirm, --screen 3: {x:>7} test executions, {runs:>3} runs ({:.1} s): {:.3} of the fixed design's executions, {:.3} of its wall-clock time (load {})",
        time.as_secs_f64(),
        x as f64 / fixed_x as f64,
        time.as_secs_f64() / fixed_time.as_secs_f64(),
        load()
    );
    if std::env::args().any(|a| a == "fast") {
        return;
    }
    // The same seeds give the same orders: the N the fast suite needed.
    measure(dir.path(), "-slow", "2", &planted, n);
}
