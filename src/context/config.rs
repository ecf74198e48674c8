//! The project's `flakelab.toml`: its check lane (ladder rungs 4 and 5) and
//! its defaults for `run`. Loading is strict: an unknown key or a bad value
//! fails with the file and the key named.
//!
//! Precedence, resolved here by the pure [`resolve_run`] and
//! [`resolve_command`]: command-line flags, then `FLAKELAB_*` environment
//! variables, then this file, then the embedded defaults. Reading the file
//! is [`load`]; reading the environment is the caller's (it passes a lookup
//! function), so every layer is unit-tested without touching the process.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::error::{Error, Result};

/// The file name looked for in the subject's directory.
pub const FILE_NAME: &str = "flakelab.toml";

/// A loaded `flakelab.toml`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectConfig {
    /// The project's own check lane.
    #[serde(default)]
    pub lane: Option<Lane>,
    /// Defaults for `flakelab run` (and `ladder`).
    #[serde(default)]
    pub run: RunDefaults,
    /// Extra variable names to redact in records and evidence.
    #[serde(default)]
    pub redact: Redact,
    /// The file it came from (filled in on load).
    #[serde(skip)]
    pub source: PathBuf,
}

/// The command CI runs, at its configured workers.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lane {
    /// The lane's command: an array of words, or one string split like a shell.
    pub command: Words,
    /// The lane's workers, set through the runner's recipe when given.
    #[serde(default)]
    pub workers: Option<usize>,
}

/// A command as an array of words or as one shell-like string.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Words {
    /// `["pytest", "-n", "4"]`
    List(Vec<String>),
    /// `"pytest -n 4"`
    Line(String),
}

/// Defaults for `run` that a flag or an environment variable overrides.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunDefaults {
    /// Runs per cell (`-n`).
    pub runs: Option<u32>,
    /// Per-run timeout (`--timeout`), e.g. `"5m"`.
    pub timeout: Option<String>,
    /// Confidence level (`--confidence`).
    pub confidence: Option<f64>,
    /// Matrices run when no `-p` or `--matrix` is given.
    #[serde(default)]
    pub matrix: Vec<String>,
    /// JUnit report path (`--junit`).
    pub junit: Option<String>,
    /// Runs at once (`-j`).
    pub jobs: Option<usize>,
    /// Time between SIGTERM and SIGKILL (`--kill-grace`).
    pub kill_grace: Option<String>,
    /// Keep harness-owned JUnit reports after reading them (`--keep-junit`).
    pub keep_junit: Option<bool>,
}

/// Redaction settings.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Redact {
    /// Variable names (or name fragments) whose values are always redacted.
    #[serde(default)]
    pub names: Vec<String>,
}

impl Words {
    /// The words, splitting a string like a POSIX shell would.
    pub fn words(&self) -> std::result::Result<Vec<String>, String> {
        match self {
            Words::List(w) => Ok(w.clone()),
            Words::Line(line) => shell_words::split(line).map_err(|e| e.to_string()),
        }
    }
}

impl Lane {
    /// The lane's command, checked to be non-empty.
    pub fn argv(&self) -> std::result::Result<Vec<String>, String> {
        let words = self.command.words()?;
        if words.is_empty() {
            return Err("[lane] command is empty".into());
        }
        Ok(words)
    }
}

/// Parses a `flakelab.toml` text; `source` names it in errors.
pub fn parse(text: &str, source: &Path) -> Result<ProjectConfig> {
    let bad = |message: String| {
        Error::usage(
            format!("{}: {message}", source.display()),
            "fix the file (`flakelab init --help` shows every key), or move it aside",
        )
    };
    let mut config: ProjectConfig = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
    if let Some(lane) = &config.lane {
        lane.argv()
            .map_err(|e| bad(format!("[lane] command: {e}")))?;
        if lane.workers == Some(0) {
            return Err(bad("[lane] workers = 0 would run nothing".into()));
        }
    }
    if let Some(c) = config.run.confidence {
        if !(c > 0.0 && c < 1.0) {
            return Err(bad(format!("[run] confidence {c} is outside (0, 1)")));
        }
    }
    if config.run.runs == Some(0) {
        return Err(bad("[run] runs = 0 measures nothing".into()));
    }
    if config.run.jobs == Some(0) {
        return Err(bad("[run] jobs = 0 would run nothing".into()));
    }
    type Parse = fn(&str) -> std::result::Result<Duration, String>;
    let parsers: [(&str, &Option<String>, Parse); 2] = [
        ("timeout", &config.run.timeout, parse_timeout),
        ("kill_grace", &config.run.kill_grace, duration),
    ];
    for (key, value, parse) in parsers {
        if let Some(text) = value {
            parse(text).map_err(|e| bad(format!("[run] {key} = \"{text}\": {e}")))?;
        }
    }
    if config.run.junit.as_deref() == Some("") {
        return Err(bad("[run] junit is empty".into()));
    }
    if let Some(name) = config.run.matrix.iter().find(|m| m.trim().is_empty()) {
        return Err(bad(format!("[run] matrix holds an empty name `{name}`")));
    }
    config.source = source.to_path_buf();
    Ok(config)
}

