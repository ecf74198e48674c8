//! `flakelab runs` (issue #37 item 4): a session's runs as whole
//! `flakelab.run/1` records (JSON Lines) and as one CSV row per (run, test)
//! that SQLite's own command line imports, and whose per-test counts there
//! equal the report's k of N. Driven by the fake executor: a 2,000-test
//! JUnit report, some ids with commas and quotes.

use std::collections::BTreeMap;
use std::process::Command;

use super::fake::{code, fake, json, script};
use super::{capable, sh_ok, Lab};

const TESTS: usize = 2000;

/// A JUnit report of the 2,000 tests where those `fails` picks fail.
fn junit(fails: impl Fn(usize) -> bool) -> String {
    let mut cases = String::new();
    for i in 0..TESTS {
        // Every 250th id holds a comma, a quote and a space, as user data can.
        let name = if i % 250 == 0 {
            format!("test_{i}[a,b \"q\"]")
        } else {
            format!("test_{i}")
        };
        let name = name.replace('"', "&quot;");
        if fails(i) {
            cases.push_str(&format!(
                "<testcase classname='pkg.mod' name='{name}'><failure message='boom, \"{i}\"'/></testcase>"
            ));
        } else {
            cases.push_str(&format!("<testcase classname='pkg.mod' name='{name}'/>"));
        }
    }
    format!("<testsuite name='s' tests='{TESTS}'>{cases}</testsuite>").replace('"', "\\\"")
}

/// A session of 2 cells × 3 runs: under tz=UTC every 7th test fails in
/// replicate 0 and every 10th in replicate 1; the baseline's replicate 2
/// fails every 500th.
fn session(lab: &Lab) -> serde_json::Value {
    let text = format!(
        "[[run]]\ncell = \"tz=UTC\"\nreplicate = 0\nexit = 1\njunit = \"{}\"\n\
         [[run]]\ncell = \"tz=UTC\"\nreplicate = 1\nexit = 1\njunit = \"{}\"\n\
         [[run]]\ncell = \"baseline\"\nreplicate = 2\nexit = 1\njunit = \"{}\"\n\
         [[run]]\njunit = \"{}\"\n",
        junit(|i| i % 7 == 0),
        junit(|i| i % 10 == 0),
        junit(|i| i % 500 == 0),
        junit(|_| false),
    );
    let s = script(lab, &text);
    let out = fake(
        lab,
        &s,
        &[
            "run",
            "--format",
            "json",
            "--no-sham",
            "-n",
            "3",
            "--seed",
            "5",
            "-p",
            "tz=UTC",
            "--",
            "subject",
            "--junit={junit}",
        ],
    );
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    json(&out)
}

/// (cell, test) → (k, n) as the report counts them.
fn report_counts(report: &serde_json::Value) -> BTreeMap<(String, String), (u64, u64)> {
    let mut counts = BTreeMap::new();
    for cell in report["cells"].as_array().unwrap() {
        for t in cell["tests"].as_array().unwrap() {
            counts.insert(
                (
                    cell["name"].as_str().unwrap().into(),
                    t["id"].as_str().unwrap().into(),
                ),
                (t["k"].as_u64().unwrap(), t["n"].as_u64().unwrap()),
            );
        }
    }
    counts
}

#[test]
fn csv_loaded_into_sqlite_gives_the_reports_per_test_counts() {
    if !capable("sqlite3", sh_ok("sqlite3 -version")) {
        return;
    }
    let lab = Lab::new();
    let report = session(&lab);
    let want = report_counts(&report);
    assert_eq!(want.len(), 2 * TESTS, "every test in both cells");
    assert!(want.values().any(|&(k, _)| k == 2), "a test failed twice");

    let out = lab.run(&["runs", "--format", "csv"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let csv = lab.path().join("runs.csv");
    std::fs::write(&csv, &out.stdout).unwrap();
    // The book's query (book/src/reports.md), run by SQLite itself.
    let query = "SELECT cell, test, SUM(test_outcome IN ('fail','error')) AS k, COUNT(*) AS n \
                 FROM runs WHERE run_outcome IN ('pass','fail') \
                 AND test_outcome IN ('pass','fail','error') GROUP BY cell, test";
    let got = Command::new("sqlite3")
        .current_dir(lab.path())
        .args([
            ":memory:",
            ".import --csv runs.csv runs",
            ".mode json",
            query,
        ])
        .output()
        .unwrap();
    assert!(
        got.status.success(),
        "{}",
        String::from_utf8_lossy(&got.stderr)
    );
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&got.stdout).unwrap();
    let got: BTreeMap<(String, String), (u64, u64)> = rows
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap().to_string();
            let n = |k: &str| r[k].as_u64().unwrap();
            ((s("cell"), s("test")), (n("k"), n("n")))
        })
        .collect();
    assert_eq!(got.len(), want.len());
    assert_eq!(got, want);
    // The ids with a comma and a quote came through whole.
    assert_eq!(
        got.get(&("tz=UTC".into(), "pkg.mod::test_0[a,b \"q\"]".into())),
        Some(&(2, 3))
    );
}

#[test]
fn jsonl_gives_each_run_whole_as_a_run_1_record() {
    let lab = Lab::new();
    session(&lab);
    let out = lab.run(&["runs"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 6);
    let stored = lab.runs();
    for (line, stored) in lines.iter().zip(&stored) {
        assert_eq!(line["schema"], "flakelab.run/1");
        assert_eq!(line["tests"].as_array().unwrap().len(), TESTS);
        // Whole: the argv, environment and repro line expanded, and every
        // other field as flakelab reads it back.
        assert!(
            line["repro"].as_str().unwrap().contains("subject --junit="),
            "{}",
            line["repro"]
        );
        let mut line = line.clone();
        line["schema"] = stored["schema"].clone();
        assert_eq!(&line, stored);
    }
}

#[test]
fn a_named_session_gives_its_runs_only_and_an_unknown_one_is_a_usage_error() {
    let lab = Lab::new();
    let s = script(&lab, "[[run]]\nexit = 0\n");
    let mut ids = Vec::new();
    for n in ["2", "3"] {
        let out = fake(
            &lab,
            &s,
            &[
                "run",
                "--format",
                "json",
                "--no-sham",
                "-n",
                n,
                "--",
                "subject",
            ],
        );
        assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
        ids.push(json(&out)["session"].as_str().unwrap().to_string());
    }
    let rows = |args: &[&str]| {
        let out = lab.run(args);
        assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    // The latest by default; a run without per-test data is one row.
    let latest = rows(&["runs", "--format", "csv"]);
    assert_eq!(latest.lines().count(), 1 + 3, "{latest}");
    assert!(
        latest.lines().skip(1).all(|l| l.starts_with(&ids[1])),
        "{latest}"
    );
    let first = rows(&["runs", &ids[0]]);
    assert_eq!(first.lines().count(), 2, "{first}");
    assert!(
        first
            .lines()
            .all(|l| l.contains(&format!("\"session\":\"{}\"", ids[0]))),
        "{first}"
    );
    let out = lab.run(&["runs", "no-such-session"]);
    assert_eq!(code(&out), 2);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no session `no-such-session`"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
