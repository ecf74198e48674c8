//! The command line as the user typed it: clap derive structs only. No I/O,
//! no defaults that depend on the machine; `app` resolves these into typed
//! settings before anything runs.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// A perturbation lab for test suites: runs your test command many times
/// under declared perturbations and reports k of N with a confidence bound.
#[derive(Debug, Parser)]
#[command(name = "flakelab", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a test command N times per cell (baseline plus perturbations) and
    /// report k of N per cell against the baseline.
    #[command(after_long_help = RUN_AFTER_HELP)]
    Run(RunArgs),
    /// Print how many runs a measurement needs.
    Plan(PlanArgs),
    /// Re-render a stored session (the latest by default).
    Report(ReportArgs),
    /// Write the evidence block of a stored session (or ladder) for a bug
    /// report: context, cells, reproduction lines, classification, coverage.
    #[command(after_long_help = EVIDENCE_AFTER_HELP)]
    Evidence(EvidenceArgs),
    /// Re-run one recorded run exactly (same command, cell, seed) K times.
    Replay(ReplayArgs),
    /// Check which perturbations this host can apply, and how to fix the rest.
    Doctor,
    /// List the declared perturbations and matrices, or show one.
    Perturbations(PerturbationsArgs),
    /// List the runner recipes, show one, or say what flakelab would do with a command.
    Recipes(RecipesArgs),
    /// Run the standard matrix on the bundled example suite.
    Demo(DemoArgs),
    /// Internal: report what a child process sees (used by probes).
    #[command(name = "__probe", hide = true)]
    Probe(ProbeArgs),
    /// Internal: apply netns / rlimit / cpu-pin to this process, then exec the command.
    #[command(name = "__exec", hide = true)]
    Exec(ExecArgs),
    /// Internal: the bundled example suite, acting as a test runner.
    #[command(name = "__demo-suite", hide = true)]
    DemoSuite(DemoSuiteArgs),
}

const RUN_AFTER_HELP: &str = "\
Perturbation specs (-p):
  NAME                 a declared perturbation (see `flakelab perturbations`)
  tz=ZONE              TZ set to an IANA zone that exists in the zoneinfo database
  locale=NAME          LC_ALL and LANG set to an installed locale
  env=NAME=VALUE       set a variable;  env=-NAME  unsets it
  faketime=+365d       shift the wall clock (libfaketime): +90m, -30d, +1y, or @2027-06-30 12:00:00
  netns                no network: a new network namespace with loopback only
  cpu-stress[=2x|=N]   busy threads beside each run (a factor of the online CPUs, or N)
  cpu-pin[=K]          the child may use K CPUs only
  rlimit=RES:VALUE     a resource limit on the child, e.g. nofile:64, nproc:200, as:512M
  shuffle              the runner's own shuffle, a recorded seed per run (needs a recipe)
  workers[=2x|=N]      the runner's workers: a factor of its default, or N (needs a recipe)
  a+b                  several perturbations in one cell (a `+` inside a value stays in the value)

Exit codes:
  0    every cell ran, was applied, and none differs from the baseline
  1    a cell differs from the baseline, or --signature reproduced
  2    usage, configuration or catalog error (nothing ran), or every run errored
  3    a perturbation could not be applied in at least one cell
  130  interrupted: finished runs are kept and a partial report is printed

Runners: a recognised runner (`flakelab recipes`) gets a JUnit report path,
its usage errors and empty runs become errors, and shuffle/workers cells work.

Example:
  flakelab run -n 30 -p tz=Pacific/Kiritimati --timeout 2m -- pytest tests/test_billing.py";

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A terminal table.
    Table,
    /// One JSON document (schema `flakelab.report/1`).
    Json,
    /// GitHub-flavoured Markdown.
    Markdown,
}

