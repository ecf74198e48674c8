//! Runner recipes end to end with the real JavaScript runners: node:test
//! (`node --test`, Node 20), Jest (its `--json`) and Vitest, each on its
//! fixture project `tests/fixtures/{node,jest,vitest}-project`: an
//! order-dependent pair (module state set by one test, read by another, in
//! one file) and a shared-resource collision (two test files create the same
//! lock file exclusively; parallel workers collide, one file at a time never
//! does). The collision is decided by a rendezvous in the fixture's
//! `shared-db.js`, not by timing: under parallel workers, the file that got
//! the lock holds it until its partner has tried and failed.
//!
//! Jest and Vitest are installed once per test binary run with npm (pinned
//! versions from the fixture's package.json) into
//! `$CARGO_TARGET_TMPDIR/flakelab-test-node/<project>`, outside the
//! repository; each lab links its `node_modules` there. When npm cannot
//! install (offline), `capable()` decides: skipped locally, a failure under
//! `FLAKELAB_TEST_REQUIRE_ALL=1`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{capable, cell, sh_ok, Lab};

fn fixture(project: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(project)
}

/// Copies the fixture's files and folders (never a `node_modules`) into the
/// lab, and links `node_modules` to `deps` when given.
fn copy_fixture(lab: &Lab, project: &str, deps: Option<&Path>) {
    super::copy_fixture(lab, project);
    if let Some(deps) = deps {
        std::os::unix::fs::symlink(deps.join("node_modules"), lab.path().join("node_modules"))
            .unwrap();
    }
}

fn node_available() -> bool {
    capable(
        "Node.js >= 20 (node --test)",
        sh_ok(
            "node -e 'process.exit(Number(process.versions.node.split(\".\")[0]) >= 20 ? 0 : 1)'",
        ),
    )
}

/// The project's npm dependencies, installed once per test binary run (and
/// kept between runs while package.json is unchanged), or None when npm
/// cannot install them.
fn npm_deps(project: &str) -> Option<PathBuf> {
    static DONE: Mutex<BTreeMap<String, Option<PathBuf>>> = Mutex::new(BTreeMap::new());
    let mut done = DONE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(found) = done.get(project) {
        return found.clone();
    }
    let found = npm_install(project);
    done.insert(project.to_string(), found.clone());
    found
}

fn npm_install(project: &str) -> Option<PathBuf> {
    let manifest = std::fs::read(fixture(project).join("package.json")).unwrap();
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("flakelab-test-node");
    let dir = root.join(project);
    // `.installed` is a copy of the package.json that was installed.
    let ready = dir.join(".installed");
    let is_ready = || std::fs::read(&ready).is_ok_and(|m| m == manifest);
    if is_ready() {
        return Some(dir);
    }
    std::fs::create_dir_all(&dir).unwrap();
    // Another test binary may be installing the same project.
    let lock = std::fs::File::create(root.join(format!("{project}.lock"))).unwrap();
    lock.lock().unwrap();
    if is_ready() {
        return Some(dir);
    }
    std::fs::write(dir.join("package.json"), &manifest).unwrap();
    let out = std::process::Command::new("npm")
        // @playwright/test never downloads a browser here (its fixture
        // drives the host's Chromium).
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--no-package-lock",
            "--prefer-offline",
            "--loglevel=error",
        ])
        .current_dir(&dir)
        .output();
    match out {
        Ok(o) if o.status.success() => {
            std::fs::write(&ready, &manifest).unwrap();
            Some(dir)
        }
        Ok(o) => {
            eprintln!(
                "npm install in {} failed: {}",
                dir.display(),
                String::from_utf8_lossy(&o.stderr)
            );
            None
        }
        Err(e) => {
            eprintln!("npm install in {} failed: {e}", dir.display());
            None
        }
    }
}

/// The lab with the project's files and dependencies, or None (skipped).
pub(super) fn npm_lab(project: &str, what: &str) -> Option<Lab> {
    if !node_available() {
        return None;
    }
    let deps = npm_deps(project);
    if !capable(what, deps.is_some()) {
        return None;
    }
    let lab = Lab::new();
    copy_fixture(&lab, project, deps.as_deref());
    Some(lab)
}

fn argv(run: &serde_json::Value) -> Vec<&str> {
    run["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect()
}

/// The test of a cell whose id ends with `name`.
fn test_in<'a>(cell: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    cell["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"].as_str().unwrap().ends_with(name))
        .unwrap_or_else(|| panic!("no test {name} in {cell}"))
}

