//! The polluted state named: what the ordering plugin's `--flakelab-state`
//! snapshots say each culprit changed in process-global state (one JSON
//! line per test), kept as [`StateChange`]s of the record, with whether the
//! victim's failure text names the changed thing ("reads it"). Values are
//! the subject's data: credential-named variables are masked here; the
//! renderers (`report::bisect`, the evidence) keep every line one line.

use serde::{Deserialize, Serialize};

use crate::redact::{Redaction, REDACTED};

/// Changes kept per bisection (the rest are counted in the note).
pub const KEEP_CHANGES: usize = 40;

/// One change a culprit made, as the plugin saw it between the test's
/// setup and its teardown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateChange {
    /// What the test is to the victim: `polluter`, `state-setter`, `cleaner`.
    pub role: String,
    /// The test's id.
    pub test: String,
    /// What kind of state (`env`, `cwd`, `file`, `module-attribute`, …).
    pub kind: String,
    /// The thing changed, as Python would name it (`os.environ['X']`).
    pub target: String,
    /// Its bare name (the variable, attribute or file name).
    #[serde(default)]
    pub key: String,
    /// `sets`, `changes`, `removes`, `mutates`, `rebinds`, `creates`, …
    pub verb: String,
    /// The value before (a shallow `repr`, `None` when absent).
    pub before: String,
    /// The value after.
    pub after: String,
    /// The victim's failure text names `key`.
    #[serde(default)]
    pub victim_reads: bool,
}

impl StateChange {
    /// `polluter t::a sets os.environ['X'] (None -> 'EUR'); victim t::v
    /// reads it` (raw: the values may hold line breaks until rendered).
    pub fn line(&self, victim: &str) -> String {
        let mut l = format!(
            "{} {} {} {} ({} -> {})",
            self.role, self.test, self.verb, self.target, self.before, self.after
        );
        if self.victim_reads {
            l.push_str(&format!("; victim {victim} reads it"));
        }
        l
    }
}

/// One line of the plugin's state file.
#[derive(Debug, Deserialize)]
struct Line {
    junit: String,
    #[serde(default)]
    test: String,
    #[serde(default)]
    changes: Vec<Raw>,
    #[serde(default)]
    failure: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Raw {
    kind: String,
    target: String,
    #[serde(default)]
    key: String,
    verb: String,
    before: String,
    after: String,
}

/// What one state run showed: each test's changes (by JUnit id) and the
/// victim's failure text, if it failed.
#[derive(Debug, Default)]
pub struct Snapshot {
    changes: Vec<(String, Raw)>,
    /// The victim's failure text, when it failed in the state run.
    pub failure: Option<String>,
}

/// Reads the plugin's state file; `victim` picks the failure text. Lines
/// that do not parse are skipped.
pub fn parse(text: &str, victim: &str) -> Snapshot {
    let mut out = Snapshot::default();
    for l in text.lines() {
        let Ok(line) = serde_json::from_str::<Line>(l) else {
            continue;
        };
        if line.junit == victim || line.test == victim {
            out.failure = line.failure.clone().or(out.failure);
            continue;
        }
        out.changes
            .extend(line.changes.into_iter().map(|c| (line.junit.clone(), c)));
    }
    out
}

/// The changes of `tests` (each with its role) that `snap` shows, the
/// credential-named variables masked, `victim_reads` set where the victim's
/// failure text (`failures`) names the key.
pub fn findings(
    snap: &Snapshot,
    roles: &[(&str, &[String])],
    failures: &[&str],
    redaction: &Redaction,
) -> Vec<StateChange> {
    let mut out = Vec::new();
    for (role, tests) in roles {
        for (test, c) in &snap.changes {
            if !tests.contains(test) {
                continue;
            }
            let secret = c.kind == "env" && redaction.is_secret(&c.key);
            let mask = |v: &str| {
                if secret && v != "None" {
                    REDACTED.to_string()
                } else {
                    v.to_string()
                }
            };
            let reads =
                c.key.chars().count() >= 3 && failures.iter().any(|f| f.contains(c.key.as_str()));
            out.push(StateChange {
                role: role.to_string(),
                test: test.clone(),
                kind: c.kind.clone(),
                target: c.target.clone(),
                key: c.key.clone(),
                verb: c.verb.clone(),
                before: mask(&c.before),
                after: mask(&c.after),
                victim_reads: reads,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"{"test": "tests/test_s.py::test_env", "junit": "tests.test_s::test_env", "changes": [{"kind": "env", "target": "os.environ['APP_CURRENCY']", "key": "APP_CURRENCY", "verb": "sets", "before": "None", "after": "'EUR'"}, {"kind": "env", "target": "os.environ['DB_PASSWORD']", "key": "DB_PASSWORD", "verb": "sets", "before": "None", "after": "'hunter2'"}]}
not json
{"test": "tests/test_s.py::test_other", "junit": "tests.test_s::test_other", "changes": [{"kind": "cwd", "target": "the working directory", "key": "", "verb": "changes", "before": "'/a'", "after": "'/b\n::error::x'"}]}
{"test": "tests/test_s.py::test_v", "junit": "tests.test_s::test_v", "changes": [], "failure": "assert os.environ.get('APP_CURRENCY', 'USD') == 'USD'"}
"#;

    fn polluter() -> Vec<String> {
        vec!["tests.test_s::test_env".to_string()]
    }

    #[test]
    fn the_planted_variable_is_named_and_the_victim_shown_to_read_it() {
        let snap = parse(FILE, "tests.test_s::test_v");
        let p = polluter();
        let failure = snap.failure.clone().unwrap();
        let found = findings(
            &snap,
            &[("polluter", &p)],
            &[failure.as_str()],
            &Redaction::default(),
        );
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(
            found[0].line("tests.test_s::test_v"),
            "polluter tests.test_s::test_env sets os.environ['APP_CURRENCY'] (None -> 'EUR'); victim tests.test_s::test_v reads it"
        );
        // A credential-named variable's value is never shown; nothing shows
        // the victim reads it, so the line does not say so.
        assert_eq!(
            found[1].line("v"),
            "polluter tests.test_s::test_env sets os.environ['DB_PASSWORD'] (None -> <redacted>)"
        );
    }

    #[test]
    fn only_the_culprits_changes_are_kept() {
        let snap = parse(FILE, "tests.test_s::test_v");
        let other = vec!["tests.test_s::test_other".to_string()];
        let found = findings(&snap, &[("cleaner", &other)], &[], &Redaction::default());
        assert_eq!(found.len(), 1);
        let line = found[0].line("v");
        assert!(line.starts_with("cleaner tests.test_s::test_other changes the working directory"));
        assert!(!found[0].victim_reads);
    }
}
