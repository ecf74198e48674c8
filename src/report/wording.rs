//! The words every human output shares: the columns' texts (interval,
//! versus baseline, applied, a test row's count and shift), the header's
//! run count, the notes under the table, and which failures and test rows a
//! human report shows. The table, Markdown, GitHub and HTML outputs and the
//! evidence all say a cell's result in these words.

use crate::stats;

use super::{per_test, sham, CellReport, CellStress, FirstFailure, Report, VsBaseline};

/// A cell's name as the tables show it: a sham says so.
pub fn shown_name(cell: &CellReport) -> String {
    match cell.sham_of {
        Some(_) => format!("{} (sham)", cell.name),
        None => cell.name.clone(),
    }
}

/// The interval column: `[low, high]`, or `p < high` when nothing failed,
/// or `—` when nothing was measured.
pub fn interval_text(cell: &CellReport) -> String {
    interval_words(cell.n, cell.k, cell.low, cell.high)
}

/// `—` when nothing was measured, the bound when nothing failed, else the
/// interval: for cells and tests alike.
fn interval_words(n: u64, k: u64, low: f64, high: f64) -> String {
    if n == 0 {
        "—".into()
    } else if k == 0 {
        stats::format_bound(high)
    } else {
        format!("[{low:.3}, {high:.3}]")
    }
}

/// The versus-baseline column in words.
pub fn versus_text(cell: &CellReport) -> String {
    match (&cell.vs_baseline, &cell.timeouts_vs_baseline) {
        (None, Some(t)) | (Some(VsBaseline { differs: false, .. }), Some(t)) if t.differs => {
            format!("timeouts differ ({})", stats::p_text(t.adjusted_p))
        }
        (None, _) if cell.unmeasured() => cell.unmeasured_text(),
        (Some(v), _) if v.differs && cell.sham.is_some() && !sham::attributed(cell) => {
            format!("differs (p={}), not from its sham", short_p(v.adjusted_p))
        }
        (vs, _) => versus_words(cell, vs.as_ref()),
    }
}

/// A comparison in words, for a cell or one of its tests.
fn versus_words(cell: &CellReport, vs: Option<&VsBaseline>) -> String {
    match vs {
        None if cell.name == "baseline" => "(reference)".into(),
        None => "not compared".into(),
        Some(v) if v.differs => match &v.effect {
            Some(e) => format!(
                "differs ({}; {})",
                stats::p_text(v.adjusted_p),
                crate::stats::effect::short(e)
            ),
            None => format!("differs ({})", stats::p_text(v.adjusted_p)),
        },
        Some(v) if v.undecided.is_some() => format!(
            "undecided (raw {}, adjusted {})",
            stats::p_text(v.fisher_p),
            stats::p_text(v.adjusted_p)
        ),
        Some(v) => format!("no difference shown ({})", stats::p_text(v.adjusted_p)),
    }
}

/// The applied column in words: whether the probes proved the cell, then
/// whether its runs did, then what its stress threads got.
pub fn applied_text(cell: &CellReport, baseline: Option<&CellReport>) -> String {
    if !cell.applied {
        return format!(
            "NOT APPLIED: {}",
            cell.reason.as_deref().unwrap_or("no reason recorded")
        );
    }
    let mut text = match &cell.not_applied_reason {
        Some(why) => format!(
            "applied in {} of {} runs; not applied in {}: {why}",
            cell.n + cell.timed_out + cell.errored,
            cell.n + cell.timed_out + cell.errored + cell.not_applied,
            cell.not_applied
        ),
        None => "applied".to_string(),
    };
    if let Some(stress) = cell.cpu.as_ref().and_then(|c| c.stress.as_ref()) {
        text.push_str(&format!("; {}", stress_text(cell, stress, baseline)));
    }
    text
}

