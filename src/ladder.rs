//! The topology ladder's reasoning, pure: what counts as reproducing, how a
//! rung's runs (groups of processes started together) are counted, which
//! test record is the focused test, and what a rung's verdict is.
//! Running the rungs is `design::ladder`'s job; rendering is `report::ladder`'s.

use std::collections::BTreeMap;

use crate::record::{
    LadderRecord, Outcome, RunRecord, RungCount, RungResult, RungStatus, TestRecord,
};
use crate::stats;

/// What reproducing means in one ladder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Criterion {
    /// A failure whose output (or failing test's message) matches `--signature`.
    Signature(String),
    /// A failure of the focused test (`--test`); a run without per-test
    /// data counts by its exit code, and a report without the test
    /// measured nothing.
    FocusedTest(String),
    /// Any failing run.
    AnyFailure,
}

impl Criterion {
    /// The criterion `--signature` and `--test` ask for: the signature
    /// first, then the focused test, else any failure.
    pub fn from_flags(signature: Option<&str>, test: Option<&str>) -> Criterion {
        match (signature, test) {
            (Some(re), _) => Criterion::Signature(re.to_string()),
            (None, Some(id)) => Criterion::FocusedTest(id.to_string()),
            (None, None) => Criterion::AnyFailure,
        }
    }

    /// The criterion in words, for the report.
    pub fn describe(&self) -> String {
        match self {
            Criterion::Signature(re) => format!("a failure matching the signature /{re}/"),
            Criterion::FocusedTest(id) => format!("a failure of the focused test {id}"),
            Criterion::AnyFailure => "any failing run".into(),
        }
    }
}

/// Splits a test id into comparable words: path separators, `::`, dots,
/// spaces and file extensions of test files are not part of a name.
fn words(id: &str) -> Vec<&str> {
    id.split(['/', ':', '.', ' ', '\\', '#', '>'])
        .filter(|w| !w.is_empty())
        .filter(|w| !matches!(*w, "py" | "js" | "ts" | "mjs" | "cjs" | "rb" | "go" | "rs"))
        .collect()
}

fn is_subsequence(short: &[&str], long: &[&str]) -> bool {
    let mut it = long.iter();
    short.iter().all(|w| it.any(|l| l == w))
}

/// Whether a JUnit test id (`classname::name`) is the test the user named
/// in the runner's own terms (`tests/test_a.py::test_b`, `TestB`,
/// `describe title test title`): equal, or one's words are a subsequence of
/// the other's and both end in the same name.
pub fn is_focused(test_id: &str, focus: &str) -> bool {
    if test_id == focus {
        return true;
    }
    let (a, b) = (words(test_id), words(focus));
    match (a.last(), b.last()) {
        (Some(x), Some(y)) if x == y => is_subsequence(&a, &b) || is_subsequence(&b, &a),
        _ => false,
    }
}

/// The focused test's record in a run, if the run's report holds it.
pub fn focused<'a>(tests: &'a [TestRecord], focus: &str) -> Option<&'a TestRecord> {
    tests
        .iter()
        .find(|t| t.id == focus)
        .or_else(|| tests.iter().find(|t| is_focused(&t.id, focus)))
}

/// Whether one process reproduced: `None` when it measured nothing (not
/// applied, errored, timed out).
pub fn process_reproduced(run: &RunRecord, criterion: &Criterion) -> Option<bool> {
    if !matches!(run.outcome, Outcome::Pass | Outcome::Fail) {
        return None;
    }
    Some(match criterion {
        Criterion::Signature(_) => {
            run.signature_match == Some(true)
                || run.tests.iter().any(|t| t.signature_match == Some(true))
        }
        Criterion::FocusedTest(id) if !run.tests.is_empty() => {
            // A report without the focused test measured something else.
            return focused(&run.tests, id).map(TestRecord::failed);
        }
        Criterion::FocusedTest(_) | Criterion::AnyFailure => run.outcome == Outcome::Fail,
    })
}

