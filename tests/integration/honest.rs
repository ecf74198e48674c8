//! Honest wording and counting, through the real binary and the fake
//! executor (`src/exec/fake.rs`): `verify` claims a fix only when its two
//! halves differ at the confidence; with `--signature` a cell row and its
//! test rows count the same runs; a test's whole outcome distribution is
//! compared with the baseline's; the documented examples behave as the
//! book says.

use std::process::Output;

use serde_json::Value;

use super::fake::{code, commit, json, script};
use crate::{cell, Lab};

/// `flakelab ARGS` under the fake executor's script `text`.
fn fake(lab: &Lab, text: &str, args: &[&str]) -> Output {
    super::fake::fake(lab, &script(lab, text), args)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A git repository in the lab with two commits; returns their ids.
fn two_commits(lab: &Lab) -> (String, String) {
    (
        commit(lab, "code.txt", "broken"),
        commit(lab, "code.txt", "fixed"),
    )
}

#[test]
fn verify_at_one_run_is_not_verified_and_names_the_runs_that_would_settle_it() {
    let lab = Lab::new();
    let (before, after) = two_commits(&lab);
    let red_before = "[[run]]\ncell = \"before:baseline\"\nexit = 1\n";
    let verify = |n: &str, format: &str| {
        fake(
            &lab,
            red_before,
            &[
                "verify", "--format", format, "--before", &before, "--after", &after, "-n", n,
                "--", "subject",
            ],
        )
    };
    // 1 of 1 before, 0 of 1 after: Fisher p = 1. Red before, green after,
    // and nothing shown: not verified, and never exit 0.
    let out = verify("1", "json");
    let v = json(&out);
    assert_eq!(code(&out), 2, "{v:#}");
    assert_eq!(v["negative_control"]["holds"], true, "{v:#}");
    assert_eq!(v["fix"]["holds"], true, "{v:#}");
    assert_eq!(v["difference"]["holds"], false, "{v:#}");
    assert_eq!(v["verified"], false, "{v:#}");
    assert_eq!(
        v["cells"][0]["before_vs_after"]["fisher_p"].as_f64(),
        Some(1.0)
    );
    // 4 of 4 against 0 of 4 is the first that Fisher tells apart at 95%.
    assert_eq!(v["runs_to_settle"].as_u64(), Some(4), "{v:#}");
    let sentence = v["difference"]["sentence"].as_str().unwrap();
    assert!(
        sentence.contains("1 of 1 before, 0 of 1 after, Fisher p=1.000"),
        "{sentence}"
    );
    assert!(sentence.contains("`-n 4`"), "{sentence}");
    let text = stdout(&verify("1", "table"));
    assert!(!text.contains("is verified"), "{text}");
    assert!(
        text.contains(
            "too few runs to tell the two apart at 95% confidence; run again with `-n 4`"
        ),
        "{text}"
    );
    // At the N it named: verified, with the test shown, exit 0.
    let out = verify("4", "json");
    let v = json(&out);
    assert_eq!(code(&out), 0, "{v:#}");
    assert_eq!(v["verified"], true, "{v:#}");
    let p = v["cells"][0]["before_vs_after"]["fisher_p"]
        .as_f64()
        .unwrap();
    assert!((p - 2.0 / 70.0).abs() < 1e-9, "{p}");
    assert!(v["runs_to_settle"].is_null());
    let text = stdout(&verify("4", "table"));
    assert!(
        text.contains(
            "The fix is verified: red before, green after, and the two differ at 95% confidence."
        ),
        "{text}"
    );
    assert!(text.contains("differs (p=0.029)"), "{text}");
}

/// A JUnit report of `(classname, name, outcome)` cases.
fn junit(cases: &[(&str, &str)]) -> String {
    let body: String = cases
        .iter()
        .map(|(name, outcome)| match *outcome {
            "fail" => format!(
                "<testcase classname=\"t\" name=\"{name}\"><failure message=\"AssertionError: zone is wrong\"/></testcase>"
            ),
            "error" => format!("<testcase classname=\"t\" name=\"{name}\"><error message=\"boom\"/></testcase>"),
            "skip" => format!("<testcase classname=\"t\" name=\"{name}\"><skipped/></testcase>"),
            _ => format!("<testcase classname=\"t\" name=\"{name}\"/>"),
        })
        .collect();
    format!("<testsuite>{body}</testsuite>")
}

fn rule(cell: &str, exit: i32, output: &str, cases: &[(&str, &str)]) -> String {
    format!(
        "[[run]]\ncell = \"{cell}\"\nexit = {exit}\noutput = \"{output}\"\njunit = '{}'\n",
        junit(cases)
    )
}

fn test_row<'a>(report: &'a Value, cell_name: &str, id: &str) -> &'a Value {
    cell(report, cell_name)["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("no test {id} in {cell_name}: {report:#}"))
}

#[test]
fn always_failed_then_always_skipped_differs_and_exits_1() {
    let lab = Lab::new();
    // test_c always fails everywhere, so every run fails in both cells:
    // the whole-run counts cannot tell the cells apart; test_a's outcomes can.
    let text = rule(
        "baseline",
        1,
        "2 failed",
        &[("test_a", "fail"), ("test_b", "pass"), ("test_c", "fail")],
    ) + &rule(
        "env=A=1",
        1,
        "1 failed, 1 skipped",
        &[("test_a", "skip"), ("test_b", "pass"), ("test_c", "fail")],
    );
    let run = |format: &str| {
        fake(
            &lab,
            &text,
            &[
                "run", "--format", format, "--seed", "5", "-n", "6", "-p", "env=A=1", "--",
                "subject", "{junit}",
            ],
        )
    };
    let out = run("json");
    let report = json(&out);
    assert_eq!(code(&out), 1, "{report:#}");
    assert_eq!(cell(&report, "env=A=1")["vs_baseline"]["differs"], false);
    let a = test_row(&report, "env=A=1", "t::test_a");
    assert_eq!(a["status"], "always_skipped");
    assert!(a["vs_baseline"].is_null(), "skips are not in N: {a:#}");
    let shift = &a["shift_vs_baseline"];
    assert_eq!(shift["from"]["failed"].as_u64(), Some(6), "{shift:#}");
    assert_eq!(shift["to"]["skipped"].as_u64(), Some(6), "{shift:#}");
    assert_eq!(shift["differs"], true, "{shift:#}");
    for unchanged in ["t::test_b", "t::test_c"] {
        let row = test_row(&report, "env=A=1", unchanged);
        assert_eq!(row["shift_vs_baseline"]["differs"], false, "{row:#}");
    }
    let table = stdout(&run("table"));
    assert!(table.contains("outcomes differ (p=0.006)"), "{table}");
    assert!(
        table.contains("outcomes: baseline failed 6 → here skipped 6"),
        "{table}"
    );
}

#[test]
fn with_a_signature_a_cell_row_counts_every_run_its_test_rows_count() {
    let lab = Lab::new();
    // The runner prints no failure message; only the report holds it.
    let text = rule(
        "env=A=1",
        1,
        "1 failed",
        &[("test_a", "fail"), ("test_b", "pass")],
    );
    let run = |format: &str| {
        fake(
            &lab,
            &text,
            &[
                "run",
                "--format",
                format,
                "--seed",
                "5",
                "-n",
                "3",
                "-p",
                "env=A=1",
                "--signature",
                "zone is wrong",
                "--",
                "subject",
                "{junit}",
            ],
        )
    };
    let out = run("json");
    let report = json(&out);
    assert_eq!(code(&out), 1, "{report:#}");
    let c = cell(&report, "env=A=1");
    let a = test_row(&report, "env=A=1", "t::test_a");
    assert_eq!(
        (c["k"].as_u64(), c["n"].as_u64()),
        (Some(3), Some(3)),
        "{c:#}"
    );
    assert_eq!(
        (a["k"].as_u64(), a["n"].as_u64()),
        (Some(3), Some(3)),
        "{a:#}"
    );
    let table = stdout(&run("table"));
    assert!(
        table.contains("cell rows count runs that reproduced /zone is wrong/"),
        "{table}"
    );
}

#[test]
fn the_books_differs_over_not_applied_example_exits_1() {
    // book/src/stability.md: a cell that is not applied beside one that differs.
    let lab = Lab::new();
    let text = "[[probe]]\ncell = \"no-network\"\napplied = false\nreason = \"netns: the kernel refused a user + network namespace: Operation not permitted (EPERM)\"\n\
                [[run]]\ncell = \"tz-kiritimati\"\nexit = 1\n";
    let out = fake(
        &lab,
        text,
        &[
            "run",
            "-n",
            "5",
            "--seed",
            "5",
            "-p",
            "no-network",
            "-p",
            "tz-kiritimati",
            "--",
            "pytest",
            "tests/test_billing.py",
        ],
    );
    let table = stdout(&out);
    assert_eq!(
        code(&out),
        1,
        "{table}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let book = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/book/src/stability.md"
    ))
    .unwrap();
    for line in table
        .lines()
        .filter(|l| l.starts_with("no-network") || l.starts_with("tz-kiritimati"))
    {
        let cells: Vec<&str> = line.split_whitespace().take(5).collect();
        let shown = cells.join(" ");
        assert!(
            book.lines()
                .any(|b| b.split_whitespace().take(5).collect::<Vec<_>>().join(" ") == shown),
            "the book's example lacks `{shown}`:\n{table}"
        );
    }
}

