//! Per-test rows of a report: each test's k of N in each cell from the runs'
//! JUnit data, its interval, and Fisher against the same test at baseline,
//! Holm-adjusted across every (test, cell) pair compared. Pure.

use std::collections::BTreeMap;

use serde::Serialize;

use super::VsBaseline;
use crate::record::{Outcome, RunRecord, TestOutcome};
use crate::stats;

/// What a test's row in a cell amounts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TestStatus {
    /// Ran and passed or failed at least once: k of N applies.
    Measured,
    /// Failed in every run that ran it.
    AlwaysFails,
    /// Skipped in every run that reported it.
    AlwaysSkipped,
    /// Absent from every report of this cell.
    NeverRan,
}

/// How often one failure signature was seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SignatureCount {
    /// The normalised signature.
    pub signature: String,
    /// Failures with it.
    pub count: u64,
}

/// One test in one cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TestRow {
    /// Stable test id.
    pub id: String,
    /// Family id (parameters stripped).
    pub family: String,
    /// Runs in which the test passed or failed.
    pub n: u64,
    /// Failures counted (matching `--signature` when one is given).
    pub k: u64,
    /// Runs in which it was skipped.
    pub skipped: u64,
    /// Runs with per-test data that did not report the test at all.
    pub absent: u64,
    /// Failures that did not match `--signature`.
    pub other_failures: u64,
    /// Failures whose retry passed (k still counts them).
    pub passed_on_rerun: u64,
    /// k / n.
    pub rate: f64,
    /// Lower end of the interval.
    pub low: f64,
    /// Upper end (for k = 0, the one-sided bound).
    pub high: f64,
    /// What the row amounts to.
    pub status: TestStatus,
    /// Against the same test at baseline.
    pub vs_baseline: Option<VsBaseline>,
    /// The sham cell its cell is compared with, when the test ran there.
    pub sham: Option<String>,
    /// Against the same test in that sham cell.
    pub vs_sham: Option<VsBaseline>,
    /// Failures grouped by signature, most frequent first.
    pub signatures: Vec<SignatureCount>,
    /// The first run (in plan order) where it failed.
    pub first_failure: Option<String>,
    /// `--design screen`: the stage its verdict rests on (`screen`: not a
    /// candidate; `confirm`: the confirmation runs, counted in n and k).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage: Option<&'static str>,
    /// `--design screen`: runs its verdict rests on (both arms of the
    /// confirmation, or the screen's runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<u64>,
    /// `--design screen`: the decision boundary its spent p was held to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boundary: Option<f64>,
    /// `--design screen`: the confirmation's verdict in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// `--design screen`: every look the confirmation took.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub looks: Vec<crate::screen::Look>,
}

#[derive(Default)]
struct Tally {
    family: String,
    n: u64,
    k: u64,
    skipped: u64,
    seen: u64,
    other: u64,
    rerun: u64,
    signatures: BTreeMap<String, u64>,
    first_failure: Option<String>,
}

/// Counts signatures, most frequent first (ties by text).
pub fn group_signatures<'a>(sigs: impl Iterator<Item = &'a str>) -> Vec<SignatureCount> {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for s in sigs {
        *counts.entry(s.to_string()).or_default() += 1;
    }
    sorted_counts(counts)
}

fn sorted_counts(counts: BTreeMap<String, u64>) -> Vec<SignatureCount> {
    let mut out: Vec<SignatureCount> = counts
        .into_iter()
        .map(|(signature, count)| SignatureCount { signature, count })
        .collect();
    out.sort_by(|a, b| b.count.cmp(&a.count).then(a.signature.cmp(&b.signature)));
    out
}