/// The runs of one cell at one rung, counted by group (the processes
/// started together): a group reproduced when any of its processes did,
/// measured when any measured, and a timeout when one timed out and none
/// reproduced. Returns the count and the first reproducing process.
pub fn count_cell<'a>(
    runs: &'a [RunRecord],
    cell: &str,
    criterion: &Criterion,
    confidence: f64,
) -> (RungCount, Option<&'a RunRecord>) {
    #[derive(Default)]
    struct Group<'a> {
        measured: bool,
        reproduced: Option<&'a RunRecord>,
        timed_out: bool,
    }
    let mut groups: BTreeMap<usize, Group> = BTreeMap::new();
    for run in runs.iter().filter(|r| r.cell == cell) {
        let key = run.topology.as_ref().map_or(run.index, |t| t.group);
        let g = groups.entry(key).or_default();
        match process_reproduced(run, criterion) {
            Some(true) => {
                g.measured = true;
                g.reproduced.get_or_insert(run);
            }
            Some(false) => g.measured = true,
            None => g.timed_out |= run.outcome == Outcome::Timeout,
        }
    }
    let first = groups.values().find_map(|g| g.reproduced);
    let k = groups.values().filter(|g| g.reproduced.is_some()).count() as u64;
    let timeouts = groups
        .values()
        .filter(|g| g.reproduced.is_none() && g.timed_out)
        .count() as u64;
    let n = groups
        .values()
        .filter(|g| g.reproduced.is_some() || (g.measured && !g.timed_out))
        .count() as u64;
    let p = stats::proportion(k, n, confidence);
    (
        RungCount {
            n,
            k,
            low: p.low,
            high: p.high,
            timeouts,
        },
        first,
    )
}

/// The verdict of a rung that ran: reproduced when the target cell
/// reproduced at least once; not applied when its perturbation was not
/// proven; unmeasured when no run measured anything.
pub fn status(target: &RungCount, applied: bool) -> RungStatus {
    if !applied {
        RungStatus::NotApplied
    } else if target.k > 0 {
        RungStatus::Reproduced
    } else if target.n == 0 {
        RungStatus::Unmeasured
    } else {
        RungStatus::Clean
    }
}

/// The exit code of a ladder, by the one precedence
/// (`crate::stats::verdict`): interrupted, reproduced at some rung, a cell not
/// applied, nothing measured at any rung, every rung tried clean.
pub fn exit_code(ladder: &LadderRecord) -> i32 {
    use crate::stats::verdict::{Findings, Verdict};
    let has = |s: RungStatus| ladder.rungs.iter().any(|r| r.status == s);
    Verdict::of(Findings {
        interrupted: ladder.interrupted,
        differs: ladder.reproduced_at.is_some(),
        undecided: false,
        not_applied: has(RungStatus::NotApplied),
        measured: has(RungStatus::Clean),
    })
    .exit_code()
}

/// What the repro line of a rung's first reproduction cannot say by
/// itself: at a rung of several processes started together, the line starts
/// one process alone, and the failure was seen only beside the others.
/// `None` at a rung of one process.
pub fn reproduction_note(ladder: &LadderRecord, rung: &RungResult) -> Option<String> {
    if rung.processes < 2 {
        return None;
    }
    let alone: Vec<String> = ladder
        .rungs
        .iter()
        .filter(|r| r.rung < rung.rung && r.processes == 1)
        .filter(|r| r.status == RungStatus::Clean)
        .map(|r| r.rung.to_string())
        .collect();
    let lower = if alone.is_empty() {
        "no rung of one process was measured before it, so whether it also fails alone is not known"
            .to_string()
    } else {
        format!(
            "run alone it did not reproduce (rung{} {})",
            if alone.len() == 1 { "" } else { "s" },
            alone.join(", ")
        )
    };
    Some(format!(
        "reproduced beside other processes: this run was one of {p} processes started together at rung {r} ({topology}); the line above starts one process alone, and {lower}; to see it again, start {p} copies at once or re-run `flakelab ladder --from {r} --to {r}`",
        p = rung.processes,
        r = rung.rung,
        topology = rung.topology,
    ))
}

