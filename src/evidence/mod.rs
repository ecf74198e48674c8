//! The evidence block for a bug report: one stored session (and the ladder
//! that holds it, if any) turned into the facts a reviewer needs to judge and
//! re-run it — repository, host, runner, time window, command, signatures,
//! the cells against the baseline, the per-test rows, reproduction lines, the
//! ladder, the classification and the coverage. Built once from records
//! ([`build`]), then rendered as Markdown ([`markdown::render`]) or JSON
//! ([`render_json`], schema `flakelab.evidence/1`).
//!
//! Pure: no I/O. It never labels a test; every verdict is a count with its N.

pub mod classify;
pub mod html;
pub mod markdown;
#[cfg(test)]
mod snapshots_test;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::record::{HostInfo, RepoInfo};
use crate::record::{LadderRecord, Outcome, RungStatus, SessionRecord};
use crate::redact::Redaction;
use crate::report::{self, Report};
use crate::repro;

use classify::{Classification, CoverageRow};

pub use crate::record::schema::EVIDENCE_SCHEMA;

/// The runner and its version.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Runner {
    /// The recipe's name, or None when the session used no recipe.
    pub name: Option<String>,
    /// The version line the runner printed, when known.
    pub version: Option<String>,
    /// Where the version comes from: `recorded at run time`, `read at
    /// evidence time`, or why it is unknown.
    pub version_source: String,
    /// Why no recipe was used, when none was.
    pub note: Option<String>,
}

/// The runner version as the evidence step found it.
#[derive(Debug, Clone, PartialEq)]
pub enum RunnerVersion {
    /// Stored in the session record by `flakelab run`.
    Recorded(String),
    /// Read by running the recipe's version command now.
    ReadNow(String),
    /// Unknown, with why.
    Unknown(String),
}

/// When the runs ran: the first start and the last end.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Window {
    /// The first run's start (RFC 3339, UTC).
    pub first_start: String,
    /// The last run's end (RFC 3339, UTC).
    pub last_end: String,
    /// Seconds between them.
    pub seconds: f64,
}

/// The first failure signature that repeats, or the first one seen.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecurringSignature {
    /// The normalised signature.
    pub signature: String,
    /// Failing runs that carry it.
    pub runs: u64,
    /// Failing runs in all.
    pub failing_runs: u64,
    /// Whether it repeats (seen in two failing runs or more).
    pub repeats: bool,
    /// The first run (in plan order) that carries it.
    pub first_run: String,
    /// That run's cell.
    pub cell: String,
}

/// One cell of the measurements table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellLine {
    /// Cell name.
    pub name: String,
    /// The mechanism this cell is the sham of, when it is one (the table
    /// marks it `(sham)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sham_of: Option<String>,
    /// Perturbations in `kind=value` form.
    pub perturbations: Vec<String>,
    /// Whether the probes proved the cell applied.
    pub applied: bool,
    /// Why not, when not.
    pub reason: Option<String>,
    /// Failures counted.
    pub k: u64,
    /// Runs measured.
    pub n: u64,
    /// Interval low.
    pub low: f64,
    /// Interval high (the zero-failure bound when k = 0).
    pub high: f64,
    /// `k of N` with its interval or bound, in words.
    pub count: String,
    /// Against the baseline, in words.
    pub versus: String,
    /// Holm-adjusted p against the baseline, when compared.
    pub adjusted_p: Option<f64>,
    /// Whether it differs from the baseline (failures or timeouts).
    pub differs: bool,
    /// Runs that timed out (not in N).
    pub timed_out: u64,
    /// Runs that errored (not in N).
    pub errored: u64,
    /// Why the first run that errored or timed out was not measured
    /// (`RUN: reason`), as the report's cell says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_reason: Option<String>,
    /// Why the first failed run that died by a signal died (`RUN: killed by
    /// SIGSEGV (signal 11)`), as the report's cell says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal_reason: Option<String>,
    /// With `--signature`: the counted runs per pattern and the other
    /// failures (the report's `by_pattern`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by_pattern: Option<report::per_test::PatternSplit>,
}

