//! One function per subcommand: the only module that wires the layers
//! together (catalog → perturb → plan → exec → store → report).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::catalog::{Catalog, Cell};
use crate::cli::{self, Command, Format, RunArgs};
use crate::error::{Error, Result, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE};
use crate::exec::child::{run_child, ChildLimits, ChildResult, Launch, Stop};
use crate::exec::schedule::{self, Event, Job};
use crate::perturb::{self, HostFacts, Prepared};
use crate::plan::{self, Plan};
use crate::record::{
    CellRecord, Outcome, ProcessEnd, RunRecord, SessionRecord, RUN_SCHEMA, SESSION_SCHEMA,
};
use crate::report::{self, progress::Progress, Report};
use crate::store::Store;
use crate::{demo, host, repro};

mod ladder_cmd;
mod screen_cmd;
mod verify_cmd;

/// Bytes of a run's output kept from its start.
pub const LOG_HEAD: usize = 1 << 20;
/// Bytes of a run's output kept from its end.
pub const LOG_TAIL: usize = 1 << 20;
/// How long a probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// Runs one parsed command line; returns the process exit code.
pub fn run(cli: cli::Cli) -> Result<i32> {
    match cli.command {
        Command::Run(args) => runtime()?.block_on(run_cmd(args, Replay::default())),
        Command::Ladder(args) => runtime()?.block_on(ladder_cmd::ladder_cmd(args)),
        Command::Verify(args) => runtime()?.block_on(verify_cmd::verify_cmd(args)),
        Command::Init(args) => {
            let dir = subject_dir(args.dir.as_deref())?;
            print!("{}", crate::init::init(&dir, &args.command, args.force)?);
            Ok(EXIT_OK)
        }
        Command::Replay(args) => replay_cmd(&args),
        Command::Doctor => doctor_cmd(),
        Command::Recipes(args) => recipes_cmd(&args),
        Command::Plan(args) => plan_cmd(&args),
        Command::Report(args) => report_cmd(&args),
        Command::Evidence(args) => evidence_cmd(&args),
        Command::Perturbations(args) => perturbations_cmd(&args),
        Command::Demo(args) => demo_cmd(&args),
        Command::Probe(args) => probe_cmd(&args),
        Command::Exec(args) => exec_cmd(&args),
        Command::DemoSuite(args) => Ok(demo::run_suite(
            &args.project,
            args.only.as_deref(),
            &mut std::io::stdout().lock(),
        )),
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    // One thread: the work happens in the children; a single-threaded loop
    // hands each exit to the next spawn without cross-thread wake-ups.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            Error::harness(
                format!("cannot start the async runtime: {e}"),
                "report this as a bug",
            )
        })
}

/// Everything `run` needs, resolved and validated before the first run.
struct Settings {
    command: Vec<String>,
    dir: PathBuf,
    store: Store,
    cells: Vec<(Cell, Prepared)>,
    runs: u32,
    jobs: usize,
    seed: u64,
    confidence: f64,
    signature: Option<regex::Regex>,
    limits: ChildLimits,
    format: Format,
    facts: HostFacts,
    junit: Option<JunitSource>,
    recipe: Option<crate::catalog::recipe::Recipe>,
    runner_note: Option<String>,
    left_out: Vec<(String, String)>,
    /// Processes started together per planned run (a ladder rung's P; 1
    /// for `run`).
    copies: usize,
    /// Each copy's own working copy (the subject's directory inside it),
    /// when the rung gives each process its own; empty otherwise.
    copy_dirs: Vec<PathBuf>,
    /// The ladder rung this session is, if it is one.
    rung: Option<crate::record::SessionRung>,
    /// Each cell's own directory (`verify`: the before and after trees),
    /// by cell index; empty when every cell runs in `dir`.
    cell_dirs: Vec<PathBuf>,
    /// The session this one is part of (a screen design's confirmation).
    part_of: Option<String>,
}

impl Settings {
    /// The `--junit` argument that gives a derived session the same report
    /// source (None for the recipe's or `{junit}` paths, which need none).
    fn session_junit(&self) -> Option<String> {
        match &self.junit {
            Some(JunitSource::Path(p)) => Some(p.clone()),
            _ => None,
        }
    }
}

/// Where a run's JUnit report comes from.
#[derive(Debug, Clone)]
enum JunitSource {
    /// The recipe's JUnit arguments, with a fresh harness-owned path per run.
    Recipe,
    /// `{junit}` in the command: a fresh harness-owned path per run.
    Harness,
    /// `--junit PATH` (relative to the subject's directory), `{run}` expanded.
    Path(String),
}

fn resolve(args: RunArgs) -> Result<Settings> {
    let dir = subject_dir(args.store.dir.as_deref())?;
    // Flags, then FLAKELAB_* variables, then flakelab.toml, then defaults
    // (config::resolve_run); replay and demo fix every setting themselves.
    let (file, env): (_, crate::config::EnvLookup<'_>) = if args.exact {
        (None, &|_| None)
    } else {
        (crate::config::load(&dir)?, &|name| std::env::var(name).ok())
    };
    let layered = crate::config::resolve_run(
        &crate::config::RunFlags::from_args(&args),
        env,
        file.as_ref(),
    )?;
    let command = crate::config::resolve_command(&args.command, file.as_ref())?;
    let lane_note = matches!(command.origin, crate::config::Origin::File { .. }).then(|| {
        format!(
            "flakelab: no command after `--`: running the lane ({}): {}",
            command.origin,
            shell_words::join(&command.value)
        )
    });
    let given = matches!(command.origin, crate::config::Origin::Flag(_));
    let command = command.value;
    let timeout = layered.timeout.value;
    let grace = layered.kill_grace.value;
    let signature = args
        .signature
        .as_deref()
        .map(|s| {
            regex::Regex::new(s).map_err(|e| {
                Error::usage(
                    format!("invalid --signature regex `{s}`: {e}"),
                    "use Rust regex syntax; escape special characters with `\\`",
                )
            })
        })
        .transpose()?;
    repro::configure(&crate::config::redact_names(&dir)?);
    let catalog = Catalog::load(Some(&dir.join(".flakelab").join("perturbations")))?;
    let recipes = crate::catalog::recipe::load(Some(&dir.join(".flakelab").join("recipes")))?;
    let (recipe, runner_note) = resolve_runner(&recipes, args.runner.as_deref(), &command)?;
    let mut junit = resolve_junit(&command, given, &layered)?;
    if junit.is_none() && recipe.as_ref().is_some_and(|r| r.junit.is_some()) {
        junit = Some(JunitSource::Recipe);
    }
    let cells = resolve_cells(&catalog, &args, &layered.matrix)?;
    let mut facts = HostFacts::detect();
    if let Some(r) = &recipe {
        facts.unsupported = r.unsupported.clone();
    }
    let explicit: Vec<String> = args.perturb.clone();
    let mut left_out = Vec::new();
    let cells = cells
        .into_iter()
        .filter_map(|c| {
            let mut p = match perturb::prepare(&c, &facts, recipe.as_ref()) {
                Ok(p) => p,
                Err(e) => return Some(Err(e)),
            };
            let needs_recipe = c.perturbations.iter().any(|k| {
                matches!(
                    k,
                    crate::catalog::Kind::Shuffle | crate::catalog::Kind::Workers { .. }
                )
            });
            if p.missing.is_some() && needs_recipe && !explicit.contains(&c.name) {
                // A matrix cell this runner cannot take: left out, and said so.
                let why = p.missing.take().unwrap_or_default();
                left_out.push((c.name.clone(), why.lines().next().unwrap_or("").to_string()));
                return None;
            }
            Some(Ok((c, p)))
        })
        .map(|r| {
            let (c, mut p) = r?;
            if let Some(missing) = p.missing.take() {
                // Asked for by hand: an error before anything runs. From a
                // matrix: the cell is reported not applied, the rest run.
                if explicit.contains(&c.name) {
                    return Err(Error::usage(
                        format!(
                            "cell `{}`: {}",
                            c.name,
                            missing.lines().next().unwrap_or("")
                        ),
                        missing
                            .lines()
                            .nth(1)
                            .unwrap_or("")
                            .trim_start_matches("hint: ")
                            .to_string(),
                    ));
                }
                p.not_applicable = Some(missing.replace('\n', "; "));
            }
            Ok((c, p))
        })
        .collect::<Result<Vec<_>>>()?;
    let store = Store::open(&store_root(&args.store, &dir))?;
    if let Some(note) = lane_note {
        eprintln!("{note}");
    }
    Ok(Settings {
        command,
        dir,
        store,
        cells,
        runs: layered.runs.value,
        jobs: layered.jobs.value,
        seed: args
            .seed
            .unwrap_or_else(|| u64::from(rand::random::<u32>())),
        confidence: layered.confidence.value,
        signature,
        limits: ChildLimits {
            timeout,
            grace,
            log_head: LOG_HEAD,
            log_tail: LOG_TAIL,
        },
        format: args.format,
        facts,
        junit,
        recipe,
        runner_note,
        left_out,
        copies: 1,
        copy_dirs: Vec::new(),
        rung: None,
        cell_dirs: Vec::new(),
        part_of: None,
    })
}

