//! Shared checks of the recipe end-to-end tests that drive a real runner
//! (`runner_php`, `runner_ctest`, `runner_mocha`, `runner_playwright`): the
//! per-test rows of a combined session (one session per runner keeps them
//! cheap), the zone-dependent test that exactly differs, one test selected
//! alone, a workers cell that collides a pair, and a runner's usage error
//! or empty run recorded as an error.

use super::{cell, Lab};

/// The zone the fixtures' zone-dependent test breaks in: an invoice stamped
/// 2026-01-01 11:00 UTC is dated Jan 2 there (UTC+14).
pub const KIRITIMATI: &str = "tz=Pacific/Kiritimati";

/// The ids of the tests that failed in some run of cell `name`, and how
/// many tests the cell saw.
pub fn failing(report: &serde_json::Value, name: &str) -> (Vec<String>, usize) {
    let c = cell(report, name);
    let tests = c["tests"].as_array().unwrap_or_else(|| panic!("{c}"));
    let ids = tests
        .iter()
        .filter(|t| t["k"].as_u64() != Some(0))
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect();
    (ids, tests.len())
}

/// The test of cell `name` whose id is `id`.
pub fn test_row<'a>(report: &'a serde_json::Value, name: &str, id: &str) -> &'a serde_json::Value {
    let c = cell(report, name);
    c["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("no test {id} in {c}"))
}

/// Every one of the `n` runs of cell `name` read `total` tests, and none
/// failed.
pub fn clean(report: &serde_json::Value, name: &str, n: u64, total: usize) {
    assert_eq!(failing(report, name), (vec![], total), "{name}: {report}");
    let c = cell(report, name);
    assert_eq!(
        (
            c["n"].as_u64(),
            c["k"].as_u64(),
            c["runs_with_tests"].as_u64()
        ),
        (Some(n), Some(0), Some(n)),
        "{name}: {c}"
    );
}

/// Under Kiritimati exactly the zone test fails, in each of the `n` runs;
/// the baseline and the tz control (`tz=Etc/UTC`) fail nothing. `signed`:
/// the runner's report carries the failure's message (the fixtures' say
/// `invoice dated day 2, want 1`).
pub fn only_the_zone_test_differs(
    report: &serde_json::Value,
    n: u64,
    zone_test: &str,
    total: usize,
    signed: bool,
) {
    clean(report, "baseline", n, total);
    clean(report, "tz=Etc/UTC", n, total);
    assert_eq!(
        failing(report, KIRITIMATI),
        (vec![zone_test.to_string()], total),
        "{report}"
    );
    let c = cell(report, KIRITIMATI);
    assert_eq!(
        (c["n"].as_u64(), c["k"].as_u64()),
        (Some(n), Some(n)),
        "{c}"
    );
    if signed {
        let sigs = test_row(report, KIRITIMATI, zone_test)["signatures"].to_string();
        assert!(sigs.contains("invoice dated day <n>, want <n>"), "{sigs}");
    }
}

/// `flakelab ladder --format json ARGS`: the ladder record it printed.
pub fn ladder_json(lab: &Lab, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["ladder", "--format", "json"];
    all.extend_from_slice(args);
    let out = lab.run(&all);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no ladder JSON ({e}): {} {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// `flakelab ladder --to 1` on the zone test under Kiritimati: the recipe's
/// `[select]` ran `id` alone (one run, no baseline), and the run's per-test
/// rows hold exactly that test, failed. Returns the run's argv.
pub fn selected_alone(lab: &Lab, id: &str, report_id: &str, command: &[&str]) -> Vec<String> {
    let mut args = vec![
        "--to",
        "1",
        "-n",
        "1",
        "--no-baseline",
        "-p",
        KIRITIMATI,
        "--test",
        id,
        "--",
    ];
    args.extend_from_slice(command);
    let before = lab.runs().len();
    let json = ladder_json(lab, &args);
    assert_eq!(json["reproduced_at"], 1, "{json}");
    let runs = lab.runs();
    assert_eq!(runs.len(), before + 1, "one run");
    let run = &runs[before];
    let tests: Vec<(&str, &str)> = run["tests"]
        .as_array()
        .unwrap_or_else(|| panic!("{run}"))
        .iter()
        .filter(|t| t["outcome"] != "skip")
        .map(|t| (t["id"].as_str().unwrap(), t["outcome"].as_str().unwrap()))
        .collect();
    assert!(
        tests.len() == 1 && tests[0].0 == report_id && tests[0].1 != "pass",
        "{tests:?}: {run}"
    );
    super::run_argv(run)
}

/// One baseline run of `command`, recorded as an error (never a pass or a
/// fail): its reason.
pub fn errored(lab: &Lab, command: &[&str]) -> String {
    let before = lab.runs().len();
    let mut all = vec!["-n", "1", "--"];
    all.extend_from_slice(command);
    let (_, report) = lab.run_json(&all);
    let base = cell(&report, "baseline");
    assert_eq!(
        (base["errored"].as_u64(), base["n"].as_u64()),
        (Some(1), Some(0)),
        "{command:?}: {report}"
    );
    let runs = lab.runs();
    assert_eq!(runs[before]["outcome"], "error", "{:?}", runs[before]);
    runs[before]["reason"].as_str().unwrap().to_string()
}

/// The runs of cell `name`.
pub fn runs_of<'a>(runs: &'a [serde_json::Value], name: &str) -> Vec<&'a serde_json::Value> {
    let found: Vec<_> = runs.iter().filter(|r| r["cell"] == name).collect();
    assert!(!found.is_empty(), "no run of {name}");
    found
}

