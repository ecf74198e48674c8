//! What the screen's driver reads off a spec and its runs: a cell's kind,
//! the recipe's given order, a run's test order, executions counted.

use super::rules::CellKind;
use crate::record::RunRecord;
use crate::session::SessionSpec;

/// A run's tests in the order its report lists them (the store keeps a
/// session's tests in first-seen order, not each run's): `None` without a
/// kept report or tests.
pub(super) fn order_of(r: &RunRecord) -> Option<Vec<String>> {
    let parsed = crate::results::junit::parse_file(r.junit.as_deref()?).ok()?;
    let mut seen = std::collections::HashSet::new();
    let ids: Vec<String> = (crate::results::outcomes::records(&parsed, &[]).into_iter())
        .map(|t| t.id)
        .filter(|id| seen.insert(id.clone()))
        .collect();
    (!ids.is_empty()).then_some(ids)
}

/// The recipe's way of running a given list in a given order, if it has one.
pub(super) fn ordered_of(spec: &SessionSpec) -> Option<&crate::catalog::recipe::ordered::Ordered> {
    use crate::catalog::recipe::ordered::OrderHow;
    (spec.recipe.as_ref()?.ordered.as_ref())
        .filter(|o| matches!(o.how, OrderHow::PytestPlugin | OrderHow::Listed))
}

/// Test executions (per-test records) in `runs`.
pub(super) fn executions(runs: &[RunRecord]) -> u64 {
    runs.iter().map(|r| r.tests.len() as u64).sum()
}

/// Whether cell `name` of `spec` is random by nature (its runs differ by
/// seed, order or schedule: shuffle, orders, workers, stress), and its kind for the
/// confirmation's ladder.
pub(super) fn kind_of(spec: &SessionSpec, name: &str) -> (bool, CellKind) {
    let Some(p) = spec.cell_index(name).map(|i| &spec.cells[i].1) else {
        return (false, CellKind::Fixed);
    };
    let kind = if p.shuffle || p.orders {
        CellKind::Shuffled
    } else if p.workers.is_some() {
        CellKind::Concurrent
    } else {
        CellKind::Fixed
    };
    let random = p.shuffle || p.orders || p.workers.is_some() || p.stress.is_some();
    (random, kind)
}
