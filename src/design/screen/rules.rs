//! The screen design's pure rules, beside its driver: where a look stands
//! and what it decides, which (test, cell) pairs the screen makes
//! candidates, each candidate's ladder of selections, how candidates pack
//! into invocations that do not interfere, and which cells the adaptive
//! screen runs again. The records they fill (`crate::screen`: the rule's
//! parameters, looks, confirmations) stay with the store that keeps them.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::catalog::recipe::IdFrom;
use crate::screen::{neighbours_id, runner_id, Candidate, Decision, Look, Rule};
use crate::stats;

/// Where a look stands in a candidate's confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At {
    /// Looks taken so far, this one included (every stage).
    pub pair: u32,
    /// Pairs of the current stage, this one included.
    pub stage_pairs: u32,
    /// An earlier look was the candidate's planned look.
    pub planned_taken: bool,
    /// The screen saw the test fail more often in the cell than at
    /// baseline (false: less often): the direction the p is one-sided in.
    pub fails_more: bool,
}

/// Decides one look from the stage's counts. `may_climb`: the candidate is
/// still alone and the screen saw it fail in the cell.
pub fn decide(
    rule: &Rule,
    at: At,
    stage: &'static str,
    cell: (u64, u64),
    baseline: (u64, u64),
    may_climb: bool,
) -> Look {
    let (kc, nc) = cell;
    let (kb, nb) = baseline;
    let p = match (nc > 0 && nb > 0, rule.planned) {
        (false, _) => 1.0,
        (true, 0) => stats::fisher_exact(kc, nc - kc, kb, nb - kb),
        (true, _) => stats::fisher_one_sided(kc, nc - kc, kb, nb - kb, at.fails_more),
    };
    let weight = rule.weight(at.pair, at.stage_pairs, at.planned_taken);
    let spent_p = match weight > 0.0 {
        true => (p / weight).min(1.0),
        false => 1.0,
    };
    let decision = if spent_p <= rule.boundary {
        Decision::Differs
    } else if may_climb && at.stage_pairs >= rule.climb_after && kc == 0 && kb == 0 {
        Decision::Climb
    } else if nc > 0
        && nb > 0
        && difference_bound(cell, baseline, rule.confidence) < rule.clear_below
    {
        Decision::Cleared
    } else {
        Decision::Continue
    };
    Look {
        pair: at.pair,
        stage: stage.to_string(),
        cell,
        baseline,
        p,
        spent_p,
        decision,
        weight: Some(weight),
        planned: !at.planned_taken && rule.planned > 0 && at.stage_pairs == rule.planned,
    }
}

/// One look at a candidate under its current selection, checking first
/// that the baseline arm keeps the screen's baseline outcome: when it does
/// not and a wider selection exists (`can_climb`), the look decides
/// [`Decision::Climb`] and says why; at the widest, the look stands and the
/// reason is returned as a note. `cell_silent_climbs`: the screen saw it
/// fail in the cell, so never failing here climbs too (after
/// `rule.climb_after` pairs).
#[allow(clippy::too_many_arguments)]
pub fn look_at(
    rule: &Rule,
    at: At,
    level: Level,
    cell: (u64, u64),
    baseline: (u64, u64),
    screen_baseline: (u64, u64),
    can_climb: bool,
    cell_silent_climbs: bool,
) -> (Look, Option<String>) {
    let alpha = 1.0 - rule.confidence;
    let mut look = decide(
        rule,
        at,
        level.stage(),
        cell,
        baseline,
        can_climb && cell_silent_climbs,
    );
    let why = match baseline_reproduces(screen_baseline, baseline, alpha) {
        Ok(()) if look.decision == Decision::Climb => Some(format!(
            "it never failed in the cell ({} of {}) though the screen saw it fail",
            cell.0, cell.1
        )),
        Ok(()) => None,
        // A look whose baseline arm lost the screen's context is no
        // evidence either way: it spends nothing towards a verdict.
        Err(why) if can_climb => {
            look.decision = Decision::Climb;
            look.spent_p = 1.0;
            Some(why)
        }
        Err(why) => {
            if look.decision == Decision::Differs {
                look.decision = Decision::Continue;
            }
            look.spent_p = 1.0;
            Some(format!("{why}, even with the whole command"))
        }
    };
    (look, why)
}

/// An upper bound on |rate_cell − rate_baseline| from the two intervals.
pub fn difference_bound(cell: (u64, u64), baseline: (u64, u64), confidence: f64) -> f64 {
    let c = stats::proportion(cell.0, cell.1, confidence);
    let b = stats::proportion(baseline.0, baseline.1, confidence);
    (c.high - b.low).max(b.high - c.low)
}

