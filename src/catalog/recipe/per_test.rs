//! A recipe's `[per_test]`: how to get per-test outcomes from what the
//! runner ships, used when the user gave no `{junit}` and no `--junit`, and
//! the plugin the recipe's `[junit]` needs (jest-junit,
//! rspec_junit_formatter) is not found by `plugin_probe`. The runner's
//! structured output goes to a file (`{report}` in `args` or `env`) or is
//! read from the run's own output (`from = "output"`), in a format
//! `crate::testreport` reads.

use serde::{Deserialize, Serialize};

use super::Inject;
use crate::testreport::Format;

/// Where the runner's per-test output is read from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReadFrom {
    /// A file the runner writes at `{report}`.
    #[default]
    File,
    /// The run's captured output (stdout and stderr, as logged).
    Output,
}

/// `[per_test]` of a recipe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerTest {
    /// The format the runner writes.
    pub format: Format,
    /// A file at `{report}`, or the run's output.
    #[serde(default)]
    pub from: ReadFrom,
    /// What makes the runner write it (may be empty: libtest's lines are
    /// always printed).
    #[serde(flatten)]
    pub inject: Inject,
    /// A command (words; `{runner}` as in `version`) that prints a line and
    /// exits 0 when the plugin `[junit]` needs is installed: then `[junit]`
    /// is used instead. Without it, a recipe with `[junit]` always uses
    /// `[junit]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_probe: Option<Vec<String>>,
}

impl PerTest {
    /// Checks the placeholders: `{report}` exactly when from a file.
    pub fn validate(&self) -> Result<(), String> {
        let uses = self
            .inject
            .args
            .iter()
            .chain(self.inject.env.values())
            .any(|t| t.contains("{report}"));
        for t in self.inject.args.iter().chain(self.inject.env.values()) {
            let vars = std::collections::BTreeMap::from([("report", "X".to_string())]);
            super::fill(t, &vars).map_err(|e| format!("[per_test]: {e}"))?;
        }
        let placed: Result<(), String> = match (self.from, uses) {
            (ReadFrom::File, false) => {
                Err("[per_test] from a file never says where: put {report} in args or env".into())
            }
            (ReadFrom::Output, true) => Err(
                "[per_test] from the output uses {report}: drop it, or read from = \"file\"".into(),
            ),
            _ => Ok(()),
        };
        placed?;
        if let Some(p) = &self.plugin_probe {
            if p.is_empty() {
                return Err("[per_test] plugin_probe is empty".into());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<(), String> {
        let p: PerTest = toml::from_str(text).map_err(|e| e.to_string())?;
        p.validate()
    }

    #[test]
    fn a_file_needs_its_path_and_the_output_none() {
        assert_eq!(
            parse("format = \"jest-json\"\nargs = [\"--json\", \"--outputFile={report}\"]"),
            Ok(())
        );
        assert_eq!(parse("format = \"libtest\"\nfrom = \"output\""), Ok(()));
        assert!(parse("format = \"jest-json\"\nargs = [\"--json\"]")
            .unwrap_err()
            .contains("never says where"));
        assert!(
            parse("format = \"test2json\"\nfrom = \"output\"\nargs = [\"-o\", \"{report}\"]")
                .unwrap_err()
                .contains("drop it")
        );
        assert!(parse("format = \"tap\"\nfrom = \"output\"").is_err());
        assert!(
            parse("format = \"libtest\"\nfrom = \"output\"\nargs = [\"{seed}\"]")
                .unwrap_err()
                .contains("no value")
        );
    }
}
