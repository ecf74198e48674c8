//! Undecided is a verdict, through the fake executor: a design that stops
//! before it can decide a pair whose raw counts differ (the screen's cap
//! below what Holm needs for its candidates, the fixed design's correction
//! over many pairs) says *undecided*, with the counts, both p-values and
//! the runs that would settle it, and exits 4, never 0; given those runs
//! it decides. Every difference carries its effect size.

use serde_json::Value;

use crate::fake::{code, fake, json, script};
use crate::Lab;

/// A JUnit report of `tests` test cases `test_0…`, the first `failing` of
/// them failing.
fn junit(tests: usize, failing: usize) -> String {
    let cases: String = (0..tests)
        .map(|i| match i < failing {
            true => format!(
                "<testcase classname='tests.test_a' name='test_{i}'><failure message='offset'/></testcase>"
            ),
            false => format!("<testcase classname='tests.test_a' name='test_{i}'/>"),
        })
        .collect();
    format!("<testsuite name='s' tests='{tests}'>{cases}</testsuite>")
}

/// Nine tests that fail in every `tz=UTC` run and pass at baseline.
fn nine_real_candidates(lab: &Lab) -> std::path::PathBuf {
    script(
        lab,
        &format!(
            "[[run]]\ncell = \"tz=UTC\"\nexit = 1\njunit = \"{}\"\n[[run]]\njunit = \"{}\"\n",
            junit(9, 9),
            junit(9, 0)
        ),
    )
}

fn screened(lab: &Lab, n: &str) -> std::process::Output {
    let s = nine_real_candidates(lab);
    fake(
        lab,
        &s,
        &[
            "run",
            "--format",
            "json",
            "--design",
            "screen",
            "-n",
            n,
            "--seed",
            "7",
            "-p",
            "tz=UTC",
            "--",
            "subject",
            "--junit={junit}",
        ],
    )
}

/// The confirmed rows of a report.
fn confirm_rows(report: &Value) -> Vec<Value> {
    (report["cells"].as_array().unwrap().iter())
        .flat_map(|c| c["tests"].as_array().unwrap().iter())
        .filter(|t| t["stage"] == "confirm")
        .cloned()
        .collect()
}

#[test]
fn a_cap_below_what_holm_needs_is_said_up_front_and_leaves_every_pair_undecided() {
    let lab = Lab::new();
    let out = screened(&lab, "8");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // 9 candidates: a complete separation reaches 0.05 / 9 (with the planned
    // look's 75%) at 5 pairs, 1 / C(10, 5) = 0.004: 10 runs each.
    assert!(
        stderr.contains("flakelab: the cap of 8 confirmation runs per candidate is below the 10 each of 9 candidate(s) needs"),
        "{stderr}"
    );
    assert_eq!(code(&out), 4, "{stderr}");
    let report = json(&out);
    assert_eq!(
        report["design"]["runs_needed_each"], 10,
        "{}",
        report["design"]
    );
    assert!(
        report["design"]["rule"].is_object() && crate::fake::code(&out) != 0,
        "never clean"
    );
    let rows = confirm_rows(&report);
    assert_eq!(rows.len(), 9, "{report:#}");
    for row in &rows {
        let v = &row["vs_baseline"];
        assert_eq!(v["differs"], false, "{row}");
        assert_eq!(v["undecided"]["stopped_by"], "cap", "{row}");
        assert_eq!(v["undecided"]["runs_needed"], 10, "{row}");
        assert_eq!(v["effect"]["kind"], "difference", "{row}");
        assert_eq!(v["effect"]["estimate"], 1.0, "{row}");
        let verdict = row["verdict"].as_str().unwrap();
        assert!(
            verdict.starts_with("undecided: 4 of 4 against 0 of 4 ")
                && verdict.contains("raw p = 0.014, adjusted over 9 candidate(s) p = ")
                && verdict.contains("stopped by the cap of 8 runs per candidate; about 10 confirmation runs per candidate (-n 10) would settle it"),
            "{verdict}"
        );
        assert!(!verdict.contains("no difference"), "{verdict}");
    }
    // The design's paragraph says it too, and `report` exits as the run did.
    let table = lab.run(&["report"]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("below the 10 each of 9 candidate(s) needs"),
        "{text}"
    );
    assert!(text.contains("undecided: 4 of 4 against 0 of 4"), "{text}");
    assert_eq!(code(&table), 4, "{text}");
}

