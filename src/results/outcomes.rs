//! From a parsed JUnit report to the per-test records of one run: one record
//! per test id, from its first attempt (a later attempt of the same id —
//! a rerun element, pytest-rerunfailures' case per attempt, or a repeated
//! test case — is a retry, never the sample), with the failure's normalised
//! signature. Pure.

use std::collections::HashMap;

use crate::record::{TestOutcome, TestRecord};
use crate::results::junit::{family_id, CaseOutcome, Parsed};
use crate::results::signature;

/// Characters of a failure message kept in a record.
pub const MESSAGE_CHARS: usize = 300;

/// go's framing lines around a test's own output (gotestsum keeps them in
/// its JUnit bodies): never a failure's headline.
const GO_FRAMING: [&str; 4] = ["=== RUN", "=== PAUSE", "=== CONT", "=== NAME"];

/// The headline of a first attempt that failed and was retried when the
/// report keeps no word of it.
pub const NO_MESSAGE: &str = "failed its first attempt (the report keeps no message of it)";

fn outcome(o: CaseOutcome) -> TestOutcome {
    match o {
        CaseOutcome::Passed => TestOutcome::Pass,
        CaseOutcome::Failed => TestOutcome::Fail,
        CaseOutcome::Errored => TestOutcome::Error,
        CaseOutcome::Skipped => TestOutcome::Skip,
    }
}

