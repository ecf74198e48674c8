//! The go recipe end to end with the real runner (`go test`, and gotestsum
//! for per-test outcomes) on the fixture module `tests/fixtures/go-project`:
//! an order-dependent pair (package `config`) and a slot pool that collides
//! only with more workers than go test's default (package `pool`).
//!
//! Every subject runs offline and hermetic: GOCACHE and GOPATH point into a
//! temp dir of the test, GOFLAGS=-mod=mod, GOPROXY=off, GOENV=off.

use std::path::Path;
use std::process::Command;

use super::{capable, cell, sh_ok, Lab};

fn go_available() -> bool {
    capable("go (Debian golang-go)", sh_ok("go version"))
}

fn gotestsum_available() -> bool {
    capable("gotestsum (Debian gotestsum)", sh_ok("gotestsum --version"))
}

/// The fixture module copied into the lab, and a temp dir for Go's caches
/// (kept out of the lab, so `./...` never walks into them).
fn go_lab(lab: &Lab) -> tempfile::TempDir {
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/go-project"),
        lab.path(),
    );
    tempfile::tempdir().expect("temp dir for GOCACHE and GOPATH")
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Go's environment for a subject: offline, nothing written outside `home`.
fn go_env(c: &mut Command, home: &Path) {
    c.env("GOCACHE", home.join("cache"))
        .env("GOPATH", home.join("path"))
        .env("GOFLAGS", "-mod=mod")
        .env("GOPROXY", "off")
        .env("GOENV", "off")
        .env("GOTOOLCHAIN", "local")
        .env("GOWORK", "off")
        .env_remove("GOTESTSUM_FORMAT")
        .env_remove("GOTESTSUM_JUNITFILE");
}

/// `flakelab run --format json ARGS` in the lab with Go's environment.
fn run_json(lab: &Lab, home: &Path, args: &[&str]) -> (i32, serde_json::Value) {
    let mut c = lab.cmd();
    go_env(&mut c, home);
    let out = c
        .args(["run", "--format", "json"])
        .args(args)
        .output()
        .expect("flakelab runs");
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}); stdout: {} stderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), json)
}

fn argv(run: &serde_json::Value) -> Vec<String> {
    super::run_argv(run)
}

fn log(lab: &Lab, run: &serde_json::Value) -> String {
    std::fs::read_to_string(lab.store().join(run["log"].as_str().unwrap())).unwrap()
}

