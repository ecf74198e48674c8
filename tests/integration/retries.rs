//! The first attempt counts (issue #35 item 2), with the real runners and
//! their own retry mechanisms: pytest-rerunfailures (`--reruns`), jest's
//! `jest.retryTimes`, vitest's `retry` and Playwright's `retries`. Each
//! suite has a test that fails its first attempt in every run and passes on
//! its retry — decided by a file keyed by the run's `FLAKELAB_RUN_ID`, not
//! by chance: the first attempt of a run creates it and fails, the retry
//! finds it and passes — beside a test that always fails and one that
//! always passes. Every run's first attempt failed, so k = n, and each of
//! those failures "passed on a retry"; the passing test stays clean.

use super::{capable, cell, sh_ok, Lab};

const RUNS: &str = "2";

/// The row of the test whose id ends with `name` in the baseline cell.
fn row<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    let base = cell(report, "baseline");
    base["tests"]
        .as_array()
        .unwrap_or_else(|| panic!("no tests in {base}"))
        .iter()
        .find(|t| t["id"].as_str().unwrap().ends_with(name))
        .unwrap_or_else(|| panic!("no test {name} in {base}"))
}

/// (k, n, passed on a retry) of a row.
fn counts(row: &serde_json::Value) -> (u64, u64, u64) {
    (
        row["k"].as_u64().unwrap(),
        row["n"].as_u64().unwrap(),
        row["passed_on_rerun"].as_u64().unwrap(),
    )
}

/// Runs `command` twice and checks the three tests' rows, the run records
/// and the text report.
fn first_attempts_count(lab: &Lab, command: &[&str], flaky: &str, always: &str, ok: &str) {
    let mut args = vec!["-n", RUNS, "--"];
    args.extend_from_slice(command);
    let (_, report) = lab.run_json(&args);
    assert_eq!(counts(row(&report, flaky)), (2, 2, 2), "{report}");
    assert_eq!(counts(row(&report, always)), (2, 2, 0), "{report}");
    assert_eq!(counts(row(&report, ok)), (0, 2, 0), "{report}");
    // Each run record holds the first attempt's failure and the retry.
    for run in lab.runs() {
        let t = run["tests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"].as_str().unwrap().ends_with(flaky))
            .unwrap_or_else(|| panic!("no {flaky} in {run}"));
        assert_eq!(t["outcome"], "fail", "{t}");
        assert_eq!(t["passed_on_rerun"], true, "{t}");
    }
    // The text report says it in words.
    let out = lab.run(&["report"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("2 of these failures passed on a retry"),
        "{text}"
    );
}

#[test]
fn pytest_reruns_count_the_first_attempt() {
    if !capable(
        "pytest with pytest-rerunfailures (pip install pytest-rerunfailures)",
        sh_ok("python3 -c 'import pytest, pytest_rerunfailures'"),
    ) {
        return;
    }
    let lab = Lab::new();
    std::fs::write(
        lab.path().join("test_retry.py"),
        r#"import os


def first_attempt_of_this_run_fails():
    mark = ".first-" + os.environ["FLAKELAB_RUN_ID"]
    if not os.path.exists(mark):
        open(mark, "w").close()
        raise AssertionError("the first attempt of this run fails")


def test_flaky():
    first_attempt_of_this_run_fails()


def test_always():
    assert False, "always fails"


def test_ok():
    pass
"#,
    )
    .unwrap();
    first_attempts_count(
        &lab,
        &[
            "python3",
            "-m",
            "pytest",
            "-p",
            "no:randomly",
            "--reruns",
            "2",
            "test_retry.py",
        ],
        "::test_flaky",
        "::test_always",
        "::test_ok",
    );
}

/// The JavaScript helper: the first attempt of each run throws.
const JS_FIRST: &str = r#"
function firstAttemptOfThisRunFails() {
  const mark = `${process.cwd()}/.first-${process.env.FLAKELAB_RUN_ID}`;
  if (!fs.existsSync(mark)) {
    fs.writeFileSync(mark, '');
    throw new Error('the first attempt of this run fails');
  }
}
"#;

#[test]
fn jest_retry_times_count_the_first_attempt() {
    let Some(lab) = super::runner_node::npm_lab("jest-project", "jest 30.5.2 (npm install)") else {
        return;
    };
    std::fs::write(
        lab.path().join("retry.test.js"),
        format!(
            "const fs = require('fs');\n{JS_FIRST}\njest.retryTimes(1);\n\
             test('flaky', () => firstAttemptOfThisRunFails());\n\
             test('always', () => {{ throw new Error('always fails'); }});\n\
             test('ok', () => {{}});\n"
        ),
    )
    .unwrap();
    first_attempts_count(
        &lab,
        &["npx", "jest", "retry.test.js"],
        "::flaky",
        "::always",
        "::ok",
    );
}

#[test]
fn vitest_retry_counts_the_first_attempt() {
    let Some(lab) = super::runner_node::npm_lab("vitest-project", "vitest 4.1.12 (npm install)")
    else {
        return;
    };
    std::fs::write(
        lab.path().join("retry.test.js"),
        format!(
            "import {{ test }} from 'vitest';\nimport fs from 'node:fs';\n{JS_FIRST}\n\
             test('flaky', {{ retry: 1 }}, () => firstAttemptOfThisRunFails());\n\
             test('always', {{ retry: 1 }}, () => {{ throw new Error('always fails'); }});\n\
             test('ok', () => {{}});\n"
        ),
    )
    .unwrap();
    first_attempts_count(
        &lab,
        &["npx", "vitest", "run", "retry.test.js"],
        "::flaky",
        "::always",
        "::ok",
    );
}

