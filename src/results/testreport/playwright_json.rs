//! Playwright Test's JSON reporter (`--reporter=json`, written to
//! `PLAYWRIGHT_JSON_OUTPUT_NAME`): `suites[]`, one per spec file, nesting
//! `describe` suites, each with `specs[]`, each spec with one test per
//! project, each test with `results[]`: one per attempt, `retry` 0 first.
//! Playwright's JUnit reporter writes a test that passed on a retry as a
//! plain pass (its failed attempt survives only as an attachment line), so
//! the recipe reads this document, where every attempt is kept.
//!
//! Ids are the JUnit reporter's: the spec file (relative to the test
//! directory) as classname, `describe` titles and the test title joined by
//! ` › ` as name. A test's outcome is its last attempt's; its first
//! attempt is `results[0]`. A test whose `status` is `expected` (including
//! a `test.fail()` that failed) passed, `unexpected` failed, `flaky` failed
//! first and passed on a retry. An error outside any test (a spec file that
//! does not load) is one errored case named after its file.

use std::path::Path;

use serde::Deserialize;

use crate::results::junit::{Case, CaseOutcome};

#[derive(Deserialize)]
struct Report {
    suites: Vec<Suite>,
    #[serde(default)]
    errors: Vec<Error>,
}

#[derive(Deserialize)]
struct Suite {
    #[serde(default)]
    title: String,
    #[serde(default)]
    specs: Vec<Spec>,
    #[serde(default)]
    suites: Vec<Suite>,
}

