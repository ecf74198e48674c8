//! The report model: computed once from a stored session and its run
//! records, then rendered as a table, JSON or Markdown. Live output and
//! `flakelab report` go through the same [`Fold`] (which [`build`] runs over
//! a slice), so they cannot disagree, and reading a store of a million runs
//! holds one run at a time.
//! `assemble` reads a stored session into the model, `render` turns it
//! into the format asked for, and `outputs` writes GitHub's step summary
//! and artifacts; everything else here is pure.

pub(crate) mod assemble;
pub(crate) mod beside;
pub(crate) mod bisect;
pub(crate) mod catalog;
pub(crate) mod color;
pub(crate) mod dashboard;
pub(crate) mod fold;
#[cfg(test)]
mod fold_tests;
pub(crate) mod gha;
pub(crate) mod github;
#[cfg(test)]
mod github_tests;
pub(crate) mod handover;
pub(crate) mod history;
pub(crate) mod html;
pub mod json;
mod label;
pub(crate) mod ladder;
pub(crate) mod markdown;
mod markup;
pub(crate) mod outputs;
#[cfg(test)]
mod patterns_tests;
pub(crate) mod per_test;
pub(crate) mod progress;
#[doc(hidden)]
pub mod reference;
mod render;
pub(crate) mod runs;
pub(crate) mod scan;
pub(crate) mod screen;
pub use screen::{confirmed_rows, design_text};
pub(crate) mod sham;
#[cfg(test)]
mod snapshots_test;
pub(crate) mod svg;
pub(crate) mod table;
pub(crate) mod text;
pub(crate) mod undecided;
pub(crate) mod verify;
pub(crate) mod wording;

use serde::Serialize;

use crate::record::{Outcome, RunRecord, SessionRecord};
use crate::stats;
use crate::stats::verdict::{Findings, Verdict};
use crate::store::LoadStats;

pub use fold::Fold;
pub(crate) use render::render;
pub use wording::{
    applied_text, counting_text, failure_heading, finding_text, interval_text, notes,
    patterns_text, runs_text, short_p, shown_failures, shown_name, shown_other_failures,
    shown_test_rows, shows_split, split_text, test_count_text, test_counts, test_interval_text,
    test_shift_text, test_versus_text, versus_text,
};

pub use crate::record::schema::REPORT_SCHEMA;

/// A cell compared with the baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VsBaseline {
    /// Two-sided Fisher exact p-value of the cell against the baseline.
    pub fisher_p: f64,
    /// Holm-adjusted across all cells compared.
    pub adjusted_p: f64,
    /// Whether the adjusted p-value is below 1 − confidence.
    pub differs: bool,
    /// How much the rate changed, with its interval (`crate::stats::effect`):
    /// absent where the comparison is not of failure rates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effect: Option<crate::stats::effect::Effect>,
    /// Set when the design stopped before it could decide a pair whose raw
    /// counts differ: never clean (`crate::stats::verdict::Verdict::Undecided`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undecided: Option<Undecided>,
}

/// Why a pair is undecided, and what would settle it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Undecided {
    /// What stopped the design: `correction` (Holm over many pairs left a
    /// raw difference short), `cap` (the confirmation runs per candidate),
    /// `max_runs` (`--max-runs`), `interrupted`, or `stopped` (another
    /// reason, given in the row's verdict).
    pub stopped_by: &'static str,
    /// Runs that would settle it: per cell for the fixed design, per
    /// candidate (both arms, the `-n` to give) for the screen; absent when
    /// more than 10,000 would be needed.
    pub runs_needed: Option<u64>,
}

impl VsBaseline {
    /// A comparison at `alpha` of a cell's `k` of `n` against the other
    /// side's, with its effect at `confidence`.
    pub fn of(
        (p, adj): (f64, f64),
        cell: (u64, u64),
        other: (u64, u64),
        confidence: f64,
    ) -> VsBaseline {
        VsBaseline {
            fisher_p: p,
            adjusted_p: adj,
            differs: adj < 1.0 - confidence,
            effect: crate::stats::effect::effect(cell, other, confidence),
            undecided: None,
        }
    }
}