/// Where the store is and where the subject runs.
#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    /// The store directory [default: .flakelab in the subject's directory].
    #[arg(long, value_name = "DIR")]
    pub store: Option<PathBuf>,
    /// Working directory of the subject (also where `.flakelab/` is looked for).
    #[arg(short = 'C', long = "dir", value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// `flakelab run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Runs per cell.
    #[arg(short = 'n', long = "runs", default_value_t = 20, value_name = "N")]
    pub runs: u32,
    /// Add one cell: a declared name or kind=value; join several with `+`. Repeatable.
    #[arg(short = 'p', long = "perturb", value_name = "SPEC")]
    pub perturb: Vec<String>,
    /// Add every cell of a declared matrix (e.g. `standard`). Repeatable.
    #[arg(long, value_name = "NAME")]
    pub matrix: Vec<String>,
    /// Do not run the baseline cell (no comparison is then possible).
    #[arg(long)]
    pub no_baseline: bool,
    /// Per-run timeout, e.g. `30s`, `5m` [default: none].
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// Time between SIGTERM and SIGKILL when a run is stopped.
    #[arg(long, default_value = "5s", value_name = "DURATION")]
    pub kill_grace: String,
    /// Runs at once.
    #[arg(short = 'j', long = "jobs", default_value_t = 1, value_name = "P")]
    pub jobs: usize,
    /// Seed for the schedule and per-run seeds [default: random, always recorded].
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Confidence level for intervals and comparisons.
    #[arg(long, default_value_t = 0.95, value_name = "C")]
    pub confidence: f64,
    /// Count only failures whose output matches this regex.
    #[arg(long, value_name = "REGEX")]
    pub signature: Option<String>,
    /// The test runner, when detection cannot tell (`flakelab recipes`
    /// lists them); `none` uses exit codes only.
    #[arg(long, value_name = "NAME")]
    pub runner: Option<String>,
    /// Read per-test outcomes from this JUnit XML file after each run
    /// (relative to the subject's directory; `{run}` becomes the run id).
    /// Or put `{junit}` in the command for a fresh harness-owned path per run.
    #[arg(long, value_name = "PATH")]
    pub junit: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Where the store is and where the subject runs.
    #[command(flatten)]
    pub store: StoreArgs,
    /// The test command and its arguments (after `--`).
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `flakelab plan`.
#[derive(Debug, Clone, Args)]
pub struct PlanArgs {
    /// Failure rate to detect, e.g. 0.01 for 1%.
    #[arg(long, value_name = "P")]
    pub rate: f64,
    /// Confidence of seeing at least one failure.
    #[arg(long, default_value_t = 0.95, value_name = "C")]
    pub confidence: f64,
}

/// `flakelab report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Session id or unique prefix [default: the latest].
    pub session: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Where the store is.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `flakelab evidence`.
#[derive(Debug, Clone, Args)]
pub struct EvidenceArgs {
    /// Session id or unique prefix, or a ladder id [default: the latest session].
    pub session: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = EvidenceFormat::Markdown)]
    pub format: EvidenceFormat,
    /// Where the store is.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// Formats of the evidence block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EvidenceFormat {
    /// GitHub-flavoured Markdown, to paste into an issue.
    Markdown,
    /// One JSON document (schema `flakelab.evidence/1`).
    Json,
}

const EVIDENCE_AFTER_HELP: &str = "\
Blocks, in order:
  signatures      the --signature under investigation, and the first failure
                  signature that repeats in two failing runs (else the first)
  context         repository, remote, commit (and uncommitted changes), branch,
                  host, runner and its version, time window, exact command
  cells           k of N per cell with its interval (0 of N reads `p < x`),
                  versus the baseline with the Holm-adjusted p
  per-test rows   the tests that differ from the baseline or failed
  reproduction    the first failing run of each differing cell, as a shell line
  ladder          the ladder holding the session, rung by rung (when there is one)
  classification  each flake class claimed, with the row that discriminates it;
                  the classes the clean cells argue against, with their bounds;
                  the classes left open
  coverage        every class: checked (cells, N), not applied (reason), or
                  not tested

