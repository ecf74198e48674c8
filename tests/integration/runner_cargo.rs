//! Runner recipes end to end with the real Rust runners, `cargo test`
//! (libtest) and `cargo nextest`, on the fixture crate
//! `tests/fixtures/cargo-project`: an order-dependent pair sharing
//! process-global state (`order::*`) and a shared-resource collision on a
//! locked file (`shared_db::*`).
//!
//! How "the collision appears under workers=2x and never at baseline" is made
//! true: both runners run tests in parallel by default (one thread per CPU),
//! so with an unconfigured baseline the collision would show there too. The
//! subject therefore declares itself sequential in a way the workers cell
//! overrides rather than fights:
//! * cargo test: `RUST_TEST_THREADS=1` in the command's environment. The
//!   recipe's workers cell appends `-- --test-threads N`, and libtest's
//!   command line wins over the variable. (A `--test-threads 1` in the
//!   command itself would not do: libtest refuses the option given twice,
//!   `error: Option 'test-threads' given more than once`, exit 101.)
//! * cargo nextest: the fixture's `.config/nextest.toml` sets
//!   `test-threads = 1` in the default profile; the recipe's workers cell sets
//!   `NEXTEST_TEST_THREADS`, which overrides the profile. (`-j 1` in the
//!   command would silently win over the variable.)
//!
//! The order-dependent pair passes with one thread in name order (A before
//! B) and with parallel threads (B waits for the A running beside it), and
//! fails exactly when a shuffle puts B before A on one thread; the collision
//! needs two tests at once. Neither is left to timing: the fixture reads how
//! many tests run at once from what the runner was told (`--test-threads`,
//! `RUST_TEST_THREADS`, `NEXTEST_TEST_THREADS`) and, when they do, makes the
//! partners meet (the holder of the database lock lets go only once its
//! partner has tried it), so every workers run collides. Each lab compiles its own copy of the fixture into the
//! lab's temp dir (`target/` beside the copied sources; no dependencies, so
//! it builds offline in about a second).

use super::{capable, cell, sh_ok, Lab};

fn copy_fixture(lab: &Lab) {
    super::copy_fixture(lab, "cargo-project");
}

/// The subject's cargo builds into the lab (never into a shared or inherited
/// target dir).
/// (`--unset=NAME`, not `-u NAME`: recipe detection skips `env`'s options
/// and assignments, and would take a bare NAME for the program.)
const CARGO_ENV: &[&str] = &[
    "env",
    "--unset=CARGO_TARGET_DIR",
    "--unset=CARGO_BUILD_TARGET_DIR",
];

/// The output log of one run record.
fn log(lab: &Lab, run: &serde_json::Value) -> String {
    std::fs::read_to_string(lab.store().join(run["log"].as_str().unwrap())).unwrap_or_default()
}

fn argv(run: &serde_json::Value) -> Vec<String> {
    super::run_argv(run)
}

