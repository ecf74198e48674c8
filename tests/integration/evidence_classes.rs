//! Each flake class from the evidence that discriminates it, end to end
//! through the real binary and the fake executor (`--fake-executor`, see
//! `src/exec/fake.rs`): a port collision under workers is a collision (not
//! load), a deadline under CPU stress is load-sensitive, a year-ahead
//! failure is an expiring date, a race detector's report is a data race,
//! and 1 of 1 against 1 of 1 argues against nothing.

use std::process::Command;

use serde_json::Value;

use crate::Lab;

/// `flakelab run -n N --seed 5 ARGS -- SUBJECT…` under the fake `script`
/// (with a stand-in libfaketime: the fake loads nothing), then the
/// session's evidence as JSON. Returns the run's exit code too.
fn evidence_of(lab: &Lab, script: &str, args: &[&str], subject: &[&str]) -> (i32, Value) {
    let lib = lab.path().join("libfaketime.so.1");
    std::fs::write(&lib, b"").unwrap();
    let path = lab.path().join("fake.toml");
    std::fs::write(&path, script).unwrap();
    let mut c: Command = lab.cmd();
    c.env("FAKETIME_LIB", &lib)
        .arg("--fake-executor")
        .arg(&path)
        .args(["run", "--format", "json", "--seed", "5"])
        .args(args)
        .arg("--")
        .args(subject);
    let run = c.output().unwrap();
    let code = run.status.code().unwrap_or(-1);
    let out = lab.run(&["evidence", "--format", "json"]);
    let e = serde_json::from_slice(&out.stdout).unwrap_or_else(|err| {
        panic!(
            "no evidence JSON ({err}): {}\nrun: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr)
        )
    });
    (code, e)
}

/// The (class, cell) pairs of `classification.<part>`.
fn findings(e: &Value, part: &str) -> Vec<(String, String)> {
    e["classification"][part]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["class"].as_str().unwrap().to_string(),
                f["row"]["cell"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

fn because<'a>(e: &'a Value, class: &str) -> &'a str {
    e["classification"]["claimed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["class"] == class)
        .and_then(|f| f["because"].as_str())
        .unwrap_or_else(|| panic!("{class} not claimed: {:#}", e["classification"]))
}

fn open_why<'a>(e: &'a Value, class: &str) -> Option<&'a str> {
    e["classification"]["not_determinable"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["class"] == class)
        .and_then(|o| o["why"].as_str())
}

#[test]
fn a_port_collision_under_workers_is_a_collision_not_load() {
    let lab = Lab::new();
    let (code, e) = evidence_of(
        &lab,
        "[[run]]\ncell = \"workers=2x\"\nexit = 1\n\
         output = \"created: 2/2 workers\\nE   OSError: [Errno 98] Address already in use\"\n",
        &["-n", "6", "-p", "workers=2x"],
        &["pytest", "tests"],
    );
    assert_eq!(code, 1, "{e:#}");
    assert_eq!(
        findings(&e, "claimed"),
        pairs(&[("host_resource_collision", "workers=2x")])
    );
    let why = because(&e, "host_resource_collision");
    assert!(why.contains("name a port they contest"), "{why}");
    assert!(why.contains("Address already in use"), "{why}");
    // Workers never stand for load: that stays for a CPU-stress cell.
    assert!(open_why(&e, "load_sensitive_synchronisation").is_none());
}

#[test]
fn a_deadline_under_cpu_stress_is_load_sensitive() {
    let lab = Lab::new();
    let (code, e) = evidence_of(
        &lab,
        "[[run]]\ncell = \"cpu-stress=2x\"\nexit = 1\n\
         output = \"AssertionError: the reply took longer than its deadline\"\n",
        &["-n", "6", "-p", "cpu-stress=2x"],
        &["subject"],
    );
    assert_eq!(code, 1, "{e:#}");
    assert_eq!(
        findings(&e, "claimed"),
        pairs(&[("load_sensitive_synchronisation", "cpu-stress=2x")])
    );
}