Values of variables whose names look like credentials (TOKEN, SECRET,
PASSWORD, KEY, CREDENTIAL, AUTH, plus `[redact] names` in flakelab.toml and
the comma-separated FLAKELAB_REDACT) are redacted.

Exit codes: 0 when the block was written, 2 when there is no such session.

Example:
  flakelab evidence --format markdown > evidence.md";

/// `flakelab replay`.
#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    /// The run id (or a unique prefix), as printed in reports and records.
    pub run: String,
    /// How many times to re-run it.
    #[arg(long, default_value_t = 10, value_name = "K")]
    pub times: u32,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Where the store is.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `flakelab perturbations`.
#[derive(Debug, Clone, Args)]
pub struct PerturbationsArgs {
    /// `show NAME` prints one perturbation or matrix in full.
    #[command(subcommand)]
    pub action: Option<PerturbationsAction>,
    /// Where project overrides are looked for.
    #[arg(short = 'C', long = "dir", value_name = "DIR", global = true)]
    pub dir: Option<PathBuf>,
}

/// `flakelab recipes`.
#[derive(Debug, Clone, Args)]
pub struct RecipesArgs {
    /// `show NAME` or `detect -- CMD`.
    #[command(subcommand)]
    pub action: Option<RecipesAction>,
    /// Where project recipes (`.flakelab/recipes/`) are looked for.
    #[arg(short = 'C', long = "dir", value_name = "DIR", global = true)]
    pub dir: Option<PathBuf>,
}

/// `flakelab recipes` actions.
#[derive(Debug, Clone, Subcommand)]
pub enum RecipesAction {
    /// Print one recipe in full (as TOML).
    Show {
        /// Its name.
        name: String,
    },
    /// Say which recipe a command line gets and what it would inject.
    Detect {
        /// The command (after `--`).
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
}

/// `flakelab perturbations show`.
#[derive(Debug, Clone, Subcommand)]
pub enum PerturbationsAction {
    /// Print one declared perturbation or matrix.
    Show {
        /// Its name.
        name: String,
    },
}

/// `flakelab demo`.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Runs per cell.
    #[arg(short = 'n', long = "runs", default_value_t = 10, value_name = "N")]
    pub runs: u32,
    /// Seed for the schedule.
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Keep the demo directory (its store and logs) and print its path.
    #[arg(long)]
    pub keep: bool,
}

/// `flakelab __probe`.
#[derive(Debug, Clone, Args)]
pub struct ProbeArgs {
    /// What to report.
    #[command(subcommand)]
    pub what: ProbeWhat,
}

/// What a probe reports.
#[derive(Debug, Clone, Subcommand)]
pub enum ProbeWhat {
    /// Print `set NAME=VALUE` or `unset NAME` for each variable.
    Env {
        /// Variable names.
        names: Vec<String>,
    },
    /// Print `route: …` (a UDP connect to 192.0.2.1) and `loopback: …`.
    Net,
    /// Print `cpus: N (list)` from the affinity mask.
    Affinity,
    /// Print `RES soft hard` for one resource limit.
    Rlimit {
        /// Resource name (nofile, nproc, as, …).
        resource: String,
    },
}

/// `flakelab __exec`.
#[derive(Debug, Clone, Args)]
pub struct ExecArgs {
    /// Enter a new network namespace with loopback up.
    #[arg(long)]
    pub netns: bool,
    /// A resource limit, RESOURCE:VALUE (soft and hard). Repeatable.
    #[arg(long, value_name = "RES:VALUE")]
    pub rlimit: Vec<String>,
    /// CPUs to pin to, comma-separated.
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// The command.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// `flakelab __demo-suite`.
#[derive(Debug, Clone, Args)]
pub struct DemoSuiteArgs {
    /// The demo project's directory (holds its fixture files).
    #[arg(long, value_name = "DIR")]
    pub project: PathBuf,
    /// Run only the tests whose name contains this text.
    #[arg(long, value_name = "TEXT")]
    pub only: Option<String>,
}
