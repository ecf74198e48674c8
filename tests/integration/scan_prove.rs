//! `flakelab scan --prove` end to end with the real runners on the planted
//! scan fixtures (`tests/fixtures/scan-python` with pytest,
//! `tests/fixtures/scan-go` with go test, `tests/fixtures/scan-js` with
//! vitest, `tests/fixtures/scan-rust` with cargo test): every provable
//! planted finding proven, every other one not shown or unconfirmed with
//! its reason, every near-miss selected, run and not shown (`--controls`),
//! each cell a recorded session that `report` shows again.
//!
//! The subjects run offline: flakelab runs inside a user and network
//! namespace with loopback up (the planted remote call fails at baseline
//! too, and the planted fixed port is this namespace's own).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use super::{bin, capable, copy_fixture, scrub, sh_ok, Lab};

/// Runs per arm: 6 of 6 against 0 of 6 is p = 2/924 = 0.0022, which Holm
/// over seven measured items keeps (0.05 / 7 = 0.0071; a date read is
/// measured under two zones, two items); 5 of 5 (p = 0.0079) would not.
const RUNS: &str = "6";

fn offline_available() -> bool {
    capable(
        "unshare -rn with ip (an offline network namespace for the subjects)",
        sh_ok("unshare -rn sh -c 'ip link set lo up'"),
    )
}

/// `flakelab scan --prove --controls --format json -n RUNS .` in the lab,
/// offline, with `env` set; returns the scan.
fn prove(lab: &Lab, env: &[(&str, &Path)]) -> serde_json::Value {
    prove_in(lab.path(), env)
}

/// `flakelab scan --prove --controls --format json -n RUNS .` in `dir`,
/// offline, with `env` set; returns the scan.
fn prove_in(dir: &Path, env: &[(&str, &Path)]) -> serde_json::Value {
    let mut c = Command::new("unshare");
    scrub(&mut c);
    c.current_dir(dir)
        .env("TZ", "UTC")
        .env_remove("PYTHONHASHSEED")
        .envs(env.iter().map(|(k, v)| (*k, *v)))
        .args(["-rn", "sh", "-c", "ip link set lo up && exec \"$@\"", "sh"])
        .arg(bin())
        .args(["scan", "--prove", "--controls", "--format", "json"])
        .args(["-n", RUNS, "--today", "2026-12-01", "."]);
    let out = c.output().expect("unshare runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a JSON scan")
}

/// `file:line` → (status, the proof).
fn statuses(scan: &serde_json::Value) -> BTreeMap<String, (String, serde_json::Value)> {
    (scan["findings"].as_array().unwrap().iter())
        .map(|f| {
            (
                format!("{}:{}", f["file"].as_str().unwrap(), f["line"]),
                (
                    f["status"].as_str().unwrap().to_string(),
                    f["proof"].clone(),
                ),
            )
        })
        .collect()
}

/// Every control measured and not shown, in every cell that ran: the
/// control tests (sorted) and the cells.
fn controls(scan: &serde_json::Value) -> (Vec<String>, Vec<String>) {
    let mut tests = Vec::new();
    let mut cells = Vec::new();
    for c in scan["controls"].as_array().unwrap() {
        let p = &c["proof"];
        assert_eq!(p["status"], "not-shown", "{c}");
        assert_eq!(p["counts"]["cell"][1], 6, "measured in the cell: {c}");
        assert_eq!(p["counts"]["baseline"][1], 6, "measured at baseline: {c}");
        let t = c["test"].as_str().unwrap().to_string();
        if !tests.contains(&t) {
            tests.push(t);
        }
        let cell = p["cell"].as_str().unwrap().to_string();
        if !cells.contains(&cell) {
            cells.push(cell);
        }
    }
    tests.sort();
    cells.sort();
    (tests, cells)
}

/// Every run record of the lab's store, as text.
fn runs(lab: &Lab) -> String {
    let mut text = String::new();
    for e in std::fs::read_dir(lab.store().join("runs")).unwrap() {
        text.push_str(&std::fs::read_to_string(e.unwrap().path()).unwrap());
    }
    text
}

fn assert_proven(proof: &serde_json::Value, cell: &str) {
    assert_eq!(proof["status"], "proven", "{proof}");
    assert_eq!(proof["cell"], cell);
    assert_eq!(proof["counts"]["cell"], serde_json::json!([6, 6]));
    assert_eq!(proof["counts"]["baseline"], serde_json::json!([0, 6]));
    assert!((proof["p"].as_f64().unwrap() - 2.0 / 924.0).abs() < 1e-12);
    assert!(proof["adjusted_p"].as_f64().unwrap() <= 0.05, "{proof}");
}

