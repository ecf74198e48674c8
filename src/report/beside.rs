//! Lab and CI side by side: what the store's CI history says of the tests
//! a lab session measured, joined to the session's per-test rows.
//!
//! Test ids are joined as both sides spell them: each side's id is the one
//! the same JUnit reader gives ([`crate::results::junit::Case::id`], `classname::name`),
//! so an exact match is the rule. When CI ran from another directory than
//! the lab (pytest's classname `tests.test_app` against `test_app`), a
//! history id whose classname ends in the lab's at a `.` or `/` boundary
//! (or the other way round), with the same name, is taken, and only when
//! exactly one such id exists; the row says which match it rests on.
//!
//! A test is shown side by side when history shows it disagreeing (passed
//! and failed: on one commit, split by context, or across commits) and a
//! cell of the session (not the baseline, not a sham) differs from the
//! baseline for it. Pure: an analysis and a report in, rows out.

use std::collections::BTreeSet;

use serde::Serialize;

use super::text::{md_cell_code, one_line};
use super::{CellReport, Report};
use crate::history::analyse::{Analysis, Association, Finding, TestHistory};
use crate::stats::p_text;

/// The store's CI history as the report shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CiHistory {
    /// Reports the history holds (raw and folded).
    pub reports: u64,
    /// Tests it holds.
    pub tests: u64,
    /// Tests history shows disagreeing that a cell reproduced.
    pub rows: Vec<SideBySide>,
    /// Tests history shows disagreeing that the session measured, where no
    /// cell differs from the baseline: `test: CI …`.
    pub not_reproduced: Vec<String>,
    /// Tests history shows disagreeing whose lab pair's raw counts differ
    /// but did not survive the correction (or the design stopped first):
    /// `test: CI …; undecided here (6 of 6 under C against 0 of 6 at
    /// baseline, adjusted p=0.173)`. Never "not reproduced".
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub undecided: Vec<String>,
    /// Tests of the session that history shows failing in one context and
    /// passing in another on one commit.
    pub mismatches: Vec<Mismatch>,
    /// Reports with direct evidence of runner-infrastructure trouble, in
    /// words (see [`crate::report::history::infra_lines`]).
    pub infrastructure: Vec<String>,
    /// Matrix legs the history cannot tell apart.
    pub warnings: Vec<String>,
}

/// One test, CI and lab in one row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideBySide {
    /// The lab's test id.
    pub test: String,
    /// The history's id for it.
    pub history_test: String,
    /// `id` (the same id) or `classname suffix` (see the module doc).
    pub matched_by: &'static str,
    /// What history says, in one word.
    pub finding: Finding,
    /// CI failures (failed + errored), all contexts.
    pub ci_k: u64,
    /// CI runs (skips excluded), all contexts.
    pub ci_n: u64,
    /// The branches the CI runs were on.
    pub branches: Vec<String>,
    /// The dimension value CI failures concentrate in most (lowest p).
    pub concentrated: Option<Association>,
    /// The commit of the strongest same-commit disagreement, if any.
    pub same_commit: Option<String>,
    /// The cell that reproduced it.
    pub cell: String,
    /// Failures in that cell.
    pub lab_k: u64,
    /// Runs in that cell.
    pub lab_n: u64,
    /// Failures at baseline.
    pub baseline_k: Option<u64>,
    /// Runs at baseline.
    pub baseline_n: Option<u64>,
    /// Holm-adjusted p of the cell against the baseline, for this test.
    pub lab_p: Option<f64>,
    /// The row in words: `CI: …; lab: …`.
    pub text: String,
}

/// A commit where a test of the session failed in every run of one context
/// and passed in every run of another.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mismatch {
    /// The lab's test id.
    pub test: String,
    /// The commit.
    pub commit: Option<String>,
    /// Failing contexts with their runs (all failed), named by the
    /// dimensions that differ among the split's contexts.
    pub failing: Vec<(String, u64)>,
    /// Passing contexts with their runs (all passed).
    pub passing: Vec<(String, u64)>,
    /// Commits like it, this one included.
    pub commits: u64,
    /// The dimension value its failures concentrate in most, if any.
    pub concentrated: Option<Association>,
}

