//! rspec's `--format json` document (written with `--out PATH`):
//! `examples[]`, each with its `file_path`, `full_description`, `status`
//! (`passed`, `failed`, `pending`) and `exception`. The ids are those of
//! the rspec_junit_formatter plugin (classname: the file path without
//! `./` and `.rb`, `/` as `.`; name: the full description), so a project
//! that installs the plugin later keeps its history.

use serde::Deserialize;

use crate::results::junit::{Case, CaseOutcome};

#[derive(Deserialize)]
struct Document {
    examples: Vec<Example>,
}

#[derive(Deserialize)]
struct Example {
    #[serde(default)]
    file_path: String,
    #[serde(default)]
    full_description: String,
    status: String,
    #[serde(default)]
    exception: Option<Exception>,
}

#[derive(Deserialize)]
struct Exception {
    #[serde(default)]
    class: String,
    #[serde(default)]
    message: String,
    #[serde(default)]
    backtrace: Option<Vec<String>>,
}

/// The classname rspec_junit_formatter gives a spec file.
fn classname(file_path: &str) -> String {
    let p = file_path.strip_prefix("./").unwrap_or(file_path);
    p.strip_suffix(".rb").unwrap_or(p).replace('/', ".")
}

/// The cases of one document, in the order the examples ran.
pub(super) fn cases(text: &str) -> Result<Vec<Case>, String> {
    let doc: Document = serde_json::from_str(text).map_err(|e| e.to_string())?;
    Ok(doc
        .examples
        .into_iter()
        .map(|e| {
            let outcome = match e.status.as_str() {
                "passed" => CaseOutcome::Passed,
                "failed" => CaseOutcome::Failed,
                _ => CaseOutcome::Skipped,
            };
            let (message, detail) = match e.exception.filter(|_| outcome == CaseOutcome::Failed) {
                Some(x) => {
                    let mut detail = format!("{}:\n  {}\n", x.class, x.message);
                    for line in x.backtrace.unwrap_or_default().iter().take(20) {
                        detail.push_str(line);
                        detail.push('\n');
                    }
                    (Some(x.message), Some(detail))
                }
                None => (None, None),
            };
            super::case(
                &classname(&e.file_path),
                &e.full_description,
                outcome,
                message,
                detail,
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_ids_and_outcomes_as_the_junit_plugin_of_the_same_run() {
        let json = include_str!("../../../tests/fixtures/testreport/rspec-shuffle-fail.json");
        let xml = include_str!(
            "../../../tests/fixtures/testreport/rspec-junit-formatter-shuffle-fail.xml"
        );
        let ours = cases(json).unwrap();
        let plugin = crate::results::junit::parse(xml.as_bytes()).unwrap().cases;
        let view = |cs: &[Case]| -> Vec<(String, CaseOutcome, Option<String>)> {
            cs.iter()
                .map(|c| (c.id(), c.outcome, c.message.clone()))
                .collect()
        };
        assert_eq!(view(&ours), view(&plugin));
        assert_eq!(ours.len(), 4);
        assert_eq!(ours[2].id(), "spec.config_spec::Config formats a price");
        assert_eq!(
            ours[2].message.as_deref(),
            Some("currency was never loaded")
        );
        assert!(cases("{}").is_err());
    }
}
