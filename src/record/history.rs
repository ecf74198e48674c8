//! The history file's record shapes (`history/observations.jsonl`): a CI
//! report's provenance and context, its observations and their one-letter
//! outcome codes, and what `flakelab compact` folds them into. The pure
//! logic over them is the history module's; the store writes them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::record::CaseOutcome;

pub use crate::record::schema::{
    CI_REPORT_SCHEMA as REPORT_SCHEMA, COUNTS_SCHEMA, FOLDED_SCHEMA, OBSERVATION_SCHEMA,
};

/// Where one report's executions ran (see the history module's `context`): the dimensions an
/// outcome may legitimately depend on. Never provenance.
pub type Context = BTreeMap<String, String>;

/// Where a report came from: which CI run, job and attempt (and the run's
/// page), on which commit, ingested when. Never part of the [`Context`];
/// of these only `attempt` is part of the identity.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// CI provider (`github`, `gitlab`, `buildkite`, `circleci`,
    /// `jenkins`), or `None` outside CI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The provider's id of the pipeline run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// The job's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    /// The attempt (a re-run of the same run counts again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<String>,
    /// The run's page (`http(s)://…`): detected from the CI variables or
    /// given with `ingest --run-url`. Never part of the identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// When the report was ingested (RFC 3339, UTC): from this day on its
    /// observations count toward a quarantine entry's release. Never part
    /// of the identity; absent in reports ingested before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingested: Option<String>,
}

impl Provenance {
    /// How a run is named in findings: `run 123 attempt 2 (job test)`, or
    /// the report path when no run id is known.
    pub fn label(&self, path: &str) -> String {
        match &self.run {
            None => path.to_string(),
            Some(run) => {
                let mut s = format!("run {run}");
                if let Some(a) = self.attempt.as_deref().filter(|a| *a != "1") {
                    s.push_str(&format!(" attempt {a}"));
                }
                s
            }
        }
    }
}

/// One ingested report: written by the store as one `flakelab.ci-report/1`
/// line followed by its observation lines, in one write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportRecord {
    /// [`REPORT_SCHEMA`].
    pub schema: String,
    /// The identity key (`identity::report_key`).
    pub key: String,
    /// The execution context.
    pub context: Context,
    /// The commit the report's tests ran on, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Where it came from.
    #[serde(default)]
    pub provenance: Provenance,
    /// The report's path relative to the ingested directory (the file name
    /// for a file named on the command line).
    pub path: String,
    /// `sha256:` and the hex digest of the report's bytes.
    pub digest: String,
    /// How many observations follow.
    pub n: u64,
    /// Direct evidence of trouble outside any test case that the report
    /// itself carries (an unreadable report, a suite-level `<error>`, a
    /// suite that declares errors no test case holds), in words. Absent
    /// when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub infra: Vec<String>,
}

/// One execution of one test in a report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// The test id (a JUnit case's id).
    pub test: String,
    /// Its first attempt's outcome: what a rate counts.
    pub outcome: CaseOutcome,
    /// The first attempt failed and a retry passed ("passed on a retry":
    /// counted as the failure it first was, and kept apart).
    pub retried: bool,
    /// The repetition index: how many earlier cases of the report have the
    /// same id (`go test -count=12` gives 0..11).
    pub rep: u32,
    /// The report's `file` attribute, kept for failures only.
    pub file: Option<String>,
    /// The report's `line` attribute, kept for failures only.
    pub line: Option<u32>,
}

/// Counts of one (test, context, commit), as `flakelab compact` writes them
/// and as the analysis folds every observation into.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Passed.
    #[serde(default, rename = "p")]
    pub passed: u64,
    /// Failed (a `<failure>`).
    #[serde(default, rename = "f")]
    pub failed: u64,
    /// Errored (an `<error>`): counted as a failure in rates.
    #[serde(default, rename = "e")]
    pub errored: u64,
    /// Skipped: not in any rate.
    #[serde(default, rename = "s")]
    pub skipped: u64,
    /// Of the failures, those whose first attempt failed and a retry passed.
    #[serde(default, rename = "rp", skip_serializing_if = "is_zero")]
    pub retried: u64,
    /// The runs (provenance labels) with a failure or error, first seen
    /// first.
    #[serde(default, rename = "fr", skip_serializing_if = "Vec::is_empty")]
    pub failing_runs: Vec<String>,
    /// The runs with a pass.
    #[serde(default, rename = "pr", skip_serializing_if = "Vec::is_empty")]
    pub passing_runs: Vec<String>,
}

impl Counts {
    /// Failures (failed + errored).
    pub fn bad(&self) -> u64 {
        self.failed + self.errored
    }

    /// Runs that count in a rate (everything but skips).
    pub fn ran(&self) -> u64 {
        self.passed + self.failed + self.errored
    }