fn disagreeing(t: &TestHistory) -> bool {
    matches!(
        t.finding,
        Finding::SameCommit | Finding::ContextSplit | Finding::CommitUnknown | Finding::CrossCommit
    )
}

/// The history test the lab's `id` is, and how it was matched.
fn matched<'a>(analysis: &'a Analysis, id: &str) -> Option<(&'a TestHistory, &'static str)> {
    if let Ok(i) = analysis.tests.binary_search_by(|t| t.test.as_str().cmp(id)) {
        return Some((&analysis.tests[i], "id"));
    }
    let (class, name) = id.split_once("::")?;
    let mut found = analysis.tests.iter().filter(|t| {
        t.test.split_once("::").is_some_and(|(c, n)| {
            n == name
                && !c.is_empty()
                && !class.is_empty()
                && (suffix(c, class) || suffix(class, c))
        })
    });
    let first = found.next()?;
    found
        .next()
        .is_none()
        .then_some((first, "classname suffix"))
}

/// Whether `long` ends in `short` at a `.` or `/` boundary.
fn suffix(long: &str, short: &str) -> bool {
    long.len() > short.len()
        && long.ends_with(short)
        && matches!(long.as_bytes()[long.len() - short.len() - 1], b'.' | b'/')
}

fn strongest(t: &TestHistory) -> Option<&Association> {
    t.associations
        .iter()
        .filter(|a| a.failed_in > 0)
        .min_by(|a, b| a.p.total_cmp(&b.p))
}