/// The rows of one cell from its runs (counted runs with per-test data).
pub fn rows(runs: &[&RunRecord], confidence: f64, counting_signature: bool) -> Vec<TestRow> {
    let with_data: Vec<&&RunRecord> = runs
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Pass | Outcome::Fail) && !r.tests.is_empty())
        .collect();
    let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
    for run in &with_data {
        for t in &run.tests {
            let tally = tallies.entry(t.id.clone()).or_default();
            tally.family = t.family().to_string();
            tally.seen += 1;
            match t.outcome {
                TestOutcome::Skip => tally.skipped += 1,
                TestOutcome::Pass => tally.n += 1,
                TestOutcome::Fail | TestOutcome::Error => {
                    tally.n += 1;
                    if counting_signature && t.signature_match != Some(true) {
                        tally.other += 1;
                    } else {
                        tally.k += 1;
                        if tally.first_failure.is_none() {
                            tally.first_failure = Some(run.id.clone());
                        }
                    }
                    if t.passed_on_rerun {
                        tally.rerun += 1;
                    }
                    if let Some(sig) = &t.signature {
                        *tally.signatures.entry(sig.clone()).or_default() += 1;
                    }
                }
            }
        }
    }
    let total = with_data.len() as u64;
    tallies
        .into_iter()
        .map(|(id, t)| {
            let p = stats::proportion(t.k, t.n, confidence);
            let status = if t.n == 0 && t.skipped > 0 {
                TestStatus::AlwaysSkipped
            } else if t.n == 0 {
                TestStatus::NeverRan
            } else if t.k + t.other == t.n {
                TestStatus::AlwaysFails
            } else {
                TestStatus::Measured
            };
            let signatures = sorted_counts(t.signatures);
            TestRow {
                id,
                family: t.family,
                n: t.n,
                k: t.k,
                skipped: t.skipped,
                absent: total - t.seen,
                other_failures: t.other,
                passed_on_rerun: t.rerun,
                rate: p.rate,
                low: p.low,
                high: p.high,
                status,
                vs_baseline: None,
                sham: None,
                vs_sham: None,
                signatures,
                first_failure: t.first_failure,
                stage: None,
                runs: None,
                boundary: None,
                verdict: None,
                looks: Vec::new(),
            }
        })
        .collect()
}

