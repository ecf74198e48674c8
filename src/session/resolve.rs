//! Resolving what the user asked for into a [`SessionSpec`], once: the
//! request ([`Intent`], from the shared command-line flags or built by
//! `demo` and `replay`), the layers below the flags ([`Layers`]: the
//! `FLAKELAB_*` variables and `flakelab.toml`, passed in explicitly), the
//! catalog, the recipes and this host. Every usage error surfaces here,
//! before anything runs.

use std::path::{Path, PathBuf};

use super::{JunitSource, Replay, SessionSpec, Shams, LOG_HEAD, LOG_TAIL};
use crate::catalog::recipe::{self, Detection, Recipe};
use crate::catalog::{Catalog, Cell, Kind};
use crate::context::config::{self, Origin, ProjectConfig, RunFlags, RunSettings, Setting};
use crate::error::{Error, Result};
use crate::exec::{launch::ChildLimits, Executor};
use crate::perturb::{self, HostFacts};
use crate::record::{RunRecord, SessionRecord};
use crate::redact::Redaction;
use crate::store::Store;

/// What was asked for: typed values, not yet layered or validated.
#[derive(Debug, Clone, Default)]
pub struct Intent {
    /// The command after `--` (empty: the project's lane).
    pub command: Vec<String>,
    /// The subject's directory (`-C`), else the current one.
    pub dir: Option<PathBuf>,
    /// The store (`--store`), else `.flakelab` in the subject's directory.
    pub store: Option<PathBuf>,
    /// Cell specs, one cell each.
    pub cells: Vec<String>,
    /// No baseline cell.
    pub no_baseline: bool,
    /// The session seed.
    pub seed: Option<u64>,
    /// `--signature`, each pattern in the order given.
    pub signatures: Vec<String>,
    /// `--runner`.
    pub runner: Option<String>,
    /// The settings that lower layers may supply.
    pub flags: RunFlags,
    /// Runs per cell when no layer sets it.
    pub default_runs: Option<u32>,
    /// Add a sham cell per mechanism the cells use (`run` without `--no-sham`).
    pub shams: bool,
    /// `--keep-junit`: keep harness-owned JUnit reports after reading them.
    pub keep_junit: bool,
}

impl Intent {
    /// The request of the flags `run`, `ladder` and `verify` share. `-p`
    /// gives one cell each; `matrix` are `run`'s `--matrix` names.
    pub fn from_flags(flags: &crate::cli::SessionFlags, matrix: &[String]) -> Intent {
        Intent {
            command: flags.command.clone(),
            dir: flags.store.dir.clone(),
            store: flags.store.store.clone(),
            cells: flags.perturb.clone(),
            no_baseline: flags.no_baseline,
            seed: flags.seed,
            signatures: flags.signature.clone(),
            runner: flags.runner.clone(),
            flags: RunFlags {
                runs: flags.runs,
                timeout: flags.timeout.clone(),
                confidence: flags.confidence,
                matrix: (!flags.perturb.is_empty() || !matrix.is_empty()).then(|| matrix.to_vec()),
                junit: flags.junit.clone(),
                jobs: flags.jobs,
                kill_grace: flags.kill_grace.clone(),
            },
            default_runs: None,
            shams: false,
            keep_junit: flags.keep_junit,
        }
    }
}

/// The layers below the flags.
#[derive(Debug, Clone, Default)]
pub struct Layers {
    /// Reads a `FLAKELAB_*` variable.
    pub env: Option<fn(&str) -> Option<String>>,
    /// The project's `flakelab.toml`.
    pub file: Option<ProjectConfig>,
    /// The matrices layer applies (`run` only: a ladder's or a verify's
    /// cells are its `-p` alone).
    pub matrix: bool,
}

impl Layers {
    /// The process's environment and the `flakelab.toml` of `dir`.
    pub fn of_project(dir: &Path) -> Result<Layers> {
        Ok(Layers {
            env: Some(|name| std::env::var(name).ok()),
            file: config::load(dir)?,
            matrix: true,
        })
    }

