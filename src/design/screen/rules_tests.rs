//! The screen design's rules: the sequential rule's looks and decisions,
//! the ladders, the packing into invocations, the adaptive screen.

use super::rules::*;
use crate::catalog::recipe::IdFrom;
use crate::screen::{Decision, Rule, FINAL_SHARE, PLANNED_SHARE};

fn rule() -> Rule {
    Rule::new(5, 10, 0.95, 0.3)
}

/// Look `pair`, `stage` pairs into its stage; `taken`: the planned
/// look is behind it. The screen saw the cell fail more.
fn at(pair: u32, stage: u32, taken: bool) -> At {
    At {
        pair,
        stage_pairs: stage,
        planned_taken: taken,
        fails_more: true,
    }
}

#[test]
fn the_planned_look_is_where_a_complete_separation_first_decides() {
    // 7 candidates: 1 / C(10, 5) = 0.00397 ≤ 0.75 × 0.05 / 7; 4 pairs
    // (1 / 70) would not do even with all the error.
    let r = Rule::new(7, 15, 0.95, 0.3);
    assert_eq!((r.planned, r.planned_share), (5, PLANNED_SHARE));
    // One candidate: 4 pairs (1 / 70 ≤ 0.0375); 3 (1 / 20) would not.
    assert_eq!(Rule::new(1, 15, 0.95, 0.3).planned, 4);
    // More candidates, a later planned look.
    assert_eq!(Rule::new(100, 15, 0.95, 0.3).planned, 7);
    // A cap too small for any earlier look: the last look takes it all.
    let small = Rule::new(7, 3, 0.95, 0.3);
    assert_eq!((small.planned, small.planned_share), (3, 1.0));
    // Along any path the weights sum to at most 1: nothing before the
    // planned look, its share there, the final share at the last look, the
    // rest over the looks between.
    assert_eq!(r.final_share, FINAL_SHARE);
    let spent: f64 = (1..r.planned).map(|s| r.weight(s, s, false)).sum::<f64>()
        + r.weight(r.planned, r.planned, false)
        + (r.planned + 1..=r.looks)
            .map(|s| r.weight(s, s, true))
            .sum::<f64>();
    assert!((spent - 1.0).abs() < 1e-12, "{spent}");
    assert_eq!(r.weight(r.looks, r.looks, true), FINAL_SHARE);
    // A path that never takes its planned look (it climbed just before)
    // spends the planned share at the new stage's planned pair and the
    // final share at the last look: at most 1 again.
    let climbed: f64 = (1..=r.looks)
        .map(|s| {
            let stage = if s <= 3 { s } else { s - 3 };
            let taken = s > 3 + r.planned;
            r.weight(s, stage, taken)
        })
        .sum();
    assert!(climbed <= 1.0 + 1e-12, "{climbed}");
    // Its planned look the last look the cap allows: both shares, still 1.
    let late = Rule::new(7, r.planned + 3, 0.95, 0.3);
    let w = late.weight(late.looks, late.planned, false);
    assert!((w - (PLANNED_SHARE + FINAL_SHARE)).abs() < 1e-12, "{w}");
    // The small cap's only planned look is its last: it takes it all, and
    // no final share is left over.
    assert_eq!(small.final_share, 0.0);
    assert_eq!(small.weight(3, 3, false), 1.0);
    // A record written before the planned look: 1 / L each.
    let old = Rule {
        planned: 0,
        planned_share: 0.0,
        final_share: 0.0,
        ..r
    };
    assert!((old.weight(3, 3, false) - 1.0 / 15.0).abs() < 1e-15);
    // One written before the final share: the rest evenly after the plan.
    let even = Rule {
        final_share: 0.0,
        ..r
    };
    let w = 0.25 / f64::from(r.looks - r.planned);
    assert!((even.weight(r.looks, r.looks, true) - w).abs() < 1e-15);
}

