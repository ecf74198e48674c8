//! pytest-rerunfailures' attempts, folded into one case per test.
//!
//! Since 16.6.1 the plugin makes pytest's JUnit write one `<testcase>` per
//! attempt, and pytest writes nothing into an attempt the plugin reran (its
//! report's outcome, `rerun`, is none pytest's JUnit knows): a test that
//! failed, then passed on its rerun, is two cases of one id, the first
//! empty. Read as they stand, the empty one is a pass and the failure is
//! gone. The plugin reruns only an attempt that failed, so in a pytest
//! suite every attempt of an id but the last failed: the fold gives the
//! test one case whose first attempt failed, whose outcome is the last
//! attempt's and whose reruns are the attempts after the first. (The plugin
//! before 16.6.1 kept only the last attempt, which leaves nothing to read;
//! a `<flakyFailure>`/`<rerunFailure>` inside the case, as Surefire and
//! nextest write, is read by the case itself.)
//!
//! Only suites named `pytest` (pytest's `junit_suite_name` default) are
//! folded: elsewhere a repeated case is a repetition (`go test -count=3`
//! through gotestsum), each attempt what it says.

use std::collections::HashMap;

use super::{Case, CaseOutcome};

/// The suite name pytest writes.
const PYTEST_SUITE: &str = "pytest";

/// `cases` with each pytest test's attempts folded into its first case (in
/// the first attempt's place); every other case as it is.
pub fn fold_reruns(cases: &[Case]) -> Vec<Case> {
    let mut out: Vec<Case> = Vec::with_capacity(cases.len());
    let mut index: HashMap<String, usize> = HashMap::new();
    // Attempts seen of each folded test (its first included).
    let mut attempts: Vec<u32> = Vec::new();
    for case in cases {
        if case.suite != PYTEST_SUITE {
            out.push(case.clone());
            attempts.push(1);
            continue;
        }
        let id = case.id();
        let Some(&i) = index.get(&id) else {
            index.insert(id, out.len());
            out.push(case.clone());
            attempts.push(1);
            continue;
        };
        let folded = &mut out[i];
        // Every attempt before this one was rerun: it failed, whether or
        // not its case says so (an empty case is an attempt the plugin
        // reran). The first attempt keeps what its case holds.
        if attempts[i] == 1 && !failed(folded.first_attempt) {
            folded.first_attempt = CaseOutcome::Failed;
        }
        attempts[i] += 1;
        folded.reruns = folded.reruns.saturating_add(case.reruns).saturating_add(1);
        folded.outcome = case.outcome;
        // The first words the test's attempts hold of a failure.
        if folded.message.is_none() && folded.detail.is_none() {
            folded.message.clone_from(&case.message);
            folded.detail.clone_from(&case.detail);
        }
        folded.time_s = match (folded.time_s, case.time_s) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        if folded.file.is_none() {
            folded.file.clone_from(&case.file);
            folded.line = case.line;
        }
    }
    out
}

fn failed(o: CaseOutcome) -> bool {
    matches!(o, CaseOutcome::Failed | CaseOutcome::Errored)
}

#[cfg(test)]
mod tests {
    use super::*;
    use CaseOutcome::{Errored, Failed, Passed};

    fn read(xml: &str) -> Vec<Case> {
        fold_reruns(&crate::results::junit::parse(xml.as_bytes()).unwrap().cases)
    }

    #[test]
    fn an_empty_attempt_before_another_failed_and_the_last_is_the_outcome() {
        // pytest 9.2 with pytest-rerunfailures 16.7, `--reruns 2`.
        let cs = read(
            r#"<testsuites name="pytest tests"><testsuite name="pytest">
            <testcase classname="test_x" name="test_flaky" time="0.001" />
            <testcase classname="test_x" name="test_flaky" time="0.002" />
            <testcase classname="test_x" name="test_ok" time="0.000" />
            <testcase classname="test_x" name="test_always" />
            <testcase classname="test_x" name="test_always" />
            <testcase classname="test_x" name="test_always"><failure message="AssertionError: always">body</failure></testcase>
            </testsuite></testsuites>"#,
        );
        let got: Vec<(String, CaseOutcome, CaseOutcome, u32)> = cs
            .iter()
            .map(|c| (c.name.clone(), c.first_attempt, c.outcome, c.reruns))
            .collect();
        assert_eq!(
            got,
            [
                ("test_flaky".to_string(), Failed, Passed, 1),
                ("test_ok".to_string(), Passed, Passed, 0),
                ("test_always".to_string(), Failed, Failed, 2),
            ]
        );
        assert!(cs[0].passed_on_rerun());
        assert_eq!(cs[0].message, None);
        assert_eq!(cs[2].message.as_deref(), Some("AssertionError: always"));
        assert_eq!(cs[0].time_s, Some(0.003));
    }

    #[test]
    fn a_first_attempt_that_says_how_it_failed_keeps_it() {
        let cs = read(
            r#"<testsuite name="pytest"><testcase classname="m" name="t"><error message="setup broke"/></testcase>
            <testcase classname="m" name="t"/></testsuite>"#,
        );
        assert_eq!(cs.len(), 1);
        assert_eq!((cs[0].first_attempt, cs[0].outcome), (Errored, Passed));
        assert_eq!(cs[0].message.as_deref(), Some("setup broke"));
    }

    #[test]
    fn repetitions_outside_pytest_stay_cases() {
        // gotestsum's JUnit of `go test -count=2`.
        let cs = read(
            r#"<testsuites><testsuite name="example.com/m"><testcase classname="example.com/m" name="TestA"/>
            <testcase classname="example.com/m" name="TestA"/></testsuite></testsuites>"#,
        );
        assert_eq!(cs.len(), 2);
        assert!(cs.iter().all(|c| c.first_attempt == Passed));
    }
}
