//! Per-test outcomes from what each runner ships, with nothing in the
//! command but what a user types (issue #17 item 1): `go test ./...` (its
//! test2json events) and `cargo test` (libtest's lines) on fixture projects
//! of sixteen tests, one of which reads the local zone
//! (`tests/fixtures/{go,cargo}-zone`): under `tz=Pacific/Kiritimati`
//! exactly that test differs.

use std::process::Command;

use super::{capable, cell, sh_ok, Lab};

fn run(lab: &Lab, c: &mut Command, args: &[&str]) -> serde_json::Value {
    let out = c
        .args(["run", "--format", "json"])
        .args(args)
        .output()
        .expect("flakelab runs");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}) in {}; stdout: {} stderr: {}",
            lab.path().display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The ids of the tests that failed in some run of `cell`, and how many
/// tests the cell saw.
fn failing(report: &serde_json::Value, name: &str) -> (Vec<String>, usize) {
    let c = cell(report, name);
    let tests = c["tests"].as_array().unwrap_or_else(|| panic!("{c}"));
    let ids = tests
        .iter()
        .filter(|t| t["k"].as_u64() != Some(0))
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect();
    (ids, tests.len())
}

fn zone_cells_differ_in_exactly(report: &serde_json::Value, zone_test: &str) {
    for name in ["baseline", "tz=Etc/UTC"] {
        assert_eq!(failing(report, name), (vec![], 16), "{name}: {report}");
        assert_eq!(cell(report, name)["runs_with_tests"].as_u64(), Some(2));
    }
    let kiritimati = "tz=Pacific/Kiritimati";
    assert_eq!(
        failing(report, kiritimati),
        (vec![zone_test.to_string()], 16),
        "{report}"
    );
    let c = cell(report, kiritimati);
    assert_eq!(
        (c["n"].as_u64(), c["k"].as_u64()),
        (Some(2), Some(2)),
        "{c}"
    );
}

#[test]
fn go_test_gives_per_test_rows_and_only_the_zone_test_differs() {
    if !capable("go (Debian golang-go)", sh_ok("go version")) {
        return;
    }
    let lab = Lab::new();
    super::copy_fixture(&lab, "go-zone");
    let home = tempfile::tempdir().unwrap();
    let mut c = lab.cmd();
    c.env("GOCACHE", home.path().join("cache"))
        .env("GOPATH", home.path().join("path"))
        .env("GOFLAGS", "-mod=mod")
        .env("GOPROXY", "off")
        .env("GOTOOLCHAIN", "local");
    let report = run(
        &lab,
        &mut c,
        &[
            "-n",
            "2",
            "-p",
            "tz=Pacific/Kiritimati",
            "--",
            "go",
            "test",
            "./...",
        ],
    );
    assert_eq!(report["runner"], "go", "{report}");
    // The report names where its rows come from (the table's heading too).
    assert_eq!(report["per_test_from"], "go test -json", "{report}");
    zone_cells_differ_in_exactly(
        &report,
        "example.com/zonefixture::TestInvoiceDayIsTheUTCDay",
    );
    let t = cell(&report, "tz=Pacific/Kiritimati")["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["k"].as_u64() == Some(2))
        .unwrap()
        .clone();
    let sigs = t["signatures"].to_string();
    assert!(sigs.contains("invoice dated day <n>, want <n>"), "{t}");
    // The run asked go test for its events: the user typed none of it.
    let runs = lab.runs();
    let argv = super::run_argv(&runs[0]);
    assert!(
        argv.ends_with(&["-count=1".into(), "-json".into(), "-shuffle=off".into()]),
        "{argv:?}"
    );
}

#[test]
fn cargo_test_gives_per_test_rows_and_only_the_zone_test_differs() {
    let lab = Lab::new();
    super::copy_fixture(&lab, "cargo-zone");
    let mut c = lab.cmd();
    // The subject builds into the lab, never into the harness's target dir.
    c.env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET_DIR");
    let report = run(
        &lab,
        &mut c,
        &[
            "-n",
            "2",
            "-p",
            "tz=Pacific/Kiritimati",
            "--",
            "cargo",
            "test",
            "--offline",
        ],
    );
    assert_eq!(report["runner"], "cargo-test", "{report}");
    assert_eq!(report["per_test_from"], "libtest's output", "{report}");
    zone_cells_differ_in_exactly(&report, "src/lib.rs::tests::invoice_day_is_the_utc_day");
    let runs = lab.runs();
    // libtest's lines are read from the output: the command ran as typed
    // (`cargo test --offline`, and the recipe's `--` for nothing).
    assert_eq!(
        super::run_argv(&runs[0]),
        ["cargo", "test", "--offline"].map(String::from),
        "{:?}",
        runs[0]
    );
}
