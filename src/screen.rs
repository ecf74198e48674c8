//! The screen-then-confirm design, pure: which (test, cell) pairs the screen
//! makes candidates, the sequential rule that decides a candidate from its
//! confirmation runs, how a runner names a test it selects, and how many
//! runs the fixed design would have needed for the same verdicts.
//!
//! Error spending: a candidate gets at most `L` looks (one per confirmation
//! pair); each look's two-sided Fisher p is multiplied by `L` (Bonferroni
//! over looks), so the minimum over looks is a valid p-value however early
//! the candidate stops. A candidate stops as "differs" once that p is at or
//! below `alpha / m` (m candidates), which Holm over the candidates rejects
//! whatever the others do; Holm over every candidate's final p decides the
//! rest.

use std::path::Path;

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
    /// Looks (confirmation pairs) a candidate may take: the Bonferroni factor.
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
}

impl Rule {
    /// The rule for `m` candidates, at most `looks` looks each.
    pub fn new(m: usize, looks: u32, confidence: f64, clear_below: f64) -> Rule {
        Rule {
            looks: looks.max(1),
            boundary: (1.0 - confidence) / m.max(1) as f64,
            clear_below,
            confidence,
            climb_after: 3,
        }
    }
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
    /// Fisher's two-sided p.
    pub p: f64,
    /// p spent over the looks (`p × L`, at most 1).
    pub spent_p: f64,
    /// What it decided.
    pub decision: Decision,
}

/// Decides one look from the stage's counts. `may_climb`: the candidate is
/// still alone and the screen saw it fail in the cell.
pub fn decide(
    rule: &Rule,
    pair: u32,
    stage_pairs: u32,
    stage: &'static str,
    cell: (u64, u64),
    baseline: (u64, u64),
    may_climb: bool,
) -> Look {
    let (kc, nc) = cell;
    let (kb, nb) = baseline;
    let p = if nc > 0 && nb > 0 {
        stats::fisher_exact(kc, nc - kc, kb, nb - kb)
    } else {
        1.0
    };
    let spent_p = (p * f64::from(rule.looks)).min(1.0);
    let decision = if spent_p <= rule.boundary {
        Decision::Differs
    } else if may_climb && stage_pairs >= rule.climb_after && kc == 0 && kb == 0 {
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
        pair,
        stage: stage.to_string(),
        cell,
        baseline,
        p,
        spent_p,
        decision,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn rule() -> Rule {
        Rule::new(5, 10, 0.95, 0.3)
    }

    #[test]
    fn a_deterministic_difference_stops_as_soon_as_its_spent_p_reaches_the_boundary() {
        let r = rule();
        assert!((r.boundary - 0.01).abs() < 1e-12);
        // 6 of 6 against 0 of 6: p = 2/C(12,6) = 0.00216, spent 0.0216 > 0.01.
        let look = decide(&r, 6, 6, "alone", (6, 6), (0, 6), false);
        assert_eq!(look.decision, Decision::Continue);
        // 7 of 7 against 0 of 7: p = 5.8e-4, spent 5.8e-3 ≤ 0.01.
        let look = decide(&r, 7, 7, "alone", (7, 7), (0, 7), false);
        assert_eq!(look.decision, Decision::Differs);
        assert!((look.spent_p - 10.0 * 2.0 / 3432.0).abs() < 1e-12);
    }

    #[test]
    fn a_chance_flip_is_cleared_not_confirmed() {
        let r = rule();
        // 0 of 8 against 0 of 8: the bound 1-0.05^(1/8) = 0.312 is not below 0.3.
        assert_eq!(
            decide(&r, 8, 8, "alone", (0, 8), (0, 8), false).decision,
            Decision::Continue
        );
        // 0 of 9: 0.283 < 0.3.
        assert_eq!(
            decide(&r, 9, 9, "alone", (0, 9), (0, 9), false).decision,
            Decision::Cleared
        );
    }

    #[test]
    fn a_test_that_never_fails_alone_climbs_after_three_pairs() {
        let r = rule();
        assert_eq!(
            decide(&r, 2, 2, "alone", (0, 2), (0, 2), true).decision,
            Decision::Continue
        );
        assert_eq!(
            decide(&r, 3, 3, "alone", (0, 3), (0, 3), true).decision,
            Decision::Climb
        );
        // Not when it failed alone, nor once climbed.
        assert_eq!(
            decide(&r, 3, 3, "alone", (1, 3), (0, 3), true).decision,
            Decision::Continue
        );
        assert_eq!(
            decide(&r, 6, 3, "neighbours", (0, 3), (0, 3), false).decision,
            Decision::Continue
        );
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
