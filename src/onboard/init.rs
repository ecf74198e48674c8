//! `flakelab init`: finds the project's test command (or takes the one
//! given after `--`), works out what its runner recipe can do with it, and
//! renders a commented `flakelab.toml`.
//!
//! Detection only reads the project's files; [`plan`] and [`render`] are
//! pure; [`write()`] is the one function that writes, and it refuses to
//! replace an existing file unless forced. Nothing here prints: the caller
//! prints the returned summary.

use std::path::{Path, PathBuf};

use crate::catalog::recipe::{self, Detection, Recipe};
use crate::context::config::{
    DEFAULT_CONFIDENCE, DEFAULT_JOBS, DEFAULT_KILL_GRACE, DEFAULT_RUNS, FILE_NAME,
};
use crate::error::{Error, Result};

/// The matrix a fresh `flakelab.toml` runs when no `-p` or `--matrix` is given.
pub const INITIAL_MATRIX: &str = "standard";

/// A test command found in the project's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The command.
    pub command: Vec<String>,
    /// The file that says so, relative to the project's directory.
    pub file: String,
    /// What in the file says so, e.g. `[tool.pytest.ini_options]`.
    pub why: String,
}

/// Where the command of a plan came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Given after `--`.
    Given,
    /// Detected from the project's files.
    Detected(Found),
}

/// What the lane's workers key says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkersFact {
    /// The command sets the runner's workers option to a number.
    Set {
        /// The number.
        value: usize,
        /// The option that set it, e.g. `-n`.
        option: String,
    },
    /// The command sets the option, but not to a number (`-n auto`).
    NotANumber {
        /// The value as written.
        value: String,
        /// The option.
        option: String,
    },
    /// The runner has a workers option and the command does not set it.
    NotSet {
        /// The runner's workers options, e.g. `["-n"]`.
        options: Vec<String>,
        /// The runner's own default (`1`, `cpus`, `cpus-1`, `half-cpus`).
        default: String,
    },
    /// The recipe knows no workers option for this runner.
    NoOption {
        /// The recipe's name.
        recipe: String,
    },
    /// No recipe recognises the command.
    NoRecipe,
}

/// What the JUnit key says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JunitFact {
    /// The recipe asks the runner for a report itself: no path needed.
    Injected {
        /// The recipe's name.
        recipe: String,
    },
    /// The recipe reads per-test outcomes from what the runner ships
    /// itself (`go test -json`, libtest's lines, jest's `--json`): no
    /// JUnit report needed.
    Own {
        /// The recipe's name.
        recipe: String,
        /// Where the rows come from, in words (`go test -json`).
        from: String,
    },
    /// The command holds `{junit}`: flakelab picks a path per run.
    InCommand,
    /// The command writes a report to this path; flakelab reads it there.
    Path(String),
    /// Nothing writes a JUnit report: exit codes only, for this reason.
    Absent(String),
}

/// Everything `init` decided, before rendering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The lane's command.
    pub command: Vec<String>,
    /// Where it came from.
    pub source: Source,
    /// The recipe that recognises it, if any.
    pub recipe: Option<String>,
    /// Why no recipe recognises it, when none does.
    pub no_recipe: Option<String>,
    /// The workers key.
    pub workers: WorkersFact,
    /// The JUnit key.
    pub junit: JunitFact,
    /// Other commands the project's files suggest (not used).
    pub also: Vec<Found>,
}