fn branches(t: &TestHistory) -> Vec<String> {
    t.contexts
        .iter()
        .filter(|c| c.n > 0)
        .filter_map(|c| c.dimensions.get("branch").cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// `only where arch=arm64 (inseparable from image) (3 of 4 there, 0 of 10
/// elsewhere; Fisher p=0.011, Holm p=0.132)`.
pub fn association_text(a: &Association) -> String {
    format!(
        "{} {}={} ({} of {} there, {} of {} elsewhere; Fisher {}, Holm {}{}{})",
        if a.failed_out == 0 {
            "only where"
        } else {
            "concentrated where"
        },
        a.dimension,
        a.value,
        a.failed_in,
        a.ran_in,
        a.failed_out,
        a.ran_out,
        p_text(a.p),
        p_text(a.p_holm),
        if a.significant {
            ""
        } else {
            ": not significant across every test and dimension"
        },
        if a.inseparable_from.is_empty() {
            String::new()
        } else {
            format!("; inseparable from {}", a.inseparable_from.join(", "))
        }
    )
}

/// The contexts of a split named by the dimensions that differ among them
/// only (`arch=arm64,image=…`), each with its runs.
fn short(t: &TestHistory, all: &[&(String, u64)]) -> Vec<(String, u64)> {
    let dims = |name: &str| {
        t.contexts
            .iter()
            .find(|c| c.context == name)
            .map(|c| &c.dimensions)
    };
    let keys: BTreeSet<&String> = all
        .iter()
        .filter_map(|(n, _)| dims(n))
        .flat_map(|d| d.keys())
        .collect();
    let differing: Vec<&String> = keys
        .into_iter()
        .filter(|k| {
            all.iter()
                .map(|(n, _)| dims(n).and_then(|d| d.get(*k)))
                .collect::<BTreeSet<_>>()
                .len()
                > 1
        })
        .collect();
    all.iter()
        .map(|(n, runs)| {
            let name = match dims(n) {
                Some(d) if !differing.is_empty() => differing
                    .iter()
                    .map(|k| format!("{k}={}", d.get(*k).map_or("(none)", String::as_str)))
                    .collect::<Vec<_>>()
                    .join(","),
                _ => n.clone(),
            };
            (name, *runs)
        })
        .collect()
}

/// `CI: failed 3 of 14 on main, only where …; passed and failed on commit c3`.
fn ci_text(t: &TestHistory) -> String {
    let mut s = format!("CI: failed {} of {}", t.k, t.n);
    let b = branches(t);
    if !b.is_empty() {
        s.push_str(&format!(" on {}", b.join(", ")));
    }
    if let Some(a) = strongest(t) {
        s.push_str(&format!(", {}", association_text(a)));
    }
    match t.finding {
        Finding::SameCommit => {
            let c = &t.same_commit[0];
            s.push_str(&format!(
                "; passed and failed on commit {} in {}: proven nondeterministic there",
                c.commit.as_deref().unwrap_or("(unknown commit)"),
                c.context
            ));
        }
        Finding::ContextSplit => {
            let c = &t.context_splits[0];
            s.push_str(&format!(
                "; on commit {} failed in every run of {} context(s) and passed in every run of {}",
                c.commit.as_deref().unwrap_or("(unknown commit)"),
                c.failing.len(),
                c.passing.len()
            ));
        }
        _ => s.push_str("; disagreement across commits only"),
    }
    s
}

fn lab_text(cell: &CellReport, k: u64, n: u64, base: Option<(u64, u64)>, p: Option<f64>) -> String {
    let mut s = format!("lab: {k} of {n} under {}", cell.name);
    if let Some((bk, bn)) = base {
        s.push_str(&format!(", {bk} of {bn} baseline"));
    }
    if let Some(p) = p {
        s.push_str(&format!(" (Holm {})", p_text(p)));
    }
    s
}

/// `undecided here (6 of 6 under C against 0 of 6 at baseline, adjusted
/// p=0.173)` when a cell's pair for `id` is undecided (the smallest
/// adjusted p among them), else None.
fn undecided_here(report: &Report, id: &str) -> Option<String> {
    let base = report.cells.iter().find(|c| c.name == "baseline")?;
    let b = base.tests.iter().find(|r| r.id == id)?;
    let (cell, row, v) = (report.cells.iter())
        .filter(|c| c.name != "baseline" && c.sham_of.is_none())
        .filter_map(|c| {
            let row = c.tests.iter().find(|r| r.id == id)?;
            let v = row.vs_baseline.as_ref().filter(|v| v.undecided.is_some())?;
            Some((c, row, v))
        })
        .min_by(|a, b| a.2.adjusted_p.total_cmp(&b.2.adjusted_p))?;
    Some(format!(
        "undecided here ({} of {} under {} against {} of {} at baseline, raw {}, adjusted {})",
        row.k,
        row.n,
        cell.name,
        b.k,
        b.n,
        p_text(v.fisher_p),
        p_text(v.adjusted_p)
    ))
}

/// The lab's ids, each once, in the order the cells list them.
fn lab_ids(report: &Report) -> Vec<&str> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for c in &report.cells {
        for t in &c.tests {
            if seen.insert(t.id.as_str()) {
                out.push(t.id.as_str());
            }
        }
    }
    out
}

/// What `analysis` says beside `report`. `infrastructure` is the history's
/// runner-infrastructure lines.
pub fn pair(analysis: &Analysis, report: &Report, infrastructure: Vec<String>) -> CiHistory {
    let base = report.cells.iter().find(|c| c.name == "baseline");
    let mut rows = Vec::new();
    let mut not_reproduced = Vec::new();
    let mut undecided = Vec::new();
    let mut mismatches = Vec::new();
    for id in lab_ids(report) {
        let Some((t, how)) = matched(analysis, id) else {
            continue;
        };
        if !t.context_splits.is_empty() {
            let s = &t.context_splits[0];
            let all: Vec<&(String, u64)> = s.failing.iter().chain(&s.passing).collect();
            let mut named = short(t, &all);
            let passing = named.split_off(s.failing.len());
            mismatches.push(Mismatch {
                test: id.to_string(),
                commit: s.commit.clone(),
                failing: named,
                passing,
                commits: t.context_splits.len() as u64,
                concentrated: strongest(t).cloned(),
            });
        }
        if !disagreeing(t) {
            continue;
        }
        let reproduced = report
            .cells
            .iter()
            .filter(|c| c.name != "baseline" && c.sham_of.is_none())
            .filter_map(|c| {
                let row = c.tests.iter().find(|r| r.id == id)?;
                let v = row
                    .vs_baseline
                    .as_ref()
                    .filter(|v| v.differs && row.k > 0)?;
                Some((c, row, v.adjusted_p))
            })
            .min_by(|a, b| a.2.total_cmp(&b.2));
        let Some((cell, row, p)) = reproduced else {
            match undecided_here(report, id) {
                Some(lab) => undecided.push(format!("{id}: {}; {lab}", ci_text(t))),
                None => not_reproduced.push(format!("{id}: {}", ci_text(t))),
            }
            continue;
        };
        let b = base.and_then(|b| b.tests.iter().find(|r| r.id == id));
        let base_kn = b.map(|b| (b.k, b.n));
        rows.push(SideBySide {
            test: id.to_string(),
            history_test: t.test.clone(),
            matched_by: how,
            finding: t.finding,
            ci_k: t.k,
            ci_n: t.n,
            branches: branches(t),
            concentrated: strongest(t).cloned(),
            same_commit: t.same_commit.first().and_then(|s| s.commit.clone()),
            cell: cell.name.clone(),
            lab_k: row.k,
            lab_n: row.n,
            baseline_k: base_kn.map(|x| x.0),
            baseline_n: base_kn.map(|x| x.1),
            lab_p: Some(p),
            text: format!(
                "{}; {}",
                ci_text(t),
                lab_text(cell, row.k, row.n, base_kn, Some(p))
            ),
        });
    }
    CiHistory {
        reports: analysis.reports,
        tests: analysis.tests.len() as u64,
        rows,
        not_reproduced,
        undecided,
        mismatches,
        infrastructure,
        warnings: analysis.warnings.clone(),
    }
}

/// The mismatch in words: `on commit c2 it failed in every run of A (1 of
/// 1) and passed in every run of B (1 of 1); 3 commit(s) like it`.
pub fn mismatch_text(m: &Mismatch) -> String {
    let names = |v: &[(String, u64)], what: &str| {
        v.iter()
            .map(|(c, n)| format!("{c} ({what} {n} of {n})"))
            .collect::<Vec<_>>()
            .join("; ")
    };
    format!(
        "CI history, `{}` on commit {}: failed in every run of {} and passed in every run of {}; {} commit(s) like it{}",
        m.test,
        m.commit.as_deref().unwrap_or("(unknown commit)"),
        names(&m.failing, "failed"),
        names(&m.passing, "passed"),
        m.commits,
        m.concentrated
            .as_ref()
            .map(|a| format!("; failures {}", association_text(a)))
            .unwrap_or_default()
    )
}

/// The block's heading line: `CI history (15 reports, 6 tests) beside the lab`.
pub fn heading(h: &CiHistory) -> String {
    format!(
        "CI history ({} report(s), {} test(s)) beside the lab",
        h.reports, h.tests
    )
}

/// The terminal block (empty when there is nothing to say).
pub fn table(h: &CiHistory) -> String {
    let mut s = format!("\n{}:\n", heading(h));
    if h.rows.is_empty() {
        s.push_str(
            "  no test history shows disagreeing was reproduced by a cell of this session\n",
        );
    }
    for r in &h.rows {
        s.push_str(&format!(
            "  {}\n    {}\n",
            one_line(&r.test),
            one_line(&r.text)
        ));
        if r.matched_by != "id" {
            s.push_str(&format!(
                "    (history's id: {}, matched by {})\n",
                one_line(&r.history_test),
                r.matched_by
            ));
        }
    }
    for n in &h.not_reproduced {
        s.push_str(&format!("  not reproduced here: {}\n", one_line(n)));
    }
    for u in &h.undecided {
        s.push_str(&format!("  {}\n", one_line(u)));
    }
    for m in &h.mismatches {
        s.push_str(&format!(
            "  platform or entry-path mismatch: {}\n",
            one_line(&mismatch_text(m))
        ));
    }
    for i in &h.infrastructure {
        s.push_str(&format!("  runner infrastructure: {}\n", one_line(i)));
    }
    for w in &h.warnings {
        s.push_str(&format!("  warning: {}\n", one_line(w)));
    }
    s
}

/// The Markdown block.
pub fn markdown(h: &CiHistory) -> String {
    let cell = |t: &str| one_line(t).replace('|', "\\|");
    let mut s = format!("\n#### {}\n\n", heading(h));
    if h.rows.is_empty() {
        s.push_str(
            "No test history shows disagreeing was reproduced by a cell of this session.\n\n",
        );
    } else {
        s.push_str("| test | CI and lab |\n|---|---|\n");
        for r in &h.rows {
            let _ = std::fmt::Write::write_fmt(
                &mut s,
                format_args!("| {} | {} |\n", md_cell_code(&r.test), cell(&r.text)),
            );
        }
        s.push('\n');
    }
    for n in &h.not_reproduced {
        s.push_str(&format!("- not reproduced here: {}\n", cell(n)));
    }
    for u in &h.undecided {
        s.push_str(&format!("- {}\n", cell(u)));
    }
    for m in &h.mismatches {
        s.push_str(&format!(
            "- platform or entry-path mismatch: {}\n",
            one_line(&mismatch_text(m))
        ));
    }
    for i in &h.infrastructure {
        s.push_str(&format!("- runner infrastructure: {}\n", one_line(i)));
    }
    for w in &h.warnings {
        s.push_str(&format!("- warning: {}\n", one_line(w)));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn analysis(ids: &[&str]) -> Analysis {
        use crate::history::{Item, Observation, Provenance, ReportRecord, REPORT_SCHEMA};
        use crate::results::junit::CaseOutcome;
        let obs: Vec<Observation> = ids
            .iter()
            .map(|t| Observation {
                test: t.to_string(),
                outcome: CaseOutcome::Passed,
                retried: false,
                rep: 0,
                file: None,
                line: None,
            })
            .collect();
        let r = ReportRecord {
            schema: REPORT_SCHEMA.into(),
            key: "k".into(),
            context: Default::default(),
            commit: None,
            provenance: Provenance::default(),
            path: "j.xml".into(),
            digest: "d".into(),
            n: obs.len() as u64,
            infra: Vec::new(),
        };
        let mut fold = crate::history::analyse::Fold::new();
        fold.add(Item::Report(&r, &obs));
        crate::history::analyse::analyse(&fold, &Default::default())
    }

    #[test]
    fn a_lab_id_is_the_same_id_else_one_unique_classname_suffix() {
        let a = analysis(&[
            "tests.test_app::test_x",
            "tests.test_app::test_y",
            "a.m::t",
            "b.m::t",
        ]);
        let m = |id: &str| matched(&a, id).map(|(t, how)| (t.test.clone(), how));
        assert_eq!(
            m("tests.test_app::test_x"),
            Some(("tests.test_app::test_x".into(), "id"))
        );
        assert_eq!(
            m("test_app::test_y"),
            Some(("tests.test_app::test_y".into(), "classname suffix"))
        );
        assert_eq!(
            m("ci.tests.test_app::test_x"),
            Some(("tests.test_app::test_x".into(), "classname suffix"))
        );
        // Two histories end in `m`: no guess.
        assert_eq!(m("m::t"), None);
        // The name must be the same; a partial segment is no suffix.
        assert_eq!(m("test_app::test_z"), None);
        assert_eq!(m("st_app::test_x"), None);
    }

    #[test]
    fn ids_match_exactly_or_by_one_classname_suffix_at_a_boundary() {
        assert!(suffix("tests.test_app", "test_app"));
        assert!(suffix("src/tests/test_app", "tests/test_app"));
        assert!(!suffix("tests.my_test_app", "test_app"));
        assert!(!suffix("test_app", "test_app"));
    }
}
