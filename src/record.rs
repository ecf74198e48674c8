//! The records flakelab stores: one [`RunRecord`] per run and one
//! [`SessionRecord`] per session. These types are the store contract
//! (`runs/<session>.jsonl`, `sessions.jsonl`); every record carries a schema
//! version. How a run record is encoded on disk is the store's business
//! (`store::compact`): these are the records as every reader sees them.
//!
//! This module owns the shapes only; it does no I/O.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::plan::Plan;

/// The machine a session ran on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    /// Host name.
    pub hostname: String,
    /// OS name and version, e.g. "Debian GNU/Linux 12".
    pub os: String,
    /// Kernel version.
    pub kernel: String,
    /// CPU architecture, e.g. "x86_64".
    pub arch: String,
    /// CPU model name.
    pub cpu_model: String,
    /// Logical CPUs online.
    pub cpus: usize,
    /// Total memory in bytes.
    pub memory_bytes: u64,
}

/// The git repository that holds the subject's working directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepoInfo {
    /// Repository top-level directory.
    pub root: String,
    /// HEAD commit (full hash), None in a repository with no commits.
    pub commit: Option<String>,
    /// Current branch, None when detached.
    pub branch: Option<String>,
    /// Whether tracked files had uncommitted changes.
    pub dirty: bool,
    /// URL of the `origin` remote, if any (credentials redacted).
    pub remote: Option<String>,
}

#[cfg(test)]
pub(crate) mod fixture;
pub mod history;
pub(crate) mod schema;

pub use schema::{LADDER_SCHEMA, RUN_SCHEMA, RUN_SCHEMA_V1, SESSION_END_SCHEMA, SESSION_SCHEMA};

/// How one attempt at a test case ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseOutcome {
    /// No failure, error or skipped child.
    Passed,
    /// A `<failure>` child.
    Failed,
    /// An `<error>` child (and no `<failure>`).
    Errored,
    /// A `<skipped>` child (and no `<failure>` or `<error>`).
    Skipped,
}

/// How a session that recorded its end stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStop {
    /// Its plan ran to the end (or a sequential design stopped it early).
    Finished,
    /// A stop signal (Ctrl-C, SIGTERM) cut it short; finished runs are kept.
    Interrupted,
    /// An error stopped it (for example the store could not be written).
    Failed,
}

/// The last record of a session, appended to `session-ends.jsonl` when it
/// stops. A session without one that is not running ended without a stop
/// (the harness was killed, or the machine went down).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionEndRecord {
    /// Always [`SESSION_END_SCHEMA`].
    pub schema: String,
    /// The session this record ends.
    pub session: String,
    /// Wall-clock end (RFC 3339, UTC).
    pub ended_at: String,
    /// How the session stopped.
    pub how: SessionStop,
    /// What stopped a failed session (the error, as it was reported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What the session learnt while it ran and could not say at its start
    /// (its warden ended during it, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// How one run ended, as counted by the statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The command exited 0.
    Pass,
    /// The command exited non-zero or was killed by a signal it did not get from us.
    Fail,
    /// The run hit its timeout and was killed.
    Timeout,
    /// The run could not be measured (spawn failure, harness error).
    Error,
    /// The cell's perturbation was not proven to apply; nothing was run.
    NotApplied,
}

impl Outcome {
    /// The lowercase name used in records and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Timeout => "timeout",
            Outcome::Error => "error",
            Outcome::NotApplied => "not_applied",
        }
    }
}

/// How the process ended, converted once from the OS status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "how", rename_all = "snake_case")]
pub enum ProcessEnd {
    /// Exited on its own with this code.
    Exited {
        /// The exit code.
        code: i32,
    },
    /// Killed by a signal flakelab did not send.
    Signaled {
        /// The signal number.
        signal: i32,
    },
    /// Killed by flakelab after the timeout; `signal` is the last signal sent
    /// (15 when SIGTERM sufficed, 9 when it escalated to SIGKILL).
    TimedOut {
        /// The last signal sent to the group.
        signal: i32,
    },
    /// Stopped by flakelab because the session was interrupted.
    Interrupted,
    /// The process could not be started.
    SpawnFailed {
        /// The OS error.
        message: String,
    },
    /// No process was started (the cell was not applied).
    NotStarted,
}

