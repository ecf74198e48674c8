//! The screen-then-confirm design, pure: which (test, cell) pairs the screen
//! makes candidates, the sequential rule that decides a candidate from its
//! confirmation runs, how a runner names a test it selects, and how many
//! runs the fixed design would have needed for the same verdicts.
//!
//! Error spending: a candidate gets at most `L` looks (one per confirmation
//! pair), each with Fisher's one-sided p in the direction the screen saw.
//! A look spends a weight of the error ([`Rule::weight`]): most of it at
//! the planned look (the stage's pair at which a complete separation first
//! reaches the boundary), the rest evenly over the looks after it, so the
//! smallest `p / weight` over the looks is a valid p-value however early
//! the candidate stops. A candidate stops as "differs" once that p is at or
//! below `alpha / m` (m candidates), which Holm over the candidates rejects
//! whatever the others do; Holm over every candidate's final p decides the
//! rest.

use std::path::Path;

pub mod shard;

use serde::{Deserialize, Serialize};

use crate::catalog::recipe::IdFrom;
use crate::stats;

/// A (test, cell) pair whose screen outcomes differ from the same test's
/// baseline outcomes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// The cell.
    pub cell: String,
    /// The test's JUnit id.
    pub test: String,
    /// Screen failures and runs of the test in the cell.
    pub screen_cell: (u64, u64),
    /// Screen failures and runs of the test at baseline.
    pub screen_baseline: (u64, u64),
    /// A seed under which it failed in the cell (for shuffle cells: the
    /// seed that flipped it, replayed first).
    pub flip_seed: Option<u64>,
}

/// The sequential rule's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    /// Looks (confirmation pairs) a candidate may take.
    pub looks: u32,
    /// `alpha / m`: a candidate whose spent p reaches it differs.
    pub boundary: f64,
    /// A candidate is cleared once the difference of its failure rates is
    /// bounded below this, at the stated confidence.
    pub clear_below: f64,
    /// Confidence of the bounds.
    pub confidence: f64,
    /// Pairs run alone before a candidate that never failed alone climbs to
    /// its neighbours.
    pub climb_after: u32,
    /// The planned look: the pair of a stage at which a complete separation
    /// (the cell arm failing every run and the baseline arm none, or the
    /// reverse) first reaches the boundary with `planned_share` of the
    /// error. 0 in records written before it, whose looks each spent
    /// 1 / `looks` of the error on a two-sided p.
    #[serde(default)]
    pub planned: u32,
    /// The share of the error the planned look spends; the rest is spread
    /// evenly over the looks after it.
    #[serde(default)]
    pub planned_share: f64,
}

/// The share of the error a candidate's planned look spends.
pub const PLANNED_SHARE: f64 = 0.75;

impl Rule {
    /// The rule for `m` candidates, at most `looks` looks each.
    pub fn new(m: usize, looks: u32, confidence: f64, clear_below: f64) -> Rule {
        let looks = looks.max(1);
        let boundary = (1.0 - confidence) / m.max(1) as f64;
        let separates = |pairs: u32| separation_p(pairs) <= boundary * PLANNED_SHARE;
        let (planned, planned_share) = match (1..looks).find(|&pairs| separates(pairs)) {
            Some(pairs) => (pairs, PLANNED_SHARE),
            None => (looks, 1.0),
        };
        Rule {
            looks,
            boundary,
            clear_below,
            confidence,
            climb_after: 3,
            planned,
            planned_share,
        }
    }

    /// The share of the error a look spends: `stage_pairs` pairs into its
    /// stage, `planned_taken` when an earlier look of the candidate was its
    /// planned look. Until then only a stage's planned pair spends (its
    /// `planned_share`; a climb starts a new stage before any planned look
    /// was taken, so its weight is still unspent); after it every look
    /// spends an equal part of the rest. Along any path a candidate takes
    /// the weights sum to at most 1, so the smallest p / weight over its
    /// looks is a valid p-value (Bonferroni with unequal weights).
    pub fn weight(&self, stage_pairs: u32, planned_taken: bool) -> f64 {
        if self.planned == 0 {
            return 1.0 / f64::from(self.looks);
        }
        if !planned_taken {
            return match stage_pairs == self.planned {
                true => self.planned_share,
                false => 0.0,
            };
        }
        match self.looks > self.planned {
            true => (1.0 - self.planned_share) / f64::from(self.looks - self.planned),
            false => 0.0,
        }
    }
}

