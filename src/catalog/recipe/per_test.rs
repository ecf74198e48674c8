//! A recipe's `[per_test]`: how to get per-test outcomes from what the
//! runner ships, used when the user gave no `{junit}` and no `--junit`, and
//! the plugin the recipe's `[junit]` needs (rspec_junit_formatter) is not
//! found by `plugin_probe`, or the recipe has no `[junit]` (go, cargo,
//! nextest, and jest, vitest and Playwright, whose JUnit hides retries). The runner's
//! structured output goes to a file (`{report}` in `args` or `env`) or is
//! read from the run's own output (`from = "output"`), in a format
//! `crate::results::testreport` reads.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{IdFrom, Inject, Position};
use crate::results::testreport::Format;

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
#[serde(from = "PerTestToml", into = "PerTestToml")]
pub struct PerTest {
    /// The format the runner writes.
    pub format: Format,
    /// A file at `{report}`, or the run's output.
    pub from: ReadFrom,
    /// What makes the runner write it (may be empty: libtest's lines are
    /// always printed).
    pub inject: Inject,
    /// A command (words; `{runner}` as in `version`) that prints a line and
    /// exits 0 when the plugin `[junit]` needs is installed: then `[junit]`
    /// is used instead. Without it, a recipe with `[junit]` always uses
    /// `[junit]`.
    pub plugin_probe: Option<Vec<String>>,
}

/// `[per_test]` as written: the keys of [`Inject`] beside its own, each
/// declared here (not `flatten`ed), so that an unknown key is reported by
/// name, with the keys expected, at its own line.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PerTestToml {
    format: Format,
    #[serde(default)]
    from: ReadFrom,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    position: Position,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    drop_paths: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    value_options: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    repeats: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id_from: Option<IdFrom>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    plugin_probe: Option<Vec<String>>,
}

impl From<PerTestToml> for PerTest {
    fn from(t: PerTestToml) -> Self {
        PerTest {
            format: t.format,
            from: t.from,
            inject: Inject {
                args: t.args,
                position: t.position,
                env: t.env,
                drop_paths: t.drop_paths,
                value_options: t.value_options,
                repeats: t.repeats,
                id_from: t.id_from,
            },
            plugin_probe: t.plugin_probe,
        }
    }
}

impl From<PerTest> for PerTestToml {
    fn from(p: PerTest) -> Self {
        let Inject {
            args,
            position,
            env,
            drop_paths,
            value_options,
            repeats,
            id_from,
        } = p.inject;
        PerTestToml {
            format: p.format,
            from: p.from,
            args,
            position,
            env,
            drop_paths,
            value_options,
            repeats,
            id_from,
            plugin_probe: p.plugin_probe,
        }
    }
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

    #[test]
    fn a_typo_names_the_key_its_table_and_its_line() {
        let text = "name = \"x\"\n\n[per_test]\nformat = \"libtest\"\nfrom = \"output\"\nargz = [\"-q\"]\n";
        let err = super::super::parse_text("typo.toml", text).unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("unknown field `argz`, expected one of `format`, `from`, `args`"),
            "{message}"
        );
        assert!(message.contains("(in [per_test], line 6)"), "{message}");
        assert!(
            message.starts_with("invalid catalog file typo.toml:"),
            "{message}"
        );
    }

    #[test]
    fn it_reads_and_writes_the_keys_of_its_injection_beside_its_own() {
        let text = "format = \"jest-json\"\nargs = [\"--json\", \"--outputFile={report}\"]\nenv = { A = \"1\" }\nplugin_probe = [\"node\"]\n";
        let p: PerTest = toml::from_str(text).unwrap();
        assert_eq!(p.format, Format::JestJson);
        assert_eq!(p.from, ReadFrom::File);
        assert_eq!(p.inject.args, ["--json", "--outputFile={report}"]);
        assert_eq!(p.inject.env["A"], "1");
        assert_eq!(p.plugin_probe, Some(vec!["node".to_string()]));
        let back = toml::to_string(&p).unwrap();
        assert_eq!(
            back,
            "format = \"jest-json\"\nfrom = \"file\"\nargs = [\"--json\", \"--outputFile={report}\"]\nposition = \"end\"\nplugin_probe = [\"node\"]\n\n[env]\nA = \"1\"\n"
        );
        assert_eq!(toml::from_str::<PerTest>(&back).unwrap(), p);
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"format":"jest-json","from":"file","args":["--json","--outputFile={report}"],"position":"end","env":{"A":"1"},"plugin_probe":["node"]}"#
        );
    }
}