/// Reads `dir`'s files for test commands, most specific first: pytest,
/// `cargo test`, `go test ./...`, then jest, vitest or a `node --test`
/// script from `package.json`.
pub fn detect_project(dir: &Path) -> Vec<Found> {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    let found = |command: &[&str], file: &str, why: &str| Found {
        command: command.iter().map(|w| w.to_string()).collect(),
        file: file.to_string(),
        why: why.to_string(),
    };
    let has_section = |text: &str, prefix: &str| {
        text.lines()
            .map(str::trim)
            .any(|l| l.starts_with(prefix) && l.ends_with(']'))
    };
    let mut out = Vec::new();

    let pytest = if dir.join("pytest.ini").is_file() {
        Some(("pytest.ini", "a pytest configuration file".to_string()))
    } else if read("pyproject.toml").is_some_and(|t| has_section(&t, "[tool.pytest")) {
        Some(("pyproject.toml", "a [tool.pytest…] table".into()))
    } else if read("setup.cfg").is_some_and(|t| has_section(&t, "[tool:pytest]")) {
        Some(("setup.cfg", "a [tool:pytest] section".into()))
    } else if read("tox.ini").is_some_and(|t| has_section(&t, "[pytest]")) {
        Some(("tox.ini", "a [pytest] section".into()))
    } else {
        python_test_file(&dir.join("tests"), 3).map(|f| ("tests/", f))
    };
    if let Some((file, why)) = pytest {
        out.push(found(&["pytest"], file, &why));
    }
    if dir.join("Cargo.toml").is_file() {
        out.push(found(&["cargo", "test"], "Cargo.toml", "a Cargo manifest"));
    }
    if dir.join("go.mod").is_file() {
        out.push(found(&["go", "test", "./..."], "go.mod", "a Go module"));
    }
    if let Some(json) =
        read("package.json").and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
    {
        if let Some(f) = from_package_json(&json) {
            out.push(f);
        }
    }
    out
}

/// A `test_*.py` under `dir` (at most `depth` levels down), by its path
/// relative to the project.
fn python_test_file(dir: &Path, depth: usize) -> Option<String> {
    let mut entries: Vec<_> = std::fs::read_dir(dir).ok()?.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in &entries {
        let name = e.file_name().to_string_lossy().into_owned();
        if e.path().is_file() && name.starts_with("test_") && name.ends_with(".py") {
            return Some(format!("a test file, tests/{name}"));
        }
    }
    if depth == 0 {
        return None;
    }
    entries
        .iter()
        .filter(|e| e.path().is_dir())
        .find_map(|e| python_test_file(&e.path(), depth - 1))
}

/// jest or vitest among the dependencies, else a `test` script that runs
/// `node --test` (and nothing else).
fn from_package_json(json: &serde_json::Value) -> Option<Found> {
    let depends = |name: &str| {
        ["devDependencies", "dependencies"]
            .iter()
            .find(|table| json[**table].get(name).is_some())
            .map(|table| format!("`{name}` in {table}"))
    };
    let found = |command: Vec<String>, why: String| Found {
        command,
        file: "package.json".into(),
        why,
    };
    if let Some(why) = depends("jest") {
        return Some(found(vec!["npx".into(), "jest".into()], why));
    }
    if let Some(why) = depends("vitest") {
        return Some(found(
            vec!["npx".into(), "vitest".into(), "run".into()],
            why,
        ));
    }
    let script = json["scripts"]["test"].as_str()?;
    let words = shell_words::split(script).ok()?;
    let plain = words
        .iter()
        .all(|w| !w.contains(['&', '|', ';', '>', '<', '$', '`']));
    let program = words.first()?.rsplit('/').next()?;
    (plain && program == "node" && words.iter().any(|w| w == "--test"))
        .then(|| found(words, format!("its \"test\" script `{script}`")))
}

/// What `init` will write for `command`, given where it came from, the
/// recipes (embedded plus the project's), and other commands the files
/// suggested.
pub fn plan(command: Vec<String>, source: Source, recipes: &[Recipe], also: Vec<Found>) -> Plan {
    let (recipe, no_recipe) = match recipe::detect(recipes, &command) {
        Detection::Found { recipe, .. } => (Some(recipe), None),
        Detection::None(why) => (None, Some(why)),
    };
    let workers = match recipe {
        None => WorkersFact::NoRecipe,
        Some(r) => workers_fact(r, &command),
    };
    let junit = if command.iter().any(|w| w.contains("{junit}")) {
        JunitFact::InCommand
    } else if let Some(r) = recipe.filter(|r| r.junit.is_some()) {
        JunitFact::Injected {
            recipe: r.name.clone(),
        }
    } else if let Some((r, p)) = recipe.and_then(|r| r.per_test.as_ref().map(|p| (r, p))) {
        JunitFact::Own {
            recipe: r.name.clone(),
            from: p.format.label().to_string(),
        }
    } else if let Some(path) = junit_path_in(&command) {
        JunitFact::Path(path)
    } else {
        JunitFact::Absent(match recipe {
            Some(r) => format!(
                "the {} recipe cannot ask the runner for a JUnit report",
                r.name
            ),
            None => "no recipe recognises the command".into(),
        })
    };
    Plan {
        command,
        source,
        recipe: recipe.map(|r| r.name.clone()),
        no_recipe,
        workers,
        junit,
        also,
    }
}

