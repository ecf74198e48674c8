//! go's test2json events (`go test -json`, `gotestsum --jsonfile`): one JSON
//! object a line, `{"Action","Package","Test","Output"}`. A test is a case
//! from its first `run` event (start order) to its `pass`, `fail` or `skip`;
//! a test that started and never ended (the binary crashed or was killed)
//! is an error. Lines that are not events (build errors on stderr, mixed
//! into the run's output) are skipped. The failure's detail is the test's
//! own output without go's `=== RUN`/`PAUSE`/`CONT` framing lines, as
//! gotestsum writes it into JUnit, so both give the same signature.

use std::collections::HashMap;

use serde::Deserialize;

use crate::results::junit::{Case, CaseOutcome};

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "Action")]
    action: String,
    #[serde(rename = "Package", default)]
    package: String,
    #[serde(rename = "Test", default)]
    test: Option<String>,
    #[serde(rename = "Output", default)]
    output: Option<String>,
}

struct Open {
    package: String,
    test: String,
    end: Option<CaseOutcome>,
    /// The output of the execution under way.
    output: String,
    /// The output of the first execution that failed.
    failed_output: Option<String>,
    /// Executions started (`-count=N`, `-cpu 1,2,4` run a test N times).
    runs: u32,
}

/// The cases of a stream of events, in the order the tests started.
pub(super) fn cases(text: &str) -> Vec<Case> {
    let mut open: Vec<Open> = Vec::new();
    let mut index: HashMap<(String, String), usize> = HashMap::new();
    for line in text.lines() {
        let line = line.trim();
        if !line.starts_with('{') {
            continue;
        }
        let Ok(ev) = serde_json::from_str::<Event>(line) else {
            continue;
        };
        let Some(test) = ev.test else {
            continue;
        };
        let key = (ev.package.clone(), test.clone());
        let i = *index.entry(key).or_insert_with(|| {
            open.push(Open {
                package: ev.package.clone(),
                test: test.clone(),
                end: None,
                output: String::new(),
                failed_output: None,
                runs: 0,
            });
            open.len() - 1
        });
        let t = &mut open[i];
        match ev.action.as_str() {
            // A test that runs more than once in one binary (`-cpu 1,2,4`,
            // `-count=N`: repetitions, not retries — go runs each whatever
            // the last did) failed in the run if any of its executions did;
            // its words are the first failing execution's own lines.
            "run" => {
                t.runs = t.runs.saturating_add(1);
                t.output.clear();
            }
            "pass" if t.end == Some(CaseOutcome::Failed) => {}
            "pass" => t.end = Some(CaseOutcome::Passed),
            "fail" => {
                t.end = Some(CaseOutcome::Failed);
                if t.failed_output.is_none() {
                    t.failed_output = Some(std::mem::take(&mut t.output));
                }
            }
            "skip" if t.end == Some(CaseOutcome::Failed) => {}
            "skip" => t.end = Some(CaseOutcome::Skipped),
            "output" => {
                let out = ev.output.unwrap_or_default();
                let framing = ["=== RUN", "=== PAUSE", "=== CONT", "=== NAME"]
                    .iter()
                    .any(|p| out.starts_with(p));
                if !framing && t.output.len() < crate::results::junit::MAX_DETAIL {
                    t.output.push_str(&out);
                }
            }
            _ => {}
        }
    }
    open.into_iter()
        .map(|t| {
            let (outcome, message) = match t.end {
                Some(o) => (o, None),
                None => (
                    CaseOutcome::Errored,
                    Some(
                        "the test started and never ended (its test binary stopped first)"
                            .to_string(),
                    ),
                ),
            };
            let failed = matches!(outcome, CaseOutcome::Failed | CaseOutcome::Errored);
            let detail = failed.then(|| t.failed_output.unwrap_or(t.output));
            let mut c = super::case(&t.package, &t.test, outcome, message, detail);
            c.reruns = t.runs.saturating_sub(1);
            c
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_become_cases_in_start_order() {
        let text = r#"{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:9: boom 12\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- FAIL: TestA (0.00s)\n"}
{"Action":"fail","Package":"p","Test":"TestA","Elapsed":0}
# p [build failed]
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"skip","Package":"p","Test":"TestB","Elapsed":0}
{"Action":"run","Package":"p","Test":"TestC"}
{"Action":"fail","Package":"p","Elapsed":0}
"#;
        let cs = cases(text);
        let got: Vec<(String, CaseOutcome)> = cs.iter().map(|c| (c.id(), c.outcome)).collect();
        assert_eq!(
            got,
            [
                ("p::TestA".to_string(), CaseOutcome::Failed),
                ("p::TestB".to_string(), CaseOutcome::Skipped),
                ("p::TestC".to_string(), CaseOutcome::Errored),
            ]
        );
        assert_eq!(
            cs[0].detail.as_deref(),
            Some("    a_test.go:9: boom 12\n--- FAIL: TestA (0.00s)\n")
        );
        assert!(cs[2].message.as_deref().unwrap().contains("never ended"));
    }

    #[test]
    fn a_test_run_at_several_gomaxprocs_fails_if_any_execution_failed() {
        // go test -cpu 1,2,4 -json: the same Test three times in one binary.
        let text = r#"{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}
{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:9: boom\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- FAIL: TestA (0.00s)\n"}
{"Action":"fail","Package":"p","Test":"TestA","Elapsed":0}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}
{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0}
"#;
        let cs = cases(text);
        assert_eq!(cs.len(), 1);
        assert_eq!(
            (cs[0].outcome, cs[0].first_attempt),
            (CaseOutcome::Failed, CaseOutcome::Failed)
        );
        assert_eq!(cs[0].reruns, 2);
        // The failing execution's own lines: never the passing one's.
        assert_eq!(
            cs[0].detail.as_deref(),
            Some("    a_test.go:9: boom\n--- FAIL: TestA (0.00s)\n")
        );
    }
}
