//! The fixed design's undecided pairs: a (test, cell) pair whose raw
//! Fisher p is below alpha but whose Holm-adjusted p is not says so, with
//! both p-values and what would settle it, instead of only "no difference
//! shown".

use super::Report;

/// Marks every undecided row of a fixed-design `report` (one without a
/// screen's `design`): its `verdict` says `undecided: …`.
pub fn mark(report: &mut Report, confidence: f64) {
    if report.design.is_some() {
        return;
    }
    let alpha = 1.0 - confidence;
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
            row.verdict = Some(crate::screen::undecided_text(
                (row.k, row.n),
                b,
                v.fisher_p,
                v.adjusted_p,
                comparisons,
                confidence,
            ));
        }
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