/// The run's repro line, run in a plain shell: its exit code.
fn replay(run: &serde_json::Value) -> Option<i32> {
    super::run_repro(run, &[]).status.code()
}

/// Every workers run failed, each on exactly one test: the one of the two
/// files that found the shared lock file taken (the fixture's rendezvous
/// makes the two files meet, so this is not left to timing).
fn every_workers_run_collided(runs: &[serde_json::Value]) {
    let workers: Vec<&serde_json::Value> =
        runs.iter().filter(|r| r["cell"] == "workers=2x").collect();
    assert!(!workers.is_empty());
    for r in workers {
        assert_eq!(r["outcome"], "fail", "{r}");
        let failed: Vec<&str> = r["tests"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["signature"].as_str())
            .collect();
        assert_eq!(failed.len(), 1, "{r}");
        assert!(failed[0].contains("locked by another test process"), "{r}");
    }
}

/// Both errored runs of a 2-run baseline, and the first run's reason.
fn errored_twice(lab: &Lab, args: &[&str]) -> String {
    let before = lab.runs().len();
    let mut all = vec!["-n", "2", "--"];
    all.extend_from_slice(args);
    let (_, report) = lab.run_json(&all);
    let base = cell(&report, "baseline");
    assert_eq!(
        (base["errored"].as_u64(), base["n"].as_u64()),
        (Some(2), Some(0)),
        "{args:?}: {report}"
    );
    lab.runs()[before]["reason"].as_str().unwrap().to_string()
}

// ---------------------------------------------------------------- node:test