/// One cell's results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellReport {
    /// Cell name.
    pub name: String,
    /// Perturbations in `kind=value` form.
    pub perturbations: Vec<String>,
    /// Whether the probes proved every perturbation applied.
    pub applied: bool,
    /// Why not, when not.
    pub reason: Option<String>,
    /// Runs that passed or failed (the denominator).
    pub n: u64,
    /// Failures counted (matching `--signature` when one is given).
    pub k: u64,
    /// Runs that passed.
    pub passed: u64,
    /// Runs that failed (whether or not they matched the signature).
    pub failed: u64,
    /// Runs that timed out (excluded from n).
    pub timed_out: u64,
    /// Runs that could not be measured (excluded from n).
    pub errored: u64,
    /// Runs not applied (excluded from n).
    pub not_applied: u64,
    /// Runs planned for this cell.
    pub planned: u64,
    /// k / n.
    pub rate: f64,
    /// Lower end of the interval.
    pub low: f64,
    /// Upper end of the interval (for k = 0, the one-sided bound).
    pub high: f64,
    /// Comparison with the baseline (None for the baseline itself).
    pub vs_baseline: Option<VsBaseline>,
    /// Timed-out runs against the baseline's (timeouts are not in N), when
    /// either timed out.
    pub timeouts_vs_baseline: Option<VsBaseline>,
    /// This cell is a sham: the mechanism it runs with a null parameter.
    pub sham_of: Option<String>,
    /// The sham cell this cell is compared with, if its mechanism has one.
    pub sham: Option<String>,
    /// Comparison with that sham (Holm over every cell-and-sham pair): a
    /// difference from the baseline is the parameter's only when this
    /// differs too.
    pub vs_sham: Option<VsBaseline>,
    /// Per-test rows, from the runs' JUnit reports (differing tests first).
    pub tests: Vec<per_test::TestRow>,
    /// The cell's failed runs grouped by failure signature (the first
    /// failing test's, else the log's), most frequent first.
    pub signatures: Vec<per_test::SignatureCount>,
    /// Counted runs that carried per-test data.
    pub runs_with_tests: u64,
    /// Counted runs whose report was missing or unreadable (see the records' `tests_missing`).
    pub runs_without_tests: u64,
    /// What the probes observed.
    pub probes: Vec<String>,
    /// What the cell changed beyond its declared conditions (libfaketime
    /// options a recipe asked for).
    pub notes: Vec<String>,
    /// Why some runs of this applied cell were not applied (the first such
    /// run's reason) while others were: a stressed run whose stressors did
    /// not get their share, a seed the runner did not print back. When
    /// every run was not applied, the cell is not applied and this reason is
    /// its `reason`.
    pub not_applied_reason: Option<String>,
    /// The CPU time the cell's runs and their stress threads got.
    pub cpu: Option<CellCpu>,
    /// Processes the runs of this cell left behind.
    pub stragglers: u64,
    /// The repro line of the first counted failure, in plan order.
    pub first_failure: Option<FirstFailure>,
    /// With `--signature`: the repro line of the first other failure (a
    /// failed run that matched no pattern), in plan order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_other_failure: Option<FirstFailure>,
    /// Why the first run of the cell that errored or timed out (in plan
    /// order) was not measured: `run`: the reason it recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_reason: Option<String>,
    /// Failed runs that died by a signal (counted in N as failures).
    #[serde(skip_serializing_if = "is_zero")]
    pub signaled: u64,
    /// The first of them (in plan order): `run: killed by SIGSEGV (signal 11)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal_reason: Option<String>,
    /// With `--signature`: the counted runs per pattern (each run for the
    /// first pattern it reproduced) and the other failures, failed runs
    /// that matched none: real failures, never green.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by_pattern: Option<per_test::PatternSplit>,
}

/// The CPU time a cell's runs got, from per-process and per-thread
/// accounting (each run's `cpu` record).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellCpu {
    /// Runs with a measurement.
    pub runs: u64,
    /// Median CPU seconds of a run's processes, over the runs that ran
    /// alone (None when none did).
    pub subject_s_median: Option<f64>,
    /// Median share of its wall time a run's processes spent on a CPU
    /// (`subject_s / window_s`; above 1 when they used several CPUs): what
    /// stress takes from a busy subject shows here, not in its CPU time.
    pub subject_share_median: Option<f64>,
    /// The stress threads, in cells with `cpu-stress`.
    pub stress: Option<CellStress>,
}

