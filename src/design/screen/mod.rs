//! `flakelab run --design screen`: an adaptive screen (one full run per
//! cell; more only in cells random by nature or whose first run flagged
//! nothing), then every (test, cell) pair whose outcomes differ from the
//! baseline's is confirmed on fresh runs under a selection that keeps the
//! baseline's context (`crate::rules::ladder`: alone, its file or module,
//! the whole command; climbing when the baseline arm does not reproduce
//! the screen's baseline; tests failing in turn on one contested resource
//! under workers confirmed as one collision with its partners,
//! `partners.rs`), the candidates of one cell that do not
//! interfere together in one runner invocation, interleaved with their
//! baseline runs and stopped by the sequential rule in `crate::screen`.
//! Verdicts rest on the confirmation runs only, with Holm over the
//! candidates (`crate::report::screen::apply`).
//!
//! The driver: [`screen`] runs the screen's rounds and returns its
//! candidates, [`record_pending`] keeps them for shards (`--screen-only`),
//! [`confirm()`] confirms them (`confirm.rs`, packed into invocations by
//! `group.rs`), `sharded.rs` confirms one shard's share. Nothing here
//! prints: `app/screen.rs` prints from what these return.

mod active;
mod again;
mod confirm;
mod facts;
mod group;
mod partners;
pub(crate) mod rules;
#[cfg(test)]
mod rules_tests;
mod sharded;
mod systematic;
#[cfg(test)]
mod tests;

use crate::error::Result;
use crate::exec::child::Stop;
use crate::record::{RunRecord, SessionRecord};
use crate::screen::{self, Candidate, Rule, ScreenRecord};
use crate::session::{self, SessionSpec};
use crate::store::LoadStats;
use facts::{kind_of, order_of, ordered_of};
use rules::CellKind;

pub(crate) use sharded::{confirm_shard, shard_of};

/// Confirmation runs per candidate (both arms) when `-n` is not given.
pub const DEFAULT_CAP: u32 = 30;

/// The stop signal every session of the design watches.
pub(crate) type StopRx = tokio::sync::watch::Receiver<Stop>;

/// What the user asked of the screen design, resolved from its flags.
#[derive(Debug, Clone)]
pub(crate) struct Ask {
    /// Runs per cell the screen takes at most (`--screen`).
    pub screen_runs: u32,
    /// The difference below which a candidate is cleared (`--clear-below`).
    pub clear_below: f64,
    /// Confirmation runs per candidate, both arms (`-n`, else [`DEFAULT_CAP`]).
    pub cap: u32,
    /// The id of a screen run alone for its shards (`--screen-only`).
    pub named: Option<String>,
    /// Whether `--seed` was given.
    pub seed_given: bool,
    /// Runs the confirmations may spend (`--max-runs`).
    pub max_runs: Option<u64>,
}

/// How the screen's rounds ended.
pub(crate) enum Screened {
    /// Stopped while probing: no session to show.
    Stopped,
    /// Interrupted during its first round: that round's session and runs.
    Interrupted {
        /// The first round's session.
        session: Box<SessionRecord>,
        /// Its runs.
        runs: Vec<RunRecord>,
        /// How they were read.
        load: LoadStats,
    },
    /// Every round ran: what the confirmations start from.
    Done(Box<Screen>),
}

/// A finished screen: its session, its candidates and the rule that will
/// confirm them.
pub(crate) struct Screen {
    /// The session every confirmation derives from (one run per cell).
    pub settings: SessionSpec,
    /// The screened session.
    pub session: SessionRecord,
    /// The candidate (test, cell) pairs.
    pub candidates: Vec<Candidate>,
    /// Each candidate's orders to replay (a shuffle candidate's), by position.
    pub orders: Vec<Option<rules::FlipOrders>>,
    /// The sequential rule.
    pub rule: Rule,
    /// The later rounds of the adaptive screen.
    pub rounds: Vec<screen::Round>,
    /// Whether the user asked to keep the JUnit reports.
    pub user_keeps: bool,
}

