//! The phpunit recipe end to end with the real runner (Debian's `phpunit`,
//! PHPUnit 9.6) on the fixture `tests/fixtures/phpunit-project`: an
//! order-dependent pair in `ConfigTest` (`testFormatsPrice` reads the static
//! state `testLoadsCurrency` sets) and a zone-dependent test in `ZoneTest`
//! (PHP ignores TZ; the fixture's bootstrap honours it, as applications do).
//! PHPUnit has no workers (ParaTest is a separate runner): that cell is
//! refused with the recipe's reason.

use super::runner_kit::{self, KIRITIMATI};
use super::{capable, cell, sh_ok, Lab};

const PAIR: &str = "ConfigTest::testFormatsPrice";
const ZONE: &str = "ZoneTest::testInvoiceDayIsTheUtcDay";

fn phpunit_lab() -> Option<Lab> {
    if !capable("phpunit (Debian phpunit)", sh_ok("phpunit --version")) {
        return None;
    }
    let lab = Lab::new();
    super::copy_fixture(&lab, "phpunit-project");
    Some(lab)
}

/// One session: shuffle (its seed read back from `Random Seed:`) flips the
/// pair, Kiritimati flips exactly the zone test, per-test rows from
/// `--log-junit`. `--seed 7` makes both shuffle runs put the pair's reader
/// first (the seeds are derived from it).
#[test]
fn phpunit_shuffle_finds_the_pair_and_the_zone_test_differs_alone() {
    let Some(lab) = phpunit_lab() else {
        return;
    };
    let (_, report) = lab.run_json(&[
        "-n", "2", "--seed", "7", "-p", "shuffle", "-p", KIRITIMATI, "--", "phpunit",
    ]);
    assert_eq!(report["runner"], "phpunit", "{report}");
    runner_kit::only_the_zone_test_differs(&report, 2, ZONE, 5, true);
    let shuffle = cell(&report, "shuffle");
    assert_eq!(
        shuffle["n"].as_u64(),
        Some(2),
        "every seed read back: {shuffle}"
    );
    assert_eq!(
        runner_kit::failing(&report, "shuffle"),
        (vec![PAIR.to_string()], 5)
    );
    let pair = runner_kit::test_row(&report, "shuffle", PAIR);
    assert_eq!(pair["k"].as_u64(), Some(2), "{pair}");
    assert!(
        pair["signatures"]
            .to_string()
            .contains("currency was never loaded"),
        "{pair}"
    );
    let runs = lab.runs();
    for r in runner_kit::runs_of(&runs, "shuffle") {
        let argv = super::run_argv(r);
        let seed = format!("--random-order-seed={}", r["seed"]);
        assert!(
            argv.contains(&"--order-by=random".into()) && argv.contains(&seed),
            "{argv:?}"
        );
        assert!(argv.contains(&"--log-junit".into()), "{argv:?}");
    }
    for r in runner_kit::runs_of(&runs, "baseline") {
        assert!(
            super::run_argv(r).ends_with(&["--order-by=default".into()]),
            "{r}"
        );
    }
    // A failing seed's repro line, run in a plain shell, fails again (1).
    let failing = runner_kit::runs_of(&runs, "shuffle")[0];
    assert_eq!(runner_kit::replay(failing), Some(1), "{}", failing["repro"]);
}

/// `--filter 'Class::method$'` runs the one test (PHPUnit has no workers:
/// that cell is refused before anything runs).
#[test]
fn phpunit_selects_one_test_and_refuses_workers() {
    let Some(lab) = phpunit_lab() else {
        return;
    };
    let argv = runner_kit::selected_alone(&lab, ZONE, ZONE, &["phpunit"]);
    assert!(
        argv.starts_with(&["phpunit".into(), "--filter".into(), format!("{ZONE}$")]),
        "{argv:?}"
    );
    let said = runner_kit::refused(
        &lab,
        "workers=2x",
        &["phpunit"],
        "workers: PHPUnit has no parallel workers",
    );
    // The runner's limit, in the recipe's words: no `--runner` hint.
    assert!(
        said.contains("cannot set workers: PHPUnit has no parallel workers")
            && said.contains("leave the workers cell out for this runner")
            && !said.contains("--runner"),
        "{said}"
    );
}

/// Exit 1 is "tests failed", an unknown option and a missing file alike;
/// the output tells them apart. `No tests executed!` exits 0.
#[test]
fn phpunit_usage_errors_and_empty_runs_are_errors() {
    let Some(lab) = phpunit_lab() else {
        return;
    };
    for (command, want) in [
        (
            &["phpunit", "--no-such-flag"][..],
            "could not run the tests (exit 1): Unknown option \"--no-such-flag\"",
        ),
        (
            &["phpunit", "tests/NoSuchTest.php"][..],
            "could not run the tests (exit 1): Cannot open file",
        ),
        (
            &["phpunit", "--filter", "nothing_matches_this$"][..],
            "ran no tests (exit 0): No tests executed!",
        ),
    ] {
        let reason = runner_kit::errored(&lab, command);
        assert!(reason.contains(want), "{command:?}: {reason}");
    }
}