#[test]
fn a_deterministic_difference_stops_at_its_planned_look() {
    let r = rule();
    assert!((r.boundary - 0.01).abs() < 1e-12);
    assert_eq!(r.planned, 5);
    // Before the planned look nothing is spent: 4 of 4 against 0 of 4
    // goes on.
    let look = decide(&r, at(4, 4, false), "alone", (4, 4), (0, 4), false);
    assert_eq!((look.decision, look.spent_p), (Decision::Continue, 1.0));
    // 5 of 5 against 0 of 5 at the planned look: p = 1 / 252, spent
    // p / 0.75 = 0.0053 ≤ 0.01.
    let look = decide(&r, at(5, 5, false), "alone", (5, 5), (0, 5), false);
    assert_eq!(look.decision, Decision::Differs);
    assert!(look.planned);
    assert!((look.spent_p - (1.0 / 252.0) / 0.75).abs() < 1e-12);
    // The same counts the other way round are no evidence for a
    // candidate the screen saw fail more in the cell...
    let look = decide(&r, at(5, 5, false), "alone", (0, 5), (5, 5), false);
    assert_eq!(look.decision, Decision::Continue);
    // ...and decide one the screen saw pass more in the cell.
    let healed = At {
        fails_more: false,
        ..at(5, 5, false)
    };
    let look = decide(&r, healed, "alone", (0, 5), (5, 5), false);
    assert_eq!(look.decision, Decision::Differs);
    // After the planned look each look but the last spends 0.05 / 4:
    // 7 of 7 (p = 1 / 3432, spent 0.023) goes on, 8 of 8 (1 / 12870,
    // spent 0.0062) differs.
    let look = decide(&r, at(7, 7, true), "alone", (7, 7), (0, 7), false);
    assert_eq!(look.decision, Decision::Continue);
    let look = decide(&r, at(8, 8, true), "alone", (8, 8), (0, 8), false);
    assert_eq!(look.decision, Decision::Differs);
    assert!((look.spent_p - (1.0 / 12870.0) / 0.0125).abs() < 1e-12);
}

#[test]
fn a_chance_flip_is_cleared_not_confirmed() {
    let r = rule();
    // 0 of 8 against 0 of 8: the bound 1-0.05^(1/8) = 0.312 is not below 0.3.
    assert_eq!(
        decide(&r, at(8, 8, true), "alone", (0, 8), (0, 8), false).decision,
        Decision::Continue
    );
    // 0 of 9: 0.283 < 0.3.
    assert_eq!(
        decide(&r, at(9, 9, true), "alone", (0, 9), (0, 9), false).decision,
        Decision::Cleared
    );
}

#[test]
fn a_test_that_never_fails_alone_climbs_after_three_pairs() {
    let r = rule();
    assert_eq!(
        decide(&r, at(2, 2, false), "alone", (0, 2), (0, 2), true).decision,
        Decision::Continue
    );
    assert_eq!(
        decide(&r, at(3, 3, false), "alone", (0, 3), (0, 3), true).decision,
        Decision::Climb
    );
    // Not when it failed alone, nor once climbed.
    assert_eq!(
        decide(&r, at(3, 3, false), "alone", (1, 3), (0, 3), true).decision,
        Decision::Continue
    );
    assert_eq!(
        decide(&r, at(6, 3, false), "neighbours", (0, 3), (0, 3), false).decision,
        Decision::Continue
    );
    // A climb starts a new stage whose planned look still spends its
    // share: 5 of 5 against 0 of 5 five pairs after the climb differs.
    let look = decide(&r, at(8, 5, false), "neighbours", (5, 5), (0, 5), false);
    assert_eq!(look.decision, Decision::Differs);
}

