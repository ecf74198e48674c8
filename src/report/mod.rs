//! The report model: computed once from a stored session and its run
//! records, then rendered as a table, JSON or Markdown. Live output and
//! `flakelab report` go through the same [`Fold`] (which [`build`] runs over
//! a slice), so they cannot disagree, and reading a store of a million runs
//! holds one run at a time.
//! Pure: no I/O here except in the renderers' callers.

pub mod beside;
pub mod catalog;
pub mod color;
pub mod fold;
#[cfg(test)]
mod fold_tests;
pub mod gha;
pub mod github;
#[cfg(test)]
mod github_tests;
pub mod handover;
pub mod history;
pub mod html;
pub mod json;
pub mod ladder;
pub mod markdown;
pub mod per_test;
pub mod progress;
#[doc(hidden)]
pub mod reference;
pub mod scan;
pub mod screen;
pub use screen::{confirmed_rows, design_text, screen_candidates};
pub mod sham;
#[cfg(test)]
mod snapshots_test;
pub mod svg;
pub mod table;
pub mod undecided;
pub mod verify;

use serde::Serialize;

use crate::record::{Outcome, RunRecord, SessionRecord};
use crate::stats;
use crate::store::LoadStats;
use crate::verdict::{Findings, Verdict};

pub use fold::Fold;

/// JSON schema tag of the report document.
pub const REPORT_SCHEMA: &str = "flakelab.report/1";

/// A cell compared with the baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VsBaseline {
    /// Two-sided Fisher exact p-value of the cell against the baseline.
    pub fisher_p: f64,
    /// Holm-adjusted across all cells compared.
    pub adjusted_p: f64,
    /// Whether the adjusted p-value is below 1 − confidence.
    pub differs: bool,
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
    /// With a signature: failed runs that did not reproduce it.
    #[serde(skip)]
    pub unmatched_failures: u64,
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
    /// The signature regex, if any.
    pub signature: Option<String>,
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
    pub shards: Option<crate::shard::ShardsReport>,
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
    /// Replays that failed again (matching the signature, with one).
    pub failed: u64,
    /// `deterministic` (K of K: the recorded conditions determine the
    /// failure), `timing` (fewer: timing is involved) or `unmeasured`.
    pub verdict: &'static str,
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
            let failed = again
                .iter()
                .filter(|r| r.outcome == Outcome::Fail)
                .filter(|r| session.signature.is_none() || r.signature_match == Some(true))
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
                verdict: confirmation_verdict(times, measured, failed),
                session: s.id.clone(),
            })
        })
        .collect()
}