fn assert_not_shown(proof: &serde_json::Value) {
    assert_eq!(proof["status"], "not-shown", "{proof}");
    assert_eq!(proof["counts"]["cell"][1], 6, "{proof}");
    assert!(proof["bound"].as_f64().unwrap() > 0.0, "{proof}");
}

/// A lone fixed port: no partner to collide with, the ladder's rung 3 proposed.
fn assert_ladder(proof: &serde_json::Value) {
    assert_eq!(proof["status"], "unconfirmed", "{proof}");
    assert!(proof["command"]
        .as_str()
        .unwrap()
        .starts_with("flakelab ladder --from 3 --to 3 --test "));
    assert!(proof["reason"]
        .as_str()
        .unwrap()
        .starts_with("a collision needs a partner"));
}

fn reason(proof: &serde_json::Value) -> &str {
    assert_eq!(proof["status"], "unconfirmed", "{proof}");
    assert!(proof["command"]
        .as_str()
        .unwrap()
        .starts_with("flakelab run "));
    proof["reason"].as_str().unwrap()
}

#[test]
fn prove_on_the_python_fixture_proves_the_clock_findings_and_measures_every_near_miss() {
    if !capable(
        "pytest with pytest-xdist",
        sh_ok("python3 -c 'import pytest, xdist'"),
    ) || !offline_available()
    {
        return;
    }
    let lab = Lab::new();
    copy_fixture(&lab, "scan-python");
    let scan = prove(&lab, &[]);
    let s = statuses(&scan);
    let f = |line: u32| &s[&format!("tests/test_planted.py:{line}")];
    assert_proven(&f(13).1, "tz=Pacific/Kiritimati");
    assert_eq!(f(13).1["sham"], "tz=UTC");
    assert_eq!(f(13).1["counts"]["sham"], serde_json::json!([0, 6]));
    assert_proven(&f(21).1, "faketime=@2029-07-01 12:00:00");
    assert!(reason(&f(26).1).starts_with("no perturbation settles this"));
    // A timing race, no network on this host, str hashing already random
    // at baseline, an env write no test of its file reads (run first
    // against last): measured, not shown.
    for line in [31, 36, 41, 52] {
        assert_not_shown(&f(line).1);
    }
    assert_eq!(f(36).1["counts"]["baseline"], serde_json::json!([6, 6]));
    assert_ladder(&f(47).1);
    let statuses: Vec<&str> = s.values().map(|(st, _)| st.as_str()).collect();
    assert_eq!(
        statuses,
        [
            "proven",
            "proven",
            "unconfirmed",
            "not-shown",
            "not-shown",
            "not-shown",
            "unconfirmed",
            "not-shown"
        ]
    );
    // Every near-miss ran in every cell, and none flipped.
    let (tests, cells) = controls(&scan);
    assert_eq!(
        tests,
        [
            "tests/test_frozen.py::test_frozen_today",
            "tests/test_near_miss.py::test_bounded_poll",
            "tests/test_near_miss.py::test_deadline_poll",
            "tests/test_near_miss.py::test_env_restored",
            "tests/test_near_miss.py::test_loopback_call",
            "tests/test_near_miss.py::test_past_expiry",
            "tests/test_near_miss.py::test_port_zero",
            "tests/test_near_miss.py::test_seeded_pick",
            "tests/test_near_miss.py::test_sorted_set",
        ]
    );
    assert_eq!(
        cells,
        [
            "cpu-stress",
            "faketime=@2029-07-01 12:00:00",
            "hashseed-random",
            "netns",
            "tz=Pacific/Kiritimati",
            "tz=Pacific/Pago_Pago"
        ]
    );
    // Each cell is a recorded session; `report` shows its proofs again.
    let session = f(13).1["session"].as_str().unwrap();
    let out = lab.run(&["report", session]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("scan --prove under tz=Pacific/Kiritimati: 1 finding(s), 9 control(s)"),
        "{text}"
    );
    assert!(
        text.contains("tests/test_planted.py:13  today_label  clock: proven: tests/test_planted.py::test_today_label failed 6 of 6 under tz=Pacific/Kiritimati against 0 of 6 at baseline"),
        "{text}"
    );
    let sessions = std::fs::read_to_string(lab.store().join("sessions.jsonl")).unwrap();
    assert_eq!(
        sessions.matches("\"scan_prove\":\"scan --prove: ").count(),
        7
    );
}