#[test]
fn cargo_test_shuffle_finds_the_order_dependent_pair_and_workers_the_collision() {
    let lab = Lab::new();
    copy_fixture(&lab);
    let mut args = vec![
        "-n",
        "5",
        "--seed",
        "5",
        "-p",
        "shuffle",
        "-p",
        "workers=2x",
        "--",
    ];
    args.extend_from_slice(CARGO_ENV);
    args.extend_from_slice(&["RUST_TEST_THREADS=1", "cargo", "test", "--offline", "-q"]);
    let (_, report) = lab.run_json(&args);
    assert_eq!(report["runner"], "cargo-test", "{report}");

    // cargo test has no JUnit file (libtest's unstable `--format junit` goes
    // to stdout, one document per binary), so outcomes are per run, from the
    // exit code: no per-test entries, and the failing test is read from the
    // run's log.
    let base = cell(&report, "baseline");
    assert_eq!(
        (base["n"].as_u64(), base["k"].as_u64()),
        (Some(5), Some(0)),
        "{report}"
    );
    assert_eq!(base["runs_with_tests"].as_u64(), Some(0), "{base}");
    assert!(base["tests"].as_array().is_none_or(|t| t.is_empty()));

    let shuffle = cell(&report, "shuffle");
    assert_eq!(shuffle["applied"], true);
    assert_eq!(shuffle["n"].as_u64(), Some(5), "{shuffle}");
    // B comes before A under about half the seeds (and --seed fixes them).
    assert!(shuffle["k"].as_u64().unwrap() >= 1, "{shuffle}");

    let runs = lab.runs();
    for r in runs.iter().filter(|r| r["cell"] == "shuffle") {
        let seed = r["seed"].to_string();
        let a = argv(r);
        let tail = ["--", "-Zunstable-options", "--shuffle-seed", seed.as_str()];
        assert!(a.ends_with(&tail.map(String::from)), "{a:?}");
        assert_eq!(r["env"]["set"]["RUSTC_BOOTSTRAP"], "1", "{r}");
        let out = log(&lab, r);
        assert!(
            out.contains(&format!("(shuffle seed: {seed})")),
            "libtest printed the seed back: {out}"
        );
        if r["outcome"] == "fail" {
            assert!(out.contains("order::b_formats_price --- FAILED"), "{out}");
            assert!(out.contains("currency was never loaded"), "{out}");
            assert!(!out.contains("shared_db::"), "only the pair fails: {out}");
        } else {
            assert_eq!(r["outcome"], "pass", "{r}");
        }
    }
    let base_run = runs.iter().find(|r| r["cell"] == "baseline").unwrap();
    assert!(!argv(base_run).iter().any(|a| a.contains("shuffle")));

    // The collision: every workers=2x run fails, on the locked database.
    let workers = cell(&report, "workers=2x");
    assert!(workers["k"].as_u64().unwrap() >= 1, "{workers}");
    assert_eq!(workers["k"], workers["n"], "{workers}");
    for r in runs.iter().filter(|r| r["cell"] == "workers=2x") {
        let cpus = std::thread::available_parallelism().unwrap().get();
        let threads = (2 * cpus).to_string();
        assert!(
            argv(r).ends_with(&["--".into(), "--test-threads".into(), threads]),
            "{r}"
        );
        if r["outcome"] == "fail" {
            let out = log(&lab, r);
            assert!(
                out.contains("the test database is locked by another test"),
                "{out}"
            );
            assert!(!out.contains("currency was never loaded"), "{out}");
        }
    }

    // A failing seed's repro line, run in a plain shell, fails again: same
    // seed, same order, B before A.
    let failing = runs
        .iter()
        .find(|r| r["cell"] == "shuffle" && r["outcome"] == "fail")
        .expect("a failing shuffle run");
    let repro = failing["repro"].as_str().unwrap();
    assert!(repro.contains("RUSTC_BOOTSTRAP=1"), "{repro}");
    let mut sh = std::process::Command::new("sh");
    super::scrub(&mut sh);
    let out = sh.arg("-c").arg(repro).output().unwrap();
    assert_eq!(out.status.code(), Some(101), "{repro}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("currency was never loaded"), "{text}");
}

fn nextest_available() -> bool {
    capable("cargo-nextest", sh_ok("cargo nextest --version"))
}

#[test]
fn cargo_nextest_refuses_shuffle() {
    if !nextest_available() {
        return;
    }
    let lab = Lab::new();
    copy_fixture(&lab);
    let out = lab.run(&[
        "run", "-n", "1", "-p", "shuffle", "--", "cargo", "nextest", "run",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot shuffle") && err.contains("cargo-nextest"),
        "{err}"
    );
    assert!(lab.runs().is_empty(), "nothing ran");
}

#[test]
fn cargo_nextest_workers_find_the_collision_per_test_through_a_junit_profile() {
    if !nextest_available() {
        return;
    }
    let lab = Lab::new();
    copy_fixture(&lab);
    // JUnit only through config: the fixture's `ci` profile writes
    // target/nextest/ci/junit.xml, read with --junit. The recipe cannot inject
    // it (nextest would need a config file of flakelab's own, passed as
    // `--tool-config-file flakelab:/ABS/PATH --profile flakelab`).
    // The order-dependent pair is left out: nextest runs every test in its
    // own process, so B never sees A's state and fails on every run.
    let mut args = vec![
        "-n",
        "3",
        "--seed",
        "5",
        "-p",
        "workers=2x",
        "--junit",
        "target/nextest/ci/junit.xml",
        "--",
    ];
    args.extend_from_slice(CARGO_ENV);
    args.extend_from_slice(&[
        "cargo",
        "nextest",
        "run",
        "--offline",
        "--no-fail-fast",
        "--profile",
        "ci",
        "-E",
        "not test(/^order::/)",
    ]);
    let (_, report) = lab.run_json(&args);
    assert_eq!(report["runner"], "cargo-nextest", "{report}");

    let base = cell(&report, "baseline");
    assert_eq!(
        (base["n"].as_u64(), base["k"].as_u64()),
        (Some(3), Some(0)),
        "{report}"
    );
    assert_eq!(base["runs_with_tests"].as_u64(), Some(3), "{base}");
    let ids: Vec<&str> = base["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    for id in [
        "cargo-fixture::plain::price_pads_cents",
        "cargo-fixture::shared_db::inserts_order",
        "cargo-fixture::shared_db::reads_order",
    ] {
        assert!(ids.contains(&id), "{id} in {ids:?}");
    }

    let workers = cell(&report, "workers=2x");
    assert_eq!(workers["applied"], true);
    assert!(workers["k"].as_u64().unwrap() >= 1, "{workers}");
    assert_eq!(workers["k"], workers["n"], "{workers}");
    assert_eq!(workers["runs_with_tests"].as_u64(), Some(3), "{workers}");
    let tests = workers["tests"].as_array().unwrap();
    let k_of = |id: &str| {
        tests
            .iter()
            .find(|t| t["id"] == id)
            .and_then(|t| t["k"].as_u64())
            .unwrap()
    };
    // Per test: only the two database tests fail, and in every failing run
    // exactly one of them (the second to take the lock).
    assert_eq!(
        k_of("cargo-fixture::plain::price_pads_cents"),
        0,
        "{workers}"
    );
    assert_eq!(
        k_of("cargo-fixture::shared_db::inserts_order")
            + k_of("cargo-fixture::shared_db::reads_order"),
        workers["k"].as_u64().unwrap(),
        "{workers}"
    );
    for t in tests.iter().filter(|t| t["k"].as_u64() > Some(0)) {
        let sig = t["signatures"][0]["signature"].as_str().unwrap();
        assert!(sig.contains("panicked at src/lib.rs"), "{sig}");
    }

    let runs = lab.runs();
    for r in runs.iter().filter(|r| r["cell"] == "workers=2x") {
        let cpus = std::thread::available_parallelism().unwrap().get();
        assert_eq!(
            r["env"]["set"]["NEXTEST_TEST_THREADS"],
            (2 * cpus).to_string(),
            "{r}"
        );
        if r["outcome"] == "fail" {
            let out = log(&lab, r);
            assert!(
                out.contains("the test database is locked by another test"),
                "{out}"
            );
        }
    }
    let base_run = runs.iter().find(|r| r["cell"] == "baseline").unwrap();
    assert!(base_run["env"]["set"].get("NEXTEST_TEST_THREADS").is_none());
}

/// `cargo nextest run` with no JUnit profile gives a row per test (nextest's
/// libtest-like JSON, which the recipe asks for), and a test retried by
/// `--retries 1` counts its failed first attempt: the added test fails the
/// first time it runs in each flakelab run (a file keyed by the run's
/// `FLAKELAB_RUN_ID`) and passes on its retry.
#[test]
fn cargo_nextest_gives_per_test_rows_without_a_profile_and_counts_first_attempts() {
    if !nextest_available() {
        return;
    }
    let lab = Lab::new();
    copy_fixture(&lab);
    let lib = lab.path().join("src/lib.rs");
    let mut source = std::fs::read_to_string(&lib).unwrap();
    source.push_str(
        r#"
#[cfg(test)]
mod retried {
    #[test]
    fn first_attempt_fails() {
        let run = std::env::var("FLAKELAB_RUN_ID").unwrap();
        let mark = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(".first-{run}"));
        if !mark.exists() {
            std::fs::write(&mark, "").unwrap();
            panic!("the first attempt of this run fails");
        }
    }
}
"#,
    );
    std::fs::write(&lib, source).unwrap();
    let mut args = vec!["-n", "2", "--"];
    args.extend_from_slice(CARGO_ENV);
    args.extend_from_slice(&[
        "cargo",
        "nextest",
        "run",
        "--offline",
        "--no-fail-fast",
        "--retries",
        "1",
        "-E",
        "test(/^retried::/) | test(=plain::price_pads_cents)",
    ]);
    let (_, report) = lab.run_json(&args);
    assert_eq!(report["runner"], "cargo-nextest", "{report}");
    let base = cell(&report, "baseline");
    assert_eq!(base["runs_with_tests"].as_u64(), Some(2), "{base}");
    let row = |id: &str| {
        base["tests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .unwrap_or_else(|| panic!("no {id} in {base}"))
            .clone()
    };
    let flaky = row("cargo-fixture::retried::first_attempt_fails");
    assert_eq!(
        (
            flaky["k"].as_u64(),
            flaky["n"].as_u64(),
            flaky["passed_on_rerun"].as_u64()
        ),
        (Some(2), Some(2), Some(2)),
        "{flaky}"
    );
    let plain = row("cargo-fixture::plain::price_pads_cents");
    assert_eq!(
        (plain["k"].as_u64(), plain["n"].as_u64()),
        (Some(0), Some(2)),
        "{plain}"
    );
}