/// What a cell's stressors and its subject got, in words.
fn stress_text(cell: &CellReport, s: &CellStress, baseline: Option<&CellReport>) -> String {
    use crate::perturb::probe::percent;
    let runs = cell.cpu.as_ref().map_or(0, |c| c.runs);
    let mut text = format!("stressors got {} of a CPU each", percent(s.share_median));
    if let Some(part) = s.part_median {
        text.push_str(&format!(", {} of the run's CPU time", percent(part)));
    }
    text.push_str(&format!(" (median of {runs} run(s)"));
    if s.unjudged > 0 {
        text.push_str(&format!(", {} too short to judge", s.unjudged));
    }
    text.push(')');
    let subject = |c: &CellReport| {
        let cpu = c.cpu.as_ref()?;
        Some((cpu.subject_s_median?, cpu.subject_share_median?))
    };
    if let Some((secs, share)) = subject(cell) {
        text.push_str(&format!(
            "; subject {secs:.2} s CPU per run, on a CPU {} of its time",
            percent(share)
        ));
        if let Some((b_secs, b_share)) = baseline.and_then(subject) {
            text.push_str(&format!(" (baseline {b_secs:.2} s, {})", percent(b_share)));
        }
    }
    text
}

/// Notes under the table: excluded runs, stragglers, partial sessions.
pub fn notes(report: &Report) -> Vec<String> {
    let mut out = Vec::new();
    let shards_missing = report
        .shards
        .as_ref()
        .is_some_and(|s| !s.missing.is_empty());
    match report.session_end {
        Some("no_stop") => out.push(format!(
            "ended without a stop: {} of {} planned runs were recorded, then the harness was killed (or the machine went down)",
            report.recorded, report.planned
        )),
        Some("running") => out.push(format!(
            "still running: {} of {} planned runs recorded so far",
            report.recorded, report.planned
        )),
        Some("failed") if report.partial => out.push(format!(
            "partial session: {} of {} planned runs were recorded (an error stopped it{})",
            report.recorded,
            report.planned,
            (report.stop_reason.as_deref())
                .map(|r| format!(": {}", crate::report::text::one_line(r)))
                .unwrap_or_default()
        )),
        _ if report.partial => out.push(format!(
            "partial session: {} of {} planned runs were recorded ({})",
            report.recorded,
            report.planned,
            if shards_missing {
                "shards missing"
            } else {
                "interrupted"
            }
        )),
        _ => {}
    }
    out.extend(report.shards.iter().flat_map(crate::context::shard::notes));
    if report.executed > 0 && report.cells.iter().all(|c| c.n == 0 && c.timed_out == 0) {
        out.push(
            "nothing was measured: every run errored (see each record's `reason`)".to_string(),
        );
    } else {
        let timeouts_differ =
            |c: &CellReport| c.timeouts_vs_baseline.as_ref().is_some_and(|v| v.differs);
        for c in report
            .cells
            .iter()
            .filter(|c| c.unmeasured() && !timeouts_differ(c))
        {
            out.push(format!(
                "cell `{}` measured nothing ({}): it is not a pass; see each record's `reason`",
                c.name,
                c.unmeasured_text().trim_start_matches("nothing measured: ")
            ));
        }
    }
    out.extend(sham::notes(report));
    for warning in &report.warnings {
        out.push(format!("warning: {warning}"));
    }
    for cell in &report.left_out {
        out.push(format!("left out of the matrix: {cell}"));
    }
    if report.jobs > 1 {
        out.push(format!(
            "up to {} runs shared the working directory at once (-j {}): collisions between copies count as failures",
            report.jobs, report.jobs
        ));
    }
    if report.skipped_lines > 0 {
        out.push(format!(
            "{} unreadable line(s) in the store were skipped",
            report.skipped_lines
        ));
    }
    for c in &report.cells {
        out.extend(c.notes.iter().cloned());
        let mut excluded = Vec::new();
        if c.timed_out > 0 {
            excluded.push(format!("{} timed out", c.timed_out));
        }
        if c.errored > 0 {
            excluded.push(format!("{} errored", c.errored));
        }
        if !excluded.is_empty() {
            let first = (c.error_reason.as_deref())
                .map(|r| format!("; the first: {r}"))
                .unwrap_or_default();
            out.push(format!(
                "{}: {} (not counted in N{first})",
                c.name,
                excluded.join(", ")
            ));
        }
        if c.signaled > 0 {
            let first = (c.signal_reason.as_deref())
                .map(|r| format!("; the first: {r}"))
                .unwrap_or_default();
            out.push(format!(
                "{}: {} of {} failure(s) died by a signal{first}",
                c.name, c.signaled, c.failed
            ));
        }
        if let Some(v) = c.timeouts_vs_baseline.as_ref().filter(|v| v.differs) {
            out.push(format!(
                "{}: its runs time out more often than the baseline's: {} of {} against the baseline ({})",
                c.name,
                c.timed_out,
                c.n + c.timed_out,
                stats::p_text(v.adjusted_p)
            ));
        }
        if c.runs_without_tests > 0 {
            out.push(format!(
                "{}: {} of {} counted runs have no per-test data (report missing or unreadable; see `tests_missing` in their records)",
                c.name,
                c.runs_without_tests,
                c.n
            ));
        }
        if c.stragglers > 0 {
            out.push(format!(
                "{}: runs left {} process(es) behind; flakelab killed them",
                c.name, c.stragglers
            ));
        }
        if let Some(split) = c.by_pattern.as_ref().filter(|s| shows_split(report, s)) {
            let what = if split.other > 0 {
                " (matching no pattern: real failures, never green)"
            } else {
                ""
            };
            out.push(format!("{}: {}{what}", c.name, split_text(split, c.n)));
        }
    }
    out
}