fn go_env(home: &Path) -> Vec<(&'static str, std::path::PathBuf)> {
    vec![
        ("GOCACHE", home.join("cache")),
        ("GOPATH", home.join("path")),
        ("GOFLAGS", "-mod=mod".into()),
        ("GOPROXY", "off".into()),
        ("GOENV", "off".into()),
        ("GOTOOLCHAIN", "local".into()),
        ("GOWORK", "off".into()),
    ]
}

#[test]
fn prove_on_the_go_fixture_proves_the_zone_finding_and_says_why_the_clock_shift_cannot_apply() {
    if !capable("go (Debian golang-go)", sh_ok("go version")) || !offline_available() {
        return;
    }
    let lab = Lab::new();
    copy_fixture(&lab, "scan-go");
    let home = tempfile::tempdir().unwrap();
    let env = go_env(home.path());
    let env: Vec<(&str, &Path)> = env.iter().map(|(k, v)| (*k, v.as_path())).collect();
    let scan = prove(&lab, &env);
    let s = statuses(&scan);
    let f = |line: u32| &s[&format!("planted_test.go:{line}")];
    assert_proven(&f(16).1, "tz=Pacific/Kiritimati");
    assert!(
        reason(&f(23).1).contains("the clock preload does not reach it"),
        "{}",
        f(23).1
    );
    for line in [38, 54] {
        assert_not_shown(&f(line).1);
    }
    assert_ladder(&f(69).1);
    for line in [30, 49, 79] {
        assert!(reason(&f(line).1).starts_with("no perturbation settles this"));
    }
    assert!(reason(&f(62).1).starts_with("a shuffle cell"));
    let (tests, cells) = controls(&scan);
    assert_eq!(
        tests,
        [
            "TestBoundedRetry",
            "TestDuration",
            "TestEnvRestored",
            "TestLoopback",
            "TestPastExpiry",
            "TestPortZero",
            "TestSeeded",
            "TestSortedKeys"
        ]
    );
    assert_eq!(
        cells,
        [
            "cpu-stress",
            "netns",
            "tz=Pacific/Kiritimati",
            "tz=Pacific/Pago_Pago"
        ]
    );
}

#[test]
fn prove_on_the_js_fixture_proves_both_clock_findings_through_the_projects_vitest() {
    if !offline_available() {
        return;
    }
    // The runner tests' pinned vitest install (the same version as
    // scan-js/package.json), linked into this lab.
    let Some(vitest) = super::runner_node::npm_lab("vitest-project", "vitest 4.1.12 (npm install)")
    else {
        return;
    };
    let deps = std::fs::read_link(vitest.path().join("node_modules")).unwrap();
    let lab = Lab::new();
    copy_fixture(&lab, "scan-js");
    std::os::unix::fs::symlink(deps, lab.path().join("node_modules")).unwrap();
    let scan = prove(&lab, &[]);
    let s = statuses(&scan);
    let f = |line: u32| &s[&format!("tests/planted.test.js:{line}")];
    assert_proven(&f(6).1, "tz=Pacific/Kiritimati");
    assert_eq!(f(6).1["sham"], "tz=UTC");
    assert_eq!(f(6).1["counts"]["sham"], serde_json::json!([0, 6]));
    // libfaketime reaches node's clock (a dynamically linked libc).
    assert_proven(&f(11).1, "faketime=@2029-07-01 12:00:00");
    assert!(reason(&f(16).1).starts_with("no perturbation settles this"));
    // A timing race, no network here, and ICU's POSIX locale formats
    // 1,234.5 as the baseline does: not shown. No partner on port 3000.
    for line in [22, 27, 43] {
        assert_not_shown(&f(line).1);
    }
    assert_ladder(&f(37).1);
    assert_eq!(f(27).1["counts"]["baseline"], serde_json::json!([6, 6]));
    assert!(reason(&f(32).1).starts_with("a shuffle cell"));
    assert_eq!(s.len(), 8);
    // The near-misses of near.test.ts (TypeScript) ran beside the
    // JavaScript findings' tests, in one vitest session per cell.
    let (tests, cells) = controls(&scan);
    assert_eq!(
        tests,
        [
            "bounded poll",
            "env restored",
            "explicit locale",
            "frozen today",
            "loopback",
            "opaque id",
            "port zero"
        ]
    );
    assert_eq!(
        cells,
        [
            "cpu-stress",
            "faketime=@2029-07-01 12:00:00",
            "locale=POSIX",
            "netns",
            "tz=Pacific/Kiritimati",
            "tz=Pacific/Pago_Pago"
        ]
    );
    assert!(
        runs(&lab).contains("node_modules/.bin/vitest\",\"run\",\"-t\",\"^(labels today|"),
        "the project's own vitest, not npx, on the reached tests"
    );
}

