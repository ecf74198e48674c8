//! The ctest recipe end to end with the real runner (Debian's `cmake`,
//! CTest 3.25) on the fixture `tests/fixtures/ctest-project`: shell tests
//! (no compiler), a shared-resource collision between `db_orders` and
//! `db_stock` (the same lock; a rendezvous in `shared-db.sh` makes two
//! tests run at once collide every time, one at a time never) and a
//! zone-dependent test. CTest runs every test in its own process and its
//! `--schedule-random` has no seed: that cell is refused.

use super::runner_kit;
use super::{capable, sh_ok, Lab};

const ZONE: &str = "invoice_day_is_the_utc_day::invoice_day_is_the_utc_day";
const COMMAND: &[&str] = &["ctest", "--test-dir", "build"];

/// The fixture, configured into `build/` (cmake, no compiler).
fn ctest_lab() -> Option<Lab> {
    if !capable(
        "ctest and cmake >= 3.21 (Debian cmake)",
        sh_ok("ctest --version && cmake --version"),
    ) {
        return None;
    }
    let lab = Lab::new();
    super::copy_fixture(&lab, "ctest-project");
    let out = std::process::Command::new("cmake")
        .args(["-S", ".", "-B", "build"])
        .current_dir(lab.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    Some(lab)
}

/// One session: `--parallel 2` collides the two database tests in every
/// run (exactly one of them fails: proof that two tests ran at once), and
/// Kiritimati flips exactly the zone test; per-test rows from
/// `--output-junit`. CTest's JUnit failure is `<failure message=""/>` with
/// the test's output in the testcase's `<system-out>`: the signature comes
/// from that output.
#[test]
fn ctest_workers_collide_and_the_zone_test_differs_alone() {
    let Some(lab) = ctest_lab() else {
        return;
    };
    runner_kit::workers_collide_and_the_zone_test_differs(
        &lab,
        &runner_kit::Collision {
            runner: "ctest",
            command: COMMAND,
            zone: (ZONE, 5),
            workers_argv: &["--parallel", "2"],
            pair: ["db_orders::db_orders", "db_stock::db_stock"],
            replay_exit: 8,
        },
    );
}

/// `-R '^name$'` runs one test; `--schedule-random` is refused: it takes no
/// seed and prints none, even with -V.
#[test]
fn ctest_selects_one_test_and_refuses_shuffle() {
    let Some(lab) = ctest_lab() else {
        return;
    };
    let argv = runner_kit::selected_alone(&lab, "invoice_day_is_the_utc_day", ZONE, COMMAND);
    assert!(
        argv.windows(2)
            .any(|w| w == ["-R", "^invoice_day_is_the_utc_day$"]),
        "{argv:?}"
    );
    runner_kit::refused(
        &lab,
        "shuffle",
        COMMAND,
        "shuffle:  not supported: --schedule-random has no seed",
    );
}

/// A test whose name holds regex metacharacters selects itself, not the
/// test its name matches as a pattern: `-R` gets the name escaped.
#[test]
fn ctest_selects_a_test_named_like_a_pattern_exactly() {
    let Some(lab) = ctest_lab() else {
        return;
    };
    std::fs::create_dir_all(lab.path().join("pattern")).unwrap();
    std::fs::write(
        lab.path().join("pattern/CMakeLists.txt"),
        "cmake_minimum_required(VERSION 3.21)\nproject(pattern NONE)\nenable_testing()\n\
         add_test(NAME \"tot(EUR)[x].y\" COMMAND false)\nadd_test(NAME totEURxzy COMMAND false)\n",
    )
    .unwrap();
    let out = std::process::Command::new("cmake")
        .args(["-S", "pattern", "-B", "pattern/build"])
        .current_dir(lab.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let json = runner_kit::ladder_json(
        &lab,
        &[
            "--to",
            "1",
            "-n",
            "1",
            "--test",
            "tot(EUR)[x].y",
            "--",
            "ctest",
            "--test-dir",
            "pattern/build",
        ],
    );
    assert_eq!(json["reproduced_at"], 1, "{json}");
    for run in lab.runs() {
        let ran: Vec<&str> = run["tests"]
            .as_array()
            .unwrap_or_else(|| panic!("{run}"))
            .iter()
            .map(|t| t["id"].as_str().unwrap())
            .collect();
        assert_eq!(ran, ["tot(EUR)[x].y::tot(EUR)[x].y"], "{run}");
        let argv = super::run_argv(&run);
        assert!(
            argv.windows(2)
                .any(|w| w == ["-R", r"^tot\(EUR\)\[x\]\.y$"]),
            "{argv:?}"
        );
    }
}

/// CTest ignores unknown options (they run the tests, exit 0): its usage
/// error is a test directory that does not exist (exit 1). No tests is
/// exit 0, or 8 (the failed code) with `--no-tests=error`.
#[test]
fn ctest_usage_errors_and_empty_runs_are_errors() {
    let Some(lab) = ctest_lab() else {
        return;
    };
    for (command, want) in [
        (
            &["ctest", "--test-dir", "no-such-dir"][..],
            "could not run the tests (exit 1): Failed to change working directory",
        ),
        (
            &["ctest", "--test-dir", "build", "-R", "^nothing$"][..],
            "ran no tests (exit 0): No tests were found!!!",
        ),
        (
            &[
                "ctest",
                "--test-dir",
                "build",
                "-R",
                "^nothing$",
                "--no-tests=error",
            ][..],
            "could not run the tests (exit 8): No tests were found!!!",
        ),
    ] {
        let reason = runner_kit::errored(&lab, command);
        assert!(reason.contains(want), "{command:?}: {reason}");
    }
}
