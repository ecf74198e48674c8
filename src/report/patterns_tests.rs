//! `--signature` patterns gate, they do not hide: each pattern's count per
//! cell, the other failures beside them, and the exit code they give; and a
//! session with one cell, whose failures are its finding.

use super::per_test::PatternSplit;
use super::snapshots_test::{run, session};
use crate::record::{CellRecord, Outcome, RunRecord, SessionRecord};
use crate::store::LoadStats;

/// A session of `cells` (the first the baseline), `n` runs each, counting
/// `patterns`.
fn with_cells(cells: &[&str], n: u32, patterns: &[&str]) -> SessionRecord {
    let mut s = session();
    let names: Vec<String> = cells.iter().map(|c| c.to_string()).collect();
    s.cells = (s.cells.into_iter())
        .filter(|c| names.contains(&c.name))
        .map(|c| CellRecord {
            applied: true,
            reason: None,
            ..c
        })
        .collect();
    s.plan = crate::plan::build(&names, n, 7);
    s.left_out = Vec::new();
    s.set_patterns(patterns.iter().map(|p| p.to_string()).collect());
    s
}

/// Runs of `cell` by what each did: `Some(i)` failed matching pattern i,
/// `None` failed matching none, and a pass for every `pass`.
fn runs(
    s: &SessionRecord,
    cell: &str,
    from: usize,
    fails: &[Option<u32>],
    passes: usize,
) -> Vec<RunRecord> {
    let mut out = Vec::new();
    for (i, m) in fails.iter().enumerate() {
        let mut r = run(s, from + i, cell, Outcome::Fail);
        if !s.patterns().is_empty() {
            r.signature_match = Some(m.is_some());
            r.signature_pattern = *m;
        }
        out.push(r);
    }
    for i in 0..passes {
        out.push(run(s, from + fails.len() + i, cell, Outcome::Pass));
    }
    out
}

fn report(s: &SessionRecord, runs: &[RunRecord]) -> super::Report {
    let folded = super::build(s, runs, LoadStats::default());
    assert_eq!(
        folded,
        super::reference::build(s, runs, LoadStats::default())
    );
    folded
}

#[test]
fn two_patterns_and_an_unmatched_failure_give_three_counts_and_exit_1() {
    let s = with_cells(&["baseline"], 6, &["ECONNRESET", "ETIMEDOUT"]);
    let r = report(
        &s,
        &runs(&s, "baseline", 0, &[Some(0), Some(0), Some(1), None], 2),
    );
    let c = &r.cells[0];
    assert_eq!((c.k, c.n, c.failed), (3, 6, 4));
    assert_eq!(
        c.by_pattern,
        Some(PatternSplit {
            matched: vec![2, 1],
            other: 1
        })
    );
    assert_eq!(r.other_failures(), 1);
    assert_eq!(r.exit_code(), 1);
    // The other failure is the fourth run: its repro line is shown.
    let other = c
        .first_other_failure
        .as_ref()
        .expect("a first other failure");
    assert!(other.run.ends_with(".00003"), "{}", other.run);
    assert!(c.first_failure.as_ref().unwrap().run.ends_with(".00000"));
    assert_eq!(super::shown_other_failures(&r).len(), 1);
    assert_eq!(
        super::split_text(c.by_pattern.as_ref().unwrap(), c.n),
        "pattern 1: 2 of 6, pattern 2: 1 of 6, other failures: 1 of 6"
    );
    let note = "baseline: pattern 1: 2 of 6, pattern 2: 1 of 6, other failures: 1 of 6 (matching no pattern: real failures, never green)";
    assert!(super::notes(&r).iter().any(|n| n == note));
    assert_eq!(r.signatures, ["ECONNRESET", "ETIMEDOUT"]);
    let json: serde_json::Value = serde_json::from_str(&super::json::render(&r)).unwrap();
    assert_eq!(
        json["cells"][0]["by_pattern"],
        serde_json::json!({"matched": [2, 1], "other": 1})
    );
    assert_eq!(
        json["signatures"],
        serde_json::json!(["ECONNRESET", "ETIMEDOUT"])
    );
}

#[test]
fn other_failures_never_exit_0_whatever_the_matched_rows_say() {
    // One pattern, matched by nothing, four failures: the bug was a note
    // and exit 0.
    let s = with_cells(&["baseline", "tz=Asia/Kathmandu"], 6, &["ECONNRESET"]);
    let mut all = runs(&s, "baseline", 0, &[None, None], 4);
    all.extend(runs(&s, "tz=Asia/Kathmandu", 6, &[None, None], 4));
    let r = report(&s, &all);
    assert!(r.cells.iter().all(|c| c.k == 0));
    assert_eq!(r.other_failures(), 4);
    assert_eq!(r.exit_code(), 1);
    assert!(super::finding_text(&r).contains("no `--signature` pattern"));
    // Every failure matching: the signature reproduced, exit 1 as before,
    // with no split to add (one pattern, no other failure).
    let mut all = runs(&s, "baseline", 0, &[Some(0)], 5);
    all.extend(runs(&s, "tz=Asia/Kathmandu", 6, &[Some(0), Some(0)], 4));
    let r = report(&s, &all);
    assert_eq!(r.other_failures(), 0);
    assert_eq!(r.exit_code(), 1);
    assert!(r.cells.iter().all(|c| c.first_other_failure.is_none()));
    assert!(!super::notes(&r)
        .iter()
        .any(|n| n.contains("other failures")));
    // Nothing failed: clean.
    let all: Vec<RunRecord> = [
        runs(&s, "baseline", 0, &[], 6),
        runs(&s, "tz=Asia/Kathmandu", 6, &[], 6),
    ]
    .concat();
    assert_eq!(report(&s, &all).exit_code(), 0);
}

#[test]
fn a_session_with_one_cell_finds_its_failures() {
    // No --signature, the baseline alone, every run failing: there is no
    // cell to compare, so the failures are the finding.
    let s = with_cells(&["baseline"], 4, &[]);
    let r = report(&s, &runs(&s, "baseline", 0, &[None, None, None, None], 0));
    assert!(r.uncontrasted());
    assert_eq!(r.cells[0].by_pattern, None);
    assert_eq!(r.exit_code(), 1);
    assert!(super::finding_text(&r).contains("no other cell to compare"));
    // One failure of four is a finding too; none is clean.
    assert_eq!(
        report(&s, &runs(&s, "baseline", 0, &[None], 3)).exit_code(),
        1
    );
    assert_eq!(report(&s, &runs(&s, "baseline", 0, &[], 4)).exit_code(), 0);
    // With a cell beside it, the same failures on both sides differ in
    // nothing: the contrast decides, as before.
    let s = with_cells(&["baseline", "tz=Asia/Kathmandu"], 4, &[]);
    let mut all = runs(&s, "baseline", 0, &[None, None, None, None], 0);
    all.extend(runs(
        &s,
        "tz=Asia/Kathmandu",
        4,
        &[None, None, None, None],
        0,
    ));
    let r = report(&s, &all);
    assert!(!r.uncontrasted());
    assert_eq!(r.exit_code(), 0);
}