/// Whether a cell's or a test's pattern split says more than its k of N
/// does: it has other failures, or several patterns share its failures.
pub fn shows_split(report: &Report, split: &per_test::PatternSplit) -> bool {
    split.other > 0 || (report.signatures.len() > 1 && split.matched_total() > 0)
}

/// A pattern split in words, each part of the same N: `pattern 1: 2 of 6,
/// pattern 2: 1 of 6, other failures: 1 of 6`.
pub fn split_text(split: &per_test::PatternSplit, n: u64) -> String {
    let mut parts: Vec<String> = (split.matched.iter().enumerate())
        .map(|(i, k)| format!("pattern {}: {k} of {n}", i + 1))
        .collect();
    parts.push(format!("other failures: {} of {n}", split.other));
    parts.join(", ")
}

/// The patterns a session counts, numbered as [`split_text`] numbers them:
/// `pattern 1 /ECONNRESET/, pattern 2 /ETIMEDOUT/`.
pub fn patterns_text(report: &Report) -> String {
    (report.signatures.iter().enumerate())
        .map(|(i, p)| format!("pattern {} /{p}/", i + 1))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What an exit-1 report found, in words, most telling first: failures
/// matching no `--signature` pattern, a difference from the baseline, a
/// reproduced pattern, or (a replay, or a session with one cell) failures.
pub fn finding_text(report: &Report) -> &'static str {
    let differs = report.cells.iter().any(|c| {
        c.vs_baseline.as_ref().is_some_and(|v| v.differs)
            || c.timeouts_vs_baseline.as_ref().is_some_and(|v| v.differs)
            || c.tests.iter().any(per_test::TestRow::differs)
    });
    if report.other_failures() > 0 {
        "**failures**: runs failed with no `--signature` pattern matching (real failures, never green)"
    } else if differs {
        "**differs**: a cell or a test differs from the baseline"
    } else if report.signature.is_some() {
        "**reproduced**: a failure matched a `--signature` pattern"
    } else {
        "**failed**: with no other cell to compare, its failures are the finding"
    }
}

/// The cells whose first failure a report shows: those that differ from the
/// baseline, and with a signature, those that reproduced it.
pub fn shown_failures(report: &Report) -> Vec<(&CellReport, &FirstFailure)> {
    report
        .cells
        .iter()
        .filter(|c| {
            c.vs_baseline.as_ref().is_some_and(|v| v.differs)
                || ((report.signature.is_some() || report.replay_of.is_some()) && c.k > 0)
        })
        .filter_map(|c| c.first_failure.as_ref().map(|f| (c, f)))
        .collect()
}