/// The per-test records of a report, in the report's order; a failure's
/// text is matched against the `--signature` `patterns` (none: no match is
/// recorded).
pub fn records(parsed: &Parsed, patterns: &[regex::Regex]) -> Vec<TestRecord> {
    let mut out: Vec<TestRecord> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for case in &crate::results::junit::fold_reruns(&parsed.cases) {
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
        // The headline: the message's first line, else the body's. A line
        // that only names the test says nothing (PHPUnit 9 starts the body
        // with `Class::method`; gotestsum with go's `=== RUN   TestX`
        // framing): the next one is the headline.
        let first_line = |t: &str| {
            t.lines()
                .map(str::trim)
                .find(|l| {
                    !l.is_empty()
                        && *l != id
                        && *l != case.name
                        && !GO_FRAMING.iter().any(|p| l.starts_with(p))
                })
                .map(str::to_string)
        };
        // A generic message ("Failed", as gotestsum writes) says nothing:
        // then the body's first line is the headline.
        let generic = |m: &String| {
            ["failed", "failure", "error", "errored", "fail"]
                .contains(&m.to_ascii_lowercase().trim_end_matches(['.', ':']))
        };
        let headline = case
            .message
            .as_deref()
            .and_then(first_line)
            .filter(|m| !generic(m))
            .or_else(|| case.detail.as_deref().and_then(first_line))
            .or_else(|| case.message.as_deref().and_then(first_line))
            .unwrap_or_default();
        // A rerun plugin may keep nothing of an attempt it reran (pytest's
        // empty case before the rerun): say so rather than sign with "".
        let headline = if headline.is_empty() && failed && case.reruns > 0 {
            NO_MESSAGE.to_string()
        } else {
            headline
        };
        // A data race's report names the race better than any line of it.
        let race = failed.then(|| signature::race(&text)).flatten();
        let headline = race.as_deref().unwrap_or(headline.as_str());
        // Which pattern the failure matched: Some(None) for none.
        let matched =
            (failed && !patterns.is_empty()).then(|| signature::first_match(patterns, &text));
        let family = family_id(&id);
        index.insert(id.clone(), out.len());
        out.push(TestRecord {
            family: (family != id).then_some(family),
            id,
            outcome: first,
            passed_on_rerun: case.passed_on_rerun(),
            retries: case.reruns,
            signature: failed.then(|| {
                race.clone()
                    .unwrap_or_else(|| signature::normalise(headline))
            }),
            message: failed.then(|| headline.chars().take(MESSAGE_CHARS).collect()),
            signature_match: matched.map(|m| m.is_some()),
            signature_pattern: matched.flatten().map(|i| i as u32),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(xml: &str) -> Parsed {
        crate::results::junit::parse(xml.as_bytes()).unwrap()
    }

    #[test]
    fn a_body_that_starts_with_the_test_id_is_headed_by_its_next_line() {
        // PHPUnit 9's --log-junit: no message attribute, the id first.
        let p = parsed(
            r#"<testsuite><testcase name="testDay" class="ZoneTest" classname="ZoneTest"><failure type="PHPUnit\Framework\ExpectationFailedException">ZoneTest::testDay
invoice dated day 2, want 1
Failed asserting that two strings are identical.</failure></testcase></testsuite>"#,
        );
        let recs = records(&p, &[]);
        assert_eq!(
            recs[0].signature.as_deref(),
            Some("invoice dated day <n>, want <n>")
        );
    }

    #[test]
    fn a_failure_records_the_first_pattern_it_matches() {
        let p = parsed(
            r#"<testsuite><testcase classname="m" name="reset"><failure message="read ECONNRESET after ETIMEDOUT">x</failure></testcase>
               <testcase classname="m" name="timeout"><failure message="ETIMEDOUT">x</failure></testcase>
               <testcase classname="m" name="assert"><failure message="AssertionError">x</failure></testcase>
               <testcase classname="m" name="ok"/></testsuite>"#,
        );
        let patterns = [
            regex::Regex::new("ECONNRESET").unwrap(),
            regex::Regex::new("ETIMEDOUT").unwrap(),
        ];
        let recs = records(&p, &patterns);
        let got: Vec<(Option<bool>, Option<u32>)> = recs
            .iter()
            .map(|t| (t.signature_match, t.signature_pattern))
            .collect();
        // Both patterns match the first: it counts for the first given.
        assert_eq!(
            got,
            [
                (Some(true), Some(0)),
                (Some(true), Some(1)),
                (Some(false), None),
                (None, None)
            ]
        );
        assert_eq!(recs[1].matched_pattern(), Some(1));
        // Without patterns nothing is recorded.
        assert!(records(&p, &[]).iter().all(|t| t.signature_match.is_none()));
    }

    #[test]
    fn first_attempt_counts_and_repeats_are_retries() {
        let p = parsed(
            r#"<testsuite><testcase classname="m" name="t[1]"><failure message="boom 1">x</failure></testcase>
               <testcase classname="m" name="t[1]"/>
               <testcase classname="m" name="ok"/></testsuite>"#,
        );
        let recs = records(&p, &[]);
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[0].outcome, TestOutcome::Fail);
        assert!(recs[0].passed_on_rerun);
        assert_eq!(recs[0].retries, 1);
        assert_eq!(recs[0].family(), "m::t");
        assert_eq!(recs[0].signature.as_deref(), Some("boom <n>"));
    }

    #[test]
    fn gotestsum_framing_is_never_the_headline() {
        // gotestsum 1.8.2's JUnit of a failing test.
        let p = parsed(
            r#"<testsuite name="example.com/zone"><testcase classname="example.com/zone" name="TestZone"><failure message="Failed" type="">=== RUN   TestZone
=== PAUSE TestZone
=== CONT  TestZone
    zone_test.go:14: invoice dated day 2, want 1
--- FAIL: TestZone (0.00s)
</failure></testcase></testsuite>"#,
        );
        let recs = records(&p, &[]);
        assert_eq!(
            recs[0].signature.as_deref(),
            Some("zone_test.go:<n>: invoice dated day <n>, want <n>")
        );
    }

    #[test]
    fn a_generic_message_gives_way_to_the_body() {
        let p = parsed(
            r#"<testsuite><testcase classname="pkg" name="TestB"><failure message="Failed">    config_test.go:12: currency was never loaded
--- FAIL: TestB (0.00s)</failure></testcase></testsuite>"#,
        );
        let recs = records(&p, &[]);
        assert_eq!(
            recs[0].signature.as_deref(),
            Some("config_test.go:<n>: currency was never loaded")
        );
    }
}
