//! Every schema tag flakelab writes, in one place: the `schema` field of
//! each stored line and of each JSON document. A tag changes only when a
//! reader of the old shape would misread the new one (additive fields keep
//! it); readers accept every tag listed here for their kind.

// The store's lines.

/// A run record as written today (the compact encoding; see
/// `store::compact`) and every run record read back from one.
pub const RUN_SCHEMA: &str = "flakelab.run/2";
/// The first run encoding: one whole record per line. Such lines are still
/// read; their records keep this tag.
pub const RUN_SCHEMA_V1: &str = "flakelab.run/1";
/// A session record.
pub const SESSION_SCHEMA: &str = "flakelab.session/1";
/// A session-end record.
pub const SESSION_END_SCHEMA: &str = "flakelab.session-end/1";
/// A test-table line of the compact encoding.
pub const TESTS_SCHEMA: &str = "flakelab.tests/2";
/// A context line of the compact encoding.
pub const CONTEXT_SCHEMA: &str = "flakelab.context/2";
/// A ladder record (and `ladder --format json`).
pub const LADDER_SCHEMA: &str = "flakelab.ladder/1";
/// A screen design's record.
pub const SCREEN_SCHEMA: &str = "flakelab.screen/1";
/// A bisect record.
pub const BISECT_SCHEMA: &str = "flakelab.bisect/1";
/// A `scan --prove` record.
pub const PROVE_SCHEMA: &str = "flakelab.scan-prove/1";

// The CI history's lines.

/// An ingested JUnit report (context, provenance, path, digest).
pub const CI_REPORT_SCHEMA: &str = "flakelab.ci-report/1";
/// A chunk of one ingested report's executions.
pub const OBSERVATION_SCHEMA: &str = "flakelab.observation/1";
/// Observations folded by `flakelab compact`.
pub const COUNTS_SCHEMA: &str = "flakelab.counts/1";
/// The identity keys of the reports a compaction folded (so re-ingesting
/// one of them still counts once).
pub const FOLDED_SCHEMA: &str = "flakelab.folded/1";
/// The first part hashed into a report's identity key (a new tag makes
/// every key new).
pub const IDENTITY_SCHEMA: &str = "flakelab.identity/1";

// Files and documents.

/// The history check's baseline file.
pub const BASELINE_SCHEMA: &str = "flakelab.baseline/1";
/// The scan ledger file.
pub const LEDGER_SCHEMA: &str = "flakelab.scan-ledger/1";
/// The report document (`report --format json`, `run --format json`).
pub const REPORT_SCHEMA: &str = "flakelab.report/1";
/// The JSON of `flakelab history`.
pub const HISTORY_JSON_SCHEMA: &str = "flakelab.history/1";
/// `verify --format json`.
pub const VERIFY_SCHEMA: &str = "flakelab.verify/1";
/// The scan report.
pub const SCAN_SCHEMA: &str = "flakelab.scan/1";
/// The evidence document.
pub const EVIDENCE_SCHEMA: &str = "flakelab.evidence/1";
/// `history --dashboard --format json`.
pub const DASHBOARD_SCHEMA: &str = "flakelab.dashboard/1";