/// The one-sided p of a complete separation at `pairs` pairs:
/// 1 / C(2·pairs, pairs).
pub fn separation_p(pairs: u32) -> f64 {
    let n = u64::from(pairs);
    stats::fisher_one_sided(n, 0, 0, n, true)
}

/// What a look decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Take another look.
    Continue,
    /// The spent p reached the boundary: the cell differs for this test.
    Differs,
    /// The difference is bounded below `clear_below`.
    Cleared,
    /// It never failed alone though the screen saw it fail: run it with its
    /// neighbours.
    Climb,
}

/// One look at a candidate, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Look {
    /// Pairs run so far (both stages).
    pub pair: u32,
    /// `alone` or `neighbours`.
    pub stage: String,
    /// Failures and runs in the cell (this stage).
    pub cell: (u64, u64),
    /// Failures and runs at baseline (this stage).
    pub baseline: (u64, u64),
    /// Fisher's p: one-sided, in the direction the screen saw (two-sided
    /// in records written before the planned look).
    pub p: f64,
    /// p spent over the looks (`p / weight`, at most 1; 1 when the baseline
    /// arm did not reproduce the screen's baseline: no evidence).
    pub spent_p: f64,
    /// What it decided.
    pub decision: Decision,
    /// The share of the error this look spent (absent in records written
    /// before the planned look: 1 / L each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
    /// This was the candidate's planned look.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub planned: bool,
}

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

impl Candidate {
    /// Whether the screen saw the test fail more often in the cell than at
    /// baseline.
    pub fn fails_more(&self) -> bool {
        let ((k, n), (bk, bn)) = (self.screen_cell, self.screen_baseline);
        k * bn > bk * n
    }
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
    let weight = rule.weight(at.stage_pairs, at.planned_taken);
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

/// The runner's own id for a JUnit test id (`classname::name`), for the
/// recipe's `[select]`: the id itself, its name part, or a pytest node id
/// (the classname's module path resolved to a file under `dir`).
pub fn runner_id(from: IdFrom, junit_id: &str, dir: &Path) -> Option<String> {
    let (classname, name) = junit_id.rsplit_once("::").unwrap_or(("", junit_id));
    match from {
        IdFrom::Junit => Some(junit_id.to_string()),
        IdFrom::Name => Some(name.to_string()),
        IdFrom::Pytest => {
            let (file, rest) = pytest_file(classname, dir)?;
            let mut id = file;
            for part in rest {
                id.push_str("::");
                id.push_str(part);
            }
            Some(format!("{id}::{name}"))
        }
    }
}

/// The selection of a test's neighbours: its module or file, when the
/// runner can select one (`None`: the whole command).
pub fn neighbours_id(from: IdFrom, junit_id: &str, dir: &Path) -> Option<String> {
    let (classname, _) = junit_id.rsplit_once("::")?;
    match from {
        IdFrom::Junit => Some(classname.to_string()),
        IdFrom::Name => None,
        IdFrom::Pytest => pytest_file(classname, dir).map(|(file, _)| file),
    }
}

/// `tests.test_a.TestB` → (`tests/test_a.py`, [`TestB`]) when that file exists.
fn pytest_file<'a>(classname: &'a str, dir: &Path) -> Option<(String, Vec<&'a str>)> {
    let parts: Vec<&str> = classname.split('.').collect();
    (1..=parts.len()).rev().find_map(|i| {
        let file = format!("{}.py", parts[..i].join("/"));
        dir.join(&file)
            .is_file()
            .then(|| (file, parts[i..].to_vec()))
    })
}

/// Schema tag of a [`ScreenRecord`].
pub const SCREEN_SCHEMA: &str = "flakelab.screen/1";

