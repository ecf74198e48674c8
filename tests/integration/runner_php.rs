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

/// `phpunit $(flakelab quarantine --format phpunit) …` on the PHPUnit that
/// is installed (Debian's 9.6 has no `--exclude-filter`): a history in which
/// `testFormatsPrice` passed and failed on one commit quarantines exactly
/// it, and PHPUnit runs every other test of the fixture.
#[test]
fn the_quarantine_list_runs_every_test_but_the_proven_one_on_the_installed_phpunit() {
    let Some(lab) = phpunit_lab() else {
        return;
    };
    let case = |class: &str, name: &str, body: &str| {
        format!(
            "<testcase name=\"{name}\" class=\"{class}\" classname=\"{class}\">{body}</testcase>"
        )
    };
    for (run, failure) in [
        ("r1", ""),
        (
            "r2",
            "<failure>ConfigTest::testFormatsPrice\nboom</failure>",
        ),
    ] {
        let xml = format!(
            "<testsuites><testsuite name=\"all\">{}{}{}</testsuite></testsuites>",
            case("ConfigTest", "testLoadsCurrency", ""),
            case("ConfigTest", "testFormatsPrice", failure),
            case("ZoneTest", "testTotals", ""),
        );
        let path = lab.path().join(format!("{run}.xml"));
        std::fs::write(&path, xml).unwrap();
        let out = lab.run(&[
            "ingest",
            "--no-detect",
            "--commit",
            "c1",
            "--run-id",
            run,
            &format!("{run}.xml"),
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = lab.run(&["quarantine", "--format", "phpunit"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let args = String::from_utf8(out.stdout).unwrap();
    let version = std::process::Command::new("phpunit")
        .arg("--version")
        .output()
        .unwrap();
    let major: u32 = String::from_utf8_lossy(&version.stdout)
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.split('.').next()?.parse().ok())
        .unwrap();
    let want = if major >= 11 {
        "--exclude-filter="
    } else {
        "--filter="
    };
    assert!(args.starts_with(want), "{args}");
    // As a shell passes `$(…)`: one word.
    let words: Vec<&str> = args.split_whitespace().collect();
    assert_eq!(words.len(), 1, "{args}");
    let run = std::process::Command::new("phpunit")
        .args(&words)
        .args(["--log-junit", "out.xml"])
        .current_dir(lab.path())
        .output()
        .unwrap();
    let report = std::fs::read(lab.path().join("out.xml"))
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&run.stdout)));
    let mut ran: Vec<String> = flakelab::results::junit::parse(&report[..])
        .unwrap()
        .cases
        .iter()
        .map(|c| format!("{}::{}", c.classname, c.name))
        .collect();
    ran.sort();
    assert_eq!(
        ran,
        [
            "ConfigTest::testLoadsCurrency",
            "ConfigTest::testRounds",
            "ZoneTest::testInvoiceDayIsTheUtcDay",
            "ZoneTest::testTotals",
        ],
        "{}",
        String::from_utf8_lossy(&run.stdout)
    );
}