#[test]
fn the_github_step_summary_says_undecided_for_exit_4() {
    let lab = Lab::new();
    let out = screened(&lab, "8");
    assert_eq!(code(&out), 4);
    let summary = lab.run(&["report", "--format", "github"]);
    assert_eq!(code(&summary), 4);
    let text = String::from_utf8_lossy(&summary.stdout);
    assert!(
        text.contains(": **undecided**: 9 pair(s) whose raw counts differ were left undecided"),
        "{text}"
    );
    assert!(!text.contains("see the report"), "{text}");
}

#[test]
fn the_runs_it_names_decide_every_pair() {
    let lab = Lab::new();
    let out = screened(&lab, "10");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("the cap of"), "{stderr}");
    assert_eq!(code(&out), 1, "{stderr}");
    let report = json(&out);
    assert_eq!(report["design"]["confirmed"], 9, "{}", report["design"]);
    for row in confirm_rows(&report) {
        assert_eq!(row["vs_baseline"]["differs"], true, "{row}");
        assert!(row["vs_baseline"]["undecided"].is_null(), "{row}");
    }
}

/// 40 tests; `test_0` fails in every `tz=UTC` run and none at baseline;
/// `test_39` fails in every run of both cells (so the cells, as wholes,
/// fail alike).
fn many_pairs(lab: &Lab, n: &str) -> (i32, Value) {
    let broken =
        "<testcase classname='tests.test_a' name='test_39'><failure message='broken'/></testcase>";
    let with_broken = |j: String| {
        j.replace(
            "<testcase classname='tests.test_a' name='test_39'/>",
            broken,
        )
    };
    let s = script(
        lab,
        &format!(
            "[[run]]\ncell = \"tz=UTC\"\nexit = 1\njunit = \"{}\"\n[[run]]\nexit = 1\njunit = \"{}\"\n",
            with_broken(junit(40, 1)),
            with_broken(junit(40, 0))
        ),
    );
    let out = fake(
        lab,
        &s,
        &[
            "run",
            "--format",
            "json",
            "--design",
            "fixed",
            "-n",
            n,
            "--seed",
            "7",
            "-p",
            "tz=UTC",
            "--",
            "subject",
            "--junit={junit}",
        ],
    );
    (code(&out), json(&out))
}

fn row<'a>(report: &'a Value, cell: &str, id: &str) -> &'a Value {
    crate::cell(report, cell)["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {cell}"))
}

#[test]
fn a_raw_difference_the_correction_leaves_is_undecided_never_clean() {
    let lab = Lab::new();
    // 6 of 6 against 0 of 6: raw p = 2 / C(12, 6) = 0.0022; Holm over the
    // 80 pairs (40 tests in the cell and in its automatic sham) 0.173.
    let (exit, report) = many_pairs(&lab, "6");
    assert_eq!(exit, 4, "{report:#}");
    let t = row(&report, "tz=UTC", "tests.test_a::test_0");
    let v = &t["vs_baseline"];
    assert_eq!(v["differs"], false, "{t}");
    assert_eq!(v["undecided"]["stopped_by"], "correction", "{t}");
    let needed = v["undecided"]["runs_needed"].as_u64().unwrap();
    assert!(needed > 6, "{t}");
    assert!(
        t["verdict"].as_str().unwrap().starts_with(
            "undecided: 6 of 6 against 0 of 6, raw p = 0.002, adjusted over 80 comparisons p = 0.173; "
        ),
        "{t}"
    );
    // The table says it, and never "no difference" for that row.
    let table = lab.run(&["report"]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("undecided"), "{text}");
    assert_eq!(code(&table), 4);
    // At the runs it names, the pair differs.
    let lab = Lab::new();
    let (exit, report) = many_pairs(&lab, &needed.to_string());
    assert_eq!(exit, 1, "{report:#}");
    let t = row(&report, "tz=UTC", "tests.test_a::test_0");
    assert_eq!(t["vs_baseline"]["differs"], true, "{t}");
    assert_eq!(t["vs_baseline"]["effect"]["kind"], "difference", "{t}");
}

