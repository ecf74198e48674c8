//! The screen's systematic-orders round: each `orders` cell, whose first
//! screen run ran the runner's own order (the collection), then runs every
//! systematic order of the tests that run listed (`design::orders`), one
//! run each, as a round of the screen. A shuffle cell whose recipe runs a
//! given order screens the same way (its tests read from the baseline's
//! first run); [`shuffle_plan`] decides which shuffle cells do, and says
//! why the others run seeds.

use super::facts::{executions, order_of};
use super::StopRx;
use crate::error::Result;
use crate::record::{RunRecord, SessionRecord};
use crate::screen;
use crate::session::{self, SessionSpec};

/// Why an orders cell ran again, for the report.
pub(super) const ORDERS_WHY: &str =
    "systematic orders: every ordered pair of tests of a module adjacent, and of modules as blocks, at least once";

/// Why a shuffle cell screened by seeds did not run the systematic orders,
/// for the report.
pub(super) fn seeds_why(reason: &str) -> String {
    format!("random by nature: one run shows one order of many; fresh seeds, not the systematic orders: {reason}")
}

/// Which of `shuffles` (shuffle cells, not `orders` cells) run the
/// systematic orders as their screen: all of them when the recipe runs a
/// given order, the screen takes more than one run a cell, no `orders`
/// cell runs the same orders in this session and the `count` orders are
/// no more than `budget` (the runs one confirmation arm may take, `-n`
/// halved); else none, with why they run seeds (or, where the recipe runs
/// a given order, the reversed order) instead.
pub(super) fn shuffle_plan(
    spec: &SessionSpec,
    shuffles: &[String],
    screen_runs: u32,
    orders_cells: &[String],
    (count, budget): (usize, u32),
) -> Result<Vec<String>, String> {
    if shuffles.is_empty() {
        return Ok(Vec::new());
    }
    let recipe = spec.recipe.as_ref();
    if let Err(why) = crate::bisect::can_order(recipe) {
        return Err(match recipe {
            Some(r) if r.shuffle.is_some() => format!(
                "the {} runner can only shuffle by seed ({})",
                r.name,
                r.ordered.as_ref().map_or(
                    "its recipe declares no [ordered] selection".to_string(),
                    |o| o.note.clone()
                )
            ),
            Some(_) => why,
            None => {
                "no runner recipe recognises this command, so flakelab cannot run a given order"
                    .into()
            }
        });
    }
    if screen_runs < 2 {
        return Err(format!(
            "--screen {screen_runs} leaves no run beyond the first"
        ));
    }
    if let Some(c) = orders_cells.first() {
        return Err(format!("the `{c}` cell runs them in this session"));
    }
    if count > budget as usize {
        return Err(format!(
            "its {count} systematic orders are more than the {budget} runs a confirmation arm may take (-n {}); `-n {}` runs them, `-p orders` runs them all as a cell",
            2 * budget,
            2 * count
        ));
    }
    Ok(shuffles.to_vec())
}

/// The tests the systematic orders are built from: those of the first run
/// with tests of the first of `sources` that has one, in its report's
/// order.
pub(super) fn tests_of(runs: &[RunRecord], sources: &[String]) -> Option<Vec<String>> {
    let tests = sources.iter().find_map(|c| {
        (runs.iter())
            .filter(|r| &r.cell == c && !r.tests.is_empty())
            .find_map(|r| order_of(r).or_else(|| Some(crate::bisect::order_of(r))))
    });
    tests.filter(|t| !t.is_empty())
}

/// Runs every systematic order of each of `cells`, appending the runs to
/// `runs`; the tests are read from the first run with tests of the first
/// of `sources` that has one (an `orders` cell's own collection run, or a
/// shuffle cell's baseline). Returns the round and the runs' seeds (no
/// seed makes an order: a candidate flipped here replays the order
/// itself). `Ok(None)` when stopped; no round when no source has a run
/// with tests.
pub(super) async fn orders_round(
    full: &SessionSpec,
    screened: &SessionRecord,
    (cells, sources): (&[String], &[String]),
    runs: &mut Vec<RunRecord>,
    stop: &StopRx,
) -> Result<Option<(Option<screen::Round>, Vec<u64>)>> {
    let Some(tests) = tests_of(runs, sources) else {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design::testing;

    fn plan(
        command: &[&str],
        version: &str,
        cells: &[&str],
        screen_runs: u32,
    ) -> Result<Vec<String>, String> {
        let dir = tempfile::tempdir().unwrap();
        let executor = testing::fake(dir.path(), &format!("version = \"{version}\"\n"));
        let spec = testing::spec(dir.path(), &executor, command, cells, 1);
        let orders = crate::design::orders::cells(&spec);
        let shuffles: Vec<String> = vec!["shuffle".into()];
        shuffle_plan(&spec, &shuffles, screen_runs, &orders, (6, 15))
    }

    #[test]
    fn a_shuffle_screens_by_systematic_orders_only_where_the_runner_runs_a_given_order() {
        let pytest = ["pytest", "tests"];
        assert_eq!(
            plan(&pytest, "pytest 9.2.0", &["shuffle"], 2).unwrap(),
            ["shuffle"]
        );
        // A runner that only shuffles by seed: seeds, and why.
        let go = plan(
            &["gotestsum", "--", "./..."],
            "gotestsum 1.8.2",
            &["shuffle"],
            2,
        )
        .unwrap_err();
        assert!(
            go.contains("the gotestsum runner can only shuffle by seed"),
            "{go}"
        );
        // One run a cell leaves none for the orders.
        let one = plan(&pytest, "pytest 9.2.0", &["shuffle"], 1).unwrap_err();
        assert!(one.contains("--screen 1"), "{one}");
        // An orders cell beside it runs the same orders once.
        let beside = plan(&pytest, "pytest 9.2.0", &["shuffle", "orders"], 2).unwrap_err();
        assert!(beside.contains("the `orders` cell runs them"), "{beside}");
        assert!(seeds_why(&go).contains("fresh seeds, not the systematic orders"));
        // More orders than a confirmation arm may take: said, with the -n
        // that runs them.
        let dir = tempfile::tempdir().unwrap();
        let executor = testing::fake(dir.path(), "version = \"pytest 9.2.0\"\n");
        let spec = testing::spec(dir.path(), &executor, &pytest, &["shuffle"], 1);
        let shuffles = vec!["shuffle".to_string()];
        assert!(shuffle_plan(&spec, &shuffles, 2, &[], (15, 15)).is_ok());
        let over = shuffle_plan(&spec, &shuffles, 2, &[], (16, 15)).unwrap_err();
        assert!(
            over.contains("its 16 systematic orders are more than the 15 runs")
                && over.contains("`-n 32` runs them"),
            "{over}"
        );
    }
}
