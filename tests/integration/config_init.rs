//! `flakelab init` on the fixture projects, and the precedence of
//! `flakelab run`'s settings end to end: flags over `FLAKELAB_*` variables
//! over `flakelab.toml` over the defaults (issue 6).

use std::path::Path;
use std::process::Output;

use super::{cell, copy_fixture, report_from, Lab};

/// A subject that passes at once.
const PASS: &[&str] = &["sh", "-c", "exit 0"];

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn loaded(dir: &Path) -> flakelab::context::config::ProjectConfig {
    flakelab::context::config::load(dir)
        .unwrap_or_else(|e| panic!("flakelab.toml does not load: {e}"))
        .expect("a flakelab.toml")
}

fn lane(dir: &Path) -> Vec<String> {
    loaded(dir).lane.expect("a [lane]").argv().unwrap()
}

/// `flakelab run --format json ARGS` with extra variables.
fn run_json_env(lab: &Lab, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut c = lab.cmd();
    c.envs(env.iter().copied())
        .args(["run", "--format", "json"])
        .args(args);
    c.output().expect("flakelab runs")
}

/// (cell name, n) for every cell of a report, and the runs it recorded.
fn counts(report: &serde_json::Value) -> (Vec<(String, u64)>, u64) {
    let cells = report["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["n"].as_u64().unwrap(),
            )
        })
        .collect();
    (cells, report["recorded"].as_u64().unwrap())
}