impl Confirmation {
    /// The verdict in words.
    pub fn sentence(&self) -> String {
        match self.verdict {
            "deterministic" => format!(
                "failed {} of {}: the recorded conditions determine the failure (a deterministic oracle)",
                self.failed, self.measured
            ),
            "timing" => format!(
                "failed {} of {}: the recorded conditions do not determine it; timing or state outside them is involved",
                self.failed, self.measured
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
    /// Where the per-test rows come from, in words.
    pub fn per_test_source(&self) -> &str {
        (self.per_test_from.as_deref()).unwrap_or(crate::testreport::Format::Junit.label())
    }

    /// What the report found, for [`crate::verdict::Verdict::of`] (the
    /// caller adds whether the session was interrupted).
    pub fn findings(&self) -> Findings {
        let differs = self.cells.iter().any(|c| {
            c.vs_baseline.as_ref().is_some_and(|v| v.differs)
                || c.timeouts_vs_baseline.as_ref().is_some_and(|v| v.differs)
                || c.tests.iter().any(per_test::TestRow::differs)
        });
        // With a signature, or in a replay, any counted failure is the finding.
        let reproduced = (self.signature.is_some() || self.replay_of.is_some())
            && self.cells.iter().any(|c| c.k > 0);
        Findings {
            interrupted: false,
            differs: differs || reproduced,
            not_applied: self.cells.iter().any(|c| !c.applied || c.not_applied > 0),
            // Every cell that ran must have measured something (a pass or a
            // fail): a cell whose runs all errored or timed out is never a
            // pass (a session where nothing ran at all, which only an empty
            // plan gives, is not "nothing measured").
            measured: self.executed == 0 || self.cells.iter().all(|c| !c.unmeasured()),
        }
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
    shards: Option<crate::shard::ShardsReport>,
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
            cells[i].vs_baseline = Some(VsBaseline {
                fisher_p: p,
                adjusted_p: adj,
                differs: adj < alpha,
            });
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

/// A cell's name as the tables show it: a sham says so.
pub fn shown_name(cell: &CellReport) -> String {
    match cell.sham_of {
        Some(_) => format!("{} (sham)", cell.name),
        None => cell.name.clone(),
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

/// The interval column: `[low, high]`, or `p < high` when nothing failed,
/// or `—` when nothing was measured.
pub fn interval_text(cell: &CellReport) -> String {
    interval_words(cell.n, cell.k, cell.low, cell.high)
}

/// `—` when nothing was measured, the bound when nothing failed, else the
/// interval: for cells and tests alike.
fn interval_words(n: u64, k: u64, low: f64, high: f64) -> String {
    if n == 0 {
        "—".into()
    } else if k == 0 {
        stats::format_bound(high)
    } else {
        format!("[{low:.3}, {high:.3}]")
    }
}

/// The versus-baseline column in words.
pub fn versus_text(cell: &CellReport) -> String {
    match (&cell.vs_baseline, &cell.timeouts_vs_baseline) {
        (None, Some(t)) | (Some(VsBaseline { differs: false, .. }), Some(t)) if t.differs => {
            format!("timeouts differ ({})", stats::p_text(t.adjusted_p))
        }
        (None, _) if cell.unmeasured() => cell.unmeasured_text(),
        (Some(v), _) if v.differs && cell.sham.is_some() && !sham::attributed(cell) => {
            format!("differs (p={}), not from its sham", short_p(v.adjusted_p))
        }
        (vs, _) => versus_words(cell, vs.as_ref()),
    }
}

/// A comparison in words, for a cell or one of its tests.
fn versus_words(cell: &CellReport, vs: Option<&VsBaseline>) -> String {
    match vs {
        None if cell.name == "baseline" => "(reference)".into(),
        None => "not compared".into(),
        Some(v) if v.differs => format!("differs ({})", stats::p_text(v.adjusted_p)),
        Some(v) => format!("no difference shown ({})", stats::p_text(v.adjusted_p)),
    }
}

/// The applied column in words: whether the probes proved the cell, then
/// whether its runs did, then what its stress threads got.
pub fn applied_text(cell: &CellReport, baseline: Option<&CellReport>) -> String {
    if !cell.applied {
        return format!(
            "NOT APPLIED: {}",
            cell.reason.as_deref().unwrap_or("no reason recorded")
        );
    }
    let mut text = match &cell.not_applied_reason {
        Some(why) => format!(
            "applied in {} of {} runs; not applied in {}: {why}",
            cell.n + cell.timed_out + cell.errored,
            cell.n + cell.timed_out + cell.errored + cell.not_applied,
            cell.not_applied
        ),
        None => "applied".to_string(),
    };
    if let Some(stress) = cell.cpu.as_ref().and_then(|c| c.stress.as_ref()) {
        text.push_str(&format!("; {}", stress_text(cell, stress, baseline)));
    }
    text
}

/// What a cell's stressors and its subject got, in words.
fn stress_text(cell: &CellReport, s: &CellStress, baseline: Option<&CellReport>) -> String {
    use crate::perturb::probe::percent;
    let runs = cell.cpu.as_ref().map_or(0, |c| c.runs);
    let mut text = format!("stressors got {} of a CPU each", percent(s.share_median));
    if let Some(part) = s.part_median {
        text.push_str(&format!(", {} of the run's CPU time", percent(part)));
    }
    text.push_str(&format!(" (median of {runs} run(s)"));
    if s.unjudged > 0 {
        text.push_str(&format!(", {} too short to judge", s.unjudged));
    }
    text.push(')');
    let subject = |c: &CellReport| {
        let cpu = c.cpu.as_ref()?;
        Some((cpu.subject_s_median?, cpu.subject_share_median?))
    };
    if let Some((secs, share)) = subject(cell) {
        text.push_str(&format!(
            "; subject {secs:.2} s CPU per run, on a CPU {} of its time",
            percent(share)
        ));
        if let Some((b_secs, b_share)) = baseline.and_then(subject) {
            text.push_str(&format!(" (baseline {b_secs:.2} s, {})", percent(b_share)));
        }
    }
    text
}

/// Notes under the table: excluded runs, stragglers, partial sessions.
pub fn notes(report: &Report) -> Vec<String> {
    let mut out = Vec::new();
    let shards_missing = report
        .shards
        .as_ref()
        .is_some_and(|s| !s.missing.is_empty());
    match report.session_end {
        Some("no_stop") => out.push(format!(
            "ended without a stop: {} of {} planned runs were recorded, then the harness was killed (or the machine went down)",
            report.recorded, report.planned
        )),
        Some("running") => out.push(format!(
            "still running: {} of {} planned runs recorded so far",
            report.recorded, report.planned
        )),
        Some("failed") if report.partial => out.push(format!(
            "partial session: {} of {} planned runs were recorded (an error stopped it)",
            report.recorded, report.planned
        )),
        _ if report.partial => out.push(format!(
            "partial session: {} of {} planned runs were recorded ({})",
            report.recorded,
            report.planned,
            if shards_missing {
                "shards missing"
            } else {
                "interrupted"
            }
        )),
        _ => {}
    }
    out.extend(report.shards.iter().flat_map(crate::shard::notes));
    if report.executed > 0 && report.cells.iter().all(|c| c.n == 0 && c.timed_out == 0) {
        out.push(
            "nothing was measured: every run errored (see each record's `reason`)".to_string(),
        );
    } else {
        let timeouts_differ =
            |c: &CellReport| c.timeouts_vs_baseline.as_ref().is_some_and(|v| v.differs);
        for c in report
            .cells
            .iter()
            .filter(|c| c.unmeasured() && !timeouts_differ(c))
        {
            out.push(format!(
                "cell `{}` measured nothing ({}): it is not a pass; see each record's `reason`",
                c.name,
                c.unmeasured_text().trim_start_matches("nothing measured: ")
            ));
        }
    }
    out.extend(sham::notes(report));
    for warning in &report.warnings {
        out.push(format!("warning: {warning}"));
    }
    for cell in &report.left_out {
        out.push(format!("left out of the matrix: {cell}"));
    }
    if report.jobs > 1 {
        out.push(format!(
            "up to {} runs shared the working directory at once (-j {}): collisions between copies count as failures",
            report.jobs, report.jobs
        ));
    }
    if report.skipped_lines > 0 {
        out.push(format!(
            "{} unreadable line(s) in the store were skipped",
            report.skipped_lines
        ));
    }
    for c in &report.cells {
        out.extend(c.notes.iter().cloned());
        let mut excluded = Vec::new();
        if c.timed_out > 0 {
            excluded.push(format!("{} timed out", c.timed_out));
        }
        if c.errored > 0 {
            excluded.push(format!("{} errored", c.errored));
        }
        if !excluded.is_empty() {
            out.push(format!(
                "{}: {} (not counted in N)",
                c.name,
                excluded.join(", ")
            ));
        }
        if let Some(v) = c.timeouts_vs_baseline.as_ref().filter(|v| v.differs) {
            out.push(format!(
                "{}: its runs time out more often than the baseline's: {} of {} against the baseline ({})",
                c.name,
                c.timed_out,
                c.n + c.timed_out,
                stats::p_text(v.adjusted_p)
            ));
        }
        if c.runs_without_tests > 0 {
            out.push(format!(
                "{}: {} of {} counted runs have no per-test data (report missing or unreadable; see `tests_missing` in their records)",
                c.name,
                c.runs_without_tests,
                c.n
            ));
        }
        if c.stragglers > 0 {
            out.push(format!(
                "{}: runs left {} process(es) behind; flakelab killed them",
                c.name, c.stragglers
            ));
        }
        if report.signature.is_some() && c.unmatched_failures > 0 {
            out.push(format!(
                "{}: {} failure(s) did not match the signature and are counted as not reproducing it",
                c.name, c.unmatched_failures
            ));
        }
    }
    out
}

/// The cells whose first failure a report shows: those that differ from the
/// baseline, and with a signature, those that reproduced it.
pub fn shown_failures(report: &Report) -> Vec<(&CellReport, &FirstFailure)> {
    report
        .cells
        .iter()
        .filter(|c| {
            c.vs_baseline.as_ref().is_some_and(|v| v.differs)
                || ((report.signature.is_some() || report.replay_of.is_some()) && c.k > 0)
        })
        .filter_map(|c| c.first_failure.as_ref().map(|f| (c, f)))
        .collect()
}

/// The per-test rows a human report shows, in cell order: rows that differ
/// from baseline, rows with failures, and rows whose status changed from the
/// baseline's (a test that stopped running or is skipped only here).
pub fn shown_test_rows(report: &Report) -> Vec<(&CellReport, &per_test::TestRow)> {
    let base = report.cells.iter().find(|c| c.name == "baseline");
    let base_status = |id: &str| {
        base.and_then(|b| b.tests.iter().find(|t| t.id == id))
            .map(|t| t.status)
    };
    let mut out = Vec::new();
    for c in &report.cells {
        for t in &c.tests {
            let differs = t.differs();
            let failed = t.k > 0 || t.other_failures > 0;
            let changed = c.name != "baseline"
                && matches!(
                    t.status,
                    per_test::TestStatus::NeverRan | per_test::TestStatus::AlwaysSkipped
                )
                && base_status(&t.id) != Some(t.status);
            if differs || failed || changed {
                out.push((c, t));
            }
        }
    }
    out
}

/// Distinct tests; of those no shown row mentions, how many passed in every
/// run that ran them and how many were skipped in every cell.
pub fn test_counts(report: &Report) -> (usize, usize, usize) {
    let all: std::collections::BTreeSet<&str> = report
        .cells
        .iter()
        .flat_map(|c| c.tests.iter().map(|t| t.id.as_str()))
        .collect();
    let shown: std::collections::BTreeSet<&str> = shown_test_rows(report)
        .iter()
        .map(|(_, t)| t.id.as_str())
        .collect();
    let skipped_everywhere = |id: &str| {
        report
            .cells
            .iter()
            .flat_map(|c| c.tests.iter().filter(move |t| t.id == id))
            .all(|t| t.status == per_test::TestStatus::AlwaysSkipped)
    };
    let clean: Vec<&&str> = all.iter().filter(|id| !shown.contains(*id)).collect();
    let skipped = clean.iter().filter(|id| skipped_everywhere(id)).count();
    (all.len(), clean.len() - skipped, skipped)
}

/// The k-of-N text of a test row, naming the statuses that are not counts.
pub fn test_count_text(t: &per_test::TestRow) -> String {
    match t.status {
        per_test::TestStatus::AlwaysSkipped => format!("skipped in all {} runs", t.skipped),
        per_test::TestStatus::NeverRan => "never ran".to_string(),
        per_test::TestStatus::AlwaysFails => format!("{} of {} (always fails)", t.k, t.n),
        per_test::TestStatus::Measured => format!("{} of {}", t.k, t.n),
    }
}

/// The interval text of a test row.
pub fn test_interval_text(t: &per_test::TestRow) -> String {
    interval_words(t.n, t.k, t.low, t.high)
}

/// The versus-baseline text of a test row: its failures' comparison, or,
/// when only its outcome distribution differs (failed → skipped, passed →
/// errored), that.
pub fn test_versus_text(cell: &CellReport, t: &per_test::TestRow) -> String {
    let failures_differ = t.vs_baseline.as_ref().is_some_and(|v| v.differs);
    match &t.shift_vs_baseline {
        Some(s) if s.differs && !failures_differ => {
            format!("outcomes differ ({})", stats::p_text(s.adjusted_p))
        }
        _ => versus_words(cell, t.vs_baseline.as_ref()),
    }
}

/// The outcome shift of a test row in words, when its distribution
/// differs from the baseline's and says more than its failure count does
/// (`baseline failed 3 → here skipped 3`, `passed 6 → errored 6`).
pub fn test_shift_text(t: &per_test::TestRow) -> Option<String> {
    let failures_differ = t.vs_baseline.as_ref().is_some_and(|v| v.differs);
    let beyond = |o: &per_test::Outcomes| o.errored + o.skipped + o.timed_out + o.absent > 0;
    t.shift_vs_baseline
        .as_ref()
        .filter(|s| s.differs && (!failures_differ || beyond(&s.from) || beyond(&s.to)))
        .map(|s| {
            format!(
                "outcomes: baseline {} → here {} ({})",
                s.from.words(),
                s.to.words(),
                stats::p_text(s.adjusted_p)
            )
        })
}

/// The header's run count: executed runs, and the placeholders of cells
/// that were not applied.
pub fn runs_text(report: &Report) -> String {
    let not_applied = report.recorded - report.executed;
    let mut s = format!("{} of {} runs", report.executed, report.planned);
    if not_applied > 0 {
        s.push_str(&format!(" ({not_applied} more not applied)"));
    }
    s
}

/// What the cell rows and the per-test rows count, in words: the same
/// thing, runs; with a signature, runs that reproduced it.
pub fn counting_text(report: &Report) -> String {
    match &report.signature {
        Some(sig) => format!(
            "cell rows count runs that reproduced /{sig}/ in their output or a failing test's message; test rows count runs in which that test's first attempt failed with a matching message, each also counted in its cell's row"
        ),
        None => "cell rows count runs that failed, of N that passed or failed; test rows count runs in which the test's first attempt failed or errored, of N in which it passed, failed or errored (a first attempt that passed on a rerun counts for its test)".to_string(),
    }
}

/// The failure column's heading.
pub fn failure_heading(report: &Report) -> &'static str {
    if report.signature.is_some() {
        "matching"
    } else {
        "failed"
    }
}

/// Formats a p-value compactly (`0.032`, `1.5e-11`), for `p=…` texts;
/// at [`stats::P_FLOOR`] or below, `<1e-300` (never 0). Prefer
/// [`stats::p_text`], which writes the whole `p=0.032` / `p < 1e-300`.
pub fn short_p(p: f64) -> String {
    if p <= stats::P_FLOOR {
        "<1e-300".to_string()
    } else if p >= 0.001 {
        format!("{p:.3}")
    } else {
        format!("{p:.1e}")
    }
}
