//! The `orders` perturbation end to end with real pytest on
//! `tests/fixtures/orders-project` (victims of an environment variable, a
//! module-level dict, a left file and the working directory; a brittle
//! test; a victim whose polluter four cleaners undo, so that it fails in
//! 1 of 6 random orders): the screen design's systematic-orders round
//! confirms every one at significance in one session with no false
//! positive, every confirmed row names a bisect command, and the command of
//! a row flipped only by a systematic order names the polluter.
//! Skipped (with a reason) when pytest is missing, unless
//! `FLAKELAB_TEST_REQUIRE_ALL=1`.

use crate::{capable, copy_fixture, sh_ok, Lab};

fn pytest_available() -> bool {
    capable(
        "pytest (python3 -m pytest)",
        sh_ok("python3 -m pytest --version"),
    )
}

/// The tests the fixture plants, each order-dependent.
const PLANTED: [&str; 6] = [
    "tests.test_cleaned::test_victim_cleaned",
    "tests.test_brittle::test_b_brittle_needs_ready",
    "tests.test_env_victim::test_invoice_in_dollars",
    "tests.test_dict::test_mode_is_prod",
    "tests.test_file::test_basetemp_is_empty",
    "tests.test_cwd::test_reads_project_file",
];

fn json(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON ({e}); stdout: {} stderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn the_systematic_orders_confirm_every_planted_test_and_each_row_bisects() {
    if !pytest_available() {
        return;
    }
    let lab = Lab::new();
    copy_fixture(&lab, "orders-project");
    let out = lab
        .cmd()
        .args([
            "run",
            "--format",
            "json",
            "--design",
            "screen",
            "--seed",
            "5",
            "--no-sham",
            "-j",
            "2",
            "-p",
            "orders",
            "--",
            "python3",
            "-m",
            "pytest",
            "tests",
        ])
        .output()
        .unwrap();
    let report = json(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // Every differing row is a planted one, confirmed; every planted one
    // differs: no false positive, none missed.
    let mut differing = Vec::new();
    let mut bisects = Vec::new();
    for cell in report["cells"].as_array().unwrap() {
        for t in cell["tests"].as_array().unwrap() {
            if t["vs_baseline"]["differs"] == true {
                assert_eq!(cell["name"], "orders", "{t}");
                assert_eq!(t["stage"], "confirm", "{t}");
                differing.push(t["id"].as_str().unwrap().to_string());
                let bisect = t["bisect"].as_str().unwrap_or_else(|| panic!("{t}"));
                let run = t["first_failure"].as_str().unwrap().to_string();
                assert!(bisect.starts_with(&format!("flakelab bisect {run} --test ")));
                bisects.push((t["id"].as_str().unwrap().to_string(), run));
            }
        }
    }
    differing.sort();
    let mut want: Vec<String> = PLANTED.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(differing, want, "{stderr}");
    // The systematic orders ran as a round of the screen: max(w(6 tests of
    // test_cleaned), w(7 modules)) = 8 orders, and the summary counts them.
    let design = &report["design"];
    let rescreened = design["rescreened"].as_array().unwrap();
    assert!(
        rescreened
            .iter()
            .any(|r| r[0] == "orders" && r[1].as_str().unwrap().contains("(8 orders)")),
        "{design}"
    );
    assert_eq!(report["planned"], 1 + 1 + 8, "{}", report["planned"]);
    let orders_cell = (report["cells"].as_array().unwrap().iter())
        .find(|c| c["name"] == "orders")
        .unwrap();
    assert_eq!(orders_cell["planned"], 9, "{orders_cell}");
    // The cleaned victim passes in the collection run (the file order): it
    // was flipped in the systematic round, a session of its own, and its
    // bisect starts there and names its polluter.
    let (victim, run) = bisects
        .iter()
        .find(|(id, _)| id == PLANTED[0])
        .unwrap()
        .clone();
    let screened = report["session"].as_str().unwrap();
    assert!(!run.starts_with(screened), "{run} is a round's run");
    let out = lab
        .cmd()
        .args([
            "bisect",
            "--format",
            "json",
            "--no-cleaners",
            "--confirm",
            "1",
            &run,
            "--test",
            &victim,
        ])
        .output()
        .unwrap();
    let found = json(&out);
    assert_eq!(found["kind"], "polluted", "{found}");
    assert_eq!(
        found["polluters"],
        serde_json::json!(["tests.test_cleaned::test_polluter_dirty"]),
        "{found}"
    );
}
