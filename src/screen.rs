//! The screen-then-confirm design's records, pure: the candidates, the
//! sequential rule's parameters and the error it spends, each look and
//! confirmation as stored (a [`ScreenRecord`] per screened session, joined
//! from shards by [`shard`]), how a runner names a test it selects, and how
//! many runs the fixed design would have needed for the same verdicts. The
//! rules that fill them (what a look decides, the ladders, the packing into
//! invocations) sit beside the design's driver, in `design/screen/rules.rs`.
//!
//! Error spending: a candidate gets at most `L` looks (one per confirmation
//! pair), each with Fisher's one-sided p in the direction the screen saw.
//! A look spends a weight of the error ([`Rule::weight`]): most of it at
//! the planned look (the stage's pair at which a complete separation first
//! reaches the boundary), a fixed share at the last look the cap allows
//! (where a partial difference, a test failing in half the runs, is
//! decided), the little left evenly over the looks between, so the
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
    /// The first screen run in which it failed in the cell (a later
    /// round's included): where `flakelab bisect` starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flip_run: Option<String>,
    /// A collision under a concurrency cell: the other tests whose failures
    /// there name the same kind of contested resource (`contests`). The
    /// candidate stands for them all: a run counts as failing when any of
    /// `test` and its partners failed in it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partners: Vec<String>,
    /// What a collision's failures name that separate processes contest
    /// (`a port`, `a path`, `a lock`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contests: Option<String>,
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
    /// over the looks after it (the last one's `final_share`, the others'
    /// evenly).
    #[serde(default)]
    pub planned_share: f64,
    /// The share of the error the last look the cap allows spends (look
    /// `looks`), on top of whatever else it spends: what a partial
    /// difference is decided on. 0 in records written before it, whose
    /// looks after the planned one shared the rest evenly.
    #[serde(default)]
    pub final_share: f64,
}

/// The share of the error a candidate's planned look spends.
pub const PLANNED_SHARE: f64 = 0.75;

