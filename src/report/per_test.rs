//! Per-test rows of a report: each test's k of N in each cell from the runs'
//! JUnit data, its interval, and Fisher against the same test at baseline,
//! Holm-adjusted across every (test, cell) pair compared; and its whole
//! outcome distribution (passed, failed, errored, skipped, timed out,
//! absent) against the baseline's, by the exact 2×C test, Holm-adjusted
//! across the pairs compared that way. Pure.

use std::collections::BTreeMap;

use serde::Serialize;

use super::VsBaseline;
use crate::record::{Outcome, RunRecord, TestOutcome};
use crate::stats::{self, ShiftMethod};

/// A test's outcomes over the runs of one cell that carried per-test data
/// (runs that passed, failed or timed out with a report).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Outcomes {
    /// Runs in which its first attempt passed.
    pub passed: u64,
    /// Runs in which its first attempt failed an assertion.
    pub failed: u64,
    /// Runs in which its first attempt errored.
    pub errored: u64,
    /// Runs in which it was skipped.
    pub skipped: u64,
    /// Runs that timed out before it reported (their partial report does
    /// not list it).
    pub timed_out: u64,
    /// Runs that finished with a report that does not list it.
    pub absent: u64,
}

impl Outcomes {
    /// The counts in a fixed order: passed, failed, errored, skipped,
    /// timed out, absent.
    pub fn counts(&self) -> [u64; 6] {
        [
            self.passed,
            self.failed,
            self.errored,
            self.skipped,
            self.timed_out,
            self.absent,
        ]
    }

    /// Runs counted.
    pub fn total(&self) -> u64 {
        self.counts().iter().sum()
    }

    /// `failed 3`, `passed 5, errored 3, skipped 2`: the non-zero counts.
    pub fn words(&self) -> String {
        let names = [
            "passed",
            "failed",
            "errored",
            "skipped",
            "timed out",
            "absent",
        ];
        let parts: Vec<String> = names
            .iter()
            .zip(self.counts())
            .filter(|(_, n)| *n > 0)
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        if parts.is_empty() {
            "no run".into()
        } else {
            parts.join(", ")
        }
    }
}

/// A test's outcome distribution in a cell against the same test's at
/// baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Shift {
    /// At baseline.
    pub from: Outcomes,
    /// In this cell.
    pub to: Outcomes,
    /// The exact 2×C test's two-sided p-value (the G-test's, for large
    /// tables: see `method`); Fisher's exact test when only two outcomes
    /// occur.
    pub fisher_p: f64,
    /// Holm-adjusted across every (test, cell) pair whose distributions
    /// were compared.
    pub adjusted_p: f64,
    /// Whether the adjusted p-value is below 1 − confidence.
    pub differs: bool,
    /// How `fisher_p` was computed.
    pub method: ShiftMethod,
}

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

/// How the failures of a cell or a test split over the `--signature`
/// patterns: each failure counts for the first pattern it matches, and one
/// that matches none is an *other failure* — a real failure, never green.
/// The parts add up to the failures (for a cell, to its failed runs plus
/// runs that passed on a retry and matched).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PatternSplit {
    /// Failures counted for each pattern, in the order the patterns were given.
    pub matched: Vec<u64>,
    /// Failures that matched no pattern.
    pub other: u64,
}

impl PatternSplit {
    /// A split with nothing counted yet, for `patterns` patterns; None
    /// without patterns.
    pub fn new(patterns: usize) -> Option<PatternSplit> {
        (patterns > 0).then(|| PatternSplit {
            matched: vec![0; patterns],
            other: 0,
        })
    }

    /// Counts one failure: for pattern `matched`, or as an other failure.
    /// A pattern index beyond the patterns (a damaged record) counts for
    /// the last one, so the parts still add up.
    pub fn add(&mut self, matched: Option<usize>) {
        match matched {
            Some(i) => {
                let last = self.matched.len() - 1;
                self.matched[i.min(last)] += 1;
            }
            None => self.other += 1,
        }
    }

