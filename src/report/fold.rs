//! The report as a fold: each run of a session is added once, in any
//! order, and dropped; what is kept is bounded by the cells and the
//! (test, cell) pairs, not by the runs. Per-run items the report prints
//! are kept once each: a cell's first counted failure and each test's first
//! failing run (the lowest plan index, whatever order the runs are read
//! in), signatures as counts. The one exception is the CPU medians: a
//! median needs every sample, so a run with a CPU measurement keeps its few
//! numbers (at most four `f64`) until the report is built.

use std::collections::{BTreeMap, HashMap};

use super::{finish_report, per_test, CellCpu, CellReport, CellStress, FirstFailure, Report};
use crate::record::{CellRecord, Outcome, ProcessEnd, SessionRecord};
use crate::stats;
use crate::store::{LoadStats, RunView};

/// A report being built one run at a time ([`Fold::add`], then
/// [`Fold::finish`]); [`super::build`] is this fold over a slice.
#[derive(Debug)]
pub struct Fold<'s> {
    session: &'s SessionRecord,
    cells: Vec<CellFold>,
    by_name: HashMap<String, usize>,
    recorded: u64,
    executed: u64,
    shards: crate::context::shard::ShardTally,
    /// Runs whose runner retried attempts its report keeps no trace of,
    /// and the first one's words.
    hidden_retries: (u64, Option<String>),
}

/// One cell's counts while its runs are read.
#[derive(Debug, Default)]
struct CellFold {
    passed: u64,
    failed: u64,
    k: u64,
    timed_out: u64,
    errored: u64,
    not_applied: u64,
    stragglers: u64,
    /// With patterns: the counted runs per pattern and the other failures.
    by_pattern: Option<per_test::PatternSplit>,
    runs_without_tests: u64,
    first_failure: Option<(usize, FirstFailure)>,
    /// With patterns, the first failed run that matched none.
    first_other_failure: Option<(usize, FirstFailure)>,
    /// The first unmeasured (errored, timed out) run's reason.
    error_reason: Option<(usize, String)>,
    /// Failed runs that died by a signal, and the first one's reason.
    signaled: u64,
    signal_reason: Option<(usize, String)>,
    not_applied_reason: Option<(usize, String)>,
    signatures: BTreeMap<String, u64>,
    tests: per_test::TestsFold,
    cpu: CpuFold,
}

/// Why a run was not measured, on one line: `run: reason` (a timed-out run
/// without a recorded reason says it timed out).
pub(super) fn unmeasured(run: &str, outcome: Outcome, reason: Option<&str>) -> String {
    let why = match (reason, outcome) {
        (Some(r), _) => super::text::one_line(r).into_owned(),
        (None, Outcome::Timeout) => "timed out (--timeout)".to_string(),
        (None, _) => "no reason recorded".to_string(),
    };
    format!("{run}: {why}")
}

/// A failed run that died by a signal, on one line: `run: killed by …`
/// (its recorded reason, else the signal's number).
pub(super) fn signal_reason(r: &RunView) -> Option<String> {
    let ProcessEnd::Signaled { signal } = r.end() else {
        return None;
    };
    let why = match r.reason() {
        Some(reason) => super::text::one_line(reason).into_owned(),
        None => format!("killed by signal {signal}"),
    };
    Some(format!("{}: {why}", r.id()))
}

/// The CPU samples of a cell's runs that ran, for its medians.
#[derive(Debug, Default)]
struct CpuFold {
    measured: u64,
    subject_s: Vec<f64>,
    subject_share: Vec<f64>,
    /// The first stressed run's (plan index, threads, cpus).
    stress_first: Option<(usize, usize, usize)>,
    stress_shares: Vec<f64>,
    stress_parts: Vec<f64>,
    stress_unjudged: u64,
}

impl CpuFold {
    fn add(&mut self, r: &RunView) {
        let Some(c) = r.cpu() else { return };
        self.measured += 1;
        if let Some(s) = c.subject_s {
            self.subject_s.push(s);
            if c.window_s > 0.0 {
                self.subject_share.push(s / c.window_s);
            }
        }
        // The sham of the stress (`cpu-stress=0`) runs no thread.
        let Some(stress) = c.stress.as_ref().filter(|s| s.threads > 0) else {
            return;
        };
        if self.stress_first.is_none_or(|(at, _, _)| r.index() < at) {
            self.stress_first = Some((r.index(), stress.threads, stress.cpus));
        }
        self.stress_shares.extend(c.stress_share());
        self.stress_parts.extend(c.stress_part());
        if c.window_s < crate::perturb::probe::STRESS_MIN_WINDOW_S {
            self.stress_unjudged += 1;
        }
    }

    fn samples(&self) -> usize {
        self.subject_s.len()
            + self.subject_share.len()
            + self.stress_shares.len()
            + self.stress_parts.len()
    }