/// Node 20 stops reading options at the first file argument (an option after
/// a file is taken as a file), and the recipe appends its options at the
/// end: the command names no files, so node finds `*.test.js` itself.
/// `--test-concurrency=1` keeps the baseline serial on any host; the
/// injected `--test-concurrency=N` comes later and wins.
#[test]
fn node_test_workers_find_the_collision_and_the_replay_fails_again() {
    if !node_available() {
        return;
    }
    let lab = Lab::new();
    copy_fixture(&lab, "node-project", None);
    let (_, report) = lab.run_json(&[
        "-n",
        "3",
        "--seed",
        "5",
        "-p",
        "workers=2x",
        "--",
        "node",
        "--test",
        "--test-concurrency=1",
    ]);
    assert_eq!(report["runner"], "node-test", "{report}");
    let base = cell(&report, "baseline");
    assert_eq!(base["k"].as_u64(), Some(0), "{report}");
    // Per-test outcomes came from the JUnit report the recipe asked for
    // (node's classname is always "test").
    let ids: Vec<&str> = base["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 5, "{base}");
    assert!(ids.contains(&"test::test_b_formats_price"), "{ids:?}");
    assert_eq!(base["runs_with_tests"].as_u64(), Some(3));
    assert_eq!(test_in(base, "test_b_formats_price")["k"].as_u64(), Some(0));

    let workers = cell(&report, "workers=2x");
    assert!(workers["k"].as_u64().unwrap() >= 1, "{workers}");
    let runs = lab.runs();
    every_workers_run_collided(&runs);
    for r in runs.iter().filter(|r| r["cell"] == "workers=2x") {
        let n = r["workers"].as_u64().unwrap();
        assert!(n >= 2, "{r}");
        let argv = argv(r);
        // The command's own --test-concurrency=1 is replaced, not outvoted.
        let concurrency: Vec<&&str> = argv
            .iter()
            .filter(|a| a.starts_with("--test-concurrency"))
            .collect();
        assert_eq!(
            concurrency,
            [&format!("--test-concurrency={n}").as_str()],
            "{argv:?}"
        );
        assert!(argv.contains(&"--test-reporter=junit"), "{argv:?}");
    }

    let failing = runs
        .iter()
        .find(|r| r["cell"] == "workers=2x" && r["outcome"] == "fail")
        .unwrap();
    assert_eq!(replay(failing), Some(1), "{}", failing["repro"]);
}

#[test]
fn node_test_shuffle_is_refused_with_the_recipes_reason() {
    let lab = Lab::new();
    copy_fixture(&lab, "node-project", None);
    let out = lab.run(&["run", "-n", "1", "-p", "shuffle", "--", "node", "--test"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("knows no seeded shuffle"), "{stderr}");
    assert!(lab.runs().is_empty(), "nothing ran");
    // The recipe's reason is what `recipes detect` shows for the command.
    // (The refusal itself names only the recipe; see the report.)
    let detect = String::from_utf8(
        lab.run(&["recipes", "detect", "--", "node", "--test"])
            .stdout,
    )
    .unwrap();
    assert!(detect.contains("recipe:   node-test"), "{detect}");
    assert!(
        detect.contains("shuffle:  not supported: Node 20 has no shuffle"),
        "{detect}"
    );
}

#[test]
fn node_test_usage_errors_and_empty_runs_are_errors() {
    if !node_available() {
        return;
    }
    let lab = Lab::new();
    copy_fixture(&lab, "node-project", None);
    let reason = errored_twice(&lab, &["node", "--test", "--no-such-flag"]);
    assert!(reason.contains("usage error (exit 9)"), "{reason}");
    // A name pattern that matches nothing exits 0 with every test skipped.
    let reason = errored_twice(
        &lab,
        &[
            "node",
            "--test",
            "--test-name-pattern=^nothing_matches_this$",
        ],
    );
    assert!(reason.contains("ran no tests"), "{reason}");
    // No test files at all also exits 0.
    let empty = Lab::new();
    let reason = errored_twice(&empty, &["node", "--test"]);
    assert!(reason.contains("ran no tests"), "{reason}");
}

// --------------------------------------------------------- Jest and Vitest

/// What one runner's shuffle + workers run must show.
struct Expect {
    runner: &'static str,
    /// Arguments every shuffle run carries, with `{seed}`.
    shuffle_args: &'static [&'static str],
    /// The id of the order-dependent test.
    pair_id: &'static str,
    /// An argument every workers run carries besides the count.
    workers_extra: Option<&'static str>,
}

fn shuffle_and_workers(lab: &Lab, command: &[&str], want: &Expect) {
    let mut args = vec![
        "-n",
        "4",
        "--seed",
        "5",
        "-p",
        "shuffle",
        "-p",
        "workers=2x",
        "--",
    ];
    args.extend_from_slice(command);
    let (_, report) = lab.run_json(&args);
    assert_eq!(report["runner"], want.runner, "{report}");
    let base = cell(&report, "baseline");
    assert_eq!(base["k"].as_u64(), Some(0), "{report}");
    // Per-test outcomes came from the JUnit report the recipe asked for.
    assert_eq!(base["tests"].as_array().unwrap().len(), 5, "{base}");
    assert_eq!(base["runs_with_tests"].as_u64(), Some(4));

    let shuffle = cell(&report, "shuffle");
    assert_eq!(shuffle["applied"], true);
    assert_eq!(
        shuffle["n"].as_u64(),
        Some(4),
        "every run printed its seed: {shuffle}"
    );
    let pair = test_in(shuffle, "test_b_formats_price");
    assert_eq!(pair["id"], want.pair_id, "{pair}");
    assert!(pair["k"].as_u64().unwrap() >= 1, "{pair}");
    assert!(pair["signatures"][0]["signature"]
        .as_str()
        .unwrap()
        .contains("currency was never loaded"));
    assert_eq!(test_in(base, "test_b_formats_price")["k"].as_u64(), Some(0));

    let workers = cell(&report, "workers=2x");
    assert!(workers["k"].as_u64().unwrap() >= 1, "{workers}");
    let runs = lab.runs();
    every_workers_run_collided(&runs);
    for r in runs.iter().filter(|r| r["cell"] == "workers=2x") {
        let n = r["workers"].as_u64().unwrap();
        assert!(n >= 2, "{r}");
        let argv = argv(r);
        assert!(
            argv.contains(&format!("--maxWorkers={n}").as_str()),
            "{argv:?}"
        );
        if let Some(extra) = want.workers_extra {
            assert!(argv.contains(&extra), "{argv:?}");
        }
    }
    for r in runs.iter().filter(|r| r["cell"] == "shuffle") {
        let seed = r["seed"].to_string();
        let argv = argv(r);
        for a in want.shuffle_args {
            let a = a.replace("{seed}", &seed);
            assert!(argv.contains(&a.as_str()), "{a}: {argv:?}");
        }
    }
    let base_run = runs.iter().find(|r| r["cell"] == "baseline").unwrap();
    assert!(
        !argv(base_run).iter().any(|a| a.contains("seed")),
        "the baseline does not shuffle"
    );

    // A failing seed's repro line, run in a plain shell, fails again.
    let failing = runs
        .iter()
        .find(|r| r["cell"] == "shuffle" && r["outcome"] == "fail")
        .expect("a failing shuffle run");
    assert_eq!(replay(failing), Some(1), "{}", failing["repro"]);
}

/// Jest shuffles tests within a file only: the pair shares `config.test.js`.
/// The fixture's config sets `maxWorkers: 1`, so the baseline is serial on
/// any host (`--maxWorkers` on the command line wins). The workers cell
/// really runs worker processes (Jest runs in band, whatever --maxWorkers
/// says, when its cached timings show a few fast files: the recipe's
/// `--workerIdleMemoryLimit`): the fixture files the pid of the process
/// that ran each database file.
#[test]
fn jest_shuffle_finds_the_order_dependent_pair_and_workers_the_collision() {
    let Some(lab) = npm_lab(
        "jest-project",
        "jest 30.5.2 with jest-junit 17.0.0 (npm install)",
    ) else {
        return;
    };
    shuffle_and_workers(
        &lab,
        &["npx", "jest"],
        &Expect {
            runner: "jest",
            shuffle_args: &["--randomize", "--seed={seed}"],
            // jest's --json: the file, then the full name.
            pair_id: "config.test.js::test_b_formats_price",
            // Without it Jest runs in band when the timings it cached from
            // an earlier run show fast files, whatever --maxWorkers says.
            workers_extra: Some("--workerIdleMemoryLimit=100%"),
        },
    );
    // Proof from the subject's processes: each workers run had its two
    // database files run by two worker processes; every other run (the
    // config's maxWorkers 1: eight runs, and the replay) ran them in band,
    // in one process.
    let mut pids_per_run: Vec<usize> = std::fs::read_dir(lab.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".pids"))
        .map(|e| {
            let text = std::fs::read_to_string(e.path()).unwrap();
            let pids: std::collections::BTreeSet<&str> = text.lines().collect();
            pids.len()
        })
        .collect();
    pids_per_run.sort_unstable();
    assert_eq!(pids_per_run, [1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2]);
}

