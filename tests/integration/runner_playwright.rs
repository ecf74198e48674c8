//! The playwright recipe end to end with the real runner (npm
//! `@playwright/test`, pinned in `tests/fixtures/playwright-project`,
//! installed once into `$CARGO_TARGET_TMPDIR` as for jest; no browser is
//! downloaded: the fixture's config drives the host's `/usr/bin/chromium`
//! through `executablePath`). The fixture plants an order-dependent pair
//! across files (`config-b` reads what `config-a` leaves in the worker),
//! a shared-resource collision between `orders` and `stock` (the rendezvous
//! in `shared-db.js` reads `--workers` from playwright's command line) and
//! a zone-dependent test that runs in the browser.

use super::runner_kit::{self, KIRITIMATI};
use super::{capable, cell, sh_ok, Lab};

const PAIR: &str = "config-b.spec.js::formats a price";
const ZONE: &str = "zone.spec.js::invoice is dated on the UTC day";
const COMMAND: &[&str] = &["npx", "playwright", "test"];

fn playwright_lab() -> Option<Lab> {
    if !capable(
        "Chromium at /usr/bin/chromium (Debian chromium)",
        sh_ok("test -x /usr/bin/chromium"),
    ) {
        return None;
    }
    super::runner_node::npm_lab(
        "playwright-project",
        "@playwright/test 1.65.1 (npm install)",
    )
}

/// One session: shuffle (seed read back from the header) flips the pair,
/// `--workers=2` collides the two database files in every run (the header
/// `using 2 workers` is the recipe's proof), Kiritimati flips exactly the
/// zone test. `--seed 2` makes both shuffle runs schedule `config-b` first
/// (the runs' seeds derive from it).
#[test]
fn playwright_shuffle_workers_and_zone_in_one_session() {
    let Some(lab) = playwright_lab() else {
        return;
    };
    let mut args = vec![
        "-n",
        "2",
        "--seed",
        "2",
        "-p",
        "shuffle",
        "-p",
        "workers=2x",
        "-p",
        KIRITIMATI,
        "--",
    ];
    args.extend_from_slice(COMMAND);
    let (_, report) = lab.run_json(&args);
    assert_eq!(report["runner"], "playwright", "{report}");
    runner_kit::only_the_zone_test_differs(&report, 2, ZONE, 5, true);

    let shuffle = cell(&report, "shuffle");
    assert_eq!(
        shuffle["n"].as_u64(),
        Some(2),
        "every seed read back: {shuffle}"
    );
    let (failed, total) = runner_kit::failing(&report, "shuffle");
    assert_eq!((failed, total), (vec![PAIR.to_string()], 5), "{shuffle}");
    assert!(
        runner_kit::test_row(&report, "shuffle", PAIR)["signatures"]
            .to_string()
            .contains("currency was never loaded"),
        "{shuffle}"
    );

    let workers = cell(&report, "workers=2x");
    assert_eq!(workers["n"].as_u64(), Some(2), "proof read: {workers}");
    let runs = lab.runs();
    for r in runner_kit::runs_of(&runs, "workers=2x") {
        let n = r["workers"].as_u64().unwrap();
        assert!(n >= 2, "{r}");
        assert!(
            super::run_argv(r).contains(&format!("--workers={n}")),
            "{r}"
        );
        // Exactly one of the two database files fails (the pair may fail
        // too: config-a's state stays in the other worker).
        let failed = runner_kit::failed_in(r);
        let db: Vec<&&str> = failed
            .iter()
            .filter(|id| !id.starts_with("config-"))
            .collect();
        assert!(
            db == [&"orders.spec.js::totals an order"]
                || db == [&"stock.spec.js::counts the stock"],
            "{r}"
        );
    }
    for r in runner_kit::runs_of(&runs, "shuffle") {
        let argv = super::run_argv(r);
        assert!(
            argv.contains(&format!("--shuffle={}", r["seed"])),
            "{argv:?}"
        );
    }
    let failing = runner_kit::runs_of(&runs, "shuffle")
        .into_iter()
        .find(|r| r["outcome"] == "fail")
        .unwrap();
    assert_eq!(runner_kit::replay(failing), Some(1), "{}", failing["repro"]);
}

/// `-g` on the title path (`file.spec.js title`) runs one test (in the
/// browser). A location `tests/zone.spec.js:6` would run it too, but no
/// report names a test by its location, so the ladder could not find it.
#[test]
fn playwright_selects_one_test() {
    let Some(lab) = playwright_lab() else {
        return;
    };
    let title_path = "zone.spec.js invoice is dated on the UTC day";
    let argv = runner_kit::selected_alone(&lab, title_path, ZONE, COMMAND);
    assert!(
        argv.windows(2).any(|w| w
            == [
                "-g",
                r"(^| )zone\.spec\.js invoice is dated on the UTC day$"
            ]),
        "{argv:?}"
    );
}

/// Exit 1 is "tests failed", an unknown option and `Error: No tests found`
/// alike; the output tells them apart.
#[test]
fn playwright_usage_errors_and_empty_runs_are_errors() {
    let Some(lab) = playwright_lab() else {
        return;
    };
    for (command, want) in [
        (
            &["npx", "playwright", "test", "--no-such-flag"][..],
            "could not run the tests (exit 1): error: unknown option '--no-such-flag'",
        ),
        (
            &["npx", "playwright", "test", "-g", "nothing matches this"][..],
            "could not run the tests (exit 1): Error: No tests found",
        ),
    ] {
        let reason = runner_kit::errored(&lab, command);
        assert!(reason.contains(want), "{command:?}: {reason}");
    }
}