#[test]
fn init_detects_the_runner_of_each_fixture_project() {
    // Where each project's per-test rows come from, as the file says it
    // (None: the recipe injects a JUnit report).
    for (fixture, command, file, own) in [
        ("pytest-project", "pytest", "pytest.ini", None),
        (
            "cargo-project",
            "cargo test",
            "Cargo.toml",
            Some("libtest's output"),
        ),
        (
            "go-project",
            "go test ./...",
            "go.mod",
            Some("go test -json"),
        ),
        (
            "jest-project",
            "npx jest",
            "package.json",
            Some("jest --json"),
        ),
        (
            "vitest-project",
            "npx vitest run",
            "package.json",
            Some("vitest --reporter=json"),
        ),
    ] {
        let lab = Lab::new();
        copy_fixture(&lab, fixture);
        let out = lab.run(&["init"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{fixture}: {}",
            text(&out.stderr)
        );
        let said = text(&out.stdout);
        assert!(
            said.contains(&format!("detected: `{command}` from {file}")),
            "{fixture}: {said}"
        );
        let path = lab.path().join("flakelab.toml");
        assert!(
            said.contains(&format!("wrote {}", path.display())),
            "{said}"
        );
        assert_eq!(
            lane(lab.path()),
            shell_words::split(command).unwrap(),
            "{fixture}"
        );
        let config = loaded(lab.path());
        assert_eq!(config.run.matrix, ["standard"], "{fixture}");
        assert_eq!(config.run.runs, None, "{fixture}: runs is commented out");
        let written = std::fs::read_to_string(&path).unwrap();
        assert!(written.contains("FLAKELAB_RUNS"), "{written}");
        // The recipe injects JUnit for pytest; go test, cargo test, jest
        // and vitest give a row per test from their own output, and the
        // file says so. None of them counts by exit code.
        assert!(
            !written.contains("count by exit code"),
            "{fixture}: {written}"
        );
        match own {
            Some(from) => assert!(
                written.contains(&format!(
                    "reads a row per test from the runner's own output ({from})"
                )),
                "{fixture}: {written}"
            ),
            None => assert!(
                written.contains("recipe asks the runner for one per run"),
                "{fixture}: {written}"
            ),
        }
        assert_eq!(config.run.junit, None, "{fixture}");
        // The fixture itself is never written to.
        let source = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(fixture)
            .join("flakelab.toml");
        assert!(!source.exists(), "{}", source.display());
    }
}

#[test]
fn init_finds_a_node_test_script_and_says_how_to_name_a_command_when_nothing_is_found() {
    let lab = Lab::new();
    copy_fixture(&lab, "node-project");
    let out = lab.run(&["init"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(err.contains("no test runner detected"), "{err}");
    assert!(
        err.contains("hint: name the command: `flakelab init -- YOUR TEST COMMAND`"),
        "{err}"
    );
    assert!(!lab.path().join("flakelab.toml").exists());

    std::fs::write(
        lab.path().join("package.json"),
        r#"{"name": "x", "scripts": {"test": "node --test"}}"#,
    )
    .unwrap();
    let out = lab.run(&["init"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(
        said.contains("detected: `node --test` from package.json"),
        "{said}"
    );
    assert!(said.contains("runner recipe: node-test"), "{said}");
    assert_eq!(lane(lab.path()), ["node", "--test"]);
}

#[test]
fn init_refuses_to_overwrite_without_force() {
    let lab = Lab::new();
    let path = lab.path().join("flakelab.toml");
    std::fs::write(&path, "# mine\n").unwrap();
    let out = lab.run(&["init", "--", "pytest"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("already exists") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "# mine\n");

    let out = lab.run(&["init", "--force", "--", "pytest"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(lane(lab.path()), ["pytest"]);
}

#[test]
fn init_with_a_command_records_it_and_its_workers_in_the_subjects_directory() {
    let lab = Lab::new();
    std::fs::create_dir(lab.path().join("sub")).unwrap();
    let out = lab.run(&["init", "-C", "sub", "--", "pytest", "-n", "4", "tests dir"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(
        said.contains("command: `pytest -n 4 'tests dir'` (given after `--`)"),
        "{said}"
    );
    assert!(!lab.path().join("flakelab.toml").exists());
    let sub = lab.path().join("sub");
    let config = loaded(&sub);
    let lane = config.lane.unwrap();
    assert_eq!(lane.argv().unwrap(), ["pytest", "-n", "4", "tests dir"]);
    assert_eq!(lane.workers, Some(4));

    // A command no recipe knows is written too, and runs by exit code.
    let out = lab.run(&["init", "--force", "-C", "sub", "--", "sh", "-c", "exit 0"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("runner recipe: none"));
    assert_eq!(loaded(&sub).lane.unwrap().workers, None);
}

#[test]
fn runs_per_cell_come_from_the_flag_then_the_variable_then_the_file() {
    let lab = Lab::new();
    let cells = ["-p", "env=LAB_CELL=1", "--"];
    let args: Vec<&str> = cells.iter().chain(PASS).copied().collect();

    // Default: 20 per cell (no file, no variable) is covered by run_stats;
    // here the file says 3.
    std::fs::write(lab.path().join("flakelab.toml"), "[run]\nruns = 3\n").unwrap();
    let report = report_from(&run_json_env(&lab, &[], &args), 0);
    assert_eq!(report["schema"], "flakelab.report/1");
    let (n, recorded) = counts(&report);
    assert_eq!(
        n,
        [
            ("baseline".to_string(), 3),
            ("env=LAB_CELL=1".to_string(), 3)
        ]
    );
    assert_eq!(recorded, 6);

    let report = report_from(&run_json_env(&lab, &[("FLAKELAB_RUNS", "4")], &args), 0);
    assert_eq!(
        counts(&report).0.iter().map(|c| c.1).collect::<Vec<_>>(),
        [4, 4]
    );
    assert_eq!(counts(&report).1, 8);

    let mut flagged = vec!["-n", "5"];
    flagged.extend(&args);
    let report = report_from(&run_json_env(&lab, &[("FLAKELAB_RUNS", "4")], &flagged), 0);
    assert_eq!(
        counts(&report).0.iter().map(|c| c.1).collect::<Vec<_>>(),
        [5, 5]
    );
    assert_eq!(counts(&report).1, 10);
    assert_eq!(lab.runs().len(), 6 + 8 + 10);
}

#[test]
fn the_configured_matrix_runs_when_no_cell_is_given() {
    let lab = Lab::new();
    std::fs::write(
        lab.path().join("flakelab.toml"),
        "[run]\nruns = 1\nmatrix = [\"zones\"]\n",
    )
    .unwrap();
    let catalog = flakelab::catalog::Catalog::load(None).unwrap();
    let zones = &catalog.matrix("zones").expect("a zones matrix").cells;
    let names = |report: &serde_json::Value| -> Vec<String> {
        counts(report).0.into_iter().map(|(name, _)| name).collect()
    };
    let mut want = vec!["baseline".to_string()];
    want.extend(zones.iter().cloned());

    // (no shams: the test is about which cells the layers give)
    let mut args = vec!["--no-sham", "--"];
    args.extend(PASS);
    let report = report_from(&run_json_env(&lab, &[], &args), 0);
    assert_eq!(names(&report), want);
    for zone in zones {
        assert_eq!(cell(&report, zone)["applied"], true);
    }

    // A cell given by hand replaces the configured matrix...
    let mut by_hand = vec!["-p", "env=LAB_CELL=1", "--"];
    by_hand.extend(PASS);
    let report = report_from(&run_json_env(&lab, &[], &by_hand), 0);
    assert_eq!(names(&report), ["baseline", "env=LAB_CELL=1"]);

    // ...and FLAKELAB_MATRIX replaces it too; a name it gets wrong is named.
    let report = report_from(
        &run_json_env(
            &lab,
            &[("FLAKELAB_MATRIX", "resources,zones")],
            &["-n", "1", "-p", "env=LAB_CELL=1", "--", "true"],
        ),
        0,
    );
    assert_eq!(names(&report), ["baseline", "env=LAB_CELL=1"]);
    let out = run_json_env(&lab, &[("FLAKELAB_MATRIX", "zones,nope")], &args);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("unknown matrix `nope` (from FLAKELAB_MATRIX)"),
        "{err}"
    );
}

#[test]
fn the_lane_runs_when_no_command_is_given() {
    let lab = Lab::new();
    let out = lab.run(&["run", "-n", "1"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("no test command"), "{err}");
    assert!(err.contains("flakelab init -- YOUR TEST COMMAND"), "{err}");

    std::fs::write(
        lab.path().join("flakelab.toml"),
        "[lane]\ncommand = \"sh -c 'echo ran >> lane-ran'\"\n[run]\nruns = 2\n",
    )
    .unwrap();
    let out = run_json_env(&lab, &[], &[]);
    let report = report_from(&out, 0);
    assert_eq!(
        report["command"],
        serde_json::json!(["sh", "-c", "echo ran >> lane-ran"])
    );
    assert_eq!(cell(&report, "baseline")["n"].as_u64(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("running the lane ([lane] command in"), "{err}");
    let ran = std::fs::read_to_string(lab.path().join("lane-ran")).unwrap();
    assert_eq!(ran.lines().count(), 2);

    // A command after `--` replaces the lane.
    let mut args = vec!["--"];
    args.extend(PASS);
    let report = report_from(&run_json_env(&lab, &[], &args), 0);
    assert_eq!(report["command"], serde_json::json!(PASS));
}

#[test]
fn the_subjects_directory_holds_the_file() {
    let lab = Lab::new();
    std::fs::create_dir(lab.path().join("sub")).unwrap();
    std::fs::write(lab.path().join("sub/flakelab.toml"), "[run]\nruns = 2\n").unwrap();
    let mut args = vec!["-C", "sub", "--"];
    args.extend(PASS);
    let report = report_from(&run_json_env(&lab, &[], &args), 0);
    assert_eq!(cell(&report, "baseline")["n"].as_u64(), Some(2));
}

#[test]
fn bad_settings_are_usage_errors_naming_where_they_came_from() {
    let lab = Lab::new();
    let mut args = vec!["-p", "env=LAB_CELL=1", "--"];
    args.extend(["touch", "ran"]);
    let check = |env: &[(&str, &str)], wants: &[&str]| {
        let out = run_json_env(&lab, env, &args);
        assert_eq!(out.status.code(), Some(2), "{env:?}");
        let err = text(&out.stderr);
        for want in wants {
            assert!(err.contains(want), "{env:?}: {want} not in {err}");
        }
        assert!(err.contains("hint:"), "{err}");
        assert!(!lab.path().join("ran").exists());
        assert!(lab.runs().is_empty());
    };
    check(&[("FLAKELAB_RUNS", "lots")], &["FLAKELAB_RUNS", "lots"]);
    check(&[("FLAKELAB_JOBS", "0")], &["FLAKELAB_JOBS"]);
    check(&[("FLAKELAB_CONFIDENCE", "2")], &["FLAKELAB_CONFIDENCE"]);
    check(&[("FLAKELAB_TIMEOUT", "soon")], &["FLAKELAB_TIMEOUT"]);
    check(&[("FLAKELAB_KILL_GRACE", "5")], &["FLAKELAB_KILL_GRACE"]);
    check(
        &[("FLAKELAB_JUNIT", "r/{nope}.xml")],
        &["FLAKELAB_JUNIT", "{nope}"],
    );

    std::fs::write(lab.path().join("flakelab.toml"), "[run]\nrunz = 3\n").unwrap();
    check(&[], &["flakelab.toml", "runz"]);
    std::fs::write(
        lab.path().join("flakelab.toml"),
        "[run]\ntimeout = \"soon\"\n",
    )
    .unwrap();
    check(&[], &["flakelab.toml", "[run] timeout"]);
    std::fs::write(
        lab.path().join("flakelab.toml"),
        "[run]\njunit = \"r.xml\"\njobs = 2\n",
    )
    .unwrap();
    check(&[], &["[run] junit in", "[run] jobs in", "{run}"]);
}

#[test]
fn junit_in_the_given_command_beats_a_configured_junit_path() {
    let lab = Lab::new();
    std::fs::write(
        lab.path().join("flakelab.toml"),
        "[run]\nruns = 2\njunit = \"from-file.xml\"\n",
    )
    .unwrap();
    let writes = "printf '<testsuite tests=\"1\"><testcase classname=\"a\" name=\"b\"/></testsuite>' > \"$0\"";
    let out = run_json_env(&lab, &[], &["--", "sh", "-c", writes, "{junit}"]);
    let report = report_from(&out, 0);
    assert_eq!(cell(&report, "baseline")["n"].as_u64(), Some(2));
    assert!(!lab.path().join("from-file.xml").exists());
    for run in lab.runs() {
        let argv = super::run_argv(&run);
        assert!(
            argv[3].ends_with(".xml") && argv[3] != "from-file.xml",
            "{argv:?}"
        );
    }
    // Given as a flag too, the two are in conflict.
    let out = run_json_env(
        &lab,
        &[],
        &["--junit", "x.xml", "--", "sh", "-c", writes, "{junit}"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("both --junit and `{junit}`"));
}