/// One candidate's confirmation, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Confirmation {
    /// The candidate.
    pub candidate: Candidate,
    /// Every look, in order.
    pub looks: Vec<Look>,
    /// What the deciding stage ran, in words.
    pub selection: String,
    /// The deciding stage's failures and runs in the cell.
    pub cell: (u64, u64),
    /// The deciding stage's failures and runs at baseline.
    pub baseline: (u64, u64),
    /// Runs of the deciding stage (both arms).
    pub stage_runs: u64,
    /// Runs of every stage.
    pub all_runs: u64,
    /// Test executions of every stage.
    pub executions: u64,
    /// The last look's decision.
    pub decision: Decision,
    /// The smallest spent p over the looks.
    pub spent_p: f64,
    /// Why it stopped without a decision, when it did.
    pub note: Option<String>,
    /// The screen seed that flipped it, replayed as each stage's first cell run.
    pub replayed_seed: Option<u64>,
    /// The confirmation sessions.
    pub sessions: Vec<String>,
    /// Why it started above the test alone (a workers cell, a shuffle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    /// Every climb to a wider selection, in order, with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub climbs: Vec<Climb>,
    /// The replayed seed was given to every cell run (a shuffle candidate
    /// replaying its order), not only the first.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replayed_every: bool,
}

/// One climb of a candidate's selection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Climb {
    /// The selection it left, in words.
    pub from: String,
    /// The selection it climbed to, in words.
    pub to: String,
    /// Why.
    pub why: String,
}

/// A screened session's confirmations, stored in `screens.jsonl` so that
/// `flakelab report` renders the same verdicts later.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScreenRecord {
    /// Always [`SCREEN_SCHEMA`].
    pub schema: String,
    /// The screen session.
    pub session: String,
    /// Full runs per cell in the screen.
    pub screen_runs: u32,
    /// The sequential rule.
    pub rule: Rule,
    /// Every candidate's confirmation.
    pub confirmations: Vec<Confirmation>,
    /// The confirmation stage's sessions (runner invocations), runs and
    /// test executions, each counted once however many candidates it
    /// confirmed (absent in records written before batching).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm_totals: Option<(u64, u64, u64)>,
    /// The adaptive screen's later rounds (cells screened again), each a
    /// session part of the screen.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<Round>,
    /// Why this design ran (`--design auto`'s reason, or asked for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chosen: Option<String>,
    /// The screen ran alone (`--screen-only`): its confirmations are to
    /// come from the shards' parts (`crate::screen::shard`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pending: bool,
    /// A pending record's candidates, in order: what every shard confirms
    /// its share of.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<Candidate>,
    /// One shard's part of a sharded confirmation stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<crate::screen::shard::ScreenPart>,
    /// A joined record's shards (never written: made on read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<crate::screen::shard::ScreenShards>,
}

impl ScreenRecord {
    /// What tells this record from the session's others: the session id
    /// for a whole record, with `#pending` for a screen run alone, with
    /// `#part-I-N` for shard I of N's confirmations.
    pub fn key(&self) -> std::borrow::Cow<'_, str> {
        use std::borrow::Cow;
        match (&self.part, self.pending) {
            (Some(p), _) => Cow::Owned(format!("{}#part-{}-{}", self.session, p.index, p.total)),
            (None, true) => Cow::Owned(format!("{}#pending", self.session)),
            (None, false) => Cow::Borrowed(&self.session),
        }
    }
}

/// A later round of the adaptive screen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// The round's session (part of the screen session).
    pub session: String,
    /// The cells screened again, with why.
    pub cells: Vec<(String, String)>,
    /// Runs per cell in this round.
    pub runs_per_cell: u32,
    /// Process runs.
    pub runs: u64,
    /// Test executions.
    pub executions: u64,
}

/// How a screened session spent its runs, against the fixed design.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DesignSummary {
    /// Always `screen`.
    pub kind: &'static str,
    /// Full runs per cell in the screen.
    pub screen_runs: u32,
    /// (test, cell) pairs compared in the screen.
    pub pairs_screened: usize,
    /// Candidates the screen raised.
    pub candidates: usize,
    /// Candidates whose confirmation differs after Holm over the candidates.
    pub confirmed: usize,
    /// The sequential rule.
    pub rule: Rule,
    /// Process runs: screen, confirmation.
    pub runs: (u64, u64),
    /// Test executions (test cases in the runs' reports): screen, confirmation.
    pub executions: (u64, u64),
    /// The N per cell the fixed design needs for the same verdicts, if any
    /// pair differs.
    pub fixed_runs_per_cell: Option<u64>,
    /// Test executions of that fixed design.
    pub fixed_executions: Option<u64>,
    /// Share of the fixed design's executions this design used.
    pub used_share: Option<f64>,
    /// Runner invocations (sessions) the confirmation stage took.
    pub confirm_sessions: u64,
    /// Cells screened again after the first run, with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rescreened: Vec<(String, String)>,
    /// Why this design ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chosen: Option<String>,
    /// The screen ran alone (`--screen-only`): its candidates await their
    /// shards, and no verdict is drawn.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub pending: bool,
    /// A sharded confirmation stage's shards, present and missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shards: Option<crate::screen::shard::ScreenShards>,
}

