//! `race` cells end to end with the real runner: `go test -race` on the
//! fixture module `tests/fixtures/go-race`, whose `TestConcurrentHits` has
//! two goroutines write one counter unsynchronised. It passes without the
//! detector and the detector reports it in every run (its happens-before
//! analysis needs no unlucky interleaving: 20 of 20 runs by hand). Each
//! race run must show the detector live in its own test binary (the race
//! runtime's banner); with cgo off the cell is not applied, with go's reason.
//!
//! Go's build cache lives under the test target's tmp dir, kept between
//! test runs: the race-instrumented standard library is built once (about
//! 25 s cold on 2 cores), not in every run of the suite.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{capable, cell, run_argv, sh_ok, Lab};

/// The signature every run of the fixture's race gives.
const RACE_SIGNATURE: &str = "data race: example.com/racefixture.(*Hits).Hit (counter.go:11) × example.com/racefixture.(*Hits).Hit (counter.go:11)";

fn race_capable() -> bool {
    capable("go (Debian golang-go)", sh_ok("go version"))
        && capable(
            "gcc and libc6-dev (cgo, for go test -race)",
            sh_ok("gcc --version"),
        )
}

/// The fixture in a fresh lab, and the Go home (cache, GOPATH) kept under
/// the test target's tmp dir, outside the lab.
fn race_lab() -> (Lab, PathBuf) {
    let lab = Lab::new();
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/go-race");
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        std::fs::copy(entry.path(), lab.path().join(entry.file_name())).unwrap();
    }
    let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join("go-race-home");
    std::fs::create_dir_all(&home).unwrap();
    (lab, home)
}

/// `flakelab run --format json ARGS -- go test ./...` offline, with
/// CGO_ENABLED=`cgo` and the variables `extra`.
fn run(
    lab: &Lab,
    home: &Path,
    cgo: &str,
    extra: &[(&str, &str)],
    args: &[&str],
) -> serde_json::Value {
    let mut c: Command = lab.cmd();
    c.env("GOCACHE", home.join("cache"))
        .env("GOPATH", home.join("path"))
        .env("GOFLAGS", "-mod=mod")
        .env("GOPROXY", "off")
        .env("GOENV", "off")
        .env("GOTOOLCHAIN", "local")
        .env("GOWORK", "off")
        .env("CGO_ENABLED", cgo)
        .env_remove("GORACE")
        .envs(extra.iter().copied());
    let out = c
        .args(["run", "--format", "json"])
        .args(args)
        .args(["--", "go", "test", "./..."])
        .output()
        .expect("flakelab runs");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}); stdout: {} stderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn a_race_cell_finds_the_planted_data_race_with_its_report_as_signature() {
    if !race_capable() {
        return;
    }
    let (lab, home) = race_lab();
    let report = run(
        &lab,
        &home,
        "1",
        &[],
        &["-n", "4", "--seed", "5", "-p", "race"],
    );
    let base = cell(&report, "baseline");
    assert_eq!(
        (base["n"].as_u64(), base["k"].as_u64()),
        (Some(4), Some(0)),
        "{base}"
    );
    let race = cell(&report, "race");
    assert_eq!(race["applied"], true, "{race}");
    assert_eq!(
        (race["n"].as_u64(), race["k"].as_u64()),
        (Some(4), Some(4)),
        "{race}"
    );
    assert_eq!(race["vs_baseline"]["differs"], true, "{race}");
    assert_eq!(race["signatures"][0]["signature"], RACE_SIGNATURE, "{race}");
    assert_eq!(race["signatures"][0]["count"], 4, "{race}");
    let runs = lab.runs();
    for r in runs.iter().filter(|r| r["cell"] == "race") {
        let argv = run_argv(r);
        assert!(argv.contains(&"-race".to_string()), "{argv:?}");
        let log = std::fs::read_to_string(lab.store().join(r["log"].as_str().unwrap())).unwrap();
        // The proof, from the test binary itself, and the finding.
        assert!(log.contains("***** Running under ThreadSanitizer"), "{log}");
        assert!(log.contains("WARNING: DATA RACE"), "{log}");
        assert_eq!(r["failure_signature"], RACE_SIGNATURE, "{r}");
        let tests = r["tests"].as_array().unwrap();
        let racy = tests
            .iter()
            .find(|t| t["id"] == "example.com/racefixture::TestConcurrentHits")
            .unwrap();
        assert_eq!(
            (racy["outcome"].as_str(), racy["signature"].as_str()),
            (Some("fail"), Some(RACE_SIGNATURE))
        );
        let calm = tests
            .iter()
            .find(|t| t["id"] == "example.com/racefixture::TestSequentialHits")
            .unwrap();
        assert_eq!(calm["outcome"], "pass", "{calm}");
    }
    for r in runs.iter().filter(|r| r["cell"] == "baseline") {
        assert!(!run_argv(r).contains(&"-race".to_string()));
        let log = std::fs::read_to_string(lab.store().join(r["log"].as_str().unwrap())).unwrap();
        assert!(!log.contains("ThreadSanitizer"), "{log}");
    }
}

