//! `--signature` patterns gate, they do not hide: several patterns each get
//! their own count, failures matching none are *other failures* and never
//! exit 0; and a session with one cell finds its failures. Shell subjects
//! whose counter file decides which error each run prints.

use super::{cell, Lab};

/// Run n prints (and reports for `net::test_fetch`, in the JUnit at `$0`)
/// the error `errors[n % len]`; an empty one passes.
fn subject(errors: &[&str]) -> String {
    let cases: String = (errors.iter().enumerate())
        .map(|(i, e)| format!("{i}) msg='{e}';; "))
        .collect();
    format!(
        "n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; \
         case $((n % {len})) in {cases}esac; \
         if [ -n \"$msg\" ]; then \
           printf '<testsuite tests=\"2\"><testcase classname=\"net\" name=\"test_fetch\"><failure message=\"%s\">%s</failure></testcase><testcase classname=\"net\" name=\"test_ok\"/></testsuite>' \"$msg\" \"$msg\" > \"$0\"; \
           echo \"$msg\"; exit 1; \
         fi; \
         printf '<testsuite tests=\"2\"><testcase classname=\"net\" name=\"test_fetch\"/><testcase classname=\"net\" name=\"test_ok\"/></testsuite>' > \"$0\"",
        len = errors.len()
    )
}

fn text(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn fetch_row(report: &serde_json::Value) -> &serde_json::Value {
    (cell(report, "baseline")["tests"].as_array().unwrap().iter())
        .find(|t| t["id"].as_str().unwrap().contains("test_fetch"))
        .unwrap_or_else(|| panic!("no test_fetch row in {report}"))
}

#[test]
fn two_patterns_plus_an_unmatched_failure_give_three_counts_and_exit_1() {
    let lab = Lab::new();
    // Runs 1..8 by n % 4: a pass, a reset, a timeout, an assertion, twice.
    let script = subject(&[
        "",
        "read ECONNRESET",
        "connect ETIMEDOUT",
        "AssertionError: balance 41 != 42",
    ]);
    let args = [
        "-n",
        "8",
        "--signature",
        "ECONNRESET",
        "--signature",
        "ETIMEDOUT",
        "--",
        "sh",
        "-c",
        &script,
        "{junit}",
    ];
    let (code, report) = lab.run_json(&args);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        report["signatures"],
        serde_json::json!(["ECONNRESET", "ETIMEDOUT"])
    );
    let base = cell(&report, "baseline");
    assert_eq!(
        (
            base["k"].as_u64(),
            base["failed"].as_u64(),
            base["n"].as_u64()
        ),
        (Some(4), Some(6), Some(8)),
        "{base:#}"
    );
    let three = serde_json::json!({"matched": [2, 2], "other": 2});
    assert_eq!(base["by_pattern"], three, "{base:#}");
    // The per-test row splits the same way.
    let row = fetch_row(&report);
    assert_eq!(
        (
            row["k"].as_u64(),
            row["other_failures"].as_u64(),
            row["n"].as_u64()
        ),
        (Some(4), Some(2), Some(8)),
        "{row:#}"
    );
    assert_eq!(row["by_pattern"], three, "{row:#}");
    // Each record says which pattern it reproduced.
    let mut patterns: Vec<Option<u64>> = (lab.runs().iter())
        .filter(|r| r["outcome"] == "fail")
        .map(|r| r["signature_pattern"].as_u64())
        .collect();
    patterns.sort();
    assert_eq!(patterns, [None, None, Some(0), Some(0), Some(1), Some(1)]);

    // Every reader says the three counts.
    let split = "pattern 1: 2 of 8, pattern 2: 2 of 8, other failures: 2 of 8";
    for format in ["table", "markdown", "github"] {
        let out = lab.run(&["report", "--format", format]);
        assert_eq!(out.status.code(), Some(1), "report --format {format}");
        let shown = text(&out);
        assert!(shown.contains(split), "report --format {format}:\n{shown}");
        assert!(shown.contains("pattern 2"), "{shown}");
    }
    let table = text(&lab.run(&["report"]));
    assert!(
        table.contains("pattern 1 /ECONNRESET/, pattern 2 /ETIMEDOUT/"),
        "{table}"
    );
    assert!(
        table.contains(&format!("      {split}")),
        "the test row: {table}"
    );
    // The first other failure is run 3 (an assertion), with its repro line.
    assert!(
        table.contains("first other failure in baseline (run ")
            && table.contains(".00002), matching no pattern:"),
        "{table}"
    );
    let evidence = lab.run(&["evidence"]);
    let shown = text(&evidence);
    assert!(shown.contains(split), "{shown}");
    assert!(shown.contains("`baseline (other failure)`, run"), "{shown}");
    assert!(
        shown.contains(
            "Signatures under investigation: pattern 1 `ECONNRESET`, pattern 2 `ETIMEDOUT`"
        ),
        "{shown}"
    );
    let evidence: serde_json::Value =
        serde_json::from_slice(&lab.run(&["evidence", "--format", "json"]).stdout).unwrap();
    assert_eq!(evidence["cells"][0]["by_pattern"], three, "{evidence:#}");
    assert_eq!(
        evidence["signatures"],
        serde_json::json!(["ECONNRESET", "ETIMEDOUT"])
    );
}

