//! The adaptive screen's later rounds: the cells one full run cannot tell
//! about run again, a shuffle cell that did not run its systematic orders
//! (`systematic.rs`) first in its first run's order reversed.

use super::facts::{executions, kind_of, order_of, ordered_of};
use super::rules::{self, CellKind};
use crate::error::{Error, Result};
use crate::exec::child::Stop;
use crate::record::RunRecord;
use crate::screen;
use crate::session::{self, SessionSpec};

/// The adaptive screen's later rounds for the cells `again` names (with
/// why): a shuffle cell whose recipe runs a given order replays its first
/// run's order reversed (unless it ran the systematic orders: `spent`
/// names those cells and how many runs they took), then each cell runs
/// the rest of its `screen_runs` under fresh seeds; `not_systematic` says
/// why a shuffle cell did not run the systematic orders. Their runs join
/// `runs`. Returns the rounds and the reversed runs' seeds; `None` when
/// interrupted while probing.
pub(super) async fn screen_again(
    full: &SessionSpec,
    settings: &SessionSpec,
    screened: &crate::record::SessionRecord,
    again: &[(String, String)],
    (screen_runs, replays_orders, spent, not_systematic): (
        u32,
        bool,
        &[(String, u32)],
        Option<&str>,
    ),
    runs: &mut Vec<RunRecord>,
    stop: &tokio::sync::watch::Receiver<Stop>,
) -> Result<Option<(Vec<screen::Round>, Vec<u64>)>> {
    let mut rounds = Vec::new();
    // A shuffle cell whose recipe runs a given order replays its first
    // run's order reversed as its second run: every pair of tests then ran
    // both ways round, so a test that fails after one other test (or passes
    // only after one) fails in one of the two runs.
    let reversed: Vec<(String, Vec<String>)> = match screen_runs > 1 && replays_orders {
        false => Vec::new(),
        true => (again.iter())
            .filter(|(c, _)| kind_of(settings, c).1 == CellKind::Shuffled)
            .filter(|(c, _)| !spent.iter().any(|(s, _)| s == c))
            .filter_map(|(c, _)| {
                let first = runs.iter().find(|r| &r.cell == c)?;
                let mut order = order_of(first)?;
                order.reverse();
                Some((c.clone(), order))
            })
            .collect(),
    };
    let mut reversed_seeds = Vec::new();
    if !reversed.is_empty() {
        let spec = reversed_spec(full, &reversed, screened)?
            .with_seed(crate::plan::run_seed(settings.seed, 2_000_001));
        let Some(more) = session::run_session(&spec, stop).await? else {
            return Ok(None);
        };
        let (extra, _) = more.runs(&spec.store)?;
        reversed_seeds.extend(extra.iter().map(|r| r.seed));
        rounds.push(screen::Round {
            session: more.session.id.clone(),
            cells: (reversed.iter())
                .map(|(c, _)| {
                    let why = match not_systematic {
                        Some(w) => {
                            format!("{}; not the systematic orders: {w}", rules::REVERSED_WHY)
                        }
                        None => rules::REVERSED_WHY.into(),
                    };
                    (c.clone(), why)
                })
                .collect(),
            runs_per_cell: 1,
            runs: extra.len() as u64,
            executions: executions(&extra),
        });
        runs.extend(extra);
    }
    // The further runs, under fresh seeds: fewer for a cell that ran its
    // order reversed or its systematic orders.
    let further = |c: &str| {
        let more = match spent.iter().find(|(s, _)| s == c) {
            Some((_, n)) => *n,
            None => u32::from(reversed.iter().any(|(r, _)| r == c)),
        };
        screen_runs.saturating_sub(1 + more)
    };
    let mut by_count: Vec<(u32, Vec<(String, String)>)> = Vec::new();
    for (c, why) in again {
        let n = further(c);
        if n == 0 {
            continue;
        }
        match by_count.iter_mut().find(|(k, _)| *k == n) {
            Some((_, cells)) => cells.push((c.clone(), why.clone())),
            None => by_count.push((n, vec![(c.clone(), why.clone())])),
        }
    }
    for (k, (n, cells)) in by_count.into_iter().enumerate() {
        let names: Vec<&str> = cells.iter().map(|(c, _)| c.as_str()).collect();
        let spec = (full.clone().only_cells(&names)?)
            .with_runs(n)
            .with_seed(crate::plan::run_seed(
                settings.seed,
                2_000_000 + 2 * k as u32,
            ))
            .part_of(&screened.id)
            .knowing(screened);
        let Some(more) = session::run_session(&spec, stop).await? else {
            return Ok(None);
        };
        let (extra, _) = more.runs(&spec.store)?;
        rounds.push(screen::Round {
            session: more.session.id.clone(),
            cells,
            runs_per_cell: n,
            runs: extra.len() as u64,
            executions: executions(&extra),
        });
        runs.extend(extra);
    }
    Ok(Some((rounds, reversed_seeds)))
}

/// The screen's reversed round: each of `reversed`'s shuffle cells runs
/// its list (its first run's order reversed, written to a file in the
/// store) once, through the recipe's `[ordered]`, its own shuffle off.
fn reversed_spec(
    full: &SessionSpec,
    reversed: &[(String, Vec<String>)],
    screen: &crate::record::SessionRecord,
) -> Result<SessionSpec> {
    use crate::catalog::recipe::ordered::OrderHow;
    let ordered = ordered_of(full)
        .ok_or_else(|| Error::harness("the recipe runs no given order", "report this as a bug"))?;
    let names: Vec<&str> = reversed.iter().map(|(c, _)| c.as_str()).collect();
    let mut spec = (full.clone().only_cells(&names)?)
        .with_runs(1)
        .part_of(&screen.id)
        .knowing(screen);
    let name = format!("screen-{}-reversed", screen.id);
    for (step, (cell, list)) in reversed.iter().enumerate() {
        let file = full.store.write_bisect_order(&name, step as u32, list)?;
        let argv = (ordered.argv(&full.command, &file.display().to_string()))
            .map_err(|e| Error::harness(e, "report this as a bug"))?;
        spec = spec.with_cell_command(cell, argv);
        for (c, prepared) in &mut spec.cells {
            if &c.name == cell {
                prepared.shuffle = false;
            }
        }
    }
    if ordered.how == OrderHow::PytestPlugin {
        let dir = full.store.write_bisect_plugin()?;
        spec.put_on_pythonpath(&dir);
    }
    Ok(spec)
}
