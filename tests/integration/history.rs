//! History from CI (#14) end to end: the fixture history of
//! `tests/fixtures/ci-history` (see its generate.py) ingested through the
//! real binary, asserted as numbers; dedup on write and on read (`cat`);
//! compaction; the check gate; quarantine lists round-tripped through real
//! pytest and go.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::{capable, sh_ok, Lab};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ci-history")
}

/// The report directories of the main history (runs on main and feature/x,
/// and the second aggregator's copy), in CI order.
fn main_dirs() -> Vec<PathBuf> {
    let f = fixture();
    let mut dirs = Vec::new();
    for run in ["run-101", "run-102", "run-103", "run-104", "run-201"] {
        let mut legs: Vec<PathBuf> = std::fs::read_dir(f.join(run))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        legs.sort();
        dirs.extend(legs);
    }
    dirs.push(f.join("aggregator/run-104/l2"));
    dirs
}

fn cmd(lab: &Lab) -> Command {
    let mut c = lab.cmd();
    for v in [
        "GITHUB_ACTIONS",
        "GITHUB_STEP_SUMMARY",
        "GITLAB_CI",
        "BUILDKITE",
        "CIRCLECI",
        "JENKINS_URL",
    ] {
        c.env_remove(v);
    }
    c
}

/// `flakelab ingest` of one report directory with the flags its CI job had.
fn ingest(lab: &Lab, store: &Path, dir: &Path) -> Output {
    let flags = std::fs::read_to_string(dir.join("flags.txt")).unwrap();
    let out = cmd(lab)
        .arg("ingest")
        .arg("--store")
        .arg(store)
        .args(flags.lines())
        .arg(dir)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn history(lab: &Lab, store: &Path) -> serde_json::Value {
    let out = cmd(lab)
        .args(["history", "--format", "json", "--store"])
        .arg(store)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn test<'a>(h: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    h["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["test"] == id)
        .unwrap_or_else(|| panic!("no test {id}"))
}

fn ctx<'a>(t: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    t["contexts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["context"] == name)
        .unwrap_or_else(|| panic!("no context {name} in {t}"))
}

const L1: &str =
    "arch=x64,branch=main,image=ubuntu-24.04,os=linux,runtime=python,runtime_version=3.11";
const L2: &str =
    "arch=x64,branch=main,image=ubuntu-24.04,os=linux,runtime=python,runtime_version=3.12";
const L3: &str =
    "arch=arm64,branch=main,image=ubuntu-24.04-arm,os=linux,runtime=python,runtime_version=3.12";
const F1: &str =
    "arch=x64,branch=feature/x,image=ubuntu-24.04,os=linux,runtime=python,runtime_version=3.11";
const GO: &str = "arch=x64,branch=main,os=linux,runtime=go,runtime_version=1.22";

fn kn(c: &serde_json::Value) -> (u64, u64) {
    (c["k"].as_u64().unwrap(), c["n"].as_u64().unwrap())
}

fn ingest_main(lab: &Lab, store: &Path) -> Vec<String> {
    main_dirs()
        .iter()
        .map(|d| String::from_utf8_lossy(&ingest(lab, store, d).stdout).into_owned())
        .collect()
}

