//! The evergreen dashboard (issue #37 item 6): `history --dashboard` over
//! ingested CI reports and the quarantine ledger, in Markdown and JSON, with
//! the last failure linked to the run page `ingest` recorded (detected from
//! GitHub's variables, or `--run-url`, checked and escaped).

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

/// Ingests `xml` as `file` with `env` set (and no other CI variable than
/// those the lab keeps), plus `args`; returns the output.
fn ingest_with(
    lab: &Lab,
    file: &str,
    xml: &str,
    env: &[(&str, &str)],
    args: &[&str],
) -> std::process::Output {
    std::fs::write(lab.path().join(file), xml).unwrap();
    let mut c = lab.cmd();
    for var in [
        "GITHUB_ACTIONS",
        "GITLAB_CI",
        "BUILDKITE",
        "CIRCLECI",
        "JENKINS_URL",
    ] {
        c.env_remove(var);
    }
    c.args(["ingest", file])
        .args(args)
        .envs(env.iter().copied());
    c.output().expect("flakelab runs")
}

const FAILING: &str = "<testsuite><testcase classname='pkg.mod' name='test_x'>\
                       <failure message='boom'/></testcase></testsuite>";

#[test]
fn the_last_failure_links_to_the_github_run_ingest_detected() {
    let lab = Lab::new();
    for (file, run, attempt, sha) in [("r1.xml", "501", "1", "c01"), ("r2.xml", "502", "2", "c02")]
    {
        let env = [
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_SERVER_URL", "https://github.com"),
            ("GITHUB_REPOSITORY", "acme/shop"),
            ("GITHUB_RUN_ID", run),
            ("GITHUB_RUN_ATTEMPT", attempt),
            ("GITHUB_JOB", "test"),
            ("GITHUB_SHA", sha),
            ("GITHUB_REF_NAME", "main"),
        ];
        let out = ingest_with(&lab, file, FAILING, &env, &[]);
        assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    }
    let board = json(&lab.run(&["history", "--format", "json", "--dashboard"]));
    let last = &board["tests"][0]["last_failure"];
    assert_eq!(last["commit"], "c02", "{board:#}");
    assert_eq!(
        last["run_url"], "https://github.com/acme/shop/actions/runs/502/attempts/2",
        "{board:#}"
    );
    let out = lab.run(&["history", "--format", "markdown", "--dashboard"]);
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        md.contains(
            "[run 502 attempt 2](https://github.com/acme/shop/actions/runs/502/attempts/2)"
        ),
        "{md}"
    );
}

#[test]
fn a_run_url_given_by_hand_is_checked_and_a_hostile_one_stays_inside_its_link() {
    let lab = Lab::new();
    for bad in [
        "javascript:alert(1)",
        "ci.example/run/1",
        "https://",
        "https://a/b\nc",
    ] {
        let out = ingest_with(
            &lab,
            "r.xml",
            FAILING,
            &[],
            &["--no-detect", "--commit", "c1", "--run-url", bad],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(code(&out), 2, "{bad:?}: {err}");
        assert!(err.contains("--run-url"), "names the flag: {err}");
        assert!(
            err.contains("https://github.com/OWNER/REPO/actions/runs/ID"),
            "says the fix: {err}"
        );
        assert!(
            !lab.store().join("history").exists(),
            "nothing recorded: {bad:?}"
        );
    }
    let hostile = "https://ci.example/r/1)](javascript:alert(1))<script>alert(2)</script>";
    let out = ingest_with(
        &lab,
        "r.xml",
        FAILING,
        &[],
        &[
            "--no-detect",
            "--commit",
            "c1",
            "--run-id",
            "9",
            "--run-url",
            hostile,
        ],
    );
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let board = json(&lab.run(&["history", "--format", "json", "--dashboard"]));
    assert_eq!(board["tests"][0]["last_failure"]["run_url"], hostile);
    let out = lab.run(&["history", "--format", "markdown", "--dashboard"]);
    let md = String::from_utf8_lossy(&out.stdout);
    let row = md.lines().find(|l| l.contains("test_x")).unwrap();
    assert!(
        row.contains(
            "[run 9](https://ci.example/r/1%29%5D%28javascript:alert%281%29%29%3Cscript%3Ealert%282%29%3C/script%3E)"
        ),
        "{row}"
    );
    assert!(!row.contains("<script") && !row.contains(")]("), "{row}");
}