/// With `--signature`, the cells whose first other failure (a failed run
/// that matched no pattern) a report shows: every cell that has one.
pub fn shown_other_failures(report: &Report) -> Vec<(&CellReport, &FirstFailure)> {
    (report.cells.iter())
        .filter_map(|c| c.first_other_failure.as_ref().map(|f| (c, f)))
        .collect()
}

/// The per-test rows a human report shows, in cell order: rows that differ
/// from baseline, rows with failures, and rows whose status changed from the
/// baseline's (a test that stopped running or is skipped only here).
pub fn shown_test_rows(report: &Report) -> Vec<(&CellReport, &per_test::TestRow)> {
    let base = report.cells.iter().find(|c| c.name == "baseline");
    let base_status = |id: &str| {
        base.and_then(|b| b.tests.iter().find(|t| t.id == id))
            .map(|t| t.status)
    };
    let mut out = Vec::new();
    for c in &report.cells {
        for t in &c.tests {
            let differs = t.differs();
            let failed = t.k > 0 || t.other_failures > 0;
            let changed = c.name != "baseline"
                && matches!(
                    t.status,
                    per_test::TestStatus::NeverRan | per_test::TestStatus::AlwaysSkipped
                )
                && base_status(&t.id) != Some(t.status);
            if differs || failed || changed {
                out.push((c, t));
            }
        }
    }
    out
}

/// Distinct tests; of those no shown row mentions, how many passed in every
/// run that ran them and how many were skipped in every cell.
pub fn test_counts(report: &Report) -> (usize, usize, usize) {
    let all: std::collections::BTreeSet<&str> = report
        .cells
        .iter()
        .flat_map(|c| c.tests.iter().map(|t| t.id.as_str()))
        .collect();
    let shown: std::collections::BTreeSet<&str> = shown_test_rows(report)
        .iter()
        .map(|(_, t)| t.id.as_str())
        .collect();
    let skipped_everywhere = |id: &str| {
        report
            .cells
            .iter()
            .flat_map(|c| c.tests.iter().filter(move |t| t.id == id))
            .all(|t| t.status == per_test::TestStatus::AlwaysSkipped)
    };
    let clean: Vec<&&str> = all.iter().filter(|id| !shown.contains(*id)).collect();
    let skipped = clean.iter().filter(|id| skipped_everywhere(id)).count();
    (all.len(), clean.len() - skipped, skipped)
}

/// The k-of-N text of a test row, naming the statuses that are not counts.
pub fn test_count_text(t: &per_test::TestRow) -> String {
    match t.status {
        per_test::TestStatus::AlwaysSkipped => format!("skipped in all {} runs", t.skipped),
        per_test::TestStatus::NeverRan => "never ran".to_string(),
        // With patterns, k counts the matching failures only: a test whose
        // every failure matched none is not "0 of N (always fails)".
        per_test::TestStatus::AlwaysFails if t.other_failures > 0 => format!(
            "{} of {} matching, {} other (always fails)",
            t.k, t.n, t.other_failures
        ),
        per_test::TestStatus::AlwaysFails => format!("{} of {} (always fails)", t.k, t.n),
        per_test::TestStatus::Measured => format!("{} of {}", t.k, t.n),
    }
}

/// The interval text of a test row.
pub fn test_interval_text(t: &per_test::TestRow) -> String {
    interval_words(t.n, t.k, t.low, t.high)
}

/// The versus-baseline text of a test row: its failures' comparison, or,
/// when only its outcome distribution differs (failed → skipped, passed →
/// errored), that.
pub fn test_versus_text(cell: &CellReport, t: &per_test::TestRow) -> String {
    let failures_differ = t.vs_baseline.as_ref().is_some_and(|v| v.differs);
    match &t.shift_vs_baseline {
        Some(s) if s.differs && !failures_differ => {
            format!("outcomes differ ({})", stats::p_text(s.adjusted_p))
        }
        _ => versus_words(cell, t.vs_baseline.as_ref()),
    }
}