/// A run's repro line in a plain shell (with Go's environment): its exit
/// code and output.
fn replay(home: &Path, run: &serde_json::Value) -> (Option<i32>, String) {
    let mut sh = Command::new("sh");
    super::scrub(&mut sh);
    go_env(&mut sh, home);
    let out = sh
        .arg("-c")
        .arg(run["repro"].as_str().unwrap())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn go_test_shuffle_finds_the_order_dependent_pair_and_workers_the_pool_collision() {
    if !go_available() {
        return;
    }
    // The pool collision is the fixture's rendezvous (pool_test.go): every
    // subtest that can run at once tries the pool before any lets go.
    let lab = Lab::new();
    let home = go_lab(&lab);
    let (_, report) = run_json(
        &lab,
        home.path(),
        &[
            "-n",
            "6",
            "--seed",
            "5",
            "-p",
            "shuffle",
            "-p",
            "workers=2x",
            "--",
            "go",
            "test",
            "./...",
        ],
    );
    assert_eq!(report["runner"], "go", "{report}");
    let runs = lab.runs();
    let in_cell = |name: &str| -> Vec<&serde_json::Value> {
        runs.iter().filter(|r| r["cell"] == name).collect()
    };

    // Never at baseline, and every baseline run really ran: the recipe's
    // `off` adds -count=1, without which runs 2..N come from go's test cache.
    let base = cell(&report, "baseline");
    assert_eq!(
        (base["n"].as_u64(), base["k"].as_u64()),
        (Some(6), Some(0)),
        "{base}"
    );
    // go test writes no JUnit: the recipe's [per_test] asks for its
    // test2json events (-json) and reads them from the run's output.
    assert_eq!(base["runs_with_tests"].as_u64(), Some(6), "{base}");
    for r in in_cell("baseline") {
        let a = argv(r);
        assert!(
            a.ends_with(&["-count=1".into(), "-json".into(), "-shuffle=off".into()]),
            "{a:?}"
        );
        assert!(!log(&lab, r).contains("(cached)"), "{}", log(&lab, r));
    }

    // The pair fails under some seeds; every shuffle run printed its seed
    // back (-v shows it for passing packages too).
    let shuffle = cell(&report, "shuffle");
    assert_eq!(shuffle["applied"], true, "{shuffle}");
    assert_eq!(
        shuffle["n"].as_u64(),
        Some(6),
        "every run printed its seed: {shuffle}"
    );
    assert!(shuffle["k"].as_u64().unwrap() >= 1, "{shuffle}");
    for r in in_cell("shuffle") {
        let seed = r["seed"].to_string();
        let a = argv(r);
        assert!(a.contains(&format!("-shuffle={seed}")), "{a:?}");
        assert!(a.contains(&"-count=1".to_string()), "{a:?}");
        let text = log(&lab, r);
        assert!(text.contains(&format!("-test.shuffle {seed}")), "{text}");
        if r["outcome"] == "fail" {
            assert_eq!(r["exit_code"].as_i64(), Some(1));
            assert!(text.contains("--- FAIL: TestBFormatsPrice"), "{text}");
            assert!(text.contains("currency was never loaded"), "{text}");
            assert!(!text.contains("--- FAIL: TestSlots"), "{text}");
        }
    }

    // A failing seed's repro line, run in a plain shell, fails again the
    // same way: go's shuffle is a pure function of the seed.
    let failing = in_cell("shuffle")
        .into_iter()
        .find(|r| r["outcome"] == "fail")
        .expect("a failing shuffle run");
    let (code, out) = replay(home.path(), failing);
    assert_eq!(code, Some(1), "{}\n{out}", failing["repro"]);
    assert!(out.contains("currency was never loaded"), "{out}");
    assert!(
        out.contains(&format!("-test.shuffle {}", failing["seed"])),
        "{out}"
    );
    // So does `flakelab replay` of that run: same seed, same failure, 3 of 3.
    let mut c = lab.cmd();
    go_env(&mut c, home.path());
    let id = failing["id"].as_str().unwrap();
    let out = c
        .args(["replay", id, "--times", "3", "--format", "json"])
        .output()
        .unwrap();
    let replay: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    assert_eq!(replay["cells"][0]["k"].as_u64(), Some(3), "{replay}");
    let flag = format!("-shuffle={}", failing["seed"]);
    let replayed: Vec<_> = lab
        .runs()
        .into_iter()
        .filter(|r| r["session"] == replay["session"])
        .collect();
    assert_eq!(replayed.len(), 3);
    assert!(replayed.iter().all(|r| argv(r).contains(&flag)), "{flag}");

    // workers=2x: -parallel 2N lets all N+1 t.Parallel() subtests hold a slot
    // at once, so one finds the N-slot pool full, in every run.
    let workers = cell(&report, "workers=2x");
    assert_eq!(
        (workers["n"].as_u64(), workers["k"].as_u64()),
        (Some(6), Some(6)),
        "{workers}"
    );
    for r in in_cell("workers=2x") {
        let n = r["workers"].as_u64().unwrap();
        assert!(n >= 2, "{r}");
        let a = argv(r);
        let n = n.to_string();
        assert!(
            a.windows(2).any(|w| w[0] == "-parallel" && w[1] == n)
                && a.windows(2).any(|w| w[0] == "-p" && w[1] == n),
            "{a:?}"
        );
        assert!(a.contains(&"-count=1".to_string()), "{a:?}");
        let text = log(&lab, r);
        assert!(text.contains("slots are locked by other tests"), "{text}");
        assert!(!text.contains("currency was never loaded"), "{text}");
    }
}

#[test]
fn gotestsum_junit_gives_per_test_outcomes_and_every_shuffle_seed() {
    if !go_available() || !gotestsum_available() {
        return;
    }
    let lab = Lab::new();
    let home = go_lab(&lab);
    let (_, report) = run_json(
        &lab,
        home.path(),
        &[
            "-n",
            "4",
            "--seed",
            "5",
            "-p",
            "shuffle",
            "-p",
            "workers=2x",
            "--",
            // No JUnit flag: the gotestsum recipe asks for the report
            // through GOTESTSUM_JUNITFILE.
            "gotestsum",
            "--",
            "./...",
        ],
    );
    assert_eq!(report["runner"], "gotestsum", "{report}");
    let test = |c: &serde_json::Value, id: &str| -> serde_json::Value {
        c["tests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .unwrap_or_else(|| panic!("no {id} in {c}"))
            .clone()
    };
    const B: &str = "example.com/flakefixture/config::TestBFormatsPrice";
    const SLOTS: &str = "example.com/flakefixture/pool::TestSlots";

    let base = cell(&report, "baseline");
    assert_eq!(
        (base["n"].as_u64(), base["k"].as_u64()),
        (Some(4), Some(0)),
        "{base}"
    );
    assert_eq!(base["runs_with_tests"].as_u64(), Some(4), "{base}");
    // 3 config tests, TestSlots and its GOMAXPROCS+1 subtests.
    assert!(base["tests"].as_array().unwrap().len() >= 6, "{base}");
    assert_eq!(test(base, B)["k"].as_u64(), Some(0));

    // gotestsum prints the seed of a passing package only in a verbose
    // format: the recipe sets GOTESTSUM_FORMAT=standard-verbose.
    let shuffle = cell(&report, "shuffle");
    assert_eq!(
        shuffle["n"].as_u64(),
        Some(4),
        "every run printed its seed: {shuffle}"
    );
    let pair = test(shuffle, B);
    assert!(pair["k"].as_u64().unwrap() >= 1, "{pair}");
    assert_eq!(test(shuffle, SLOTS)["k"].as_u64(), Some(0));
    // Signed by the failing test's own line, never go's `=== RUN` framing
    // that gotestsum keeps in its JUnit body.
    for s in pair["signatures"].as_array().unwrap() {
        let sig = s["signature"].as_str().unwrap();
        assert!(sig.starts_with("config_test.go:<n>: "), "{pair}");
    }
    for r in lab.runs().iter().filter(|r| r["cell"] == "shuffle") {
        assert_eq!(
            r["env"]["set"]["GOTESTSUM_FORMAT"], "standard-verbose",
            "{r}"
        );
        // The go test flags went after gotestsum's `--`.
        let a = argv(r);
        let dash = a.iter().position(|w| w == "--").unwrap();
        let flag = a
            .iter()
            .position(|w| *w == format!("-shuffle={}", r["seed"]))
            .unwrap();
        assert!(flag > dash, "{a:?}");
    }

    let workers = cell(&report, "workers=2x");
    assert_eq!(test(workers, SLOTS)["k"].as_u64(), Some(4), "{workers}");
    assert_eq!(test(workers, B)["k"].as_u64(), Some(0), "{workers}");
    // Exactly one subtest per run found the pool full.
    let failed_subtests: u64 = workers["tests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["id"].as_str().unwrap().starts_with(&format!("{SLOTS}/")))
        .map(|t| t["k"].as_u64().unwrap())
        .sum();
    assert_eq!(failed_subtests, 4, "{workers}");
}

#[test]
fn faketime_on_go_test_is_not_applied_with_the_recipes_reason() {
    if !go_available() {
        return;
    }
    let lab = Lab::new();
    let home = go_lab(&lab);
    let (code, report) = run_json(
        &lab,
        home.path(),
        &[
            "-n",
            "2",
            "-p",
            "faketime=+365d",
            "--",
            "go",
            "test",
            "./config",
        ],
    );
    assert_eq!(code, 3, "{report}");
    let base = cell(&report, "baseline");
    assert_eq!(
        (base["n"].as_u64(), base["k"].as_u64()),
        (Some(2), Some(0)),
        "{base}"
    );
    let c = cell(&report, "faketime=+365d");
    assert_eq!(c["applied"], false, "{c}");
    assert_eq!(
        (c["n"].as_u64(), c["not_applied"].as_u64()),
        (Some(0), Some(2)),
        "{c}"
    );
    let reason = c["reason"].as_str().unwrap();
    assert!(reason.contains("not applicable"), "{reason}");
    assert!(
        reason.contains("the clock preload does not reach it"),
        "{reason}"
    );
}

/// `go test -count=2` repeats each test in one binary, whatever the last
/// execution did: the command's `-count` is kept (the recipe's `-count=1`
/// is not added after it), a test whose first execution of each run fails
/// (a file keyed by the run's `FLAKELAB_RUN_ID`) fails in the run although
/// its second passed, and its signature is the failing execution's own
/// line, never the passing one's `--- PASS`.
#[test]
fn go_count_repetitions_are_kept_and_a_failing_execution_counts() {
    if !go_available() {
        return;
    }
    let lab = Lab::new();
    let home = go_lab(&lab);
    std::fs::create_dir_all(lab.path().join("twice")).unwrap();
    std::fs::write(
        lab.path().join("twice/twice_test.go"),
        r#"package twice

import (
	"os"
	"testing"
)

func TestFirstExecutionFails(t *testing.T) {
	mark := ".first-" + os.Getenv("FLAKELAB_RUN_ID")
	if _, err := os.Stat(mark); err != nil {
		os.WriteFile(mark, nil, 0o644)
		t.Fatalf("the first execution of this run fails")
	}
}
"#,
    )
    .unwrap();
    let (_, report) = run_json(
        &lab,
        home.path(),
        &["-n", "2", "--", "go", "test", "-count=2", "./twice"],
    );
    let base = cell(&report, "baseline");
    let t = base["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| {
            t["id"]
                .as_str()
                .unwrap()
                .ends_with("::TestFirstExecutionFails")
        })
        .unwrap_or_else(|| panic!("{base}"));
    assert_eq!(
        (t["k"].as_u64(), t["n"].as_u64()),
        (Some(2), Some(2)),
        "{t}"
    );
    assert_eq!(
        t["signatures"][0]["signature"], "twice_test.go:<n>: the first execution of this run fails",
        "{t}"
    );
    for r in lab.runs() {
        let a = argv(&r);
        assert!(a.contains(&"-count=2".to_string()), "{a:?}");
        assert!(!a.contains(&"-count=1".to_string()), "{a:?}");
        let rec = &r["tests"][0];
        assert_eq!(
            (rec["outcome"].as_str(), rec["retries"].as_u64()),
            (Some("fail"), Some(1)),
            "{rec}"
        );
    }
}