/// The share of the error the last look the cap allows spends (of the
/// `1 − PLANNED_SHARE` left after the planned look): a test failing in
/// half its cell runs and none at baseline is decided there at the default
/// cap, where an even spread over every look left it undecided.
pub const FINAL_SHARE: f64 = 0.2;

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
            final_share: FINAL_SHARE.min(1.0 - planned_share),
        }
    }

    /// The share of the error look `pair` spends: `stage_pairs` pairs into
    /// its stage, `planned_taken` when an earlier look of the candidate was
    /// its planned look. Until then only a stage's planned pair spends (its
    /// `planned_share`; a climb starts a new stage before any planned look
    /// was taken, so its weight is still unspent); after it every look but
    /// the last spends an equal part of what the last does not. The last
    /// look the cap allows (`pair == looks`) adds `final_share`. Along any
    /// path a candidate takes the weights sum to at most 1, so the smallest
    /// p / weight over its looks is a valid p-value (Bonferroni with
    /// unequal weights).
    pub fn weight(&self, pair: u32, stage_pairs: u32, planned_taken: bool) -> f64 {
        if self.planned == 0 {
            return 1.0 / f64::from(self.looks);
        }
        let last = match pair == self.looks {
            true => self.final_share,
            false => 0.0,
        };
        if !planned_taken {
            return last
                + match stage_pairs == self.planned {
                    true => self.planned_share,
                    false => 0.0,
                };
        }
        // Looks strictly between the planned one and the last: at most
        // `looks − planned − 1` of them on any path (a rule without a final
        // share spreads over the last look too).
        let between = match self.final_share > 0.0 {
            true => self.looks.saturating_sub(self.planned + 1),
            false => self.looks.saturating_sub(self.planned),
        };
        let rest = 1.0 - self.planned_share - self.final_share;
        match (pair == self.looks && self.final_share > 0.0, between > 0) {
            (true, _) => last,
            (false, true) => rest.max(0.0) / f64::from(between),
            (false, false) => 0.0,
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

impl Candidate {
    /// The tests it counts: its own, then its partners' (a collision).
    pub fn tests(&self) -> Vec<&str> {
        let mut out = vec![self.test.as_str()];
        out.extend(self.partners.iter().map(String::as_str));
        out
    }

    /// Whether the screen saw the test fail more often in the cell than at
    /// baseline.
    pub fn fails_more(&self) -> bool {
        let ((k, n), (bk, bn)) = (self.screen_cell, self.screen_baseline);
        k * bn > bk * n
    }
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

pub use crate::record::schema::SCREEN_SCHEMA;

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

/// A screened session's record, its pending screen and each shard's part
/// are kept apart ([`shard::join`] joins them).
impl crate::store::Keyed for ScreenRecord {
    fn key(&self) -> std::borrow::Cow<'_, str> {
        ScreenRecord::key(self)
    }
}

impl crate::store::DesignRecord for ScreenRecord {
    const FILE: &'static str = crate::store::SCREENS_FILE;
    fn session(&self) -> &str {
        &self.session
    }
}

/// The screen's records in the store.
impl crate::store::Store {
    /// Appends one record to `screens.jsonl` and flushes it.
    pub fn append_screen(&self, record: &ScreenRecord) -> crate::error::Result<()> {
        self.append_record(record)
    }

    /// The screen design's confirmations of `session`, if it was screened:
    /// a sharded confirmation stage's parts joined (`shard::join`).
    pub fn screen_of(&self, session: &str) -> crate::error::Result<Option<ScreenRecord>> {
        Ok(shard::join(self.screen_records_of(session)?))
    }

    /// Every record `screens.jsonl` holds for `session`, in file order, as
    /// written: a whole record, or a pending screen and shards' parts.
    pub fn screen_records_of(&self, session: &str) -> crate::error::Result<Vec<ScreenRecord>> {
        self.records_of(session)
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
    /// Confirmation runs per candidate (both arms) that even a complete
    /// separation needs at this rule's boundary ([`runs_needed_each`]).
    pub runs_needed_each: u64,
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

/// The runs per arm at which the screen design's rule can decide a
/// candidate whose arms fail at `cell_rate` and `base_rate` (the expected
/// counts, rounded), with the cap set there: the first N whose one-sided
/// Fisher p reaches the `boundary` (`alpha / m`) times what that cap's
/// looks spend. A complete separation is decided at its planned look
/// (`PLANNED_SHARE`; with a cap of N pairs the rule's last look spends the
/// whole error when no earlier look was planned, so this is exact); a
/// partial difference, whose looks are not planned for, at the last look
/// the cap allows (`FINAL_SHARE` once a planned look comes before it, the
/// whole error when none does). None when the rates are equal or more
/// than 10,000 runs would be needed.
pub fn runs_to_decide(cell_rate: f64, base_rate: f64, boundary: f64) -> Option<u64> {
    if cell_rate == base_rate || boundary.is_nan() || boundary <= 0.0 {
        return None;
    }
    let more = cell_rate > base_rate;
    let complete = (cell_rate - base_rate).abs() >= 1.0;
    // The first pair at which a complete separation reaches the boundary
    // with the planned look's share: a cap above it plans a look there.
    let planned = (1..=10_000u32).find(|&n| separation_p(n) <= boundary * PLANNED_SHARE);
    let decides = |n: u64| {
        let kc = ((cell_rate * n as f64).round() as u64).min(n);
        let kb = ((base_rate * n as f64).round() as u64).min(n);
        let share = match (complete, planned) {
            (true, _) => PLANNED_SHARE,
            (false, Some(p)) if u64::from(p) < n => FINAL_SHARE,
            (false, _) => 1.0,
        };
        kc != kb && stats::fisher_one_sided(kc, n - kc, kb, n - kb, more) <= boundary * share
    };
    (1..=10_000u64).find(|&n| decides(n))
}

/// The confirmation runs per candidate (both arms) that even a complete
/// separation (every cell run failing, no baseline run) needs before the
/// rule at `boundary` can decide it: below this cap every candidate is
/// left undecided.
pub fn runs_needed_each(boundary: f64) -> u64 {
    2 * runs_to_decide(1.0, 0.0, boundary).unwrap_or(10_000)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn the_runs_a_candidate_needs_grow_with_the_candidates() {
        // Two candidates: 1 / C(2n, n) ≤ 0.025 first at n = 4 (1/70; 1/20 at 3).
        assert_eq!(runs_to_decide(1.0, 0.0, 0.025), Some(4));
        assert_eq!(runs_needed_each(0.025), 8);
        // Nine: 0.05 / 9 = 0.0056; 1/70 at n = 4 is not, 1/252 at 5 is.
        assert_eq!(runs_needed_each(0.05 / 9.0), 10);
        assert!(separation_p(4) > 0.05 / 9.0);
        // The rule at those caps decides a complete separation (its last
        // look, unplanned before, spends the whole error), and one pair
        // fewer does not.
        for (m, pairs) in [(2, 4), (9, 5)] {
            let rule = Rule::new(m, pairs, 0.95, 0.3);
            let spent = separation_p(rule.planned) / rule.weight(rule.planned, rule.planned, false);
            assert!(spent <= rule.boundary, "{m} {pairs}: {rule:?}");
            let short = Rule::new(m, pairs - 1, 0.95, 0.3);
            let spent =
                separation_p(short.planned) / short.weight(short.planned, short.planned, false);
            assert!(spent > short.boundary, "{m} {pairs}: {short:?}");
        }
        // The reverse direction and a partial difference.
        assert_eq!(runs_to_decide(0.0, 1.0, 0.025), Some(4));
        let half = runs_to_decide(0.5, 0.0, 0.05 / 9.0).unwrap();
        assert!(half > 5, "{half}");
        assert_eq!(runs_to_decide(0.3, 0.3, 0.05), None);
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