/// A rung that did not run, with why.
pub fn not_run(
    rung: &crate::catalog::topology::Rung,
    status: RungStatus,
    why: String,
) -> RungResult {
    RungResult {
        rung: rung.rung,
        name: rung.name.clone(),
        topology: rung.topology.clone(),
        shows: rung.shows.clone(),
        status,
        processes: 0,
        n: 0,
        k: 0,
        low: 0.0,
        high: 1.0,
        baseline: None,
        reason: Some(why),
        session: None,
        argv: Vec::new(),
        first_reproduction: None,
        confirmation: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{ProcessEnd, RunTopology, TestOutcome};

    #[test]
    fn focused_test_ids_match_across_runner_and_junit_spellings() {
        assert!(is_focused(
            "tests.test_zone::test_due",
            "tests/test_zone.py::test_due"
        ));
        assert!(is_focused("example.com/pkg::TestDue", "TestDue"));
        assert!(is_focused("tests::test_a", "tests::test_a"));
        assert!(is_focused(
            "suite title::suite title works",
            "suite title works"
        ));
        // Another test of the same file, or a test whose name merely ends alike.
        assert!(!is_focused(
            "tests.test_zone::test_other",
            "tests/test_zone.py::test_due"
        ));
        assert!(!is_focused(
            "tests.test_zone::test_due_2",
            "tests/test_zone.py::test_due"
        ));
        assert!(!is_focused(
            "tests.other::test_due",
            "tests/test_zone.py::test_due"
        ));
    }

    fn run(index: usize, cell: &str, outcome: Outcome, group: Option<usize>) -> RunRecord {
        let mut r = crate::record::fixture::run("s", index, cell);
        (r.duration_s, r.end, r.exit_code) = (0.1, ProcessEnd::NotStarted, None);
        r.repro = "true".into();
        r.outcome = outcome;
        r.topology = group.map(|g| RunTopology {
            group: g,
            copy: 0,
            working_copy: None,
        });
        r
    }

    #[test]
    fn a_group_reproduces_when_any_process_does_and_counts_once() {
        let runs = vec![
            run(0, "c", Outcome::Pass, Some(0)),
            run(1, "c", Outcome::Fail, Some(0)),
            run(2, "c", Outcome::Pass, Some(1)),
            run(3, "c", Outcome::Pass, Some(1)),
            run(4, "c", Outcome::Timeout, Some(2)),
            run(5, "c", Outcome::Pass, Some(2)),
            run(6, "baseline", Outcome::Fail, None),
        ];
        let (count, first) = count_cell(&runs, "c", &Criterion::AnyFailure, 0.95);
        assert_eq!((count.n, count.k, count.timeouts), (2, 1, 1));
        assert_eq!(first.unwrap().index, 1);
        let (base, _) = count_cell(&runs, "baseline", &Criterion::AnyFailure, 0.95);
        assert_eq!((base.n, base.k), (1, 1));
    }

    #[test]
    fn only_the_focused_test_failing_reproduces() {
        let mut r = run(0, "c", Outcome::Fail, None);
        let test = |id: &str, outcome| TestRecord {
            id: id.into(),
            family: None,
            outcome,
            passed_on_rerun: false,
            retries: 0,
            signature: None,
            message: None,
            signature_match: None,
            signature_pattern: None,
        };
        r.tests = vec![
            test("t::a", TestOutcome::Pass),
            test("t::b", TestOutcome::Fail),
        ];
        assert_eq!(
            process_reproduced(&r, &Criterion::FocusedTest("t::a".into())),
            Some(false)
        );
        assert_eq!(
            process_reproduced(&r, &Criterion::FocusedTest("t::b".into())),
            Some(true)
        );
        assert_eq!(
            process_reproduced(&r, &Criterion::FocusedTest("t::c".into())),
            None
        );
        // A signature criterion needs the match, not just a failure.
        assert_eq!(
            process_reproduced(&r, &Criterion::Signature("x".into())),
            Some(false)
        );
        r.signature_match = Some(true);
        assert_eq!(
            process_reproduced(&r, &Criterion::Signature("x".into())),
            Some(true)
        );
        r.outcome = Outcome::Error;
        assert_eq!(process_reproduced(&r, &Criterion::AnyFailure), None);
    }

    #[test]
    fn a_rung_is_never_clean_without_a_measurement() {
        let zero = RungCount {
            n: 0,
            k: 0,
            low: 0.0,
            high: 1.0,
            timeouts: 3,
        };
        assert_eq!(status(&zero, true), RungStatus::Unmeasured);
        assert_eq!(status(&RungCount { n: 5, ..zero }, true), RungStatus::Clean);
        assert_eq!(
            status(&RungCount { n: 5, k: 1, ..zero }, true),
            RungStatus::Reproduced
        );
        assert_eq!(
            status(&RungCount { n: 5, k: 1, ..zero }, false),
            RungStatus::NotApplied
        );
    }
}