/// The recipe for the command: `--runner NAME` (or `none`), else detection.
fn resolve_runner(
    recipes: &[crate::catalog::recipe::Recipe],
    runner: Option<&str>,
    command: &[String],
) -> Result<(Option<crate::catalog::recipe::Recipe>, Option<String>)> {
    use crate::catalog::recipe::{detect, Detection};
    match runner {
        Some("none") => Ok((None, Some("--runner none: exit codes only".into()))),
        Some(name) => match recipes.iter().find(|r| r.name == name) {
            Some(r) => Ok((Some(r.clone()), None)),
            None => Err(Error::usage(
                format!("unknown runner `{name}`"),
                format!(
                    "known runners: {} (or `none`)",
                    recipes
                        .iter()
                        .map(|r| r.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        },
        None => match detect(recipes, command) {
            Detection::Found { recipe, .. } => Ok((Some(recipe.clone()), None)),
            Detection::None(why) => Ok((None, Some(why))),
        },
    }
}

/// `command_given`: the command came after `--`, so its `{junit}` beats a
/// JUnit path from a variable or flakelab.toml.
fn resolve_junit(
    command: &[String],
    command_given: bool,
    layered: &crate::config::RunSettings,
) -> Result<Option<JunitSource>> {
    use crate::config::Origin;
    let in_command = command.iter().any(|w| w.contains("{junit}"));
    let from = &layered.junit.origin;
    match (&layered.junit.value, in_command) {
        (Some(_), true) if command_given && !matches!(from, Origin::Flag(_)) => {
            Ok(Some(JunitSource::Harness))
        }
        (Some(_), true) => Err(Error::usage(
            format!("both {from} and `{{junit}}` in the command say where the report goes"),
            "use one: `{junit}` in the command lets flakelab choose a fresh path per run",
        )),
        (None, true) => Ok(Some(JunitSource::Harness)),
        (None, false) => Ok(None),
        (Some(path), false) => {
            let rest = path.replace("{run}", "");
            if let Some(start) = rest.find('{') {
                let end = rest[start..]
                    .find('}')
                    .map_or(rest.len(), |e| start + e + 1);
                return Err(Error::usage(
                    format!(
                        "unknown placeholder `{}` in {from} `{path}`",
                        &rest[start..end]
                    ),
                    "the only placeholder --junit knows is {run} (the run's id)",
                ));
            }
            let jobs = layered.jobs.value;
            if jobs > 1 && !path.contains("{run}") {
                return Err(Error::usage(
                    format!(
                        "{from} `{path}` with {} `{jobs}`: runs at once would overwrite each other's report",
                        layered.jobs.origin
                    ),
                    "put {run} in the path (e.g. --junit 'reports/{run}.xml') or use {junit} in the command",
                ));
            }
            Ok(Some(JunitSource::Path(path.clone())))
        }
    }
}

fn resolve_cells(
    catalog: &Catalog,
    args: &RunArgs,
    matrix: &crate::config::Setting<Vec<String>>,
) -> Result<Vec<Cell>> {
    let mut specs: Vec<String> = args.perturb.clone();
    for name in &matrix.value {
        let m = catalog.matrix(name).ok_or_else(|| {
            let names: Vec<&str> = catalog.matrices.iter().map(|m| m.name.as_str()).collect();
            Error::usage(
                match &matrix.origin {
                    crate::config::Origin::Flag(_) => format!("unknown matrix `{name}`"),
                    from => format!("unknown matrix `{name}` (from {from})"),
                },
                format!("declared matrices: {}", names.join(", ")),
            )
        })?;
        specs.extend(m.cells.iter().cloned());
    }
    let mut cells = Vec::new();
    if !args.no_baseline {
        cells.push(Cell::baseline());
    }
    for spec in &specs {
        let cell = catalog.cell(spec).map_err(|message| {
            Error::usage(
                format!("bad perturbation spec `-p {spec}`: {message}"),
                "`flakelab perturbations` lists declared names; `flakelab run --help` lists the kinds",
            )
        })?;
        if !cells.iter().any(|c: &Cell| c.key() == cell.key()) {
            cells.push(cell);
        }
    }
    if cells.is_empty() {
        return Err(Error::usage(
            "no cells to run",
            "drop `--no-baseline` or add `-p SPEC` / `--matrix NAME`",
        ));
    }
    Ok(cells)
}

fn subject_dir(dir: Option<&Path>) -> Result<PathBuf> {
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir().map_err(|e| {
            Error::usage(
                format!("cannot read the current directory: {e}"),
                "run from an existing directory or pass -C DIR",
            )
        })?,
    };
    std::fs::canonicalize(&dir).map_err(|e| {
        Error::usage(
            format!("working directory {} is not usable: {e}", dir.display()),
            "pass an existing directory with -C DIR",
        )
    })
}

fn store_root(args: &cli::StoreArgs, dir: &Path) -> PathBuf {
    args.store
        .clone()
        .unwrap_or_else(|| dir.join(crate::store::DEFAULT_ROOT))
}

fn new_session_id() -> String {
    let now = jiff::Timestamp::now().to_zoned(jiff::tz::TimeZone::UTC);
    format!(
        "{}-{:04x}",
        now.strftime("%Y%m%d-%H%M%S"),
        rand::random::<u16>()
    )
}

fn now_text() -> String {
    jiff::Timestamp::now()
        .round(jiff::Unit::Millisecond)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// The variables every run gets, identically named in every cell.
fn identity_env(run_id: &str, seed: u64, cell: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("FLAKELAB".to_string(), "1".to_string()),
        ("FLAKELAB_RUN_ID".to_string(), run_id.to_string()),
        ("FLAKELAB_SEED".to_string(), seed.to_string()),
        ("FLAKELAB_CELL".to_string(), cell.to_string()),
    ])
}

fn launch_for(
    settings: &Settings,
    prepared: &Prepared,
    argv: Vec<String>,
    identity: BTreeMap<String, String>,
    extra: &BTreeMap<String, String>,
) -> Launch {
    let mut env_set = identity;
    env_set.extend(prepared.set.iter().map(|(k, v)| (k.clone(), v.clone())));
    env_set.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    Launch {
        argv,
        cwd: settings.dir.clone(),
        env_set,
        env_unset: prepared.unset.clone(),
    }
}

/// Runs every probe of a cell through the cell's launch path.
async fn probe_cell(
    settings: &Settings,
    session: &str,
    index: usize,
    cell: &Cell,
    prepared: &Prepared,
    stop: &tokio::sync::watch::Receiver<Stop>,
) -> Result<CellRecord> {
    let mut record = CellRecord {
        name: cell.name.clone(),
        perturbations: cell.canonical(),
        applied: true,
        reason: None,
        probes: Vec::new(),
    };
    if let Some(reason) = &prepared.not_applicable {
        record.applied = false;
        record.reason = Some(reason.clone());
        return Ok(record);
    }
    for (i, probe) in prepared.probes.iter().enumerate() {
        let marker = format!("{session}.probe{index}.{i}");
        let launch = launch_for(
            settings,
            prepared,
            prepared.wrap(&settings.facts.self_exe, &probe.argv),
            identity_env(&marker, 0, &cell.name),
            &BTreeMap::new(),
        );
        let log = tempfile::NamedTempFile::new().map_err(|e| {
            Error::harness(
                format!("cannot create a temporary file for a probe: {e}"),
                "check that $TMPDIR is writable",
            )
        })?;
        let limits = ChildLimits {
            timeout: Some(PROBE_TIMEOUT),
            log_head: 64 << 10,
            log_tail: 64 << 10,
            ..settings.limits
        };
        let busy_probe = matches!(probe.expect, perturb::Expect::Busy { .. });
        let guard = prepared
            .stress
            .as_ref()
            .filter(|_| busy_probe)
            .map(perturb::stress::StressGuard::start);
        let before = perturb::stress::cpu_ticks();
        let result = run_child(&launch, limits, Some(log.path()), &marker, stop.clone()).await;
        let busy = before
            .zip(perturb::stress::cpu_ticks())
            .and_then(|(a, b)| perturb::stress::busy_share(a, b));
        drop(guard);
        let seen = perturb::probe::Observed {
            real_now: jiff::Timestamp::now().as_second(),
            busy,
        };
        let output = std::fs::read_to_string(log.path()).unwrap_or_default();
        match perturb::probe::judge(probe, &result.end, &output, seen) {
            Ok(fact) => record.probes.push(fact),
            Err(reason) => {
                record.applied = false;
                record.reason = Some(reason);
                break;
            }
        }
    }
    Ok(record)
}

/// What makes a session a replay of one recorded run.
#[derive(Debug, Clone, Default)]
struct Replay {
    /// The replayed run's id.
    of: Option<String>,
    /// Its seed, given to every replayed run.
    seed: Option<u64>,
    /// A seed for the first replicate only (a confirmation starts with the
    /// seed that flipped its candidate; later replicates get fresh seeds).
    first_seed: Option<u64>,
}

/// Called after each replicate block with the session's runs so far;
/// returns true to stop the session there (a sequential decision).
type OnBlock<'a> = &'a mut dyn FnMut(&[RunRecord]) -> bool;

async fn run_cmd(args: RunArgs, replay: Replay) -> Result<i32> {
    if args.design == cli::Design::Screen {
        if args.confirm.is_some() {
            return Err(Error::usage(
                "--confirm and --design screen both re-run failures",
                "drop --confirm: the screen design confirms every candidate on fresh runs",
            ));
        }
        return screen_cmd::screen_cmd(args).await;
    }
    if args.confirm == Some(0) {
        return Err(Error::usage(
            "`--confirm 0` replays nothing",
            "use --confirm 1 or more (e.g. --confirm 5)",
        ));
    }
    let confirm = args.confirm;
    let settings = resolve(args)?;
    let stop = start_watching()?;
    let Some(done) = run_session(&settings, &replay, &stop).await? else {
        return Ok(EXIT_INTERRUPTED);
    };
    let mut report = report::build(&done.session, &done.runs, done.load);
    if let (Some(times), false) = (confirm, done.interrupted) {
        report.confirmations = confirm_failures(&settings, &done, times, &stop).await?;
    }
    print_report(&report, settings.format);
    Ok(if done.interrupted || *stop.borrow() != Stop::Run {
        EXIT_INTERRUPTED
    } else {
        report.exit_code()
    })
}

/// At most this many distinct failing runs are confirmed per session.
const MAX_CONFIRMED: usize = 10;

/// Replays each distinct failing run of a finished session `times` times
/// (its cell and seed; a shuffle cell's runs are distinct by seed, others by
/// cell and failure signature), in sessions of their own.
async fn confirm_failures(
    settings: &Settings,
    done: &SessionDone,
    times: u32,
    stop: &tokio::sync::watch::Receiver<Stop>,
) -> Result<Vec<report::Confirmation>> {
    let mut seen = std::collections::BTreeSet::new();
    let mut failing = Vec::new();
    for run in done.runs.iter().filter(|r| r.outcome == Outcome::Fail) {
        if done.session.signature.is_some() && run.signature_match != Some(true) {
            continue;
        }
        let shuffled = settings
            .cells
            .iter()
            .find(|(c, _)| c.name == run.cell)
            .is_some_and(|(_, p)| p.shuffle);
        let key = (
            run.cell.clone(),
            shuffled.then_some(run.seed),
            run.failure_signature.clone(),
        );
        if seen.insert(key) {
            failing.push(run);
        }
    }
    if failing.len() > MAX_CONFIRMED {
        eprintln!(
            "flakelab: {} distinct failing runs; confirming the first {MAX_CONFIRMED}",
            failing.len()
        );
        failing.truncate(MAX_CONFIRMED);
    }
    let mut out = Vec::new();
    for run in failing {
        if *stop.borrow() != Stop::Run {
            break;
        }
        eprintln!(
            "flakelab: confirming run {} ({}, seed {}) {times} times",
            run.id, run.cell, run.seed
        );
        let mut args = replay_args(run, &done.session, settings.store.root(), times);
        args.runner = settings
            .recipe
            .as_ref()
            .map(|r| r.name.clone())
            .or(Some("none".into()));
        let replay_settings = resolve(args)?;
        let replay = Replay {
            of: Some(run.id.clone()),
            seed: Some(run.seed),
            first_seed: None,
        };
        let Some(again) = run_session(&replay_settings, &replay, stop).await? else {
            break;
        };
        let measured = again
            .runs
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Pass | Outcome::Fail))
            .count() as u64;
        let failed = again
            .runs
            .iter()
            .filter(|r| r.outcome == Outcome::Fail)
            .filter(|r| done.session.signature.is_none() || r.signature_match == Some(true))
            .count() as u64;
        out.push(report::Confirmation {
            run: run.id.clone(),
            cell: run.cell.clone(),
            seed: run.seed,
            signature: run.failure_signature.clone(),
            times,
            measured,
            failed,
            verdict: report::confirmation_verdict(times, measured, failed),
            session: again.session.id.clone(),
        });
    }
    Ok(out)
}