/// The ids of the tests that failed in one run.
pub fn failed_in(run: &serde_json::Value) -> Vec<&str> {
    run["tests"]
        .as_array()
        .unwrap_or_else(|| panic!("{run}"))
        .iter()
        .filter(|t| t["outcome"] == "fail" || t["outcome"] == "error")
        .map(|t| t["id"].as_str().unwrap())
        .collect()
}

/// The run's repro line, run in a plain shell: its exit code.
pub fn replay(run: &serde_json::Value) -> Option<i32> {
    super::run_repro(run, &[]).status.code()
}

/// A cell the recipe cannot drive is refused before anything runs (exit 2),
/// and `recipes detect` gives the recipe's reason. Returns what `run` said.
pub fn refused(lab: &Lab, perturbation: &str, command: &[&str], reason: &str) -> String {
    let mut args = vec!["run", "-n", "1", "-p", perturbation, "--"];
    args.extend_from_slice(command);
    let before = lab.runs().len();
    let out = lab.run(&args);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(lab.runs().len(), before, "nothing ran");
    let mut detect = vec!["recipes", "detect", "--"];
    detect.extend_from_slice(command);
    let text = String::from_utf8(lab.run(&detect).stdout).unwrap();
    assert!(text.contains(reason), "{text}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// What one runner's workers-and-zone session must show.
pub struct Collision<'a> {
    /// The recipe's name, as the report gives it.
    pub runner: &'a str,
    /// The test command.
    pub command: &'a [&'a str],
    /// The zone-dependent test's report id, and how many tests the suite has.
    pub zone: (&'a str, usize),
    /// How the workers cell's argv ends (the recipe's workers option).
    pub workers_argv: &'a [&'a str],
    /// The two tests that share one resource: exactly one fails per run.
    pub pair: [&'a str; 2],
    /// The failing run's repro line exits with this.
    pub replay_exit: i32,
}

/// One session of two runs a cell: `workers=2x` collides the pair in every
/// run (exactly one of them fails, proof that two tests ran at once, with
/// the fixture's `locked by another test process`), and Kiritimati flips
/// exactly the zone test; a failing run's repro line fails the same way.
pub fn workers_collide_and_the_zone_test_differs(lab: &Lab, c: &Collision) {
    let mut args = vec!["-n", "2", "-p", "workers=2x", "-p", KIRITIMATI, "--"];
    args.extend_from_slice(c.command);
    let (_, report) = lab.run_json(&args);
    assert_eq!(report["runner"], c.runner, "{report}");
    only_the_zone_test_differs(&report, 2, c.zone.0, c.zone.1, true);
    let workers = cell(&report, "workers=2x");
    assert_eq!(
        (workers["n"].as_u64(), workers["k"].as_u64()),
        (Some(2), Some(2)),
        "{workers}"
    );
    let runs = lab.runs();
    let tail: Vec<String> = c.workers_argv.iter().map(|a| a.to_string()).collect();
    for r in runs_of(&runs, "workers=2x") {
        assert_eq!(r["workers"].as_u64(), Some(2), "{r}");
        let argv = super::run_argv(r);
        assert!(argv.ends_with(&tail), "{argv:?}");
        let failed = failed_in(r);
        assert!(failed == [c.pair[0]] || failed == [c.pair[1]], "{r}");
        assert!(
            r["tests"]
                .to_string()
                .contains("locked by another test process"),
            "{r}"
        );
    }
    let failing = runs_of(&runs, "workers=2x")[0];
    assert_eq!(replay(failing), Some(c.replay_exit), "{}", failing["repro"]);
}