/// What a cell's stress threads got, over its runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellStress {
    /// Threads beside each run.
    pub threads: usize,
    /// CPUs they were given.
    pub cpus: usize,
    /// Each stressor's share of one CPU (0–1): the median over the runs.
    pub share_median: f64,
    /// The lowest run's.
    pub share_min: f64,
    /// The stressors' part of the CPU time the run used (0–1): the median
    /// over the runs whose subject was measured.
    pub part_median: Option<f64>,
    /// The lowest run's.
    pub part_min: Option<f64>,
    /// The part a run needed to count as applied.
    pub part_needed: f64,
    /// Runs shorter than the shortest window judged (measured only).
    pub unjudged: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

fn cell_cpu(runs: &[&RunRecord]) -> Option<CellCpu> {
    let measured: Vec<&crate::record::RunCpu> =
        runs.iter().filter_map(|r| r.cpu.as_ref()).collect();
    if measured.is_empty() {
        return None;
    }
    let stressed: Vec<_> = measured
        .iter()
        .filter_map(|c| c.stress.as_ref().map(|s| (c, s)))
        // The sham of the stress (`cpu-stress=0`) runs no thread.
        .filter(|(_, s)| s.threads > 0)
        .collect();
    let stress = stressed.first().map(|(_, first)| {
        let shares: Vec<f64> = stressed
            .iter()
            .filter_map(|(c, _)| c.stress_share())
            .collect();
        let parts: Vec<f64> = stressed
            .iter()
            .filter_map(|(c, _)| c.stress_part())
            .collect();
        let low = |v: &[f64]| v.iter().copied().reduce(f64::min);
        CellStress {
            threads: first.threads,
            cpus: first.cpus,
            share_median: median(shares.clone()).unwrap_or(0.0),
            share_min: low(&shares).unwrap_or(0.0),
            part_median: median(parts.clone()),
            part_min: low(&parts),
            part_needed: crate::perturb::probe::stress_part_needed(first.threads, first.cpus),
            unjudged: stressed
                .iter()
                .filter(|(c, _)| c.window_s < crate::perturb::probe::STRESS_MIN_WINDOW_S)
                .count() as u64,
        }
    });
    Some(CellCpu {
        runs: measured.len() as u64,
        subject_s_median: median(measured.iter().filter_map(|c| c.subject_s).collect()),
        subject_share_median: median(
            measured
                .iter()
                .filter(|c| c.window_s > 0.0)
                .filter_map(|c| c.subject_s.map(|s| s / c.window_s))
                .collect(),
        ),
        stress,
    })
}

/// The first counted failure of a cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FirstFailure {
    /// Run id.
    pub run: String,
    /// Its repro line.
    pub repro: String,
    /// Its log, relative to the store.
    pub log: Option<String>,
    /// What the repro line cannot recreate, if anything.
    pub repro_note: Option<String>,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Always [`REPORT_SCHEMA`].
    pub schema: &'static str,
    /// Session id.
    pub session: String,
    /// The subject's argv.
    pub command: Vec<String>,
    /// The subject's working directory.
    pub cwd: String,
    /// Schedule seed.
    pub seed: u64,
    /// Confidence level.
    pub confidence: f64,
    /// The first `--signature` regex, if any.
    pub signature: Option<String>,
    /// Every `--signature` regex, in the order given (the patterns that
    /// `by_pattern` counts are numbered from 1 in this order).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub signatures: Vec<String>,
    /// Session start.
    pub started_at: String,
    /// The run this session replays, if it is a replay.
    pub replay_of: Option<String>,
    /// The runner recipe used, if any.
    pub runner: Option<String>,
    /// Why no recipe was used, when none was.
    pub runner_note: Option<String>,
    /// Matrix cells this runner could not take, with why.
    pub left_out: Vec<String>,
    /// The session's own warnings (no warden, …).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Runs planned in all.
    pub planned: u64,
    /// Runs recorded (including the not-applied placeholders).
    pub recorded: u64,
    /// Runs that were executed (recorded minus not applied).
    pub executed: u64,
    /// Runs in flight at once (`-j`).
    pub jobs: usize,
    /// Whether fewer runs were recorded than planned (an interrupted session).
    pub partial: bool,
    /// Store lines skipped on read (truncated or corrupt).
    pub skipped_lines: usize,
    /// How the session ended, as its store tells: `finished`,
    /// `interrupted`, `failed`, `running`, or `no_stop` (no end record and
    /// no harness holding it: killed). Absent when not read from a store.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_end: Option<&'static str>,
    /// What stopped a `failed` session, as its end record says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// The cells, in plan order (baseline first).
    pub cells: Vec<CellReport>,
    /// `--confirm K`: each distinct failing run replayed K times.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub confirmations: Vec<Confirmation>,
    /// `--design screen`: how the runs were spent, against the fixed design.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub design: Option<crate::screen::DesignSummary>,
    /// `run` under `--design auto`: which design ran and why (a screened
    /// session says it in `design.chosen`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub design_chosen: Option<String>,
    /// A sharded session: which hosts ran which shards, the shards missing,
    /// and per cell whether the rate differs between hosts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shards: Option<crate::context::shard::ShardsReport>,
    /// A `scan --prove` session: what it proves, and each finding's and
    /// control's status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scan_prove: Option<crate::scan::prove::ProveRecord>,
    /// Where the per-test rows come from, in words (`JUnit`, `go test
    /// -json`, …); absent for a session that did not record it (rendered
    /// as JUnit, the only source before it was recorded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_test_from: Option<String>,
    /// `report` and `evidence` of a store that also holds CI history
    /// (`flakelab ingest`): what history says of the session's tests, lab
    /// and CI side by side. Absent when the store holds no history.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci_history: Option<beside::CiHistory>,
}

