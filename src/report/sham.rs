//! Each cell against its mechanism's sham (`perturb::sham`): the same
//! Fisher test as against the baseline, Holm-adjusted over every
//! (cell, sham) pair, for whole cells and for per-test rows alike; and the
//! attribution in words: a difference from the baseline is the parameter's
//! only when the cell also differs from its sham.

use super::{CellReport, Report, VsBaseline};
use crate::stats;

/// Fills `vs_sham` on every cell that has a sham, and on each of its
/// per-test rows whose test also ran in the sham.
pub fn compare(cells: &mut [CellReport], confidence: f64) {
    let alpha = 1.0 - confidence;
    let index = |name: &str, cells: &[CellReport]| cells.iter().position(|c| c.name == name);
    let pairs: Vec<(usize, usize)> = (0..cells.len())
        .filter_map(|i| {
            let s = index(cells[i].sham.as_deref()?, cells)?;
            (s != i).then_some((i, s))
        })
        .collect();
    let whole: Vec<(usize, usize)> = pairs
        .iter()
        .copied()
        .filter(|&(i, s)| cells[i].n > 0 && cells[s].n > 0)
        .collect();
    let raw: Vec<f64> = whole
        .iter()
        .map(|&(i, s)| fisher(cells[i].k, cells[i].n, cells[s].k, cells[s].n))
        .collect();
    for ((&(i, _), &p), &adj) in whole.iter().zip(&raw).zip(&stats::holm(&raw)) {
        cells[i].vs_sham = Some(VsBaseline {
            fisher_p: p,
            adjusted_p: adj,
            differs: adj < alpha,
            effect: None,
            undecided: None,
        });
    }
    let mut rows = Vec::new();
    for &(i, s) in &pairs {
        for (r, row) in cells[i].tests.iter().enumerate() {
            let Some(other) = cells[s].tests.iter().find(|t| t.id == row.id) else {
                continue;
            };
            if row.n > 0 && other.n > 0 {
                rows.push((i, r, fisher(row.k, row.n, other.k, other.n)));
            }
        }
    }
    let raw: Vec<f64> = rows.iter().map(|r| r.2).collect();
    for (&(i, r, p), &adj) in rows.iter().zip(&stats::holm(&raw)) {
        let sham = cells[i].sham.clone();
        let row = &mut cells[i].tests[r];
        row.sham = sham;
        row.vs_sham = Some(VsBaseline {
            fisher_p: p,
            adjusted_p: adj,
            differs: adj < alpha,
            effect: None,
            undecided: None,
        });
    }
}

fn fisher(k: u64, n: u64, sk: u64, sn: u64) -> f64 {
    stats::fisher_exact(k, n - k, sk, sn - sk)
}

/// Whether `cell`'s difference from the baseline is its parameter's: it
/// differs from the baseline and, when it has a sham, from the sham too.
pub fn attributed(cell: &CellReport) -> bool {
    let differs = cell.vs_baseline.as_ref().is_some_and(|v| v.differs);
    differs && (cell.sham.is_none() || cell.vs_sham.as_ref().is_some_and(|v| v.differs))
}

/// Notes in words: cells whose difference the mechanism alone may make, and
/// shams that differ from the baseline (the apparatus changed the outcome).
pub fn notes(report: &Report) -> Vec<String> {
    let mut out = Vec::new();
    let find = |name: &str| report.cells.iter().find(|c| c.name == name);
    for cell in &report.cells {
        let differs = cell.vs_baseline.as_ref().is_some_and(|v| v.differs);
        if let (true, Some(name)) = (differs, cell.sham.as_deref()) {
            if !attributed(cell) {
                let (k, n, what) = find(name).map_or((0, 0, ""), |s| {
                    (s.k, s.n, s.sham_of.as_deref().unwrap_or("its mechanism"))
                });
                out.push(format!(
                    "{}: differs from the baseline but not from its sham `{name}` ({k} of {n}): {what} alone may reproduce it, so the difference is not shown to be the parameter's",
                    cell.name
                ));
            }
        }
        if let (true, Some(what)) = (differs, cell.sham_of.as_deref()) {
            out.push(format!(
                "{}: this sham differs from the baseline ({} of {}): {what} changes the outcome by itself (the apparatus, not a declared condition)",
                cell.name, cell.k, cell.n
            ));
        }
    }
    out
}