#[derive(Deserialize)]
struct Spec {
    #[serde(default)]
    title: String,
    #[serde(default)]
    file: String,
    #[serde(default)]
    tests: Vec<Test>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Test {
    #[serde(default)]
    status: String,
    #[serde(default)]
    project_name: String,
    #[serde(default)]
    results: Vec<Attempt>,
}

#[derive(Deserialize)]
struct Attempt {
    #[serde(default)]
    status: String,
    #[serde(default)]
    error: Option<Error>,
}

#[derive(Deserialize)]
struct Error {
    #[serde(default)]
    message: String,
    #[serde(default)]
    stack: String,
    #[serde(default)]
    location: Option<Location>,
}

#[derive(Deserialize)]
struct Location {
    #[serde(default)]
    file: String,
}

/// The cases of one report, files and tests in the report's order.
pub(super) fn cases(text: &str, base: &Path) -> Result<Vec<Case>, String> {
    let report: Report = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for error in &report.errors {
        let file = error.location.as_ref().map_or("playwright", |l| {
            let p = Path::new(&l.file);
            p.strip_prefix(base)
                .unwrap_or(p)
                .to_str()
                .unwrap_or("playwright")
        });
        let (message, detail) = words(error);
        out.push(super::case(
            file,
            file,
            CaseOutcome::Errored,
            message,
            detail,
        ));
    }
    for file in &report.suites {
        walk(file, &mut Vec::new(), &mut out, true);
    }
    Ok(out)
}

/// The cases of `suite` and its nested suites; `path` holds the titles of
/// the `describe` suites around it (a file's own suite, `file`, adds none).
fn walk(suite: &Suite, path: &mut Vec<String>, out: &mut Vec<Case>, file: bool) {
    let pushed = !file;
    if pushed {
        path.push(suite.title.clone());
    }
    for spec in &suite.specs {
        for test in &spec.tests {
            out.push(case(spec, test, path));
        }
    }
    for inner in &suite.suites {
        walk(inner, path, out, false);
    }
    if pushed {
        path.pop();
    }
}

fn case(spec: &Spec, test: &Test, path: &[String]) -> Case {
    let mut titles: Vec<&str> = path.iter().map(String::as_str).collect();
    titles.push(&spec.title);
    let mut name = titles.join(" › ");
    if !test.project_name.is_empty() {
        name = format!("[{}] {name}", test.project_name);
    }
    let attempt = |a: &Attempt| match a.status.as_str() {
        "passed" => CaseOutcome::Passed,
        "skipped" => CaseOutcome::Skipped,
        // failed, timedOut, interrupted.
        _ => CaseOutcome::Failed,
    };
    let outcome = match test.status.as_str() {
        "expected" | "flaky" => CaseOutcome::Passed,
        "skipped" => CaseOutcome::Skipped,
        _ => CaseOutcome::Failed,
    };
    let first = match (test.status.as_str(), test.results.first()) {
        ("flaky", _) => CaseOutcome::Failed,
        // A `test.fail()` that failed as expected passed.
        ("expected", _) => CaseOutcome::Passed,
        (_, Some(a)) => attempt(a),
        (_, None) => outcome,
    };
    let error = test.results.iter().find_map(|a| a.error.as_ref());
    let (message, detail) = error.map(words).unwrap_or_default();
    let mut c = super::case(&spec.file, &name, outcome, message, detail);
    c.first_attempt = first;
    c.reruns = u32::try_from(test.results.len().saturating_sub(1)).unwrap_or(u32::MAX);
    c
}

/// An error's message (its first line, without colour) and its stack.
fn words(e: &Error) -> (Option<String>, Option<String>) {
    let message = super::strip_ansi(&e.message);
    let headline = message
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string);
    let stack = super::strip_ansi(&e.stack);
    (
        headline,
        Some(if stack.is_empty() { message } else { stack }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use CaseOutcome::{Errored, Failed, Passed, Skipped};

    #[test]
    fn every_attempt_is_read_and_the_first_counts() {
        // @playwright/test 1.65.1, `retries: 1` (trimmed).
        let text = r#"{"config":{},"suites":[
          {"title":"a.spec.js","file":"a.spec.js","specs":[
            {"title":"flaky","file":"a.spec.js","tests":[{"status":"flaky","projectName":"","results":[
              {"status":"failed","retry":0,"error":{"message":"Error: \u001b[2mexpect(\u001b[22mreceived).toBe(expected)\nExpected: 1","stack":"Error: expect\n    at a.spec.js:7:16"}},
              {"status":"passed","retry":1}]}]},
            {"title":"ok","file":"a.spec.js","tests":[{"status":"expected","projectName":"","results":[{"status":"passed","retry":0}]}]},
            {"title":"always","file":"a.spec.js","tests":[{"status":"unexpected","projectName":"","results":[
              {"status":"failed","retry":0,"error":{"message":"Error: always boom"}},
              {"status":"failed","retry":1,"error":{"message":"Error: always boom"}}]}]}]},
          {"title":"b.spec.js","file":"b.spec.js","specs":[],"suites":[
            {"title":"grp","file":"b.spec.js","specs":[
              {"title":"inner","file":"b.spec.js","tests":[{"status":"expected","projectName":"","results":[{"status":"passed","retry":0}]}]},
              {"title":"skipme","file":"b.spec.js","tests":[{"status":"skipped","projectName":"","results":[{"status":"skipped","retry":0}]}]}]}]}],
          "errors":[{"message":"SyntaxError: Unexpected token","location":{"file":"/p/tests/c.spec.js","line":1,"column":1}}]}"#;
        let cs = cases(text, Path::new("/p/tests")).unwrap();
        let got: Vec<(String, CaseOutcome, CaseOutcome, u32)> = cs
            .iter()
            .map(|c| (c.id(), c.first_attempt, c.outcome, c.reruns))
            .collect();
        assert_eq!(
            got,
            [
                ("c.spec.js::c.spec.js".to_string(), Errored, Errored, 0),
                ("a.spec.js::flaky".to_string(), Failed, Passed, 1),
                ("a.spec.js::ok".to_string(), Passed, Passed, 0),
                ("a.spec.js::always".to_string(), Failed, Failed, 1),
                ("b.spec.js::grp › inner".to_string(), Passed, Passed, 0),
                ("b.spec.js::grp › skipme".to_string(), Skipped, Skipped, 0),
            ]
        );
        assert_eq!(
            cs[1].message.as_deref(),
            Some("Error: expect(received).toBe(expected)")
        );
        assert!(cs[1].passed_on_rerun());
        assert!(cases("{}", Path::new("/p")).is_err());
        assert!(cases("not json", Path::new("/p")).is_err());
    }
}
