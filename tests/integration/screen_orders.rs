//! The screen's shuffle screen through the real binary and the fake
//! executor: where the recipe runs a given order (pytest, through
//! flakelab's plugin) a shuffle cell's later round is the systematic
//! orders, and the row a systematic order flipped names that run and its
//! `flakelab bisect` command; where the runner can only shuffle by seed
//! (gotestsum) the cell runs fresh seeds, and the report says why.

use crate::fake::{code, fake, json, script};
use crate::Lab;

/// A one-module JUnit report of `test_a`, `test_p`, `test_v`; `test_v`
/// fails when `victim_fails`.
fn junit(victim_fails: bool) -> String {
    let v = match victim_fails {
        true => {
            "<testcase classname='tests.test_a' name='test_v'><failure message='dirty'/></testcase>"
        }
        false => "<testcase classname='tests.test_a' name='test_v'/>",
    };
    format!(
        "<testsuite name='s' tests='3'><testcase classname='tests.test_a' name='test_a'/><testcase classname='tests.test_a' name='test_p'/>{v}</testsuite>"
    )
}

/// The rescreened cells of a screen report: (cell, why).
fn rescreened(report: &serde_json::Value) -> Vec<(String, String)> {
    (report["design"]["rescreened"].as_array().unwrap().iter())
        .map(|r| (r[0].as_str().unwrap().into(), r[1].as_str().unwrap().into()))
        .collect()
}

#[test]
fn a_pytest_shuffle_screens_by_the_systematic_orders_and_its_row_bisects_from_the_flipping_order() {
    let lab = Lab::new();
    // The third systematic order (order-0002) puts the polluter before
    // the victim; so does every confirmation run of the cell's arm (the
    // flipping order replayed); every seeded shuffle and every baseline
    // run passes it.
    let s = script(
        &lab,
        &format!(
            "version = \"pytest 9.2.0\"\n\
             [[run]]\ncell = \"shuffle\"\nargv = \"order-0002.txt\"\nexit = 1\njunit = \"{fail}\"\n\
             [[run]]\ncell = \"shuffle\"\nargv = \"-orders/\"\njunit = \"{pass}\"\n\
             [[run]]\ncell = \"shuffle\"\nargv = \"flakelab-order\"\nexit = 1\njunit = \"{fail}\"\n\
             [[run]]\noutput = \"Using --randomly-seed={{seed}}\"\njunit = \"{pass}\"\n",
            fail = junit(true),
            pass = junit(false),
        ),
    );
    let out = fake(
        &lab,
        &s,
        &[
            "run",
            "--format",
            "json",
            "--design",
            "screen",
            "--seed",
            "3",
            "--no-sham",
            "-p",
            "shuffle",
            "--",
            "pytest",
            "tests",
        ],
    );
    let report = json(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 1, "{stderr}");
    // One module of three tests: w(3) = 4 orders, in place of the reversed
    // run and any seed (`--screen 2`).
    let again = rescreened(&report);
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!(again[0].0, "shuffle");
    assert!(
        again[0].1.starts_with("systematic orders") && again[0].1.contains("(4 orders)"),
        "{again:?}"
    );
    let runs = lab.runs();
    assert!(
        !runs
            .iter()
            .any(|r| crate::run_argv(r).iter().any(|a| a.contains("-reversed/"))),
        "a reversed run ran"
    );
    let shuffle_cell = crate::cell(&report, "shuffle");
    let row = (shuffle_cell["tests"].as_array().unwrap().iter())
        .find(|t| t["id"] == "tests.test_a::test_v")
        .unwrap_or_else(|| panic!("{shuffle_cell}"));
    assert_eq!(row["stage"], "confirm", "{row}");
    assert_eq!(row["vs_baseline"]["differs"], true, "{row}");
    // The row names the run the systematic order flipped (a run of the
    // screen's orders round, not of the screened session) and the bisect
    // from it.
    let first = row["first_failure"].as_str().expect("the run it failed in");
    assert!(
        !first.starts_with(report["session"].as_str().unwrap()),
        "{first}"
    );
    let flipped = runs
        .iter()
        .find(|r| r["id"] == first)
        .expect("the flipping run");
    assert!(
        crate::run_argv(flipped)
            .iter()
            .any(|a| a.ends_with("-orders/order-0002.txt")),
        "{flipped}"
    );
    assert_eq!(
        row["bisect"],
        format!("flakelab bisect {first} --test tests.test_a::test_v")
    );
    // No seed makes that order: the verdict names none.
    let verdict = row["verdict"].as_str().unwrap();
    assert!(!verdict.contains("under seed"), "{verdict}");
}