#[test]
fn a_baseline_that_changes_under_the_selection_climbs_before_any_verdict() {
    let r = rule();
    // The brittle test: passed at baseline in the screen, fails alone.
    let (look, why) = look_at(
        &r,
        at(1, 1, false),
        Level::Alone,
        (1, 1),
        (1, 1),
        (0, 1),
        true,
        true,
    );
    assert_eq!(look.decision, Decision::Climb);
    assert_eq!(
        why.as_deref(),
        Some("its baseline arm failed 1 of 1 where the screen's baseline failed 0 of 1")
    );
    // It failed every time at baseline in the screen and passes here.
    let (look, _) = look_at(
        &r,
        at(2, 2, false),
        Level::Alone,
        (2, 2),
        (1, 2),
        (3, 3),
        true,
        false,
    );
    assert_eq!(look.decision, Decision::Climb);
    // Reproduced: an ordinary look.
    let (look, why) = look_at(
        &r,
        at(8, 8, true),
        Level::Neighbours,
        (8, 8),
        (0, 8),
        (0, 1),
        true,
        true,
    );
    assert_eq!((look.decision, why), (Decision::Differs, None));
    // At the widest selection a broken baseline holds any verdict back,
    // and the look is no evidence for Holm either.
    let (look, why) = look_at(
        &r,
        at(7, 7, true),
        Level::Whole,
        (7, 7),
        (1, 7),
        (0, 1),
        false,
        false,
    );
    assert_eq!((look.decision, look.spent_p), (Decision::Continue, 1.0));
    assert!(look.p < 0.01, "{}", look.p);
    assert!(why.unwrap().ends_with("even with the whole command"));
    // A mixed baseline is compared by Fisher's test.
    assert!(baseline_reproduces((1, 2), (2, 4), 0.05).is_ok());
    assert!(baseline_reproduces((1, 10), (10, 10), 0.05).is_err());
}

#[test]
fn ladders_start_where_the_cell_kind_says() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("tests")).unwrap();
    std::fs::write(dir.path().join("tests/test_a.py"), "").unwrap();
    let levels = |kind| {
        ladder(
            IdFrom::Pytest,
            "tests.test_a::test_b",
            dir.path(),
            true,
            kind,
            None,
        )
        .into_iter()
        .map(|s| (s.level, s.id))
        .collect::<Vec<_>>()
    };
    let file = Some("tests/test_a.py".to_string());
    assert_eq!(
        levels(CellKind::Fixed),
        [
            (Level::Alone, Some("tests/test_a.py::test_b".into())),
            (Level::Neighbours, file.clone()),
            (Level::Whole, None)
        ]
    );
    assert_eq!(
        levels(CellKind::Concurrent),
        [(Level::Neighbours, file), (Level::Whole, None)]
    );
    assert_eq!(levels(CellKind::Shuffled), [(Level::Whole, None)]);
    assert!(start_reason(CellKind::Shuffled, Some(9), false)
        .unwrap()
        .contains("replays seed 9"));
    assert_eq!(start_reason(CellKind::Fixed, None, false), None);
}

#[test]
fn a_shuffle_candidate_replays_the_order_that_flipped_it_not_its_seed() {
    let dir = tempfile::tempdir().unwrap();
    let ids = |v: &[&str]| v.iter().map(|t| t.to_string()).collect::<Vec<_>>();
    let orders = FlipOrders {
        flip: ids(&["m1::x", "m2::p", "m1::y", "m2::v", "m2::q"]),
        baseline: ids(&["m1::x", "m1::y", "m2::v", "m2::p", "m2::q"]),
    };
    let got = ladder(
        IdFrom::Junit,
        "m2::v",
        dir.path(),
        true,
        CellKind::Shuffled,
        Some(&orders),
    );
    let levels: Vec<Level> = got.iter().map(|s| s.level).collect();
    assert_eq!(
        levels,
        [Level::OrderedFile, Level::OrderedPrefix, Level::Whole]
    );
    // Its file's predecessors in the flipping order, then it; the
    // baseline arm its predecessors in the baseline's run.
    let file = got[0].order.as_ref().unwrap();
    assert_eq!(file.cell, ids(&["m2::p", "m2::v"]));
    assert_eq!(file.baseline, ids(&["m2::v"]));
    let prefix = got[1].order.as_ref().unwrap();
    assert_eq!(prefix.cell, ids(&["m1::x", "m2::p", "m1::y", "m2::v"]));
    assert_eq!(prefix.baseline, ids(&["m1::x", "m1::y", "m2::v"]));
    // First in its file: the file cannot hold what flipped it.
    let first = ladder(
        IdFrom::Junit,
        "m1::y",
        dir.path(),
        true,
        CellKind::Shuffled,
        Some(&FlipOrders {
            flip: ids(&["m2::p", "m1::y"]),
            baseline: ids(&["m1::y", "m2::p"]),
        }),
    );
    let levels: Vec<Level> = first.iter().map(|s| s.level).collect();
    assert_eq!(levels, [Level::OrderedPrefix, Level::Whole]);
}