/// Watches for Ctrl-C and makes flakelab a child subreaper: call once per
/// process, before the first session.
fn start_watching() -> Result<tokio::sync::watch::Receiver<Stop>> {
    let stop = schedule::watch_signals().map_err(|e| {
        Error::harness(
            format!("cannot watch for Ctrl-C: {e}"),
            "report this as a bug",
        )
    })?;
    if let Err(e) = crate::exec::child::become_subreaper() {
        return Err(Error::harness(
            format!("cannot become a child subreaper: {e}"),
            "flakelab needs Linux's PR_SET_CHILD_SUBREAPER to find processes that escape a run",
        ));
    }
    Ok(stop)
}

/// A finished (or interrupted) session, read back from the store.
struct SessionDone {
    session: SessionRecord,
    runs: Vec<RunRecord>,
    load: crate::store::LoadStats,
    interrupted: bool,
}

/// Probes the cells, records the session, runs its plan and reads its runs
/// back. `None` when Ctrl-C came while probing (nothing was run).
async fn run_session(
    settings: &Settings,
    replay: &Replay,
    stop: &tokio::sync::watch::Receiver<Stop>,
) -> Result<Option<SessionDone>> {
    run_session_looking(settings, replay, stop, None).await
}

/// [`run_session`], calling `on_block` after each replicate block (every
/// cell once) and stopping early when it says so.
async fn run_session_looking(
    settings: &Settings,
    replay: &Replay,
    stop: &tokio::sync::watch::Receiver<Stop>,
    mut on_block: Option<OnBlock<'_>>,
) -> Result<Option<SessionDone>> {
    let session_id = new_session_id();
    let started_at = now_text();
    let names: Vec<String> = settings.cells.iter().map(|(c, _)| c.name.clone()).collect();
    let mut plan = plan::build(&names, settings.runs, settings.seed);
    if let Some(seed) = replay.seed {
        for run in &mut plan.runs {
            run.seed = seed;
        }
    }
    if let Some(seed) = replay.first_seed {
        for run in plan.runs.iter_mut().filter(|r| r.replicate == 0) {
            run.seed = seed;
        }
    }

    let mut cell_records = Vec::new();
    for (i, (cell, prepared)) in settings.cells.iter().enumerate() {
        cell_records.push(probe_cell(settings, &session_id, i, cell, prepared, stop).await?);
        if *stop.borrow() != Stop::Run {
            eprintln!("flakelab: interrupted while probing; nothing was run");
            return Ok(None);
        }
    }
    let session = SessionRecord {
        schema: SESSION_SCHEMA.into(),
        id: session_id.clone(),
        started_at: started_at.clone(),
        flakelab_version: env!("CARGO_PKG_VERSION").into(),
        command: settings.command.clone(),
        cwd: settings.dir.clone(),
        seed: settings.seed,
        confidence: settings.confidence,
        signature: settings.signature.as_ref().map(|r| r.as_str().to_string()),
        timeout_s: settings.limits.timeout.map(|t| t.as_secs_f64()),
        jobs: settings.jobs,
        cells: cell_records.clone(),
        plan: plan.clone(),
        host: host::host_info(),
        repo: host::repo_info(&settings.dir),
        replay_of: replay.of.clone(),
        runner: settings.recipe.as_ref().map(|r| r.name.clone()),
        runner_note: settings.runner_note.clone(),
        runner_version: (settings.recipe.as_ref())
            .and_then(|r| host::runner_version(r, &settings.command, &settings.dir)),
        left_out: settings
            .left_out
            .iter()
            .map(|(cell, why)| format!("{cell}: {why}"))
            .collect(),
        junit: match &settings.junit {
            Some(JunitSource::Path(p)) => Some(p.clone()),
            _ => None,
        },
        rung: settings.rung.clone(),
        part_of: settings.part_of.clone(),
    };
    settings.store.append_session(&session)?;

    let interrupted = match on_block.as_mut() {
        None => execute(settings, &session, &plan, &cell_records, stop.clone()).await?,
        Some(look) => {
            let mut interrupted = false;
            for replicate in 0..settings.runs {
                let block = Plan {
                    runs: plan
                        .runs
                        .iter()
                        .filter(|r| r.replicate == replicate)
                        .copied()
                        .collect(),
                    ..plan.clone()
                };
                interrupted =
                    execute(settings, &session, &block, &cell_records, stop.clone()).await?;
                if interrupted {
                    break;
                }
                let (runs, _) = settings.store.runs_of(&session_id)?;
                if look(&runs) {
                    break;
                }
            }
            interrupted
        }
    };
    let (runs, load) = settings.store.runs_of(&session_id)?;
    Ok(Some(SessionDone {
        session,
        runs,
        load,
        interrupted,
    }))
}