/// Loads `dir/flakelab.toml`; a missing file is `None`.
pub fn load(dir: &Path) -> Result<Option<ProjectConfig>> {
    let path = dir.join(FILE_NAME);
    match std::fs::read_to_string(&path) {
        Ok(text) => parse(&text, &path).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::usage(
            format!("cannot read {}: {e}", path.display()),
            "check the file's permissions",
        )),
    }
}

/// Runs per cell when no layer sets them.
pub const DEFAULT_RUNS: u32 = 20;
/// Runs at once when no layer sets them.
pub const DEFAULT_JOBS: usize = 1;
/// Confidence level when no layer sets it.
pub const DEFAULT_CONFIDENCE: f64 = 0.95;
/// Time between SIGTERM and SIGKILL when no layer sets it.
pub const DEFAULT_KILL_GRACE: &str = "5s";

/// The environment variables `flakelab run` reads, in the order of the
/// `[run]` keys they stand for.
pub const ENV_VARS: &[&str] = &[
    RUNS.env,
    TIMEOUT.env,
    CONFIDENCE.env,
    MATRIX.env,
    JUNIT.env,
    JOBS.env,
    KILL_GRACE.env,
];

/// One run setting's names in each layer.
struct Key {
    flag: &'static str,
    env: &'static str,
    file: &'static str,
    example: &'static str,
}

const RUNS: Key = Key {
    flag: "--runs",
    env: "FLAKELAB_RUNS",
    file: "runs",
    example: "20",
};
const TIMEOUT: Key = Key {
    flag: "--timeout",
    env: "FLAKELAB_TIMEOUT",
    file: "timeout",
    example: "5m",
};
const CONFIDENCE: Key = Key {
    flag: "--confidence",
    env: "FLAKELAB_CONFIDENCE",
    file: "confidence",
    example: "0.95",
};
const MATRIX: Key = Key {
    flag: "--matrix",
    env: "FLAKELAB_MATRIX",
    file: "matrix",
    example: "standard",
};
const JUNIT: Key = Key {
    flag: "--junit",
    env: "FLAKELAB_JUNIT",
    file: "junit",
    example: "reports/{run}.xml",
};
const JOBS: Key = Key {
    flag: "--jobs",
    env: "FLAKELAB_JOBS",
    file: "jobs",
    example: "2",
};
const KILL_GRACE: Key = Key {
    flag: "--kill-grace",
    env: "FLAKELAB_KILL_GRACE",
    file: "kill_grace",
    example: "5s",
};

/// Where a resolved setting came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A command-line flag (or the command after `--`), e.g. `--runs`.
    Flag(&'static str),
    /// An environment variable, e.g. `FLAKELAB_RUNS`.
    Env(&'static str),
    /// A key of `flakelab.toml`, e.g. `[run] runs`.
    File {
        /// The file.
        path: PathBuf,
        /// The key, with its table: `[run] runs`, `[lane] command`.
        key: String,
    },
    /// flakelab's embedded default.
    Default,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Flag(flag) => write!(f, "{flag}"),
            Origin::Env(var) => write!(f, "{var}"),
            Origin::File { path, key } => write!(f, "{key} in {}", path.display()),
            Origin::Default => write!(f, "the default"),
        }
    }
}

/// A resolved value and the layer that gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting<T> {
    /// The value.
    pub value: T,
    /// Where it came from.
    pub origin: Origin,
}

/// The run settings as typed on the command line: `None` (or an empty
/// list) is "not given", so a lower layer may supply it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunFlags {
    /// `-n/--runs`.
    pub runs: Option<u32>,
    /// `--timeout`.
    pub timeout: Option<String>,
    /// `--confidence`.
    pub confidence: Option<f64>,
    /// `--matrix` names, `Some` as soon as any `-p` or `--matrix` is given
    /// (cells given by hand replace the configured matrices).
    pub matrix: Option<Vec<String>>,
    /// `--junit`.
    pub junit: Option<String>,
    /// `-j/--jobs`.
    pub jobs: Option<usize>,
    /// `--kill-grace`.
    pub kill_grace: Option<String>,
}