/// The outcome shift of a test row in words, when its distribution
/// differs from the baseline's and says more than its failure count does
/// (`baseline failed 3 → here skipped 3`, `passed 6 → errored 6`).
pub fn test_shift_text(t: &per_test::TestRow) -> Option<String> {
    let failures_differ = t.vs_baseline.as_ref().is_some_and(|v| v.differs);
    let beyond = |o: &per_test::Outcomes| o.errored + o.skipped + o.timed_out + o.absent > 0;
    t.shift_vs_baseline
        .as_ref()
        .filter(|s| s.differs && (!failures_differ || beyond(&s.from) || beyond(&s.to)))
        .map(|s| {
            format!(
                "outcomes: baseline {} → here {} ({})",
                s.from.words(),
                s.to.words(),
                stats::p_text(s.adjusted_p)
            )
        })
}

/// The header's run count: executed runs, and the placeholders of cells
/// that were not applied.
pub fn runs_text(report: &Report) -> String {
    let not_applied = report.recorded - report.executed;
    let mut s = format!("{} of {} runs", report.executed, report.planned);
    if not_applied > 0 {
        s.push_str(&format!(" ({not_applied} more not applied)"));
    }
    s
}

/// What the cell rows and the per-test rows count, in words: the same
/// thing, runs; with a signature, runs that reproduced it.
pub fn counting_text(report: &Report) -> String {
    if report.signatures.len() > 1 {
        return format!(
            "cell rows count runs that reproduced any of {} in their output or a failing test's message, each for the first pattern it matched; test rows count runs in which that test's first attempt failed with a message matching one, each also counted in its cell's row; failures matching none are other failures",
            patterns_text(report)
        );
    }
    match &report.signature {
        Some(sig) => format!(
            "cell rows count runs that reproduced /{sig}/ in their output or a failing test's message; test rows count runs in which that test's first attempt failed with a matching message, each also counted in its cell's row"
        ),
        None => "cell rows count runs that failed, of N that passed or failed; test rows count runs in which the test's first attempt failed or errored, of N in which it passed, failed or errored (a first attempt that passed on a rerun counts for its test)".to_string(),
    }
}

/// The failure column's heading.
pub fn failure_heading(report: &Report) -> &'static str {
    if report.signature.is_some() {
        "matching"
    } else {
        "failed"
    }
}

/// Formats a p-value compactly (`0.032`, `1.5e-11`), for `p=…` texts;
/// at `stats::P_FLOOR` or below, `<1e-300` (never 0). Prefer
/// `stats::p_text`, which writes the whole `p=0.032` / `p < 1e-300`.
pub fn short_p(p: f64) -> String {
    if p <= stats::P_FLOOR {
        "<1e-300".to_string()
    } else if p >= 0.001 {
        format!("{p:.3}")
    } else {
        format!("{p:.1e}")
    }
}

#[cfg(test)]
mod tests {
    use crate::record::{RunRecord, TestOutcome, TestRecord};
    use crate::report::per_test;

    /// The row of test `a` failing in every run, its failures matching the
    /// one pattern given or not (`matched`).
    fn always_failing(matched: bool, patterns: usize) -> per_test::TestRow {
        let runs: Vec<RunRecord> = (0..2)
            .map(|i| {
                let mut r = crate::record::fixture::run("s", i, "c");
                r.tests = vec![TestRecord {
                    id: "a".into(),
                    family: None,
                    outcome: TestOutcome::Fail,
                    passed_on_rerun: false,
                    retries: 0,
                    signature: Some("boom".into()),
                    message: None,
                    signature_match: Some(matched),
                    signature_pattern: None,
                }];
                r
            })
            .collect();
        let refs: Vec<&RunRecord> = runs.iter().collect();
        per_test::rows(&refs, 0.95, patterns).remove(0)
    }

    #[test]
    fn an_always_failing_test_whose_failures_matched_no_pattern_says_so() {
        assert_eq!(
            super::test_count_text(&always_failing(false, 1)),
            "0 of 2 matching, 2 other (always fails)"
        );
        assert_eq!(
            super::test_count_text(&always_failing(true, 1)),
            "2 of 2 (always fails)"
        );
        assert_eq!(
            super::test_count_text(&always_failing(false, 0)),
            "2 of 2 (always fails)"
        );
    }
}