/// One failing run's conditions replayed K times (`--confirm K`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Confirmation {
    /// The failing run whose conditions were replayed.
    pub run: String,
    /// Its cell.
    pub cell: String,
    /// Its seed (given to every replay).
    pub seed: u64,
    /// Its failure signature, if any.
    pub signature: Option<String>,
    /// Replays asked for.
    pub times: u32,
    /// Replays that measured something (passed or failed).
    pub measured: u64,
    /// Replays that failed again (with `--signature`: matching a pattern,
    /// or for an other failure matching none).
    pub failed: u64,
    /// With `--signature`: the replayed run's failure matched no pattern
    /// (an other failure, a real failure all the same).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub other_failure: bool,
    /// `deterministic` (K of K: the recorded conditions determine the
    /// failure), `timing` (fewer: timing is involved) or `unmeasured`.
    pub verdict: &'static str,
    /// What the replays bound the failure rate to at the session's
    /// confidence (`rate > 0.368 at 95%` for 3 of 3; `crate::stats::effect::bound_text`).
    pub bound: String,
    /// The replay session.
    pub session: String,
}

/// The confirmations of `session`'s failing runs, rebuilt from the replay
/// sessions that are part of it (`run --confirm`), in the order they ran:
/// the same rows whether printed live or re-rendered from the store.
pub fn confirmations(
    session: &SessionRecord,
    runs: &[RunRecord],
    replays: &[(SessionRecord, Vec<RunRecord>)],
) -> Vec<Confirmation> {
    replays
        .iter()
        .filter(|(s, _)| s.part_of.as_deref() == Some(session.id.as_str()))
        .filter_map(|(s, again)| {
            let run = runs.iter().find(|r| Some(&r.id) == s.replay_of.as_ref())?;
            let measured = again
                .iter()
                .filter(|r| matches!(r.outcome, Outcome::Pass | Outcome::Fail))
                .count() as u64;
            // An other failure is replayed for failures matching no
            // pattern; a matched one for matching failures.
            let patterns = !session.patterns().is_empty();
            let other_failure = patterns && run.signature_match != Some(true);
            let failed = again
                .iter()
                .filter(|r| r.outcome == Outcome::Fail)
                .filter(|r| !patterns || (r.signature_match == Some(true)) != other_failure)
                .count() as u64;
            let times = s.plan.runs_per_cell;
            Some(Confirmation {
                run: run.id.clone(),
                cell: run.cell.clone(),
                seed: run.seed,
                signature: run.failure_signature.clone(),
                times,
                measured,
                failed,
                other_failure,
                verdict: confirmation_verdict(times, measured, failed),
                bound: crate::stats::effect::bound_text(failed, measured, session.confidence),
                session: s.id.clone(),
            })
        })
        .collect()
}

impl Confirmation {
    /// The verdict in words.
    pub fn sentence(&self) -> String {
        let words = self.verdict_words();
        match self.other_failure {
            true => format!("an other failure (it matched no --signature pattern), {words}"),
            false => words,
        }
    }

    fn verdict_words(&self) -> String {
        match self.verdict {
            "deterministic" => format!(
                "failed {} of {} ({}): the recorded conditions determine the failure (a deterministic oracle)",
                self.failed, self.measured, self.bound
            ),
            "timing" => format!(
                "failed {} of {} ({}): the recorded conditions do not determine it; timing or state outside them is involved",
                self.failed, self.measured, self.bound
            ),
            _ => format!("no replay of {} measured anything", self.times),
        }
    }
}