/// The runner's workers options (from the recipe's `[workers]`) and what
/// the command sets them to.
fn workers_fact(recipe: &Recipe, command: &[String]) -> WorkersFact {
    let Some(w) = &recipe.workers else {
        return WorkersFact::NoOption {
            recipe: recipe.name.clone(),
        };
    };
    // `-n {workers}` gives `-n`; `--maxWorkers={workers}` gives `--maxWorkers`.
    let mut options: Vec<String> = Vec::new();
    for (i, arg) in w.set.args.iter().enumerate() {
        let option = if arg == "{workers}" {
            i.checked_sub(1).map(|j| w.set.args[j].clone())
        } else {
            arg.strip_suffix("={workers}").map(String::from)
        };
        if let Some(o) = option.filter(|o| o.starts_with('-')) {
            if !options.contains(&o) {
                options.push(o);
            }
        }
    }
    for o in &w.replaces {
        if !options.contains(o) {
            options.push(o.clone());
        }
    }
    let rest = &command[recipe::runner_words_end(recipe, command).min(command.len())..];
    for (i, word) in rest.iter().enumerate() {
        for option in &options {
            let value = if word == option {
                rest.get(i + 1).cloned()
            } else {
                word.strip_prefix(&format!("{option}=")).map(String::from)
            };
            if let Some(value) = value {
                return match value.parse::<usize>() {
                    Ok(n) if n > 0 => WorkersFact::Set {
                        value: n,
                        option: option.clone(),
                    },
                    _ => WorkersFact::NotANumber {
                        value,
                        option: option.clone(),
                    },
                };
            }
        }
    }
    WorkersFact::NotSet {
        options,
        default: w.default.clone(),
    }
}

/// A JUnit report path the command itself asks for: the `.xml` value of
/// an option whose name mentions junit (`--junitxml=r.xml`, `--junitfile r.xml`).
fn junit_path_in(command: &[String]) -> Option<String> {
    for (i, word) in command.iter().enumerate() {
        if !word.starts_with('-') || !word.to_ascii_lowercase().contains("junit") {
            continue;
        }
        let value = match word.split_once('=') {
            Some((_, v)) => Some(v.to_string()),
            None => command.get(i + 1).cloned(),
        };
        if let Some(v) = value.filter(|v| v.ends_with(".xml")) {
            return Some(v);
        }
    }
    None
}