    /// Failures that matched a pattern.
    pub fn matched_total(&self) -> u64 {
        self.matched.iter().sum()
    }
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
    /// With `--signature`: the failures per pattern and the other failures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by_pattern: Option<PatternSplit>,
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
    /// Its whole outcome distribution against the baseline's: a test that
    /// always failed there and is skipped here, or passed there and errors
    /// here, differs like a failure does. `None` for the baseline, and when
    /// either side has no run with per-test data.
    pub shift_vs_baseline: Option<Shift>,
    /// Its outcomes in this cell (shown through `shift_vs_baseline`).
    #[serde(skip)]
    pub outcomes: Outcomes,
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
    /// `--design screen`: a collision's partners, counted with it (a run
    /// failed when any of them failed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub partners: Vec<String>,
    /// A shuffle cell's differing row: the `flakelab bisect` command that
    /// finds what made it fail (`super::handover`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bisect: Option<String>,
}

impl TestRow {
    /// Whether the row differs from the baseline: its failures, or its
    /// outcome distribution.
    pub fn differs(&self) -> bool {
        self.vs_baseline.as_ref().is_some_and(|v| v.differs)
            || self.shift_vs_baseline.as_ref().is_some_and(|s| s.differs)
    }

    /// A row for a test the baseline reported and this cell never did.
    fn never_ran(id: &str, family: &str, outcomes: Outcomes) -> TestRow {
        TestRow {
            id: id.to_string(),
            family: family.to_string(),
            n: 0,
            k: 0,
            skipped: 0,
            absent: outcomes.absent,
            other_failures: 0,
            by_pattern: None,
            passed_on_rerun: 0,
            rate: 0.0,
            low: 0.0,
            high: 1.0,
            status: TestStatus::NeverRan,
            vs_baseline: None,
            sham: None,
            vs_sham: None,
            shift_vs_baseline: None,
            outcomes,
            signatures: Vec::new(),
            first_failure: None,
            stage: None,
            runs: None,
            boundary: None,
            verdict: None,
            looks: Vec::new(),
            partners: Vec::new(),
            bisect: None,
        }
    }
}

/// The runs of one cell that carried per-test data, for the outcome
/// distributions: how many finished, how many timed out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DataRuns {
    /// Runs that passed or failed with per-test data.
    pub finished: u64,
    /// Runs that timed out with a (partial) report.
    pub timed_out: u64,
}

impl DataRuns {
    /// The outcomes of a test none of these runs reported.
    fn unreported(self) -> Outcomes {
        Outcomes {
            absent: self.finished,
            timed_out: self.timed_out,
            ..Outcomes::default()
        }
    }

    fn total(self) -> u64 {
        self.finished + self.timed_out
    }
}

/// Each test's outcome distribution over a cell's runs with per-test data
/// (runs that passed, failed or timed out), and how many such runs there
/// were, from the runs all held at once: the reference [`TestsFold`] is
/// tested against.
pub fn outcomes(runs: &[&RunRecord]) -> (BTreeMap<String, Outcomes>, DataRuns) {
    let with_data: Vec<&&RunRecord> = runs
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Pass | Outcome::Fail | Outcome::Timeout))
        .filter(|r| !r.tests.is_empty())
        .collect();
    let mut data = DataRuns::default();
    let mut out: BTreeMap<String, Outcomes> = BTreeMap::new();
    for run in &with_data {
        for t in &run.tests {
            let o = out.entry(t.id.clone()).or_default();
            match t.outcome {
                TestOutcome::Pass => o.passed += 1,
                TestOutcome::Fail => o.failed += 1,
                TestOutcome::Error => o.errored += 1,
                TestOutcome::Skip => o.skipped += 1,
            }
        }
        if run.outcome == Outcome::Timeout {
            data.timed_out += 1;
        } else {
            data.finished += 1;
        }
    }
    // A run whose report does not list a test: absent from it, or, when
    // the run timed out, stopped before the test reported.
    for o in out.values_mut() {
        let reported = o.passed + o.failed + o.errored + o.skipped;
        o.absent = data.total() - reported;
    }
    for run in with_data.iter().filter(|r| r.outcome == Outcome::Timeout) {
        let listed: std::collections::BTreeSet<&str> =
            run.tests.iter().map(|t| t.id.as_str()).collect();
        for (id, o) in out.iter_mut() {
            if !listed.contains(id.as_str()) {
                o.absent -= 1;
                o.timed_out += 1;
            }
        }
    }
    (out, data)
}