/// The environment change a run made relative to the harness's own
/// environment. Values whose names look like credentials are redacted when
/// recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EnvDelta {
    /// Variables set (name → value).
    pub set: BTreeMap<String, String>,
    /// Variables removed.
    pub unset: Vec<String>,
}

/// One run of the subject, as stored in `runs/<session>.jsonl` (and, in
/// stores written before `flakelab.run/2`, in `runs.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Always [`RUN_SCHEMA`].
    pub schema: String,
    /// Unique run id: `<session>.<index>`.
    pub id: String,
    /// The session this run belongs to.
    pub session: String,
    /// Position of this run in the session's interleaved plan.
    pub index: usize,
    /// Cell name (`baseline` or perturbations joined with `+`).
    pub cell: String,
    /// The cell's perturbations in `kind=value` form.
    pub perturbations: Vec<String>,
    /// Replicate index within the cell (0-based).
    pub replicate: u32,
    /// The per-run seed derived from the session seed.
    pub seed: u64,
    /// Wall-clock start time (RFC 3339, UTC).
    pub started_at: String,
    /// Duration in seconds, measured on the monotonic clock.
    pub duration_s: f64,
    /// The outcome counted by the statistics.
    pub outcome: Outcome,
    /// How the process ended.
    pub end: ProcessEnd,
    /// Exit code, when the process exited on its own.
    pub exit_code: Option<i32>,
    /// Signal that ended the process, when one did.
    pub signal: Option<i32>,
    /// Whether a failed run's output matched `--signature` (None without one).
    pub signature_match: Option<bool>,
    /// Which `--signature` the run reproduced: the index (from 0, in the
    /// order given) of the first pattern its output or a failing test's
    /// message matched. Absent when it matched none, and in records written
    /// before several patterns could be given (then a match is the first's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature_pattern: Option<u32>,
    /// Why the run is not a pass, when flakelab knows: not applied, errored,
    /// timed out (with the limit), died by a signal (named).
    pub reason: Option<String>,
    /// Captured stdout+stderr (head and tail), relative to the store.
    pub log: Option<PathBuf>,
    /// Bytes the child wrote in all.
    pub output_bytes: u64,
    /// Bytes dropped from the middle of the log by the size cap.
    pub output_dropped: u64,
    /// The exact argv that ran.
    pub argv: Vec<String>,
    /// The working directory.
    pub cwd: PathBuf,
    /// The environment delta (redacted).
    pub env: EnvDelta,
    /// A shell line that reproduces this run without flakelab.
    pub repro: String,
    /// What `repro` cannot recreate (e.g. CPU stress), if anything.
    #[serde(default)]
    pub repro_note: Option<String>,
    /// The host's CPU busy share (0–1) while the run ran: every process on
    /// the host, flakelab's stress and the subject included. Context only:
    /// it proves nothing about this run (see `cpu`).
    #[serde(default)]
    pub cpu_busy: Option<f64>,
    /// The CPU time this run's processes and its stress threads got, from
    /// per-process and per-thread accounting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<RunCpu>,
    /// Processes left behind by the run that flakelab had to kill.
    pub stragglers: u32,
    /// Problems the harness met that did not change the outcome.
    pub warnings: Vec<String>,
    /// The runner's workers in this run (workers cells).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<usize>,
    /// The JUnit report read after the run, when one was expected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub junit: Option<PathBuf>,
    /// Why there is no per-test data although a report was expected
    /// (missing, empty, malformed); the run keeps its exit-code outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests_missing: Option<String>,
    /// Per-test outcomes from the report (first attempts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tests: Vec<TestRecord>,
    /// The normalised signature of the run's first failure: from the first
    /// failing test's message, else from the log's last failure line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_signature: Option<String>,
    /// Where the run sat in a ladder rung's topology (ladder sessions only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<RunTopology>,
    /// What the processes the run started showed about the mechanisms of its
    /// cell that a program can bypass (absent when the cell has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<ProcessCheck>,
}

/// The processes one run started, inspected while it ran, against the
/// mechanisms of its cell that a program can bypass (the clock preload).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessCheck {
    /// The perturbations checked (`faketime=+365d`).
    pub checked: Vec<String>,
    /// Programs seen: one per program each process ran (a process that
    /// execs counts once per program).
    pub seen: u32,
    /// The executables of the processes taken to have run the tests.
    pub tested_by: Vec<String>,
    /// Processes that bypassed a mechanism, one entry per (perturbation,
    /// executable, role, why).
    pub bypassed: Vec<Bypass>,
}