/// A TOML string literal for `text`.
fn quoted(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

/// The `flakelab.toml` text for `plan`: every key with a one-line comment
/// saying what it does and what overrides it; keys that are not set are
/// commented out with an example value.
pub fn render(plan: &Plan) -> String {
    let mut out = String::new();
    let mut line = |text: &str| {
        out.push_str(text);
        out.push('\n');
    };
    line("# flakelab.toml: this project's settings for flakelab (written by `flakelab init`).");
    line(&format!("# {}", source_line(plan)));
    line("# Precedence: command-line flags, then FLAKELAB_* environment variables, then this");
    line("# file, then flakelab's defaults. `flakelab init --help` lists every key.");
    line("");
    line("[lane]");
    line("# The project's test command: `flakelab run` runs it when no `-- CMD` is given (a command after `--` replaces it).");
    line(&format!(
        "command = {}",
        quoted(&shell_words::join(&plan.command))
    ));
    match &plan.workers {
        WorkersFact::Set { value, option } => {
            line(&format!("# The lane's workers, as the command's {option} sets them (used by the ladder's lane rung; no flag overrides it)."));
            line(&format!("workers = {value}"));
        }
        WorkersFact::NotANumber { value, option } => {
            line(&format!("# The lane's workers (used by the ladder's lane rung): the command sets {option} {value}, not a number; write the count it means."));
            line("# workers = 4");
        }
        WorkersFact::NotSet { options, default } => {
            line(&format!(
                "# The lane's workers (used by the ladder's lane rung): the command sets no {}, so the runner's default ({default}) applies.",
                options.join(" / ")
            ));
            line("# workers = 4");
        }
        WorkersFact::NoOption { recipe } => {
            line(&format!("# The lane's workers (used by the ladder's lane rung): the {recipe} recipe knows no workers option for this runner."));
            line("# workers = 4");
        }
        WorkersFact::NoRecipe => {
            line("# The lane's workers (used by the ladder's lane rung): no runner recipe recognises the command, so none can be set.");
            line("# workers = 4");
        }
    }
    line("");
    line("[run]");
    line("# Matrices whose cells run beside the baseline when no -p or --matrix is given (FLAKELAB_MATRIX=a,b overrides it; `flakelab perturbations` lists them; default: baseline alone).");
    line(&format!("matrix = [{}]", quoted(INITIAL_MATRIX)));
    match &plan.junit {
        JunitFact::Injected { recipe } => {
            line(&format!("# JUnit report to read after each run: not needed, the {recipe} recipe asks the runner for one per run (--junit, FLAKELAB_JUNIT override it)."));
            line("# junit = \"reports/{run}.xml\"");
        }
        JunitFact::Own { recipe, from } => {
            line(&format!("# JUnit report to read after each run: not needed, the {recipe} recipe reads a row per test from the runner's own output ({from}); --junit, FLAKELAB_JUNIT override it."));
            line("# junit = \"reports/{run}.xml\"");
        }
        JunitFact::InCommand => {
            line("# JUnit report to read after each run: not needed, `{junit}` in the command gets a fresh path per run (--junit, FLAKELAB_JUNIT; never both).");
            line("# junit = \"reports/{run}.xml\"");
        }
        JunitFact::Path(path) => {
            line("# JUnit report the command writes, read after each run, relative to this directory; {run} is the run's id (--junit, FLAKELAB_JUNIT override it; with jobs > 1 it needs {run}).");
            line(&format!("junit = {}", quoted(path)));
        }
        JunitFact::Absent(why) => {
            line(&format!("# JUnit report to read after each run ({{run}} is the run's id; --junit, FLAKELAB_JUNIT override it): {why}, so runs count by exit code unless the command writes one."));
            line("# junit = \"reports/{run}.xml\"");
        }
    }
    line(&format!(
        "# Runs per cell (-n/--runs, FLAKELAB_RUNS override it; default {DEFAULT_RUNS})."
    ));
    line(&format!("# runs = {DEFAULT_RUNS}"));
    line("# Per-run timeout, e.g. \"30s\" or \"5m\" (--timeout, FLAKELAB_TIMEOUT override it; default: none).");
    line("# timeout = \"5m\"");
    line(&format!("# Confidence level for intervals and comparisons, inside (0, 1) (--confidence, FLAKELAB_CONFIDENCE override it; default {DEFAULT_CONFIDENCE})."));
    line(&format!("# confidence = {DEFAULT_CONFIDENCE}"));
    line(&format!(
        "# Runs at once (-j/--jobs, FLAKELAB_JOBS override it; default {DEFAULT_JOBS})."
    ));
    line(&format!("# jobs = {DEFAULT_JOBS}"));
    line(&format!("# Time between SIGTERM and SIGKILL when a run is stopped (--kill-grace, FLAKELAB_KILL_GRACE override it; default \"{DEFAULT_KILL_GRACE}\")."));
    line(&format!("# kill_grace = \"{DEFAULT_KILL_GRACE}\""));
    line("");
    line("[redact]");
    line("# Variable names whose values are to be redacted in records and evidence, beside the credential-like ones flakelab finds by itself (FLAKELAB_REDACT adds more, comma-separated).");
    line("# names = [\"INTERNAL_API_URL\"]");
    out
}

fn source_line(plan: &Plan) -> String {
    let runner = match &plan.recipe {
        Some(r) => format!("runner recipe `{r}`"),
        None => "no runner recipe: exit codes only".into(),
    };
    match &plan.source {
        Source::Given => format!("Command given to `flakelab init`; {runner}."),
        Source::Detected(f) => format!("Detected from {} ({}); {runner}.", f.file, f.why),
    }
}

/// What `init` prints: what it detected, from which file, and what it wrote.
pub fn summary(plan: &Plan, path: &Path) -> String {
    let mut out = String::new();
    let command = shell_words::join(&plan.command);
    match &plan.source {
        Source::Given => out.push_str(&format!("command: `{command}` (given after `--`)\n")),
        Source::Detected(f) => out.push_str(&format!(
            "detected: `{command}` from {} ({})\n",
            f.file, f.why
        )),
    }
    for f in &plan.also {
        out.push_str(&format!(
            "also found: `{}` from {} (not used; edit [lane] command to switch)\n",
            shell_words::join(&f.command),
            f.file
        ));
    }
    match (&plan.recipe, &plan.no_recipe) {
        (Some(r), _) => out.push_str(&format!("runner recipe: {r}\n")),
        (None, Some(why)) => out.push_str(&format!("runner recipe: none ({why})\n")),
        (None, None) => out.push_str("runner recipe: none\n"),
    }
    out.push_str(&format!("wrote {}:\n", path.display()));
    out.push_str(&format!("  [lane] command = {}\n", quoted(&command)));
    out.push_str(&match &plan.workers {
        WorkersFact::Set { value, option } => {
            format!("  [lane] workers = {value} (from the command's {option})\n")
        }
        _ => "  [lane] workers: commented out (the command sets no number of workers)\n".into(),
    });
    out.push_str(&format!("  [run] matrix = [{}]\n", quoted(INITIAL_MATRIX)));
    out.push_str(&match &plan.junit {
        JunitFact::Path(p) => format!("  [run] junit = {}\n", quoted(p)),
        JunitFact::Injected { recipe } => {
            format!("  [run] junit: not needed (the {recipe} recipe asks for a report per run)\n")
        }
        JunitFact::Own { recipe, from } => format!(
            "  [run] junit: not needed (the {recipe} recipe reads a row per test from {from})\n"
        ),
        JunitFact::InCommand => "  [run] junit: not needed ({junit} is in the command)\n".into(),
        JunitFact::Absent(_) => "  [run] junit: none (runs count by exit code)\n".into(),
    });
    out.push_str("  other [run] keys and [redact] names: commented out, with their defaults\n");
    out.push_str(&format!(
        "next: `flakelab run` runs the lane under the {INITIAL_MATRIX} matrix; flags and FLAKELAB_* variables override the file\n"
    ));
    out
}

/// Writes `text` to `dir/flakelab.toml`; an existing file is a usage error
/// (and stays untouched) unless `force`.
pub fn write(dir: &Path, text: &str, force: bool) -> Result<PathBuf> {
    write_at(dir.join(FILE_NAME), text, force)
}

/// Writes `text` to `path` (creating its directory); an existing file is a
/// usage error (and stays untouched) unless `force`.
fn write_at(path: PathBuf, text: &str, force: bool) -> Result<PathBuf> {
    use std::io::Write as _;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| {
            Error::usage(
                format!("cannot create {}: {e}", parent.display()),
                "check the directory's permissions, or pass -C DIR",
            )
        })?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    let mut file = options.open(&path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            Error::usage(
                format!("{} already exists", path.display()),
                "edit it by hand, or pass --force to replace it",
            )
        } else {
            Error::usage(
                format!("cannot write {}: {e}", path.display()),
                "check the directory's permissions, or pass -C DIR",
            )
        }
    })?;
    file.write_all(text.as_bytes()).map_err(|e| {
        Error::usage(
            format!("cannot write {}: {e}", path.display()),
            "check the free space and the directory's permissions",
        )
    })?;
    Ok(path)
}