#[test]
fn a_runner_that_only_shuffles_by_seed_screens_its_shuffle_by_seeds_and_says_why() {
    let lab = Lab::new();
    let pass = junit(false);
    let s = script(
        &lab,
        &format!(
            "version = \"gotestsum 1.8.2\"\n\
             [[run]]\noutput = \"-test.shuffle {{seed}}\"\njunit = \"{pass}\"\n"
        ),
    );
    let out = fake(
        &lab,
        &s,
        &[
            "run",
            "--format",
            "json",
            "--design",
            "screen",
            "--seed",
            "3",
            "--no-sham",
            "--screen",
            "3",
            "-p",
            "shuffle",
            "--",
            "gotestsum",
            "--",
            "./...",
        ],
    );
    let report = json(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 0, "{stderr}");
    let again = rescreened(&report);
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!(again[0].0, "shuffle");
    assert!(
        again[0]
            .1
            .contains("fresh seeds, not the systematic orders")
            && again[0]
                .1
                .contains("the gotestsum runner can only shuffle by seed"),
        "{again:?}"
    );
    // `--screen 3`: the first run and two more under fresh seeds, no order
    // listed.
    let shuffles: Vec<serde_json::Value> = (lab.runs().into_iter())
        .filter(|r| r["cell"] == "shuffle")
        .collect();
    assert_eq!(shuffles.len(), 3);
    for r in &shuffles {
        let argv = crate::run_argv(r);
        assert!(argv.iter().any(|a| a.starts_with("-shuffle=")), "{argv:?}");
        assert!(!argv.iter().any(|a| a.contains("order")), "{argv:?}");
    }
}

#[test]
fn beside_an_orders_cell_a_shuffle_keeps_its_reversed_run_and_the_orders_run_once() {
    let lab = Lab::new();
    let s = script(
        &lab,
        &format!(
            "version = \"pytest 9.2.0\"\n\
             [[run]]\noutput = \"Using --randomly-seed={{seed}}\"\njunit = \"{}\"\n",
            junit(false)
        ),
    );
    let out = fake(
        &lab,
        &s,
        &[
            "run",
            "--format",
            "json",
            "--design",
            "screen",
            "--seed",
            "3",
            "--no-sham",
            "-p",
            "shuffle",
            "-p",
            "orders",
            "--",
            "pytest",
            "tests",
        ],
    );
    let report = json(&out);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let mut again = rescreened(&report);
    again.sort();
    assert_eq!(again.len(), 2, "{again:?}");
    assert_eq!(again[0].0, "orders");
    assert!(again[0].1.contains("(4 orders)"), "{again:?}");
    assert_eq!(again[1].0, "shuffle");
    assert!(
        again[1].1.contains("order reversed")
            && again[1]
                .1
                .contains("not the systematic orders: the `orders` cell runs them"),
        "{again:?}"
    );
    // 4 orders listed once, in the orders cell; one reversed list.
    let listed: Vec<String> = (lab.runs().iter())
        .flat_map(crate::run_argv)
        .filter_map(|a| a.strip_prefix("--flakelab-order=").map(String::from))
        .collect();
    let orders = listed.iter().filter(|f| f.contains("-orders/")).count();
    let reversed = listed.iter().filter(|f| f.contains("-reversed/")).count();
    assert_eq!((orders, reversed), (4, 1), "{listed:?}");
}

#[test]
fn more_systematic_orders_than_a_confirmation_arm_takes_leave_the_reversed_run_and_say_so() {
    let lab = Lab::new();
    let s = script(
        &lab,
        &format!(
            "version = \"pytest 9.2.0\"\n\
             [[run]]\noutput = \"Using --randomly-seed={{seed}}\"\njunit = \"{}\"\n",
            junit(false)
        ),
    );
    // -n 6: a confirmation arm takes 3 runs; one module of 3 tests takes 4
    // orders.
    let out = fake(
        &lab,
        &s,
        &[
            "run",
            "--format",
            "json",
            "--design",
            "screen",
            "--seed",
            "3",
            "--no-sham",
            "-n",
            "6",
            "-p",
            "shuffle",
            "--",
            "pytest",
            "tests",
        ],
    );
    let report = json(&out);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let again = rescreened(&report);
    assert_eq!(again.len(), 1, "{again:?}");
    assert!(
        again[0].1.contains("order reversed")
            && again[0].1.contains("its 4 systematic orders are more than the 3 runs a confirmation arm may take (-n 6); `-n 8` runs them"),
        "{again:?}"
    );
    let listed: Vec<String> = (lab.runs().iter())
        .flat_map(crate::run_argv)
        .filter(|a| a.starts_with("--flakelab-order="))
        .collect();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert!(listed[0].contains("-reversed/"), "{listed:?}");
}