/// Processes of a run that escaped a mechanism of its cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bypass {
    /// The perturbation escaped.
    pub perturbation: String,
    /// The executable (or `(name)` when it could not be read).
    pub exe: String,
    /// The first such process's id.
    pub pid: i32,
    /// What the process was to the run.
    pub role: ProcessRole,
    /// Why the mechanism did not reach it.
    pub why: BypassWhy,
    /// How many such processes.
    pub processes: u32,
}

/// What a process was to its run (see `perturb::proof::roles`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProcessRole {
    /// It ran the tests.
    Test,
    /// A program a test process started.
    Helper,
    /// A shell, launcher or build driver that only started other programs.
    Wrapper,
}

impl ProcessRole {
    /// The name used in records.
    pub fn as_str(self) -> &'static str {
        match self {
            ProcessRole::Test => "test",
            ProcessRole::Helper => "helper",
            ProcessRole::Wrapper => "wrapper",
        }
    }
}

/// Why a mechanism did not reach a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BypassWhy {
    /// A Go program: it reads the clock through the vDSO, not libc.
    Go,
    /// Statically linked: no dynamic loader, so no preload.
    Static,
    /// Secure-execution mode: the loader ignores preload paths.
    SecureExec,
    /// Its environment does not name the clock preload in `LD_PRELOAD`.
    NoPreload,
    /// Its clock variable (`FLAKELAB_CLOCK`, `FAKETIME`) is not the cell's.
    FaketimeChanged,
}

impl BypassWhy {
    /// The name used in records.
    pub fn as_str(self) -> &'static str {
        match self {
            BypassWhy::Go => "go",
            BypassWhy::Static => "static",
            BypassWhy::SecureExec => "secure_exec",
            BypassWhy::NoPreload => "no_preload",
            BypassWhy::FaketimeChanged => "faketime_changed",
        }
    }

    /// What it means, as the end of a sentence about the process.
    pub fn explain(self) -> &'static str {
        match self {
            BypassWhy::Go => "is a Go program: Go reads the clock through the vDSO, not through libc, so the clock preload did not shift its clock",
            BypassWhy::Static => "is statically linked: no dynamic loader runs in it, so the clock preload was never loaded and its clock was not shifted",
            BypassWhy::SecureExec => "started in secure-execution mode (set-user-ID or set-group-ID to another user, or file capabilities): the dynamic loader ignores LD_PRELOAD paths there, so the clock preload was not loaded",
            BypassWhy::NoPreload => "started without the clock preload in its LD_PRELOAD (something removed it from the environment), so its clock was not shifted",
            BypassWhy::FaketimeChanged => "started with a clock variable (FLAKELAB_CLOCK, or libfaketime's FAKETIME) other than the cell's, so its clock was not shifted as the cell says",
        }
    }
}

/// The CPU time one run (or probe) got, measured by the executor around the
/// child: from just before it started to just after it and its leftovers
/// were reaped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunCpu {
    /// Wall-clock seconds of the measurement window (monotonic clock).
    pub window_s: f64,
    /// User + system CPU seconds of the run's processes that were reaped in
    /// the window (the child, and every descendant waited for by its parent
    /// or swept by flakelab): flakelab's `getrusage(RUSAGE_CHILDREN)` before
    /// and after. None when another run was in flight, whose processes would
    /// be counted too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject_s: Option<f64>,
    /// The stress threads beside the run, in cells with `cpu-stress`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stress: Option<StressCpu>,
}

/// What a run's stress threads got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StressCpu {
    /// Busy threads started.
    pub threads: usize,
    /// CPUs they were given (the child's under `cpu-pin`, else all that
    /// flakelab may use).
    pub cpus: usize,
    /// CPU seconds they got in the window, summed over the threads (each
    /// thread's own CPU clock).
    pub cpu_s: f64,
    /// Why a thread could not be put on its CPU; it then did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl RunCpu {
    /// Each stressor's share of one CPU over the window (0–1), on average.
    pub fn stress_share(&self) -> Option<f64> {
        let s = self.stress.as_ref()?;
        (s.threads > 0 && self.window_s > 0.0).then(|| s.cpu_s / (s.threads as f64 * self.window_s))
    }

    /// The stressors' part of the CPU time that they and the run's
    /// processes got together (0–1), when the subject's was measured.
    pub fn stress_part(&self) -> Option<f64> {
        let s = self.stress.as_ref()?;
        let total = s.cpu_s + self.subject_s?;
        (total > 0.0).then(|| s.cpu_s / total)
    }
}