/// Failures and runs of `tests` in `cell` among `runs`, a run counted once:
/// failing when any of them failed in it, else passing when any passed (a
/// skip counts in neither; a run whose report lacks them all neither). One
/// test, or a collision's tests together.
pub fn arm(runs: &[crate::record::RunRecord], cell: &str, tests: &[&str]) -> (u64, u64) {
    use crate::record::TestOutcome;
    runs.iter()
        .filter(|r| r.cell == cell)
        .fold((0, 0), |(k, n), r| {
            let mut ran = r.tests.iter().filter(|t| tests.contains(&t.id.as_str()));
            let outcomes: Vec<TestOutcome> = ran.by_ref().map(|t| t.outcome).collect();
            if outcomes
                .iter()
                .any(|o| matches!(o, TestOutcome::Fail | TestOutcome::Error))
            {
                (k + 1, n + 1)
            } else if outcomes.contains(&TestOutcome::Pass) {
                (k, n + 1)
            } else {
                (k, n)
            }
        })
}

/// The candidates among screen `runs` (every round's): each (test, cell)
/// pair of the non-baseline `cells` whose failure rate differs from the
/// same test's at baseline, in cell order then test id, with the seed of
/// the first run (in `runs`' order) in which it failed in the cell.
pub fn candidates(runs: &[crate::record::RunRecord], cells: &[String]) -> Vec<Candidate> {
    use crate::record::TestOutcome;
    use std::collections::BTreeMap;
    type Counts = BTreeMap<(String, String), ((u64, u64), Option<(u64, String)>)>;
    let mut counts: Counts = BTreeMap::new();
    for r in runs {
        for t in &r.tests {
            let e = counts
                .entry((r.cell.clone(), t.id.clone()))
                .or_insert(((0, 0), None));
            match t.outcome {
                TestOutcome::Pass => e.0 .1 += 1,
                TestOutcome::Fail | TestOutcome::Error => {
                    e.0 .0 += 1;
                    e.0 .1 += 1;
                    e.1.get_or_insert_with(|| (r.seed, r.id.clone()));
                }
                TestOutcome::Skip => {}
            }
        }
    }
    let mut out = Vec::new();
    for cell in cells.iter().filter(|c| c.as_str() != "baseline") {
        for ((c, test), ((k, n), flip)) in counts.range((cell.clone(), String::new())..) {
            let (k, n) = (*k, *n);
            if c != cell {
                break;
            }
            let Some(&((bk, bn), _)) = counts.get(&("baseline".to_string(), test.clone())) else {
                continue;
            };
            if n == 0 || bn == 0 || k * bn == bk * n {
                continue;
            }
            out.push(Candidate {
                cell: cell.clone(),
                test: test.clone(),
                screen_cell: (k, n),
                screen_baseline: (bk, bn),
                flip_seed: flip.as_ref().map(|f| f.0),
                flip_run: flip.as_ref().map(|f| f.1.clone()),
                partners: Vec::new(),
                contests: None,
            });
        }
    }
    out
}

/// Orders `candidates` by the size of their screen difference, largest
/// first (|cell rate − baseline rate|; ties keep their order: cell, then
/// test id): the confirmations spend their runs first where a decision is
/// nearest.
pub fn largest_first(candidates: &mut [Candidate]) {
    let gap = |c: &Candidate| {
        let rate = |(k, n): (u64, u64)| k as f64 / n.max(1) as f64;
        (rate(c.screen_cell) - rate(c.screen_baseline)).abs()
    };
    candidates.sort_by(|a, b| gap(b).total_cmp(&gap(a)));
}

/// How wide a confirmation's selection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// The test alone.
    Alone,
    /// Its file or module (what the runner selects).
    Neighbours,
    /// The tests of its file that ran before it in the order that flipped
    /// it, in that order, then it (a shuffle candidate).
    OrderedFile,
    /// Every test that ran before it in the order that flipped it, in that
    /// order, then it (a shuffle candidate).
    OrderedPrefix,
    /// The whole command.
    Whole,
}

impl Level {
    /// The stage name its looks carry.
    pub fn stage(self) -> &'static str {
        match self {
            Level::Alone => "alone",
            Level::Neighbours => "neighbours",
            Level::OrderedFile => "ordered file",
            Level::OrderedPrefix => "ordered prefix",
            Level::Whole => "whole",
        }
    }
}

/// One rung of a candidate's selection ladder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// How wide.
    pub level: Level,
    /// The runner's id for it (`None`: the whole command).
    pub id: Option<String>,
    /// In words, for the report.
    pub words: String,
    /// An ordered selection's lists (JUnit ids): what the cell arm and
    /// what the baseline arm run, in order.
    pub order: Option<Order>,
}