/// Runs the screen's rounds over `full`: one full run of every cell, then
/// the cells one run cannot tell about; returns its candidates.
pub(crate) async fn screen(mut full: SessionSpec, ask: &Ask, stop: &StopRx) -> Result<Screened> {
    // A shuffle candidate replays the order that flipped it, read from its
    // run's report: the screen keeps its reports where the recipe runs a
    // given order.
    let replays_orders = ordered_of(&full).is_some()
        && (full.cells.iter()).any(|(c, _)| kind_of(&full, &c.name).1 == CellKind::Shuffled);
    let user_keeps = full.keep_junit;
    full.keep_junit |= replays_orders;
    // Round one: one full run of every cell.
    let mut settings = full.clone().with_runs(1);
    if let Some(id) = &ask.named {
        if !ask.seed_given {
            settings = settings.with_seed(crate::context::shard::seed_of(id));
        }
        settings = settings.named(id);
    }
    let Some(done) = session::run_session(&settings, stop).await? else {
        return Ok(Screened::Stopped);
    };
    let (mut runs, load) = done.runs(&settings.store)?;
    if done.interrupted {
        return Ok(Screened::Interrupted {
            session: Box::new(done.session),
            runs,
            load,
        });
    }
    let applied: Vec<String> = (done.session.cells.iter())
        .filter(|c| c.applied)
        .map(|c| c.name.clone())
        .collect();
    // Round two: the cells one run cannot tell about.
    let first = rules::candidates(&runs, &applied);
    // Cells of systematic orders: their first run collected the tests,
    // their next round runs every order.
    let orders_cells: Vec<String> = (crate::design::orders::cells(&settings).into_iter())
        .filter(|c| applied.contains(c))
        .collect();
    // Shuffle cells screen by the systematic orders too where the recipe
    // runs a given order (their tests from the baseline's first run); else
    // by fresh seeds, said why.
    let shuffles: Vec<String> = (applied.iter())
        .filter(|c| kind_of(&settings, c).1 == CellKind::Shuffled && !orders_cells.contains(c))
        .cloned()
        .collect();
    let shuffle_sources: Vec<String> = std::iter::once("baseline".to_string())
        .chain(shuffles.iter().cloned())
        .collect();
    let count = systematic::tests_of(&runs, &shuffle_sources)
        .map_or(1, |t| crate::perturb::orders::cover_len(&t));
    let budget = (ask.cap / 2).max(1);
    let (mut systematic_shuffles, mut not_systematic) = match systematic::shuffle_plan(
        &full,
        &shuffles,
        ask.screen_runs,
        &orders_cells,
        (count, budget),
    ) {
        Ok(cells) => (cells, None),
        Err(why) => (Vec::new(), Some(why)),
    };
    let mut ordered_rounds = Vec::new();
    let mut ordered_seeds = Vec::new();
    let mut systematic_count = 0u32;
    // The `orders` cells' round, then the shuffle cells' (never both: a
    // shuffle beside an `orders` cell keeps its reversed run).
    for (shuffle, cells, sources) in [
        (false, orders_cells.clone(), orders_cells.clone()),
        (true, systematic_shuffles.clone(), shuffle_sources.clone()),
    ] {
        if cells.is_empty() {
            continue;
        }
        match systematic::orders_round(&full, &done.session, (&cells, &sources), &mut runs, stop)
            .await?
        {
            Some((round, seeds)) => {
                if shuffle {
                    match &round {
                        Some(r) => systematic_count = r.runs_per_cell,
                        None => {
                            // No tests to build orders from: seeds instead.
                            not_systematic = Some(
                                "no run of the screen reported tests to build the orders from"
                                    .into(),
                            );
                            systematic_shuffles.clear();
                        }
                    }
                }
                ordered_rounds.extend(round);
                ordered_seeds.extend(seeds);
            }
            None => return Ok(Screened::Stopped),
        }
    }
    // A shuffle cell that ran the systematic orders runs again under seeds
    // only for what is left of `--screen` after them.
    let again: Vec<(String, String)> = (applied.iter())
        .filter(|c| c.as_str() != "baseline" && !orders_cells.contains(c))
        .filter(|c| !systematic_shuffles.contains(c) || ask.screen_runs > 1 + systematic_count)
        .filter_map(|c| {
            let flagged = first.iter().filter(|x| &x.cell == c).count();
            let why = rules::rescreen(kind_of(&settings, c).0, flagged)?;
            Some(match (shuffles.contains(c), &not_systematic) {
                (true, Some(reason)) => (c.clone(), systematic::seeds_why(reason)),
                _ => (c.clone(), why.into()),
            })
        })
        .collect();
    let spent: Vec<(String, u32)> = (systematic_shuffles.iter())
        .map(|c| (c.clone(), systematic_count))
        .collect();
    let Some((mut rounds, mut reversed_seeds)) = again::screen_again(
        &full,
        &settings,
        &done.session,
        &again,
        (
            ask.screen_runs,
            replays_orders,
            &spent,
            not_systematic.as_deref(),
        ),
        &mut runs,
        stop,
    )
    .await?
    else {
        return Ok(Screened::Stopped);
    };
    rounds.splice(0..0, ordered_rounds);
    reversed_seeds.extend(ordered_seeds);
    let mut candidates = rules::candidates(&runs, &applied);
    // Tests that fail in turn on one contested resource under a
    // concurrency cell are one collision, confirmed with its partners.
    let concurrent = |cell: &str| kind_of(&settings, cell).1 == CellKind::Concurrent;
    candidates = partners::fold_collisions(&runs, candidates, &concurrent);
    // The confirmations spend their runs where they can still decide: the
    // largest raw differences first (a budget or a stop leaves the rest).
    rules::largest_first(&mut candidates);
    let orders = flip_orders(&settings, &runs, &candidates);
    // A candidate first flipped by a reversed run has no seed that makes
    // its order: it replays the order itself, never a seed.
    for c in &mut candidates {
        if c.flip_seed.is_some_and(|s| reversed_seeds.contains(&s)) {
            c.flip_seed = None;
        }
    }
    drop(runs);
    let rule = Rule::new(
        candidates.len(),
        (ask.cap / 2).max(1),
        settings.confidence,
        ask.clear_below,
    );
    Ok(Screened::Done(Box::new(Screen {
        settings,
        session: done.session,
        candidates,
        orders,
        rule,
        rounds,
        user_keeps,
    })))
}

