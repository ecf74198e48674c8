//! The flags of the history subcommands (`ingest`, `history`, `check`,
//! `quarantine`, `compact`), kept beside `cli.rs` so its own list stays
//! short.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::Format;

/// The history file's store.
#[derive(Debug, Clone, Args)]
pub struct HistoryStore {
    /// The store directory [default: .flakelab].
    #[arg(long, value_name = "DIR")]
    pub store: Option<PathBuf>,
}

/// Execution context and provenance of ingested reports: each flag
/// overrides what is detected from the CI environment.
#[derive(Debug, Clone, Args)]
pub struct ContextFlags {
    /// Ignore the CI environment: only these flags, and the host's OS and
    /// architecture.
    #[arg(long)]
    pub no_detect: bool,
    /// The branch the tests ran on.
    #[arg(long, value_name = "NAME")]
    pub branch: Option<String>,
    /// The commit the tests ran on (read from the CI system's variables
    /// when not given; reports with no commit never prove a test
    /// nondeterministic).
    #[arg(long, value_name = "SHA")]
    pub commit: Option<String>,
    /// The OS (`linux`, `macos`, `windows`).
    #[arg(long, value_name = "OS")]
    pub os: Option<String>,
    /// The architecture (`x64`, `arm64`).
    #[arg(long, value_name = "ARCH")]
    pub arch: Option<String>,
    /// The runtime's name (`python`, `node`, `go`, `jdk`).
    #[arg(long, value_name = "NAME")]
    pub runtime: Option<String>,
    /// The runtime's version.
    #[arg(long, value_name = "VERSION")]
    pub runtime_version: Option<String>,
    /// The kind of runner (GitHub: `github-hosted`, `self-hosted`).
    #[arg(long, value_name = "KIND")]
    pub runner: Option<String>,
    /// The matrix leg: on GitHub Actions `--matrix '${{ toJSON(matrix) }}'`
    /// (every leg has the same job name, so this is what tells them apart).
    #[arg(long, value_name = "JSON|TEXT")]
    pub matrix: Option<String>,
    /// Another context dimension (repeatable): `--context db=postgres16`.
    #[arg(long = "context", value_name = "KEY=VALUE")]
    pub context: Vec<String>,
    /// The CI provider (provenance).
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// The CI run's id (provenance).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// The CI job (provenance).
    #[arg(long, value_name = "NAME")]
    pub job: Option<String>,
    /// The attempt of the CI run (a re-run attempt counts again).
    #[arg(long, value_name = "N")]
    pub attempt: Option<String>,
    /// The CI run's page, an http(s) URL (provenance): the dashboard
    /// links the last failure to it [default: from the GitHub, GitLab or
    /// Buildkite variables].
    #[arg(long, value_name = "URL")]
    pub run_url: Option<String>,
}

/// `flakelab ingest`.
#[derive(Debug, Clone, Args)]
pub struct IngestArgs {
    /// JUnit XML reports: files, directories (every `*.xml` below) or
    /// quoted globs (`'reports/**/*.xml'`).
    #[arg(required = true, value_name = "REPORT")]
    pub reports: Vec<PathBuf>,
    /// Context and provenance.
    #[command(flatten)]
    pub context: ContextFlags,
    /// Where the store is.
    #[command(flatten)]
    pub store: HistoryStore,
}

/// What `history`, `check` and `quarantine` read history with.
#[derive(Debug, Clone, Args)]
pub struct AnalysisFlags {
    /// A (test, context) with fewer runs is "too few runs", and `check`
    /// compares no rate with fewer.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub min_runs: u64,
    /// Only the last N commits of each test and context count (recency,
    /// counted in commits) [default: all].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub commits: Option<u64>,
}

/// `flakelab history`.
#[derive(Debug, Clone, Args)]
pub struct HistoryArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// One evergreen document for a pinned issue or a wiki page (Markdown,
    /// or `--format json`): per test that failed or is quarantined, its
    /// k of N over the last 10 and 50 commits and all, the trend, its last
    /// failure and run, the contexts it fails in, and its quarantine
    /// ledger entry (owner, ticket, expiry).
    #[arg(long)]
    pub dashboard: bool,
    /// How history is read.
    #[command(flatten)]
    pub analysis: AnalysisFlags,
    /// Where the store is.
    #[command(flatten)]
    pub store: HistoryStore,
}