/// The run settings after every layer: flags, then environment, then
/// `flakelab.toml`, then the defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSettings {
    /// Runs per cell (at least 1).
    pub runs: Setting<u32>,
    /// Per-run timeout, if any.
    pub timeout: Setting<Option<Duration>>,
    /// Confidence level, in (0, 1).
    pub confidence: Setting<f64>,
    /// Matrices whose cells are added (empty: only the `-p` cells, or the
    /// baseline alone). Names are checked against the catalog by the caller.
    pub matrix: Setting<Vec<String>>,
    /// JUnit report path (relative to the subject's directory), if any.
    pub junit: Setting<Option<String>>,
    /// Runs at once (at least 1).
    pub jobs: Setting<usize>,
    /// Time between SIGTERM and SIGKILL.
    pub kill_grace: Setting<Duration>,
}

/// A lookup of environment variables: `|name| std::env::var(name).ok()` in
/// the binary, a table in tests.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The value of the highest layer that sets `key`, still as given: the
/// flag's typed value, the variable's text (parsed with `from_env`), or the
/// file's typed value.
fn pick<T>(
    key: &Key,
    flag: Option<T>,
    env: EnvLookup<'_>,
    file: Option<&ProjectConfig>,
    file_value: Option<T>,
    from_env: impl Fn(&str) -> std::result::Result<T, String>,
) -> Result<Option<Setting<T>>> {
    if let Some(value) = flag {
        return Ok(Some(Setting {
            value,
            origin: Origin::Flag(key.flag),
        }));
    }
    if let Some(text) = env(key.env).filter(|t| !t.trim().is_empty()) {
        let value = from_env(text.trim()).map_err(|problem| {
            Error::usage(
                format!("invalid {} `{text}`: {problem}", key.env),
                format!("set {} to e.g. `{}`, or unset it", key.env, key.example),
            )
        })?;
        return Ok(Some(Setting {
            value,
            origin: Origin::Env(key.env),
        }));
    }
    if let (Some(config), Some(value)) = (file, file_value) {
        return Ok(Some(Setting {
            value,
            origin: Origin::File {
                path: config.source.clone(),
                key: format!("[run] {}", key.file),
            },
        }));
    }
    Ok(None)
}

/// Checks and converts a chosen value; the error names the layer it came
/// from.
fn convert<T, U>(
    key: &Key,
    setting: Setting<T>,
    shown: impl Fn(&T) -> String,
    f: impl Fn(&T) -> std::result::Result<U, String>,
) -> Result<Setting<U>> {
    match f(&setting.value) {
        Ok(value) => Ok(Setting {
            value,
            origin: setting.origin,
        }),
        Err(problem) => {
            let hint = match &setting.origin {
                Origin::Flag(flag) => format!("use e.g. `{flag} {}`", key.example),
                Origin::Env(var) => format!("set {var} to e.g. `{}`, or unset it", key.example),
                Origin::File { path, key: k } => format!("fix {k} in {}", path.display()),
                Origin::Default => "report this as a bug".into(),
            };
            Err(Error::usage(
                format!(
                    "invalid {} `{}`: {problem}",
                    setting.origin,
                    shown(&setting.value)
                ),
                hint,
            ))
        }
    }
}

fn defaulted<T>(setting: Option<Setting<T>>, value: T) -> Setting<T> {
    setting.unwrap_or(Setting {
        value,
        origin: Origin::Default,
    })
}

fn optional<T>(setting: Option<Setting<T>>) -> Setting<Option<T>> {
    match setting {
        Some(s) => Setting {
            value: Some(s.value),
            origin: s.origin,
        },
        None => defaulted(None, None),
    }
}

fn parse_number<T: std::str::FromStr>(text: &str) -> std::result::Result<T, String>
where
    T::Err: std::fmt::Display,
{
    text.parse::<T>().map_err(|e| format!("not a number ({e})"))
}

/// The forms a duration takes, for messages.
pub const DURATION_FORMS: &str =
    "write a number and a unit, such as `30s`, `5m`, `90s` or `1h 30m` (units: ms, s, m, h, d)";

/// Parses a duration (`30s`, `5m`, `1h 30m`); the error says what was
/// wrong in words and the forms accepted, never a byte offset.
pub fn parse_duration(text: &str) -> std::result::Result<Duration, String> {
    use humantime::DurationError as E;
    humantime::parse_duration(text).map_err(|e| {
        let what = match e {
            E::UnknownUnit { unit, value, .. } if unit.is_empty() => {
                format!("the duration `{value}` has no unit")
            }
            E::UnknownUnit { unit, .. } => format!("`{unit}` is not a unit of time"),
            E::NumberOverflow => "the number is too large".to_string(),
            E::Empty => "it is empty".to_string(),
            E::InvalidCharacter(_) | E::NumberExpected(_) => "it is not a duration".to_string(),
        };
        format!("{what}; {DURATION_FORMS}")
    })
}

