//! The evergreen dashboard (issue #37 item 6): `history --dashboard` over
//! ingested CI reports and the quarantine ledger, in Markdown and JSON.

use super::fake::{code, json};
use super::Lab;

/// Ingests one report per commit `c01`… of tests `test_x` (failing on the
/// commits `fails` picks) and `test_ok`, each from GitHub run `10NN`.
fn history(lab: &Lab, commits: usize, fails: impl Fn(usize) -> bool) {
    for i in 1..=commits {
        let failure = if fails(i) {
            "<failure message='boom'/>"
        } else {
            ""
        };
        let report = format!(
            "<testsuite><testcase classname='pkg.mod' name='test_x'>{failure}</testcase>\
             <testcase classname='pkg.mod' name='test_ok'/></testsuite>"
        );
        let file = format!("r{i}.xml");
        std::fs::write(lab.path().join(&file), report).unwrap();
        let out = lab.run(&[
            "ingest",
            &file,
            "--no-detect",
            "--os",
            "linux",
            "--commit",
            &format!("c{i:02}"),
            "--provider",
            "github",
            "--run-id",
            &format!("10{i:02}"),
        ]);
        assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn a_test_failing_only_lately_reads_worse_with_its_last_failure_and_owner() {
    let lab = Lab::new();
    history(&lab, 20, |i| i > 10);
    let add = lab.run(&[
        "quarantine",
        "--add",
        "pkg.mod::test_x",
        "--owner",
        "alice",
        "--ticket",
        "SHOP-1",
        "--expires",
        "30d",
        "--evidence",
        "fails since c11",
    ]);
    assert_eq!(code(&add), 0, "{}", String::from_utf8_lossy(&add.stderr));
    let out = lab.run(&["history", "--format", "json", "--dashboard"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let board = json(&out);
    assert_eq!(board["schema"], "flakelab.dashboard/1");
    let tests = board["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 1, "only the test that failed: {board:#}");
    let t = &tests[0];
    assert_eq!(t["test"], "pkg.mod::test_x");
    let kn: Vec<(u64, u64)> = t["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["k"].as_u64().unwrap(), w["n"].as_u64().unwrap()))
        .collect();
    assert_eq!(kn, vec![(10, 10), (10, 20), (10, 20)]);
    assert_eq!(t["trend"], "worse", "{t:#}");
    assert!(t["trend_p"].as_f64().unwrap() < 0.001, "{t:#}");
    assert_eq!(t["last_failure"]["commit"], "c20");
    assert!(
        t["last_failure"]["run"].as_str().unwrap().contains("1020"),
        "{t:#}"
    );
    assert_eq!(t["quarantine"]["owner"], "alice");
    assert_eq!(t["quarantine"]["expired"], false);

    let out = lab.run(&["history", "--format", "markdown", "--dashboard"]);
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        md.contains(
            "| `pkg.mod::test_x` | 10 of 10 (100%) | 10 of 20 (50%) | 10 of 20 (50%) | worse (p"
        ),
        "{md}"
    );
    assert!(md.contains("alice · SHOP-1 · until "), "{md}");
}

#[test]
fn scattered_failures_read_steady_and_a_window_that_holds_everything_reads_new() {
    let lab = Lab::new();
    history(&lab, 20, |i| i % 5 == 0);
    let board = json(&lab.run(&["history", "--format", "json", "--dashboard"]));
    let t = &board["tests"][0];
    assert_eq!(t["trend"], "steady", "{t:#}");
    let lab = Lab::new();
    history(&lab, 4, |i| i == 2);
    let board = json(&lab.run(&["history", "--format", "json", "--dashboard"]));
    let t = &board["tests"][0];
    assert_eq!(t["trend"], "new", "{t:#}");
    assert_eq!(t["last_failure"]["commit"], "c02");
}