/// Jest runs a single test file in band whatever --maxWorkers says, unless
/// a --workerIdleMemoryLimit is given: the workers cell's run of one file
/// ran it in a jest worker process, the baseline in jest itself.
#[test]
fn jest_workers_cell_runs_even_one_file_in_a_worker_process() {
    let Some(lab) = npm_lab(
        "jest-project",
        "jest 30.5.2 with jest-junit 17.0.0 (npm install)",
    ) else {
        return;
    };
    let (_, report) = lab.run_json(&[
        "-n",
        "1",
        "-p",
        "workers=2x",
        "--",
        "npx",
        "jest",
        "config.test.js",
    ]);
    assert_eq!(
        cell(&report, "workers=2x")["n"].as_u64(),
        Some(1),
        "{report}"
    );
    let ran_in = std::fs::read_to_string(lab.path().join(".ran-in")).unwrap();
    let mut ran_in: Vec<&str> = ran_in.lines().collect();
    ran_in.sort_unstable();
    assert_eq!(ran_in, ["jest", "processChild.js"]);
}

/// Exit 1 is both "tests failed" and a usage error or "No tests found" for
/// Jest, so only the exit-0 empty run can be told apart (see the report).
#[test]
fn jest_empty_run_is_an_error() {
    let Some(lab) = npm_lab(
        "jest-project",
        "jest 30.5.2 with jest-junit 17.0.0 (npm install)",
    ) else {
        return;
    };
    let reason = errored_twice(&lab, &["npx", "jest", "-t", "^nothing_matches_this$"]);
    assert!(reason.contains("jest ran no tests"), "{reason}");
}

/// The fixture's vitest.config.js sets `maxWorkers: 1`, so the baseline is
/// serial on any host (`--maxWorkers` on the command line wins).
#[test]
fn vitest_shuffle_finds_the_order_dependent_pair_and_workers_the_collision() {
    let Some(lab) = npm_lab("vitest-project", "vitest 4.1.12 (npm install)") else {
        return;
    };
    shuffle_and_workers(
        &lab,
        &["npx", "vitest", "run"],
        &Expect {
            runner: "vitest",
            shuffle_args: &["--sequence.shuffle", "--sequence.seed={seed}"],
            pair_id: "config.test.js::test_b_formats_price",
            workers_extra: None,
        },
    );
}

/// As for Jest, exit 1 also means a usage error or "No test files found";
/// only the exit-0 empty run can be told apart.
#[test]
fn vitest_empty_run_is_an_error() {
    let Some(lab) = npm_lab("vitest-project", "vitest 4.1.12 (npm install)") else {
        return;
    };
    // Vitest colours its summary even when piped.
    let reason = errored_twice(
        &lab,
        &["npx", "vitest", "run", "-t", "^nothing_matches_this$"],
    );
    assert!(reason.contains("vitest ran no tests"), "{reason}");
}

