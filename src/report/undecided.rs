//! The fixed design's undecided pairs: a (test, cell) pair — or a whole
//! cell against the baseline — whose raw Fisher p is below alpha but whose
//! Holm-adjusted p is not says so, with both p-values and what would
//! settle it, instead of only "no difference shown", and marks its
//! comparison undecided (`VsBaseline::undecided`), so the session never
//! exits 0 on it.

use super::Report;

/// Marks every undecided row of a fixed-design `report` (one without a
/// screen's `design`): its `verdict` says `undecided: …`.
pub fn mark(report: &mut Report, confidence: f64) {
    if report.design.is_some() {
        return;
    }
    let alpha = 1.0 - confidence;
    mark_cells(report, confidence);
    let Some(base) = report.cells.iter().find(|c| c.name == "baseline") else {
        return;
    };
    let base: std::collections::BTreeMap<String, (u64, u64)> = (base.tests.iter())
        .map(|t| (t.id.clone(), (t.k, t.n)))
        .collect();
    let comparisons = (report.cells.iter())
        .flat_map(|c| c.tests.iter())
        .filter(|t| t.vs_baseline.is_some())
        .count();
    for cell in report.cells.iter_mut().filter(|c| c.name != "baseline") {
        for row in &mut cell.tests {
            let Some(v) = &row.vs_baseline else { continue };
            let Some(&b) = base.get(&row.id) else {
                continue;
            };
            if v.differs || v.fisher_p >= alpha {
                continue;
            }
            let rate = |(k, n): (u64, u64)| k as f64 / n.max(1) as f64;
            let runs_needed = crate::screen::fixed_runs_needed(
                &[(rate((row.k, row.n)), rate(b))],
                comparisons,
                confidence,
            );
            row.verdict = Some(undecided_text(
                (row.k, row.n),
                b,
                v.fisher_p,
                v.adjusted_p,
                comparisons,
                confidence,
            ));
            if let Some(v) = row.vs_baseline.as_mut() {
                v.undecided = Some(super::Undecided {
                    stopped_by: "correction",
                    runs_needed,
                });
            }
        }
    }
}

/// Marks each cell whose failures' raw p against the baseline's is below
/// alpha but whose Holm-adjusted p (over the cells) is not.
fn mark_cells(report: &mut Report, confidence: f64) {
    let alpha = 1.0 - confidence;
    let Some(base) = (report.cells.iter()).find(|c| c.name == "baseline") else {
        return;
    };
    let b = (base.k, base.n);
    let compared = (report.cells.iter())
        .filter(|c| c.vs_baseline.is_some())
        .count();
    let rate = |(k, n): (u64, u64)| k as f64 / n.max(1) as f64;
    for cell in report.cells.iter_mut().filter(|c| c.name != "baseline") {
        let kn = (cell.k, cell.n);
        let Some(v) = cell.vs_baseline.as_mut() else {
            continue;
        };
        if v.differs || v.fisher_p >= alpha {
            continue;
        }
        v.undecided = Some(super::Undecided {
            stopped_by: "correction",
            runs_needed: crate::screen::fixed_runs_needed(
                &[(rate(kn), rate(b))],
                compared,
                confidence,
            ),
        });
    }
}

/// The undecided rows of a report, by cell.
pub fn rows(report: &Report) -> Vec<(&str, &super::per_test::TestRow)> {
    (report.cells.iter())
        .flat_map(|c| {
            (c.tests.iter())
                .filter(|t| t.stage.is_none() && t.verdict.is_some())
                .map(move |t| (c.name.as_str(), t))
        })
        .collect()
}

/// The fixed design's words for a pair whose raw p is small but does not
/// survive the correction: the counts, both p-values, and how to settle it.
pub fn undecided_text(
    cell: (u64, u64),
    baseline: (u64, u64),
    raw_p: f64,
    adjusted_p: f64,
    comparisons: usize,
    confidence: f64,
) -> String {
    let rate = |(k, n): (u64, u64)| k as f64 / n.max(1) as f64;
    let settle = match crate::screen::fixed_runs_needed(
        &[(rate(cell), rate(baseline))],
        comparisons,
        confidence,
    ) {
        Some(n) => format!("`--design screen` or about {n} runs would settle it"),
        None => "`--design screen` would settle it".into(),
    };
    format!(
        "undecided: {} of {} against {} of {}, raw p = {}, adjusted over {comparisons} comparisons p = {}; {settle}",
        cell.0,
        cell.1,
        baseline.0,
        baseline.1,
        short(raw_p),
        short(adjusted_p),
    )
}

fn short(p: f64) -> String {
    if p >= 0.001 {
        let t = format!("{p:.3}");
        let t = t.trim_end_matches('0').trim_end_matches('.');
        t.to_string()
    } else {
        format!("{p:.1e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_undecided_pair_says_what_would_settle_it() {
        let t = undecided_text((6, 10), (0, 10), 0.0108, 1.0, 128, 0.95);
        assert!(
            t.starts_with("undecided: 6 of 10 against 0 of 10, raw p = 0.011, adjusted over 128 comparisons p = 1; `--design screen` or about "),
            "{t}"
        );
        assert!(t.ends_with(" runs would settle it"), "{t}");
    }
}