#[test]
fn prove_on_the_rust_fixture_proves_both_clock_findings_offline() {
    if !capable("cargo", sh_ok("cargo --version")) || !offline_available() {
        return;
    }
    let lab = Lab::new();
    copy_fixture(&lab, "scan-rust");
    // std only (its chrono and rand are src/lib.rs's stand-ins): it builds
    // offline, in the first run, into a target of its own.
    let target = tempfile::tempdir().unwrap();
    let scan = prove(&lab, &[("CARGO_TARGET_DIR", target.path())]);
    let s = statuses(&scan);
    let f = |line: u32| &s[&format!("tests/planted.rs:{line}")];
    assert_proven(&f(13).1, "tz=Pacific/Kiritimati");
    assert_eq!(f(13).1["counts"]["sham"], serde_json::json!([0, 6]));
    assert_proven(&f(19).1, "faketime=@2029-07-01 12:00:00");
    for line in [31, 37] {
        assert_not_shown(&f(line).1);
    }
    assert_ladder(&f(49).1);
    assert_eq!(f(37).1["counts"]["baseline"], serde_json::json!([6, 6]));
    for line in [25, 56] {
        assert!(reason(&f(line).1).starts_with("no perturbation settles this"));
    }
    assert!(reason(&f(43).1).starts_with("a shuffle cell"));
    assert_eq!(s.len(), 8);
    let (tests, cells) = controls(&scan);
    assert_eq!(
        tests,
        [
            "bounded_poll",
            "duration",
            "env_restored",
            "loopback",
            "past_expiry",
            "port_zero",
            "sorted_keys"
        ]
    );
    assert_eq!(
        cells,
        [
            "cpu-stress",
            "faketime=@2029-07-01 12:00:00",
            "netns",
            "tz=Pacific/Kiritimati",
            "tz=Pacific/Pago_Pago"
        ]
    );
    // Several tests, one `--exact`: libtest refuses it twice.
    assert!(
        runs(&lab).contains("\"--tests\",\"--\",\"--exact\",\"clock_today\",\"duration\","),
        "{}",
        runs(&lab).lines().next().unwrap_or_default()
    );
}