#[derive(Debug, Default)]
struct Tally {
    family: String,
    /// The plan index of the run `family` was last read from.
    family_at: usize,
    /// The plan index of `first_failure`.
    first_at: usize,
    n: u64,
    k: u64,
    skipped: u64,
    seen: u64,
    other: u64,
    rerun: u64,
    signatures: BTreeMap<String, u64>,
    first_failure: Option<String>,
    /// With patterns: the failures per pattern and the other failures.
    by_pattern: Option<PatternSplit>,
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

/// The rows of one cell from its runs (counted runs with per-test data),
/// all held at once: the reference [`TestsFold`] is tested against.
/// `patterns`: how many `--signature` patterns the session counts (0: none).
pub fn rows(runs: &[&RunRecord], confidence: f64, patterns: usize) -> Vec<TestRow> {
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
                    let matched = t.matched_pattern();
                    if let Some(split) = tally.split(patterns) {
                        split.add(matched);
                    }
                    if patterns > 0 && matched.is_none() {
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
    finish_rows(tallies, with_data.len() as u64, confidence, patterns)
}

impl Tally {
    /// Its pattern split, made at the first failure it counts (None
    /// without patterns).
    fn split(&mut self, patterns: usize) -> Option<&mut PatternSplit> {
        if self.by_pattern.is_none() {
            self.by_pattern = PatternSplit::new(patterns);
        }
        self.by_pattern.as_mut()
    }
}

/// The rows from each test's tally over `total` runs with per-test data.
/// With `patterns`, every row has its pattern split.
fn finish_rows(
    tallies: BTreeMap<String, Tally>,
    total: u64,
    confidence: f64,
    patterns: usize,
) -> Vec<TestRow> {
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
                by_pattern: t.by_pattern.or_else(|| PatternSplit::new(patterns)),
                passed_on_rerun: t.rerun,
                rate: p.rate,
                low: p.low,
                high: p.high,
                status,
                vs_baseline: None,
                sham: None,
                vs_sham: None,
                shift_vs_baseline: None,
                outcomes: Outcomes::default(),
                signatures,
                first_failure: t.first_failure,
                stage: None,
                runs: None,
                boundary: None,
                verdict: None,
                looks: Vec::new(),
                partners: Vec::new(),
                bisect: None,
            }
        })
        .collect()
}

/// Compares each test's outcome distribution in each cell with the
/// baseline's (`data`: each cell's runs with per-test data; each row's
/// `outcomes` already set). A test the baseline reported and a cell never
/// did gets a `never_ran` row there; a test only a cell reported is absent
/// from every baseline run. The exact 2×C test per pair (both sides with
/// runs), Holm across all those pairs: its own family, beside the failure
/// comparison's.
pub fn compare_outcomes(
    cells: &mut [Vec<TestRow>],
    data: &[DataRuns],
    baseline: usize,
    confidence: f64,
) {
    let base_data = data[baseline];
    if base_data.total() == 0 {
        return;
    }
    let base: BTreeMap<String, (Outcomes, String)> = cells[baseline]
        .iter()
        .map(|r| (r.id.clone(), (r.outcomes, r.family.clone())))
        .collect();
    for (ci, rows) in cells.iter_mut().enumerate() {
        if ci == baseline || data[ci].total() == 0 {
            continue;
        }
        let seen: std::collections::BTreeSet<String> = rows.iter().map(|r| r.id.clone()).collect();
        for (id, (o, family)) in &base {
            if !seen.contains(id) && o.total() > o.absent {
                rows.push(TestRow::never_ran(id, family, data[ci].unreported()));
            }
        }
    }
    let mut pairs = Vec::new();
    let mut raw = Vec::new();
    let mut methods = Vec::new();
    for (ci, rows) in cells.iter().enumerate() {
        if ci == baseline || data[ci].total() == 0 {
            continue;
        }
        for (ri, row) in rows.iter().enumerate() {
            let from = base
                .get(&row.id)
                .map_or(base_data.unreported(), |(o, _)| *o);
            let (p, method) = stats::shift_test(&from.counts(), &row.outcomes.counts());
            pairs.push((ci, ri, from));
            raw.push(p);
            methods.push(method);
        }
    }
    let adjusted = stats::holm(&raw);
    let alpha = 1.0 - confidence;
    for (((&(ci, ri, from), &p), &adj), &method) in
        pairs.iter().zip(&raw).zip(&adjusted).zip(&methods)
    {
        let row = &mut cells[ci][ri];
        row.shift_vs_baseline = Some(Shift {
            from,
            to: row.outcomes,
            fisher_p: p,
            adjusted_p: adj,
            differs: adj < alpha,
            method,
        });
    }
    sort(cells);
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
    for ((&(ci, ri), &p), &adj) in pairs.iter().zip(&raw).zip(&adjusted) {
        let row = &mut cells[ci][ri];
        let b = base.get(&row.id).copied().unwrap_or_default();
        row.vs_baseline = Some(VsBaseline::of((p, adj), (row.k, row.n), b, confidence));
    }
    sort(cells);
}