/// Runs the plan, appending each finished run to the store. Returns whether
/// the session was interrupted.
async fn execute(
    settings: &Settings,
    session: &SessionRecord,
    plan: &Plan,
    cells: &[CellRecord],
    stop: tokio::sync::watch::Receiver<Stop>,
) -> Result<bool> {
    let mut jobs = Vec::new();
    let mut pending: BTreeMap<usize, RunRecord> = BTreeMap::new();
    for spec in &plan.runs {
        for copy in 0..settings.copies {
            if let Some((job, record)) = plan_process(settings, session, cells, spec, copy)? {
                pending.insert(job.index, record);
                jobs.push(job);
            }
        }
    }

    let mut progress = Progress::new(jobs.len() as u64);
    let mut store_error = None;
    let end = schedule::schedule(
        jobs,
        settings.jobs,
        settings.limits,
        stop,
        |event| match event {
            Event::Started { .. } => {}
            Event::Interrupted => progress.interrupted(),
            Event::Finished {
                index,
                started_at,
                result,
                cpu_busy,
            } => {
                let Some(mut record) = pending.remove(&index) else {
                    return;
                };
                record.cpu_busy = cpu_busy;
                let prepared = &settings.cells[record_cell(&settings.cells, &record.cell)].1;
                finish_record(&mut record, started_at, result, settings, prepared);
                progress.finished(record.outcome == Outcome::Fail);
                if let Err(e) = settings.store.append_run(&record) {
                    store_error.get_or_insert(e);
                }
            }
        },
    )
    .await;
    progress.finish();
    match store_error {
        Some(e) => Err(e),
        None => Ok(end.interrupted),
    }
}

/// One process of one planned run: its record (stored at once when the
/// cell is not applied) and the job that runs it.
fn plan_process(
    settings: &Settings,
    session: &SessionRecord,
    cells: &[CellRecord],
    spec: &plan::RunSpec,
    copy: usize,
) -> Result<Option<(Job, RunRecord)>> {
    let (cell, prepared) = &settings.cells[spec.cell];
    let index = spec.index * settings.copies + copy;
    let id = format!("{}.{:05}", session.id, index);
    let applied = cells[spec.cell].applied;
    let dir = settings
        .copy_dirs
        .get(copy)
        .or(settings.cell_dirs.get(spec.cell))
        .unwrap_or(&settings.dir);
    let junit = match (&settings.junit, applied) {
        (Some(JunitSource::Harness | JunitSource::Recipe), true) => {
            Some(settings.store.junit_path(&session.id, index)?)
        }
        (Some(JunitSource::Path(template)), true) => Some(dir.join(template.replace("{run}", &id))),
        _ => None,
    };
    if let Some(path) = &junit {
        // A report left by an earlier run must never pass as this run's.
        let _ = std::fs::remove_file(path);
    }
    let (command, extra_env) = build_command(settings, prepared, spec.seed, junit.as_deref())?;
    let mut launch = launch_for(
        settings,
        prepared,
        prepared.wrap(&settings.facts.self_exe, &command),
        identity_env(&id, spec.seed, &cell.name),
        &extra_env,
    );
    launch.cwd = dir.clone();
    let env = repro::redacted(&launch.env_set, &launch.env_unset);
    let topology = (settings.copies > 1 || !settings.copy_dirs.is_empty()).then(|| {
        crate::record::RunTopology {
            group: spec.index,
            copy: copy as u32,
            working_copy: settings.copy_dirs.get(copy).cloned(),
        }
    });
    let mut repro_note = prepared.repro_note();
    if topology.is_some() {
        let together = format!(
            "one of {} processes started together (group {}){}",
            settings.copies,
            spec.index,
            if settings.copy_dirs.is_empty() {
                String::new()
            } else {
                "; its working copy was temporary and is gone: run it in a fresh `git worktree add --detach DIR COMMIT`".to_string()
            }
        );
        repro_note = Some(match repro_note {
            Some(n) => format!("{n}; {together}"),
            None => together,
        });
    }
    let mut record = RunRecord {
        schema: RUN_SCHEMA.into(),
        id: id.clone(),
        session: session.id.clone(),
        index,
        cell: cell.name.clone(),
        perturbations: cell.canonical(),
        replicate: spec.replicate,
        seed: spec.seed,
        started_at: session.started_at.clone(),
        duration_s: 0.0,
        outcome: Outcome::NotApplied,
        end: ProcessEnd::NotStarted,
        exit_code: None,
        signal: None,
        signature_match: None,
        reason: None,
        log: None,
        output_bytes: 0,
        output_dropped: 0,
        repro: repro::line(&launch.cwd, &env, &prepared.repro_argv(&command)),
        repro_note,
        cpu_busy: None,
        argv: launch.argv.clone(),
        cwd: launch.cwd.clone(),
        env,
        stragglers: 0,
        warnings: Vec::new(),
        junit,
        workers: None,
        tests_missing: None,
        tests: Vec::new(),
        failure_signature: None,
        topology,
    };
    if !applied {
        record.reason = cells[spec.cell].reason.clone();
        settings.store.append_run(&record)?;
        return Ok(None);
    }
    let log = settings.store.log_path(&session.id, index)?;
    record.log = Some(settings.store.relative(&log));
    let grouped = settings.copies > 1;
    let job = Job {
        index,
        launch,
        log: Some(log),
        marker: id,
        // One stress per group: the group runs alone, so copy 0's threads
        // load the host for all of it.
        stress: prepared.stress.clone().filter(|_| copy == 0),
        group: grouped.then_some(spec.index),
    };
    Ok(Some((job, record)))
}