#[test]
fn confirm_and_replay_print_the_bound_their_counts_reach() {
    let lab = Lab::new();
    let s = script(&lab, "[[run]]\ncell = \"env=A=1\"\nexit = 1\n");
    let out = fake(
        &lab,
        &s,
        &[
            "run",
            "--seed",
            "9",
            "-n",
            "6",
            "-p",
            "env=A=1",
            "--confirm",
            "3",
            "--",
            "subject",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // 3 of 3: the one-sided 95% bound 0.05^(1/3) = 0.368.
    assert!(
        text.contains(
            "failed 3 of 3 (rate > 0.368 at 95%): the recorded conditions determine the failure"
        ),
        "{text}"
    );
    let live = json(&lab.run(&["report", "--format", "json"]));
    assert_eq!(live["confirmations"][0]["bound"], "rate > 0.368 at 95%");
    let id = (lab.runs().into_iter())
        .find(|r| r["outcome"] == "fail")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let out = fake(&lab, &s, &["replay", &id, "--times", "3"]);
    assert_eq!(code(&out), 1);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("re-run exactly; failed 3 of 3 (rate > 0.368 at 95%)"),
        "{text}"
    );
}

/// `--confirm` with `--signature` replays the other failures too (after
/// the matched ones), each counted against its own kind.
#[test]
fn confirm_replays_the_other_failures_too() {
    let lab = Lab::new();
    let s = script(
        &lab,
        "[[run]]\ncell = \"env=A=1\"\nexit = 1\noutput = \"read ECONNRESET\"\n\
         [[run]]\ncell = \"env=B=1\"\nexit = 1\noutput = \"AssertionError: 41 != 42\"\n",
    );
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
            "4",
            "-p",
            "env=A=1",
            "-p",
            "env=B=1",
            "--signature",
            "ECONNRESET",
            "--confirm",
            "2",
            "--",
            "subject",
        ],
    );
    assert_eq!(code(&out), 1, "{}", String::from_utf8_lossy(&out.stderr));
    let live = json(&out);
    let c = live["confirmations"].as_array().unwrap();
    let cells: Vec<(&str, bool, u64)> = (c.iter())
        .map(|c| {
            (
                c["cell"].as_str().unwrap(),
                c["other_failure"].as_bool().unwrap_or(false),
                c["failed"].as_u64().unwrap(),
            )
        })
        .collect();
    // The matched failure first, then the other failure, each failing
    // again in 2 of 2 replays as its own kind.
    assert_eq!(
        cells,
        [("env=A=1", false, 2), ("env=B=1", true, 2)],
        "{live:#}"
    );
    assert!(
        c.iter().all(|c| c["verdict"] == "deterministic"),
        "{live:#}"
    );
    let table = lab.run(&["report"]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("an other failure (it matched no --signature pattern), failed 2 of 2"),
        "{text}"
    );
}

