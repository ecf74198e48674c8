//! The command line as the user typed it: clap derive structs only. No I/O,
//! no defaults that depend on the machine; `app` resolves these into typed
//! settings before anything runs.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod history_args;
pub use history_args::*;
mod runs_args;
pub use runs_args::*;

/// The demo's session seed when `--seed` is not given: fixed, so the
/// shuffle cell's runs get the same seeds (and orders) on every machine.
/// With it, the first two runs of the shuffle cell put the polluter before
/// the victim in one and after it in the other (a unit test holds this).
pub const DEMO_SEED: u64 = 821;

/// A perturbation lab for test suites: runs your test command many times
/// under declared perturbations and reports k of N with a confidence bound.
#[derive(Debug, Parser)]
#[command(name = "flakelab", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Internal, for flakelab's own tests: replay the outcomes of the TOML
    /// script SCRIPT instead of starting any subject or probe
    /// (`exec::fake` documents the script).
    #[arg(long, global = true, hide = true, value_name = "SCRIPT")]
    pub fake_executor: Option<PathBuf>,
    /// When to color output: the verdict words of the table, the progress
    /// bar, and help and usage errors. `auto` colors a terminal only, and
    /// not at all when NO_COLOR is set to anything but empty (no-color.org);
    /// CLICOLOR_FORCE=1 colors a pipe too; `always` and `never` override both.
    #[arg(long, global = true, value_enum, default_value_t = ColorWhen::Auto, value_name = "WHEN")]
    pub color: ColorWhen,
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ColorWhen {
    /// Color a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it).
    #[default]
    Auto,
    /// Always color.
    Always,
    /// Never color.
    Never,
}

impl ColorWhen {
    /// The `--color` of a command line not yet parsed (the last one given
    /// before `--`), so clap's own help and errors follow it too.
    pub fn in_args(args: &[std::ffi::OsString]) -> Option<ColorWhen> {
        let mut found = None;
        let mut args = args.iter().skip(1).map(|a| a.to_str().unwrap_or(""));
        while let Some(arg) = args.next() {
            let value = match arg {
                "--" => break,
                "--color" => args.next().unwrap_or(""),
                _ => match arg.strip_prefix("--color=") {
                    Some(v) => v,
                    None => continue,
                },
            };
            if let Ok(when) = ColorWhen::from_str(value, false) {
                found = Some(when);
            }
        }
        found
    }
}

/// The subcommands.
#[derive(Debug, Subcommand)]
#[allow(
    clippy::large_enum_variant,
    reason = "parsed once per process; `allow`, not `expect`, as other subcommands' sizes change"
)]
pub enum Command {
    /// Run a test command N times per cell (baseline plus perturbations) and
    /// report k of N per cell against the baseline.
    #[command(after_long_help = RUN_AFTER_HELP)]
    Run(RunArgs),
    /// Climb the topology ladder: find the smallest topology (the test alone,
    /// with its neighbours, P processes, the lane, P lanes in their own
    /// working copies) that reproduces a failure.
    #[command(
        after_long_help = LADDER_AFTER_HELP,
        mut_arg("runs", |a| a.help("Runs per cell at each rung [default: 10] [env: FLAKELAB_RUNS]")),
        mut_arg("command", |a| a.required(true).help("The test command and its arguments (after `--`): rungs 2 and 3 run it"))
    )]
    Ladder(LadderArgs),
    /// Prove a fix: run the same cells on two git revisions (interleaved),
    /// check that the failure reproduces before (the negative control) and
    /// that it is gone after (0 of N, with its bound).
    #[command(
        after_long_help = VERIFY_AFTER_HELP,
        mut_arg("runs", |a| a.help("Runs per cell on each revision [default: 10] [env: FLAKELAB_RUNS]")),
        mut_arg("command", |a| a.required(true).help("The test command and its arguments (after `--`)"))
    )]
    Verify(VerifyArgs),
    /// Write a commented flakelab.toml for this project: its test command
    /// (detected from its files, or given after `--`) and defaults for `run`.
    #[command(after_long_help = INIT_AFTER_HELP)]
    Init(InitArgs),
    /// Merge stores (shards of one session, or any stores) into one:
    /// runs deduplicated, sharded sessions joined, conflicts refused.
    #[command(after_long_help = MERGE_AFTER_HELP)]
    Merge(MergeArgs),
    /// Print how many runs a measurement needs.
    Plan(PlanArgs),
    /// Re-render a stored session (the latest by default); with CI history
    /// in the store (`flakelab ingest`), CI and lab side by side per test.
    Report(ReportArgs),
    /// Print a stored session's runs (the latest by default) for other
    /// tools: whole records as JSON Lines, or one CSV row per (run, test).
    #[command(after_long_help = runs_args::RUNS_AFTER_HELP)]
    Runs(RunsArgs),
    /// Write the evidence block of a stored session (or ladder) for a bug
    /// report: context, cells, reproduction lines, classification, coverage.
    #[command(after_long_help = EVIDENCE_AFTER_HELP)]
    Evidence(EvidenceArgs),
    /// Re-run one recorded run exactly (same command, cell, seed) K times.
    Replay(ReplayArgs),
    /// Find the polluter of an order-dependent test: from a failing run (or
    /// a test and a shuffle seed), delta debugging over the tests that ran
    /// before it, every step a recorded run.
    #[command(after_long_help = BISECT_AFTER_HELP)]
    Bisect(BisectArgs),
    /// Check which perturbations this host can apply, and how to fix the rest.
    ///
    /// Also checks the survivor guard: whether the processes of a session's
    /// runs are ended even when flakelab itself is killed (SIGKILL, the OOM
    /// killer). Where it is unavailable, sessions still run and record a
    /// warning.
    Doctor,
    /// List the declared perturbations and matrices, or show one.
    Perturbations(PerturbationsArgs),
    /// List the runner recipes, show one, or say what flakelab would do with a command.
    Recipes(RecipesArgs),
    /// Run the standard matrix on the bundled example suite.
    Demo(DemoArgs),
    /// Record JUnit reports from CI in the store's history, with their
    /// execution context and provenance.
    #[command(after_long_help = INGEST_AFTER_HELP)]
    Ingest(IngestArgs),
    /// What the ingested history says per test: same-commit disagreement,
    /// k of N per context, where failures concentrate.
    History(HistoryArgs),
    /// The CI gate: fail only for tests newly proven nondeterministic or
    /// measurably worse than the committed baseline.
    #[command(after_long_help = CHECK_AFTER_HELP)]
    Check(CheckArgs),
    /// Print the tests history proves nondeterministic in a runner's own
    /// skip syntax (for a Go before 1.20: `--go-list`, the `-run`
    /// complement of `go test -list`).
    Quarantine(QuarantineArgs),
    /// Fold the history's observations into per (test, context, commit)
    /// counts; every figure `history` prints stays the same.
    Compact(CompactArgs),
    /// Scan test code (Python, Go, JavaScript/TypeScript, Rust) for flake
    /// sources: each finding with its line, test, class and the perturbation
    /// that would flip it; `--prove` runs that cell on the reached tests;
    /// `--ledger --strict` guards them in CI.
    #[command(after_long_help = SCAN_AFTER_HELP)]
    Scan(ScanArgs),
    /// Print a shell completion script: `flakelab completions bash >
    /// ~/.local/share/bash-completion/completions/flakelab`.
    Completions(CompletionsArgs),
    /// Print the man page (roff): `flakelab man > flakelab.1`.
    Man,
    /// Internal: report what a child process sees (used by probes).
    #[command(name = "__probe", hide = true)]
    Probe(ProbeArgs),
    /// Internal: apply netns / rlimit / cpu-pin to this process, then exec the command.
    #[command(name = "__exec", hide = true)]
    Exec(ExecArgs),
    /// Internal: the bundled example suite, acting as a test runner.
    #[command(name = "__demo-suite", hide = true)]
    DemoSuite(DemoSuiteArgs),
    /// Internal: the warden, which ends the runs' processes when the
    /// flakelab that started it dies (reads its lifeline on stdin).
    #[command(name = "__warden", hide = true)]
    Warden,
}

