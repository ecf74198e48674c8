//! jest's `--json` results (`--json --outputFile PATH`): `testResults[]`,
//! one per test file, each with `assertionResults[]`. The classname is the
//! file, relative to the run's directory; the name is jest's `fullName`
//! (describe titles and the test title joined by spaces: what `-t` takes).
//! A file that failed to run (a syntax error, a throwing import) has no
//! assertion results: it is one errored case named after the file, with
//! jest's message. A test retried by `jest.retryTimes` that passed in the
//! end but carries `retryReasons` failed its first attempt.

use std::path::Path;

use serde::Deserialize;

use crate::junit::{Case, CaseOutcome};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Results {
    test_results: Vec<FileResult>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileResult {
    name: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    message: String,
    #[serde(default)]
    assertion_results: Vec<Assertion>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Assertion {
    #[serde(default)]
    full_name: String,
    #[serde(default)]
    title: String,
    status: String,
    #[serde(default)]
    failure_messages: Vec<String>,
    #[serde(default)]
    retry_reasons: Vec<String>,
    #[serde(default)]
    invocations: Option<u32>,
}

/// The cases of one results document, files in jest's order.
pub(super) fn cases(text: &str, base: &Path) -> Result<Vec<Case>, String> {
    let results: Results = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for file in results.test_results {
        let path = Path::new(&file.name);
        let shown = path
            .strip_prefix(base)
            .unwrap_or(path)
            .display()
            .to_string();
        if file.assertion_results.is_empty() && file.status == "failed" {
            let message = super::strip_ansi(&file.message);
            let headline = message
                .lines()
                .map(|l| l.trim().trim_start_matches('●').trim())
                .find(|l| !l.is_empty())
                .map(str::to_string);
            out.push(super::case(
                &shown,
                &shown,
                CaseOutcome::Errored,
                headline,
                Some(message),
            ));
            continue;
        }
        for a in file.assertion_results {
            let outcome = match a.status.as_str() {
                "passed" => CaseOutcome::Passed,
                "failed" => CaseOutcome::Failed,
                _ => CaseOutcome::Skipped,
            };
            let name = if a.full_name.is_empty() {
                a.title
            } else {
                a.full_name
            };
            let text = a
                .failure_messages
                .first()
                .or(a.retry_reasons.first())
                .map(|m| super::strip_ansi(m));
            let mut c = super::case(&shown, &name, outcome, None, text);
            if outcome == CaseOutcome::Passed && !a.retry_reasons.is_empty() {
                c.first_attempt = CaseOutcome::Failed;
                c.reruns = a.invocations.unwrap_or(1).saturating_sub(1).max(1);
            }
            out.push(c);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shuffled_failing_run_reads_every_test() {
        let text = include_str!("../../tests/fixtures/testreport/jest-shuffle-fail.json");
        let cs = cases(text, Path::new("/tmp/jj")).unwrap();
        let got: Vec<(String, CaseOutcome)> = cs.iter().map(|c| (c.id(), c.outcome)).collect();
        assert_eq!(got.len(), 5);
        assert!(got.contains(&(
            "config.test.js::test_b_formats_price".to_string(),
            CaseOutcome::Failed
        )));
        assert_eq!(
            got.iter()
                .filter(|(_, o)| *o == CaseOutcome::Passed)
                .count(),
            4
        );
        let b = cs
            .iter()
            .find(|c| c.outcome == CaseOutcome::Failed)
            .unwrap();
        assert!(b
            .detail
            .as_deref()
            .unwrap()
            .starts_with("Error: currency was never loaded\n"));
    }

    #[test]
    fn a_file_that_did_not_run_and_a_retried_test() {
        let text = r#"{"testResults":[
          {"name":"/p/broken.test.js","status":"failed","message":"  ● Test suite failed to run\n\n    Jest encountered an unexpected token","assertionResults":[]},
          {"name":"/p/a.test.js","status":"passed","message":"","assertionResults":[
            {"fullName":"d t","title":"t","status":"passed","failureMessages":[],"retryReasons":["Error: boom"],"invocations":2},
            {"fullName":"d u","title":"u","status":"pending","failureMessages":[]}]}]}"#;
        let cs = cases(text, Path::new("/p")).unwrap();
        assert_eq!(cs[0].id(), "broken.test.js::broken.test.js");
        assert_eq!(cs[0].outcome, CaseOutcome::Errored);
        assert_eq!(cs[0].message.as_deref(), Some("Test suite failed to run"));
        assert!(cs[1].passed_on_rerun());
        assert_eq!(cs[1].reruns, 1);
        assert_eq!(cs[2].outcome, CaseOutcome::Skipped);
        assert!(cases("not json", Path::new("/p")).is_err());
    }
}
