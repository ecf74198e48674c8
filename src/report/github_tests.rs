//! Snapshots of the GitHub step summary and annotations on the renderers'
//! fixed session, and the summary's size on a 20,000-test session.

use super::github::{annotations, summary, PlotLink};
use super::snapshots_test::{run, session};
use crate::record::{Outcome, TestOutcome};
use crate::store::LoadStats;

fn report() -> super::Report {
    let mut report = super::snapshots_test::report();
    // A test id that names its file, as pytest's do.
    for c in &mut report.cells {
        for t in &mut c.tests {
            t.id = format!("tests/{}", t.id.replacen("::", ".py::", 1));
        }
    }
    report
}

fn link() -> PlotLink {
    PlotLink {
        path: "flakelab-report/20261129-120000-abcd-forest.svg".into(),
        url: Some("https://forge.example/o/r/actions/runs/1#artifacts".into()),
    }
}

#[test]
fn github_summary() {
    insta::assert_snapshot!(summary(&report(), Some(&link())));
}

#[test]
fn github_annotations() {
    insta::assert_snapshot!(annotations(&report()));
}

/// 20,000 tests, half of which fail in the perturbed cell: the summary
/// lists the largest effects and counts the rest, far under GitHub's 1 MiB.
#[test]
fn the_summary_of_a_20000_test_session_stays_under_a_mebibyte() {
    let s = session();
    let mut runs = Vec::new();
    for spec in s.plan.iter() {
        let cell = s.plan.cells[spec.cell].as_str();
        let outcome = match cell {
            "baseline" => Outcome::Pass,
            "tz=Asia/Kathmandu" => Outcome::Fail,
            _ => continue,
        };
        let mut r = run(&s, spec.index, cell, outcome);
        let template = r.tests[0].clone();
        r.tests = (0..20_000)
            .map(|i| {
                let mut t = template.clone();
                t.id = format!(
                    "tests/test_mod{}.py::test_case_with_a_long_name_{i}",
                    i % 97
                );
                t.outcome = if outcome == Outcome::Fail && i % 2 == 0 {
                    TestOutcome::Fail
                } else {
                    TestOutcome::Pass
                };
                t.signature = (t.outcome == TestOutcome::Fail).then(|| "AssertionError".into());
                t
            })
            .collect();
        runs.push(r);
    }
    let mut report = super::build(&s, &runs, LoadStats::default());
    // With 6 runs a cell, Holm over 20,000 tests leaves none differing: mark
    // the failing half as differing, the worst case for the summary's size.
    for c in report.cells.iter_mut().filter(|c| c.name != "baseline") {
        for t in c.tests.iter_mut().filter(|t| t.k > 0) {
            t.vs_baseline = Some(super::VsBaseline {
                fisher_p: 0.002,
                adjusted_p: 0.002,
                differs: true,
                effect: None,
                undecided: None,
            });
        }
    }
    let differing: usize = report
        .cells
        .iter()
        .map(|c| c.tests.iter().filter(|t| t.differs()).count())
        .sum();
    assert_eq!(differing, 10_000);
    let text = summary(&report, Some(&link()));
    assert!(text.len() < 64 * 1024, "{} bytes", text.len());
    assert!(text.contains("…and 9970 more"), "{text}");
    let notes = annotations(&report);
    assert_eq!(notes.lines().count(), super::github::MAX_ANNOTATIONS + 1);
    assert!(notes
        .lines()
        .last()
        .unwrap()
        .starts_with("::notice title=flakelab::"));
}