/// A per-run timeout: a duration, never zero (a zero timeout would stop
/// every run as it starts and measure nothing).
pub fn parse_timeout(text: &str) -> std::result::Result<Duration, String> {
    let d = parse_duration(text)?;
    if d > MAX_TIMEOUT {
        return Err(format!(
            "a per-run timeout above {}h is not a test run's; leave the timeout out for no limit",
            MAX_TIMEOUT.as_secs() / 3600
        ));
    }
    if d.is_zero() {
        return Err(
            "a timeout of zero would stop every run as it starts; leave the timeout out for no limit, or give one the slowest passing run stays under, such as `10m`"
                .to_string(),
        );
    }
    Ok(d)
}

/// The grace between SIGTERM and SIGKILL, at most [`MAX_KILL_GRACE`].
fn duration(text: &str) -> std::result::Result<Duration, String> {
    let d = parse_duration(text)?;
    if d > MAX_KILL_GRACE {
        return Err(format!(
            "a grace above {} would leave a run that ignores SIGTERM running that long",
            humantime::format_duration(MAX_KILL_GRACE)
        ));
    }
    Ok(d)
}

/// The most runs per cell a session plans (the plan is walked whole for
/// its counts: this keeps that walk well under a second).
pub const MAX_RUNS: u32 = 100_000;
/// The most runs at once: the warden keeps one slot per run in flight and
/// has 4,096 (`exec::roll_map`'s `SLOTS_MAX`: keep this at most that).
pub const MAX_JOBS: usize = 4096;
/// The longest per-run timeout.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 3600);
/// The longest grace between SIGTERM and SIGKILL.
pub const MAX_KILL_GRACE: Duration = Duration::from_secs(3600);

fn text(t: &str) -> std::result::Result<String, String> {
    Ok(t.to_string())
}

/// Resolves `flakelab run`'s settings, highest layer first: `flags`, then
/// the `FLAKELAB_*` variables read through `env`, then `file` (the project's
/// `flakelab.toml`, if any), then the embedded defaults. Pure: a bad value is
/// a usage error naming the flag, the variable or the file and key it came
/// from. An empty variable counts as unset; only the layer that wins is
/// read, so a flag hides a bad variable.
pub fn resolve_run(
    flags: &RunFlags,
    env: EnvLookup<'_>,
    file: Option<&ProjectConfig>,
) -> Result<RunSettings> {
    resolve_run_with(flags, env, file, DEFAULT_RUNS)
}

/// [`resolve_run`] with another default for the runs per cell (the ladder
/// and verify run 10 per rung or revision unless a layer says otherwise).
pub fn resolve_run_with(
    flags: &RunFlags,
    env: EnvLookup<'_>,
    file: Option<&ProjectConfig>,
    default_runs: u32,
) -> Result<RunSettings> {
    let run = file.map(|c| &c.run);

    let runs = pick(
        &RUNS,
        flags.runs,
        env,
        file,
        run.and_then(|r| r.runs),
        parse_number,
    )?;
    let runs = convert(&RUNS, defaulted(runs, default_runs), u32::to_string, |n| {
        match *n {
            0 => Err("0 runs per cell measure nothing".into()),
            n if n > MAX_RUNS => Err(format!(
                "{n} runs per cell is more than flakelab plans ({MAX_RUNS}); 299 runs see a 1% rate at 95%"
            )),
            n => Ok(n),
        }
    })?;

    let jobs = pick(
        &JOBS,
        flags.jobs,
        env,
        file,
        run.and_then(|r| r.jobs),
        parse_number,
    )?;
    let jobs = convert(
        &JOBS,
        defaulted(jobs, DEFAULT_JOBS),
        usize::to_string,
        |n| {
            match *n {
            0 => Err("0 runs at once would run nothing".into()),
            n if n > MAX_JOBS => Err(format!(
                "{n} runs at once is more than flakelab keeps in flight ({MAX_JOBS}): each is a process group its warden must be able to sweep"
            )),
            n => Ok(n),
        }
        },
    )?;

    let confidence = pick(
        &CONFIDENCE,
        flags.confidence,
        env,
        file,
        run.and_then(|r| r.confidence),
        parse_number,
    )?;
    let confidence = convert(
        &CONFIDENCE,
        defaulted(confidence, DEFAULT_CONFIDENCE),
        f64::to_string,
        |c| {
            if *c > 0.0 && *c < 1.0 {
                Ok(*c)
            } else {
                Err("a confidence level is inside (0, 1)".into())
            }
        },
    )?;

    let timeout = pick(
        &TIMEOUT,
        flags.timeout.clone(),
        env,
        file,
        run.and_then(|r| r.timeout.clone()),
        text,
    )?
    .map(|s| convert(&TIMEOUT, s, String::clone, |t| parse_timeout(t)))
    .transpose()?;

    let kill_grace = pick(
        &KILL_GRACE,
        flags.kill_grace.clone(),
        env,
        file,
        run.and_then(|r| r.kill_grace.clone()),
        text,
    )?;
    let kill_grace = convert(
        &KILL_GRACE,
        defaulted(kill_grace, DEFAULT_KILL_GRACE.to_string()),
        String::clone,
        |t| duration(t),
    )?;

    let matrix = pick(
        &MATRIX,
        flags.matrix.clone(),
        env,
        file,
        run.map(|r| r.matrix.clone()).filter(|m| !m.is_empty()),
        |text| {
            let names: Vec<String> = text
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(String::from)
                .collect();
            if names.is_empty() {
                Err("no matrix name in it; separate names with commas".into())
            } else {
                Ok(names)
            }
        },
    )?;

    let junit = pick(
        &JUNIT,
        flags.junit.clone(),
        env,
        file,
        run.and_then(|r| r.junit.clone()),
        text,
    )?;

    Ok(RunSettings {
        runs,
        timeout: optional(timeout),
        confidence,
        matrix: defaulted(matrix, Vec::new()),
        junit: optional(junit),
        jobs,
        kill_grace,
    })
}