#[test]
fn one_pattern_and_other_failures_exit_1_not_a_note_and_0() {
    let lab = Lab::new();
    // The case: failures, none of them the pattern's.
    let script = subject(&["", "connect ETIMEDOUT", "AssertionError: balance 41 != 42"]);
    let (code, report) = lab.run_json(&[
        "-n",
        "6",
        "--signature",
        "ECONNRESET",
        "--",
        "sh",
        "-c",
        &script,
        "{junit}",
    ]);
    assert_eq!(code, 1, "other failures are never green: {report:#}");
    let base = cell(&report, "baseline");
    assert_eq!(
        (base["k"].as_u64(), base["failed"].as_u64()),
        (Some(0), Some(4))
    );
    assert_eq!(
        base["by_pattern"],
        serde_json::json!({"matched": [0], "other": 4})
    );
    let table = text(&lab.run(&["report"]));
    assert!(
        table.contains("baseline: pattern 1: 0 of 6, other failures: 4 of 6 (matching no pattern: real failures, never green)"),
        "{table}"
    );
    let github = text(&lab.run(&["report", "--format", "github"]));
    assert!(
        github.contains("no `--signature` pattern matching"),
        "{github}"
    );
}

#[test]
fn every_failure_matching_exits_1_as_before_with_no_other_failures() {
    let lab = Lab::new();
    let script = subject(&["", "read ECONNRESET"]);
    let (code, report) = lab.run_json(&[
        "-n",
        "4",
        "--signature",
        "ECONNRESET",
        "--",
        "sh",
        "-c",
        &script,
        "{junit}",
    ]);
    assert_eq!(code, 1, "{report:#}");
    let base = cell(&report, "baseline");
    assert_eq!((base["k"].as_u64(), base["n"].as_u64()), (Some(2), Some(4)));
    assert_eq!(
        base["by_pattern"],
        serde_json::json!({"matched": [2], "other": 0})
    );
    // One pattern and nothing else: the k of N says it all.
    let table = text(&lab.run(&["report"]));
    assert!(!table.contains("other failures"), "{table}");
    assert!(!table.contains("first other failure"), "{table}");
    assert!(!table.contains("pattern 1:"), "{table}");
}

#[test]
fn ladder_takes_one_signature() {
    let lab = Lab::new();
    let out = lab.run(&[
        "ladder",
        "--signature",
        "ECONNRESET",
        "--signature",
        "ETIMEDOUT",
        "--",
        "touch",
        "ran",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("ladder takes one --signature"), "{err}");
    assert!(!lab.path().join("ran").exists());
}

#[test]
fn a_pattern_given_twice_is_refused_before_anything_runs() {
    let lab = Lab::new();
    let out = lab.run(&[
        "run",
        "--signature",
        "ECONNRESET",
        "--signature",
        "ETIMEDOUT",
        "--signature",
        "ECONNRESET",
        "--",
        "touch",
        "ran",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--signature `ECONNRESET` is given twice (pattern 3)"),
        "{err}"
    );
    assert!(!lab.path().join("ran").exists());
}

#[test]
fn a_session_with_the_baseline_alone_finds_its_failures() {
    let lab = Lab::new();
    let (code, report) =
        lab.run_json(&["-n", "3", "--", "sh", "-c", "echo 'AssertionError'; exit 1"]);
    assert_eq!(
        code, 1,
        "nothing to compare: the failures are the finding: {report:#}"
    );
    assert_eq!(cell(&report, "baseline")["k"].as_u64(), Some(3));
    assert!(cell(&report, "baseline").get("by_pattern").is_none());
    let github = text(&lab.run(&["report", "--format", "github"]));
    assert!(github.contains("no other cell to compare"), "{github}");
    // Passing every run, it is clean.
    let lab = Lab::new();
    let (code, report) = lab.run_json(&["-n", "3", "--", "true"]);
    assert_eq!(code, 0, "{report:#}");
}
