//! Runner recipes end to end with a real runner (pytest with pytest-randomly
//! and pytest-xdist) on the fixture project `tests/fixtures/pytest-project`:
//! an order-dependent pair and a shared-resource collision.

use super::{capable, cell, sh_ok, Lab};

fn pytest_plugins_available() -> bool {
    capable(
        "pytest with pytest-randomly and pytest-xdist",
        sh_ok("python3 -c 'import pytest, pytest_randomly, xdist'"),
    )
}

fn copy_fixture(lab: &Lab) {
    let src =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pytest-project");
    for entry in std::fs::read_dir(src).unwrap().flatten() {
        std::fs::copy(entry.path(), lab.path().join(entry.file_name())).unwrap();
    }
}

#[test]
fn pytest_shuffle_finds_the_order_dependent_pair_and_workers_the_collision() {
    if !pytest_plugins_available() {
        return;
    }
    // The collision is the fixture's rendezvous (conftest.py), not timing.
    let lab = Lab::new();
    copy_fixture(&lab);
    let (_, report) = lab.run_json(&[
        "-n",
        "5",
        "--seed",
        "5",
        "-p",
        "shuffle",
        "-p",
        "workers=2x",
        "--",
        "python3",
        "-m",
        "pytest",
        "-q",
    ]);
    assert_eq!(report["runner"], "pytest", "{report}");
    let base = cell(&report, "baseline");
    assert_eq!(base["k"].as_u64(), Some(0), "{report}");
    // Per-test outcomes came from the JUnit report the recipe asked for.
    assert_eq!(base["tests"].as_array().unwrap().len(), 5, "{base}");
    assert_eq!(base["runs_with_tests"].as_u64(), Some(5));

    let shuffle = cell(&report, "shuffle");
    assert_eq!(shuffle["applied"], true);
    assert_eq!(
        shuffle["n"].as_u64(),
        Some(5),
        "every run printed its seed: {shuffle}"
    );
    let pair = shuffle["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "test_config::test_b_formats_price")
        .unwrap();
    assert!(pair["k"].as_u64().unwrap() >= 1, "{pair}");
    assert!(pair["signatures"][0]["signature"]
        .as_str()
        .unwrap()
        .contains("currency was never loaded"));

    let workers = cell(&report, "workers=2x");
    assert!(workers["k"].as_u64().unwrap() >= 1, "{workers}");
    // Deterministic: the workers meet, so every run collides.
    assert_eq!(workers["k"], workers["n"], "{workers}");
    let runs = lab.runs();
    let worker_run = runs.iter().find(|r| r["cell"] == "workers=2x").unwrap();
    assert_eq!(worker_run["workers"].as_u64(), Some(2));
    let collided = runs.iter().filter(|r| r["cell"] == "workers=2x").all(|r| {
        r["tests"].as_array().unwrap().iter().any(|t| {
            t["signature"]
                .as_str()
                .is_some_and(|s| s.contains("locked by another test process"))
        })
    });
    assert!(
        collided,
        "every workers run failed on the shared database lock"
    );

    // Every shuffle run passed its seed and printed it back; -q, which hides
    // the seed line, was dropped only there.
    for r in runs.iter().filter(|r| r["cell"] == "shuffle") {
        let seed = r["seed"].to_string();
        let argv: Vec<&str> = r["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert!(
            argv.contains(&format!("--randomly-seed={seed}").as_str()),
            "{argv:?}"
        );
        assert!(!argv.contains(&"-q"), "{argv:?}");
    }
    let base_run = runs.iter().find(|r| r["cell"] == "baseline").unwrap();
    assert!(
        base_run["argv"].to_string().contains("no:randomly"),
        "baseline turns the plugin off"
    );

    // A failing seed's repro line, run in a plain shell, fails again.
    let failing = runs
        .iter()
        .find(|r| r["cell"] == "shuffle" && r["outcome"] == "fail")
        .expect("a failing shuffle run");
    let status = super::run_repro(failing, &[]);
    assert_eq!(status.status.code(), Some(1), "{}", failing["repro"]);
}

#[test]
fn a_runner_usage_error_or_empty_run_is_an_error_not_a_pass_or_fail() {
    if !pytest_plugins_available() {
        return;
    }
    let lab = Lab::new();
    copy_fixture(&lab);
    let (_, report) = lab.run_json(&["-n", "2", "--", "python3", "-m", "pytest", "--no-such-flag"]);
    let base = cell(&report, "baseline");
    assert_eq!(
        (base["errored"].as_u64(), base["n"].as_u64()),
        (Some(2), Some(0)),
        "{report}"
    );
    assert!(lab.runs()[0]["reason"]
        .as_str()
        .unwrap()
        .contains("usage error (exit 4)"));
    let (_, report) = lab.run_json(&[
        "-n",
        "2",
        "--",
        "python3",
        "-m",
        "pytest",
        "-k",
        "nothing_matches_this",
    ]);
    let base = cell(&report, "baseline");
    assert_eq!(
        (base["errored"].as_u64(), base["n"].as_u64()),
        (Some(2), Some(0)),
        "{report}"
    );
}

#[test]
fn shuffle_without_a_recipe_is_refused_by_hand_and_left_out_of_a_matrix() {
    let lab = Lab::new();
    let out = lab.run(&["run", "-n", "1", "-p", "shuffle", "--", "sh", "-c", "true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--runner"));
    let (code, report) = lab.run_json(&[
        "-n",
        "1",
        "--matrix",
        "standard",
        "-p",
        "tz=UTC",
        "--no-baseline",
        "--",
        "true",
    ]);
    assert!(code == 0 || code == 3, "{report}");
    let left: Vec<&str> = report["left_out"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        left.iter().any(|l| l.starts_with("shuffled-order:")),
        "{left:?}"
    );
    assert!(
        left.iter().any(|l| l.starts_with("workers-2x:")),
        "{left:?}"
    );
    assert!(
        left.iter().any(|l| l.starts_with("systematic-orders:")),
        "{left:?}"
    );
}

#[test]
fn recipes_list_show_and_detect() {
    let lab = Lab::new();
    let list = String::from_utf8(lab.run(&["recipes"]).stdout).unwrap();
    for name in [
        "pytest",
        "go",
        "cargo-test",
        "cargo-nextest",
        "jest",
        "vitest",
        "node-test",
        "mocha",
        "rspec",
        "phpunit",
        "ctest",
    ] {
        assert!(list.lines().any(|l| l.starts_with(name)), "{name}: {list}");
    }
    let show = String::from_utf8(lab.run(&["recipes", "show", "pytest"]).stdout).unwrap();
    assert!(show.contains("--randomly-seed={seed}"), "{show}");
    let detect = String::from_utf8(
        lab.run(&["recipes", "detect", "--", "python3", "-m", "pytest", "-q"])
            .stdout,
    )
    .unwrap();
    assert!(detect.contains("recipe:   pytest"), "{detect}");
    assert!(detect.contains("--junitxml="), "{detect}");
    let opaque =
        String::from_utf8(lab.run(&["recipes", "detect", "--", "make", "test"]).stdout).unwrap();
    assert!(opaque.contains("hides which runner"), "{opaque}");
    assert_eq!(lab.run(&["recipes", "show", "nope"]).status.code(), Some(2));
}