    /// Adds one outcome from the run named `run`.
    pub fn add(&mut self, outcome: CaseOutcome, run: &str) {
        match outcome {
            CaseOutcome::Passed => {
                self.passed += 1;
                push_once(&mut self.passing_runs, run);
            }
            CaseOutcome::Failed | CaseOutcome::Errored => {
                if outcome == CaseOutcome::Failed {
                    self.failed += 1;
                } else {
                    self.errored += 1;
                }
                push_once(&mut self.failing_runs, run);
            }
            CaseOutcome::Skipped => self.skipped += 1,
        }
    }

    /// Adds `other`'s counts and runs.
    pub fn merge(&mut self, other: &Counts) {
        self.passed += other.passed;
        self.failed += other.failed;
        self.errored += other.errored;
        self.skipped += other.skipped;
        self.retried += other.retried;
        for r in &other.failing_runs {
            push_once(&mut self.failing_runs, r);
        }
        for r in &other.passing_runs {
            push_once(&mut self.passing_runs, r);
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

pub(crate) fn push_once(list: &mut Vec<String>, run: &str) {
    if !list.iter().any(|r| r == run) {
        list.push(run.to_string());
    }
}

/// A `flakelab.counts/1` line: one (test, context, commit) folded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CountsRecord {
    /// [`COUNTS_SCHEMA`].
    pub schema: String,
    /// The test id.
    pub test: String,
    /// The execution context.
    pub context: Context,
    /// The commit, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The counts.
    #[serde(flatten)]
    pub counts: Counts,
    /// The file of a failure, when a report gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Its line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// A `flakelab.folded/1` line: the keys of the reports a compaction folded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FoldedRecord {
    /// [`FOLDED_SCHEMA`].
    pub schema: String,
    /// Identity keys of the folded reports.
    pub keys: Vec<String>,
    /// The runner-infrastructure notes of the folded reports (they are no
    /// count, so they are kept as they were). Absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub infra: Vec<InfraNote>,
}

/// One report's direct evidence of runner infrastructure trouble (see
/// [`ReportRecord::infra`]), with where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InfraNote {
    /// The report's identity key (a note is counted once per report).
    pub key: String,
    /// The report's context, by name ([`context_name`]).
    pub context: String,
    /// The commit, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The run ([`Provenance::label`]).
    pub run: String,
    /// The report's path.
    pub path: String,
    /// What the report shows, in words.
    pub what: Vec<String>,
}

/// What the history reader hands on: a raw report's observations, or a
/// folded count.
#[derive(Debug, Clone)]
pub enum Item<'a> {
    /// One report and its observations.
    Report(&'a ReportRecord, &'a [Observation]),
    /// One folded (test, context, commit).
    Counts(&'a CountsRecord),
    /// A folded report's runner-infrastructure note.
    Infra(&'a InfraNote),
}

/// The letter of an observation that failed its first attempt and passed
/// on a retry (a failure in every count).
pub const RETRIED_CODE: &str = "r";

/// The outcome letter of an observation entry.
pub fn outcome_code(o: CaseOutcome) -> &'static str {
    match o {
        CaseOutcome::Passed => "p",
        CaseOutcome::Failed => "f",
        CaseOutcome::Errored => "e",
        CaseOutcome::Skipped => "s",
    }
}

/// The letter of an observation: [`RETRIED_CODE`] when it passed on a
/// retry, else its outcome's.
pub fn observation_code(o: &Observation) -> &'static str {
    if o.retried {
        RETRIED_CODE
    } else {
        outcome_code(o.outcome)
    }
}

/// The outcome of an observation entry's letter ([`RETRIED_CODE`] is a
/// failure).
pub fn outcome_of(code: &str) -> Option<CaseOutcome> {
    Some(match code {
        "p" => CaseOutcome::Passed,
        "f" | RETRIED_CODE => CaseOutcome::Failed,
        "e" => CaseOutcome::Errored,
        "s" => CaseOutcome::Skipped,
        _ => return None,
    })
}

/// `k=v,k=v` of a context, keys sorted: how a context is named.
pub fn context_name(context: &Context) -> String {
    if context.is_empty() {
        return "(no context)".to_string();
    }
    context
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// What the history's check of indistinct matrix legs needs of one recorded report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// The provenance.
    pub provenance: Provenance,
    /// The context.
    pub context: Context,
    /// The report's path.
    pub path: String,
    /// Its digest.
    pub digest: String,
}

impl Head {
    /// The head of `r`.
    pub fn of(r: &ReportRecord) -> Head {
        Head {
            provenance: r.provenance.clone(),
            context: r.context.clone(),
            path: r.path.clone(),
            digest: r.digest.clone(),
        }
    }
}