/// Fills a planned record from how its child ended.
fn finish_record(
    record: &mut RunRecord,
    started_at: jiff::Timestamp,
    result: ChildResult,
    settings: &Settings,
    prepared: &Prepared,
) {
    record.started_at = started_at
        .round(jiff::Unit::Millisecond)
        .map(|t| t.to_string())
        .unwrap_or_default();
    record.duration_s = result.duration.as_secs_f64();
    record.output_bytes = result.output_bytes;
    record.output_dropped = result.output_dropped;
    if result.output_bytes == 0 {
        // Nothing was printed, so no log file was created.
        record.log = None;
    }
    record.stragglers = result.stragglers;
    record.warnings = result.warnings;
    record.outcome = match &result.end {
        ProcessEnd::Exited { code: 0 } => Outcome::Pass,
        ProcessEnd::Exited { .. } | ProcessEnd::Signaled { .. } => Outcome::Fail,
        ProcessEnd::TimedOut { .. } => Outcome::Timeout,
        ProcessEnd::SpawnFailed { .. } | ProcessEnd::Interrupted | ProcessEnd::NotStarted => {
            Outcome::Error
        }
    };
    match &result.end {
        ProcessEnd::Exited { code } => record.exit_code = Some(*code),
        ProcessEnd::Signaled { signal } | ProcessEnd::TimedOut { signal } => {
            record.signal = Some(*signal)
        }
        ProcessEnd::SpawnFailed { message } => record.reason = Some(message.clone()),
        _ => {}
    }
    record.end = result.end;
    if !matches!(record.outcome, Outcome::Pass | Outcome::Fail) {
        read_tests(record, settings);
        return;
    }
    let log = record.log.as_ref().map(|l| settings.store.root().join(l));
    let text = log.and_then(|p| std::fs::read(p).ok()).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let wrapped = record.argv.get(1).is_some_and(|a| a == "__exec");
    if wrapped && record.exit_code == Some(perturb::isolate::SETUP_EXIT) {
        if let Some(line) = text
            .lines()
            .find(|l| l.starts_with(perturb::isolate::SETUP_FAILED))
        {
            // The helper could not set the cell up: nothing of the subject ran.
            record.outcome = Outcome::NotApplied;
            record.reason = Some(line.to_string());
            return;
        }
    }
    if let Some(recipe) = &settings.recipe {
        if let Some(reason) = runner_error(recipe, record.exit_code, &text) {
            // A usage error or an empty run measured nothing: never a pass or a fail.
            record.outcome = Outcome::Error;
            record.reason = Some(reason);
            return;
        }
        if let Some(reason) = recipe_not_applied(recipe, prepared, record, &text) {
            record.outcome = Outcome::NotApplied;
            record.reason = Some(reason);
            return;
        }
    }
    read_tests(record, settings);
    if record.outcome != Outcome::Fail {
        return;
    }
    if let Some(sig) = &settings.signature {
        record.signature_match = Some(sig.is_match(&text));
    }
    record.failure_signature = record
        .tests
        .iter()
        .find(|t| t.failed())
        .and_then(|t| t.signature.clone())
        .or_else(|| crate::signature::from_log(&text));
}

fn record_cell(cells: &[(Cell, Prepared)], name: &str) -> usize {
    cells.iter().position(|(c, _)| c.name == name).unwrap_or(0)
}

/// The runner's own "usage error" or "nothing collected", from its recipe:
/// by exit code, or by a line of output for runners that share codes.
fn runner_error(
    recipe: &crate::catalog::recipe::Recipe,
    code: Option<i32>,
    log: &str,
) -> Option<String> {
    let code = code?;
    let plain = strip_ansi(log);
    let found = |re: &Option<String>| -> Option<String> {
        let re = regex::Regex::new(re.as_deref()?).ok()?;
        let m = re.find(&plain)?;
        let line_start = plain[..m.start()].rfind('\n').map_or(0, |i| i + 1);
        let line_end = plain[m.start()..]
            .find('\n')
            .map_or(plain.len(), |i| m.start() + i);
        Some(plain[line_start..line_end].trim().to_string())
    };
    let last = plain
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("(no output)")
        .to_string();
    if recipe.exit.usage.contains(&code) {
        return Some(format!("{} usage error (exit {code}): {last}", recipe.name));
    }
    if recipe.exit.no_tests.contains(&code) {
        return Some(format!(
            "{} collected no tests (exit {code}): {last}",
            recipe.name
        ));
    }
    if code != 0 {
        if let Some(line) = found(&recipe.exit.error_regex) {
            return Some(format!(
                "{} could not run the tests (exit {code}): {line}",
                recipe.name
            ));
        }
        return None;
    }
    found(&recipe.exit.no_tests_regex)
        .map(|line| format!("{} ran no tests (exit 0): {line}", recipe.name))
}

/// The log without colour codes (vitest colours even when piped), so that
/// no seed, proof or error line hides behind them.
fn strip_ansi(log: &str) -> String {
    static ANSI: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    ANSI.get_or_init(|| regex::Regex::new(r"\x1b\[[0-9;]*[A-Za-z]").expect("a valid pattern"))
        .replace_all(log, "")
        .into_owned()
}

/// The per-run probes of the recipe-driven kinds: the seed the runner
/// printed must be the one passed, and workers must show they ran.
fn recipe_not_applied(
    recipe: &crate::catalog::recipe::Recipe,
    prepared: &Prepared,
    record: &mut RunRecord,
    log: &str,
) -> Option<String> {
    let plain = strip_ansi(log);
    let log = plain.as_str();
    if let (true, Some(shuffle)) = (prepared.shuffle, &recipe.shuffle) {
        let printed = regex::Regex::new(&shuffle.seed_regex).ok().and_then(|re| {
            re.captures(log)
                .and_then(|c| c.get(1))
                .map(|m| m.as_str().to_string())
        });
        match printed {
            None => {
                return Some(format!(
                    "shuffle: {} printed no seed line: its shuffle plugin or flag did not take effect (see `flakelab recipes show {}`)",
                    recipe.name, recipe.name
                ))
            }
            Some(seed) if seed != record.seed.to_string() => {
                return Some(format!(
                    "shuffle: {} printed seed {seed}, not the seed passed ({})",
                    recipe.name, record.seed
                ))
            }
            Some(_) => {}
        }
    }
    if let (Some(n), Some(w)) = (prepared.workers, &recipe.workers) {
        record.workers = Some(n);
        let found = |re: &Option<String>| {
            re.as_deref()
                .and_then(|r| regex::Regex::new(r).ok())
                .map(|re| re.is_match(log))
        };
        if found(&w.missing_regex) == Some(true) {
            return Some(format!(
                "workers: {} cannot run workers here{}",
                recipe.name,
                w.missing_hint
                    .as_deref()
                    .map(|h| format!(" ({h})"))
                    .unwrap_or_default()
            ));
        }
        if found(&w.proof_regex) == Some(false) {
            return Some(format!(
                "workers: {} did not report starting {n} workers",
                recipe.name
            ));
        }
    }
    None
}