/// The two lists of an ordered selection: the same tests, in the order
/// that flipped the candidate (the cell arm) and in the order the screen's
/// baseline ran them (the baseline arm), so that the order is all the arms
/// differ by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    /// The cell arm's list.
    pub cell: Vec<String>,
    /// The baseline arm's list.
    pub baseline: Vec<String>,
}

/// What a shuffle candidate's ordered selections are cut from: the order
/// of the screen run that flipped it and the screen baseline's order (each
/// a run's JUnit ids as its report lists them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlipOrders {
    /// The flipping run's order.
    pub flip: Vec<String>,
    /// The baseline's order.
    pub baseline: Vec<String>,
}

/// A shuffle candidate's ordered rungs: its file's tests that ran before it
/// in the flipping order (when it has any there), then every test that did;
/// each arm is the victim's own context cut from its own run (the cell arm
/// from the flipping run, the baseline arm from the screen's baseline run:
/// what ran before it there, then it), since a test that ran after it
/// cannot have changed its outcome.
fn ordered_rungs(from: IdFrom, junit_id: &str, dir: &Path, orders: &FlipOrders) -> Vec<Selection> {
    let at = |order: &[String]| order.iter().position(|t| t == junit_id);
    let (Some(flip_at), Some(base_at)) = (at(&orders.flip), at(&orders.baseline)) else {
        return Vec::new();
    };
    let flip = &orders.flip[..=flip_at];
    let base = &orders.baseline[..=base_at];
    let mut out = Vec::new();
    let rung = |level, cell: Vec<String>, baseline: Vec<String>, words: String| Selection {
        level,
        id: None,
        words,
        order: Some(Order { cell, baseline }),
    };
    if let Some(file) = neighbours_id(from, junit_id, dir) {
        let mine = |order: &[String]| -> Vec<String> {
            (order.iter())
                .filter(|t| {
                    *t == junit_id || neighbours_id(from, t, dir).as_deref() == Some(file.as_str())
                })
                .cloned()
                .collect()
        };
        let (cell, baseline) = (mine(flip), mine(base));
        if cell.len() > 1 && cell.len() < flip.len() {
            let words = format!(
                "in the order that flipped it, restricted to its file ({file}: the {} test(s) that ran before it there, then it; at baseline the {} that ran before it there)",
                cell.len() - 1,
                baseline.len() - 1
            );
            out.push(rung(Level::OrderedFile, cell, baseline, words));
        }
    }
    let words = format!(
        "in the order that flipped it (the {flip_at} test(s) that ran before it, then it; at baseline the {base_at} that ran before it)"
    );
    out.push(rung(
        Level::OrderedPrefix,
        flip.to_vec(),
        base.to_vec(),
        words,
    ));
    out
}

/// What kind of cell a candidate was found in, for where its ladder starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellKind {
    /// A cell whose conditions are the same on every run (a zone, a clock).
    Fixed,
    /// Runs the tests concurrently (workers): the test's partners matter.
    Concurrent,
    /// Shuffles the order: the order that flipped it matters.
    Shuffled,
}

/// The selections a candidate may be confirmed with, narrowest first: the
/// test alone, its file or module, the whole command. A workers candidate
/// starts at its neighbours (alone it has no partner to collide with); a
/// shuffle candidate replays the order that flipped it (`orders`, when the
/// recipe runs a given order): its file's tests that ran before it, then
/// every test that did, then the whole command under the flipping seed (the
/// seed on a smaller selection is another order). `selects`: the recipe has
/// a `[select]`.
pub fn ladder(
    from: IdFrom,
    junit_id: &str,
    dir: &Path,
    selects: bool,
    kind: CellKind,
    orders: Option<&FlipOrders>,
) -> Vec<Selection> {
    let mut out = Vec::new();
    if let (CellKind::Shuffled, Some(orders)) = (kind, orders) {
        out.extend(ordered_rungs(from, junit_id, dir, orders));
    }
    if selects && kind == CellKind::Fixed {
        if let Some(id) = runner_id(from, junit_id, dir) {
            out.push(Selection {
                level: Level::Alone,
                words: format!("alone ({id})"),
                id: Some(id),
                order: None,
            });
        }
    }
    if selects && kind != CellKind::Shuffled {
        if let Some(id) = neighbours_id(from, junit_id, dir) {
            out.push(Selection {
                level: Level::Neighbours,
                words: format!("with its neighbours ({id})"),
                id: Some(id),
                order: None,
            });
        }
    }
    out.push(Selection {
        level: Level::Whole,
        id: None,
        words: "with its neighbours (the whole command)".into(),
        order: None,
    });
    out
}