#[test]
fn the_demo_takes_the_jobs_its_legend_suggests() {
    let lab = Lab::new();
    let out = fake(
        &lab,
        "",
        &["demo", "-n", "1", "-j", "2", "--format", "json"],
    );
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(json(&out)["jobs"].as_u64(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`flakelab demo -j 2`"));
}

#[test]
fn a_demo_whose_every_run_errored_exits_2_as_the_book_says() {
    let lab = Lab::new();
    let out = fake(
        &lab,
        "[[run]]\nspawn_error = \"No such file or directory\"\n",
        &["demo", "-n", "1"],
    );
    assert_eq!(code(&out), 2, "{}", stdout(&out));
    assert!(
        stdout(&out).contains("nothing was measured"),
        "{}",
        stdout(&out)
    );
    let book = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/book/src/stability.md"
    ))
    .unwrap();
    assert!(
        book.contains("or when nothing was measured (2: every run\n  errored or timed out"),
        "book/src/stability.md"
    );
    // A demo whose cells differ is still 0.
    let out = fake(
        &lab,
        "[[run]]\ncell = \"tz-kiritimati\"\nexit = 1\n",
        &["demo", "-n", "2"],
    );
    assert_eq!(code(&out), 0, "{}", stdout(&out));
}

#[test]
fn a_zero_timeout_is_refused_before_anything_runs() {
    let lab = Lab::new();
    for (flag, says) in [
        ("0s", "a timeout of zero"),
        ("abc", "write a number and a unit"),
    ] {
        let out = fake(
            &lab,
            "",
            &["run", "-n", "1", "--timeout", flag, "--", "subject"],
        );
        assert_eq!(code(&out), 2);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("invalid --timeout `{flag}`")) && err.contains(says),
            "{err}"
        );
        assert!(!err.contains("at 0"), "{err}");
    }
    assert!(lab.runs().is_empty());
}

#[test]
fn an_orders_cell_with_no_tests_collected_is_left_out_beside_others_and_refused_alone() {
    let lab = Lab::new();
    // The fake runs write no report: the collection run names no test.
    let beside = fake(
        &lab,
        "",
        &[
            "run", "-n", "1", "-p", "orders", "-p", "tz=UTC", "--format", "json", "--", "pytest",
        ],
    );
    let said = String::from_utf8_lossy(&beside.stderr).into_owned();
    assert!(
        said.contains("reported no tests") && said.contains("the orders cells are left out"),
        "{said}"
    );
    let report = json(&beside);
    let names: Vec<&str> = report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(!names.contains(&"orders"), "{names:?}");
    assert!(names.contains(&"tz=UTC"), "{names:?}");
    let alone = fake(
        &lab,
        "",
        &["run", "-n", "1", "-p", "orders", "--", "pytest"],
    );
    assert_eq!(code(&alone), 2);
    assert!(String::from_utf8_lossy(&alone.stderr).contains("reported no tests"));
}