#[test]
fn candidates_that_do_not_interfere_share_an_invocation() {
    let e = |i, id: Option<&str>, seed| (i, id.map(String::from), seed);
    let got = batches(
        &[
            e(0, Some("a.py::t1"), None),
            e(1, Some("b.py::t2"), None),
            // Inside another candidate's file: never beside a test alone.
            e(2, Some("a.py"), None),
            e(3, Some("a.py"), None),
            e(4, None, Some(5)),
            e(5, None, Some(5)),
            e(6, None, Some(6)),
        ],
        true,
    );
    let members: Vec<Vec<usize>> = got.iter().map(|b| b.members.clone()).collect();
    assert_eq!(members, [vec![0, 1], vec![2, 3], vec![4, 5], vec![6]]);
    assert_eq!(got[0].ids, ["a.py::t1", "b.py::t2"]);
    assert_eq!(got[1].ids, ["a.py"]);
    assert_eq!(got[2].ids, Vec::<String>::new());
    // A recipe that selects one id per run: only equal selections share.
    let one = batches(
        &[
            e(0, Some("x"), None),
            e(1, Some("y"), None),
            e(2, Some("x"), None),
        ],
        false,
    );
    let members: Vec<Vec<usize>> = one.iter().map(|b| b.members.clone()).collect();
    assert_eq!(members, [vec![0, 2], vec![1]]);
}

#[test]
fn the_adaptive_screen_runs_again_only_where_one_run_cannot_tell() {
    assert_eq!(rescreen(false, 3), None);
    assert!(rescreen(false, 0).is_some());
    assert!(rescreen(true, 3).is_some());
}

#[test]
fn the_largest_raw_differences_are_confirmed_first() {
    let c = |cell: &str, test: &str, k: u64, bk: u64| crate::screen::Candidate {
        cell: cell.into(),
        test: test.into(),
        screen_cell: (k, 4),
        screen_baseline: (bk, 4),
        flip_seed: None,
        flip_run: None,
        partners: Vec::new(),
        contests: None,
    };
    let mut cands = vec![
        c("a", "t1", 1, 0),
        c("a", "t2", 4, 0),
        c("b", "t1", 0, 3),
        c("b", "t2", 4, 0),
    ];
    largest_first(&mut cands);
    let order: Vec<(&str, &str)> = (cands.iter())
        .map(|c| (c.cell.as_str(), c.test.as_str()))
        .collect();
    assert_eq!(order, [("a", "t2"), ("b", "t2"), ("b", "t1"), ("a", "t1")]);
}

#[test]
fn a_candidate_names_the_first_run_it_failed_in_even_in_a_later_round() {
    use crate::record::{fixture, TestOutcome, TestRecord};
    let with = |mut r: crate::record::RunRecord, seed: u64, fails: bool| {
        r.seed = seed;
        r.tests = vec![TestRecord {
            id: "t::v".into(),
            family: None,
            outcome: if fails {
                TestOutcome::Fail
            } else {
                TestOutcome::Pass
            },
            passed_on_rerun: false,
            retries: 0,
            signature: None,
            message: None,
            signature_match: None,
            signature_pattern: None,
        }];
        r
    };
    let runs = vec![
        with(fixture::run("s", 0, "baseline"), 1, false),
        with(fixture::run("s", 1, "orders"), 1, false),
        // A later round's runs: their own session.
        with(fixture::run("r", 0, "orders"), 5, false),
        with(fixture::run("r", 1, "orders"), 6, true),
        with(fixture::run("r", 2, "orders"), 7, true),
    ];
    let found = candidates(&runs, &["baseline".into(), "orders".into()]);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].screen_cell, (2, 4));
    assert_eq!(found[0].flip_seed, Some(6));
    assert_eq!(found[0].flip_run.as_deref(), Some(runs[3].id.as_str()));
}