#[test]
fn a_session_killed_before_any_run_was_recorded_exits_as_nothing_measured() {
    let lab = Lab::new();
    let s = script(&lab, "");
    let out = fake(&lab, &s, &["run", "-n", "3", "--", "subject"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    // What a harness killed before its first run leaves: the session's plan,
    // no runs, no end.
    let store = lab.store();
    let id = json(&lab.run(&["report", "--format", "json"]))["session"]
        .as_str()
        .unwrap()
        .to_string();
    std::fs::write(store.join(format!("runs/{id}.jsonl")), "").unwrap();
    std::fs::remove_file(store.join("session-ends.jsonl")).unwrap();
    let out = lab.run(&["report"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("0 of 3 planned runs were recorded"), "{text}");
    assert_eq!(code(&out), 2, "nothing measured, never clean: {text}");
}

#[test]
fn ci_beside_the_lab_says_undecided_here_when_the_pair_did_not_survive_the_correction() {
    let lab = Lab::new();
    // CI: test_0 failed in one report and passed in another on one commit.
    for (i, failing) in [(1, 1), (2, 0)] {
        let path = lab.path().join(format!("ci-{i}.xml"));
        std::fs::write(&path, junit(40, failing)).unwrap();
        let out = lab.run(&[
            "ingest",
            "--no-detect",
            "--commit",
            "c1",
            path.to_str().unwrap(),
        ]);
        assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    }
    let (exit, _) = many_pairs(&lab, "6");
    assert_eq!(exit, 4);
    let out = lab.run(&["report"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("undecided here (6 of 6 under tz=UTC against 0 of 6 at baseline, raw p=0.002, adjusted p=0.173)"),
        "{text}"
    );
    assert!(
        !text.contains("not reproduced here: tests.test_a::test_0"),
        "{text}"
    );
    let report = json(&lab.run(&["report", "--format", "json"]));
    let undecided = report["ci_history"]["undecided"].as_array();
    assert!(
        undecided.is_some_and(|u| u.len() == 1),
        "{:#}",
        report["ci_history"]
    );
}

#[test]
fn a_cell_the_correction_over_the_cells_leaves_short_is_undecided() {
    let lab = Lab::new();
    // env=A=1 fails 5 of 6 against none: raw p = 0.015, Holm over the 4
    // cells 0.061.
    let s = script(&lab, "[[run]]\ncell = \"env=A=1\"\ntimes = 5\nexit = 1\n");
    let out = fake(
        &lab,
        &s,
        &[
            "run", "--format", "json", "-n", "6", "--seed", "3", "-p", "env=A=1", "-p", "env=B=1",
            "-p", "env=C=1", "-p", "env=D=1", "--", "subject",
        ],
    );
    let report = json(&out);
    let v = &crate::cell(&report, "env=A=1")["vs_baseline"];
    assert_eq!(v["differs"], false, "{v}");
    assert_eq!(v["undecided"]["stopped_by"], "correction", "{v}");
    assert!(v["undecided"]["runs_needed"].as_u64().unwrap() > 6, "{v}");
    assert_eq!(code(&out), 4, "{report:#}");
    let table = String::from_utf8_lossy(&lab.run(&["report"]).stdout).into_owned();
    assert!(
        table.contains("undecided (raw p=0.015, adjusted p=0.061)"),
        "{table}"
    );
}

#[test]
fn a_budget_spent_before_every_candidate_was_confirmed_leaves_them_undecided() {
    let lab = Lab::new();
    let s = nine_real_candidates(&lab);
    let out = fake(
        &lab,
        &s,
        &[
            "run",
            "--format",
            "json",
            "--design",
            "screen",
            "-n",
            "10",
            "--max-runs",
            "4",
            "--seed",
            "7",
            "-p",
            "tz=UTC",
            "--",
            "subject",
            "--junit={junit}",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 4, "{stderr}");
    let report = json(&out);
    let rows = confirm_rows(&report);
    assert_eq!(rows.len(), 9, "{report:#}");
    for row in &rows {
        let v = &row["vs_baseline"];
        assert_eq!(v["differs"], false, "{row}");
        assert_eq!(v["undecided"]["stopped_by"], "max_runs", "{row}");
        assert_eq!(v["undecided"]["runs_needed"], 10, "{row}");
        let verdict = row["verdict"].as_str().unwrap();
        assert!(verdict.starts_with("undecided: "), "{verdict}");
        assert!(
            verdict.contains("stopped by --max-runs; about 10 confirmation runs per candidate would settle it (raise --max-runs)"),
            "{verdict}"
        );
    }
}

/// The book's exit-code table and `run --help` give the same codes in the
/// same precedence, and both name undecided (4) and a one-cell session's
/// failures (1).
#[test]
fn the_books_exit_codes_and_help_agree() {
    let book = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/book/src/stability.md"
    ))
    .unwrap();
    let table: Vec<&str> = (book.split("## Exit codes").nth(1).unwrap().lines())
        .filter(|l| {
            l.starts_with("| ") && l.split('|').nth(1).unwrap().trim().parse::<u32>().is_ok()
        })
        .collect();
    let mut book_codes: Vec<i32> = (table.iter())
        .map(|l| l.split('|').nth(3).unwrap().trim().parse().unwrap())
        .collect();
    book_codes.dedup();
    let row = |verdict: &str| {
        *table
            .iter()
            .find(|l| l.split('|').nth(2).unwrap().trim() == verdict)
            .unwrap_or_else(|| panic!("no row {verdict}: {table:#?}"))
    };
    assert!(row("differs: one cell").contains("| 1 | a session with one cell only"));
    assert!(row("undecided").contains("| 4 |"));

    let help = Lab::new().run(&["run", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    let block = help.split("Exit codes").nth(1).unwrap();
    let help_codes: Vec<i32> = (block.lines().skip(1))
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    assert_eq!(book_codes, help_codes, "{block}");
    assert_eq!(help_codes, [130, 1, 4, 3, 2, 0]);
    assert!(block.contains("4    undecided"), "{block}");
    assert!(block.contains("a session with one cell"), "{block}");
}