/// A run's place in a rung whose runs are groups of processes started
/// together: the group is what k of N counts at that rung.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunTopology {
    /// The planned run (group) this process belongs to.
    pub group: usize,
    /// This process's copy number within the group (0-based).
    pub copy: u32,
    /// The working copy it ran in, when the rung gives each its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_copy: Option<PathBuf>,
}

/// How one test's first attempt ended in one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestOutcome {
    /// Passed.
    Pass,
    /// Failed an assertion (`<failure>`).
    Fail,
    /// Errored (`<error>`); counted as a failure of the test.
    Error,
    /// Skipped.
    Skip,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// One test in one run, from the run's JUnit report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestRecord {
    /// Stable id: `classname::name` (or `suite::name`, or `name`).
    pub id: String,
    /// The id with parameters stripped, when it differs from `id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// The first attempt's outcome: what k of N counts.
    pub outcome: TestOutcome,
    /// The first attempt failed and a retry passed.
    #[serde(default, skip_serializing_if = "is_false")]
    pub passed_on_rerun: bool,
    /// Further attempts the report holds (reruns, repeated cases).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retries: u32,
    /// Normalised failure signature (failures only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// The failure message as reported, cut short (failures only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Whether the failure matched `--signature` (failures only, with one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature_match: Option<bool>,
    /// Which `--signature` the failure matched: the index (from 0, in the
    /// order given) of the first pattern its text matched; absent when none
    /// did (and in records written before several could be given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature_pattern: Option<u32>,
}

impl TestRecord {
    /// The family id (the id itself when it has no parameters).
    pub fn family(&self) -> &str {
        self.family.as_deref().unwrap_or(&self.id)
    }

    /// Whether the first attempt failed or errored.
    pub fn failed(&self) -> bool {
        matches!(self.outcome, TestOutcome::Fail | TestOutcome::Error)
    }

    /// The `--signature` its failure matched ([`matched_pattern`]).
    pub fn matched_pattern(&self) -> Option<usize> {
        matched_pattern(self.signature_match, self.signature_pattern)
    }
}

/// Which `--signature` a failure matched, from its record's two fields: the
/// pattern's index when recorded; a match recorded without one (a record
/// from before several patterns could be given) is the first pattern's.
pub fn matched_pattern(matched: Option<bool>, pattern: Option<u32>) -> Option<usize> {
    match (matched, pattern) {
        (_, Some(i)) => Some(i as usize),
        (Some(true), None) => Some(0),
        _ => None,
    }
}