/// Each cell's rows, differing tests first.
fn sort(cells: &mut [Vec<TestRow>]) {
    for rows in cells.iter_mut() {
        rows.sort_by(|a, b| {
            let key = |r: &TestRow| {
                let p = r.vs_baseline.as_ref().map_or(1.0, |v| v.adjusted_p);
                let shift = r.shift_vs_baseline.as_ref().map_or(1.0, |v| v.adjusted_p);
                (!r.differs(), r.k == 0, p.min(shift))
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

/// One test's outcome counts while a cell's runs are read.
#[derive(Debug, Default)]
struct OutcomeTally {
    counts: Outcomes,
    /// Timed-out runs whose (partial) report listed it.
    listed_in_timeouts: u64,
}

/// A cell's per-test rows and outcome distributions, folded one run at a
/// time in any order: its state is one tally per test (and one count per
/// distinct failure signature), whatever the number of runs. Gives what
/// [`rows`] and [`outcomes`] give over the same runs.
#[derive(Debug, Default)]
pub struct TestsFold {
    tallies: BTreeMap<String, Tally>,
    counted_with_data: u64,
    outcomes: BTreeMap<String, OutcomeTally>,
    data: DataRuns,
}

impl TestsFold {
    /// Adds one run of the cell.
    /// `patterns`: how many `--signature` patterns the session counts.
    pub fn add(&mut self, run: &crate::store::RunView, patterns: usize) {
        if !run.has_tests() {
            return;
        }
        let (outcome, index) = (run.outcome(), run.index());
        if matches!(outcome, Outcome::Pass | Outcome::Fail) {
            self.counted_with_data += 1;
            for t in run.tests() {
                let tally = match self.tallies.get_mut(t.id) {
                    Some(tally) => tally,
                    None => self.tallies.entry(t.id.to_string()).or_default(),
                };
                if tally.seen == 0 || index >= tally.family_at {
                    if tally.family != t.family() {
                        tally.family = t.family().to_string();
                    }
                    tally.family_at = index;
                }
                tally.seen += 1;
                match t.outcome {
                    TestOutcome::Skip => tally.skipped += 1,
                    TestOutcome::Pass => tally.n += 1,
                    TestOutcome::Fail | TestOutcome::Error => {
                        tally.n += 1;
                        let matched = t.matched_pattern();
                        if let Some(split) = tally.split(patterns) {
                            split.add(matched);
                        }
                        if patterns > 0 && matched.is_none() {
                            tally.other += 1;
                        } else {
                            tally.k += 1;
                            if tally.first_failure.is_none() || index < tally.first_at {
                                tally.first_failure = Some(run.id().into_owned());
                                tally.first_at = index;
                            }
                        }
                        if t.passed_on_rerun {
                            tally.rerun += 1;
                        }
                        if let Some(sig) = t.signature {
                            match tally.signatures.get_mut(sig) {
                                Some(n) => *n += 1,
                                None => {
                                    tally.signatures.insert(sig.to_string(), 1);
                                }
                            }
                        }
                    }
                }
            }
        }
        if !matches!(outcome, Outcome::Pass | Outcome::Fail | Outcome::Timeout) {
            return;
        }
        for t in run.tests() {
            let o = match self.outcomes.get_mut(t.id) {
                Some(o) => &mut o.counts,
                None => &mut self.outcomes.entry(t.id.to_string()).or_default().counts,
            };
            match t.outcome {
                TestOutcome::Pass => o.passed += 1,
                TestOutcome::Fail => o.failed += 1,
                TestOutcome::Error => o.errored += 1,
                TestOutcome::Skip => o.skipped += 1,
            }
        }
        if outcome == Outcome::Timeout {
            self.data.timed_out += 1;
            let listed: std::collections::BTreeSet<&str> = run.tests().map(|t| t.id).collect();
            for id in listed {
                if let Some(o) = self.outcomes.get_mut(id) {
                    o.listed_in_timeouts += 1;
                }
            }
        } else {
            self.data.finished += 1;
        }
    }

    /// Counted runs that carried per-test data.
    pub fn runs_with_tests(&self) -> u64 {
        self.counted_with_data
    }

    /// Entries held: tallies, outcome counts and signature counts (one per
    /// test, or per distinct signature; never one per run).
    pub fn entries(&self) -> usize {
        self.tallies.len()
            + self.outcomes.len()
            + self
                .tallies
                .values()
                .map(|t| t.signatures.len())
                .sum::<usize>()
    }

    /// The rows ([`rows`]), each with its outcomes set, and the runs with
    /// per-test data ([`outcomes`]). `patterns`: as for [`TestsFold::add`].
    pub fn finish(self, confidence: f64, patterns: usize) -> (Vec<TestRow>, DataRuns) {
        let data = self.data;
        let outcomes: BTreeMap<String, Outcomes> = self
            .outcomes
            .into_iter()
            .map(|(id, t)| {
                let mut o = t.counts;
                // A run whose report does not list a test: absent from it,
                // or, when the run timed out, stopped before it reported.
                let reported = o.passed + o.failed + o.errored + o.skipped;
                o.timed_out = data.timed_out - t.listed_in_timeouts;
                o.absent = data.total() - reported - o.timed_out;
                (id, o)
            })
            .collect();
        let mut rows = finish_rows(self.tallies, self.counted_with_data, confidence, patterns);
        for t in &mut rows {
            t.outcomes = outcomes.get(&t.id).copied().unwrap_or_default();
        }
        (rows, data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::TestRecord;

    fn run(id: &str, tests: &[(&str, TestOutcome, Option<bool>)]) -> RunRecord {
        patterned(
            id,
            &tests
                .iter()
                .map(|&(t, o, m)| (t, o, m, None))
                .collect::<Vec<_>>(),
        )
    }

    /// A run whose tests carry a match and the pattern index it matched.
    fn patterned(id: &str, tests: &[(&str, TestOutcome, Option<bool>, Option<u32>)]) -> RunRecord {
        let mut r = crate::record::fixture::run("s", 0, "c");
        r.id = id.to_string();
        r.tests = tests
            .iter()
            .map(|(tid, o, m, p)| TestRecord {
                id: tid.to_string(),
                family: None,
                outcome: *o,
                passed_on_rerun: false,
                retries: 0,
                signature: matches!(o, TestOutcome::Fail).then(|| "boom <n>".to_string()),
                message: None,
                signature_match: *m,
                signature_pattern: *p,
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
        let rows = rows(&refs, 0.95, 0);
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
    fn a_test_whose_every_failure_matched_no_pattern_always_fails_with_other_failures() {
        use TestOutcome::*;
        let runs = [
            run("r1", &[("a", Fail, Some(false))]),
            run("r2", &[("a", Fail, Some(false))]),
        ];
        let refs: Vec<&RunRecord> = runs.iter().collect();
        let rows = rows(&refs, 0.95, 1);
        assert_eq!(
            (rows[0].status, rows[0].k, rows[0].other_failures, rows[0].n),
            (TestStatus::AlwaysFails, 0, 2, 2)
        );
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
        let rows = rows(&refs, 0.95, 1);
        assert_eq!((rows[0].k, rows[0].other_failures, rows[0].n), (1, 1, 3));
        assert_eq!(
            rows[0].by_pattern,
            Some(PatternSplit {
                matched: vec![1],
                other: 1
            })
        );
    }

    #[test]
    fn each_pattern_gets_its_own_count_and_the_rest_are_other_failures() {
        use TestOutcome::*;
        let runs = [
            patterned(
                "r1",
                &[
                    ("a", Fail, Some(true), Some(0)),
                    ("b", Fail, Some(true), Some(1)),
                ],
            ),
            patterned(
                "r2",
                &[("a", Fail, Some(true), Some(1)), ("b", Pass, None, None)],
            ),
            patterned(
                "r3",
                &[("a", Fail, Some(false), None), ("b", Pass, None, None)],
            ),
            // A match recorded before patterns had indexes: the first's.
            patterned(
                "r4",
                &[("a", Fail, Some(true), None), ("b", Pass, None, None)],
            ),
            patterned("r5", &[("a", Pass, None, None), ("b", Pass, None, None)]),
        ];
        let refs: Vec<&RunRecord> = runs.iter().collect();
        let want = rows(&refs, 0.95, 2);
        // The fold counts as the reference does.
        let mut fold = TestsFold::default();
        for r in &runs {
            fold.add(&crate::store::RunView::of(r), 2);
        }
        let (got, _) = fold.finish(0.95, 2);
        for rows in [&want, &got] {
            let get = |id: &str| rows.iter().find(|r| r.id == id).unwrap();
            let a = get("a");
            assert_eq!((a.k, a.other_failures, a.n), (3, 1, 5));
            assert_eq!(
                a.by_pattern,
                Some(PatternSplit {
                    matched: vec![2, 1],
                    other: 1
                })
            );
            // A test that never failed still says its split: nothing of N.
            let b = get("b");
            assert_eq!((b.k, b.other_failures), (1, 0));
            assert_eq!(
                b.by_pattern,
                Some(PatternSplit {
                    matched: vec![0, 1],
                    other: 0
                })
            );
        }
        // Without patterns there is no split and every failure is k.
        let plain = rows(&refs, 0.95, 0);
        let a = plain.iter().find(|r| r.id == "a").unwrap();
        assert_eq!((a.k, a.other_failures, a.by_pattern.as_ref()), (4, 0, None));
    }

    #[test]
    fn a_split_adds_up_and_an_index_beyond_the_patterns_counts_for_the_last() {
        let mut s = PatternSplit::new(2).unwrap();
        for m in [Some(0), Some(1), Some(7), None, None] {
            s.add(m);
        }
        assert_eq!((s.matched.clone(), s.other), (vec![1, 2], 2));
        assert_eq!(s.matched_total() + s.other, 5);
        assert_eq!(PatternSplit::new(0), None);
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
            rows(&base.iter().collect::<Vec<_>>(), 0.95, 0),
            rows(&cell.iter().collect::<Vec<_>>(), 0.95, 0),
        ];
        compare(&mut cells, 0, 0.95);
        assert_eq!(cells[1][0].id, "y", "the differing test comes first");
        assert!(cells[1][0].vs_baseline.as_ref().unwrap().differs);
        assert!(!cells[1][1].vs_baseline.as_ref().unwrap().differs);
        assert!(cells[0][0].vs_baseline.is_none());
    }

    /// Rows with their outcomes, compared both ways, as the report does.
    fn compared(base: &[RunRecord], cell: &[RunRecord]) -> Vec<Vec<TestRow>> {
        let mut cells = Vec::new();
        let mut data = Vec::new();
        for runs in [base, cell] {
            let refs: Vec<&RunRecord> = runs.iter().collect();
            let mut r = rows(&refs, 0.95, 0);
            let (o, d) = outcomes(&refs);
            for t in &mut r {
                t.outcomes = o[&t.id];
            }
            cells.push(r);
            data.push(d);
        }
        compare(&mut cells, 0, 0.95);
        compare_outcomes(&mut cells, &data, 0, 0.95);
        cells
    }

    fn row<'a>(rows: &'a [TestRow], id: &str) -> &'a TestRow {
        rows.iter().find(|r| r.id == id).unwrap()
    }

    #[test]
    fn always_failed_then_always_skipped_differs_like_a_failure() {
        use TestOutcome::*;
        let base: Vec<RunRecord> = (0..6)
            .map(|i| run(&format!("b{i}"), &[("x", Fail, None), ("y", Pass, None)]))
            .collect();
        let cell: Vec<RunRecord> = (0..6)
            .map(|i| run(&format!("c{i}"), &[("x", Skip, None), ("y", Pass, None)]))
            .collect();
        let cells = compared(&base, &cell);
        let x = row(&cells[1], "x");
        assert_eq!(x.status, TestStatus::AlwaysSkipped);
        assert!(
            x.vs_baseline.is_none(),
            "n = 0: the failure count cannot compare it"
        );
        let shift = x.shift_vs_baseline.as_ref().unwrap();
        assert_eq!((shift.from.failed, shift.to.skipped), (6, 6));
        // 2 / C(12, 6), Holm over the two pairs.
        assert!((shift.fisher_p - 2.0 / 924.0).abs() < 1e-12, "{shift:?}");
        assert!(shift.differs && x.differs());
        assert!(!row(&cells[1], "y").differs());
        assert_eq!(cells[1][0].id, "x", "the differing test comes first");
        assert!(
            cells[0][0].shift_vs_baseline.is_none(),
            "the baseline is the reference"
        );
    }

    #[test]
    fn passes_then_errors_differs_and_shows_as_errors() {
        use TestOutcome::*;
        let base: Vec<RunRecord> = (0..6)
            .map(|i| run(&format!("b{i}"), &[("x", Pass, None)]))
            .collect();
        let cell: Vec<RunRecord> = (0..6)
            .map(|i| run(&format!("c{i}"), &[("x", Error, None)]))
            .collect();
        let cells = compared(&base, &cell);
        let shift = cells[1][0].shift_vs_baseline.as_ref().unwrap();
        assert_eq!(
            (shift.from.passed, shift.to.errored, shift.to.failed),
            (6, 6, 0)
        );
        assert!(shift.differs);
        // Failed at baseline, errored here: the failure count is the same,
        // the outcomes are not.
        let base: Vec<RunRecord> = (0..6)
            .map(|i| run(&format!("b{i}"), &[("x", Fail, None)]))
            .collect();
        let cells = compared(&base, &cell);
        assert!(!cells[1][0].vs_baseline.as_ref().unwrap().differs);
        assert!(cells[1][0].shift_vs_baseline.as_ref().unwrap().differs);
    }

    #[test]
    fn a_test_that_vanishes_from_a_cell_gets_a_never_ran_row_that_differs() {
        use TestOutcome::*;
        let base: Vec<RunRecord> = (0..6)
            .map(|i| run(&format!("b{i}"), &[("x", Pass, None), ("y", Pass, None)]))
            .collect();
        let cell: Vec<RunRecord> = (0..6)
            .map(|i| run(&format!("c{i}"), &[("y", Pass, None)]))
            .collect();
        let cells = compared(&base, &cell);
        let x = row(&cells[1], "x");
        assert_eq!(x.status, TestStatus::NeverRan);
        assert_eq!(x.absent, 6);
        let shift = x.shift_vs_baseline.as_ref().unwrap();
        assert_eq!((shift.from.passed, shift.to.absent), (6, 6));
        assert!(shift.differs);
    }

    #[test]
    fn a_timed_out_run_with_a_partial_report_counts_its_missing_tests_as_timed_out() {
        use TestOutcome::*;
        let mut partial = run("t0", &[("x", Pass, None)]);
        partial.outcome = Outcome::Timeout;
        let runs = [run("r0", &[("x", Pass, None), ("y", Fail, None)]), partial];
        let refs: Vec<&RunRecord> = runs.iter().collect();
        let (o, data) = outcomes(&refs);
        assert_eq!((data.finished, data.timed_out), (1, 1));
        assert_eq!(o["x"].passed, 2);
        assert_eq!((o["y"].failed, o["y"].timed_out, o["y"].absent), (1, 1, 0));
    }
}