/// One per-test row that differs from the baseline or failed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TestLine {
    /// The cell.
    pub cell: String,
    /// The test id.
    pub test: String,
    /// `k of N` (or what the row amounts to).
    pub count: String,
    /// The interval or bound.
    pub interval: String,
    /// Against the same test at baseline.
    pub versus: String,
    /// Whether it differs from the baseline.
    pub differs: bool,
    /// Its most frequent failure signature.
    pub signature: Option<String>,
    /// With `--signature`, when it says more than `count`: its failures
    /// per pattern and its other failures, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub split: Option<String>,
}

/// A reproduction line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reproduction {
    /// The cell (or `ladder rung R`).
    pub cell: String,
    /// The run id.
    pub run: String,
    /// The shell line that reproduces it (credential-like values redacted).
    pub line: String,
    /// What the line cannot recreate, if anything.
    pub note: Option<String>,
}

/// A ladder's result, as the evidence shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LadderLine {
    /// The ladder id.
    pub id: String,
    /// What counted as reproducing.
    pub criterion: String,
    /// The cell applied at every rung.
    pub cell: String,
    /// The first rung that reproduced.
    pub reproduced_at: Option<u8>,
    /// Whether Ctrl-C cut it short.
    pub interrupted: bool,
    /// One line per rung.
    pub rungs: Vec<String>,
}

/// The whole evidence block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    /// Always [`EVIDENCE_SCHEMA`].
    pub schema: &'static str,
    /// The session.
    pub session: String,
    /// The subject's repository, when it is in one.
    pub repository: Option<RepoInfo>,
    /// The host (without its name).
    pub host: HostLine,
    /// The runner and its version.
    pub runner: Runner,
    /// flakelab's version that recorded the session.
    pub flakelab_version: String,
    /// When the runs ran, when any did.
    pub window: Option<Window>,
    /// The subject's argv.
    pub command: Vec<String>,
    /// The subject's working directory.
    pub cwd: String,
    /// `cd DIR && CMD` as one shell line.
    pub command_line: String,
    /// Schedule seed.
    pub seed: u64,
    /// Confidence level.
    pub confidence: f64,
    /// Runs per cell, and jobs at once.
    pub runs_per_cell: u32,
    /// Runs in flight at once (`-j`).
    pub jobs: usize,
    /// The signature under investigation (`--signature`), if any: the first
    /// pattern when several were given.
    pub signature: Option<String>,
    /// Every `--signature` pattern, in the order given (numbered from 1 in
    /// the splits).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub signatures: Vec<String>,
    /// The first failure signature that repeats, else the first seen.
    pub recurring_signature: Option<RecurringSignature>,
    /// The cells against the baseline.
    pub cells: Vec<CellLine>,
    /// Per-test rows that differ from the baseline or failed (tests that
    /// failed or were skipped in every run of every cell are listed once,
    /// below, not per cell).
    pub tests: Vec<TestLine>,
    /// Tests that failed in every run of every cell, the baseline's too.
    pub always_failing: Vec<String>,
    /// Tests that were skipped in every run of every cell.
    pub always_skipped: Vec<String>,
    /// The first failing run of each cell that differs (or reproduced the
    /// signature), and the ladder's first reproduction.
    pub reproductions: Vec<Reproduction>,
    /// The ladder, when there is one.
    pub ladder: Option<LadderLine>,
    /// The classification.
    pub classification: Classification,
    /// The coverage block: every class, what looked at it.
    pub coverage: Vec<CoverageRow>,
    /// Notes under the table (excluded runs, partial sessions, …).
    pub notes: Vec<String>,
    /// What the store's CI history says of the session's tests, CI and lab
    /// side by side ([`crate::report::beside`]). Absent without history.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci_history: Option<crate::report::beside::CiHistory>,
    /// `flakelab bisect` results started from this session's runs, as
    /// stored (`bisects.jsonl`), each in its lines.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bisects: Vec<BisectLine>,
}