/// Reads the run's JUnit report into per-test records; a missing or broken
/// report leaves the run's outcome alone and says why in the record.
fn read_tests(record: &mut RunRecord, settings: &Settings) {
    let Some(path) = record.junit.clone() else {
        return;
    };
    if !matches!(
        record.outcome,
        Outcome::Pass | Outcome::Fail | Outcome::Timeout
    ) {
        return;
    }
    match crate::junit::parse_file(&path) {
        Ok(parsed) => {
            let sig = settings.signature.clone();
            let matches = move |text: &str| sig.as_ref().is_some_and(|r| r.is_match(text));
            let matcher: Option<&dyn Fn(&str) -> bool> = if settings.signature.is_some() {
                Some(&matches)
            } else {
                None
            };
            record.tests = crate::outcomes::records(&parsed, matcher);
            if record.tests.is_empty() {
                record.tests_missing =
                    Some(format!("the report {} holds no test case", path.display()));
            }
        }
        Err(e) => record.tests_missing = Some(e.to_string()),
    }
}

/// The command of one run: the user's, with the report path, and with the
/// recipe's shuffle (this run's seed, or shuffling off in every other cell)
/// and workers arguments. Returns the argv and the variables to add.
fn build_command(
    settings: &Settings,
    prepared: &Prepared,
    seed: u64,
    junit: Option<&Path>,
) -> Result<(Vec<String>, BTreeMap<String, String>)> {
    let mut argv = settings.command.clone();
    let mut env = BTreeMap::new();
    let recipe_err = |e: String| {
        Error::harness(
            format!("the runner recipe could not build the command: {e}"),
            "fix the recipe (`flakelab recipes show NAME`) or pass --runner none",
        )
    };
    let recipe = settings.recipe.as_ref();
    let mut inject = |inject: &crate::catalog::recipe::Inject,
                      argv: &mut Vec<String>,
                      vars: BTreeMap<&str, String>|
     -> Result<()> {
        let end = recipe.map_or(argv.len(), |r| {
            crate::catalog::recipe::runner_words_end(r, argv)
        });
        let (next, more) = inject.apply_at(argv, &vars, end).map_err(recipe_err)?;
        *argv = next;
        env.extend(more);
        Ok(())
    };
    if let Some(always) = settings.recipe.as_ref().and_then(|r| r.always.as_ref()) {
        inject(always, &mut argv, BTreeMap::new())?;
    }
    match (&settings.junit, junit) {
        (Some(JunitSource::Harness), Some(path)) => {
            argv = expand_junit(&argv, &path.display().to_string());
        }
        (Some(JunitSource::Recipe), Some(path)) => {
            if let Some(j) = settings.recipe.as_ref().and_then(|r| r.junit.as_ref()) {
                inject(
                    j,
                    &mut argv,
                    BTreeMap::from([("junit", path.display().to_string())]),
                )?;
            }
        }
        _ => {}
    }
    if let Some(shuffle) = settings.recipe.as_ref().and_then(|r| r.shuffle.as_ref()) {
        if prepared.shuffle {
            argv.retain(|w| !shuffle.hides_seed.contains(w));
            inject(
                &shuffle.on,
                &mut argv,
                BTreeMap::from([("seed", seed.to_string())]),
            )?;
        } else if let Some(off) = &shuffle.off {
            inject(off, &mut argv, BTreeMap::new())?;
        }
    }
    if let (Some(n), Some(w)) = (
        prepared.workers,
        settings.recipe.as_ref().and_then(|r| r.workers.as_ref()),
    ) {
        argv.retain(|a| !w.hides_proof.contains(a));
        argv = crate::catalog::recipe::remove_options(&argv, &w.replaces);
        inject(
            &w.set,
            &mut argv,
            BTreeMap::from([("workers", n.to_string())]),
        )?;
    }
    Ok((argv, env))
}

/// Replaces `{junit}` in every word of the command (one pass: the path is
/// never expanded again).
fn expand_junit(command: &[String], path: &str) -> Vec<String> {
    command.iter().map(|w| w.replace("{junit}", path)).collect()
}

fn print_report(report: &Report, format: Format) {
    let text = match format {
        Format::Table => report::table::render(report),
        Format::Json => report::json::render(report),
        Format::Markdown => report::markdown::render(report),
    };
    print_text(&text);
}

/// The command with the recipe's `[select]` for one test (or module, or
/// file): the command's own paths dropped where the recipe says so.
fn select_command(
    recipe: &crate::catalog::recipe::Recipe,
    select: &crate::catalog::recipe::Inject,
    command: &[String],
    id: &str,
    dir: &Path,
) -> std::result::Result<Vec<String>, String> {
    let end = crate::catalog::recipe::runner_words_end(recipe, command);
    let argv = if select.drop_paths {
        crate::catalog::recipe::drop_path_args(command, end, dir, &select.value_options)
    } else {
        command.to_vec()
    };
    let vars = BTreeMap::from([("id", id.to_string())]);
    let (argv, env) = select
        .apply_at(&argv, &vars, end.min(argv.len()))
        .map_err(|e| format!("the {} recipe's [select] failed: {e}", recipe.name))?;
    if !env.is_empty() {
        return Err(format!(
            "the {} recipe selects through variables, which flakelab does not pass yet",
            recipe.name
        ));
    }
    Ok(argv)
}

/// Writes a rendered output to stdout.
fn print_text(text: &str) {
    let mut out = std::io::stdout().lock();
    // A closed stdout (`| head`) is not an error worth a non-zero exit.
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
}

fn plan_cmd(args: &cli::PlanArgs) -> Result<i32> {
    let in_unit = |x: f64| x > 0.0 && x < 1.0;
    if !in_unit(args.rate) || !in_unit(args.confidence) {
        return Err(Error::usage(
            format!(
                "--rate {} and --confidence {} must both be in (0, 1)",
                args.rate, args.confidence
            ),
            "e.g. `flakelab plan --rate 0.01 --confidence 0.95`",
        ));
    }
    let n = plan::runs_needed(args.rate, args.confidence);
    println!(
        "{n} runs to see at least one failure of a {}% failure rate with {}% confidence",
        percent(args.rate),
        percent(args.confidence)
    );
    println!(
        "(0 failures in {n} runs bounds the rate below {} at that confidence)",
        crate::stats::format_bound(crate::stats::proportion(0, n, args.confidence).high)
            .trim_start_matches("p < ")
    );
    Ok(EXIT_OK)
}