/// `flakelab check`.
#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// The committed baseline file.
    #[arg(long, default_value = "flakelab-baseline.json", value_name = "FILE")]
    pub baseline: PathBuf,
    /// Write the baseline from the history (and exit 0) instead of checking.
    #[arg(long)]
    pub write_baseline: bool,
    /// Margin, in failure rate, the new interval must clear the baseline's
    /// by to count as worse (or better).
    #[arg(long, default_value_t = 0.0, value_name = "RATE", value_parser = super::parse_rate)]
    pub tolerance: f64,
    /// Write GitHub Actions annotations [default: when GITHUB_ACTIONS=true].
    #[arg(long)]
    pub annotations: bool,
    /// How history is read.
    #[command(flatten)]
    pub analysis: AnalysisFlags,
    /// Where the store is.
    #[command(flatten)]
    pub store: HistoryStore,
}

/// Syntaxes of `flakelab quarantine`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum QuarantineFormat {
    /// `--deselect=NODEID` lines for pytest.
    Pytest,
    /// `-skip=REGEX` for go test (Go >= 1.20); with `--go-list`, the
    /// complement as `-run=REGEX` (any Go).
    Go,
    /// `--testNamePattern=REGEX` for jest.
    Jest,
    /// `--testNamePattern=REGEX` for vitest.
    Vitest,
    /// A filterset for `cargo nextest run -E`.
    CargoNextest,
    /// A spec_helper.rb snippet for rspec.
    Rspec,
    /// For the PHPUnit installed (`vendor/bin/phpunit`, else `phpunit`):
    /// `--exclude-filter=REGEX` from PHPUnit 11, `--filter=REGEX` (a
    /// negative lookahead) before.
    Phpunit,
    /// A YAML list with the evidence.
    Yaml,
}

/// `flakelab quarantine`.
#[derive(Debug, Clone, Args)]
pub struct QuarantineArgs {
    /// The runner's syntax.
    #[arg(long, value_enum, required_unless_present_any = ["add", "release"], conflicts_with_all = ["add", "release"])]
    pub format: Option<QuarantineFormat>,
    /// Add TEST to the quarantine ledger (`--ledger`), with --owner,
    /// --ticket and --expires (and the history's evidence for it, or
    /// --evidence).
    #[arg(long, value_name = "TEST", requires_all = ["owner", "ticket", "expires"], conflicts_with = "release")]
    pub add: Option<String>,
    /// `--add`: who answers for the test.
    #[arg(long, value_name = "NAME", requires = "add")]
    pub owner: Option<String>,
    /// `--add`: the ticket that tracks its fix.
    #[arg(long, value_name = "ID", requires = "add")]
    pub ticket: Option<String>,
    /// `--add`: when the quarantine ends (YYYY-MM-DD, or days from today:
    /// `30d`); `flakelab check` fails after it.
    #[arg(long, value_name = "DATE", requires = "add")]
    pub expires: Option<String>,
    /// `--add`: what put it there [default: the history's statement].
    #[arg(long, value_name = "TEXT", requires = "add")]
    pub evidence: Option<String>,
    /// List the ledger's entries that may leave: those whose failure rate
    /// since their fix (`fixed`, else `added`), over the lab's runs and the
    /// CI reports ingested from that day on, is bounded below --target at
    /// --confidence (Clopper-Pearson: 299 clean runs for 1% at 95%).
    #[arg(long)]
    pub release: bool,
    /// `--release`: the failure rate an entry must be bounded below.
    #[arg(long, default_value_t = 0.01, value_name = "RATE", value_parser = super::parse_rate)]
    pub target: f64,
    /// `--release`: the confidence of the bound.
    #[arg(long, default_value_t = 0.95, value_name = "C", value_parser = super::parse_rate)]
    pub confidence: f64,
    /// The quarantine ledger.
    #[arg(long, default_value = crate::history::ledger::LEDGER_FILE, value_name = "FILE")]
    pub ledger: std::path::PathBuf,
    /// Select tests proven nondeterministic (same-commit disagreement) with
    /// at least N failures in one context.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub min_failures: u64,
    /// Also select tests whose failure rate's lower bound in some context
    /// is at least RATE, proven or not (0: off).
    #[arg(long, default_value_t = 0.0, value_name = "RATE", value_parser = super::parse_rate)]
    pub min_rate: f64,
    /// With `--format go`: the output of `go test -list . PACKAGES` (a
    /// file, or `-` for stdin). The list is then the complement, one
    /// `-run=REGEX` selecting every listed test but the quarantined ones,
    /// which works with any Go (`-skip` needs Go 1.20). List again when the
    /// tests change: a test added since is not run.
    #[arg(long, value_name = "FILE")]
    pub go_list: Option<std::path::PathBuf>,
    /// How history is read.
    #[command(flatten)]
    pub analysis: AnalysisFlags,
    /// Where the store is.
    #[command(flatten)]
    pub store: HistoryStore,
}

/// `flakelab compact`.
#[derive(Debug, Clone, Args)]
pub struct CompactArgs {
    /// Where the store is.
    #[command(flatten)]
    pub store: HistoryStore,
}