#[test]
fn a_year_ahead_failure_is_an_expiring_date_not_clock_and_zone() {
    let lab = Lab::new();
    let (code, e) = evidence_of(
        &lab,
        "[[run]]\ncell = \"faketime=+365d\"\nexit = 1\n\
         output = \"AssertionError: certificate expired\"\n",
        &["-n", "6", "-p", "faketime=+365d", "-p", "faketime=+30d"],
        &["subject"],
    );
    assert_eq!(code, 1, "{e:#}");
    assert_eq!(
        findings(&e, "claimed"),
        pairs(&[("expiring_date", "faketime=+365d")])
    );
    let why = because(&e, "expiring_date");
    assert!(why.contains("fails with the clock at "), "{why}");
    assert!(why.contains("(+365d)"), "{why}");
    assert!(why.contains("passes before it (`faketime=+30d`"), "{why}");
    // The clean shorter shift argues against the clock reading, with its bound.
    let against = findings(&e, "against");
    assert!(
        against.contains(&("clock_and_zone".to_string(), "faketime=+30d".to_string())),
        "{against:?}"
    );
}

#[test]
fn a_race_detector_difference_is_a_data_race_in_its_own_coverage_line() {
    let lab = Lab::new();
    let report = "***** Running under ThreadSanitizer v3 (pid 7) *****\n\
                  ==================\nWARNING: DATA RACE\n\
                  Write at 0x00c000012345 by goroutine 8:\n  victim.inc()\n      /src/v/v.go:10 +0x44\n\
                  Previous read at 0x00c000012345 by goroutine 7:\n  victim.read()\n      /src/v/v.go:14 +0x3a\n\
                  ==================\n--- FAIL: TestVictim (0.00s)\n    testing.go:1465: race detected during execution of test\nFAIL\n";
    let script = format!(
        "[[run]]\ncell = \"race\"\nexit = 1\noutput = '''{report}'''\n\
         [[run]]\noutput = \"ok  \tvictim\t0.01s\\n\"\n"
    );
    let (code, e) = evidence_of(
        &lab,
        &script,
        &["-n", "6", "-p", "race"],
        &["go", "test", "./..."],
    );
    assert_eq!(code, 1, "{e:#}");
    assert_eq!(findings(&e, "claimed"), pairs(&[("data_race", "race")]));
    let why = because(&e, "data_race");
    assert!(why.contains("data race: "), "{why}");
    assert_eq!(e["classification"]["unmapped"], serde_json::json!([]));
    let coverage = e["coverage"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["class"] == "data_race")
        .unwrap();
    assert_eq!(coverage["status"], "checked", "{coverage}");
    assert_eq!(coverage["cells"], serde_json::json!(["race"]));
}

#[test]
fn one_of_one_against_one_of_one_argues_against_nothing() {
    let lab = Lab::new();
    let (_, e) = evidence_of(
        &lab,
        "[[run]]\nexit = 1\noutput = \"AssertionError: boom\"\n",
        &["-n", "1", "--no-sham", "-p", "netns", "-p", "cpu-stress=2x"],
        &["subject"],
    );
    let cells = |part| -> Vec<(String, String)> {
        findings(&e, part)
            .into_iter()
            .filter(|(_, cell)| cell != "baseline")
            .collect()
    };
    assert_eq!(cells("against"), Vec::<(String, String)>::new());
    assert_eq!(cells("claimed"), Vec::<(String, String)>::new());
    // With power, the same clean cell argues, and says its bound.
    let lab = Lab::new();
    let (code, e) = evidence_of(
        &lab,
        "",
        &["-n", "14", "--no-sham", "-p", "netns"],
        &["subject"],
    );
    assert_eq!(code, 0, "{e:#}");
    assert_eq!(
        findings(&e, "against"),
        pairs(&[
            ("real_network", "netns"),
            ("unseeded_randomness", "baseline")
        ])
    );
    let why = e["classification"]["against"][0]["because"]
        .as_str()
        .unwrap();
    assert!(
        why.contains("at an N that could have shown one (0 of 14 — rate < 0.193 at 95%)"),
        "{why}"
    );
}
