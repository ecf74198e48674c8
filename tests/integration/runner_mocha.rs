//! The mocha recipe end to end with the real runner (npm `mocha`, pinned in
//! `tests/fixtures/mocha-project/package.json`, installed once into
//! `$CARGO_TARGET_TMPDIR` as for jest) on its fixture: a shared-resource
//! collision between `test/orders.spec.js` and `test/stock.spec.js` (the
//! same lock file; the rendezvous in `shared-db.js` reads `--jobs` from
//! mocha's command line) and a zone-dependent test. Per-test rows come from
//! mocha's built-in xunit reporter. Mocha has no random order: the shuffle
//! cell is refused with the recipe's reason.

use super::runner_kit;
use super::Lab;

const ZONE: &str = "invoice::is dated on the UTC day";
const COMMAND: &[&str] = &["npx", "mocha"];

fn mocha_lab() -> Option<Lab> {
    super::runner_node::npm_lab("mocha-project", "mocha 12.0.3 (npm install)")
}

/// One session: `--parallel --jobs=2` collides the two files in every run
/// (exactly one fails: proof that two worker processes ran them at once),
/// and Kiritimati flips exactly the zone test.
#[test]
fn mocha_workers_collide_and_the_zone_test_differs_alone() {
    let Some(lab) = mocha_lab() else {
        return;
    };
    // Mocha's exit code is its number of failures: 1 here.
    runner_kit::workers_collide_and_the_zone_test_differs(
        &lab,
        &runner_kit::Collision {
            runner: "mocha",
            command: COMMAND,
            zone: (ZONE, 5),
            workers_argv: &["--parallel", "--jobs=2"],
            pair: ["orders::totals an order", "stock::counts the stock"],
            replay_exit: 1,
        },
    );
}

/// `--grep` on the full title runs one test; mocha has no random order.
#[test]
fn mocha_selects_one_test_and_refuses_shuffle() {
    let Some(lab) = mocha_lab() else {
        return;
    };
    let argv = runner_kit::selected_alone(&lab, "invoice is dated on the UTC day", ZONE, COMMAND);
    assert!(
        argv.windows(2)
            .any(|w| w == ["--grep", "(^| )invoice is dated on the UTC day$"]),
        "{argv:?}"
    );
    runner_kit::refused(
        &lab,
        "shuffle",
        COMMAND,
        "shuffle:  not supported: mocha has no random order",
    );
}

/// Mocha ignores unknown options (the tests run, exit 0), so there is no
/// usage error to record. `No test files found` exits 1, mocha's code for
/// one failed test; a --grep that matches nothing exits 0 and, under the
/// xunit reporter, prints nothing: its report holds no test case.
#[test]
fn mocha_missing_files_and_empty_runs_are_errors() {
    let Some(lab) = mocha_lab() else {
        return;
    };
    for (command, want) in [
        (
            &["npx", "mocha", "no-such-dir/"][..],
            "could not run the tests (exit 1): Error: No test files found",
        ),
        (
            &["npx", "mocha", "--grep", "^nothing matches this$"][..],
            "ran no tests (exit 0)",
        ),
    ] {
        let reason = runner_kit::errored(&lab, command);
        assert!(reason.contains(want), "{command:?}: {reason}");
    }
}