/// The verdict of `failed` of `measured` replays out of `times` asked.
pub fn confirmation_verdict(times: u32, measured: u64, failed: u64) -> &'static str {
    if measured == 0 {
        "unmeasured"
    } else if failed == measured && measured == u64::from(times) {
        "deterministic"
    } else {
        "timing"
    }
}

impl Report {
    /// A replay's counts and what they bound its rate to:
    /// `failed 3 of 3 (rate > 0.368 at 95%)`; None for any other session.
    pub fn replay_bound(&self) -> Option<String> {
        self.replay_of.as_ref()?;
        let c = self.cells.iter().find(|c| c.n > 0)?;
        Some(format!(
            "failed {} of {} ({})",
            c.k,
            c.n,
            crate::stats::effect::bound_text(c.k, c.n, self.confidence)
        ))
    }

    /// Where the per-test rows come from, in words.
    pub fn per_test_source(&self) -> &str {
        (self.per_test_from.as_deref()).unwrap_or(crate::results::testreport::Format::Junit.label())
    }

    /// What the report found, for `crate::stats::verdict::Verdict::of` (the
    /// caller adds whether the session was interrupted).
    pub fn findings(&self) -> Findings {
        let differs = self.cells.iter().any(|c| {
            c.vs_baseline.as_ref().is_some_and(|v| v.differs)
                || c.timeouts_vs_baseline.as_ref().is_some_and(|v| v.differs)
                || c.tests.iter().any(per_test::TestRow::differs)
        });
        // With a signature, or in a replay, any counted failure is the
        // finding; so is any failure of a session with no cell to compare
        // (one cell: no contrast, a failure is what it found).
        let reproduced =
            (self.signature.is_some() || self.replay_of.is_some() || self.uncontrasted())
                && self.cells.iter().any(|c| c.k > 0);
        // A failure that matches none of the patterns is a real failure,
        // never green, whatever the matched rows say.
        let other_failures = self.other_failures() > 0;
        let undecided_in =
            |v: &Option<VsBaseline>| v.as_ref().is_some_and(|v| v.undecided.is_some());
        let undecided = self.cells.iter().any(|c| {
            undecided_in(&c.vs_baseline) || c.tests.iter().any(|t| undecided_in(&t.vs_baseline))
        });
        Findings {
            interrupted: false,
            differs: differs || reproduced || other_failures,
            undecided,
            not_applied: self.cells.iter().any(|c| !c.applied || c.not_applied > 0),
            // Every cell that ran must have measured something (a pass or a
            // fail): a cell whose runs all errored or timed out is never a
            // pass. A session in which nothing ran measured nothing, unless
            // nothing was planned (an empty plan): one whose harness was
            // killed before its first run was recorded is never clean.
            measured: match self.executed {
                0 => self.planned == 0,
                _ => self.cells.iter().all(|c| !c.unmeasured()),
            },
        }
    }

    /// Whether the session has no cell to compare: one cell only (the
    /// baseline alone, or one perturbed cell with `--no-baseline`). Such a
    /// session measures whether the subject fails at all, so a failure is
    /// its finding, as in a replay.
    pub fn uncontrasted(&self) -> bool {
        self.cells.len() == 1
    }

    /// With `--signature`: the failed runs, in every cell, that matched no
    /// pattern (0 without patterns).
    pub fn other_failures(&self) -> u64 {
        (self.cells.iter())
            .filter_map(|c| c.by_pattern.as_ref())
            .map(|s| s.other)
            .sum()
    }

    /// The exit code of this report as it stands (not interrupted).
    pub fn exit_code(&self) -> i32 {
        Verdict::of(self.findings()).exit_code()
    }
}

/// Builds the report of `session` from its `runs` (any order): the
/// [`Fold`] over them.
pub fn build(session: &SessionRecord, runs: &[RunRecord], load: LoadStats) -> Report {
    let mut fold = Fold::new(session);
    for r in runs {
        fold.add(&crate::store::RunView::of(r));
    }
    fold.finish(load)
}