#[test]
fn node_test_with_file_arguments_gets_its_options_before_the_files() {
    // node stops reading options at the first file: the recipe's JUnit
    // arguments go right after `node --test` (position = "after-match").
    if !node_available() {
        return;
    }
    let lab = Lab::new();
    copy_fixture(&lab, "node-project", None);
    let (code, report) = lab.run_json(&["-n", "2", "--", "node", "--test", "config.test.js"]);
    assert_eq!(code, 0, "{report}");
    let base = cell(&report, "baseline");
    assert_eq!(
        (base["k"].as_u64(), base["n"].as_u64()),
        (Some(0), Some(2)),
        "{base}"
    );
    assert_eq!(base["runs_with_tests"].as_u64(), Some(2), "{base}");
    let runs = lab.runs();
    let words = argv(&runs[0]);
    let file = words.iter().position(|w| *w == "config.test.js").unwrap();
    let reporter = words
        .iter()
        .position(|w| w.starts_with("--test-reporter"))
        .unwrap();
    assert!(reporter < file, "{words:?}");
}

/// `flakelab quarantine --format jest|vitest` round trip (#14): a history
/// where `suite b flaky` passed and failed on one commit, and the emitted
/// name pattern given to the real runner, which must skip exactly that test
/// (not `suite b flaky two`, whose name it starts). `runner` is the
/// runner's argv (after `node`) writing a jest-style JSON to `out.json`.
fn quarantine_round_trip(project: &str, format: &str, runner: &[&str], package: &str) {
    if !node_available() {
        return;
    }
    let deps = npm_deps(project);
    if !capable(&format!("{format} (npm install)"), deps.is_some()) {
        return;
    }
    let deps = deps.unwrap();
    let lab = Lab::new();
    let store = lab.path().join("s");
    for (attempt, body) in [("1", "<failure message='boom'/>"), ("2", "")] {
        let dir = lab.path().join(format!("a{attempt}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("junit.xml"),
            format!("<testsuite name='js'><testcase classname='q.test.js' name='suite a'/><testcase classname='q.test.js' name='suite b flaky'>{body}</testcase><testcase classname='q.test.js' name='suite b flaky two'/></testsuite>"),
        )
        .unwrap();
        let out = lab
            .cmd()
            .args([
                "ingest",
                "--no-detect",
                "--commit",
                "c1",
                "--run-id",
                "1",
                "--attempt",
                attempt,
                "--store",
            ])
            .arg(&store)
            .arg(&dir)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
    }
    let out = lab
        .cmd()
        .args(["quarantine", "--format", format, "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let pattern = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        pattern,
        "--testNamePattern=^(?!(?:suite\\x20b\\x20flaky)$)\n"
    );
    let dir = lab.path().join("p");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("package.json"), package).unwrap();
    std::fs::write(
        dir.join("q.test.js"),
        format!(
            "{}describe('suite', () => {{\n  test('a', () => {{}});\n  test('b flaky', () => {{}});\n  test('b flaky two', () => {{}});\n}});\n",
            if format == "vitest" {
                "import { describe, test } from 'vitest';\n"
            } else {
                ""
            }
        ),
    )
    .unwrap();
    std::os::unix::fs::symlink(deps.join("node_modules"), dir.join("node_modules")).unwrap();
    let out = std::process::Command::new("node")
        .args(runner)
        .arg(pattern.trim_end())
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let results: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("out.json")).unwrap()).unwrap();
    let mut by_status: Vec<(String, bool)> = results["testResults"][0]["assertionResults"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["fullName"].as_str().unwrap().to_string(),
                a["status"] == "passed",
            )
        })
        .collect();
    by_status.sort();
    assert_eq!(
        by_status,
        [
            ("suite a".to_string(), true),
            ("suite b flaky".to_string(), false),
            ("suite b flaky two".to_string(), true),
        ],
        "{results}"
    );
}

#[test]
fn quarantine_name_pattern_deselects_exactly_the_proven_test_in_real_jest() {
    quarantine_round_trip(
        "jest-project",
        "jest",
        &[
            "node_modules/jest/bin/jest.js",
            "--ci",
            "--json",
            "--outputFile=out.json",
        ],
        "{\"name\":\"q\",\"private\":true}\n",
    );
}

#[test]
fn quarantine_name_pattern_deselects_exactly_the_proven_test_in_real_vitest() {
    quarantine_round_trip(
        "vitest-project",
        "vitest",
        &[
            "node_modules/vitest/vitest.mjs",
            "run",
            "--reporter=json",
            "--outputFile=out.json",
        ],
        "{\"name\":\"q\",\"private\":true,\"type\":\"module\"}\n",
    );
}