    /// No layer: every setting is the request's or the default (`demo`,
    /// `replay`, which fix their settings themselves).
    pub fn none() -> Layers {
        Layers::default()
    }

    /// Without the matrices layer.
    pub fn without_matrix(mut self) -> Layers {
        self.matrix = false;
        self
    }
}

/// The subject's directory: `dir`, else the current one, canonical.
pub fn subject_dir(dir: Option<&Path>) -> Result<PathBuf> {
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

/// The store directory: `store`, else `.flakelab` in the subject's directory.
pub fn store_root(store: Option<&Path>, dir: &Path) -> PathBuf {
    store.map_or_else(|| dir.join(crate::store::DEFAULT_ROOT), Path::to_path_buf)
}

/// Resolves `intent` over `layers` into a session, validating everything
/// (catalog, recipes, cells against this host) before anything runs.
pub fn resolve(intent: Intent, layers: &Layers, executor: &Executor) -> Result<SessionSpec> {
    let dir = subject_dir(intent.dir.as_deref())?;
    let no_env = |_: &str| None;
    let env: config::EnvLookup<'_> = match &layers.env {
        Some(f) => f,
        None => &no_env,
    };
    let mut flags = intent.flags.clone();
    if !layers.matrix && flags.matrix.is_none() {
        flags.matrix = Some(Vec::new());
    }
    let layered = config::resolve_run_with(
        &flags,
        env,
        layers.file.as_ref(),
        intent.default_runs.unwrap_or(config::DEFAULT_RUNS),
    )?;
    let command = config::resolve_command(&intent.command, layers.file.as_ref())?;
    if matches!(command.origin, Origin::File { .. }) {
        eprintln!(
            "flakelab: no command after `--`: running the lane ({}): {}",
            command.origin,
            shell_words::join(&command.value)
        );
    }
    let given = matches!(command.origin, Origin::Flag(_));
    let command = command.value;
    if let Some((i, twice)) =
        (intent.signatures.iter().enumerate()).find(|(i, s)| intent.signatures[..*i].contains(s))
    {
        return Err(Error::usage(
            format!("--signature `{twice}` is given twice (pattern {})", i + 1),
            "give each pattern once: a failure counts for the first pattern it matches, so a repeat would count nothing",
        ));
    }
    let signatures = intent
        .signatures
        .iter()
        .map(|s| {
            regex::Regex::new(s).map_err(|e| {
                Error::usage(
                    format!("invalid --signature regex `{s}`: {e}"),
                    "use Rust regex syntax; escape special characters with `\\`",
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let redaction = Redaction::new(&config::redact_names(&dir)?);
    let catalog = Catalog::load(Some(&dir.join(".flakelab").join("perturbations")))?;
    let recipes = recipe::load(Some(&dir.join(".flakelab").join("recipes")))?;
    let (recipe, runner_note) = runner(&recipes, intent.runner.as_deref(), &command)?;
    let mut junit = junit_source(&command, given, &layered, &dir)?;
    if junit.is_none() {
        junit = super::per_test::default_source(recipe.as_ref(), &command, &dir, executor);
    }
    let mut wanted = cells(&catalog, &intent, &layered.matrix, &redaction)?;
    // The values to mask wherever they appear: the credentials the subject
    // inherits from flakelab's environment and those the cells set.
    let redaction = redaction.with_own_environment().with_values(
        wanted
            .iter()
            .flat_map(|c| &c.perturbations)
            .filter_map(|k| {
                if let Kind::Env { set, .. } = k {
                    Some(set)
                } else {
                    None
                }
            })
            .flatten(),
    );
    let mut facts = HostFacts::detect();
    if let Some(r) = &recipe {
        facts.unsupported = r.unsupported.clone();
    }
    // `faketime=@dst-…` becomes the instant it means now: the record, the
    // repro line and a replay carry it.
    perturb::calendar::resolve_cells(&mut wanted, &facts.zoneinfo, jiff::Timestamp::now())?;
    let shams = if intent.shams {
        add_shams(&catalog, &mut wanted, &facts, &redaction)?
    } else {
        Shams::default()
    };
    let mut left_out = Vec::new();
    let mut cells = Vec::new();
    for c in wanted {
        let mut p = perturb::prepare(&c, &facts, recipe.as_ref(), &redaction)?;
        let by_hand = intent.cells.contains(&c.name);
        // A matrix's orders cell on a runner that only shuffles by seed
        // would repeat the shuffle cell: left out, and said so.
        if let (Some(why), false) = (&p.orders_fallback, by_hand) {
            left_out.push((c.name.clone(), why.clone()));
            continue;
        }
        let Some(missing) = p.missing.take() else {
            cells.push((c, p));
            continue;
        };
        let needs_recipe = c.perturbations.iter().any(perturb::kind::needs_recipe);
        if by_hand {
            // Asked for by hand: an error before anything runs.
            return Err(Error::usage(
                format!("cell `{}`: {}", c.name, missing.message),
                missing.hint,
            ));
        }
        if needs_recipe {
            // A matrix cell this runner cannot take: left out, and said so.
            left_out.push((c.name.clone(), missing.message));
            continue;
        }
        // From a matrix: the cell is reported not applied, the rest run.
        p.not_applicable = Some(missing.joined());
        cells.push((c, p));
    }
    let store = Store::open(&store_root(intent.store.as_deref(), &dir))?;
    let keep_junit = intent.keep_junit
        || layers
            .file
            .as_ref()
            .and_then(|f| f.run.keep_junit)
            .unwrap_or(false);
    Ok(SessionSpec {
        keep_junit,
        command,
        dir,
        store,
        cells,
        runs: layered.runs.value,
        jobs: layered.jobs.value,
        seed: intent
            .seed
            .unwrap_or_else(|| u64::from(rand::random::<u32>())),
        confidence: layered.confidence.value,
        signatures,
        limits: ChildLimits {
            timeout: layered.timeout.value,
            grace: layered.kill_grace.value,
            log_head: LOG_HEAD,
            log_tail: LOG_TAIL,
        },
        junit,
        recipe,
        runner_note,
        left_out,
        facts,
        redaction,
        copies: 1,
        copy_dirs: Vec::new(),
        rung: None,
        cell_dirs: Vec::new(),
        cell_commands: std::collections::BTreeMap::new(),
        cell_orders: std::collections::BTreeMap::new(),
        part_of: None,
        replay: Replay::default(),
        sharding: None,
        named: None,
        known: None,
        design_chosen: None,
        scan_prove: None,
        executor: executor.clone(),
        shams,
        quiet: false,
        recipes,
    })
}

/// The session a stored run belongs to, rebuilt from its record so that
/// the run can be replayed exactly: its command, cell, seed, timeout,
/// signature, report path and runner, with no layer in between.
pub fn recorded(
    session: &SessionRecord,
    run: &RunRecord,
    store: &Path,
    executor: &Executor,
) -> Result<SessionSpec> {
    let baseline = run.perturbations.is_empty();
    let intent = Intent {
        command: session.command.clone(),
        dir: Some(run.cwd.clone()),
        store: Some(store.to_path_buf()),
        cells: if baseline {
            Vec::new()
        } else {
            vec![run.perturbations.join("+")]
        },
        no_baseline: !baseline,
        seed: Some(session.seed),
        signatures: session.patterns().into_iter().map(str::to_string).collect(),
        runner: Some(session.runner.clone().unwrap_or_else(|| "none".into())),
        flags: RunFlags {
            runs: Some(1),
            timeout: session
                .timeout_s
                .map(|t| format!("{}ms", (t * 1000.0).round() as u64)),
            confidence: Some(session.confidence),
            matrix: Some(Vec::new()),
            junit: session.junit.clone(),
            jobs: Some(1),
            kill_grace: None,
        },
        default_runs: None,
        shams: false,
        keep_junit: false,
    };
    resolve(intent, &Layers::none(), executor)
}

/// The recipe for the command: `--runner NAME` (or `none`), else detection.
pub fn runner(
    recipes: &[Recipe],
    runner: Option<&str>,
    command: &[String],
) -> Result<(Option<Recipe>, Option<String>)> {
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
        None => match recipe::detect(recipes, command) {
            Detection::Found { recipe, .. } => Ok((Some(recipe.clone()), None)),
            Detection::None(why) => Ok((None, Some(why))),
        },
    }
}

/// `command_given`: the command came after `--`, so its `{junit}` beats a
/// JUnit path from a variable or flakelab.toml. A path from flakelab.toml
/// must stay inside the project `dir` (a flag or variable may name any).
fn junit_source(
    command: &[String],
    command_given: bool,
    layered: &RunSettings,
    dir: &std::path::Path,
) -> Result<Option<JunitSource>> {
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
            if let Origin::File { .. } = from {
                super::report_path::inside_project(dir, path).map_err(|why| {
                    Error::usage(
                        format!("{from}: {why}"),
                        "a path in flakelab.toml must stay inside the project; to have the report written elsewhere, name it with --junit PATH",
                    )
                })?;
            }
            Ok(Some(JunitSource::Path(path.clone())))
        }
    }
}

/// Adds one sham cell per mechanism the cells use (after them, in the
/// order the mechanisms first appear) and links each cell to its sham. A
/// cell that is itself its mechanism's null parameter gets no sham.
fn add_shams(
    catalog: &Catalog,
    cells: &mut Vec<Cell>,
    host: &HostFacts,
    redaction: &Redaction,
) -> Result<Shams> {
    let mut shams = Shams::default();
    let users: Vec<Cell> = cells
        .iter()
        .filter(|c| !c.perturbations.is_empty())
        .cloned()
        .collect();
    for cell in &users {
        let Some(sham) = cell
            .perturbations
            .iter()
            .find_map(|k| perturb::sham::of(k, host))
        else {
            continue;
        };
        let sham_cell = catalog
            .cell(&sham.spec)
            .map_err(|m| {
                Error::harness(
                    format!("the sham `{}` is not a valid cell: {m}", sham.spec),
                    "report this as a bug",
                )
            })?
            .redacted(redaction);
        if sham_cell.key() == cell.key() {
            shams
                .of
                .insert(cell.name.clone(), sham.mechanism.to_string());
            continue;
        }
        let name = match cells.iter().find(|c| c.key() == sham_cell.key()) {
            Some(existing) => existing.name.clone(),
            None => {
                cells.push(sham_cell.clone());
                sham_cell.name.clone()
            }
        };
        shams.of.insert(name.clone(), sham.mechanism.to_string());
        shams.by_cell.insert(cell.name.clone(), name);
    }
    Ok(shams)
}

fn cells(
    catalog: &Catalog,
    intent: &Intent,
    matrix: &Setting<Vec<String>>,
    redaction: &Redaction,
) -> Result<Vec<Cell>> {
    let mut specs: Vec<String> = intent.cells.clone();
    for name in &matrix.value {
        let m = catalog.matrix(name).ok_or_else(|| {
            let names: Vec<&str> = catalog.matrices.iter().map(|m| m.name.as_str()).collect();
            Error::usage(
                match &matrix.origin {
                    Origin::Flag(_) => format!("unknown matrix `{name}`"),
                    from => format!("unknown matrix `{name}` (from {from})"),
                },
                format!("declared matrices: {}", names.join(", ")),
            )
        })?;
        specs.extend(m.cells.iter().cloned());
    }
    let mut cells = Vec::new();
    if !intent.no_baseline {
        cells.push(Cell::baseline());
    }
    for spec in &specs {
        let cell = catalog
            .cell(spec)
            .map_err(|message| {
                Error::usage(
                    format!("bad perturbation spec `-p {spec}`: {message}"),
                    "`flakelab perturbations` lists declared names; `flakelab run --help` lists the kinds",
                )
            })?
            .redacted(redaction);
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
