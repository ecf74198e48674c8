//! Decision logic end to end through the real binary and the fake executor
//! (`--fake-executor SCRIPT`, see `src/exec/fake.rs`): nothing is spawned,
//! no runner is needed, nothing waits on time. Every exit code, k of N,
//! `--confirm`, the screen design, the ladder, verify, evidence, and
//! `flakelab report` re-rendering what the live run printed.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

use crate::Lab;

/// Writes the script into the lab; returns its path.
pub(super) fn script(lab: &Lab, text: &str) -> PathBuf {
    let path = lab.path().join("fake.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `flakelab ARGS --fake-executor SCRIPT`.
pub(super) fn fake(lab: &Lab, script: &std::path::Path, args: &[&str]) -> Output {
    let mut c: Command = lab.cmd();
    c.arg("--fake-executor").arg(script).args(args);
    c.output().unwrap()
}

pub(super) fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

pub(super) fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

fn cell<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no cell {name} in {report}"))
}

fn kn(cell: &Value) -> (u64, u64) {
    (cell["k"].as_u64().unwrap(), cell["n"].as_u64().unwrap())
}

/// A run of `flakelab run --format json -n N ARGS -- subject` under `text`.
pub(super) fn run(lab: &Lab, text: &str, args: &[&str]) -> (i32, Value) {
    let s = script(lab, text);
    let mut all = vec!["run", "--format", "json", "--seed", "5"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--", "subject", "--flag"]);
    let out = fake(lab, &s, &all);
    (code(&out), json(&out))
}

#[test]
fn k_of_n_and_a_clean_session_exit_0_and_a_difference_exits_1() {
    let lab = Lab::new();
    let (c, report) = run(&lab, "", &["-n", "7", "-p", "tz=UTC"]);
    assert_eq!(c, 0, "{report}");
    assert_eq!(kn(cell(&report, "baseline")), (0, 7));
    assert_eq!(kn(cell(&report, "tz=UTC")), (0, 7));
    // Nothing was spawned: the probes were the script's, and said so.
    let probes = &cell(&report, "tz=UTC")["probes"];
    assert!(probes.to_string().contains("fake executor"), "{probes}");

    let (c, report) = run(
        &lab,
        "[[run]]\ncell = \"tz=UTC\"\nexit = 1\noutput = \"AssertionError: offset\"\n",
        &["-n", "7", "-p", "tz=UTC"],
    );
    assert_eq!(c, 1, "{report}");
    assert_eq!(kn(cell(&report, "tz=UTC")), (7, 7));
    assert_eq!(cell(&report, "tz=UTC")["vs_baseline"]["differs"], true);
    assert_eq!(kn(cell(&report, "baseline")), (0, 7));
}

#[test]
fn every_second_run_failing_is_half_with_its_interval() {
    let lab = Lab::new();
    // replicate 0, 2, 4, … fail: 5 of 10.
    let rules: String = (0..10)
        .step_by(2)
        .map(|r| format!("[[run]]\nreplicate = {r}\nexit = 1\n"))
        .collect();
    let (c, report) = run(
        &lab,
        &rules,
        &["-n", "10", "--no-baseline", "-p", "env=A=1"],
    );
    assert_eq!(
        c, 1,
        "no baseline: one cell, nothing to compare, its failures are the finding; {report}"
    );
    let only = cell(&report, "env=A=1");
    assert_eq!(kn(only), (5, 10));
    let (low, high) = (
        only["low"].as_f64().unwrap(),
        only["high"].as_f64().unwrap(),
    );
    // Clopper–Pearson 95% for 5 of 10: [0.187, 0.813].
    assert!(
        (low - 0.187).abs() < 0.001 && (high - 0.813).abs() < 0.001,
        "{only}"
    );
}

#[test]
fn the_exit_precedence_is_interrupted_differs_not_applied_unmeasured_clean() {
    let lab = Lab::new();
    let not_applied = "[[probe]]\ncell = \"env=B=1\"\napplied = false\nreason = \"env=B=1: the child does not see B\"\n";
    // Not applied alone: 3, with the reason on the cell and no run of it.
    let (c, report) = run(&lab, not_applied, &["-n", "3", "-p", "env=B=1"]);
    assert_eq!(c, 3, "{report}");
    let b = cell(&report, "env=B=1");
    assert_eq!(b["applied"], false);
    assert!(b["reason"].as_str().unwrap().contains("does not see B"));
    // Differs beats not applied.
    let both = format!("{not_applied}[[run]]\ncell = \"env=A=1\"\nexit = 1\n");
    let (c, report) = run(&lab, &both, &["-n", "6", "-p", "env=A=1", "-p", "env=B=1"]);
    assert_eq!(c, 1, "{report}");
    // Every run errored (could not start): nothing measured, 2, never clean.
    let (c, report) = run(
        &lab,
        "[[run]]\nspawn_error = \"No such file or directory\"\n",
        &["-n", "3", "-p", "env=A=1"],
    );
    assert_eq!(c, 2, "{report}");
    assert_eq!(kn(cell(&report, "baseline")), (0, 0));
    // Every run timed out, in every cell alike: nothing measured either.
    let (c, report) = run(
        &lab,
        "[[run]]\ntimeout = true\n",
        &["-n", "3", "-p", "env=A=1"],
    );
    assert_eq!(c, 2, "{report}");
    assert_eq!(cell(&report, "env=A=1")["timed_out"].as_u64(), Some(3));
    // Timeouts in one cell only differ by their timeouts.
    let (c, report) = run(
        &lab,
        "[[run]]\ncell = \"env=A=1\"\ntimeout = true\n",
        &["-n", "6", "-p", "env=A=1"],
    );
    assert_eq!(c, 1, "{report}");
    assert_eq!(
        cell(&report, "env=A=1")["timeouts_vs_baseline"]["differs"],
        true
    );
    // Interrupted beats everything: Ctrl-C after the first run; the partial
    // report is printed and what finished is kept.
    let (c, report) = run(
        &lab,
        "[[run]]\ntimes = 1\nexit = 1\ninterrupt = true\n[[run]]\nexit = 1\n",
        &["-n", "5", "-p", "env=A=1", "-p", "env=B=1"],
    );
    assert_eq!(c, 130, "{report}");
    let executed = report["executed"].as_u64().unwrap();
    assert!((1..10).contains(&executed), "{report}");
}

#[test]
fn a_runners_usage_error_and_empty_run_are_errors_not_outcomes() {
    let lab = Lab::new();
    let s = script(
        &lab,
        "version = \"pytest 9.2.0\"\n[[run]]\ncell = \"baseline\"\nexit = 4\noutput = \"ERROR: file or directory not found: nope.py\"\n[[run]]\nexit = 5\noutput = \"collected 0 items\"\n",
    );
    let out = fake(
        &lab,
        &s,
        &[
            "run",
            "--format",
            "json",
            "-n",
            "2",
            "--no-sham",
            "-p",
            "tz=UTC",
            "--",
            "pytest",
            "nope.py",
        ],
    );
    assert_eq!(code(&out), 2, "{}", String::from_utf8_lossy(&out.stderr));
    let report = json(&out);
    assert_eq!(report["runner"], "pytest");
    let runs = lab.runs();
    assert_eq!(runs.len(), 4);
    for r in &runs {
        assert_eq!(r["outcome"], "error", "{r}");
    }
    let reasons: Vec<&str> = runs.iter().map(|r| r["reason"].as_str().unwrap()).collect();
    assert!(
        reasons.iter().any(|r| r.contains("usage error (exit 4)")),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("collected no tests (exit 5)")),
        "{reasons:?}"
    );
    // The runner's version came from the script, as it would from `pytest --version`.
    let session: Value = serde_json::from_str(
        std::fs::read_to_string(lab.store().join("sessions.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(session["runner_version"], "pytest 9.2.0");
}

#[test]
fn confirm_tells_deterministic_from_timing_and_report_shows_the_users_session_with_them() {
    let lab = Lab::new();
    // env=A=1 always fails (deterministic); env=B=1 fails only its first run.
    let text =
        "[[run]]\ncell = \"env=A=1\"\nexit = 1\n[[run]]\ncell = \"env=B=1\"\ntimes = 1\nexit = 1\n";
    let s = script(&lab, text);
    let out = fake(
        &lab,
        &s,
        &[
            "run",
            "--format",
            "json",
            "--seed",
            "9",
            "-n",
            "6",
            "-p",
            "env=A=1",
            "-p",
            "env=B=1",
            "--confirm",
            "3",
            "--",
            "subject",
        ],
    );
    assert_eq!(code(&out), 1);
    let live = json(&out);
    let confirmations = live["confirmations"].as_array().unwrap();
    // Seen once in a full suite (2026-12-07): only env=A=1's replay was
    // reported. Not reproduced since; say everything the next one needs.
    assert_eq!(
        confirmations.len(),
        2,
        "{live:#}\nstderr:\n{}\nsessions.jsonl:\n{}",
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(lab.store().join("sessions.jsonl")).unwrap_or_default()
    );
    let of = |cell: &str| {
        confirmations
            .iter()
            .find(|c| c["cell"] == cell)
            .unwrap_or_else(|| panic!("no confirmation of {cell}"))
    };
    assert_eq!(of("env=A=1")["verdict"], "deterministic");
    assert_eq!(
        (
            of("env=A=1")["failed"].as_u64(),
            of("env=A=1")["times"].as_u64()
        ),
        (Some(3), Some(3))
    );
    assert_eq!(of("env=B=1")["verdict"], "timing");
    assert_eq!(of("env=B=1")["failed"].as_u64(), Some(0));

    // The replays are part of the user's session: `report` without an id
    // shows the user's session, with the same confirmation block.
    let again = lab.run(&["report", "--format", "json"]);
    assert_eq!(code(&again), 1);
    let stored = json(&again);
    assert_eq!(stored["session"], live["session"]);
    assert_eq!(
        stored, live,
        "report re-renders exactly what the live run printed"
    );
    let table = lab.run(&["report"]);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.contains("deterministic") && table.contains("timing"),
        "{table}"
    );
    let sessions = std::fs::read_to_string(lab.store().join("sessions.jsonl")).unwrap();
    let parts = sessions
        .lines()
        .filter(|l| l.contains(&format!("\"part_of\":{}", live["session"])))
        .count();
    assert_eq!(parts, 2, "{sessions}");
    let evidence = lab.run(&["evidence", "--format", "json"]);
    assert_eq!(json(&evidence)["session"], live["session"]);
}

/// A one-test JUnit report: `name` passes, or fails with `message`.
fn junit(tests: &[(&str, Option<&str>)]) -> String {
    let cases: String = tests
        .iter()
        .map(|(name, fail)| match fail {
            Some(m) => format!("<testcase classname='tests.test_a' name='{name}'><failure message='{m}'/></testcase>"),
            None => format!("<testcase classname='tests.test_a' name='{name}'/>"),
        })
        .collect();
    format!(
        "<testsuite name='s' tests='{}'>{cases}</testsuite>",
        tests.len()
    )
}

#[test]
fn the_screen_confirms_a_zone_dependence_and_clears_a_chance_flip() {
    let lab = Lab::new();
    let pass = junit(&[("test_zone", None), ("test_once", None), ("test_ok", None)]);
    let zone_fails = junit(&[
        ("test_zone", Some("offset")),
        ("test_once", None),
        ("test_ok", None),
    ]);
    let once_fails = junit(&[
        ("test_zone", Some("offset")),
        ("test_once", Some("chance")),
        ("test_ok", None),
    ]);
    let text = format!(
        "[[run]]\ncell = \"tz=UTC\"\ntimes = 1\nexit = 1\njunit = \"{once_fails}\"\n\
         [[run]]\ncell = \"tz=UTC\"\nexit = 1\njunit = \"{zone_fails}\"\n\
         [[run]]\njunit = \"{pass}\"\n"
    );
    let s = script(&lab, &text);
    let out = fake(
        &lab,
        &s,
        &[
            "run",
            "--format",
            "json",
            "--design",
            "screen",
            "--seed",
            "3",
            "-p",
            "tz=UTC",
            "--",
            "subject",
            "--junit={junit}",
        ],
    );
    assert_eq!(code(&out), 1, "{}", String::from_utf8_lossy(&out.stderr));
    let live = json(&out);
    let design = &live["design"];
    assert_eq!(
        (design["candidates"].as_u64(), design["confirmed"].as_u64()),
        (Some(2), Some(1)),
        "{design:#}"
    );
    let rows: Vec<&Value> = cell(&live, "tz=UTC")["tests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["stage"] == "confirm")
        .collect();
    let zone = rows
        .iter()
        .find(|t| t["id"] == "tests.test_a::test_zone")
        .unwrap();
    assert_eq!(zone["vs_baseline"]["differs"], true, "{zone}");
    assert_eq!(
        zone["k"], zone["n"],
        "every confirmation run failed it: {zone}"
    );
    let once = rows
        .iter()
        .find(|t| t["id"] == "tests.test_a::test_once")
        .unwrap();
    assert_eq!(once["vs_baseline"]["differs"], false, "{once}");
    assert!(
        once["verdict"].as_str().unwrap().contains("cleared"),
        "{once}"
    );
    // Each look is recorded; the zone row stopped early (differs at a look).
    let looks = zone["looks"].as_array().unwrap();
    assert!(!looks.is_empty() && looks.len() < 15, "{zone}");
    assert_eq!(looks.last().unwrap()["decision"], "differs", "{zone}");
    // The confirmation sessions are part of the screened session, and
    // `report` renders the same verdicts.
    let stored = json(&lab.run(&["report", "--format", "json"]));
    assert_eq!(stored, live);
}

#[test]
fn a_run_timeout_from_flakelab_toml_reaches_screen_confirmations() {
    let lab = Lab::new();
    std::fs::write(
        lab.path().join("flakelab.toml"),
        "[run]\ntimeout = \"7s\"\n",
    )
    .unwrap();
    let fails = junit(&[("test_zone", Some("offset"))]);
    let pass = junit(&[("test_zone", None)]);
    let s = script(
        &lab,
        &format!("[[run]]\ncell = \"tz=UTC\"\nexit = 1\njunit = \"{fails}\"\n[[run]]\njunit = \"{pass}\"\n"),
    );
    let out = fake(
        &lab,
        &s,
        &[
            "run", "--format", "json", "--design", "screen", "-p", "tz=UTC", "--", "subject",
            "{junit}",
        ],
    );
    assert_eq!(code(&out), 1, "{}", String::from_utf8_lossy(&out.stderr));
    let sessions: Vec<Value> = std::fs::read_to_string(lab.store().join("sessions.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let confirmations: Vec<&Value> = sessions
        .iter()
        .filter(|s| !s["part_of"].is_null())
        .collect();
    assert!(!confirmations.is_empty(), "{sessions:#?}");
    for s in sessions {
        assert_eq!(s["timeout_s"].as_f64(), Some(7.0), "{s}");
    }
}

/// A git repository in the lab with one commit of `file`; returns its id.
pub(super) fn commit(lab: &Lab, file: &str, text: &str) -> String {
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(lab.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    if !lab.path().join(".git").exists() {
        git(&["init", "-q"]);
        std::fs::write(lab.path().join(".gitignore"), ".flakelab/\nfake.toml\n").unwrap();
    }
    std::fs::write(lab.path().join(file), text).unwrap();
    git(&["add", "-A"]);
    git(&["commit", "-qm", file]);
    git(&["rev-parse", "HEAD"])
}

#[test]
fn verify_names_both_halves_and_exits_by_the_one_precedence() {
    let lab = Lab::new();
    let before = commit(&lab, "code.txt", "broken");
    let after = commit(&lab, "code.txt", "fixed");
    let verify = |text: &str| {
        let s = script(&lab, text);
        let out = fake(
            &lab,
            &s,
            &[
                "verify", "--format", "json", "--before", &before, "--after", &after, "-n", "4",
                "--", "subject",
            ],
        );
        (code(&out), json(&out))
    };
    // Red before, green after: the fix is shown.
    let (c, v) = verify("[[run]]\ncell = \"before:baseline\"\nexit = 1\n");
    assert_eq!(c, 0, "{v:#}");
    assert_eq!(
        (
            v["negative_control"]["holds"].as_bool(),
            v["fix"]["holds"].as_bool()
        ),
        (Some(true), Some(true))
    );
    assert_eq!(v["cells"][0]["before"]["k"].as_u64(), Some(4));
    assert_eq!(v["cells"][0]["after"]["k"].as_u64(), Some(0));
    // Still red after: the fix does not hold, 1.
    let (c, v) = verify("[[run]]\nexit = 1\n");
    assert_eq!(c, 1, "{v:#}");
    assert_eq!(v["fix"]["holds"], false);
    assert!(v["fix"]["sentence"]
        .as_str()
        .unwrap()
        .contains("does NOT hold"));
    // Green before: the negative control does not hold, 1.
    let (c, v) = verify("");
    assert_eq!(c, 1, "{v:#}");
    assert_eq!(v["negative_control"]["holds"], false);
    // Nothing measured after (every run errored): the fix cannot be shown, 2.
    let (c, v) =
        verify("[[run]]\ncell = \"before:baseline\"\nexit = 1\n[[run]]\nspawn_error = \"gone\"\n");
    assert_eq!(c, 2, "{v:#}");
    assert!(v["fix"]["sentence"]
        .as_str()
        .unwrap()
        .contains("cannot be shown"));
}

/// The pytest-named subject the ladder's rung 1 can select from.
const LADDER_ARGS: &[&str] = &[
    "ladder",
    "--format",
    "json",
    "-n",
    "3",
    "--processes",
    "2",
    "--runner",
    "pytest",
    "--test",
    "tests/test_a.py::test_b",
    "--",
    "pytest",
    "tests/test_a.py",
];

#[test]
fn the_ladder_stops_at_the_first_rung_that_reproduces() {
    let lab = Lab::new();
    std::fs::create_dir_all(lab.path().join("tests")).unwrap();
    std::fs::write(lab.path().join("tests/test_a.py"), "").unwrap();
    std::fs::write(
        lab.path().join("flakelab.toml"),
        "[run]\ntimeout = \"9s\"\n",
    )
    .unwrap();
    let fails = junit(&[("test_b", Some("Address already in use"))]);
    let pass = junit(&[("test_b", None)]);
    // Only processes started together (rung 3) collide.
    let s = script(
        &lab,
        &format!("version = \"pytest 9.2.0\"\n[[run]]\ngrouped = true\nexit = 1\njunit = \"{fails}\"\n[[run]]\njunit = \"{pass}\"\n"),
    );
    let out = fake(&lab, &s, LADDER_ARGS);
    assert_eq!(code(&out), 1, "{}", String::from_utf8_lossy(&out.stderr));
    let ladder = json(&out);
    let status: Vec<(u64, &str)> = ladder["rungs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["rung"].as_u64().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        status,
        [
            (1, "clean"),
            (2, "clean"),
            (3, "reproduced"),
            (4, "not_run"),
            (5, "not_run")
        ],
        "{ladder:#}"
    );
    assert_eq!(ladder["reproduced_at"].as_u64(), Some(3));
    let rung1 = &ladder["rungs"][0];
    assert!(
        rung1["argv"]
            .to_string()
            .contains("tests/test_a.py::test_b"),
        "rung 1 selects the test: {rung1}"
    );
    // `[run] timeout` from flakelab.toml reaches every rung's session.
    let sessions = std::fs::read_to_string(lab.store().join("sessions.jsonl")).unwrap();
    let rungs: Vec<Value> = sessions
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rungs.len(), 3);
    for s in &rungs {
        assert_eq!(s["timeout_s"].as_f64(), Some(9.0), "{s}");
    }
    // Nothing reproduces anywhere: every rung tried is clean (4 skipped:
    // no lane; 5 runs the command in copies), exit 0.
    let s = script(&lab, &format!("[[run]]\njunit = \"{pass}\"\n"));
    let out = fake(
        &lab,
        &s,
        &[
            "ladder",
            "--format",
            "json",
            "--to",
            "3",
            "-n",
            "2",
            "--runner",
            "pytest",
            "--test",
            "tests/test_a.py::test_b",
            "--",
            "pytest",
            "tests/test_a.py",
        ],
    );
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn evidence_classifies_a_zone_cell_and_argues_against_the_clean_one() {
    let lab = Lab::new();
    let s = script(
        &lab,
        "[[run]]\ncell = \"tz=Pacific/Kiritimati\"\nexit = 1\noutput = \"AssertionError: invoice date\"\n",
    );
    let out = fake(
        &lab,
        &s,
        &[
            "run",
            "-n",
            "6",
            "-p",
            "tz=Pacific/Kiritimati",
            "-p",
            "tz=Pacific/Pago_Pago",
            "--",
            "subject",
        ],
    );
    assert_eq!(code(&out), 1);
    let e = json(&lab.run(&["evidence", "--format", "json"]));
    let claimed: Vec<&Value> = e["classification"]["claimed"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    let zone = claimed
        .iter()
        .find(|f| f["row"]["cell"] == "tz=Pacific/Kiritimati")
        .unwrap_or_else(|| panic!("{:#}", e["classification"]));
    assert_eq!(zone["row"]["count"]["k"].as_u64(), Some(6));
    assert_eq!(zone["row"]["baseline"]["k"].as_u64(), Some(0));
    assert!(zone["row"]["p"].as_f64().unwrap() < 0.05);
    assert!(!claimed
        .iter()
        .any(|f| f["row"]["cell"] == "tz=Pacific/Pago_Pago"));
}

#[test]
fn replay_reruns_one_recorded_run_and_a_bad_script_is_a_usage_error() {
    let lab = Lab::new();
    let (c, report) = run(
        &lab,
        "[[run]]\ncell = \"env=A=1\"\nexit = 1\n",
        &["-n", "6", "-p", "env=A=1"],
    );
    assert_eq!(c, 1, "{report}");
    let failing = lab
        .runs()
        .into_iter()
        .find(|r| r["outcome"] == "fail")
        .unwrap();
    let id = failing["id"].as_str().unwrap().to_string();
    let s = lab.path().join("fake.toml");
    let out = fake(
        &lab,
        &s,
        &["replay", &id, "--times", "3", "--format", "json"],
    );
    assert_eq!(
        code(&out),
        1,
        "a replayed failure reproducing is the finding"
    );
    let replay = json(&out);
    assert_eq!(replay["replay_of"], id.as_str());
    assert_eq!(kn(cell(&replay, "env=A=1")), (3, 3));
    // The replay is the user's own session now.
    assert_eq!(
        json(&lab.run(&["report", "--format", "json"]))["session"],
        replay["session"]
    );

    std::fs::write(&s, "[[run]]\nexitt = 1\n").unwrap();
    let out = fake(&lab, &s, &["run", "--", "subject"]);
    assert_eq!(code(&out), 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("fake executor script") && err.contains("exitt"),
        "{err}"
    );
}

#[test]
fn a_missing_shuffle_plugin_leaves_the_cell_not_applied_naming_the_plugin() {
    let lab = Lab::new();
    let s = script(
        &lab,
        "[[run]]\ncell = \"shuffle\"\nexit = 4\noutput = \"ERROR: Error importing plugin \\\"randomly\\\": No module named 'randomly'\"\n[[run]]\noutput = \"1 passed\"\n",
    );
    let out = fake(
        &lab,
        &s,
        &[
            "run", "--format", "json", "-n", "3", "-p", "shuffle", "--", "pytest", "tests",
        ],
    );
    assert_eq!(code(&out), 3, "{}", String::from_utf8_lossy(&out.stderr));
    let report = json(&out);
    let shuffle = cell(&report, "shuffle");
    assert_eq!(shuffle["applied"], false, "{shuffle}");
    assert!(
        shuffle["reason"]
            .as_str()
            .unwrap()
            .contains("pip install pytest-randomly"),
        "{shuffle}"
    );
    let table = lab.run(&["report"]);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.contains("NOT APPLIED: shuffle: pytest cannot shuffle"),
        "{table}"
    );
}

#[test]
fn a_cell_whose_every_run_errored_is_never_a_pass() {
    let lab = Lab::new();
    let (c, report) = run(
        &lab,
        "[[run]]\ncell = \"env=A=1\"\nspawn_error = \"exec format error\"\n",
        &["-n", "3", "-p", "env=A=1"],
    );
    assert_eq!(
        c, 2,
        "the baseline passed, but the cell measured nothing: {report}"
    );
    let table = lab.run(&["report"]);
    assert_eq!(code(&table), 2);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(table.contains("nothing measured: 3 errored"), "{table}");
    assert!(table.contains("cell `env=A=1` measured nothing"), "{table}");
}