/// A cell as planned and probed, stored in the session record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellRecord {
    /// Cell name.
    pub name: String,
    /// Perturbations in `kind=value` form.
    pub perturbations: Vec<String>,
    /// Whether every probe proved its perturbation applied.
    pub applied: bool,
    /// Why not, when not.
    pub reason: Option<String>,
    /// What the probes observed, one line per fact.
    pub probes: Vec<String>,
    /// This cell is a sham: the mechanism (in words) it runs with a null
    /// parameter (`faketime=+0` for "the clock preload").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sham_of: Option<String>,
    /// The sham cell this cell is compared with (its mechanism's sham).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sham: Option<String>,
    /// What the cell changes beyond its declared conditions (libfaketime
    /// options a recipe asked for), one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One session, as stored in `sessions.jsonl` (written before the first run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// Always [`SESSION_SCHEMA`].
    pub schema: String,
    /// Session id.
    pub id: String,
    /// Wall-clock start (RFC 3339, UTC).
    pub started_at: String,
    /// flakelab's version.
    pub flakelab_version: String,
    /// The subject's argv.
    pub command: Vec<String>,
    /// The subject's working directory.
    pub cwd: PathBuf,
    /// The schedule seed.
    pub seed: u64,
    /// Confidence level for intervals and tests.
    pub confidence: f64,
    /// The first `--signature` regex, if any.
    pub signature: Option<String>,
    /// Every `--signature` regex in the order given, when more than one was
    /// (absent: `signature` is the only one). Read through
    /// [`SessionRecord::patterns`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signatures: Vec<String>,
    /// Per-run timeout in seconds, if any.
    pub timeout_s: Option<f64>,
    /// Runs at once.
    pub jobs: usize,
    /// The cells with their probe results.
    pub cells: Vec<CellRecord>,
    /// The interleaved plan.
    pub plan: Plan,
    /// The host the session ran on.
    pub host: HostInfo,
    /// The subject's repository, when it is in one.
    pub repo: Option<RepoInfo>,
    /// The run this session replays (`flakelab replay`), if it is a replay.
    #[serde(default)]
    pub replay_of: Option<String>,
    /// The `--junit` path template, if one was given.
    #[serde(default)]
    pub junit: Option<String>,
    /// The runner recipe used (detected or `--runner`), if any.
    #[serde(default)]
    pub runner: Option<String>,
    /// Why no recipe is used, when none is.
    #[serde(default)]
    pub runner_note: Option<String>,
    /// The runner's version line, from the recipe's `version` command run
    /// when the session started (None without one, or when it failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner_version: Option<String>,
    /// Matrix cells left out because this runner cannot take them, with why.
    #[serde(default)]
    pub left_out: Vec<String>,
    /// The ladder rung this session ran, when it is one rung of a ladder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rung: Option<SessionRung>,
    /// The session this one is part of: a screen design's confirmation of
    /// one candidate (`flakelab report` without an id skips such sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part_of: Option<String>,
    /// The shards of a session run as N shards (`run --shard I/N`): a
    /// shard's own store holds one, a merged store every shard merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<ShardSet>,
    /// Problems of the session as a whole that did not stop it (no warden:
    /// a killed flakelab would leave the runs' processes running).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The session appends a session-end record when it stops
    /// (`session-ends.jsonl`). Sessions recorded before those records
    /// existed lack it: how they ended is not known, never "killed".
    #[serde(default, skip_serializing_if = "is_false")]
    pub records_end: bool,
    /// Why this design ran, when flakelab chose it (`--design auto`): the
    /// report says it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub design_chosen: Option<String>,
    /// A `flakelab scan --prove` session: what it proves, in words (its
    /// findings' statuses are in `proves.jsonl`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scan_prove: Option<String>,
    /// Where the runs' per-test outcomes come from, in words (`JUnit`,
    /// `go test -json`, …); absent when none was asked for, and in stores
    /// written before it was recorded (read as JUnit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_test_from: Option<String>,
}

impl SessionRecord {
    /// The `--signature` patterns, in the order given (empty without one).
    pub fn patterns(&self) -> Vec<&str> {
        if self.signatures.is_empty() {
            self.signature.iter().map(String::as_str).collect()
        } else {
            self.signatures.iter().map(String::as_str).collect()
        }
    }

    /// Sets the patterns as [`SessionRecord::patterns`] reads them: the
    /// first in `signature` (what a record with one has always held), all
    /// of them in `signatures` when there are several.
    pub fn set_patterns(&mut self, patterns: Vec<String>) {
        self.signature = patterns.first().cloned();
        self.signatures = if patterns.len() > 1 {
            patterns
        } else {
            Vec::new()
        };
    }
}

/// The shards of one sharded session that a store holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardSet {
    /// How many shards the session was split into.
    pub total: u32,
    /// The digest every shard of the session shares: flakelab's version, the
    /// command, the cells, runs per cell, seed, confidence, signature,
    /// timeout and the number of shards (`shard::plan_digest`).
    pub plan_digest: String,
    /// The shards present, by index.
    pub present: Vec<ShardPart>,
}

/// One shard of a sharded session: where and when it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardPart {
    /// The shard's index, 1-based.
    pub index: u32,
    /// The machine it ran on.
    pub host: HostInfo,
    /// When it started (RFC 3339, UTC).
    pub started_at: String,
    /// The runner's version line on that machine, when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner_version: Option<String>,
    /// Cells whose perturbation was not proven to apply on that machine,
    /// with why (`cell: reason`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_applied: Vec<String>,
}