/// A test that the baseline never reported is compared as if absent there:
/// every non-baseline cell row is paired with the baseline row of its id.
/// Fisher per pair, Holm across all pairs, then each cell's rows are sorted
/// with differing tests first.
pub fn compare(cells: &mut [Vec<TestRow>], baseline: usize, confidence: f64) {
    let base: BTreeMap<String, (u64, u64)> = cells[baseline]
        .iter()
        .map(|r| (r.id.clone(), (r.k, r.n)))
        .collect();
    let mut pairs = Vec::new();
    let mut raw = Vec::new();
    for (ci, rows) in cells.iter().enumerate() {
        if ci == baseline {
            continue;
        }
        for (ri, row) in rows.iter().enumerate() {
            if let Some(&(bk, bn)) = base.get(&row.id) {
                if row.n > 0 && bn > 0 {
                    pairs.push((ci, ri));
                    raw.push(stats::fisher_exact(row.k, row.n - row.k, bk, bn - bk));
                }
            }
        }
    }
    let adjusted = stats::holm(&raw);
    let alpha = 1.0 - confidence;
    for ((&(ci, ri), &p), &adj) in pairs.iter().zip(&raw).zip(&adjusted) {
        cells[ci][ri].vs_baseline = Some(VsBaseline {
            fisher_p: p,
            adjusted_p: adj,
            differs: adj < alpha,
        });
    }
    for rows in cells.iter_mut() {
        rows.sort_by(|a, b| {
            let key = |r: &TestRow| {
                let differs = r.vs_baseline.as_ref().is_some_and(|v| v.differs);
                let p = r.vs_baseline.as_ref().map_or(1.0, |v| v.adjusted_p);
                (!differs, r.k == 0, p)
            };
            let (ka, kb) = (key(a), key(b));
            ka.0.cmp(&kb.0)
                .then(ka.1.cmp(&kb.1))
                .then(ka.2.total_cmp(&kb.2))
                .then(b.k.cmp(&a.k))
                .then(a.id.cmp(&b.id))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::TestRecord;

    fn run(id: &str, tests: &[(&str, TestOutcome, Option<bool>)]) -> RunRecord {
        let mut r: RunRecord = serde_json::from_value(serde_json::json!({
            "schema": "flakelab.run/1", "id": id, "session": "s", "index": 0, "cell": "c",
            "perturbations": [], "replicate": 0, "seed": 1, "started_at": "", "duration_s": 0.0,
            "outcome": "pass", "end": {"how": "exited", "code": 0}, "exit_code": 0, "signal": null,
            "signature_match": null, "reason": null, "log": null, "output_bytes": 0,
            "output_dropped": 0, "argv": [], "cwd": "/", "env": {"set": {}, "unset": []},
            "repro": "", "stragglers": 0, "warnings": []
        }))
        .unwrap();
        r.tests = tests
            .iter()
            .map(|(tid, o, m)| TestRecord {
                id: tid.to_string(),
                family: None,
                outcome: *o,
                passed_on_rerun: false,
                retries: 0,
                signature: matches!(o, TestOutcome::Fail).then(|| "boom <n>".to_string()),
                message: None,
                signature_match: *m,
            })
            .collect();
        r
    }

    #[test]
    fn rows_count_first_attempts_and_classify() {
        use TestOutcome::*;
        let runs = [
            run(
                "r1",
                &[("a", Fail, None), ("b", Skip, None), ("c", Pass, None)],
            ),
            run(
                "r2",
                &[("a", Fail, None), ("b", Skip, None), ("c", Fail, None)],
            ),
            run("r3", &[("a", Fail, None), ("b", Skip, None)]),
        ];
        let refs: Vec<&RunRecord> = runs.iter().collect();
        let rows = rows(&refs, 0.95, false);
        let get = |id: &str| rows.iter().find(|r| r.id == id).unwrap();
        assert_eq!(
            (get("a").k, get("a").n, get("a").status),
            (3, 3, TestStatus::AlwaysFails)
        );
        assert_eq!(
            get("a").signatures,
            [SignatureCount {
                signature: "boom <n>".into(),
                count: 3
            }]
        );
        assert_eq!(
            (get("b").n, get("b").skipped, get("b").status),
            (0, 3, TestStatus::AlwaysSkipped)
        );
        assert_eq!((get("c").k, get("c").n, get("c").absent), (1, 2, 1));
        assert_eq!(get("c").first_failure.as_deref(), Some("r2"));
    }

    #[test]
    fn signature_splits_k_from_other_failures() {
        use TestOutcome::*;
        let runs = [
            run("r1", &[("a", Fail, Some(true))]),
            run("r2", &[("a", Fail, Some(false))]),
            run("r3", &[("a", Pass, None)]),
        ];
        let refs: Vec<&RunRecord> = runs.iter().collect();
        let rows = rows(&refs, 0.95, true);
        assert_eq!((rows[0].k, rows[0].other_failures, rows[0].n), (1, 1, 3));
    }

    #[test]
    fn compare_marks_the_one_test_that_differs() {
        use TestOutcome::*;
        let base: Vec<RunRecord> = (0..10)
            .map(|i| run(&format!("b{i}"), &[("x", Pass, None), ("y", Pass, None)]))
            .collect();
        let cell: Vec<RunRecord> = (0..10)
            .map(|i| run(&format!("c{i}"), &[("x", Pass, None), ("y", Fail, None)]))
            .collect();
        let mut cells = vec![
            rows(&base.iter().collect::<Vec<_>>(), 0.95, false),
            rows(&cell.iter().collect::<Vec<_>>(), 0.95, false),
        ];
        compare(&mut cells, 0, 0.95);
        assert_eq!(cells[1][0].id, "y", "the differing test comes first");
        assert!(cells[1][0].vs_baseline.as_ref().unwrap().differs);
        assert!(!cells[1][1].vs_baseline.as_ref().unwrap().differs);
        assert!(cells[0][0].vs_baseline.is_none());
    }
}