#[test]
fn without_cgo_or_a_c_compiler_a_race_cell_is_not_applied_with_go_s_reason() {
    if !race_capable() {
        return;
    }
    let (lab, home) = race_lab();
    let report = run(
        &lab,
        &home,
        "0",
        &[],
        &["-n", "1", "--seed", "5", "-p", "race"],
    );
    let base = cell(&report, "baseline");
    assert_eq!(
        (base["n"].as_u64(), base["k"].as_u64()),
        (Some(1), Some(0)),
        "{base}"
    );
    let race = cell(&report, "race");
    assert_eq!(race["applied"], false, "{race}");
    assert_eq!(
        (race["n"].as_u64(), race["not_applied"].as_u64()),
        (Some(0), Some(1)),
        "{race}"
    );
    let reason = race["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("race: go cannot build the race detector here: go: -race requires cgo"),
        "{reason}"
    );
    assert!(reason.contains("apt-get install gcc libc6-dev"), "{reason}");
    // cgo on but no C compiler: the race runtime cannot be linked.
    let report = run(
        &lab,
        &home,
        "1",
        &[("CC", "no-such-cc")],
        &["-n", "1", "--seed", "5", "-p", "race"],
    );
    let race = cell(&report, "race");
    assert_eq!(race["applied"], false, "{race}");
    let reason = race["reason"].as_str().unwrap();
    assert!(
        reason.contains(
            r#"cannot build the race detector here: cgo: C compiler "no-such-cc" not found"#
        ),
        "{reason}"
    );
    // doctor says so beforehand, from the same environment.
    let doctor = lab
        .cmd()
        .env("CGO_ENABLED", "0")
        .arg("doctor")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&doctor.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("race (go)"))
        .unwrap_or_default();
    assert!(
        line.contains("unavailable") && line.contains("CGO_ENABLED=0: go test -race requires cgo"),
        "{text}"
    );
}

#[test]
fn a_race_run_whose_binary_never_shows_the_detector_is_not_applied() {
    if !race_capable() {
        return;
    }
    // The project's own go recipe, with the banner option dropped: the
    // runs still build with -race, but no test binary says its detector
    // ran, so none of them may count (failing or not).
    let (lab, home) = race_lab();
    let embedded =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes/go.toml"))
            .unwrap();
    let silent = embedded.replace(
        r#"on = { args = ["-race"], env = { GORACE = "verbosity=1" } }"#,
        r#"on = { args = ["-race"] }"#,
    );
    assert_ne!(silent, embedded, "the recipe's race line moved");
    let dir = lab.path().join(".flakelab/recipes");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("go.toml"), silent).unwrap();
    let report = run(
        &lab,
        &home,
        "1",
        &[],
        &["-n", "1", "--seed", "5", "-p", "race"],
    );
    let race = cell(&report, "race");
    assert_eq!(
        (race["applied"].as_bool(), race["n"].as_u64()),
        (Some(false), Some(0)),
        "{race}"
    );
    let reason = race["reason"].as_str().unwrap();
    assert!(
        reason.contains("a silent detector measured nothing"),
        "{reason}"
    );
}
