//! Per-test outcomes from what a runner ships, for runners whose own
//! structured output is not JUnit: go's test2json events (`go test -json`),
//! libtest's `test NAME ... ok` lines (`cargo test`), jest's `--json`
//! results (and vitest's, of the same shape), Playwright's and rspec's JSON.
//! Where a runner's JUnit drops a retried attempt (jest-junit, vitest's and
//! Playwright's JUnit reporters write a test that passed on a retry as a
//! pass), its JSON is what keeps the first attempt. Each reader turns its format into
//! the same [`crate::results::junit::Parsed`] the JUnit reader produces, so ids,
//! families, first attempts and signatures come from one place
//! (`crate::results::outcomes`). Pure: bytes in, cases out.
//!
//! This module owns the formats' readings; which format a runner gives,
//! and whether from a file or from the run's output, is the recipe's
//! `[per_test]` section (the recipe module), which uses [`Format`].

mod jest_json;
mod libtest;
mod nextest_json;
mod playwright_json;
mod rspec_json;
mod test2json;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::results::junit::{Case, CaseOutcome, Parsed};

/// A per-test output format a runner ships.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// JUnit XML (the runner's built-in JUnit reporter).
    Junit,
    /// go's test2json events, one JSON object a line (`go test -json`).
    Test2json,
    /// libtest's human output: `test NAME ... ok|FAILED|ignored`.
    Libtest,
    /// jest's `--json` results document.
    JestJson,
    /// rspec's `--format json` document.
    RspecJson,
    /// Vitest's `--reporter=json` document (jest's shape, read by the same
    /// reader).
    VitestJson,
    /// Playwright Test's `--reporter=json` document.
    PlaywrightJson,
    /// cargo-nextest's libtest-like JSON events (`--message-format
    /// libtest-json`).
    NextestJson,
}

impl Format {
    /// How reports name the format: where the per-test rows come from.
    pub fn label(self) -> &'static str {
        match self {
            Format::Junit => "JUnit",
            Format::Test2json => "go test -json",
            Format::Libtest => "libtest's output",
            Format::JestJson => "jest --json",
            Format::RspecJson => "rspec --format json",
            Format::VitestJson => "vitest --reporter=json",
            Format::PlaywrightJson => "playwright --reporter=json",
            Format::NextestJson => "nextest --message-format libtest-json",
        }
    }

    /// The format's name as recipes write it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Junit => "junit",
            Format::Test2json => "test2json",
            Format::Libtest => "libtest",
            Format::JestJson => "jest-json",
            Format::RspecJson => "rspec-json",
            Format::VitestJson => "vitest-json",
            Format::PlaywrightJson => "playwright-json",
            Format::NextestJson => "nextest-json",
        }
    }
}

/// Why a runner's per-test output could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReportError {
    /// A JUnit report could not be read.
    #[error("{0}")]
    Junit(String),
    /// The document is not what the format says.
    #[error("the {format} output is not readable: {message}")]
    Malformed {
        /// The format's name.
        format: &'static str,
        /// What is wrong.
        message: String,
    },
}

/// Reads `bytes` in `format`. `base` is the directory the run ran in:
/// absolute file paths under it (jest) are shown relative to it.
pub fn parse(format: Format, bytes: &[u8], base: &Path) -> Result<Parsed, ReportError> {
    let text = String::from_utf8_lossy(bytes);
    let cases = match format {
        Format::Junit => {
            return crate::results::junit::parse(bytes)
                .map_err(|e| ReportError::Junit(e.to_string()))
        }
        Format::Test2json => test2json::cases(&text),
        Format::Libtest => libtest::cases(&strip_ansi(&text)),
        Format::NextestJson => nextest_json::cases(&text),
        Format::JestJson | Format::VitestJson => {
            jest_json::cases(&text, base).map_err(|m| malformed(format, m))?
        }
        Format::PlaywrightJson => {
            playwright_json::cases(&text, base).map_err(|m| malformed(format, m))?
        }
        Format::RspecJson => rspec_json::cases(&text).map_err(|m| malformed(format, m))?,
    };
    Ok(Parsed {
        cases,
        root: format.name().to_string(),
        infra: Vec::new(),
    })
}

/// The text without colour codes (jest colours its messages).
fn strip_ansi(text: &str) -> String {
    static ANSI: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    ANSI.get_or_init(|| regex::Regex::new(r"\x1b\[[0-9;]*[A-Za-z]").expect("a valid pattern"))
        .replace_all(text, "")
        .into_owned()
}

fn malformed(format: Format, message: String) -> ReportError {
    ReportError::Malformed {
        format: format.name(),
        message,
    }
}

/// One case with no rerun, its first attempt its outcome; empty message
/// and detail become `None`.
fn case(
    classname: &str,
    name: &str,
    outcome: CaseOutcome,
    message: Option<String>,
    detail: Option<String>,
) -> Case {
    let keep = |s: Option<String>, cap: usize| {
        s.filter(|s| !s.trim().is_empty()).map(|s| truncate(s, cap))
    };
    Case {
        suite: String::new(),
        classname: classname.to_string(),
        name: name.to_string(),
        outcome,
        first_attempt: outcome,
        reruns: 0,
        message: keep(message, crate::results::junit::MAX_MESSAGE),
        detail: keep(detail, crate::results::junit::MAX_DETAIL),
        time_s: None,
        file: None,
        line: None,
    }
}

fn truncate(mut s: String, cap: usize) -> String {
    if s.len() > cap {
        let mut end = cap;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_named_as_recipes_write_them() {
        for f in [
            Format::Junit,
            Format::Test2json,
            Format::Libtest,
            Format::JestJson,
            Format::RspecJson,
            Format::VitestJson,
            Format::PlaywrightJson,
            Format::NextestJson,
        ] {
            let written: Format =
                serde_json::from_value(serde_json::Value::String(f.name().into())).unwrap();
            assert_eq!(written, f);
        }
    }

    #[test]
    fn long_messages_are_cut_on_a_character_boundary() {
        let c = case("c", "n", CaseOutcome::Failed, Some("é".repeat(5000)), None);
        let m = c.message.unwrap();
        assert!(m.len() <= crate::results::junit::MAX_MESSAGE);
        assert!(m.chars().all(|ch| ch == 'é'));
        assert_eq!(
            case("c", "n", CaseOutcome::Passed, Some(" ".into()), None).message,
            None
        );
    }
}