/// `flakelab init` in `dir`: the command given (or detected), rendered and
/// written; returns the summary to print.
pub fn init(dir: &Path, command: &[String], force: bool) -> Result<String> {
    let path = dir.join(FILE_NAME);
    if !force && path.exists() {
        return Err(Error::usage(
            format!("{} already exists", path.display()),
            "edit it by hand, or pass --force to replace it",
        ));
    }
    let recipes = recipe::load(Some(&dir.join(".flakelab").join("recipes")))?;
    let (command, source, also) = if command.is_empty() {
        let mut found = detect_project(dir).into_iter();
        let Some(first) = found.next() else {
            return Err(Error::usage(
                format!(
                    "no test runner detected in {} (looked for pytest.ini, pyproject.toml [tool.pytest], setup.cfg [tool:pytest], tox.ini [pytest], tests/test_*.py, Cargo.toml, go.mod, package.json)",
                    dir.display()
                ),
                "name the command: `flakelab init -- YOUR TEST COMMAND`",
            ));
        };
        (
            first.command.clone(),
            Source::Detected(first),
            found.collect(),
        )
    } else {
        (command.to_vec(), Source::Given, Vec::new())
    };
    let plan = plan(command, source, &recipes, also);
    let text = render(&plan);
    // What we write must load: a bug here is ours, not the user's.
    crate::context::config::parse(&text, &path)?;
    let path = write(dir, &text, force)?;
    Ok(summary(&plan, &path))
}