/// The smallest N at which the fixed design (every cell N full runs, Holm
/// over `m_all` (test, cell) pairs) calls every pair in `rates` (the cell's
/// and the baseline's failure rates) different: Fisher at N for the
/// expected counts at or below `alpha / (m_all − d + 1)` for d differing
/// pairs (Holm's most lenient threshold among them). None above 10,000.
pub fn fixed_runs_needed(rates: &[(f64, f64)], m_all: usize, confidence: f64) -> Option<u64> {
    if rates.is_empty() {
        return None;
    }
    let alpha = 1.0 - confidence;
    let threshold = alpha / (m_all.saturating_sub(rates.len()) + 1) as f64;
    (2..=10_000u64).find(|&n| {
        rates.iter().all(|&(rc, rb)| {
            let kc = (rc * n as f64).round() as u64;
            let kb = (rb * n as f64).round() as u64;
            stats::fisher_exact(kc, n - kc, kb, n - kb) <= threshold
        })
    })
}

/// Failures and runs of `test` in `cell` among `runs` (a skip counts in
/// neither; a run whose report lacks the test neither).
pub fn arm(runs: &[crate::record::RunRecord], cell: &str, test: &str) -> (u64, u64) {
    use crate::record::TestOutcome;
    runs.iter()
        .filter(|r| r.cell == cell)
        .filter_map(|r| r.tests.iter().find(|t| t.id == test))
        .fold((0, 0), |(k, n), t| match t.outcome {
            TestOutcome::Pass => (k, n + 1),
            TestOutcome::Fail | TestOutcome::Error => (k + 1, n + 1),
            TestOutcome::Skip => (k, n),
        })
}