/// Records a screen run alone (`--screen-only`): its candidates await
/// their shards. Returns the record as stored.
pub(crate) fn record_pending(done: Screen, ask: &Ask, chosen: String) -> Result<ScreenRecord> {
    let mut record = ScreenRecord {
        schema: screen::SCREEN_SCHEMA.into(),
        session: done.session.id.clone(),
        screen_runs: ask.screen_runs,
        rule: done.rule,
        confirmations: Vec::new(),
        confirm_totals: None,
        rounds: done.rounds,
        chosen: Some(chosen),
        pending: true,
        candidates: done.candidates,
        part: None,
        shards: None,
    };
    crate::session::scrub::screen(&done.settings.redaction, &mut record);
    done.settings.store.append_screen(&record)?;
    Ok(record)
}

/// Confirms every candidate of `screen` and records the screen with its
/// confirmations; returns the record as stored.
pub(crate) async fn confirm(
    done: &Screen,
    ask: &Ask,
    chosen: String,
    stop: &StopRx,
) -> Result<ScreenRecord> {
    // The confirmations keep their reports only when asked to.
    let mut confirming = done.settings.clone();
    confirming.keep_junit = done.user_keeps;
    let ctx = confirm::Context {
        settings: &confirming,
        screen: &done.session,
        rule: &done.rule,
        stop,
        shard: None,
    };
    let (confirmed, totals) =
        confirm::confirm_all(&ctx, &done.candidates, &done.orders, ask.max_runs).await?;
    let mut record = ScreenRecord {
        schema: screen::SCREEN_SCHEMA.into(),
        session: done.session.id.clone(),
        screen_runs: ask.screen_runs,
        rule: done.rule,
        confirmations: confirmed,
        confirm_totals: Some(totals),
        rounds: done.rounds.clone(),
        chosen: Some(chosen),
        pending: false,
        candidates: Vec::new(),
        part: None,
        shards: None,
    };
    crate::session::scrub::screen(&done.settings.redaction, &mut record);
    done.settings.store.append_screen(&record)?;
    Ok(record)
}

/// What each shuffle candidate's ordered selections are cut from, when the
/// recipe runs a given order: the first screen run in which it failed in
/// its cell (the run [`rules::candidates`] takes its seed from) and the
/// screen's first baseline run with tests.
fn flip_orders(
    spec: &SessionSpec,
    runs: &[RunRecord],
    candidates: &[Candidate],
) -> Vec<Option<rules::FlipOrders>> {
    use crate::record::TestOutcome;
    if ordered_of(spec).is_none() {
        return vec![None; candidates.len()];
    }
    let baseline = (runs.iter())
        .filter(|r| r.cell == "baseline" && !r.tests.is_empty())
        .find_map(order_of);
    (candidates.iter())
        .map(|c| {
            if kind_of(spec, &c.cell).1 != CellKind::Shuffled {
                return None;
            }
            let flip = runs.iter().find(|r| {
                r.cell == c.cell
                    && (r.tests.iter()).any(|t| {
                        t.id == c.test
                            && matches!(t.outcome, TestOutcome::Fail | TestOutcome::Error)
                    })
            })?;
            Some(rules::FlipOrders {
                flip: order_of(flip)?,
                baseline: baseline.clone()?,
            })
        })
        .collect()
}
