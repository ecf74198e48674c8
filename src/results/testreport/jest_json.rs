//! jest's `--json` results (`--json --outputFile PATH`): `testResults[]`,
//! one per test file, each with `assertionResults[]`. The classname is the
//! file, relative to the run's directory; the name is jest's `fullName`
//! (describe titles and the test title joined by spaces: what `-t` takes).
//! A file that failed to run (a syntax error, a throwing import) has no
//! assertion results: it is one errored case named after the file, with
//! jest's message.
//!
//! Retries: jest only retries (`jest.retryTimes(N)`) an attempt that
//! failed, and counts every attempt in `invocations`, so a test with more
//! than one invocation failed its first attempt, whatever its final status;
//! `retryReasons` holds the retried attempts' errors only with
//! `logErrorsBeforeRetry`. Vitest's JSON reporter (`--reporter=json`)
//! writes the same document without `invocations`: there a retried test
//! (`retry: N`) keeps every failed attempt's message in
//! `failureMessages`, so a passed test with a failure message passed on a
//! retry (a failed one's several messages may be one attempt's soft
//! assertions: its retries are not counted).

use std::path::Path;

use serde::Deserialize;

use crate::results::junit::{Case, CaseOutcome};

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
            // The first attempt's error first: a retried attempt's reason
            // (jest) or the first of the messages (vitest).
            let text = a
                .retry_reasons
                .first()
                .or(a.failure_messages.first())
                .map(|m| super::strip_ansi(m));
            let attempts = match a.invocations {
                Some(n) => n.max(1),
                // Vitest: one message per failed attempt before the pass.
                // (A failed test's messages may be several errors of one
                // attempt, `expect.soft`: its retries are not counted.)
                None if outcome == CaseOutcome::Passed => u32::try_from(a.failure_messages.len())
                    .map_or(u32::MAX, |n| n.saturating_add(1)),
                None => 1,
            }
            .max(1 + u32::from(outcome == CaseOutcome::Passed && !a.retry_reasons.is_empty()));
            let mut c = super::case(&shown, &name, outcome, None, text);
            if attempts > 1 && outcome != CaseOutcome::Skipped {
                c.first_attempt = CaseOutcome::Failed;
                c.reruns = attempts - 1;
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
        let text = include_str!("../../../tests/fixtures/testreport/jest-shuffle-fail.json");
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

    #[test]
    fn invocations_and_failure_messages_tell_retries() {
        // jest 30.5.2, `jest.retryTimes(1)` without logErrorsBeforeRetry:
        // no retryReasons, only the count of invocations.
        let text = r#"{"testResults":[{"name":"/p/a.test.js","status":"failed","message":"","assertionResults":[
            {"fullName":"flaky","title":"flaky","status":"passed","failureMessages":[],"retryReasons":[],"invocations":2},
            {"fullName":"ok","title":"ok","status":"passed","failureMessages":[],"retryReasons":[],"invocations":1},
            {"fullName":"always","title":"always","status":"failed","failureMessages":["Error: always boom"],"retryReasons":[],"invocations":2}]}]}"#;
        let cs = cases(text, Path::new("/p")).unwrap();
        let got: Vec<(CaseOutcome, CaseOutcome, u32)> = cs
            .iter()
            .map(|c| (c.first_attempt, c.outcome, c.reruns))
            .collect();
        use CaseOutcome::{Failed, Passed};
        assert_eq!(
            got,
            [
                (Failed, Passed, 1),
                (Passed, Passed, 0),
                (Failed, Failed, 1)
            ]
        );
        // vitest 4.1.12's JSON reporter, `retry: 1`: no invocations; every
        // failed attempt's message.
        let text = r#"{"testResults":[{"name":"/p/a.test.js","status":"failed","message":"","assertionResults":[
            {"fullName":"flaky","title":"flaky","status":"passed","failureMessages":["AssertionError: expected +0 to be 1"]},
            {"fullName":"ok","title":"ok","status":"passed","failureMessages":[]},
            {"fullName":"always","title":"always","status":"failed","failureMessages":["Error: always boom","Error: always boom"]}]}]}"#;
        let cs = cases(text, Path::new("/p")).unwrap();
        let got: Vec<(CaseOutcome, CaseOutcome, u32)> = cs
            .iter()
            .map(|c| (c.first_attempt, c.outcome, c.reruns))
            .collect();
        assert_eq!(
            got,
            [
                (Failed, Passed, 1),
                (Passed, Passed, 0),
                (Failed, Failed, 0)
            ]
        );
        assert_eq!(
            cs[0].detail.as_deref(),
            Some("AssertionError: expected +0 to be 1")
        );
    }
}
