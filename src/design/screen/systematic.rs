//! The screen's systematic-orders round: each `orders` cell, whose first
//! screen run ran the runner's own order (the collection), then runs every
//! systematic order of the tests that run listed (`design::orders`), one
//! run each, as a round of the screen.

use super::facts::{executions, order_of};
use super::StopRx;
use crate::error::Result;
use crate::record::{RunRecord, SessionRecord};
use crate::screen;
use crate::session::{self, SessionSpec};

/// Why an orders cell ran again, for the report.
pub(super) const ORDERS_WHY: &str =
    "systematic orders: every ordered pair of tests of a module adjacent, and of modules as blocks, at least once";

/// Runs every systematic order of each of `cells` (their tests read from
/// their first run in `runs`), appending the runs to `runs`; returns the
/// round and the runs' seeds (no seed makes an order: a candidate flipped
/// here replays the order itself). `Ok(None)` when stopped; no round when
/// no cell has a first run with tests.
pub(super) async fn orders_round(
    full: &SessionSpec,
    screened: &SessionRecord,
    cells: &[String],
    runs: &mut Vec<RunRecord>,
    stop: &StopRx,
) -> Result<Option<(Option<screen::Round>, Vec<u64>)>> {
    let tests = (runs.iter())
        .filter(|r| cells.contains(&r.cell) && !r.tests.is_empty())
        .find_map(|r| order_of(r).or_else(|| Some(crate::bisect::order_of(r))));
    let Some(tests) = tests.filter(|t| !t.is_empty()) else {
        return Ok(Some((None, Vec::new())));
    };
    let names: Vec<&str> = cells.iter().map(String::as_str).collect();
    let spec = (full.clone().only_cells(&names)?)
        .part_of(&screened.id)
        .knowing(screened)
        .with_seed(crate::plan::run_seed(full.seed, 2_000_003));
    let name = format!("screen-{}-orders", screened.id);
    let (spec, count) = crate::design::orders::with_orders(spec, cells, &tests, &name)?;
    let spec = spec.with_runs(count as u32);
    let Some(done) = session::run_session(&spec, stop).await? else {
        return Ok(None);
    };
    let (extra, _) = done.runs(&spec.store)?;
    let seeds = extra.iter().map(|r| r.seed).collect();
    let round = screen::Round {
        session: done.session.id.clone(),
        cells: (cells.iter())
            .map(|c| (c.clone(), format!("{ORDERS_WHY} ({count} orders)")))
            .collect(),
        runs_per_cell: count as u32,
        runs: extra.len() as u64,
        executions: executions(&extra),
    };
    runs.extend(extra);
    if done.interrupted {
        return Ok(None);
    }
    Ok(Some((Some(round), seeds)))
}
