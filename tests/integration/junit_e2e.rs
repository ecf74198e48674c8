//! Per-test outcomes end to end, with a real runner writing JUnit (pytest)
//! and with reports that are missing or broken.

use super::{capable, cell, sh_ok, Lab};

fn pytest_available() -> bool {
    capable(
        "pytest (python3 -m pytest)",
        sh_ok("python3 -m pytest --version"),
    )
}

const SUITE: &str = r#"
import time, pytest

def test_due_date_uses_utc():
    # Planted: assumes the host runs in UTC.
    assert time.strftime("%z") == "+0000", "local offset is " + time.strftime("%z")

@pytest.mark.parametrize("cents", [1, 2, 3])
def test_adds(cents):
    assert cents + 0 == cents

@pytest.mark.skip(reason="not on this platform")
def test_skipped():
    pass

def test_stable():
    assert "a".upper() == "A"
"#;

#[test]
fn pytest_under_a_zone_singles_out_the_zone_dependent_test() {
    if !pytest_available() {
        return;
    }
    let lab = Lab::new();
    std::fs::write(lab.path().join("test_billing.py"), SUITE).unwrap();
    let (code, report) = lab.run_json(&[
        "--no-sham",
        "-n",
        "6",
        "--seed",
        "3",
        "-p",
        "tz=Asia/Kathmandu",
        "--",
        "python3",
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--junitxml={junit}",
    ]);
    assert_eq!(code, 1, "{report}");
    let zone = cell(&report, "tz=Asia/Kathmandu");
    let tests = zone["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 6, "{zone}");
    // The differing test comes first, with its k of N and its signature.
    let first = &tests[0];
    assert_eq!(first["id"], "test_billing::test_due_date_uses_utc");
    assert_eq!(
        (first["k"].as_u64(), first["n"].as_u64()),
        (Some(6), Some(6))
    );
    assert_eq!(first["vs_baseline"]["differs"], true);
    assert_eq!(first["status"], "always_fails");
    let sig = first["signatures"][0]["signature"].as_str().unwrap();
    assert!(sig.starts_with("AssertionError: local offset is"), "{sig}");
    assert_eq!(first["signatures"][0]["count"].as_u64(), Some(6));
    // The stable tests: 0 of 6 with the zero-failure bound, no difference.
    // (6 runs a cell: 6 of 6 against 0 of 6 is p = 0.0022 per test, below
    // 0.05 after Holm across all six tests.)
    for t in &tests[1..] {
        if t["id"] == "test_billing::test_skipped" {
            assert_eq!(t["status"], "always_skipped", "{t}");
            assert_eq!(t["skipped"].as_u64(), Some(6));
            continue;
        }
        assert_eq!(
            (t["k"].as_u64(), t["n"].as_u64()),
            (Some(0), Some(6)),
            "{t}"
        );
        assert!((t["high"].as_f64().unwrap() - 0.3930).abs() < 1e-3, "{t}");
        assert_eq!(t["vs_baseline"]["differs"], false, "{t}");
    }
    // The cell's failed runs, grouped by their first failure's signature.
    assert_eq!(zone["signatures"][0]["count"].as_u64(), Some(6), "{zone}");
    assert_eq!(zone["signatures"][0]["signature"].as_str(), Some(sig));
    // Parameterised cases share a family.
    let adds = tests
        .iter()
        .find(|t| t["id"] == "test_billing::test_adds[2]")
        .unwrap();
    assert_eq!(adds["family"], "test_billing::test_adds");
    // Each record holds the per-test outcomes and a fresh report path.
    let runs = lab.runs();
    let paths: std::collections::HashSet<_> = runs.iter().map(|r| r["junit"].to_string()).collect();
    assert_eq!(paths.len(), 12);
    assert!(runs
        .iter()
        .all(|r| r["tests"].as_array().map(Vec::len) == Some(6)));
    let failing = runs
        .iter()
        .find(|r| r["cell"] == "tz=Asia/Kathmandu")
        .unwrap();
    assert!(failing["failure_signature"]
        .as_str()
        .unwrap()
        .starts_with("AssertionError"));
    let table = String::from_utf8(lab.run(&["report"]).stdout).unwrap();
    assert!(
        table.contains("test_billing::test_due_date_uses_utc"),
        "{table}"
    );
    assert!(table.contains("6 of 6 (always fails)"), "{table}");
    assert!(
        table.contains("4 other test(s) passed in every run"),
        "{table}"
    );
    assert!(
        table.contains("1 test(s) were skipped in every run"),
        "{table}"
    );
}

#[test]
fn a_broken_or_missing_report_never_hides_the_run() {
    let lab = Lab::new();
    // Half a report, then a clean exit: the run passes; its tests are missing.
    let (code, report) = lab.run_json(&[
        "-n",
        "3",
        "--",
        "sh",
        "-c",
        "printf '<testsuite><testcase name=\"a\">' > \"$1\"",
        "sh",
        "{junit}",
    ]);
    assert_eq!(code, 0, "{report}");
    let base = cell(&report, "baseline");
    assert_eq!((base["k"].as_u64(), base["n"].as_u64()), (Some(0), Some(3)));
    assert_eq!(base["runs_without_tests"].as_u64(), Some(3));
    for run in lab.runs() {
        assert_eq!(run["outcome"], "pass");
        assert!(
            run["tests_missing"]
                .as_str()
                .unwrap()
                .contains("not well-formed"),
            "{run}"
        );
    }
    // No report at all, with --junit: the failing runs still count as failures.
    let (code, report) = lab.run_json(&["-n", "2", "--junit", "reports/{run}.xml", "--", "false"]);
    // The baseline alone: its failures are the finding.
    assert_eq!(code, 1, "{report}");
    let base = cell(&report, "baseline");
    assert_eq!((base["k"].as_u64(), base["n"].as_u64()), (Some(2), Some(2)));
    assert_eq!(base["runs_without_tests"].as_u64(), Some(2));
    let table = String::from_utf8(lab.run(&["report"]).stdout).unwrap();
    assert!(
        table.contains("2 of 2 counted runs have no per-test data"),
        "{table}"
    );
}

#[test]
fn junit_options_are_checked_before_anything_runs() {
    let lab = Lab::new();
    for args in [
        vec![
            "run", "--junit", "r.xml", "--", "sh", "-c", "true", "{junit}",
        ],
        vec!["run", "--junit", "r-{seed}.xml", "--", "true"],
        vec!["run", "-j", "2", "--junit", "r.xml", "--", "true"],
    ] {
        let out = lab.run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("hint:"),
            "{args:?}"
        );
    }
    assert!(lab.runs().is_empty());
}