    fn finish(self) -> Option<CellCpu> {
        if self.measured == 0 {
            return None;
        }
        let low = |v: &[f64]| v.iter().copied().reduce(f64::min);
        let stress = self.stress_first.map(|(_, threads, cpus)| CellStress {
            threads,
            cpus,
            share_median: super::median(self.stress_shares.clone()).unwrap_or(0.0),
            share_min: low(&self.stress_shares).unwrap_or(0.0),
            part_median: super::median(self.stress_parts.clone()),
            part_min: low(&self.stress_parts),
            part_needed: crate::perturb::probe::stress_part_needed(threads, cpus),
            unjudged: self.stress_unjudged,
        });
        Some(CellCpu {
            runs: self.measured,
            subject_s_median: super::median(self.subject_s),
            subject_share_median: super::median(self.subject_share),
            stress,
        })
    }
}

impl<'s> Fold<'s> {
    /// An empty fold for `session`'s cells.
    pub fn new(session: &'s SessionRecord) -> Fold<'s> {
        let mut by_name = HashMap::new();
        for (i, c) in session.cells.iter().enumerate() {
            // The first cell of a name takes its runs, as filtering did.
            by_name.entry(c.name.clone()).or_insert(i);
        }
        Fold {
            session,
            cells: session.cells.iter().map(|_| CellFold::default()).collect(),
            by_name,
            recorded: 0,
            executed: 0,
            shards: Default::default(),
            hidden_retries: (0, None),
        }
    }

    /// Adds one run (of this session; any order).
    pub fn add(&mut self, r: &RunView) {
        self.recorded += 1;
        let unseen = crate::catalog::recipe::retries::UNSEEN;
        if let Some(w) = r.warnings().iter().find(|w| w.starts_with(unseen)) {
            self.hidden_retries.0 += 1;
            self.hidden_retries.1.get_or_insert_with(|| w.clone());
        }
        self.shards.add(self.session, r);
        let outcome = r.outcome();
        if outcome != Outcome::NotApplied {
            self.executed += 1;
        }
        let Some(i) = self.cell_of(r.cell()) else {
            return;
        };
        let patterns = self.session.patterns().len();
        let applied = self.session.cells[i].applied;
        let cell = &mut self.cells[i];
        let index = r.index();
        cell.stragglers += u64::from(r.stragglers());
        match outcome {
            Outcome::Pass | Outcome::Fail => {
                let failed = outcome == Outcome::Fail;
                if failed {
                    cell.failed += 1;
                    if let Some(why) = signal_reason(r) {
                        cell.signaled += 1;
                        if cell
                            .signal_reason
                            .as_ref()
                            .is_none_or(|(at, _)| index < *at)
                        {
                            cell.signal_reason = Some((index, why));
                        }
                    }
                } else {
                    cell.passed += 1;
                }
                // With a signature, a run reproduced it when its output or
                // a test's first attempt matched (as the ladder counts), so
                // every reproduction a test row counts is in its cell's k.
                // It counts for the first pattern it matched.
                let matched = (patterns > 0).then(|| r.matched_pattern()).flatten();
                let counted = if patterns > 0 {
                    matched.is_some()
                } else {
                    failed
                };
                if failed || counted {
                    if let Some(split) = cell.split(patterns) {
                        split.add(matched);
                    }
                }
                let first = |r: &RunView| FirstFailure {
                    run: r.id().into_owned(),
                    repro: r.repro(),
                    log: r.log().map(|p| p.display().to_string()),
                    repro_note: r.repro_note().map(str::to_string),
                };
                if counted {
                    cell.k += 1;
                    if cell
                        .first_failure
                        .as_ref()
                        .is_none_or(|(at, _)| index < *at)
                    {
                        cell.first_failure = Some((index, first(r)));
                    }
                } else if failed
                    && patterns > 0
                    && (cell.first_other_failure.as_ref()).is_none_or(|(at, _)| index < *at)
                {
                    cell.first_other_failure = Some((index, first(r)));
                }
                if r.tests_missing().is_some() {
                    cell.runs_without_tests += 1;
                }
                if failed {
                    if let Some(sig) = r.failure_signature() {
                        match cell.signatures.get_mut(sig) {
                            Some(n) => *n += 1,
                            None => {
                                cell.signatures.insert(sig.to_string(), 1);
                            }
                        }
                    }
                }
            }
            Outcome::Timeout | Outcome::Error => {
                if outcome == Outcome::Timeout {
                    cell.timed_out += 1;
                } else {
                    cell.errored += 1;
                }
                if cell.error_reason.as_ref().is_none_or(|(at, _)| index < *at) {
                    cell.error_reason = Some((index, unmeasured(&r.id(), outcome, r.reason())));
                }
            }
            Outcome::NotApplied => {
                cell.not_applied += 1;
                if let Some(reason) = r.reason().filter(|_| applied) {
                    if cell
                        .not_applied_reason
                        .as_ref()
                        .is_none_or(|(at, _)| index < *at)
                    {
                        cell.not_applied_reason = Some((index, reason.to_string()));
                    }
                }
            }
        }
        if *r.end() != ProcessEnd::NotStarted {
            cell.cpu.add(r);
        }
        cell.tests.add(r, patterns);
    }

    /// The cell that takes the runs of cell `name`: the first of that name.
    fn cell_of(&self, name: &str) -> Option<usize> {
        // A scan beats hashing the name for the few cells a session has.
        if self.session.cells.len() <= 32 {
            self.session.cells.iter().position(|c| c.name == name)
        } else {
            self.by_name.get(name).copied()
        }
    }

    /// Runs added so far.
    pub fn runs(&self) -> u64 {
        self.recorded
    }

    /// Entries the fold holds: one per cell, per (test, cell) tally and
    /// outcome count, per distinct signature and per CPU sample. Without
    /// CPU measurements it does not grow with the runs.
    pub fn entries(&self) -> usize {
        self.cells
            .iter()
            .map(|c| 1 + c.signatures.len() + c.tests.entries() + c.cpu.samples())
            .sum()
    }

    /// The report of the runs added.
    pub fn finish(self, load: LoadStats) -> Report {
        let session = self.session;
        let (hidden, said) = self.hidden_retries;
        let recorded = self.recorded;
        let mut data_runs = Vec::with_capacity(self.cells.len());
        let cells = session
            .cells
            .iter()
            .zip(self.cells)
            .map(|(c, f)| {
                let (cell, data) = finish_cell(session, c, f);
                data_runs.push(data);
                cell
            })
            .collect();
        let mut report = finish_report(
            session,
            cells,
            data_runs,
            self.recorded,
            self.executed,
            load,
            crate::context::shard::summary(session, &self.shards),
        );
        // A runner that retried attempts its report keeps no trace of:
        // those first attempts are not in the counts, said once.
        if let Some(w) = said {
            report
                .warnings
                .push(format!("{hidden} of {recorded} runs: {w}"));
        }
        report
    }
}

fn finish_cell(
    session: &SessionRecord,
    c: &CellRecord,
    f: CellFold,
) -> (CellReport, per_test::DataRuns) {
    let runs_with_tests = f.tests.runs_with_tests();
    let patterns = session.patterns().len();
    let (tests, data) = f.tests.finish(session.confidence, patterns);
    let n = f.passed + f.failed;
    let mut applied = c.applied;
    let mut reason = c.reason.clone();
    let mut not_applied_reason = f.not_applied_reason.map(|(_, r)| r);
    if applied && f.not_applied > 0 && n + f.timed_out + f.errored == 0 {
        // Every run found the cell not applied (a missing plugin, a helper
        // that could not set it up): so is the cell.
        applied = false;
        reason = not_applied_reason.take();
    }
    let p = stats::proportion(f.k, n, session.confidence);
    let cell = CellReport {
        name: c.name.clone(),
        perturbations: c.perturbations.clone(),
        applied,
        reason,
        n,
        k: f.k,
        passed: f.passed,
        failed: f.failed,
        timed_out: f.timed_out,
        errored: f.errored,
        not_applied: f.not_applied,
        planned: u64::from(session.plan.runs_per_cell),
        rate: p.rate,
        low: p.low,
        high: p.high,
        vs_baseline: None,
        timeouts_vs_baseline: None,
        sham_of: c.sham_of.clone(),
        sham: c.sham.clone(),
        vs_sham: None,
        tests,
        signatures: sort_counts(f.signatures),
        runs_with_tests,
        runs_without_tests: f.runs_without_tests,
        probes: c.probes.clone(),
        notes: c.notes.clone(),
        not_applied_reason,
        cpu: f.cpu.finish(),
        stragglers: f.stragglers,
        first_failure: f.first_failure.map(|(_, first)| first),
        first_other_failure: f.first_other_failure.map(|(_, first)| first),
        error_reason: f.error_reason.map(|(_, why)| why),
        signaled: f.signaled,
        signal_reason: f.signal_reason.map(|(_, why)| why),
        by_pattern: f
            .by_pattern
            .or_else(|| per_test::PatternSplit::new(patterns)),
    };
    (cell, data)
}

impl CellFold {
    /// Its pattern split, made at the first failure it counts (None
    /// without patterns).
    fn split(&mut self, patterns: usize) -> Option<&mut per_test::PatternSplit> {
        if self.by_pattern.is_none() {
            self.by_pattern = per_test::PatternSplit::new(patterns);
        }
        self.by_pattern.as_mut()
    }
}

fn sort_counts(counts: BTreeMap<String, u64>) -> Vec<per_test::SignatureCount> {
    let mut out: Vec<per_test::SignatureCount> = counts
        .into_iter()
        .map(|(signature, count)| per_test::SignatureCount { signature, count })
        .collect();
    out.sort_by(|a, b| b.count.cmp(&a.count).then(a.signature.cmp(&b.signature)));
    out
}