#[test]
fn prove_leaves_findings_whose_runner_is_not_installed_unconfirmed_with_the_command() {
    let lab = Lab::new();
    // package.json names vitest, and the tree has no node_modules: npx
    // would fetch it, so nothing runs.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scan-js");
    let out = lab
        .cmd()
        .args([
            "scan",
            "--prove",
            "--format",
            "json",
            "--today",
            "2026-12-01",
        ])
        .arg(&root)
        .args(["--store", lab.store().to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let scan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let findings = scan["findings"].as_array().unwrap();
    assert!(!findings.is_empty());
    let mut uninstalled = 0;
    for f in findings {
        assert_eq!(f["status"], "unconfirmed", "{f}");
        assert_eq!(f["proof"]["command"], f["command"], "{f}");
        uninstalled +=
            usize::from(f["proof"]["reason"].as_str().unwrap().contains(
                "names vitest, and it is not installed here (no node_modules/.bin/vitest)",
            ));
    }
    assert_eq!(uninstalled, 6, "every finding with a cell: {findings:?}");
    assert!(
        !lab.store().join("sessions.jsonl").exists(),
        "nothing ran, nothing recorded"
    );
    // --runs without --prove is a usage error.
    let out = lab.run(&["scan", "-n", "3", "."]);
    assert_eq!(out.status.code(), Some(2));
}

/// The three proposals that need more than one test or one zone, proven
/// with real pytest offline (`tests/fixtures/scan-flip`): a date read
/// under the zones on both sides of UTC (one of them moves the date at
/// any hour), a fixed-port pair under two workers (the pair counted
/// together: whichever binds second fails), a module-dict writer run
/// before the test it pollutes against after it. Every command runs from
/// the project root: pytest collects what it names.
#[test]
fn prove_on_the_flip_fixture_proves_the_date_at_any_hour_the_port_pair_and_the_polluter() {
    if !capable(
        "pytest with pytest-xdist",
        sh_ok("python3 -c 'import pytest, xdist'"),
    ) || !offline_available()
    {
        return;
    }
    let lab = Lab::new();
    copy_fixture(&lab, "scan-flip");
    let scan = prove(&lab, &[]);
    let s = statuses(&scan);
    assert_eq!(s.len(), 4, "{s:?}");
    for (site, (status, proof)) in &s {
        assert_eq!(status, "proven", "{site}: {proof}");
        assert_eq!(
            proof["counts"]["cell"],
            serde_json::json!([6, 6]),
            "{proof}"
        );
        assert_eq!(proof["counts"]["baseline"], serde_json::json!([0, 6]));
    }
    let date = &s["tests/test_dates.py:10"].1;
    let zone = date["cell"].as_str().unwrap();
    assert!(
        ["tz=Pacific/Kiritimati", "tz=Pacific/Pago_Pago"].contains(&zone),
        "{date}"
    );
    assert!(date["reason"]
        .as_str()
        .unwrap()
        .contains("also tried under tz=Pacific/"));
    let port = &s["tests/test_ports.py:23"].1;
    assert_eq!(port["cell"], "workers=2x");
    assert_eq!(
        port["counts"]["test"],
        "tests/test_ports.py::test_server_a + tests/test_ports.py::test_server_b"
    );
    let polluter = &s["tests/test_config.py:11"].1;
    assert_eq!(
        polluter["counts"]["test"],
        "tests/test_config.py::test_default_mode"
    );
    // Every proposed command's subject runs from the project root.
    for f in scan["findings"].as_array().unwrap() {
        let command = f["command"].as_str().unwrap();
        let subject = command.split_once(" -- ").unwrap().1;
        let mut words = shell_words::split(subject).unwrap();
        words.push("--collect-only".into());
        let out = Command::new(&words[0])
            .args(&words[1..])
            .current_dir(lab.path())
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{command}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

/// A subdirectory of a pytest project proved as the project is: scanned
/// from `tests/` (a `tests/conftest.py` beside its tests, the project's
/// `pyproject.toml` above), its sessions run from the project's root on
/// the ids pytest reports there, and its store is the project's. Before,
/// they ran in `tests/` on ids pytest names from its rootdir otherwise,
/// and measured nothing.
#[test]
fn prove_of_a_subdirectory_runs_from_the_project_root_and_proves_the_date_read() {
    if !capable("pytest", sh_ok("python3 -c 'import pytest'")) || !offline_available() {
        return;
    }
    let lab = Lab::new();
    let root = lab.path().canonicalize().unwrap();
    let tests = root.join("tests");
    std::fs::create_dir_all(&tests).unwrap();
    std::fs::write(root.join("pyproject.toml"), "[project]\nname = \"flip\"\n").unwrap();
    std::fs::write(tests.join("conftest.py"), "").unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scan-flip/tests");
    std::fs::copy(fixture.join("test_dates.py"), tests.join("test_dates.py")).unwrap();
    let scan = prove_in(&tests, &[]);
    let s = statuses(&scan);
    assert_eq!(s.len(), 1, "{s:?}");
    let (status, proof) = &s["test_dates.py:10"];
    let id = "tests/test_dates.py::test_local_date_is_utc_date";
    let finding = &scan["findings"][0];
    assert_eq!(
        finding["tests"][0],
        "test_dates.py::test_local_date_is_utc_date"
    );
    assert!(
        finding["command"].as_str().unwrap().ends_with(id),
        "{finding}"
    );
    // One of the two zones moves the local date at any hour.
    assert_eq!(status, "proven", "{proof}");
    assert_eq!(proof["counts"]["test"], id);
    assert_eq!(proof["counts"]["cell"], serde_json::json!([6, 6]));
    assert_eq!(proof["counts"]["baseline"], serde_json::json!([0, 6]));
    assert_eq!(proof["counts"]["sham"], serde_json::json!([0, 6]));
    // The project's store; every run started at its root, naming the id
    // from there.
    assert!(!tests.join(".flakelab").exists());
    let records = lab.runs();
    let mut arms: BTreeMap<String, usize> = BTreeMap::new();
    for r in &records {
        *arms
            .entry(r["cell"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    assert_eq!(
        records.len(),
        36,
        "two zones' sessions, three arms of 6: {arms:?}"
    );
    for r in &records {
        assert_eq!(r["cwd"], root.to_str().unwrap(), "{r}");
        assert!(r["argv"].as_array().unwrap().iter().any(|a| a == id), "{r}");
    }
}