/// What makes a session one rung of a `flakelab ladder`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRung {
    /// The ladder's id.
    pub ladder: String,
    /// The rung number (1–5 in the embedded ladder).
    pub rung: u8,
    /// Processes started together per run.
    pub processes: usize,
    /// Whether each process had its own working copy.
    pub own_working_copies: bool,
}

/// One `flakelab ladder` invocation, as stored in `ladders.jsonl` when it
/// ends; its JSON is also what `ladder --format json` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LadderRecord {
    /// Always [`LADDER_SCHEMA`].
    pub schema: String,
    /// Ladder id.
    pub id: String,
    /// Wall-clock start (RFC 3339, UTC).
    pub started_at: String,
    /// The subject's command (rungs 2 and 3).
    pub command: Vec<String>,
    /// The subject's working directory.
    pub cwd: PathBuf,
    /// The project's lane (rungs 4 and 5), when `flakelab.toml` declares one.
    #[serde(default)]
    pub lane: Option<Vec<String>>,
    /// The focused test (`--test`), if any.
    pub test: Option<String>,
    /// The `--signature` regex, if any.
    pub signature: Option<String>,
    /// What counts as reproducing, in words.
    pub criterion: String,
    /// The perturbed cell applied at every rung (`baseline` when none).
    pub cell: String,
    /// Runs per cell at each rung.
    pub runs_per_rung: u32,
    /// Confidence level of the bounds.
    pub confidence: f64,
    /// Every rung from `--from` to `--to`, in order, as far as the ladder got.
    pub rungs: Vec<RungResult>,
    /// The first rung that reproduced, if any.
    pub reproduced_at: Option<u8>,
    /// Whether Ctrl-C cut the ladder short.
    #[serde(default)]
    pub interrupted: bool,
}

/// How one rung went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RungStatus {
    /// Ran, and no run reproduced.
    Clean,
    /// At least one run reproduced.
    Reproduced,
    /// Could not be built here (the reason says why); never "clean".
    Skipped,
    /// Ran, but the perturbation was not proven to apply: nothing measured.
    NotApplied,
    /// Every run errored or timed out: nothing measured.
    Unmeasured,
    /// Not reached: an earlier rung reproduced or the ladder was interrupted.
    NotRun,
}

/// The k of N of one cell at one rung (a run is a group of processes).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RungCount {
    /// Runs measured.
    pub n: u64,
    /// Runs that reproduced.
    pub k: u64,
    /// Lower bound of the interval on the reproduction rate.
    pub low: f64,
    /// Upper bound (the zero-failure bound when k = 0).
    pub high: f64,
    /// Runs that timed out without reproducing (excluded from n).
    pub timeouts: u64,
}

/// One rung of a ladder, as reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RungResult {
    /// The rung number.
    pub rung: u8,
    /// Its short name (e.g. `alone`).
    pub name: String,
    /// The topology, in words.
    pub topology: String,
    /// What reproducing here shows.
    pub shows: String,
    /// How it went.
    pub status: RungStatus,
    /// Processes per run.
    pub processes: usize,
    /// Runs of the perturbed cell (or of the baseline when none) measured.
    pub n: u64,
    /// Of those, runs that reproduced.
    pub k: u64,
    /// Interval low.
    pub low: f64,
    /// Interval high (the bound when k = 0).
    pub high: f64,
    /// The baseline's count, when a perturbed cell ran beside it.
    #[serde(default)]
    pub baseline: Option<RungCount>,
    /// Why skipped / not applied / not run, or a note on how it was built.
    pub reason: Option<String>,
    /// The session holding this rung's runs.
    pub session: Option<String>,
    /// The argv one process ran at this rung.
    #[serde(default)]
    pub argv: Vec<String>,
    /// The first run that reproduced: its id and repro line.
    #[serde(default)]
    pub first_reproduction: Option<(String, String)>,
    /// `--confirm K`: the reproducing rung run K more times under the first
    /// reproducing run's cell and seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<RungConfirmation>,
}

/// A reproducing rung re-run under its first reproduction's conditions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RungConfirmation {
    /// Runs asked for.
    pub times: u32,
    /// Runs measured.
    pub n: u64,
    /// Runs that reproduced again.
    pub k: u64,
    /// `deterministic`, `timing` or `unmeasured`.
    pub verdict: String,
    /// The confirming session.
    pub session: String,
}
