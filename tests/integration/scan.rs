//! `flakelab scan` through the real binary: the JSON contract, the
//! coverage block closing every rendering, the ledger's exit codes, and
//! this repository's own scan against its committed ledger.

use std::path::Path;

use crate::Lab;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn scan(lab: &Lab, args: &[&str]) -> (i32, String, String) {
    let out = lab
        .cmd()
        .arg("scan")
        .args(args)
        .output()
        .expect("flakelab runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn scan_json_names_each_findings_site_tests_class_perturbation_status_and_fix() {
    let lab = Lab::new();
    let root = repo().join("tests/fixtures/scan-go");
    let (code, out, err) = scan(
        &lab,
        &[
            root.to_str().unwrap(),
            "--format",
            "json",
            "--today",
            "2026-12-01",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["schema"], "flakelab.scan/1");
    let bomb = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["bucket"] == "time-bomb")
        .expect("the planted time bomb");
    assert_eq!(bomb["file"], "planted_test.go");
    assert_eq!(bomb["line"], 23);
    assert_eq!(bomb["symbol"], "TestLicence");
    assert_eq!(bomb["class"], "clock");
    assert_eq!(bomb["tests"], serde_json::json!(["TestLicence"]));
    assert_eq!(bomb["perturbation"], "faketime=@2029-07-01 12:00:00");
    assert_eq!(bomb["status"], "unconfirmed");
    assert_eq!(
        bomb["command"],
        "flakelab run -n 20 -p 'faketime=@2029-07-01 12:00:00' -- go test -count=1 -run '^(TestLicence)$' ./"
    );
    assert!(bomb["fix"].as_str().unwrap().contains("injected now"));
    let poll = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["bucket"] == "unbounded-poll")
        .unwrap();
    assert_eq!(poll["perturbation"], serde_json::Value::Null);
    assert!(poll["settle"]
        .as_str()
        .unwrap()
        .starts_with("no perturbation settles this: "));
    let classes: Vec<_> = v["coverage"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["class"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        classes,
        [
            "clock",
            "random",
            "sleep",
            "network",
            "global-state",
            "host-resource",
            "order"
        ]
    );
}

#[test]
fn table_and_markdown_end_with_the_class_coverage_block() {
    let lab = Lab::new();
    let root = repo().join("tests/fixtures/scan-python");
    let (_, table, _) = scan(&lab, &[root.to_str().unwrap(), "--today", "2026-12-01"]);
    let tail: Vec<&str> = table.lines().rev().take(8).collect();
    assert_eq!(
        tail[7], "coverage (class, sites, findings, scanned):",
        "{table}"
    );
    assert!(tail[0].trim_start().starts_with("order"), "{table}");
    let (_, md, _) = scan(
        &lab,
        &[
            root.to_str().unwrap(),
            "--format",
            "markdown",
            "--today",
            "2026-12-01",
        ],
    );
    let last = md.lines().last().unwrap();
    assert!(last.starts_with("| order | 1 | 1 |"), "{md}");
}

#[test]
fn strict_fails_on_a_new_finding_and_on_a_stale_entry_and_a_bad_ledger_is_a_usage_error() {
    let lab = Lab::new();
    let tree = lab.path().join("t");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(
        tree.join("test_a.py"),
        "import time\n\ndef test_a():\n    time.sleep(0.1)\n    assert not False\n",
    )
    .unwrap();
    let t = tree.to_str().unwrap();
    let (code, out, _) = scan(&lab, &[t, "--strict"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("new:   test_a.py  test_a  sleep [sleep-then-assert]"),
        "{out}"
    );
    let entry = |file: &str| {
        format!(
            r#"{{"file": "{file}", "symbol": "test_a", "class": "sleep", "bucket": "sleep-then-assert", "reason": "asserts an absence on purpose"}}"#
        )
    };
    let ledger = lab.path().join("ledger.json");
    std::fs::write(
        &ledger,
        format!(
            r#"{{"schema": "flakelab.scan-ledger/1", "entries": [{}]}}"#,
            entry(r".\\test_a.py")
        ),
    )
    .unwrap();
    let l = ledger.to_str().unwrap();
    let (code, out, err) = scan(&lab, &[t, "--ledger", l, "--strict"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("ledger: 1 accepted, 0 new, 0 stale"), "{out}");
    std::fs::write(
        &ledger,
        format!(
            r#"{{"schema": "flakelab.scan-ledger/1", "entries": [{}, {}]}}"#,
            entry("test_a.py"),
            entry("gone.py")
        ),
    )
    .unwrap();
    let (code, out, _) = scan(&lab, &[t, "--ledger", l, "--strict"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("stale: gone.py  test_a  sleep [sleep-then-assert]"),
        "{out}"
    );
    // Without --strict the ledger is reported, and the exit is 0.
    assert_eq!(scan(&lab, &[t, "--ledger", l]).0, 0);
    std::fs::write(&ledger, "{").unwrap();
    let (code, _, err) = scan(&lab, &[t, "--ledger", l]);
    assert_eq!(code, 2);
    assert!(err.contains("not a scan ledger"), "{err}");
}

#[test]
fn this_repositorys_own_scan_is_clean_against_its_committed_ledger() {
    let lab = Lab::new();
    let root = repo();
    let ledger = root.join("scan-ledger.json");
    let (code, out, err) = scan(
        &lab,
        &[
            root.to_str().unwrap(),
            "--ledger",
            ledger.to_str().unwrap(),
            "--strict",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
}