/// Why a ladder starts above the test alone, in words (None: it starts
/// alone). `ordered`: a shuffle candidate's ladder replays its order.
pub fn start_reason(kind: CellKind, flip_seed: Option<u64>, ordered: bool) -> Option<String> {
    match kind {
        CellKind::Shuffled if ordered => Some(match flip_seed {
            Some(seed) => format!(
                "a shuffle candidate: its cell arm replays the order of the screen run under seed {seed} that flipped it, cut after it (the seed on a smaller selection is another order), its baseline arm what ran before it in the screen's baseline run"
            ),
            None => "a shuffle candidate: its cell arm replays the order that flipped it, cut after it, its baseline arm what ran before it in the screen's baseline run".into(),
        }),
        CellKind::Fixed => None,
        CellKind::Concurrent => Some(
            "found under concurrency: confirmed with the tests it ran beside, never alone (alone it has no partner)".into(),
        ),
        CellKind::Shuffled => Some(match flip_seed {
            Some(seed) => format!(
                "a shuffle candidate: no recipe here runs a given order, so it keeps the full selection and every cell run replays seed {seed}, the order that flipped it"
            ),
            None => "a shuffle candidate: no recipe here runs a given order, so it keeps the full selection".into(),
        }),
    }
}

/// Whether the baseline arm under a confirmation's selection reproduces
/// the screen's baseline outcome: `Err` says how it did not. A test that
/// always passed (or always failed) at baseline in the screen must do the
/// same here; a mixed one must not differ by Fisher's test at `alpha`.
pub fn baseline_reproduces(screen: (u64, u64), now: (u64, u64), alpha: f64) -> Result<(), String> {
    let ((ks, ns), (k, n)) = (screen, now);
    if ns == 0 || n == 0 {
        return Ok(());
    }
    let broken = if ks == 0 {
        k > 0
    } else if ks == ns {
        k < n
    } else {
        stats::fisher_exact(k, n - k, ks, ns - ks) <= alpha
    };
    if broken {
        Err(format!(
            "its baseline arm failed {k} of {n} where the screen's baseline failed {ks} of {ns}"
        ))
    } else {
        Ok(())
    }
}

/// Whether selection `outer` holds selection `inner` (a file its tests, a
/// module its `module::test`s).
fn holds(outer: &str, inner: &str) -> bool {
    inner.len() > outer.len() && inner.starts_with(outer) && inner[outer.len()..].starts_with("::")
}

/// A candidate waiting for an invocation: its index, its selection's id
/// (`None`: the whole command), the seed its cell runs replay.
pub type BatchEntry = (usize, Option<String>, Option<u64>);

/// One invocation's worth of candidates: what runs, and who it confirms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// The runner ids selected together (empty: the whole command).
    pub ids: Vec<String>,
    /// The seed every cell run replays, if any.
    pub every_seed: Option<u64>,
    /// The candidates (indexes into the caller's list).
    pub members: Vec<usize>,
}

/// Packs candidates of one cell into invocations whose confirmations do
/// not interfere: each entry is (candidate index, its selection's id, the
/// seed its cell runs replay). The same selection under the same seed is
/// one invocation; different ids join one invocation only when `repeats`
/// (the recipe selects several at once) and none holds another (a test
/// confirmed alone never runs inside another candidate's file).
pub fn batches(entries: &[BatchEntry], repeats: bool) -> Vec<Batch> {
    let mut out: Vec<Batch> = Vec::new();
    for (i, id, seed) in entries {
        let fits = |b: &Batch| -> bool {
            if b.every_seed != *seed {
                return false;
            }
            match id {
                None => b.ids.is_empty(),
                Some(id) => {
                    if b.ids.is_empty() {
                        return false;
                    }
                    if b.ids.contains(id) {
                        return true;
                    }
                    repeats && !b.ids.iter().any(|o| holds(o, id) || holds(id, o))
                }
            }
        };
        match out.iter_mut().find(|b| fits(b)) {
            Some(b) => {
                if let Some(id) = id {
                    if !b.ids.contains(id) {
                        b.ids.push(id.clone());
                    }
                }
                b.members.push(*i);
            }
            None => out.push(Batch {
                ids: id.iter().cloned().collect(),
                every_seed: *seed,
                members: vec![*i],
            }),
        }
    }
    out
}

/// Why a shuffle cell's second screen run replays its first run's order
/// reversed.
pub const REVERSED_WHY: &str = "random by nature; its second run is its first run's order reversed, so every two tests ran both ways round";

/// The adaptive screen's rule: whether a cell is screened again after its
/// first full run, and why. A deterministic flip shows in one run; a cell
/// whose first run flagged nothing, or whose perturbation is random by
/// nature (shuffle, workers, stress), gets the further runs.
pub fn rescreen(random: bool, flagged: usize) -> Option<&'static str> {
    if random {
        Some("random by nature: one run shows one order or schedule of many")
    } else if flagged == 0 {
        Some("its first run flagged nothing")
    } else {
        None
    }
}