/// The candidates among screen `runs` (every round's): each (test, cell)
/// pair of the non-baseline `cells` whose failure rate differs from the
/// same test's at baseline, in cell order then test id, with the seed of
/// the first run (in `runs`' order) in which it failed in the cell.
pub fn candidates(runs: &[crate::record::RunRecord], cells: &[String]) -> Vec<Candidate> {
    use crate::record::TestOutcome;
    use std::collections::BTreeMap;
    type Counts = BTreeMap<(String, String), ((u64, u64), Option<u64>)>;
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
                    e.1.get_or_insert(r.seed);
                }
                TestOutcome::Skip => {}
            }
        }
    }
    let mut out = Vec::new();
    for cell in cells.iter().filter(|c| c.as_str() != "baseline") {
        for ((c, test), &((k, n), seed)) in counts.range((cell.clone(), String::new())..) {
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
                flip_seed: seed,
            });
        }
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    fn rule() -> Rule {
        Rule::new(5, 10, 0.95, 0.3)
    }

    /// Look `pair`, `stage` pairs into its stage; `taken`: the planned
    /// look is behind it. The screen saw the cell fail more.
    fn at(pair: u32, stage: u32, taken: bool) -> At {
        At {
            pair,
            stage_pairs: stage,
            planned_taken: taken,
            fails_more: true,
        }
    }

    #[test]
    fn the_planned_look_is_where_a_complete_separation_first_decides() {
        // 7 candidates: 1 / C(10, 5) = 0.00397 ≤ 0.75 × 0.05 / 7; 4 pairs
        // (1 / 70) would not do even with all the error.
        let r = Rule::new(7, 15, 0.95, 0.3);
        assert_eq!((r.planned, r.planned_share), (5, PLANNED_SHARE));
        // One candidate: 4 pairs (1 / 70 ≤ 0.0375); 3 (1 / 20) would not.
        assert_eq!(Rule::new(1, 15, 0.95, 0.3).planned, 4);
        // More candidates, a later planned look.
        assert_eq!(Rule::new(100, 15, 0.95, 0.3).planned, 7);
        // A cap too small for any earlier look: the last look takes it all.
        let small = Rule::new(7, 3, 0.95, 0.3);
        assert_eq!((small.planned, small.planned_share), (3, 1.0));
        // Along any path the weights sum to at most 1: nothing before the
        // planned look, its share there, the rest over the looks after it.
        let spent: f64 = (1..r.planned).map(|s| r.weight(s, false)).sum::<f64>()
            + r.weight(r.planned, false)
            + (r.planned + 1..=r.looks)
                .map(|s| r.weight(s, true))
                .sum::<f64>();
        assert!((spent - 1.0).abs() < 1e-12, "{spent}");
        // A record written before the planned look: 1 / L each.
        let old = Rule {
            planned: 0,
            planned_share: 0.0,
            ..r
        };
        assert!((old.weight(3, false) - 1.0 / 15.0).abs() < 1e-15);
    }

    #[test]
    fn a_deterministic_difference_stops_at_its_planned_look() {
        let r = rule();
        assert!((r.boundary - 0.01).abs() < 1e-12);
        assert_eq!(r.planned, 5);
        // Before the planned look nothing is spent: 4 of 4 against 0 of 4
        // goes on.
        let look = decide(&r, at(4, 4, false), "alone", (4, 4), (0, 4), false);
        assert_eq!((look.decision, look.spent_p), (Decision::Continue, 1.0));
        // 5 of 5 against 0 of 5 at the planned look: p = 1 / 252, spent
        // p / 0.75 = 0.0053 ≤ 0.01.
        let look = decide(&r, at(5, 5, false), "alone", (5, 5), (0, 5), false);
        assert_eq!(look.decision, Decision::Differs);
        assert!(look.planned);
        assert!((look.spent_p - (1.0 / 252.0) / 0.75).abs() < 1e-12);
        // The same counts the other way round are no evidence for a
        // candidate the screen saw fail more in the cell...
        let look = decide(&r, at(5, 5, false), "alone", (0, 5), (5, 5), false);
        assert_eq!(look.decision, Decision::Continue);
        // ...and decide one the screen saw pass more in the cell.
        let healed = At {
            fails_more: false,
            ..at(5, 5, false)
        };
        let look = decide(&r, healed, "alone", (0, 5), (5, 5), false);
        assert_eq!(look.decision, Decision::Differs);
        // After the planned look each look spends 0.25 / 5: 6 of 6 (p =
        // 1 / 924, spent 0.022) goes on, 7 of 7 (spent 0.0058) differs.
        let look = decide(&r, at(6, 6, true), "alone", (6, 6), (0, 6), false);
        assert_eq!(look.decision, Decision::Continue);
        let look = decide(&r, at(7, 7, true), "alone", (7, 7), (0, 7), false);
        assert_eq!(look.decision, Decision::Differs);
        assert!((look.spent_p - (1.0 / 3432.0) / 0.05).abs() < 1e-12);
    }

    #[test]
    fn a_chance_flip_is_cleared_not_confirmed() {
        let r = rule();
        // 0 of 8 against 0 of 8: the bound 1-0.05^(1/8) = 0.312 is not below 0.3.
        assert_eq!(
            decide(&r, at(8, 8, true), "alone", (0, 8), (0, 8), false).decision,
            Decision::Continue
        );
        // 0 of 9: 0.283 < 0.3.
        assert_eq!(
            decide(&r, at(9, 9, true), "alone", (0, 9), (0, 9), false).decision,
            Decision::Cleared
        );
    }

    #[test]
    fn a_test_that_never_fails_alone_climbs_after_three_pairs() {
        let r = rule();
        assert_eq!(
            decide(&r, at(2, 2, false), "alone", (0, 2), (0, 2), true).decision,
            Decision::Continue
        );
        assert_eq!(
            decide(&r, at(3, 3, false), "alone", (0, 3), (0, 3), true).decision,
            Decision::Climb
        );
        // Not when it failed alone, nor once climbed.
        assert_eq!(
            decide(&r, at(3, 3, false), "alone", (1, 3), (0, 3), true).decision,
            Decision::Continue
        );
        assert_eq!(
            decide(&r, at(6, 3, false), "neighbours", (0, 3), (0, 3), false).decision,
            Decision::Continue
        );
        // A climb starts a new stage whose planned look still spends its
        // share: 5 of 5 against 0 of 5 five pairs after the climb differs.
        let look = decide(&r, at(8, 5, false), "neighbours", (5, 5), (0, 5), false);
        assert_eq!(look.decision, Decision::Differs);
    }

    #[test]
    fn a_baseline_that_changes_under_the_selection_climbs_before_any_verdict() {
        let r = rule();
        // The brittle test: passed at baseline in the screen, fails alone.
        let (look, why) = look_at(
            &r,
            at(1, 1, false),
            Level::Alone,
            (1, 1),
            (1, 1),
            (0, 1),
            true,
            true,
        );
        assert_eq!(look.decision, Decision::Climb);
        assert_eq!(
            why.as_deref(),
            Some("its baseline arm failed 1 of 1 where the screen's baseline failed 0 of 1")
        );
        // It failed every time at baseline in the screen and passes here.
        let (look, _) = look_at(
            &r,
            at(2, 2, false),
            Level::Alone,
            (2, 2),
            (1, 2),
            (3, 3),
            true,
            false,
        );
        assert_eq!(look.decision, Decision::Climb);
        // Reproduced: an ordinary look.
        let (look, why) = look_at(
            &r,
            at(7, 7, true),
            Level::Neighbours,
            (7, 7),
            (0, 7),
            (0, 1),
            true,
            true,
        );
        assert_eq!((look.decision, why), (Decision::Differs, None));
        // At the widest selection a broken baseline holds any verdict back,
        // and the look is no evidence for Holm either.
        let (look, why) = look_at(
            &r,
            at(7, 7, true),
            Level::Whole,
            (7, 7),
            (1, 7),
            (0, 1),
            false,
            false,
        );
        assert_eq!((look.decision, look.spent_p), (Decision::Continue, 1.0));
        assert!(look.p < 0.01, "{}", look.p);
        assert!(why.unwrap().ends_with("even with the whole command"));
        // A mixed baseline is compared by Fisher's test.
        assert!(baseline_reproduces((1, 2), (2, 4), 0.05).is_ok());
        assert!(baseline_reproduces((1, 10), (10, 10), 0.05).is_err());
    }

    #[test]
    fn ladders_start_where_the_cell_kind_says() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("tests")).unwrap();
        std::fs::write(dir.path().join("tests/test_a.py"), "").unwrap();
        let levels = |kind| {
            ladder(
                IdFrom::Pytest,
                "tests.test_a::test_b",
                dir.path(),
                true,
                kind,
                None,
            )
            .into_iter()
            .map(|s| (s.level, s.id))
            .collect::<Vec<_>>()
        };
        let file = Some("tests/test_a.py".to_string());
        assert_eq!(
            levels(CellKind::Fixed),
            [
                (Level::Alone, Some("tests/test_a.py::test_b".into())),
                (Level::Neighbours, file.clone()),
                (Level::Whole, None)
            ]
        );
        assert_eq!(
            levels(CellKind::Concurrent),
            [(Level::Neighbours, file), (Level::Whole, None)]
        );
        assert_eq!(levels(CellKind::Shuffled), [(Level::Whole, None)]);
        assert!(start_reason(CellKind::Shuffled, Some(9), false)
            .unwrap()
            .contains("replays seed 9"));
        assert_eq!(start_reason(CellKind::Fixed, None, false), None);
    }

    #[test]
    fn a_shuffle_candidate_replays_the_order_that_flipped_it_not_its_seed() {
        let dir = tempfile::tempdir().unwrap();
        let ids = |v: &[&str]| v.iter().map(|t| t.to_string()).collect::<Vec<_>>();
        let orders = FlipOrders {
            flip: ids(&["m1::x", "m2::p", "m1::y", "m2::v", "m2::q"]),
            baseline: ids(&["m1::x", "m1::y", "m2::v", "m2::p", "m2::q"]),
        };
        let got = ladder(
            IdFrom::Junit,
            "m2::v",
            dir.path(),
            true,
            CellKind::Shuffled,
            Some(&orders),
        );
        let levels: Vec<Level> = got.iter().map(|s| s.level).collect();
        assert_eq!(
            levels,
            [Level::OrderedFile, Level::OrderedPrefix, Level::Whole]
        );
        // Its file's predecessors in the flipping order, then it; the
        // baseline arm its predecessors in the baseline's run.
        let file = got[0].order.as_ref().unwrap();
        assert_eq!(file.cell, ids(&["m2::p", "m2::v"]));
        assert_eq!(file.baseline, ids(&["m2::v"]));
        let prefix = got[1].order.as_ref().unwrap();
        assert_eq!(prefix.cell, ids(&["m1::x", "m2::p", "m1::y", "m2::v"]));
        assert_eq!(prefix.baseline, ids(&["m1::x", "m1::y", "m2::v"]));
        // First in its file: the file cannot hold what flipped it.
        let first = ladder(
            IdFrom::Junit,
            "m1::y",
            dir.path(),
            true,
            CellKind::Shuffled,
            Some(&FlipOrders {
                flip: ids(&["m2::p", "m1::y"]),
                baseline: ids(&["m1::y", "m2::p"]),
            }),
        );
        let levels: Vec<Level> = first.iter().map(|s| s.level).collect();
        assert_eq!(levels, [Level::OrderedPrefix, Level::Whole]);
    }

    #[test]
    fn candidates_that_do_not_interfere_share_an_invocation() {
        let e = |i, id: Option<&str>, seed| (i, id.map(String::from), seed);
        let got = batches(
            &[
                e(0, Some("a.py::t1"), None),
                e(1, Some("b.py::t2"), None),
                // Inside another candidate's file: never beside a test alone.
                e(2, Some("a.py"), None),
                e(3, Some("a.py"), None),
                e(4, None, Some(5)),
                e(5, None, Some(5)),
                e(6, None, Some(6)),
            ],
            true,
        );
        let members: Vec<Vec<usize>> = got.iter().map(|b| b.members.clone()).collect();
        assert_eq!(members, [vec![0, 1], vec![2, 3], vec![4, 5], vec![6]]);
        assert_eq!(got[0].ids, ["a.py::t1", "b.py::t2"]);
        assert_eq!(got[1].ids, ["a.py"]);
        assert_eq!(got[2].ids, Vec::<String>::new());
        // A recipe that selects one id per run: only equal selections share.
        let one = batches(
            &[
                e(0, Some("x"), None),
                e(1, Some("y"), None),
                e(2, Some("x"), None),
            ],
            false,
        );
        let members: Vec<Vec<usize>> = one.iter().map(|b| b.members.clone()).collect();
        assert_eq!(members, [vec![0, 2], vec![1]]);
    }

    #[test]
    fn the_adaptive_screen_runs_again_only_where_one_run_cannot_tell() {
        assert_eq!(rescreen(false, 3), None);
        assert!(rescreen(false, 0).is_some());
        assert!(rescreen(true, 3).is_some());
    }

    #[test]
    fn pytest_node_ids_come_from_the_file_the_classname_names() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("tests")).unwrap();
        std::fs::write(dir.path().join("tests/test_a.py"), "").unwrap();
        let d = dir.path();
        assert_eq!(
            runner_id(IdFrom::Pytest, "tests.test_a::test_b[1]", d).as_deref(),
            Some("tests/test_a.py::test_b[1]")
        );
        assert_eq!(
            runner_id(IdFrom::Pytest, "tests.test_a.TestC::test_d", d).as_deref(),
            Some("tests/test_a.py::TestC::test_d")
        );
        assert_eq!(runner_id(IdFrom::Pytest, "nope.mod::t", d), None);
        assert_eq!(
            neighbours_id(IdFrom::Pytest, "tests.test_a::test_b", d).as_deref(),
            Some("tests/test_a.py")
        );
        assert_eq!(
            runner_id(IdFrom::Name, "pkg::TestX", d).as_deref(),
            Some("TestX")
        );
        assert_eq!(neighbours_id(IdFrom::Name, "pkg::TestX", d), None);
        assert_eq!(
            neighbours_id(IdFrom::Junit, "mod_25::t", d).as_deref(),
            Some("mod_25")
        );
    }

    #[test]
    fn the_fixed_design_needs_more_runs_the_more_pairs_it_corrects_for() {
        // 2 / C(2n, n) ≤ 0.05 / 6000 first at n = 11.
        assert_eq!(fixed_runs_needed(&[(1.0, 0.0)], 6000, 0.95), Some(11));
        assert!(fixed_runs_needed(&[(1.0, 0.0)], 60, 0.95).unwrap() < 11);
        assert!(fixed_runs_needed(&[(1.0, 0.0), (0.95, 0.0)], 6000, 0.95).unwrap() > 11);
        assert_eq!(fixed_runs_needed(&[], 6000, 0.95), None);
    }
}