/// A stored polluter bisection of one of the session's runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BisectLine {
    /// The bisection's id.
    pub id: String,
    /// The failing run it started from.
    pub run: String,
    /// Its result, line by line (`victim: …`, `polluter: …`, `confirmed: …`,
    /// `repro: …`).
    pub lines: Vec<String>,
}

impl From<&crate::bisect::BisectRecord> for BisectLine {
    fn from(b: &crate::bisect::BisectRecord) -> Self {
        BisectLine {
            id: b.id.clone(),
            run: b.run.clone(),
            lines: b.lines(),
        }
    }
}

/// The host, as a bug report needs it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostLine {
    /// OS name and version.
    pub os: String,
    /// Kernel version.
    pub kernel: String,
    /// CPU architecture.
    pub arch: String,
    /// CPU model.
    pub cpu_model: String,
    /// Logical CPUs.
    pub cpus: usize,
    /// Memory in bytes.
    pub memory_bytes: u64,
}

impl From<&HostInfo> for HostLine {
    fn from(h: &HostInfo) -> Self {
        HostLine {
            os: h.os.clone(),
            kernel: h.kernel.clone(),
            arch: h.arch.clone(),
            cpu_model: h.cpu_model.clone(),
            cpus: h.cpus,
            memory_bytes: h.memory_bytes,
        }
    }
}

/// The ladder a session belongs to: the one whose rungs name it.
pub fn ladder_of<'a>(ladders: &'a [LadderRecord], session: &str) -> Option<&'a LadderRecord> {
    ladders.iter().rev().find(|l| {
        l.rungs
            .iter()
            .any(|r| r.session.as_deref() == Some(session))
    })
}

/// The session a ladder's evidence is about: the rung that reproduced, else
/// the last rung that ran.
pub fn ladder_session(ladder: &LadderRecord) -> Option<&str> {
    let reproduced = ladder
        .rungs
        .iter()
        .find(|r| Some(r.rung) == ladder.reproduced_at)
        .and_then(|r| r.session.as_deref());
    reproduced.or_else(|| ladder.rungs.iter().rev().find_map(|r| r.session.as_deref()))
}