/// The command to run: the one given after `--`, else the `[lane] command`
/// of `file`. Neither is a usage error that says how to give one.
pub fn resolve_command(
    command: &[String],
    file: Option<&ProjectConfig>,
) -> Result<Setting<Vec<String>>> {
    if !command.is_empty() {
        return Ok(Setting {
            value: command.to_vec(),
            origin: Origin::Flag("-- CMD"),
        });
    }
    match file.and_then(|c| c.lane.as_ref().map(|lane| (c, lane))) {
        Some((config, lane)) => {
            let words = lane.argv().map_err(|e| {
                Error::usage(
                    format!("{}: [lane] command: {e}", config.source.display()),
                    "fix the file (`flakelab init --help` shows every key)",
                )
            })?;
            Ok(Setting {
                value: words,
                origin: Origin::File {
                    path: config.source.clone(),
                    key: "[lane] command".into(),
                },
            })
        }
        None => Err(Error::usage(
            match file {
                Some(c) => format!(
                    "no test command: none after `--`, and {} has no [lane] command",
                    c.source.display()
                ),
                None => format!("no test command: none after `--`, and no {FILE_NAME} here"),
            },
            "give it after `--` (`flakelab run -- pytest`), or record it once with `flakelab init -- YOUR TEST COMMAND`",
        )),
    }
}

/// The environment variable with extra names to redact, comma-separated.
pub const REDACT_ENV: &str = "FLAKELAB_REDACT";

/// The extra names to redact for a project in `dir`: `[redact] names` from
/// its `flakelab.toml`, then the comma-separated `FLAKELAB_REDACT`. Names
/// add up; none replaces the built-in credential words.
pub fn redact_names(dir: &Path) -> Result<Vec<String>> {
    let mut names = load(dir)?.map(|c| c.redact.names).unwrap_or_default();
    if let Ok(list) = std::env::var(REDACT_ENV) {
        names.extend(split_names(&list));
    }
    Ok(names)
}