#[test]
fn history_fixture_gives_exact_counts_contexts_findings_and_associations() {
    let lab = Lab::new();
    let store = lab.path().join("s");
    let outs = ingest_main(&lab, &store);
    // The aggregator's copy of run 104 l2 is the same execution.
    assert!(
        outs.last().unwrap().contains("ingested 0 report(s)")
            && outs.last().unwrap().contains("1 already recorded"),
        "{outs:?}"
    );
    let h = history(&lab, &store);
    assert_eq!(h["read"]["reports"], 15);
    assert_eq!(h["tests"].as_array().unwrap().len(), 6);

    // Three legs whose run-101 reports are byte for byte the same: three
    // executions, not one (test_fixed failed in each on c1 and c2).
    let fixed = test(&h, "tests.test_app::test_fixed");
    assert_eq!(fixed["finding"], "cross-commit");
    assert_eq!(
        (fixed["k"].as_u64(), fixed["n"].as_u64()),
        (Some(6), Some(14))
    );
    for (c, n) in [(L1, 5), (L2, 4), (L3, 4)] {
        let r = ctx(fixed, c);
        assert_eq!(kn(r), (2, n), "{c}");
        assert_eq!(r["transitions"], 1);
        assert_eq!(r["passing_since"]["commit"], "c3");
        assert_eq!(r["passing_since"]["commits"], 2);
    }

    // One disagreement on one commit (c3, l1: attempt 1 failed, the re-run
    // passed): proven, named with its runs.
    let flaky = test(&h, "tests.test_app::test_flaky");
    assert_eq!(flaky["finding"], "same-commit");
    let same = flaky["same_commit"].as_array().unwrap();
    assert_eq!(same.len(), 1);
    assert_eq!(same[0]["commit"], "c3");
    assert_eq!(same[0]["context"], L1);
    assert_eq!(
        (same[0]["failed"].as_u64(), same[0]["passed"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(same[0]["failing_runs"], serde_json::json!(["run 103"]));
    assert_eq!(
        same[0]["passing_runs"],
        serde_json::json!(["run 103 attempt 2"])
    );
    let l1 = ctx(flaky, L1);
    assert_eq!(kn(l1), (1, 5));
    assert_eq!(l1["commits"], 4);
    // c1 pass, c2 pass, c3 both, c4 pass: two changes, within main only.
    assert_eq!(l1["transitions"], 2);
    assert_eq!(l1["same_commit"], 1);
    assert!((l1["low"].as_f64().unwrap() - 0.00505).abs() < 1e-4, "{l1}");
    assert!(
        (l1["high"].as_f64().unwrap() - 0.71642).abs() < 1e-4,
        "{l1}"
    );
    // The feature branch is its own context: its failure makes no transition on main.
    assert_eq!(kn(ctx(flaky, F1)), (1, 1));
    assert_eq!(ctx(flaky, F1)["transitions"], 0);

    // -count=12 keeps its twelve.
    let pool = test(&h, "example.com/pool::TestPool");
    assert_eq!(pool["finding"], "same-commit");
    assert_eq!(kn(ctx(pool, GO)), (1, 12));
    assert_eq!(pool["same_commit"][0]["passed"], 11);

    // Fails only on the arm64 leg, on the same commits the others pass.
    let arm = test(&h, "tests.test_app::test_arm");
    assert_eq!(arm["finding"], "context-split");
    assert_eq!(kn(ctx(arm, L3)), (3, 4));
    assert_eq!(kn(ctx(arm, L1)), (0, 5));
    let splits = arm["context_splits"].as_array().unwrap();
    assert_eq!(
        splits
            .iter()
            .map(|s| s["commit"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["c2", "c3", "c4"]
    );
    let by_arch = arm["associations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["dimension"] == "arch")
        .unwrap();
    assert_eq!(by_arch["value"], "arm64");
    assert_eq!(
        (by_arch["failed_in"].as_u64(), by_arch["ran_in"].as_u64()),
        (Some(3), Some(4))
    );
    assert_eq!(
        (by_arch["failed_out"].as_u64(), by_arch["ran_out"].as_u64()),
        (Some(0), Some(10))
    );
    // Fisher: C(4,3)C(10,0)/C(14,3) = 4/364 (the only table as extreme).
    assert!((by_arch["p"].as_f64().unwrap() - 4.0 / 364.0).abs() < 1e-9);
    assert_eq!(by_arch["inseparable_from"], serde_json::json!(["image"]));
    // Holm over every (test, dimension): 12 tables, so not significant with 14 runs.
    assert!((by_arch["p_holm"].as_f64().unwrap() - 12.0 * 4.0 / 364.0).abs() < 1e-9);
    assert_eq!(by_arch["significant"], false);

    let skip = test(&h, "tests.test_app::test_skip");
    assert_eq!(skip["finding"], "always-skipped");
    assert_eq!(
        skip["statement"],
        "skipped in all 14 runs: more runs will not change this"
    );
    assert_eq!(
        test(&h, "tests.test_app::test_stable")["finding"],
        "passing"
    );

    let table = cmd(&lab)
        .args(["history", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.contains("passed and failed on the same commit c3"),
        "{table}"
    );
    let md = cmd(&lab)
        .args(["history", "--format", "markdown", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&md.stdout).starts_with("## History from CI\n"));
}

fn figures(h: &serde_json::Value) -> serde_json::Value {
    h["tests"].clone()
}

#[test]
fn ingesting_twice_cat_of_two_stores_and_compaction_change_no_figure() {
    let lab = Lab::new();
    let one = lab.path().join("one");
    ingest_main(&lab, &one);
    let before = figures(&history(&lab, &one));
    // The same directories again: nothing recorded.
    let again = ingest_main(&lab, &one);
    assert!(
        again.iter().all(|o| o.contains("ingested 0 report(s)")),
        "{again:?}"
    );
    assert_eq!(figures(&history(&lab, &one)), before);

    // Half into one store, half into another, then `cat` (with an overlap:
    // both hold run-103).
    let (a, b) = (lab.path().join("a"), lab.path().join("b"));
    let dirs = main_dirs();
    for d in &dirs[..9] {
        ingest(&lab, &a, d);
    }
    for d in &dirs[6..] {
        ingest(&lab, &b, d);
    }
    let path = |s: &Path| flakelab::store::Store::at(s).history_path();
    let mut catted = std::fs::read(path(&a)).unwrap();
    catted.extend(std::fs::read(path(&b)).unwrap());
    let merged = lab.path().join("merged");
    std::fs::create_dir_all(path(&merged).parent().unwrap()).unwrap();
    std::fs::write(path(&merged), &catted).unwrap();
    let h = history(&lab, &merged);
    assert_eq!(figures(&h), before);
    assert_eq!(h["read"]["reports"], 15);
    assert_eq!(h["read"]["duplicate_reports"], 3);

    // Compaction: the same figures, a smaller file, and a report ingested
    // again still counts once.
    let out = cmd(&lab)
        .args(["compact", "--store"])
        .arg(&one)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(figures(&history(&lab, &one)), before);
    let again = ingest_main(&lab, &one);
    assert!(
        again.iter().all(|o| o.contains("ingested 0 report(s)")),
        "{again:?}"
    );
    assert_eq!(figures(&history(&lab, &one)), before);
}

#[test]
fn a_reingested_report_and_a_rerun_attempt_and_an_unreadable_report() {
    let lab = Lab::new();
    let store = lab.path().join("s");
    let f = fixture();
    ingest(&lab, &store, &f.join("run-103/l1"));
    // The same file from another place: the same execution.
    let copy = lab.path().join("elsewhere/l1");
    std::fs::create_dir_all(&copy).unwrap();
    for n in ["junit.xml", "flags.txt"] {
        std::fs::copy(f.join("run-103/l1").join(n), copy.join(n)).unwrap();
    }
    let out = ingest(&lab, &store, &copy);
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 already recorded"));
    // The same bytes as attempt 2: a re-run, counted again.
    let flags = std::fs::read_to_string(copy.join("flags.txt")).unwrap();
    let flags = flags.replace("--attempt\n1\n", "--attempt\n2\n");
    let out = cmd(&lab)
        .arg("ingest")
        .arg("--store")
        .arg(&store)
        .args(flags.lines())
        .arg(&copy)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("ingested 1 report(s)"));
    let h = history(&lab, &store);
    assert_eq!(kn(ctx(test(&h, "tests.test_app::test_flaky"), L1)), (2, 2));

    // A truncated report beside a good one: the good one is recorded, exit 2.
    let mixed = lab.path().join("mixed");
    std::fs::create_dir_all(&mixed).unwrap();
    std::fs::write(mixed.join("cut.xml"), "<testsuite><testcase name='a'>").unwrap();
    std::fs::copy(f.join("run-104/l1/junit.xml"), mixed.join("ok.xml")).unwrap();
    let out = cmd(&lab)
        .args(["ingest", "--no-detect", "--commit", "c4", "--store"])
        .arg(&store)
        .arg(&mixed)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cut.xml") && err.contains("not well-formed"),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("ingested 1 report(s)"));
    let out = cmd(&lab)
        .args(["ingest", "--store"])
        .arg(&store)
        .arg(lab.path().join("nothing-*.xml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("names no JUnit report"));
}

fn check(lab: &Lab, store: &Path, baseline: &Path, summary: &Path) -> Output {
    cmd(lab)
        .args(["check", "--annotations", "--store"])
        .arg(store)
        .arg("--baseline")
        .arg(baseline)
        .env("GITHUB_STEP_SUMMARY", summary)
        .output()
        .unwrap()
}

#[test]
fn check_passes_a_disagreement_the_baseline_knows_and_fails_a_new_one() {
    let lab = Lab::new();
    let base = lab.path().join("flakelab-baseline.json");
    let summary = lab.path().join("summary.md");
    let (known, new) = (lab.path().join("known"), lab.path().join("new"));
    ingest_main(&lab, &known);
    let out = cmd(&lab)
        .args(["check", "--store"])
        .arg(&known)
        .arg("--baseline")
        .arg(&base)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "no baseline yet");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--write-baseline"));
    let out = cmd(&lab)
        .args(["check", "--write-baseline", "--store"])
        .arg(&known)
        .arg("--baseline")
        .arg(&base)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let b: serde_json::Value = serde_json::from_slice(&std::fs::read(&base).unwrap()).unwrap();
    assert_eq!(b["schema"], "flakelab.baseline/1");
    assert_eq!(b["entries"].as_array().unwrap().len(), 7);

    // Later, l1 disagrees again on c5: already proven in that context.
    let later = fixture().join("later/run-105");
    ingest(&lab, &known, &later.join("l1-attempt1"));
    ingest(&lab, &known, &later.join("l1-attempt2"));
    let out = check(&lab, &known, &base, &summary);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        !summary.exists()
            || std::fs::read_to_string(&summary)
                .unwrap()
                .contains("Passed")
    );

    // Elsewhere, l2 disagrees on c5: newly proven there.
    ingest_main(&lab, &new);
    ingest(&lab, &new, &later.join("l2-attempt1"));
    ingest(&lab, &new, &later.join("l2-attempt2"));
    std::fs::remove_file(&summary).ok();
    let out = check(&lab, &new, &base, &summary);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    insta::assert_snapshot!("check_new_disagreement", text);
    insta::assert_snapshot!(
        "check_step_summary",
        std::fs::read_to_string(&summary).unwrap()
    );
}

fn pytest_available() -> bool {
    capable(
        "pytest (python3 -m pytest)",
        sh_ok("python3 -m pytest --version"),
    )
}

fn go_available() -> bool {
    capable("go (Debian golang-go)", sh_ok("go version"))
}

fn quarantine(lab: &Lab, store: &Path, format: &str) -> String {
    let out = cmd(lab)
        .args(["quarantine", "--format", format, "--store"])
        .arg(store)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn quarantine_lists_deselect_exactly_the_proven_tests_in_real_pytest_and_go() {
    let lab = Lab::new();
    let store = lab.path().join("s");
    ingest_main(&lab, &store);
    let yaml = quarantine(&lab, &store, "yaml");
    assert!(
        yaml.contains("test: \"tests.test_app::test_flaky\"")
            && yaml.contains("test: \"example.com/pool::TestPool\""),
        "{yaml}"
    );
    assert_eq!(yaml.matches("- test:").count(), 2);

    if pytest_available() {
        let py = lab.path().join("py");
        std::fs::create_dir_all(py.join("tests")).unwrap();
        std::fs::write(py.join("tests/__init__.py"), "").unwrap();
        let body: String = [
            "test_stable",
            "test_fixed",
            "test_arm",
            "test_flaky",
            "test_skip",
        ]
        .iter()
        .map(|n| format!("def {n}():\n    pass\n\n"))
        .collect();
        std::fs::write(py.join("tests/test_app.py"), body).unwrap();
        let args = quarantine(&lab, &store, "pytest");
        assert_eq!(
            args,
            "--deselect=example/com/pool.py::TestPool\n--deselect=tests/test_app.py::test_flaky\n"
        );
        let out = Command::new("python3")
            .args([
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "--junitxml=out.xml",
            ])
            .args(args.lines())
            .current_dir(&py)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        let ran = flakelab::results::junit::parse_file(&py.join("out.xml")).unwrap();
        let mut names: Vec<String> = ran.cases.iter().map(|c| c.name.clone()).collect();
        names.sort();
        assert_eq!(
            names,
            ["test_arm", "test_fixed", "test_skip", "test_stable"]
        );
    }

    if go_available() {
        let go = lab.path().join("go");
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(&go).unwrap();
        std::fs::write(go.join("go.mod"), "module example.com/pool\n\ngo 1.19\n").unwrap();
        std::fs::write(
            go.join("pool_test.go"),
            "package pool\n\nimport \"testing\"\n\nfunc TestPool(t *testing.T) {}\nfunc TestPoolSize(t *testing.T) {}\nfunc TestOther(t *testing.T) {}\n",
        )
        .unwrap();
        let go_cmd = |args: &[&str]| {
            let out = Command::new("go")
                .args(args)
                .current_dir(&go)
                .env("GOCACHE", home.path().join("cache"))
                .env("GOPATH", home.path().join("path"))
                .env("GOFLAGS", "-mod=mod")
                .env("GOPROXY", "off")
                .env("GOENV", "off")
                .env("GOTOOLCHAIN", "local")
                .env("GOWORK", "off")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            assert_eq!(
                out.status.code(),
                Some(0),
                "{text}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            text
        };
        let ran = |text: &str| {
            let mut ran: Vec<String> = text
                .lines()
                .filter_map(|l| l.strip_prefix("=== RUN   "))
                .map(str::to_string)
                .collect();
            ran.sort();
            ran
        };
        // Any go: the complement of the package's own list, as `-run`.
        let list = go_cmd(&["test", "-list", ".", "./..."]);
        std::fs::write(lab.path().join("go-tests.txt"), &list).unwrap();
        let out = cmd(&lab)
            .args(["quarantine", "--format", "go", "--go-list"])
            .arg(lab.path().join("go-tests.txt"))
            .arg("--store")
            .arg(&store)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        let args = String::from_utf8(out.stdout).unwrap();
        assert_eq!(args, "-run=^(?:TestOther|TestPoolSize)$\n");
        // test_flaky is no go test: named, left out.
        assert!(
            String::from_utf8_lossy(&out.stderr)
                .contains("tests.test_app::test_flaky: not in the `go test -list` output"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut a = vec!["test", "-v", "-count=1"];
        a.extend(args.lines());
        a.push("./...");
        assert_eq!(ran(&go_cmd(&a)), ["TestOther", "TestPoolSize"]);

        // `go test -skip` exists since Go 1.20.
        let args = quarantine(&lab, &store, "go");
        assert_eq!(args, "-skip=^(?:TestPool|test_flaky)$\n");
        if sh_ok("go version | grep -Eq 'go1\\.(2[0-9]|[3-9][0-9])'") {
            let mut a = vec!["test", "-v", "-count=1"];
            a.extend(args.lines());
            a.push("./...");
            assert_eq!(ran(&go_cmd(&a)), ["TestOther", "TestPoolSize"]);
        } else {
            eprintln!("skipped: the `-skip` round trip needs Go >= 1.20; this go is older (the `-run` complement was round-tripped)");
        }
    }
}

/// The subject of the side-by-side test: `tests.test_app::test_arm` fails
/// when the zone is UTC+14, `test_stable` never; a JUnit report like
/// pytest's.
const ZONE_SUBJECT: &str = r#"if [ "$(date +%z)" = "+1400" ]; then r='<failure message="wrong day">boom</failure>'; else r=''; fi
printf '<testsuite name="pytest"><testcase classname="tests.test_app" name="test_arm">%s</testcase><testcase classname="tests.test_app" name="test_stable"/></testsuite>\n' "$r" > "$1"
[ -z "$r" ]"#;

#[test]
fn lab_and_ci_side_by_side_in_report_and_evidence_with_the_history_classes() {
    let lab = Lab::new();
    let store = lab.store();
    ingest_main(&lab, &store);
    // A report with an error outside any test case (a collection error).
    let broken = lab.path().join("infra");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(
        broken.join("junit.xml"),
        "<testsuite name='pytest' errors='1' tests='1'><error message='ImportError: no module named app'/><testcase classname='tests.test_app' name='test_stable'/></testsuite>",
    )
    .unwrap();
    let out = cmd(&lab)
        .args([
            "ingest",
            "--no-detect",
            "--commit",
            "c4",
            "--branch",
            "main",
            "--run-id",
            "106",
            "--store",
        ])
        .arg(&store)
        .arg(&broken)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let out = lab.run(&[
        "run",
        "-n",
        "5",
        "-p",
        "tz=Pacific/Kiritimati",
        "--",
        "sh",
        "-c",
        ZONE_SUBJECT,
        "sh",
        "{junit}",
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let row_text = "CI: failed 3 of 14 on feature/x, main, only where arch=arm64 (3 of 4 there, 0 of 10 elsewhere; Fisher p=0.011, Holm p=0.132: not significant across every test and dimension; inseparable from image); on commit c2 failed in every run of 1 context(s) and passed in every run of 2; lab: 5 of 5 under tz=Pacific/Kiritimati, 0 of 5 baseline (Holm p=0.032)";
    let report = cmd(&lab)
        .args(["report", "--format", "json"])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    let h = &report["ci_history"];
    assert_eq!(
        (h["reports"].as_u64(), h["tests"].as_u64()),
        (Some(16), Some(6))
    );
    let rows = h["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{h}");
    let r = &rows[0];
    assert_eq!(r["test"], "tests.test_app::test_arm");
    assert_eq!(r["matched_by"], "id");
    assert_eq!(r["finding"], "context-split");
    assert_eq!(
        (r["ci_k"].as_u64(), r["ci_n"].as_u64()),
        (Some(3), Some(14))
    );
    assert_eq!(r["concentrated"]["dimension"], "arch");
    assert_eq!(r["concentrated"]["value"], "arm64");
    assert_eq!(r["cell"], "tz=Pacific/Kiritimati");
    assert_eq!(
        (r["lab_k"].as_u64(), r["lab_n"].as_u64()),
        (Some(5), Some(5))
    );
    assert_eq!(
        (r["baseline_k"].as_u64(), r["baseline_n"].as_u64()),
        (Some(0), Some(5))
    );
    // Fisher 5 of 5 against 0 of 5: 2/252.
    assert!(
        (r["lab_p"].as_f64().unwrap() - 8.0 / 252.0).abs() < 1e-9,
        "{r}"
    );
    assert_eq!(r["text"], row_text);
    let m = &h["mismatches"][0];
    assert_eq!(m["commit"], "c2");
    assert_eq!(
        m["failing"],
        serde_json::json!([["arch=arm64,image=ubuntu-24.04-arm,runtime_version=3.12", 1]])
    );
    assert_eq!(m["commits"], 3);
    assert_eq!(h["infrastructure"].as_array().unwrap().len(), 1);
    assert!(
        h["infrastructure"][0]
            .as_str()
            .unwrap()
            .contains("an <error> outside any test case in testsuite `pytest`: ImportError: no module named app"),
        "{h}"
    );

    // Compaction changes nothing the block says (the infrastructure notes
    // are kept beside the counts).
    let out = cmd(&lab)
        .args(["compact", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let again = cmd(&lab)
        .args(["report", "--format", "json"])
        .output()
        .unwrap();
    let again: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(again["ci_history"], report["ci_history"]);

    let table = cmd(&lab).arg("report").output().unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.contains(&format!("  tests.test_app::test_arm\n    {row_text}\n")),
        "{table}"
    );

    let e = cmd(&lab)
        .args(["evidence", "--format", "json"])
        .output()
        .unwrap();
    let e: serde_json::Value = serde_json::from_slice(&e.stdout).unwrap();
    assert_eq!(e["ci_history"]["rows"][0]["text"], row_text);
    let claimed: Vec<&str> = e["classification"]["claimed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["class"].as_str().unwrap())
        .collect();
    assert_eq!(
        claimed,
        [
            "clock_and_zone",
            "platform_or_entry_path",
            "runner_infrastructure"
        ]
    );
    let platform = &e["classification"]["claimed"][1]["row"];
    assert_eq!(platform["count"], serde_json::json!({"k": 1, "n": 1}));
    assert_eq!(platform["baseline"], serde_json::json!({"k": 0, "n": 2}));
    let infra = &e["classification"]["claimed"][2]["row"];
    assert_eq!(infra["count"], serde_json::json!({"k": 1, "n": 16}));
    let coverage: Vec<(&str, &str)> = e["coverage"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["class"].as_str().unwrap(), c["status"].as_str().unwrap()))
        .collect();
    assert!(
        coverage.contains(&("platform_or_entry_path", "checked")),
        "{coverage:?}"
    );
    assert!(
        coverage.contains(&("runner_infrastructure", "checked")),
        "{coverage:?}"
    );
    let md = cmd(&lab).arg("evidence").output().unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.contains(&format!("| `tests.test_app::test_arm` | {row_text} |")),
        "{md}"
    );
    assert!(
        md.contains("| runner infrastructure | checked (CI history (16 report(s)); N = 16) |"),
        "{md}"
    );
}

#[test]
fn matrix_legs_that_recorded_one_context_are_named_at_ingest_and_in_history() {
    let lab = Lab::new();
    let store = lab.path().join("s");
    let f = fixture();
    let leg = |dir: &str| {
        cmd(&lab)
            .args([
                "ingest",
                "--no-detect",
                "--provider",
                "github",
                "--run-id",
                "7",
                "--job",
                "test",
                "--attempt",
                "1",
                "--commit",
                "c1",
                "--os",
                "linux",
                "--arch",
                "x64",
                "--store",
            ])
            .arg(&store)
            .arg(f.join(dir))
            .output()
            .unwrap()
    };
    let first = leg("run-104/l1");
    assert_eq!(first.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&first.stderr).is_empty(),
        "one leg is no ambiguity"
    );
    let second = leg("run-104/l3");
    assert_eq!(second.status.code(), Some(0));
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(
        err.contains("warning: 2 reports of github run 7 job `test` attempt 1 at junit.xml recorded one context (arch=x64,os=linux) but differ")
            && err.contains("(GitHub gives every leg the same job name)")
            && err.contains("--matrix '${{ toJSON(matrix) }}'"),
        "{err}"
    );
    let out = cmd(&lab)
        .args(["history", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning: 2 reports of github run 7"));
    // Told apart by --matrix: no warning.
    let other = lab.path().join("t");
    for (dir, m) in [("run-104/l1", "py=3.11"), ("run-104/l3", "py=3.12")] {
        let out = cmd(&lab)
            .args([
                "ingest",
                "--no-detect",
                "--provider",
                "github",
                "--run-id",
                "7",
                "--job",
                "test",
                "--attempt",
                "1",
                "--matrix",
                m,
                "--commit",
                "c7",
                "--store",
            ])
            .arg(&other)
            .arg(f.join(dir))
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&out.stderr).is_empty());
    }
}

fn nextest_available() -> bool {
    capable("cargo-nextest", sh_ok("cargo nextest --version"))
}

#[test]
fn quarantine_filter_deselects_exactly_the_proven_test_in_real_nextest() {
    if !nextest_available() {
        return;
    }
    let lab = Lab::new();
    let store = lab.path().join("s");
    // Two attempts of one run on one commit, as nextest's JUnit profile
    // writes them: `tests::flaky` failed once and passed once.
    let report = |failed: bool| {
        format!(
            "<testsuites><testsuite name='tiny'><testcase classname='tiny' name='tests::flaky'>{}</testcase><testcase classname='tiny' name='tests::flaky_two'/><testcase classname='tiny' name='tests::stable'/></testsuite></testsuites>",
            if failed { "<failure message='boom'/>" } else { "" }
        )
    };
    for (attempt, failed) in [("1", true), ("2", false)] {
        let dir = lab.path().join(format!("a{attempt}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("junit.xml"), report(failed)).unwrap();
        let out = cmd(&lab)
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
    let filter = quarantine(&lab, &store, "cargo-nextest");
    assert_eq!(filter, "not (test(=tests::flaky))\n");
    let krate = lab.path().join("tiny");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    std::fs::write(
        krate.join("Cargo.toml"),
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        krate.join("src/lib.rs"),
        "#[cfg(test)]\nmod tests {\n    #[test]\n    fn flaky() {}\n    #[test]\n    fn flaky_two() {}\n    #[test]\n    fn stable() {}\n}\n",
    )
    .unwrap();
    let out = Command::new("cargo")
        .args([
            "nextest",
            "list",
            "--offline",
            "--message-format",
            "oneline",
            "-E",
        ])
        .arg(filter.trim_end())
        .current_dir(&krate)
        .env("CARGO_TARGET_DIR", krate.join("target"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut listed: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    listed.sort();
    assert_eq!(listed, ["tiny tests::flaky_two", "tiny tests::stable"]);
}

#[test]
fn reports_without_a_commit_prove_nothing_and_never_fail_the_gate() {
    let lab = Lab::new();
    let report = |name: &str, fails: bool| {
        let case = if fails {
            r#"<testcase classname="c" name="t"><failure message="boom"/></testcase>"#
        } else {
            r#"<testcase classname="c" name="t"/>"#
        };
        let path = lab.path().join(name);
        std::fs::write(&path, format!(r#"<testsuite name="s">{case}</testsuite>"#)).unwrap();
        path
    };
    let ingest = |args: &[&str], files: &[PathBuf]| {
        let out = lab
            .cmd()
            .args(["ingest", "--no-detect"])
            .args(args)
            .args(files)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    // A clean baseline on a known commit, then a pass and a failure with no
    // commit recorded: ingest says what is missing.
    let clean = [report("a.xml", false), report("b.xml", false)];
    assert!(!ingest(&["--commit", "c0"], &clean).contains("no commit recorded"));
    let out = lab.run(&["check", "--write-baseline", "--min-runs", "2"]);
    assert_eq!(out.status.code(), Some(0));
    let unplaced = [report("c.xml", true), report("d.xml", false)];
    assert!(ingest(&[], &unplaced).contains("no commit recorded"));

    let out = lab.run(&["history", "--format", "json", "--min-runs", "2"]);
    let h: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let t = test(&h, "c::t");
    assert_eq!(t["finding"], "commit-unknown", "{t}");
    assert!(t["same_commit"].as_array().unwrap().is_empty(), "{t}");
    // The gate does not fail on what it cannot place on one commit.
    let out = lab.run(&["check", "--min-runs", "2"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // The same disagreement on a known commit is proven, and fails it.
    ingest(
        &["--commit", "c1"],
        &[report("e.xml", true), report("f.xml", false)],
    );
    let out = lab.run(&["check", "--min-runs", "2"]);
    assert_eq!(out.status.code(), Some(1));
}