fn timestamp(text: &str) -> Option<jiff::Timestamp> {
    utc_millis(text)
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
        .or_else(|| text.parse().ok())
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` (how flakelab writes a start time) as
/// milliseconds since the epoch, without a general parser: None for any
/// other shape, which the general parser then reads.
fn utc_millis(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() != 24
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'.'
        || b[23] != b'Z'
    {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<i64> {
        b[from..to].iter().try_fold(0i64, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + i64::from(c - b'0'))
        })
    };
    let (y, m, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hh, mm, ss, ms) = (num(11, 13)?, num(14, 16)?, num(17, 19)?, num(20, 23)?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&m) || d < 1 || d > month_days[(m - 1) as usize] {
        return None;
    }
    if hh > 23 || mm > 59 || ss > 59 {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + hh) * 60 + mm) * 60_000 + ss * 1000 + ms)
}

/// What the evidence reads from a session's runs beyond its report (when
/// they ran, the recurring signature), folded one run at a time in any
/// order: one entry per distinct failure signature, never one per run.
#[derive(Debug, Default)]
pub struct RunFacts {
    first: Option<jiff::Timestamp>,
    last: Option<jiff::Timestamp>,
    failing: u64,
    signatures: BTreeMap<String, SignatureSeen>,
}

/// A failure signature's count and its first run in plan order.
#[derive(Debug)]
struct SignatureSeen {
    count: u64,
    first_at: usize,
    run: String,
    cell: String,
}

impl RunFacts {
    /// The facts of `runs`.
    #[cfg(test)]
    pub fn of(runs: &[crate::record::RunRecord]) -> RunFacts {
        let mut facts = RunFacts::default();
        for r in runs {
            facts.add(&crate::store::RunView::of(r));
        }
        facts
    }

    /// Adds one run.
    pub fn add(&mut self, r: &crate::store::RunView) {
        let outcome = r.outcome();
        if outcome != Outcome::NotApplied {
            if let Some(start) = timestamp(r.started_at()) {
                let end = start
                    .checked_add(jiff::SignedDuration::from_secs_f64(r.duration_s().max(0.0)))
                    .unwrap_or(start);
                self.first = Some(self.first.map_or(start, |f| f.min(start)));
                self.last = Some(self.last.map_or(end, |l| l.max(end)));
            }
        }
        if outcome != Outcome::Fail {
            return;
        }
        self.failing += 1;
        let sig = r
            .failure_signature()
            .or_else(|| r.tests().find(|t| t.failed()).and_then(|t| t.signature));
        let Some(sig) = sig else { return };
        let index = r.index();
        let seen = match self.signatures.get_mut(sig) {
            Some(seen) => seen,
            None => self
                .signatures
                .entry(sig.to_string())
                .or_insert_with(|| SignatureSeen {
                    count: 0,
                    first_at: index,
                    run: r.id().into_owned(),
                    cell: r.cell().to_string(),
                }),
        };
        seen.count += 1;
        if index < seen.first_at {
            seen.first_at = index;
            seen.run = r.id().into_owned();
            seen.cell = r.cell().to_string();
        }
    }

    /// When the runs ran: the first start and the last end.
    pub fn window(&self) -> Option<Window> {
        let (first, last) = (self.first?, self.last?);
        let text = |t: jiff::Timestamp| {
            t.round(jiff::Unit::Millisecond)
                .map(|t| t.to_string())
                .unwrap_or_default()
        };
        Some(Window {
            first_start: text(first),
            last_end: text(last),
            seconds: (last.as_millisecond() - first.as_millisecond()) as f64 / 1000.0,
        })
    }

    /// The first failure signature seen in two failing runs or more (in
    /// plan order of first appearance), else the first signature seen.
    pub fn recurring_signature(&self) -> Option<RecurringSignature> {
        let first = |repeating: bool| {
            self.signatures
                .iter()
                .filter(|(_, s)| !repeating || s.count >= 2)
                .min_by_key(|(_, s)| s.first_at)
        };
        let (signature, seen) = first(true).or_else(|| first(false))?;
        Some(RecurringSignature {
            signature: signature.clone(),
            runs: seen.count,
            failing_runs: self.failing,
            repeats: seen.count >= 2,
            first_run: seen.run.clone(),
            cell: seen.cell.clone(),
        })
    }
}

fn cell_lines(report: &Report) -> Vec<CellLine> {
    report
        .cells
        .iter()
        .map(|c| CellLine {
            name: c.name.clone(),
            sham_of: c.sham_of.clone(),
            perturbations: c.perturbations.clone(),
            applied: c.applied,
            reason: c.reason.clone(),
            k: c.k,
            n: c.n,
            low: c.low,
            high: c.high,
            count: classify::count_words(c.k, c.n, c.low, c.high, report.confidence),
            versus: report::versus_text(c),
            adjusted_p: c.vs_baseline.as_ref().map(|v| v.adjusted_p),
            differs: c.vs_baseline.as_ref().is_some_and(|v| v.differs)
                || c.timeouts_vs_baseline.as_ref().is_some_and(|v| v.differs),
            timed_out: c.timed_out,
            errored: c.errored,
            error_reason: c.error_reason.clone(),
            signal_reason: c.signal_reason.clone(),
            by_pattern: c.by_pattern.clone(),
        })
        .collect()
}

/// Tests whose every row, in every cell, has `status` and none differs.
fn everywhere(report: &Report, status: report::per_test::TestStatus) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for t in report.cells.iter().flat_map(|c| &c.tests) {
        if ids.contains(&t.id) {
            continue;
        }
        let rows: Vec<_> = report
            .cells
            .iter()
            .filter(|c| c.applied)
            .filter_map(|c| c.tests.iter().find(|r| r.id == t.id))
            .collect();
        let same = rows
            .iter()
            .all(|r| r.status == status && !r.vs_baseline.as_ref().is_some_and(|v| v.differs));
        if same && rows.len() == report.cells.iter().filter(|c| c.applied).count() {
            ids.push(t.id.clone());
        }
    }
    ids
}

fn test_lines(report: &Report, apart: &[String]) -> Vec<TestLine> {
    report::shown_test_rows(report)
        .into_iter()
        .filter(|(_, t)| !apart.contains(&t.id))
        .map(|(c, t)| TestLine {
            cell: c.name.clone(),
            test: t.id.clone(),
            count: report::test_count_text(t),
            interval: report::test_interval_text(t),
            versus: report::test_versus_text(c, t),
            differs: t.differs(),
            signature: t.signatures.first().map(|s| s.signature.clone()),
            split: (t.by_pattern.as_ref())
                .filter(|s| report::shows_split(report, s))
                .map(|s| report::split_text(s, t.n)),
        })
        .collect()
}

fn ladder_line(l: &LadderRecord) -> LadderLine {
    LadderLine {
        id: l.id.clone(),
        criterion: l.criterion.clone(),
        cell: l.cell.clone(),
        reproduced_at: l.reproduced_at,
        interrupted: l.interrupted,
        rungs: l
            .rungs
            .iter()
            .map(|r| {
                let status = match r.status {
                    RungStatus::Clean | RungStatus::Reproduced => {
                        classify::count_words(r.k, r.n, r.low, r.high, l.confidence)
                    }
                    RungStatus::Skipped => format!(
                        "skipped ({})",
                        r.reason.as_deref().unwrap_or("no reason recorded")
                    ),
                    RungStatus::NotApplied => format!(
                        "not applied ({})",
                        r.reason.as_deref().unwrap_or("no reason recorded")
                    ),
                    RungStatus::Unmeasured => {
                        "nothing measured (every run errored or timed out)".into()
                    }
                    RungStatus::NotRun => "not run".into(),
                };
                let mark = if r.status == RungStatus::Reproduced {
                    " — reproduced"
                } else {
                    ""
                };
                format!(
                    "rung {} ({}: {}): {status}{mark}",
                    r.rung, r.name, r.topology
                )
            })
            .collect(),
    }
}

/// Builds the evidence of `session` from its runs, the ladder that holds it
/// (if any) and the runner version found for it.
#[cfg(test)]
pub fn build(
    session: &SessionRecord,
    runs: &[crate::record::RunRecord],
    load: crate::store::LoadStats,
    ladder: Option<&LadderRecord>,
    version: RunnerVersion,
    redaction: &Redaction,
) -> Evidence {
    build_from(
        session,
        &RunFacts::of(runs),
        report::build(session, runs, load),
        ladder,
        version,
        redaction,
    )
}

/// Like [`build`], from a report already built (and, for a screened
/// session, already holding its confirmations) and the facts folded from
/// the same runs.
pub fn build_from(
    session: &SessionRecord,
    facts: &RunFacts,
    report: report::Report,
    ladder: Option<&LadderRecord>,
    version: RunnerVersion,
    redaction: &Redaction,
) -> Evidence {
    let start = timestamp(&session.started_at);
    let rung = session.rung.as_ref().map(|r| r.rung);
    let classification = classify::classify(&report, rung, ladder, start);
    let coverage = classify::coverage(&report, ladder, start);
    let mut reproductions: Vec<Reproduction> = report::shown_failures(&report)
        .into_iter()
        .map(|(c, f)| Reproduction {
            cell: c.name.clone(),
            run: f.run.clone(),
            line: redaction.line(&f.repro),
            note: f.repro_note.clone(),
        })
        .collect();
    // Failures matching no `--signature` pattern are real: each cell's
    // first is reproducible too.
    reproductions.extend(
        report::shown_other_failures(&report)
            .into_iter()
            .map(|(c, f)| Reproduction {
                cell: format!("{} (other failure)", c.name),
                run: f.run.clone(),
                line: redaction.line(&f.repro),
                note: f.repro_note.clone(),
            }),
    );
    if let Some(l) = ladder {
        for r in &l.rungs {
            if let Some((run, line)) = &r.first_reproduction {
                if !reproductions.iter().any(|x| &x.run == run) {
                    reproductions.push(Reproduction {
                        cell: format!("ladder rung {}", r.rung),
                        run: run.clone(),
                        line: redaction.line(line),
                        note: crate::ladder::reproduction_note(l, r),
                    });
                }
            }
        }
    }
    let (version, version_source) = match version {
        RunnerVersion::Recorded(v) => (Some(v), "recorded at run time".to_string()),
        RunnerVersion::ReadNow(v) => (
            Some(v),
            "read when the evidence was written, not at run time".to_string(),
        ),
        RunnerVersion::Unknown(why) => (None, why),
    };
    let always_failing = everywhere(&report, report::per_test::TestStatus::AlwaysFails);
    let always_skipped = everywhere(&report, report::per_test::TestStatus::AlwaysSkipped);
    let command: Vec<String> = session.command.clone();
    Evidence {
        schema: EVIDENCE_SCHEMA,
        session: session.id.clone(),
        repository: session.repo.clone(),
        host: HostLine::from(&session.host),
        runner: Runner {
            name: session.runner.clone(),
            version,
            version_source,
            note: session.runner_note.clone(),
        },
        flakelab_version: session.flakelab_version.clone(),
        window: facts.window(),
        command_line: redaction.line(&format!(
            "cd {} && {}",
            repro::quote(&session.cwd.display().to_string()),
            repro::join(&command)
        )),
        command,
        cwd: session.cwd.display().to_string(),
        seed: session.seed,
        confidence: session.confidence,
        runs_per_cell: session.plan.runs_per_cell,
        jobs: session.jobs,
        signature: session.signature.clone(),
        signatures: session.patterns().into_iter().map(str::to_string).collect(),
        recurring_signature: facts.recurring_signature(),
        cells: cell_lines(&report),
        tests: test_lines(
            &report,
            &[always_failing.clone(), always_skipped.clone()].concat(),
        ),
        always_failing,
        always_skipped,
        reproductions,
        ladder: ladder.map(ladder_line),
        classification,
        coverage,
        notes: report::notes(&report),
        bisects: Vec::new(),
        ci_history: report.ci_history.clone(),
    }
}

/// The evidence as one pretty-printed JSON document.
pub fn render_json(evidence: &Evidence) -> String {
    let mut s = serde_json::to_string_pretty(evidence).expect("evidence always serialises");
    s.push('\n');
    s
}

#[cfg(test)]
mod timestamp_tests {
    use proptest::prelude::*;

    #[test]
    fn the_fast_reading_is_the_parser_s() {
        for text in [
            "2026-12-01T21:31:12.715Z",
            "1970-01-01T00:00:00.000Z",
            "2000-02-29T23:59:59.999Z",
            "1969-12-31T23:59:59.999Z",
        ] {
            let parsed: jiff::Timestamp = text.parse().expect("valid");
            assert_eq!(
                super::utc_millis(text),
                Some(parsed.as_millisecond()),
                "{text}"
            );
        }
        // Not the shape, or not a date: left to the parser.
        for text in [
            "2026-12-01T21:31:12Z",
            "2026-12-01T21:31:12.715+01:00",
            "2026-02-30T00:00:00.000Z",
            "2026-13-01T00:00:00.000Z",
            "2026-12-01T24:00:00.000Z",
            "2026-12-01T21:31:1x.715Z",
        ] {
            assert_eq!(super::utc_millis(text), None, "{text}");
        }
        assert!(super::timestamp("2026-12-01T21:31:12Z").is_some());
    }

    proptest! {
        #[test]
        fn any_millisecond_reads_back(ms in -62_135_596_800_000i64..253_402_300_799_999i64) {
            let t = jiff::Timestamp::from_millisecond(ms).expect("in range");
            let text = t.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
            prop_assert_eq!(super::utc_millis(&text), Some(ms), "{}", text);
        }
    }
}