/// `0.01` → `1`, `0.005` → `0.5`: a percentage without float noise.
fn percent(x: f64) -> String {
    let s = format!("{:.4}", x * 100.0);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn report_cmd(args: &cli::ReportArgs) -> Result<i32> {
    let dir = subject_dir(args.store.dir.as_deref())?;
    let root = store_root(&args.store, &dir);
    if !root.is_dir() {
        return Err(Error::usage(
            format!("no store at {}", root.display()),
            "run `flakelab run` first, or point at a store with --store DIR",
        ));
    }
    let store = Store::open(&root)?;
    let session = store.session(args.session.as_deref())?.ok_or_else(|| {
        Error::usage(
            match &args.session {
                Some(s) => format!("no session `{s}` in {}", root.display()),
                None => format!("no session recorded in {}", root.display()),
            },
            "list sessions with `cut -c1-200 .flakelab/sessions.jsonl`, or run `flakelab run` first",
        )
    })?;
    let (runs, load) = store.runs_of(&session.id)?;
    let mut report = report::build(&session, &runs, load);
    if let Some(screen) = store.screen_of(&session.id)? {
        screen_cmd::apply(&mut report, &screen, &runs);
    }
    print_report(&report, args.format);
    Ok(report.exit_code())
}

/// `flakelab evidence`: the evidence block of a session, or of a ladder.
fn evidence_cmd(args: &cli::EvidenceArgs) -> Result<i32> {
    let dir = subject_dir(args.store.dir.as_deref())?;
    repro::configure(&crate::config::redact_names(&dir)?);
    let root = store_root(&args.store, &dir);
    if !root.is_dir() {
        return Err(Error::usage(
            format!("no store at {}", root.display()),
            "run `flakelab run` first, or point at a store with --store DIR",
        ));
    }
    let store = Store::open(&root)?;
    let (ladders, _) = store.load_ladders()?;
    let by_ladder = args
        .session
        .as_deref()
        .and_then(|id| ladders.iter().find(|l| l.id == id));
    let wanted = match by_ladder {
        Some(l) => Some(crate::evidence::ladder_session(l).ok_or_else(|| {
            Error::usage(
                format!("ladder `{}` ran no rung", l.id),
                "run the ladder again; a ladder with no session has no evidence",
            )
        })?),
        None => args.session.as_deref(),
    };
    let session = store.session(wanted)?.ok_or_else(|| {
        Error::usage(
            match wanted {
                Some(s) => format!("no session or ladder `{s}` in {}", root.display()),
                None => format!("no session recorded in {}", root.display()),
            },
            "list sessions with `cut -c1-200 .flakelab/sessions.jsonl`, or run `flakelab run` first",
        )
    })?;
    let ladder = by_ladder.or_else(|| crate::evidence::ladder_of(&ladders, &session.id));
    let (runs, load) = store.runs_of(&session.id)?;
    let version = evidence_runner_version(&session);
    let mut report = report::build(&session, &runs, load);
    if let Some(screen) = store.screen_of(&session.id)? {
        screen_cmd::apply(&mut report, &screen, &runs);
    }
    let evidence = crate::evidence::build_from(&session, &runs, report, ladder, version);
    let text = match args.format {
        cli::EvidenceFormat::Markdown => crate::evidence::markdown::render(&evidence),
        cli::EvidenceFormat::Json => crate::evidence::render_json(&evidence),
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
    Ok(EXIT_OK)
}

/// The runner version for the evidence: the one recorded at run time, else
/// the recipe's version command run now (and said so).
fn evidence_runner_version(session: &SessionRecord) -> crate::evidence::RunnerVersion {
    use crate::evidence::RunnerVersion;
    if let Some(v) = &session.runner_version {
        return RunnerVersion::Recorded(v.clone());
    }
    let Some(name) = &session.runner else {
        return RunnerVersion::Unknown("no recipe".into());
    };
    let recipes =
        crate::catalog::recipe::load(Some(&session.cwd.join(".flakelab").join("recipes")))
            .unwrap_or_default();
    match recipes.iter().find(|r| &r.name == name) {
        Some(r) if r.version.is_some() => {
            match host::runner_version(r, &session.command, &session.cwd) {
                Some(v) => RunnerVersion::ReadNow(v),
                None => RunnerVersion::Unknown(
                    "not recorded at run time, and its version command failed now".into(),
                ),
            }
        }
        _ => RunnerVersion::Unknown(format!(
            "not recorded, and the `{name}` recipe declares no version command"
        )),
    }
}

fn perturbations_cmd(args: &cli::PerturbationsArgs) -> Result<i32> {
    let dir = subject_dir(args.dir.as_deref())?;
    let catalog = Catalog::load(Some(&dir.join(".flakelab").join("perturbations")))?;
    let text = match &args.action {
        None => crate::report::catalog::list(&catalog),
        Some(cli::PerturbationsAction::Show { name }) => {
            crate::report::catalog::show(&catalog, name).ok_or_else(|| {
                Error::usage(
                    format!("no perturbation or matrix named `{name}`"),
                    "`flakelab perturbations` lists them",
                )
            })?
        }
    };
    print!("{text}");
    Ok(EXIT_OK)
}

fn probe_cmd(args: &cli::ProbeArgs) -> Result<i32> {
    match &args.what {
        cli::ProbeWhat::Env { names } => {
            for name in names {
                match std::env::var_os(name) {
                    Some(v) => println!("set {name}={}", v.to_string_lossy()),
                    None => println!("unset {name}"),
                }
            }
        }
        cli::ProbeWhat::Net => {
            let route =
                std::net::UdpSocket::bind("0.0.0.0:0").and_then(|s| s.connect("192.0.2.1:9"));
            match route {
                Ok(()) => println!("route: reachable"),
                Err(e) if e.raw_os_error() == Some(nix::libc::ENETUNREACH) => {
                    println!("route: unreachable ({e})")
                }
                Err(e) => println!("route: error ({e})"),
            }
            match demo::loopback_round_trip() {
                Ok(()) => println!("loopback: ok"),
                Err(e) => println!("loopback: failed: {e}"),
            }
        }
        cli::ProbeWhat::Affinity => {
            let cpus = perturb::isolate::allowed_cpus();
            println!(
                "cpus: {} ({})",
                cpus.len(),
                perturb::isolate::cpu_list(&cpus)
            );
        }
        cli::ProbeWhat::Rlimit { resource } => match perturb::isolate::current_rlimit(resource) {
            Some((soft, hard)) => println!("{resource} {soft} {hard}"),
            None => println!("{resource} unknown"),
        },
    }
    Ok(EXIT_OK)
}

/// The `run` arguments that replay `run` (of `session`) `times` times:
/// its command, cell, seed source, timeout, signature and report path.
fn replay_args(run: &RunRecord, session: &SessionRecord, root: &Path, times: u32) -> RunArgs {
    let baseline = run.perturbations.is_empty();
    RunArgs {
        runs: Some(times),
        perturb: if baseline {
            Vec::new()
        } else {
            vec![run.perturbations.join("+")]
        },
        matrix: Vec::new(),
        no_baseline: !baseline,
        timeout: session
            .timeout_s
            .map(|t| format!("{}ms", (t * 1000.0).round() as u64)),
        kill_grace: Some("5s".into()),
        jobs: Some(1),
        seed: Some(session.seed),
        confidence: Some(session.confidence),
        signature: session.signature.clone(),
        junit: session.junit.clone(),
        runner: Some(session.runner.clone().unwrap_or_else(|| "none".into())),
        format: Format::Table,
        confirm: None,
        design: crate::cli::Design::Fixed,
        screen: 3,
        max_runs: None,
        clear_below: 0.3,
        store: cli::StoreArgs {
            store: Some(root.to_path_buf()),
            dir: Some(run.cwd.clone()),
        },
        command: session.command.clone(),
        exact: true,
    }
}

fn replay_cmd(args: &cli::ReplayArgs) -> Result<i32> {
    let dir = subject_dir(args.store.dir.as_deref())?;
    let root = store_root(&args.store, &dir);
    let store = Store::open(&root)?;
    let (runs, _) = store.load_runs()?;
    let matching: Vec<&RunRecord> = runs
        .iter()
        .filter(|r| r.id.starts_with(&args.run))
        .collect();
    let run = match matching.as_slice() {
        [one] => *one,
        [] => {
            return Err(Error::usage(
                format!("no run `{}` in {}", args.run, root.display()),
                "copy a run id from a report (`flakelab report`) or from runs.jsonl",
            ))
        }
        many => {
            return Err(Error::usage(
                format!("`{}` matches {} runs", args.run, many.len()),
                "give more characters of the run id",
            ))
        }
    };
    if run
        .perturbations
        .iter()
        .any(|p| p.contains(repro::REDACTED))
    {
        return Err(Error::usage(
            format!(
                "run {} set a credential-like variable whose value was not recorded",
                run.id
            ),
            "re-run it with `flakelab run`, giving the variable again with -p env=NAME=VALUE",
        ));
    }
    let session = store.session(Some(&run.session))?.ok_or_else(|| {
        Error::usage(
            format!(
                "the session {} of run {} is not in the store",
                run.session, run.id
            ),
            "replay needs the session record (sessions.jsonl) of the run",
        )
    })?;
    if args.times == 0 {
        return Err(Error::usage(
            "`--times 0` replays nothing",
            "use --times 1 or more",
        ));
    }
    let mut replay = replay_args(run, &session, &root, args.times);
    if let Some(t) = &run.topology {
        eprintln!(
            "flakelab: run {} was one of several processes started together (group {}); it is replayed alone here: `flakelab ladder --from R --to R` re-runs its rung",
            run.id, t.group
        );
        if t.working_copy.is_some() && !run.cwd.exists() {
            // The rung's temporary working copy is gone: the subject's own
            // directory stands in for it.
            eprintln!(
                "flakelab: its working copy {} is gone; replaying in {}",
                run.cwd.display(),
                session.cwd.display()
            );
            replay.store.dir = Some(session.cwd.clone());
        }
    }
    replay.format = args.format;
    let code = runtime()?.block_on(run_cmd(
        replay,
        Replay {
            of: Some(run.id.clone()),
            seed: Some(run.seed),
            first_seed: None,
        },
    ))?;
    Ok(code)
}

fn recipes_cmd(args: &cli::RecipesArgs) -> Result<i32> {
    let dir = subject_dir(args.dir.as_deref())?;
    let recipes = crate::catalog::recipe::load(Some(&dir.join(".flakelab").join("recipes")))?;
    let text = match &args.action {
        None => crate::report::catalog::recipes_list(&recipes),
        Some(cli::RecipesAction::Show { name }) => {
            let r = recipes.iter().find(|r| &r.name == name).ok_or_else(|| {
                Error::usage(
                    format!("no recipe named `{name}`"),
                    "`flakelab recipes` lists them",
                )
            })?;
            crate::report::catalog::recipe_show(r)
        }
        Some(cli::RecipesAction::Detect { command }) => {
            crate::report::catalog::recipe_detect(&recipes, command, num_cpus())
        }
    };
    print!("{text}");
    Ok(EXIT_OK)
}

fn num_cpus() -> usize {
    perturb::isolate::allowed_cpus().len().max(1)
}

fn doctor_cmd() -> Result<i32> {
    let checks = crate::doctor::run(&HostFacts::detect());
    print!("{}", crate::doctor::render(&checks));
    Ok(if checks.iter().any(|c| c.needed && !c.ok) {
        crate::error::EXIT_NOT_APPLIED
    } else {
        EXIT_OK
    })
}

fn exec_cmd(args: &cli::ExecArgs) -> Result<i32> {
    let mut iso = perturb::Isolation {
        netns: args.netns,
        ..Default::default()
    };
    let mut failure = None;
    for spec in &args.rlimit {
        match crate::catalog::values::parse_rlimit(spec) {
            Ok(limit) => iso.rlimits.push(limit),
            Err(e) => failure = Some(e),
        }
    }
    if let Some(list) = &args.cpus {
        match list
            .split(',')
            .map(str::parse)
            .collect::<Result<Vec<usize>, _>>()
        {
            Ok(cpus) => iso.cpus = Some(cpus),
            Err(e) => failure = Some(format!("bad CPU list `{list}`: {e}")),
        }
    }
    let why = match failure {
        Some(why) => why,
        None => perturb::isolate::enter(&iso, &args.command),
    };
    eprintln!("{} {why}", perturb::isolate::SETUP_FAILED);
    Ok(perturb::isolate::SETUP_EXIT)
}

fn demo_cmd(args: &cli::DemoArgs) -> Result<i32> {
    let dir = tempfile::Builder::new()
        .prefix("flakelab-demo-")
        .tempdir()
        .map_err(|e| {
            Error::harness(
                format!("cannot create the demo directory: {e}"),
                "check that $TMPDIR is writable",
            )
        })?;
    demo::create_project(dir.path()).map_err(|e| {
        Error::harness(
            format!("cannot write the demo project: {e}"),
            "check that $TMPDIR is writable",
        )
    })?;
    let exe = std::env::current_exe().map_err(|e| {
        Error::harness(
            format!("cannot find flakelab's own executable: {e}"),
            "run flakelab by its path",
        )
    })?;
    eprintln!(
        "flakelab demo: the bundled example suite plants one failure per flake class beside controls that always pass;\n\
         running the `standard` matrix on it, {} runs per cell, in {}",
        args.runs,
        dir.path().display()
    );
    let run = RunArgs {
        runs: Some(args.runs),
        perturb: Vec::new(),
        matrix: vec!["standard".into()],
        no_baseline: false,
        timeout: Some("60s".into()),
        kill_grace: Some("5s".into()),
        jobs: Some(1),
        seed: args.seed,
        confidence: Some(0.95),
        signature: None,
        junit: None,
        runner: None,
        format: args.format,
        confirm: None,
        design: crate::cli::Design::Fixed,
        screen: 3,
        max_runs: None,
        clear_below: 0.3,
        store: cli::StoreArgs {
            store: None,
            dir: Some(dir.path().to_path_buf()),
        },
        command: vec![
            exe.display().to_string(),
            "__demo-suite".into(),
            "--project".into(),
            dir.path().display().to_string(),
        ],
        exact: true,
    };
    let code = runtime()?.block_on(run_cmd(run, Replay::default()))?;
    eprintln!("{}", demo::LEGEND);
    if args.keep {
        let kept = dir.keep();
        eprintln!(
            "flakelab demo: kept {} (store in .flakelab/)",
            kept.display()
        );
    }
    Ok(match code {
        EXIT_INTERRUPTED | EXIT_USAGE => code,
        _ => EXIT_OK,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pytest() -> crate::catalog::recipe::Recipe {
        crate::catalog::recipe::load(None)
            .unwrap()
            .into_iter()
            .find(|r| r.name == "pytest")
            .unwrap()
    }

    fn record(seed: u64) -> RunRecord {
        serde_json::from_value(serde_json::json!({
            "schema": "flakelab.run/1", "id": "s.00000", "session": "s", "index": 0, "cell": "c",
            "perturbations": [], "replicate": 0, "seed": seed, "started_at": "", "duration_s": 0.0,
            "outcome": "pass", "end": {"how": "exited", "code": 0}, "exit_code": 0, "signal": null,
            "signature_match": null, "reason": null, "log": null, "output_bytes": 0,
            "output_dropped": 0, "argv": [], "cwd": "/", "env": {"set": {}, "unset": []},
            "repro": "", "stragglers": 0, "warnings": []
        }))
        .unwrap()
    }

    #[test]
    fn runner_codes_and_lines_become_errors() {
        let r = pytest();
        assert!(runner_error(&r, Some(4), "ERROR: not found: x.py::nope\n")
            .unwrap()
            .contains("usage error (exit 4)"));
        assert!(runner_error(&r, Some(5), "3 deselected\n")
            .unwrap()
            .contains("collected no tests"));
        assert_eq!(runner_error(&r, Some(1), "1 failed, 2 passed\n"), None);
        assert_eq!(runner_error(&r, Some(0), "3 passed\n"), None);
    }

    #[test]
    fn a_shuffle_run_must_print_the_seed_it_was_given() {
        let r = pytest();
        let mut shuffled = Prepared::default();
        shuffled.shuffle = true;
        let mut rec = record(1234);
        assert_eq!(
            recipe_not_applied(&r, &shuffled, &mut rec, "Using --randomly-seed=1234\n"),
            None
        );
        let missing = recipe_not_applied(&r, &shuffled, &mut rec, "collected 3 items\n").unwrap();
        assert!(missing.contains("printed no seed line"), "{missing}");
        let other =
            recipe_not_applied(&r, &shuffled, &mut rec, "Using --randomly-seed=99\n").unwrap();
        assert!(other.contains("printed seed 99"), "{other}");
        // Colour codes do not hide the line.
        assert_eq!(
            recipe_not_applied(
                &r,
                &shuffled,
                &mut rec,
                "\u{1b}[1mUsing --randomly-seed=1234\u{1b}[0m\n"
            ),
            None
        );
    }

    #[test]
    fn workers_need_their_proof_and_name_a_missing_plugin() {
        let r = pytest();
        let mut workers = Prepared::default();
        workers.workers = Some(2);
        let mut rec = record(1);
        assert_eq!(
            recipe_not_applied(&r, &workers, &mut rec, "created: 2/2 workers\n"),
            None
        );
        assert_eq!(rec.workers, Some(2));
        let missing = recipe_not_applied(
            &r,
            &workers,
            &mut rec,
            "ERROR: usage: pytest [options]\npytest: error: unrecognized arguments: -n 2\n",
        )
        .unwrap();
        assert!(missing.contains("pip install pytest-xdist"), "{missing}");
        let silent = recipe_not_applied(&r, &workers, &mut rec, "5 passed\n").unwrap();
        assert!(
            silent.contains("did not report starting 2 workers"),
            "{silent}"
        );
    }
}