/// `A, B,,c` → `["A", "B", "c"]`.
fn split_names(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<ProjectConfig> {
        parse(text, Path::new("flakelab.toml"))
    }

    #[test]
    fn a_lane_as_a_string_is_split_like_a_shell() {
        let c = parsed("[lane]\ncommand = \"pytest -n 4 'tests dir'\"\nworkers = 4\n").unwrap();
        let lane = c.lane.unwrap();
        assert_eq!(lane.argv().unwrap(), ["pytest", "-n", "4", "tests dir"]);
        assert_eq!(lane.workers, Some(4));
    }

    #[test]
    fn a_lane_as_an_array_is_taken_as_is() {
        let c = parsed("[lane]\ncommand = [\"go\", \"test\", \"./...\"]\n").unwrap();
        assert_eq!(c.lane.unwrap().argv().unwrap(), ["go", "test", "./..."]);
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_file_and_the_key() {
        let e = parsed("[run]\nrunz = 3\n").unwrap_err().to_string();
        assert!(e.contains("flakelab.toml") && e.contains("runz"), "{e}");
        let e = parsed("[run]\nconfidence = 1.5\n").unwrap_err().to_string();
        assert!(e.contains("confidence 1.5"), "{e}");
        let e = parsed("[lane]\ncommand = \"\"\n").unwrap_err().to_string();
        assert!(e.contains("[lane] command"), "{e}");
        let e = parsed("[lane]\ncommand = \"pytest 'open\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("[lane] command"), "{e}");
    }

    #[test]
    fn redact_names_come_from_the_file_and_split_from_the_variable() {
        let c = parsed("[redact]\nnames = [\"DEPLOY_CODE\"]\n").unwrap();
        assert_eq!(c.redact.names, ["DEPLOY_CODE"]);
        assert_eq!(split_names(" A, B,,c ,"), ["A", "B", "c"]);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(FILE_NAME),
            "[redact]\nnames = [\"X_CODE\"]\n",
        )
        .unwrap();
        assert!(redact_names(dir.path())
            .unwrap()
            .contains(&"X_CODE".to_string()));
    }

    #[test]
    fn an_empty_file_is_all_defaults() {
        let c = parsed("").unwrap();
        assert!(c.lane.is_none());
        assert_eq!(c.run, RunDefaults::default());
    }

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn file() -> ProjectConfig {
        parsed(
            "[lane]\ncommand = \"pytest -n 2\"\n[run]\nruns = 3\ntimeout = \"2m\"\nconfidence = 0.9\n\
             matrix = [\"standard\"]\njunit = \"r/{run}.xml\"\njobs = 2\nkill_grace = \"1s\"\n",
        )
        .unwrap()
    }

    fn from_file(key: &str) -> Origin {
        Origin::File {
            path: PathBuf::from("flakelab.toml"),
            key: format!("[run] {key}"),
        }
    }

    #[test]
    fn defaults_apply_when_no_layer_sets_anything() {
        let r = resolve_run(&RunFlags::default(), &no_env, None).unwrap();
        assert_eq!(r.runs.value, DEFAULT_RUNS);
        assert_eq!(r.jobs.value, DEFAULT_JOBS);
        assert_eq!(r.confidence.value, DEFAULT_CONFIDENCE);
        assert_eq!(r.kill_grace.value, Duration::from_secs(5));
        assert_eq!(r.timeout.value, None);
        assert!(r.matrix.value.is_empty());
        assert_eq!(r.junit.value, None);
        for origin in [
            &r.runs.origin,
            &r.timeout.origin,
            &r.matrix.origin,
            &r.kill_grace.origin,
        ] {
            assert_eq!(*origin, Origin::Default);
        }
        // A file without [run] keys changes nothing.
        let empty = parsed("").unwrap();
        assert_eq!(
            resolve_run(&RunFlags::default(), &no_env, Some(&empty)).unwrap(),
            r
        );
    }

    #[test]
    fn the_file_beats_the_defaults() {
        let f = file();
        let r = resolve_run(&RunFlags::default(), &no_env, Some(&f)).unwrap();
        assert_eq!((r.runs.value, &r.runs.origin), (3, &from_file("runs")));
        assert_eq!(r.timeout.value, Some(Duration::from_secs(120)));
        assert_eq!(r.confidence.value, 0.9);
        assert_eq!(
            (r.matrix.value, r.matrix.origin),
            (vec!["standard".to_string()], from_file("matrix"))
        );
        assert_eq!(r.junit.value.as_deref(), Some("r/{run}.xml"));
        assert_eq!(r.jobs.value, 2);
        assert_eq!(r.kill_grace.value, Duration::from_secs(1));
        assert_eq!(r.runs.origin.to_string(), "[run] runs in flakelab.toml");
    }

    #[test]
    fn the_environment_beats_the_file() {
        let f = file();
        let env = env_of(&[
            ("FLAKELAB_RUNS", "4"),
            ("FLAKELAB_TIMEOUT", "30s"),
            ("FLAKELAB_CONFIDENCE", "0.99"),
            ("FLAKELAB_MATRIX", " standard , zones ,"),
            ("FLAKELAB_JUNIT", "out.xml"),
            ("FLAKELAB_JOBS", "3"),
            ("FLAKELAB_KILL_GRACE", "250ms"),
        ]);
        let r = resolve_run(&RunFlags::default(), &env, Some(&f)).unwrap();
        assert_eq!(
            (r.runs.value, &r.runs.origin),
            (4, &Origin::Env("FLAKELAB_RUNS"))
        );
        assert_eq!(r.timeout.value, Some(Duration::from_secs(30)));
        assert_eq!(r.confidence.value, 0.99);
        assert_eq!(r.matrix.value, ["standard", "zones"]);
        assert_eq!(r.matrix.origin, Origin::Env("FLAKELAB_MATRIX"));
        assert_eq!(r.junit.value.as_deref(), Some("out.xml"));
        assert_eq!(r.jobs.value, 3);
        assert_eq!(r.kill_grace.value, Duration::from_millis(250));
        // Without a file too.
        let r = resolve_run(&RunFlags::default(), &env, None).unwrap();
        assert_eq!(r.runs.value, 4);
    }

    #[test]
    fn flags_beat_the_environment_and_the_file() {
        let f = file();
        let env = env_of(&[
            ("FLAKELAB_RUNS", "4"),
            ("FLAKELAB_MATRIX", "zones"),
            ("FLAKELAB_JOBS", "3"),
        ]);
        let flags = RunFlags {
            runs: Some(5),
            timeout: Some("1h".into()),
            confidence: Some(0.8),
            matrix: Some(Vec::new()),
            junit: Some("j.xml".into()),
            jobs: Some(1),
            kill_grace: Some("2s".into()),
        };
        let r = resolve_run(&flags, &env, Some(&f)).unwrap();
        assert_eq!((r.runs.value, &r.runs.origin), (5, &Origin::Flag("--runs")));
        assert_eq!(r.timeout.value, Some(Duration::from_secs(3600)));
        assert_eq!(r.confidence.value, 0.8);
        // `-p` alone (an empty --matrix list) replaces the configured matrices.
        assert!(r.matrix.value.is_empty());
        assert_eq!(r.matrix.origin, Origin::Flag("--matrix"));
        assert_eq!(r.junit.value.as_deref(), Some("j.xml"));
        assert_eq!(r.jobs.value, 1);
        assert_eq!(r.kill_grace.value, Duration::from_secs(2));
    }

    #[test]
    fn bad_environment_values_name_the_variable() {
        for (name, value, says) in [
            ("FLAKELAB_RUNS", "many", "not a number"),
            ("FLAKELAB_RUNS", "0", "measure nothing"),
            ("FLAKELAB_RUNS", "-3", "not a number"),
            ("FLAKELAB_TIMEOUT", "soon", "duration"),
            ("FLAKELAB_CONFIDENCE", "95", "inside (0, 1)"),
            ("FLAKELAB_CONFIDENCE", "high", "not a number"),
            ("FLAKELAB_MATRIX", ", ,", "no matrix name"),
            ("FLAKELAB_JOBS", "0", "run nothing"),
            ("FLAKELAB_JOBS", "1.5", "not a number"),
            ("FLAKELAB_KILL_GRACE", "5", "duration"),
        ] {
            let pairs: &'static [(&'static str, &'static str)] =
                Box::leak(vec![(name, value)].into_boxed_slice());
            let e = resolve_run(&RunFlags::default(), &env_of(pairs), None).unwrap_err();
            assert_eq!(e.exit_code(), crate::error::EXIT_USAGE);
            let e = e.to_string();
            assert!(e.contains(&format!("invalid {name} `{value}`")), "{e}");
            assert!(e.contains(says), "{name}={value}: {e}");
            assert!(e.contains(&format!("hint: set {name} to e.g.")), "{e}");
        }
    }

    #[test]
    fn a_bad_timeout_names_the_flag_and_the_forms_and_zero_is_refused() {
        let with = |timeout: &str| {
            let flags = RunFlags {
                timeout: Some(timeout.to_string()),
                ..RunFlags::default()
            };
            resolve_run(&flags, &env_of(&[]), None)
        };
        let e = with("abc").unwrap_err().to_string();
        assert!(e.contains("invalid --timeout `abc`"), "{e}");
        assert!(!e.contains(" at 0"), "a byte offset says nothing: {e}");
        assert!(
            e.contains("`30s`") && e.contains("units: ms, s, m, h, d"),
            "{e}"
        );
        let e = with("5 parsecs").unwrap_err().to_string();
        assert!(e.contains("`parsecs` is not a unit of time"), "{e}");
        for zero in ["0s", "0ms", "0m"] {
            let e = with(zero).unwrap_err();
            assert_eq!(e.exit_code(), crate::error::EXIT_USAGE);
            let e = e.to_string();
            assert!(e.contains("a timeout of zero"), "{e}");
            assert!(e.contains("leave the timeout out for no limit"), "{e}");
        }
        assert_eq!(
            with("1ms").unwrap().timeout.value,
            Some(Duration::from_millis(1))
        );
        let e = parsed("[run]\ntimeout = \"0s\"\n").unwrap_err().to_string();
        assert!(e.contains("[run] timeout") && e.contains("zero"), "{e}");
    }

    #[test]
    fn a_flag_hides_a_bad_variable_and_an_empty_variable_is_unset() {
        let env = env_of(&[("FLAKELAB_RUNS", "many"), ("FLAKELAB_JOBS", "  ")]);
        let flags = RunFlags {
            runs: Some(2),
            ..RunFlags::default()
        };
        let r = resolve_run(&flags, &env, None).unwrap();
        assert_eq!(r.runs.value, 2);
        assert_eq!(r.jobs.origin, Origin::Default);
    }

    #[test]
    fn bad_flags_name_the_flag() {
        for (flags, says) in [
            (
                RunFlags {
                    runs: Some(0),
                    ..RunFlags::default()
                },
                "invalid --runs `0`",
            ),
            (
                RunFlags {
                    jobs: Some(0),
                    ..RunFlags::default()
                },
                "invalid --jobs `0`",
            ),
            (
                RunFlags {
                    jobs: Some(MAX_JOBS + 1),
                    ..RunFlags::default()
                },
                "invalid --jobs `4097`",
            ),
            (
                RunFlags {
                    confidence: Some(1.0),
                    ..RunFlags::default()
                },
                "invalid --confidence `1`",
            ),
            (
                RunFlags {
                    timeout: Some("soon".into()),
                    ..RunFlags::default()
                },
                "invalid --timeout `soon`",
            ),
            (
                RunFlags {
                    kill_grace: Some("x".into()),
                    ..RunFlags::default()
                },
                "invalid --kill-grace `x`",
            ),
        ] {
            let e = resolve_run(&flags, &no_env, None).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("hint: use e.g."), "{e}");
        }
    }

    #[test]
    fn bad_durations_in_the_file_name_the_file_and_the_key() {
        let e = parsed("[run]\ntimeout = \"soon\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("flakelab.toml") && e.contains("[run] timeout"),
            "{e}"
        );
        let e = parsed("[run]\nkill_grace = \"5\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("[run] kill_grace"), "{e}");
        let e = parsed("[run]\nmatrix = [\"\"]\n").unwrap_err().to_string();
        assert!(e.contains("[run] matrix"), "{e}");
    }

    #[test]
    fn the_command_comes_from_the_flag_then_the_lane() {
        let f = file();
        let given = vec!["true".to_string()];
        let c = resolve_command(&given, Some(&f)).unwrap();
        assert_eq!(c.value, given);
        assert_eq!(c.origin, Origin::Flag("-- CMD"));
        let c = resolve_command(&[], Some(&f)).unwrap();
        assert_eq!(c.value, ["pytest", "-n", "2"]);
        assert_eq!(c.origin.to_string(), "[lane] command in flakelab.toml");
        let e = resolve_command(&[], None).unwrap_err().to_string();
        assert!(
            e.contains("no test command") && e.contains("flakelab init --"),
            "{e}"
        );
        let no_lane = parsed("[run]\nruns = 3\n").unwrap();
        let e = resolve_command(&[], Some(&no_lane))
            .unwrap_err()
            .to_string();
        assert!(e.contains("has no [lane] command"), "{e}");
    }

    #[test]
    fn run_help_shows_the_defaults_and_the_variables() {
        use clap::CommandFactory as _;
        let mut cli = crate::cli::Cli::command();
        let help = cli
            .find_subcommand_mut("run")
            .unwrap()
            .render_long_help()
            .to_string();
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        for text in [
            format!("[default: {DEFAULT_RUNS}] [env: FLAKELAB_RUNS]"),
            format!("[default: {DEFAULT_JOBS}] [env: FLAKELAB_JOBS]"),
            format!("[default: {DEFAULT_CONFIDENCE}] [env: FLAKELAB_CONFIDENCE]"),
            format!("[default: {DEFAULT_KILL_GRACE}] [env: FLAKELAB_KILL_GRACE]"),
            "[env: FLAKELAB_TIMEOUT]".to_string(),
            "[env: FLAKELAB_JUNIT]".to_string(),
            "FLAKELAB_MATRIX".to_string(),
        ] {
            assert!(help.contains(&text), "{text} not in {help}");
        }
        for var in ENV_VARS {
            assert!(help.contains(var), "{var}");
        }
    }

    #[test]
    fn init_help_lists_every_key() {
        use clap::CommandFactory as _;
        let mut cli = crate::cli::Cli::command();
        let help = cli
            .find_subcommand_mut("init")
            .unwrap()
            .render_long_help()
            .to_string();
        for key in [
            "[lane] command",
            "[lane] workers",
            "[run] runs",
            "[run] timeout",
            "[run] confidence",
            "[run] matrix",
            "[run] junit",
            "[run] jobs",
            "[run] kill_grace",
            "[redact] names",
        ] {
            assert!(help.contains(key), "{key}");
        }
        for var in ENV_VARS {
            assert!(help.contains(var), "{var}");
        }
    }
}