#[test]
fn half_the_cell_runs_failing_is_decided_at_the_last_look_of_the_default_cap() {
    // Two candidates at the default cap: 15 looks, boundary 0.025.
    let looks = super::DEFAULT_CAP / 2;
    let r = Rule::new(2, looks, 0.95, 0.3);
    assert_eq!((r.looks, r.planned), (15, 4));
    // 7 of 14 against 0 of 14 a look before the cap: p = 0.0029, the
    // looks between spend 0.05 / 10 each: it goes on.
    let look = decide(&r, at(14, 14, true), "whole", (7, 14), (0, 14), false);
    assert_eq!(look.decision, Decision::Continue);
    // 7 of 15 against 0 of 15 at the cap: p = 0.0032, spent p / 0.2 =
    // 0.016 ≤ 0.025.
    let look = decide(&r, at(15, 15, true), "whole", (7, 15), (0, 15), false);
    assert_eq!(look.decision, Decision::Differs, "{look:?}");
    assert!((look.weight.unwrap() - FINAL_SHARE).abs() < 1e-12);
    // Spread evenly over the looks after the planned one (the rule before
    // the final share), the same counts were left undecided.
    let even = Rule {
        final_share: 0.0,
        ..r
    };
    let look = decide(&even, at(15, 15, true), "whole", (7, 15), (0, 15), false);
    assert_eq!(look.decision, Decision::Continue);
}

#[test]
fn the_runs_a_partial_difference_needs_are_those_its_last_look_decides_at() {
    for (m, rate) in [(2usize, 0.5), (3, 0.5), (9, 0.4), (1, 0.3)] {
        let boundary = 0.05 / m as f64;
        let n = crate::screen::runs_to_decide(rate, 0.0, boundary).unwrap() as u32;
        let last = |looks: u32| {
            let r = Rule::new(m, looks, 0.95, 0.3);
            let k = (rate * f64::from(looks)).round() as u64;
            let n = u64::from(looks);
            decide(&r, at(looks, looks, true), "whole", (k, n), (0, n), false).decision
        };
        assert_eq!(last(n), Decision::Differs, "{m} {rate}: {n}");
        assert_ne!(last(n - 1), Decision::Differs, "{m} {rate}: {n}");
    }
}

#[test]
fn under_no_difference_the_rule_says_differs_at_most_alpha_over_m_of_the_time() {
    use rand::{Rng, SeedableRng};
    // Simulated candidates whose two arms fail at the same rate, looked at
    // pair after pair up to the default cap's 15 looks: the share ever
    // called different stays within the boundary (Bonferroni over the
    // looks' weights), at a fixed seed.
    let r = Rule::new(1, 15, 0.95, 0.3);
    let trials = 2000;
    let null_share = |r: &Rule, q: f64| {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut differs = 0;
        for _ in 0..trials {
            let (mut kc, mut kb) = (0u64, 0u64);
            let mut planned_taken = false;
            for pair in 1..=r.looks {
                kc += u64::from(rng.gen_bool(q));
                kb += u64::from(rng.gen_bool(q));
                let n = u64::from(pair);
                let look = decide(
                    r,
                    At {
                        pair,
                        stage_pairs: pair,
                        planned_taken,
                        fails_more: true,
                    },
                    "whole",
                    (kc, n),
                    (kb, n),
                    false,
                );
                planned_taken |= look.planned;
                if look.decision == Decision::Differs {
                    differs += 1;
                    break;
                }
            }
        }
        f64::from(differs) / f64::from(trials)
    };
    for q in [0.1, 0.3, 0.5] {
        let share = null_share(&r, q);
        assert!(share <= r.boundary, "{q}: {share}");
    }
    // The check can fail: a rule that tests every look at the whole alpha
    // (no spending) says differs too often.
    let naive = Rule {
        looks: 15,
        planned: 0,
        boundary: 0.05 * 15.0,
        ..r
    };
    let share = null_share(&naive, 0.5);
    assert!(share > r.boundary, "{share}");
}