const INGEST_AFTER_HELP: &str = "\
Context (what may change an outcome; rates are per context): branch, os,
arch, runtime, runtime_version, runner, leg (matrix) and --context KEY=VALUE.
Provenance (never context): provider, run id, job, attempt, commit, the
run's page (--run-url; the dashboard links to it) and the ingest time.
Detected from GitHub Actions, GitLab CI, Buildkite, CircleCI and Jenkins
variables (the book's \"History from CI\" lists them); flags override.

A report already recorded (same context, commit, attempt, path and digest)
is skipped, so ingesting a directory twice changes nothing.

Runner infrastructure: an unreadable report is recorded with no test (its
tests are not counted), and an <error> outside any test case, or a suite
whose errors no test case holds, is recorded beside the report's tests;
`report` and `evidence` show both as direct evidence.

A warning names matrix legs the history cannot tell apart (several reports
of one run, job and attempt at one path with one context, but different
contents: GitHub gives every leg the same job name); record the leg with
--matrix '${{ toJSON(matrix) }}' or --context KEY=VALUE.

Exit codes: 0 every report recorded or already there; 2 a report could not
be read (the others are recorded) or a usage error.";

const CHECK_AFTER_HELP: &str = "\
Exit codes:
  0  nothing newly proven nondeterministic or measurably worse (notes for
     tests that got better: consider tightening the baseline); or
     --write-baseline wrote the baseline
  1  a test is newly proven nondeterministic (passed and failed on one
     commit in one context, not so in the baseline), or measurably worse
     (with --min-runs on both sides, the new interval's lower bound above
     the baseline's upper bound plus --tolerance)
  2  no baseline file (create it with --write-baseline), an unreadable
     one, an empty history, or a usage error

With GITHUB_ACTIONS=true (or --annotations) each verdict is also written as
a `::error`/`::notice` annotation (with file= and line= when the JUnit
report gave them), and a Markdown summary is appended to
$GITHUB_STEP_SUMMARY when it is set.";

const RUN_AFTER_HELP: &str = "\
Perturbation specs (-p):
  NAME                 a declared perturbation (see `flakelab perturbations`)
  tz=ZONE              TZ set to an IANA zone that exists in the zoneinfo database
  locale=NAME          LC_ALL and LANG set to an installed locale
  env=NAME=VALUE       set a variable;  env=-NAME  unsets it
  faketime=+365d       shift the wall clock (flakelab's own preload): +90m, -30d, +1y, or @2027-06-30 12:00:00
  netns                no network: a new network namespace with loopback only
  cpu-stress[=2x|=N]   busy threads beside each run (a factor of the online CPUs, or N)
  cpu-pin[=K]          the child may use K CPUs only
  rlimit=RES:VALUE     a resource limit on the child, e.g. nofile:64, nproc:200, as:512M
  shuffle              the runner's own shuffle, a recorded seed per run (needs a recipe)
  orders               systematic test orders: every ordered pair of a module's tests, and of
                       modules as blocks, adjacent at least once (a recipe that runs a given
                       order; else the seeded shuffle, said so)
  workers[=2x|=N]      the runner's workers: a factor of its default, or N (needs a recipe)
  race[=cpu:1,2,4]     the runner's race detector (go test -race; a ThreadSanitizer build for
                       cargo test), proven live in each run's test binary; cpu: each test at
                       these GOMAXPROCS values (go -cpu). Not applied, with the runner's
                       reason, without cgo and a C compiler (go) or a nightly with rust-src
                       (cargo); `flakelab doctor` says which (needs a recipe)
  a+b                  several perturbations in one cell (a `+` inside a value stays in the value)

Exit codes (one precedence for run, replay, ladder and verify; the first that holds):
  130  interrupted: finished runs are kept and a partial report is printed
  1    a cell or a test differs from the baseline, or --signature reproduced, or
       a run failed matching no --signature pattern (other failures are never
       green), or a session with one cell (the baseline alone, or one cell with
       --no-baseline: nothing to compare) had failures
  4    undecided: a pair whose raw counts differ was left undecided (the screen's
       cap, --max-runs, or Holm over many pairs); its row says what would settle it
  3    a perturbation could not be applied in at least one cell
  2    nothing was measured (every run errored or timed out, or none was
       recorded), or a usage, configuration or catalog error (nothing ran)
  0    every cell ran, was applied and measured, every pair was decided, and
       none differs

Settings: flags, then FLAKELAB_* variables, then [run] in flakelab.toml, then
the defaults; the same for `ladder` and `verify` (which take no matrix).

Sharding: `--shard I/N` runs shard I of N of one session (each into its own
store; GitLab's and Buildkite's parallel-job variables shard it too), and
`flakelab merge` joins the stores into the report of the whole plan; see
`flakelab merge --help` and the book's chapter Sharding over CI.

Runners: a recognised runner (`flakelab recipes`) gets a JUnit report path,
its usage errors and empty runs become errors, and shuffle/workers cells work.

Progress (stderr): a bar on a terminal; otherwise one line at each 10% of the
runs or once a minute, never one per run. Both give runs done of the total,
the failures so far of each failing cell, and an ETA from each cell's mean run
duration so far (`ETA unknown` before the first run ends). The report alone
goes to stdout; --color and NO_COLOR decide its color.

Example:
  flakelab run -n 30 -p tz=Pacific/Kiritimati --timeout 2m -- pytest tests/test_billing.py";

const LADDER_AFTER_HELP: &str = "\
Rungs (topologies/ladder.toml; override with .flakelab/topologies/ladder.toml):
  1  the focused test alone, one process (needs --test and a recipe that can select)
  2  the test with its neighbours: the command after --, one process
  3  P processes of the command at once, one working directory
  4  the project's lane ([lane] in flakelab.toml) at its configured workers
  5  P lanes at once, each in its own working copy (git worktree, or a copy)
The ladder stops at the first rung that reproduces: a higher rung
reproduces more readily and attributes less. A rung that cannot be built
is reported as skipped, with why, never as clean.

Reproducing: a failure matching --signature; else a failure of the --test
test (from the JUnit report; a run without one counts by exit code); else
any failing run. At rungs 3 and 5 one run is P processes started together,
and it reproduced when any of them did.

When what reproduced may rest on what ran before the test (the cell
shuffles, or it failed with its neighbours at rung 2 after passing alone at
rung 1), the ladder prints the `flakelab bisect RUN` command that looks for
the test that makes it fail (`bisect` in the JSON).

Exit codes, by the one precedence: 130 interrupted (working copies are
removed), 1 reproduced at some rung, 3 a perturbation was not applied,
2 usage error or nothing measured, 0 every rung tried was clean.

Settings: -n, --timeout, --kill-grace, --confidence and --junit come from the
flags, then FLAKELAB_* variables, then [run] in flakelab.toml (runs: 10 per
rung when none sets them); -p alone gives the cell.

Example:
  flakelab ladder -n 10 --test tests/test_cache.py::test_port -- pytest tests";

const VERIFY_AFTER_HELP: &str = "\
Each -p is a cell under which the failure shows (without -p, the baseline
itself); every cell runs on both revisions, interleaved in one session.

Exit codes, by the one precedence: 130 interrupted, 1 a half of the claim
fails on what was measured (nothing reproduced before the fix, or it still
fails after), 3 a cell was not applied, 2 usage error or too little
measured to show the fix, 0 both halves hold.

Settings: flags, then FLAKELAB_* variables, then [run] in flakelab.toml
(runs: 10 per revision when none sets them).

Example:
  flakelab verify --before HEAD~1 --after HEAD -p tz=Pacific/Kiritimati -- pytest tests";

const INIT_AFTER_HELP: &str = "\
flakelab.toml keys (the file is in the subject's directory, -C DIR):
  [lane] command    the test command `run` runs without `-- CMD`     (-- CMD)
  [lane] workers    the lane's workers, as its runner's option sets them (for the ladder)
  [run] runs        runs per cell             -n, FLAKELAB_RUNS (20)
  [run] timeout     per-run timeout (\"5m\")    --timeout, FLAKELAB_TIMEOUT (none)
  [run] confidence  confidence level          --confidence, FLAKELAB_CONFIDENCE (0.95)
  [run] matrix      matrices, when no -p      --matrix, -p, FLAKELAB_MATRIX=a,b (none)
  [run] junit       JUnit path, {run} = id    --junit, FLAKELAB_JUNIT (none)
  [run] jobs        runs at once              -j, FLAKELAB_JOBS (1)
  [run] kill_grace  SIGTERM to SIGKILL        --kill-grace, FLAKELAB_KILL_GRACE (5s)
  [redact] names    variables whose values to redact  FLAKELAB_REDACT adds names

Precedence: command-line flags, then FLAKELAB_* environment variables, then
flakelab.toml, then the defaults in parentheses. An unknown key or a bad value
in the file is an error naming the file and the key (exit 2).

Detection without a command: pytest (pytest.ini, pyproject.toml [tool.pytest…],
setup.cfg [tool:pytest], tox.ini [pytest], tests/test_*.py), `cargo test`
(Cargo.toml), `go test ./...` (go.mod), `npx jest` / `npx vitest run` (package.json
dependencies) or a package.json `test` script running `node --test`.

Example:
  flakelab init -- pytest -n 4 tests/";

/// How `run` spends its runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum Design {
    /// `screen` when the runs yield per-test outcomes over many (test,
    /// cell) pairs (an earlier session of the command in the store says how
    /// many tests it has), `fixed` otherwise, and always `fixed` with
    /// `--signature`, `--confirm`, or a sharded session.
    #[default]
    Auto,
    /// Every cell runs the whole command N times (rates, and small suites).
    Fixed,
    /// Screen every cell a few times, then confirm each differing pair on
    /// fresh runs, sequentially (differences, on large suites).
    Screen,
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A terminal table.
    Table,
    /// One JSON document (schema `flakelab.report/1`).
    Json,
    /// GitHub-flavoured Markdown.
    Markdown,
    /// One self-contained HTML page (inline CSS, JS and SVG; nothing fetched).
    Html,
    /// GitHub Actions: `::error`/`::warning` annotations on stdout, and the
    /// step summary (Markdown) appended to $GITHUB_STEP_SUMMARY when set.
    Github,
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

/// The flags `run`, `ladder` and `verify` share, declared once and
/// flattened into each (so they cannot drift). `app` resolves them, with
/// `FLAKELAB_*` and `flakelab.toml`, into one `session::SessionSpec`.
#[derive(Debug, Clone, Args)]
pub struct SessionFlags {
    /// Runs per cell, 1 to 100,000 [default: 20] [env: FLAKELAB_RUNS].
    #[arg(short = 'n', long = "runs", value_name = "N")]
    pub runs: Option<u32>,
    /// Add one cell: a declared name or kind=value; join several with `+`. Repeatable.
    #[arg(short = 'p', long = "perturb", value_name = "SPEC")]
    pub perturb: Vec<String>,
    /// Do not run the baseline cell (no comparison is then possible).
    #[arg(long)]
    pub no_baseline: bool,
    /// Per-run timeout, e.g. `30s`, `5m` [default: none] [env: FLAKELAB_TIMEOUT].
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// Time between SIGTERM and SIGKILL when a run is stopped [default: 5s]
    /// [env: FLAKELAB_KILL_GRACE].
    #[arg(long, value_name = "DURATION")]
    pub kill_grace: Option<String>,
    /// Runs at once, 1 to 4,096 [default: 1] [env: FLAKELAB_JOBS].
    #[arg(short = 'j', long = "jobs", value_name = "P")]
    pub jobs: Option<usize>,
    /// Seed for the schedule and per-run seeds [default: random, always recorded].
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Confidence level for intervals and comparisons [default: 0.95]
    /// [env: FLAKELAB_CONFIDENCE].
    #[arg(long, value_name = "C")]
    pub confidence: Option<f64>,
    /// Count the failures whose output (or failing test's message) matches
    /// this regex; repeat it to count several patterns side by side (a
    /// failure counts for the first it matches). Failures that match none are
    /// counted as other failures: real failures, never green (exit 1).
    /// `ladder` and `verify` take one.
    #[arg(long, value_name = "REGEX")]
    pub signature: Vec<String>,
    /// The test runner, when detection cannot tell (`flakelab recipes`
    /// lists them); `none` uses exit codes only.
    #[arg(long, value_name = "NAME")]
    pub runner: Option<String>,
    /// Read per-test outcomes from this JUnit XML file after each run
    /// (relative to the subject's directory; `{run}` becomes the run id).
    /// Or put `{junit}` in the command for a fresh harness-owned path per run
    /// [env: FLAKELAB_JUNIT].
    #[arg(long, value_name = "PATH")]
    pub junit: Option<String>,
    /// Keep the JUnit reports flakelab had the runner write into the store
    /// (`junit/<session>/<index>.xml`) after reading them; by default each
    /// is deleted once its outcomes are recorded [config: `[run] keep_junit`].
    #[arg(long)]
    pub keep_junit: bool,
    /// Where the store is and where the subject runs.
    #[command(flatten)]
    pub store: StoreArgs,
    /// The test command and its arguments (after `--`) [default: the
    /// `[lane] command` of flakelab.toml in the subject's directory].
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `flakelab run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Add every cell of a declared matrix (e.g. `standard`; `calendar`:
    /// zones and clock starts at calendar edges). Repeatable.
    /// Without -p or --matrix, the matrices come from FLAKELAB_MATRIX
    /// (comma-separated) or `[run] matrix` in flakelab.toml [default: none,
    /// the baseline alone].
    #[arg(long, value_name = "NAME")]
    pub matrix: Vec<String>,
    /// Run no sham cells. By default every mechanism the cells use (TZ set,
    /// the clock preload, the `__exec` helper, runs scheduled alone
    /// for CPU stress) also runs as a sham: the same mechanism with a null
    /// parameter (`tz=` the host's zone, `faketime=+0`, `cpu-pin=` every
    /// CPU, `cpu-stress=0`), so that a difference is attributed to the
    /// parameter only when it also differs from the sham.
    #[arg(long)]
    pub no_sham: bool,
    /// After the runs, replay each distinct failing run's exact conditions
    /// (cell, seed) K times: K of K failing means the conditions determine
    /// the failure; fewer means timing is involved. Each prints the bound
    /// its count reaches (`failed 3 of 3 (rate > 0.368 at 95%)`). With
    /// --signature, the failures matching no pattern (other failures) are
    /// replayed too, after the matched ones.
    #[arg(long, value_name = "K")]
    pub confirm: Option<u32>,
    /// `fixed`: every cell runs the command N times. `screen`: every cell
    /// runs it once (up to `--screen` times where one run cannot tell),
    /// then each (test, cell) pair that differed is confirmed on fresh runs
    /// under a selection that keeps its baseline, at most N runs each
    /// (large suites: the same verdicts in a fraction of the runs; tests
    /// failing in turn on one port, path or lock under workers are one
    /// collision, confirmed with its partners); a cap N
    /// below what Holm needs for the number of candidates is said before
    /// the confirmations, and a pair it stops is undecided (exit 4). `auto`
    /// picks one and the report says which and why.
    #[arg(long, value_enum, default_value_t = Design::Auto)]
    pub design: Design,
    /// `--design screen`: full runs per cell in the screen, at most (cells
    /// random by nature, and cells whose first run flagged nothing). A
    /// shuffle cell whose runner runs a given order runs its systematic
    /// orders (every same-module pair adjacent both ways; beyond N) when
    /// they number at most -n / 2, else its first run's order reversed; an
    /// `orders` cell runs every one of its systematic orders (beyond N).
    #[arg(long = "screen", default_value_t = 2, value_name = "N")]
    pub screen: u32,
    /// `--design screen`: confirmation runs for all candidates together,
    /// spent on the largest screen differences first; a candidate left
    /// with counts that differ is undecided (exit 4) [default: no limit
    /// beyond -n per candidate].
    #[arg(long, value_name = "N")]
    pub max_runs: Option<u64>,
    /// `--design screen`: a candidate is cleared once the difference of its
    /// failure rates is bounded below this.
    #[arg(long, default_value_t = 0.3, value_name = "RATE", value_parser = parse_rate)]
    pub clear_below: f64,
    /// `--design screen`: run the screen alone and record its candidates,
    /// for shards to confirm (`--shard I/N` with the same --session-id, each
    /// in a copy of this store), then `flakelab merge`.
    #[arg(long)]
    pub screen_only: bool,
    /// Run shard I of N of the session (1-based, e.g. `2/4`): every shard
    /// builds the same seeded plan and runs replicate blocks r with
    /// r mod N = I − 1, each into its own store, for `flakelab merge`.
    /// Without it, GitLab's CI_NODE_INDEX/CI_NODE_TOTAL (1-based) or
    /// Buildkite's BUILDKITE_PARALLEL_JOB/BUILDKITE_PARALLEL_JOB_COUNT
    /// (0-based) shard the session when set.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// The number of shards, the index coming from JOB_COMPLETION_INDEX
    /// (0-based: a Kubernetes Indexed Job).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub shards: Option<u32>,
    /// The id every shard of a sharded session shares [default:
    /// FLAKELAB_SESSION_ID, else made of the CI run's id: GITHUB_RUN_ID,
    /// CI_PIPELINE_ID or BUILDKITE_BUILD_ID]. Without --seed, the seed is
    /// derived from it, so every shard gets the same.
    #[arg(long, value_name = "ID")]
    pub session_id: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// `auto`: also append the GitHub step summary to $GITHUB_STEP_SUMMARY
    /// when it is set (annotations on stderr; plot and HTML report in
    /// ./flakelab-report/).
    #[arg(long, value_enum, default_value_t = SummaryMode::Off, value_name = "WHEN")]
    pub summary: SummaryMode,
    /// The flags every session takes.
    #[command(flatten)]
    pub session: SessionFlags,
}

/// `flakelab merge`.
#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// The stores to merge: directories, or `.tar` / `.tar.gz` / `.tgz`
    /// archives holding one.
    #[arg(required = true, value_name = "STORE")]
    pub stores: Vec<PathBuf>,
    /// The store merged into (created when absent; its own records are kept)
    /// [default: .flakelab in the current directory].
    #[arg(long, value_name = "DIR")]
    pub into: Option<PathBuf>,
    /// The most bytes one archive may unpack (its files' sizes added up),
    /// e.g. `4GiB`: an archive past it is refused before it fills $TMPDIR.
    #[arg(long, value_name = "SIZE", default_value = "1GiB", value_parser = parse_size)]
    pub unpack_limit: u64,
    /// The most entries (files and directories) one archive may unpack.
    #[arg(long, value_name = "N", default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub unpack_entries: u64,
}

/// A rate: a number from 0 to 1 (`0.3`), never NaN.
pub(crate) fn parse_rate(text: &str) -> std::result::Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
        Ok(_) => Err(format!("`{text}` is not a rate from 0 to 1 (e.g. 0.3)")),
        Err(_) => Err(format!(
            "`{text}` is not a number (a rate from 0 to 1, e.g. 0.3)"
        )),
    }
}

/// A size in bytes: a number, optionally with `K`, `M`, `G` or `T` (powers
/// of 1024, `KiB` … and `KB` … alike).
fn parse_size(text: &str) -> std::result::Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        other => return Err(format!("unknown unit `{other}` (use K, M, G or T)")),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{text}` is not a size (e.g. 512MiB, 4GiB)"))?;
    n.checked_mul(1 << shift)
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("`{text}` is not a size between 1 byte and 16 EiB"))
}

const MERGE_AFTER_HELP: &str = "\
Runs are deduplicated by id, and the records of one sharded session (one id,
`run --shard I/N`) are joined into one session listing every shard. A record
held twice with different content, or a shard of another plan (another
seed, command, cells, runs per cell, shard count or flakelab version), is
refused with the differing field named, and nothing is written. Missing
shards are named (\"shard 3 of 8 not present: 1,250 planned runs missing\"),
here and by `flakelab report`. Merging a store a second time changes nothing.

A store to merge holds regular files only: a symbolic link, a FIFO, a device
or a hard-linked file in it (or in an archive) is refused, naming it, and
nothing is written. An archive unpacks into $TMPDIR within --unpack-limit
bytes and --unpack-entries entries.

Exit codes: 0 merged (or nothing new), 2 a conflict, an unreadable input or
a usage error (nothing written).

Example:
  flakelab merge shards/* --into merged && flakelab report --store merged";

/// `flakelab init`.
#[derive(Debug, Clone, Args)]
pub struct InitArgs {
    /// The subject's directory, where flakelab.toml is written and the
    /// project's files are read [default: the current directory].
    #[arg(short = 'C', long = "dir", value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Overwrite an existing flakelab.toml (or CI file, with --ci).
    #[arg(long)]
    pub force: bool,
    /// Write a CI pipeline instead of flakelab.toml: one session as a
    /// matrix of shards, each shard's store kept, and a job that merges
    /// them and reports (`github`: .github/workflows/flakelab.yml;
    /// `gitlab`: flakelab.gitlab-ci.yml, to include from .gitlab-ci.yml).
    #[arg(long, value_enum, value_name = "SYSTEM")]
    pub ci: Option<CiSystem>,
    /// The test command and its arguments (after `--`) [default: detected
    /// from the project's files].
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// The CI systems `init --ci` writes a pipeline for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CiSystem {
    /// GitHub Actions: a `strategy.matrix` of shards and a merge job.
    Github,
    /// GitLab CI: a `parallel:` job of shards and a merge job.
    Gitlab,
}

/// `flakelab ladder`.
#[derive(Debug, Clone, Args)]
pub struct LadderArgs {
    /// The focused test, as the runner names it (e.g.
    /// `tests/test_a.py::test_b`, `TestB`): rung 1 runs it alone, and its
    /// failure is what reproduces when no --signature is given.
    #[arg(long = "test", value_name = "ID")]
    pub test: Option<String>,
    /// The first rung to try.
    #[arg(long, default_value_t = 1, value_name = "R")]
    pub from: u8,
    /// The last rung to try.
    #[arg(long, default_value_t = 5, value_name = "R")]
    pub to: u8,
    /// Processes at once at the parallel rungs (3 and 5) [default: the
    /// online CPUs, at least 2].
    #[arg(long, value_name = "P")]
    pub processes: Option<usize>,
    /// After a rung reproduces, run it K more times under the first
    /// reproducing run's seed and cell: K of K means the conditions
    /// determine the failure at that rung; fewer means timing is involved.
    #[arg(long, value_name = "K")]
    pub confirm: Option<u32>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = LadderFormat::Table)]
    pub format: LadderFormat,
    /// The flags every session takes (all -p together form the one cell
    /// the ladder climbs with).
    #[command(flatten)]
    pub session: SessionFlags,
}

/// Output formats of `ladder` and `verify`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LadderFormat {
    /// A terminal table.
    Table,
    /// One JSON document (schema `flakelab.ladder/1`).
    Json,
}

/// `flakelab verify`.
#[derive(Debug, Clone, Args)]
pub struct VerifyArgs {
    /// The revision before the fix (anything `git rev-parse` takes).
    #[arg(long, value_name = "REV")]
    pub before: String,
    /// The revision with the fix.
    #[arg(long, value_name = "REV")]
    pub after: String,
    /// Count only failures of this test (as the runner names it).
    #[arg(long = "test", value_name = "ID")]
    pub test: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = LadderFormat::Table)]
    pub format: LadderFormat,
    /// The flags every session takes (each -p is a cell under which the
    /// failure shows; without -p the baseline itself is the failing cell).
    #[command(flatten)]
    pub session: SessionFlags,
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

const SCAN_AFTER_HELP: &str = "\
Classes: clock (calendar reads, time bombs), random, sleep (bounded poll,
sleep-then-assert, unbounded poll, long sleep), network, global-state,
host-resource (ports, temp paths, databases), order (hash order, locale).
A site is a finding when it reaches a test's assertion and nothing in its
file pins it; the output ends with the class-coverage block.

Every finding is `unconfirmed` until a run shows it: its `command` is the
`flakelab run` of the proposed cell on the reached tests only, named from
the project root. Cells that can flip it: a date read, the zones on both
sides of UTC (tz=Pacific/Kiritimati, tz=Pacific/Pago_Pago: one of them moves
the date at any hour); a fixed port or path, workers=2x with the tests that
name the same one (none: the ladder's rung 3); a global-state write,
shuffle beside its file's other tests.

--prove runs them: one recorded session per (runner, cell), the baseline,
the cell and its sham interleaved on the reached tests only, selected
through the recipe (pytest, go test, the project's own vitest or jest or
node --test, and cargo test findings). Each finding becomes
`proven` (its cell fails a reached test more than the baseline: k of N
with Fisher's p, Holm over the findings measured), `not shown` (with the
bound on the rise at its N) or `unconfirmed` (no perturbation settles it,
no runner or selection, the cell cannot apply here: the reason and the
exact command). A finding with two cells is proven when either flips it;
a global-state write under pytest runs first against last beside the tests
it can pollute. `flakelab report ID` shows a prove session again. Cost:
(1 + its shams) x 2 x N runs of the selected tests per cell, N = --runs.
--controls also runs every test no finding reaches under each cell: a
control the cell flips is a site the scan missed.

Ledger (--ledger FILE): {\"schema\": \"flakelab.scan-ledger/1\", \"entries\":
[{\"file\", \"symbol\", \"class\", \"bucket\", \"reason\"}]}, keyed on the file
(with /) and the enclosing symbol, never the line. --strict exits 1 on a
finding with no entry and on an entry no finding matches (stale).

Exit codes: 0 scanned (and, with --strict, the ledger holds), 1 --strict
found a new finding or a stale entry, 2 usage error (bad path, bad ledger).

Examples:
  flakelab scan tests --ledger scan-ledger.json --strict
  flakelab scan --prove -n 10 .";

/// `flakelab scan`.
#[derive(Debug, Clone, Args)]
pub struct ScanArgs {
    /// The tree to scan [default: the current directory].
    pub path: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// The ledger of accepted sites (JSON), checked both ways.
    #[arg(long, value_name = "FILE")]
    pub ledger: Option<PathBuf>,
    /// Exit 1 on a finding not in the ledger (every finding without
    /// --ledger) and on a ledger entry no finding matches.
    #[arg(long)]
    pub strict: bool,
    /// A path under PATH not to scan (repeatable), e.g. a fixture tree.
    #[arg(long, value_name = "PATH")]
    pub exclude: Vec<String>,
    /// The date time bombs are judged against [default: today, UTC].
    #[arg(long, value_name = "YYYY-MM-DD")]
    pub today: Option<String>,
    /// Run each finding's proposed cell on its reached tests against the
    /// baseline and mark it proven, not shown or unconfirmed (one recorded
    /// session per runner and cell, run from PATH's project root).
    #[arg(long)]
    pub prove: bool,
    /// --prove: runs per arm (baseline, cell, sham).
    #[arg(
        short = 'n',
        long,
        default_value_t = 10,
        value_name = "N",
        requires = "prove"
    )]
    pub runs: u32,
    /// --prove: also run, under each cell, the tests no finding reaches.
    #[arg(long, requires = "prove")]
    pub controls: bool,
    /// --prove: the store directory [default: .flakelab in PATH's project
    /// root].
    #[arg(long, value_name = "DIR", requires = "prove")]
    pub store: Option<PathBuf>,
}

/// `flakelab report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Session id or unique prefix [default: the latest].
    pub session: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// `auto`: also append the GitHub step summary to $GITHUB_STEP_SUMMARY
    /// when it is set (annotations on stderr; plot and HTML report in
    /// ./flakelab-report/).
    #[arg(long, value_enum, default_value_t = SummaryMode::Off, value_name = "WHEN")]
    pub summary: SummaryMode,
    /// Where the store is.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// When to write the GitHub step summary beside the chosen format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SummaryMode {
    /// Never (`--format github` writes it anyway).
    Off,
    /// When $GITHUB_STEP_SUMMARY is set (inside GitHub Actions).
    Auto,
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
    /// One self-contained HTML page: the report's plots and tables, then
    /// the ladder, classification and coverage blocks.
    Html,
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
  CI history      when the store also holds CI history (`flakelab ingest`):
                  each test history shows disagreeing that a cell reproduced,
                  CI and lab in one row; platform or entry-path mismatches;
                  reports with runner-infrastructure evidence
  coverage        every class: checked (cells, N), not applied (reason), or
                  not tested

Values of variables whose names look like credentials (TOKEN, SECRET,
PASSWORD, KEY, CREDENTIAL, AUTH, plus `[redact] names` in flakelab.toml and
the comma-separated FLAKELAB_REDACT) are redacted.

Exit codes: 0 when the block was written, 2 when there is no such session.

Example:
  flakelab evidence --format markdown > evidence.md";

const BISECT_AFTER_HELP: &str = "\
From a failing run of an order-dependent test, bisect reads the order the
runner used (the run's per-test report) and runs the victim after subsets of
its predecessors, in their original relative order, through the recipe's
[ordered] selection (pytest: a plugin flakelab writes into its store). One
polluter takes about 2*log2(n) runs; several that only fail the victim
together are found too. Then: polluted (passes alone, fails after the
polluter) or brittle (fails alone, passes only after a state-setter, found
from an order where it passes: a stored passing run's, the file order, or
every other test; then the tests that break it again, a pair named as a
pair); cleaners (tests that, run between polluter and victim, make it
pass); a k of K confirmation; a repro line with just those tests (brittle:
its setters, then the victim).

When the victim's outcome in its order shows in only some of the --confirm
runs, each question is repeated until its answer is decided at the session's
confidence, and the result says so (`repeated:`).

pytest: the ordering plugin then snapshots process-global state around the
culprits (environment, working directory, module and class attributes,
files, logging, signals, threads, sockets, ...) and names what they changed:
`state: polluter t::a sets os.environ['X'] (None -> 'EUR'); victim t::v
reads it` (credential-named values redacted). Other runners: two more runs
(the victim alone, then the culprits and the victim) name the files under
the project the culprits created, deleted or modified.

Output: one line `polluter: <test id>` per polluter (`state-setter:`,
`cleaner:`, `state:` likewise). The result is stored (bisects.jsonl) and
shown in the evidence of the failing run's session (Markdown and HTML).

Ctrl-C (or --budget) stops between runs: what was learned is kept and
printed, with how many candidates were left. The same command again resumes
it: the stored runs answer their questions without running again.

Exit codes: 1 a polluter or state-setter was named, 0 the failure did not
come back in its order (or is not order-dependent), 2 usage error, or the
budget ran out before anything was named, 130 interrupted.

Examples:
  flakelab bisect 20261201-101500-ab12.00007
  flakelab bisect --test tests/test_a.py::test_v --seed 1234 -- pytest tests
  flakelab bisect RUN --budget 40 --confirm 5";

/// `flakelab bisect`.
#[derive(Debug, Clone, Args)]
pub struct BisectArgs {
    /// The failing run (id or unique prefix); leave out with --seed.
    pub run: Option<String>,
    /// The victim, as the runner or the report names it [default: the one
    /// test that failed in the run].
    #[arg(long, value_name = "ID")]
    pub test: Option<String>,
    /// Without a run: the shuffle seed under which the victim failed (one
    /// shuffled run of the command after `--` is recorded first).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// At most this many runs in all.
    #[arg(long, value_name = "RUNS")]
    pub budget: Option<u32>,
    /// Runs of each arm of the confirmation (found tests + victim; victim alone).
    #[arg(long, value_name = "K", default_value_t = 3)]
    pub confirm: u32,
    /// Do not look for cleaners.
    #[arg(long)]
    pub no_cleaners: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = LadderFormat::Table)]
    pub format: LadderFormat,
    /// Where the store is.
    #[command(flatten)]
    pub store: StoreArgs,
    /// With --seed: the test command and its arguments (after `--`).
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

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
    /// Seed for the schedule and the shuffle cell's seeds (fixed by default,
    /// so the demo reads the same on every machine).
    #[arg(long, value_name = "S", default_value_t = DEMO_SEED)]
    pub seed: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Runs at once (2 or more lets the suite's shared-directory test collide).
    #[arg(short = 'j', long = "jobs", default_value_t = 1, value_name = "P", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: u32,
    /// Keep the demo directory (its store and logs) and print its path.
    #[arg(long)]
    pub keep: bool,
    /// Also write the demo's HTML report to this file (or
    /// flakelab-demo.html in the current directory) and print its path.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "flakelab-demo.html")]
    pub html: Option<PathBuf>,
}

/// `flakelab completions`.
#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// The shells `flakelab completions` writes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    /// bash (bash-completion).
    Bash,
    /// zsh (a `_flakelab` function for $fpath).
    Zsh,
    /// fish.
    Fish,
    /// PowerShell.
    Powershell,
}

/// `flakelab __probe`.
#[derive(Debug, Clone, Args)]
pub struct ProbeArgs {
    /// What to report, as the perturbation kind's probe names it: `env
    /// NAME…` (`set NAME=VALUE` or `unset NAME`), `net` (`route: …`,
    /// `loopback: …`), `affinity` (`cpus: N (list)`), `rlimit RES` (`RES
    /// soft hard`).
    pub what: String,
    /// Its arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
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
    /// Shuffle the tests with this seed (printed as `seed: N`).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Shuffle with a fresh seed (printed as `seed: N`).
    #[arg(long, conflicts_with = "seed")]
    pub shuffle: bool,
    /// Run exactly the tests listed in FILE (one name a line), in that order.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["seed", "shuffle"])]
    pub order: Option<PathBuf>,
    /// Run the tests on N worker threads (printed as `workers: N (threads)`).
    #[arg(short = 'n', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub workers: Option<u32>,
    /// Also write a JUnit report of the run to this file.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::ColorWhen;

    fn args(list: &[&str]) -> Vec<std::ffi::OsString> {
        list.iter().map(Into::into).collect()
    }

    #[test]
    fn the_color_flag_is_found_before_parsing_and_not_in_the_subject_command() {
        let found = |list: &[&str]| ColorWhen::in_args(&args(list));
        assert_eq!(
            found(&["flakelab", "run", "--color", "never"]),
            Some(ColorWhen::Never)
        );
        assert_eq!(
            found(&["flakelab", "--color=always", "run", "--color=never"]),
            Some(ColorWhen::Never)
        );
        assert_eq!(
            found(&["flakelab", "run", "--", "ls", "--color=always"]),
            None
        );
        assert_eq!(found(&["flakelab", "run", "--color=sometimes"]), None);
        assert_eq!(found(&["flakelab", "help"]), None);
    }
}
