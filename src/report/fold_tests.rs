//! The fold against the reference build: on generated sessions (outcomes,
//! per-test data, signatures, timeouts with partial reports, not-applied
//! runs, CPU samples) read in any order, the fold's report equals the one
//! built from every run held at once and sorted; and the fold's state does
//! not grow with the runs.

use proptest::prelude::*;
use rand::seq::SliceRandom;
use rand::SeedableRng;

use super::snapshots_test::{run, session};
use super::{reference, Fold};
use crate::record::{Outcome, ProcessEnd, RunCpu, RunRecord, StressCpu, TestOutcome, TestRecord};
use crate::store::LoadStats;

const TESTS: [&str; 4] = ["t::a", "t::b", "t::c[1]", "t::c[2]"];

/// One generated run: outcome, per-test outcomes (None: not listed), and
/// a handful of choices that steer the record's other fields.
fn arb_run() -> impl Strategy<Value = (u8, [Option<u8>; 4], u8, bool, u8)> {
    (
        0u8..5,
        proptest::array::uniform4(proptest::option::of(0u8..4)),
        0u8..3,
        any::<bool>(),
        0u8..4,
    )
}

fn make(
    s: &crate::record::SessionRecord,
    index: usize,
    (outcome, tests, sig, flag, cpu): (u8, [Option<u8>; 4], u8, bool, u8),
) -> RunRecord {
    let outcome = [
        Outcome::Pass,
        Outcome::Fail,
        Outcome::Timeout,
        Outcome::Error,
        Outcome::NotApplied,
    ][outcome as usize];
    let cells = &s.plan.cells;
    let cell = cells[index % cells.len()].clone();
    let mut r = run(s, index, &cell, outcome);
    r.end = match outcome {
        Outcome::NotApplied => ProcessEnd::NotStarted,
        Outcome::Timeout => ProcessEnd::TimedOut { signal: 15 },
        _ => ProcessEnd::Exited { code: 1 },
    };
    r.started_at = format!(
        "2026-11-29T12:{:02}:{:02}.000Z",
        index / 60 % 60,
        index % 60
    );
    r.stragglers = u32::from(flag && index.is_multiple_of(3));
    r.reason = (outcome == Outcome::NotApplied && flag).then(|| format!("no helper {index}"));
    r.tests_missing =
        (r.tests.is_empty() || flag && index.is_multiple_of(5)).then(|| "no report".into());
    r.signature_match = (sig == 1).then_some(true);
    r.signature_pattern = (sig == 1 && flag).then_some(1);
    r.failure_signature = (sig > 0).then(|| format!("E{sig}"));
    r.tests = if outcome == Outcome::NotApplied || outcome == Outcome::Error {
        Vec::new()
    } else {
        TESTS
            .iter()
            .zip(tests)
            .filter_map(|(id, o)| {
                let o = o?;
                let outcome = [
                    TestOutcome::Pass,
                    TestOutcome::Fail,
                    TestOutcome::Error,
                    TestOutcome::Skip,
                ][o as usize];
                Some(TestRecord {
                    id: (*id).into(),
                    family: id.split('[').next().filter(|_| flag).map(String::from),
                    outcome,
                    passed_on_rerun: flag && o == 1,
                    retries: 0,
                    signature: matches!(o, 1 | 2).then(|| format!("S{}", (index + o as usize) % 3)),
                    message: None,
                    signature_match: (o == 1 && sig == 2).then_some(true),
                    signature_pattern: (o == 1 && sig == 2).then_some(index as u32 % 2),
                })
            })
            .collect()
    };
    r.cpu = (cpu > 0 && r.end != ProcessEnd::NotStarted).then(|| RunCpu {
        window_s: f64::from(cpu) * 0.4,
        subject_s: (cpu > 1).then(|| index as f64 / 10.0),
        stress: (cpu == 3).then(|| StressCpu {
            threads: index % 3,
            cpus: 2,
            cpu_s: index as f64 / 7.0,
            error: None,
        }),
    });
    r
}

fn fold_in(s: &crate::record::SessionRecord, runs: &[RunRecord]) -> super::Report {
    let mut fold = Fold::new(s);
    for r in runs {
        fold.add(&crate::store::RunView::of(r));
    }
    fold.finish(LoadStats::default())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn the_fold_in_any_order_equals_the_reference(
        specs in proptest::collection::vec(arb_run(), 0..80),
        patterns in 0usize..3,
        order in any::<u64>(),
    ) {
        let mut s = session();
        s.set_patterns(["E1", "E2"][..patterns].iter().map(|p| p.to_string()).collect());
        let mut runs: Vec<RunRecord> =
            specs.into_iter().enumerate().map(|(i, spec)| make(&s, i, spec)).collect();
        let want = reference::build(&s, &runs, LoadStats::default());
        runs.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(order));
        let got = fold_in(&s, &runs);
        prop_assert_eq!(super::json::render(&got), super::json::render(&want));
        prop_assert_eq!(got, want);
    }
}

#[test]
fn the_fold_holds_as_much_after_ten_thousand_runs_as_after_one_hundred() {
    let s = session();
    let runs = |n: usize| -> Vec<RunRecord> {
        (0..n)
            .map(|i| {
                make(
                    &s,
                    i,
                    (
                        (i % 3) as u8,
                        [Some(0), Some((i % 2) as u8), None, Some(3)],
                        (i % 3) as u8,
                        i % 2 == 0,
                        0,
                    ),
                )
            })
            .collect()
    };
    let entries = |n: usize| {
        let mut fold = Fold::new(&s);
        for r in &runs(n) {
            fold.add(&crate::store::RunView::of(r));
        }
        assert_eq!(fold.runs(), n as u64);
        fold.entries()
    };
    let small = entries(100);
    assert!(
        small > s.cells.len(),
        "the fold holds the cells and their tests"
    );
    assert_eq!(entries(10_000), small);
}

#[test]
fn the_snapshot_fixture_read_back_from_a_store_in_any_order_renders_the_same_json() {
    // The fixture the JSON snapshot holds, built the former way.
    let s = session();
    let runs: Vec<RunRecord> = s
        .plan
        .iter()
        .map(|spec| {
            let cell = s.plan.cells[spec.cell].as_str();
            let outcome = match cell {
                "baseline" => Outcome::Pass,
                "tz=Asia/Kathmandu" => Outcome::Fail,
                "netns" => Outcome::NotApplied,
                _ => Outcome::Timeout,
            };
            run(&s, spec.index, cell, outcome)
        })
        .collect();
    let want = super::json::render(&reference::build(&s, &runs, LoadStats::default()));
    // Written in a shuffled order, then folded one run at a time.
    let dir = tempfile::tempdir().unwrap();
    let store = crate::store::Store::open(dir.path()).unwrap();
    store.append_session(&s).unwrap();
    let mut shuffled = runs.clone();
    shuffled.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(11));
    for r in &shuffled {
        store.append_run(r).unwrap();
    }
    let mut fold = Fold::new(&s);
    let load = store
        .each_run(&s.id, |r| {
            fold.add(&crate::store::RunView::of(&r));
            Ok(())
        })
        .unwrap();
    assert_eq!(fold.runs(), runs.len() as u64);
    assert_eq!(super::json::render(&fold.finish(load)), want);
}
