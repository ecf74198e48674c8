//! From a parsed JUnit report to the per-test records of one run: one record
//! per test id, from its first attempt (a later attempt of the same id —
//! a rerun element or a repeated test case — is a retry, never the sample),
//! with the failure's normalised signature. Pure.

use std::collections::HashMap;

use crate::junit::{family_id, CaseOutcome, Parsed};
use crate::record::{TestOutcome, TestRecord};
use crate::signature;

/// Characters of a failure message kept in a record.
pub const MESSAGE_CHARS: usize = 300;

fn outcome(o: CaseOutcome) -> TestOutcome {
    match o {
        CaseOutcome::Passed => TestOutcome::Pass,
        CaseOutcome::Failed => TestOutcome::Fail,
        CaseOutcome::Errored => TestOutcome::Error,
        CaseOutcome::Skipped => TestOutcome::Skip,
    }
}

/// The per-test records of a report, in the report's order. `matches` tells
/// whether a failure's text matches `--signature` (None without one).
pub fn records(parsed: &Parsed, matches: Option<&dyn Fn(&str) -> bool>) -> Vec<TestRecord> {
    let mut out: Vec<TestRecord> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for case in &parsed.cases {
        let id = case.id();
        if let Some(&i) = index.get(&id) {
            // A repeated case is a later attempt of the same test.
            let first = &mut out[i];
            first.retries += 1;
            if first.failed() && case.outcome == CaseOutcome::Passed {
                first.passed_on_rerun = true;
            }
            continue;
        }
        let first = outcome(case.first_attempt);
        let failed = matches!(first, TestOutcome::Fail | TestOutcome::Error);
        let text = [case.message.as_deref(), case.detail.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("\n");
        // The headline: the message's first line, else the body's.
        let first_line = |t: &str| {
            t.lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .map(str::to_string)
        };
        let headline = case
            .message
            .as_deref()
            .and_then(first_line)
            .or_else(|| case.detail.as_deref().and_then(first_line))
            .unwrap_or_default();
        let headline = headline.as_str();
        let family = family_id(&id);
        index.insert(id.clone(), out.len());
        out.push(TestRecord {
            family: (family != id).then_some(family),
            id,
            outcome: first,
            passed_on_rerun: case.passed_on_rerun(),
            retries: case.reruns,
            signature: failed.then(|| signature::normalise(headline)),
            message: failed.then(|| headline.chars().take(MESSAGE_CHARS).collect()),
            signature_match: if failed {
                matches.map(|m| m(&text))
            } else {
                None
            },
        });
    }
    out
}