#[test]
fn playwright_retries_count_the_first_attempt() {
    // No browser is launched: these tests take no page.
    let Some(lab) = super::runner_node::npm_lab(
        "playwright-project",
        "@playwright/test 1.65.1 (npm install)",
    ) else {
        return;
    };
    std::fs::write(
        lab.path().join("tests/retry.spec.js"),
        format!(
            "const {{ test }} = require('@playwright/test');\nconst fs = require('fs');\n{JS_FIRST}\n\
             test('flaky', () => firstAttemptOfThisRunFails());\n\
             test('always', () => {{ throw new Error('always fails'); }});\n\
             test('ok', () => {{}});\n"
        ),
    )
    .unwrap();
    first_attempts_count(
        &lab,
        &[
            "npx",
            "playwright",
            "test",
            "--retries=1",
            "tests/retry.spec.js",
        ],
        "::flaky",
        "::always",
        "::ok",
    );
}

/// History and the check gate: a CI report from real pytest with
/// `--reruns 2`, in which `test_flaky` failed and then passed on its rerun,
/// is ingested as a failure that passed on a retry — a disagreement on one
/// commit — and the gate, whose baseline saw the test pass, fails on it.
#[test]
fn history_counts_a_rerun_pass_as_its_failed_first_attempt_and_the_gate_fails() {
    if !capable(
        "pytest with pytest-rerunfailures (pip install pytest-rerunfailures)",
        sh_ok("python3 -c 'import pytest, pytest_rerunfailures'"),
    ) {
        return;
    }
    let lab = Lab::new();
    std::fs::write(
        lab.path().join("test_retry.py"),
        "import os\n\n\ndef test_flaky():\n    mark = '.first-' + os.environ['FLAKELAB_RUN_ID']\n    if not os.path.exists(mark):\n        open(mark, 'w').close()\n        raise AssertionError('first attempt fails')\n\n\ndef test_ok():\n    pass\n",
    )
    .unwrap();
    let pytest = |run: &str| {
        let out = std::process::Command::new("python3")
            .args([
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "-p",
                "no:randomly",
            ])
            .args([
                "--reruns",
                "2",
                &format!("--junitxml={run}.xml"),
                "test_retry.py",
            ])
            .env("FLAKELAB_RUN_ID", run)
            .current_dir(lab.path())
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    };
    let ingest = |run: &str, commit: &str| {
        let xml = format!("{run}.xml");
        let out = lab.run(&[
            "ingest",
            "--no-detect",
            "--commit",
            commit,
            "--run-id",
            run,
            &xml,
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    // c0: the first attempt passed (its mark was there already).
    std::fs::write(lab.path().join(".first-r0"), "").unwrap();
    pytest("r0");
    ingest("r0", "c0");
    let out = lab.run(&["check", "--write-baseline"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // c1: it failed, then passed on its rerun.
    pytest("r1");
    ingest("r1", "c1");
    let out = lab.run(&["history", "--format", "json", "--min-runs", "1"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let test = json["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["test"] == "test_retry::test_flaky")
        .unwrap_or_else(|| panic!("no test_flaky in {json}"));
    assert_eq!(test["finding"], "same-commit", "{test}");
    let ctx = &test["contexts"][0];
    assert_eq!(
        (
            ctx["k"].as_u64(),
            ctx["n"].as_u64(),
            ctx["passed_on_retry"].as_u64()
        ),
        (Some(1), Some(2), Some(1)),
        "{test}"
    );
    assert!(
        test["statement"]
            .as_str()
            .unwrap()
            .contains("1 failed, 1 of the failures passed on a retry, 0 passed (run r1 failing; run r1 passing)"),
        "{test}"
    );
    // The gate: a test that passes only on a retry is not clean.
    let out = lab.run(&["check"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("test_flaky"));
}

/// pytest-rerunfailures 16.6 and before keep only a test's last attempt in
/// pytest's JUnit: nothing there shows the first. The run does not pass
/// that off as clean: the report says how many runs retried attempts their
/// report does not hold, and what to install. (16.6 is loaded through
/// PYTHONPATH from where scripts/test.sh puts it.)
#[test]
fn pytest_rerunfailures_before_16_6_1_is_said_not_hidden() {
    let old = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("pytest-rerunfailures-16.6");
    if !capable(
        "pytest-rerunfailures 16.6 in target/tmp (scripts/test.sh installs it)",
        old.join("pytest_rerunfailures.py").is_file() && sh_ok("python3 -m pytest --version"),
    ) {
        return;
    }
    let lab = Lab::new();
    std::fs::write(
        lab.path().join("test_retry.py"),
        "import os\n\n\ndef test_flaky():\n    mark = '.first-' + os.environ['FLAKELAB_RUN_ID']\n    if not os.path.exists(mark):\n        open(mark, 'w').close()\n        raise AssertionError('first attempt fails')\n",
    )
    .unwrap();
    let out = lab
        .cmd()
        .env("PYTHONPATH", &old)
        .args([
            "run",
            "-n",
            "2",
            "--",
            "python3",
            "-m",
            "pytest",
            "-p",
            "no:randomly",
        ])
        .args(["--reruns", "1", "test_retry.py"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "2 of 2 runs: the runner retried 1 attempt(s) but its report keeps none of them"
        ),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("pytest-rerunfailures>=16.6.1"), "{text}");
}
