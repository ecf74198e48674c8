//! The project's `flakelab.toml`: its check lane (ladder rungs 4 and 5) and
//! its defaults for `run`. Loading is strict: an unknown key or a bad value
//! fails with the file and the key named.
//!
//! Precedence (resolved by the caller): command-line flags, then
//! environment variables, then this file, then the embedded defaults.

use std::path::{Path, PathBuf};

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
}