/// The report from each cell's counts and rows (in the session's cell
/// order) and each cell's runs with per-test data: the comparisons with
/// the baseline and the shams, and the session's totals. Shared by the
/// [`Fold`] and the [`reference`] build.
fn finish_report(
    session: &SessionRecord,
    mut cells: Vec<CellReport>,
    data_runs: Vec<per_test::DataRuns>,
    recorded: u64,
    executed: u64,
    load: LoadStats,
    shards: Option<crate::context::shard::ShardsReport>,
) -> Report {
    if let Some(base) = cells
        .iter()
        .position(|c| c.perturbations.is_empty() && c.name == "baseline")
    {
        let (bk, bn) = (cells[base].k, cells[base].n);
        let compared: Vec<usize> = (0..cells.len())
            .filter(|&i| i != base && cells[i].n > 0 && bn > 0)
            .collect();
        let raw: Vec<f64> = compared
            .iter()
            .map(|&i| stats::fisher_exact(cells[i].k, cells[i].n - cells[i].k, bk, bn - bk))
            .collect();
        let adjusted = stats::holm(&raw);
        let alpha = 1.0 - session.confidence;
        for ((&i, &p), &adj) in compared.iter().zip(&raw).zip(&adjusted) {
            cells[i].vs_baseline = Some(VsBaseline::of(
                (p, adj),
                (cells[i].k, cells[i].n),
                (bk, bn),
                session.confidence,
            ));
        }
        // Timeouts are left out of N, so a perturbation that makes runs hang
        // would never "differ" above: they get their own comparison.
        let finished = |c: &CellReport| c.n + c.timed_out;
        let (bt, bf) = (cells[base].timed_out, finished(&cells[base]));
        let compared: Vec<usize> = (0..cells.len())
            .filter(|&i| i != base && bf > 0 && finished(&cells[i]) > 0)
            .filter(|&i| cells[i].timed_out + bt > 0)
            .collect();
        let raw: Vec<f64> = compared
            .iter()
            .map(|&i| {
                let c = &cells[i];
                stats::fisher_exact(c.timed_out, c.n, bt, bf - bt)
            })
            .collect();
        for ((&i, &p), &adj) in compared.iter().zip(&raw).zip(&stats::holm(&raw)) {
            cells[i].timeouts_vs_baseline = Some(VsBaseline {
                fisher_p: p,
                adjusted_p: adj,
                differs: adj < alpha,
                effect: None,
                undecided: None,
            });
        }
    }

    if let Some(base) = cells
        .iter()
        .position(|c| c.perturbations.is_empty() && c.name == "baseline")
    {
        let mut rows: Vec<Vec<per_test::TestRow>> = cells
            .iter_mut()
            .map(|c| std::mem::take(&mut c.tests))
            .collect();
        per_test::compare(&mut rows, base, session.confidence);
        per_test::compare_outcomes(&mut rows, &data_runs, base, session.confidence);
        for (c, r) in cells.iter_mut().zip(rows) {
            c.tests = r;
        }
    }
    sham::compare(&mut cells, session.confidence);
    let planned = session.plan.len() as u64;
    Report {
        schema: REPORT_SCHEMA,
        session: session.id.clone(),
        command: session.command.clone(),
        cwd: session.cwd.display().to_string(),
        seed: session.seed,
        confidence: session.confidence,
        signature: session.signature.clone(),
        signatures: session.patterns().into_iter().map(str::to_string).collect(),
        started_at: session.started_at.clone(),
        replay_of: session.replay_of.clone(),
        runner: session.runner.clone(),
        runner_note: session.runner_note.clone(),
        left_out: session.left_out.clone(),
        warnings: session.warnings.clone(),
        planned,
        recorded,
        executed,
        jobs: session.jobs,
        partial: recorded < planned,
        skipped_lines: load.skipped_lines,
        session_end: None,
        stop_reason: None,
        cells,
        confirmations: Vec::new(),
        design: None,
        design_chosen: session.design_chosen.clone(),
        shards,
        scan_prove: None,
        per_test_from: session.per_test_from.clone(),
        ci_history: None,
    }
}

impl CellReport {
    /// It ran (applied) but measured nothing: every run errored or timed out.
    pub fn unmeasured(&self) -> bool {
        self.applied && self.n == 0 && self.timed_out + self.errored > 0
    }

    /// Why it measured nothing, in words (`3 timed out, 2 errored`).
    pub fn unmeasured_text(&self) -> String {
        let mut parts = Vec::new();
        if self.timed_out > 0 {
            parts.push(format!("{} timed out", self.timed_out));
        }
        if self.errored > 0 {
            parts.push(format!("{} errored", self.errored));
        }
        format!("nothing measured: {}", parts.join(", "))
    }
}