mod ci;
pub use ci::{
    github_workflow, gitlab_pipeline, setup_for, setup_of, CiSetup, ACTION, GITLAB_DEFAULT_IMAGE,
    GITLAB_TZDATA, SOURCE_GIT, SOURCE_REF,
};

/// `flakelab init --ci SYSTEM` in `dir`: writes the CI file; returns the
/// summary to print, with the advice for that file.
pub fn init_ci(dir: &Path, system: crate::cli::CiSystem, force: bool) -> Result<String> {
    let github = system == crate::cli::CiSystem::Github;
    let setup = setup_of(dir)?;
    let (rel, text) = if github {
        (
            ".github/workflows/flakelab.yml",
            github_workflow(ACTION, &setup),
        )
    } else {
        (
            "flakelab.gitlab-ci.yml",
            gitlab_pipeline(SOURCE_GIT, SOURCE_REF, &setup),
        )
    };
    let path = write_at(dir.join(rel), &text, force)?;
    let mut out = format!(
        "wrote {}: one flakelab session as 4 shards, each shard's store kept as an artifact, and a merge job that reports\n",
        path.display()
    );
    if !dir.join(FILE_NAME).exists() {
        out.push_str("next: `flakelab init` writes the flakelab.toml whose `[lane] command`, `[run] matrix` and `[run] runs` every shard runs\n");
    }
    if github {
        out.push_str(&format!("flakelab comes from the action {ACTION}, which builds it from its own source until flakelab is published (then its `install: pip`)\n"));
        match setup.runner {
            Some(runner) => out.push_str(&format!("set up for {runner}: check the steps before `Run the shard` install what your tests import\n")),
            None => out.push_str("next: no test runner detected: add your toolchain's setup where the workflow's comment says, or run `flakelab init` and then `flakelab init --ci github --force`\n"),
        }
        out.push_str("the shard count is 4: change `matrix.shard` and SHARDS together\n");
    } else {
        out.push_str("next: add `include: flakelab.gitlab-ci.yml` to .gitlab-ci.yml\n");
        out.push_str(&format!("flakelab comes from the job flakelab-build, which builds it from its source (FLAKELAB_GIT {SOURCE_GIT} at FLAKELAB_REF {SOURCE_REF}) until flakelab is published (then `pip install flakelab` in the shard and merge jobs)\n"));
        match setup.runner {
            Some(runner) => out.push_str(&format!(
                "set up for {runner}: the shards run in {} and their before_script installs the runner's plugins; check it installs what your tests import\n",
                setup.image.unwrap_or(GITLAB_DEFAULT_IMAGE)
            )),
            None => out.push_str(&format!("next: no test runner detected: set the shard job's `image:` (now {GITLAB_DEFAULT_IMAGE}) to one with your toolchain and install your test dependencies where its comment says, or run `flakelab init` and then `flakelab init --ci gitlab --force`\n")),
        }
        out.push_str("the shard count is 4: change `parallel:` (and nothing else)\n");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recipes() -> Vec<Recipe> {
        recipe::load(None).unwrap()
    }

    fn words(text: &str) -> Vec<String> {
        shell_words::split(text).unwrap()
    }

    fn plan_for(command: &str) -> Plan {
        plan(words(command), Source::Given, &recipes(), Vec::new())
    }

    /// The file with every commented-out `key = value` line switched on.
    fn uncommented(text: &str) -> String {
        text.lines()
            .map(|l| match l.strip_prefix("# ") {
                Some(rest)
                    if rest.split_once(" = ").is_some_and(|(k, _)| {
                        k.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                    }) =>
                {
                    rest.to_string()
                }
                _ => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn a_written_file_round_trips_through_config_parse() {
        for command in [
            "pytest",
            "pytest -n 4 'tests dir'",
            "cargo test -- --test-threads 2",
            "go test -p 3 ./...",
            "npx jest --maxWorkers=2",
            "npx vitest run",
            "node --test",
            "sh -c 'exit 0'",
            "pytest --junitxml={junit}",
            "./ci/test --junit-report out/report.xml",
        ] {
            let plan = plan_for(command);
            let text = render(&plan);
            let config = crate::context::config::parse(&text, Path::new("flakelab.toml"))
                .unwrap_or_else(|e| panic!("{command}: {e}\n{text}"));
            let lane = config.lane.expect("a lane");
            assert_eq!(lane.argv().unwrap(), words(command), "{text}");
            assert_eq!(config.run.matrix, [INITIAL_MATRIX]);
            assert_eq!(config.run.runs, None);
            // Every commented-out key is a valid example too.
            let all = uncommented(&text);
            let config = crate::context::config::parse(&all, Path::new("flakelab.toml"))
                .unwrap_or_else(|e| panic!("{command}, uncommented: {e}\n{all}"));
            assert_eq!(config.run.runs, Some(DEFAULT_RUNS), "{all}");
            assert_eq!(config.run.jobs, Some(DEFAULT_JOBS));
            assert_eq!(config.run.kill_grace.as_deref(), Some(DEFAULT_KILL_GRACE));
            assert!(config.lane.unwrap().workers.is_some());
            assert_eq!(config.redact.names.len(), 1);
        }
    }

    #[test]
    fn every_key_has_a_comment_naming_what_overrides_it() {
        let text = render(&plan_for("pytest"));
        let lines: Vec<&str> = text.lines().collect();
        for (flag, env, key) in [
            ("-n/--runs", "FLAKELAB_RUNS", "runs"),
            ("--timeout", "FLAKELAB_TIMEOUT", "timeout"),
            ("--confidence", "FLAKELAB_CONFIDENCE", "confidence"),
            ("--matrix", "FLAKELAB_MATRIX", "matrix"),
            ("--junit", "FLAKELAB_JUNIT", "junit"),
            ("-j/--jobs", "FLAKELAB_JOBS", "jobs"),
            ("--kill-grace", "FLAKELAB_KILL_GRACE", "kill_grace"),
        ] {
            let at = lines
                .iter()
                .position(|l| l.trim_start_matches("# ").starts_with(&format!("{key} = ")))
                .unwrap_or_else(|| panic!("no {key} in\n{text}"));
            let comment = lines[at - 1];
            assert!(comment.starts_with("# "), "{key}: {comment}");
            assert!(
                comment.contains(flag) && comment.contains(env),
                "{key}: {comment}"
            );
        }
        for key in ["command = ", "# workers = ", "# names = "] {
            let at = lines.iter().position(|l| l.starts_with(key)).unwrap();
            assert!(lines[at - 1].starts_with("# "), "{key}");
        }
    }

    #[test]
    fn workers_are_read_from_the_runners_own_option() {
        let set = |c: &str| plan_for(c).workers;
        assert_eq!(
            set("pytest -n 4 tests"),
            WorkersFact::Set {
                value: 4,
                option: "-n".into()
            }
        );
        assert_eq!(
            set("npx jest --maxWorkers=3"),
            WorkersFact::Set {
                value: 3,
                option: "--maxWorkers".into()
            }
        );
        assert_eq!(
            set("go test -parallel 8 ./..."),
            WorkersFact::Set {
                value: 8,
                option: "-parallel".into()
            }
        );
        assert_eq!(
            set("cargo test -- --test-threads=2"),
            WorkersFact::Set {
                value: 2,
                option: "--test-threads".into()
            }
        );
        assert!(matches!(
            set("pytest -n auto"),
            WorkersFact::NotANumber { .. }
        ));
        assert!(
            matches!(set("pytest"), WorkersFact::NotSet { ref options, .. } if options == &["-n"])
        );
        assert_eq!(set("sh -c 'exit 0'"), WorkersFact::NoRecipe);
        let text = render(&plan_for("pytest -n 4"));
        assert!(text.contains("\nworkers = 4\n"), "{text}");
        let text = render(&plan_for("pytest"));
        assert!(text.contains("\n# workers = 4\n"), "{text}");
    }

    #[test]
    fn junit_is_written_only_when_the_recipe_cannot_inject_it() {
        assert_eq!(
            plan_for("pytest").junit,
            JunitFact::Injected {
                recipe: "pytest".into()
            }
        );
        assert_eq!(
            plan_for("pytest --junitxml={junit}").junit,
            JunitFact::InCommand
        );
        // go and cargo give a row per test from their own output: never
        // "runs count by exit code".
        for (command, recipe, from) in [
            ("cargo test", "cargo-test", "libtest's output"),
            ("go test ./...", "go", "go test -json"),
        ] {
            let plan = plan_for(command);
            assert_eq!(
                plan.junit,
                JunitFact::Own {
                    recipe: recipe.into(),
                    from: from.into()
                },
                "{command}"
            );
            let text = render(&plan);
            assert!(!text.contains("count by exit code"), "{text}");
            assert!(summary(&plan, Path::new("flakelab.toml"))
                .contains(&format!("reads a row per test from {from}")));
        }
        assert!(matches!(plan_for("./ci/test").junit, JunitFact::Absent(_)));
        assert_eq!(
            plan_for("./ci/test --junit-report out/report.xml").junit,
            JunitFact::Path("out/report.xml".into())
        );
        let text = render(&plan_for("./ci/test --junit-report out/report.xml"));
        assert!(text.contains("\njunit = \"out/report.xml\"\n"), "{text}");
        let text = render(&plan_for("pytest"));
        assert!(!text.contains("\njunit ="), "{text}");
    }

    #[test]
    fn project_files_name_the_runner() {
        type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>);
        let cases: &[Case] = &[
            (&[("pytest.ini", "[pytest]\n")], Some("pytest")),
            (
                &[(
                    "pyproject.toml",
                    "[project]\nname='x'\n[tool.pytest.ini_options]\n",
                )],
                Some("pytest"),
            ),
            (&[("pyproject.toml", "[project]\nname='x'\n")], None),
            (
                &[("setup.cfg", "[metadata]\n[tool:pytest]\n")],
                Some("pytest"),
            ),
            (
                &[("tox.ini", "[tox]\n[pytest]\naddopts=-q\n")],
                Some("pytest"),
            ),
            (&[("tox.ini", "[tox]\n")], None),
            (&[("tests/unit/test_a.py", "")], Some("pytest")),
            (&[("tests/a_test.py", "")], None),
            (&[("Cargo.toml", "[package]\n")], Some("cargo test")),
            (&[("go.mod", "module x\n")], Some("go test ./...")),
            (
                &[("package.json", r#"{"devDependencies":{"jest":"30"}}"#)],
                Some("npx jest"),
            ),
            (
                &[("package.json", r#"{"dependencies":{"vitest":"4"}}"#)],
                Some("npx vitest run"),
            ),
            (
                &[("package.json", r#"{"scripts":{"test":"node --test"}}"#)],
                Some("node --test"),
            ),
            (
                &[(
                    "package.json",
                    r#"{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}"#,
                )],
                None,
            ),
            (&[("package.json", "not json")], None),
            (&[("README.md", "")], None),
        ];
        for (files, want) in cases {
            let dir = tempfile::tempdir().unwrap();
            for (name, text) in *files {
                let path = dir.path().join(name);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, text).unwrap();
            }
            let got = detect_project(dir.path())
                .first()
                .map(|f| shell_words::join(&f.command));
            assert_eq!(got.as_deref(), *want, "{files:?}");
        }
    }

    #[test]
    fn several_runners_are_all_reported_and_the_first_is_used() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("Cargo.toml"), "").unwrap();
        std::fs::write(dir.path().join("pytest.ini"), "").unwrap();
        let out = init(dir.path(), &[], false).unwrap();
        assert!(out.contains("detected: `pytest` from pytest.ini"), "{out}");
        assert!(
            out.contains("also found: `cargo test` from Cargo.toml"),
            "{out}"
        );
    }

    #[test]
    fn init_refuses_to_overwrite_without_force() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        std::fs::write(&path, "mine").unwrap();
        let e = init(dir.path(), &words("pytest"), false).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::EXIT_USAGE);
        assert!(e.to_string().contains("--force"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "mine");
        init(dir.path(), &words("pytest"), true).unwrap();
        assert!(crate::context::config::load(dir.path())
            .unwrap()
            .unwrap()
            .lane
            .is_some());
    }

    #[test]
    fn nothing_detected_names_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let e = init(dir.path(), &[], false).unwrap_err().to_string();
        assert!(e.contains("flakelab init -- YOUR TEST COMMAND"), "{e}");
        assert!(!dir.path().join(FILE_NAME).exists());
    }
}
