//! Proof from the subject's own processes (issue 13): in a cell whose
//! mechanism a program can bypass (the clock preload), the processes each run
//! started are inspected; a run whose test process bypassed it is not
//! applied with the executable named, a helper's bypass is a warning.
//!
//! The decision logic runs through the fake executor (its `processes`
//! field scripts what the inspection found); the mechanism runs with real
//! programs: a `gcc -static` program and a Go binary run directly and from a
//! shell script, beside a dynamically linked program that libfaketime
//! reaches.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::{capable, cell, sh_ok, Lab};

// ---- the decision logic, through the fake executor ----

/// `flakelab run --format json --seed 5 ARGS -- subject` under the fake
/// `script`, with a stand-in libfaketime (the fake loads nothing).
fn fake_run(lab: &Lab, script: &str, args: &[&str]) -> (i32, Value) {
    let lib = lab.path().join("libfaketime.so.1");
    std::fs::write(&lib, b"").unwrap();
    let path = lab.path().join("fake.toml");
    std::fs::write(&path, script).unwrap();
    let out = lab
        .cmd()
        .env("FAKETIME_LIB", &lib)
        .arg("--fake-executor")
        .arg(&path)
        .args(["run", "--format", "json", "--seed", "5"])
        .args(args)
        .args(["--", "subject"])
        .output()
        .unwrap();
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), json)
}

fn runs_of(lab: &Lab, cell: &str) -> Vec<Value> {
    lab.runs()
        .into_iter()
        .filter(|r| r["cell"] == cell)
        .collect()
}

fn counts(c: &Value) -> (u64, u64, u64) {
    (
        c["k"].as_u64().unwrap(),
        c["n"].as_u64().unwrap(),
        c["not_applied"].as_u64().unwrap(),
    )
}

#[test]
fn a_test_process_that_bypasses_faketime_leaves_the_cell_unmeasured_and_exits_3() {
    let lab = Lab::new();
    let static_test = r#"processes = [{ exe = "/bin/sh" }, { exe = "/lab/year-static", parent = 0, static = true }]"#;
    let script = format!(
        "[[run]]\ncell = \"baseline\"\nexit = 1\n\
         [[run]]\ncell = \"faketime=+365d\"\nreplicate = 0\ntimeout = true\n{static_test}\n\
         [[run]]\ncell = \"faketime=+365d\"\n{static_test}\n"
    );
    let (code, report) = fake_run(
        &lab,
        &script,
        &["-n", "4", "--no-sham", "-p", "faketime=+365d"],
    );
    assert_eq!(code, 3, "{report}");
    assert_eq!(
        counts(cell(&report, "faketime=+365d")),
        (0, 0, 4),
        "{report}"
    );
    assert_eq!(counts(cell(&report, "baseline")), (4, 4, 0), "{report}");
    let runs = runs_of(&lab, "faketime=+365d");
    assert_eq!(runs.len(), 4);
    for run in &runs {
        // A timed-out run is not applied too: its clock was never shifted.
        assert_eq!(run["outcome"], "not_applied", "{run}");
        let reason = run["reason"].as_str().unwrap();
        assert!(
            reason.contains("the process that ran the tests, /lab/year-static"),
            "{reason}"
        );
        assert!(reason.contains("statically linked"), "{reason}");
        let check = &run["processes"];
        assert_eq!(check["checked"], serde_json::json!(["faketime=+365d"]));
        assert_eq!(check["seen"], 2);
        assert_eq!(check["tested_by"], serde_json::json!(["/lab/year-static"]));
        assert_eq!(check["bypassed"][0]["role"], "test");
        assert_eq!(check["bypassed"][0]["why"], "static");
        assert_eq!(check["bypassed"][0]["exe"], "/lab/year-static");
    }
    // A baseline run checks nothing.
    for run in runs_of(&lab, "baseline") {
        assert!(run.get("processes").is_none(), "{run}");
    }
}

#[test]
fn a_helper_that_bypasses_faketime_is_a_warning_and_the_run_counts() {
    let lab = Lab::new();
    let script = r#"
[[run]]
cell = "baseline"
exit = 1
[[run]]
cell = "faketime=+365d"
processes = [
  { exe = "/usr/bin/python3.11" },
  { exe = "/usr/bin/docker", parent = 0, go = true },
  { exe = "/usr/bin/python3.11", parent = 0 },
]
"#;
    let (code, report) = fake_run(&lab, script, &["-n", "5", "-p", "faketime=+365d"]);
    assert_eq!(code, 1, "the cell is measured and differs: {report}");
    assert_eq!(
        counts(cell(&report, "faketime=+365d")),
        (0, 5, 0),
        "{report}"
    );
    for run in runs_of(&lab, "faketime=+365d") {
        assert_eq!(run["outcome"], "pass", "{run}");
        let check = &run["processes"];
        assert_eq!(
            check["tested_by"],
            serde_json::json!(["/usr/bin/python3.11"])
        );
        assert_eq!(check["bypassed"][0]["role"], "helper");
        assert_eq!(check["bypassed"][0]["why"], "go");
        let warnings = run["warnings"].to_string();
        assert!(
            warnings.contains("a helper process of the run, /usr/bin/docker, is a Go program"),
            "{warnings}"
        );
    }
}

#[test]
fn only_the_mechanisms_a_cell_uses_are_checked() {
    let lab = Lab::new();
    let script = r#"
[[run]]
cell = "*"
processes = [{ exe = "/lab/year-go", go = true }]
"#;
    let (code, report) = fake_run(
        &lab,
        script,
        &["-n", "2", "-p", "tz=UTC", "-p", "faketime=+365d"],
    );
    assert_eq!(code, 3, "{report}");
    assert_eq!(counts(cell(&report, "tz=UTC")), (0, 2, 0), "{report}");
    assert_eq!(counts(cell(&report, "baseline")), (0, 2, 0), "{report}");
    // The faketime cell and its sham (`faketime=+0`, the same preload)
    // are checked; the baseline, the zone and the zone's sham are not.
    for faked in ["faketime=+365d", "faketime=+0"] {
        assert_eq!(counts(cell(&report, faked)), (0, 0, 2), "{report}");
    }
    for run in lab.runs() {
        let checked = run.get("processes").is_some();
        let faked = run["perturbations"].to_string().contains("faketime=");
        assert_eq!(checked, faked, "{run}");
    }
    let reason = runs_of(&lab, "faketime=+365d")[0]["reason"].to_string();
    assert!(reason.contains("/lab/year-go"), "{reason}");
    assert!(reason.contains("Go program"), "{reason}");
}

#[test]
fn secure_execution_and_a_dropped_preload_in_the_test_process_are_bypasses() {
    let lab = Lab::new();
    let script = r#"
[[run]]
cell = "faketime=+365d"
replicate = 0
processes = [{ exe = "/bin/sh" }, { exe = "/lab/sdate", parent = 0, secure = true }]
[[run]]
cell = "faketime=+365d"
replicate = 1
processes = [{ exe = "/usr/bin/env" }, { exe = "/lab/prog", parent = 0, env_unset = ["LD_PRELOAD"] }]
[[run]]
cell = "faketime=+365d"
replicate = 2
processes = [{ exe = "/lab/prog", env = { FAKETIME = "+0" } }]
[[run]]
cell = "faketime=+365d"
replicate = 3
processes = [{ exe = "/lab/prog" }]
"#;
    let (code, report) = fake_run(
        &lab,
        script,
        &["-n", "4", "--no-baseline", "-p", "faketime=+365d"],
    );
    assert_eq!(code, 3, "{report}");
    let mut runs = runs_of(&lab, "faketime=+365d");
    runs.sort_by_key(|r| r["replicate"].as_u64());
    let why = |r: &Value| r["processes"]["bypassed"][0]["why"].clone();
    assert_eq!(why(&runs[0]), "secure_exec");
    assert_eq!(why(&runs[1]), "no_preload");
    assert_eq!(why(&runs[2]), "faketime_changed");
    assert_eq!(runs[3]["processes"]["bypassed"], serde_json::json!([]));
    assert_eq!(runs[3]["outcome"], "pass");
    assert!(runs[0]["reason"].to_string().contains("secure-execution"));
    assert!(runs[1]["reason"].to_string().contains("/lab/prog"));
}

// ---- the mechanism, with real programs ----

fn gcc_static_available() -> bool {
    capable(
        "gcc with a static C library (Debian gcc, libc6-dev)",
        sh_ok("echo 'int main(void){return 0;}' | gcc -static -x c -o /dev/null -"),
    )
}

fn go_available() -> bool {
    capable("go (Debian golang-go)", sh_ok("go version"))
}

/// The real year, in UTC as both programs read it.
fn real_year() -> String {
    jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .year()
        .to_string()
}

/// Prints the year its clock reads and fails when that is `argv[1]`;
/// `argv[2]`, when given, is how many seconds it stays alive first.
const YEAR_C: &str = r#"#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char **argv) {
    time_t t = time(NULL);
    int year = gmtime(&t)->tm_year + 1900;
    printf("year %d\n", year);
    fflush(stdout);
    if (argc > 2) {
        struct timespec hold = { atoi(argv[2]), 0 };
        nanosleep(&hold, NULL);
    }
    return year == atoi(argv[1]);
}
"#;

/// The same in Go.
const YEAR_GO: &str = r#"package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

func main() {
	year := time.Now().UTC().Year()
	fmt.Printf("year %d\n", year)
	if len(os.Args) > 2 {
		s, _ := strconv.Atoi(os.Args[2])
		time.Sleep(time.Duration(s) * time.Second)
	}
	if want, _ := strconv.Atoi(os.Args[1]); year == want {
		os.Exit(1)
	}
}
"#;

/// Builds the C program into the lab as `name` (statically linked when
/// `static_link`); returns its canonical path.
fn c_program(lab: &Lab, name: &str, static_link: bool) -> PathBuf {
    let src = lab.path().join("year.c");
    std::fs::write(&src, YEAR_C).unwrap();
    let out = lab.path().join(name);
    let mut gcc = Command::new("gcc");
    if static_link {
        gcc.arg("-static");
    }
    let status = gcc
        .arg("-O1")
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .status()
        .unwrap();
    assert!(status.success(), "gcc failed");
    out.canonicalize().unwrap()
}

/// Builds the Go program with `go build` (offline, caches in a temp dir);
/// returns its canonical path.
fn go_program(lab: &Lab, name: &str) -> PathBuf {
    let module = lab.path().join("goyear");
    std::fs::create_dir_all(&module).unwrap();
    std::fs::write(module.join("main.go"), YEAR_GO).unwrap();
    std::fs::write(module.join("go.mod"), "module goyear\n\ngo 1.19\n").unwrap();
    let home = tempfile::tempdir().unwrap();
    let out = lab.path().join(name);
    let status = Command::new("go")
        .args(["build", "-o"])
        .arg(&out)
        .arg(".")
        .current_dir(&module)
        .env("GOCACHE", home.path().join("cache"))
        .env("GOPATH", home.path().join("path"))
        .env("GOFLAGS", "-mod=mod")
        .env("GOPROXY", "off")
        .env("GOENV", "off")
        .env("GOTOOLCHAIN", "local")
        .env("GOWORK", "off")
        .status()
        .unwrap();
    assert!(status.success(), "go build failed");
    out.canonicalize().unwrap()
}

fn script(lab: &Lab, name: &str, body: &str) {
    let path = lab.path().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

/// Every run of the faketime cell is not applied, each naming `exe` as the
/// test process and `why`.
fn not_applied_naming(lab: &Lab, report: &Value, exe: &Path, why: &str) {
    let c = cell(report, "faketime=+365d");
    assert_eq!(c["n"], 0, "{c}");
    assert!(c["not_applied"].as_u64().unwrap() > 0, "{c}");
    for run in runs_of(lab, "faketime=+365d") {
        assert_eq!(run["outcome"], "not_applied", "{run}");
        let reason = run["reason"].as_str().unwrap();
        let named = format!("the process that ran the tests, {}", exe.display());
        assert!(reason.contains(&named), "{reason}");
        let bypass = &run["processes"]["bypassed"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["role"] == "test")
            .cloned()
            .unwrap_or_else(|| panic!("no test process bypassed: {run}"));
        assert_eq!(bypass["why"], why, "{run}");
        assert_eq!(bypass["exe"], exe.display().to_string(), "{run}");
    }
}

#[test]
fn a_static_program_run_directly_is_not_applied_and_named() {
    if !gcc_static_available() {
        return;
    }
    let lab = Lab::new();
    let exe = c_program(&lab, "year-static", true);
    let year = real_year();
    let (code, report) = lab.run_json(&[
        "-n",
        "3",
        "-p",
        "faketime=+365d",
        "--",
        "./year-static",
        &year,
    ]);
    assert_eq!(code, 3, "{report}");
    // The baseline reads the real year and fails, every run.
    assert_eq!(counts(cell(&report, "baseline")), (3, 3, 0), "{report}");
    not_applied_naming(&lab, &report, &exe, "static");
}

#[test]
fn a_go_binary_run_directly_is_not_applied_and_named() {
    if !go_available() {
        return;
    }
    let lab = Lab::new();
    let exe = go_program(&lab, "year-go");
    let year = real_year();
    let (code, report) =
        lab.run_json(&["-n", "3", "-p", "faketime=+365d", "--", "./year-go", &year]);
    assert_eq!(code, 3, "{report}");
    assert_eq!(counts(cell(&report, "baseline")), (3, 3, 0), "{report}");
    not_applied_naming(&lab, &report, &exe, "go");
}

#[test]
fn a_shell_script_that_calls_a_static_or_go_program_is_not_applied_and_names_it() {
    if !gcc_static_available() || !go_available() {
        return;
    }
    // Found while it runs: each program stays alive 2 s, some 20 to 200
    // looks at the run's processes (see exec::inspect for what a program
    // that ends between two looks escapes).
    let lab = Lab::new();
    let stat = c_program(&lab, "year-static", true);
    let go = go_program(&lab, "year-go");
    script(&lab, "check-static.sh", "./year-static \"$1\" 2");
    script(&lab, "check-go.sh", "./year-go \"$1\" 2 && echo done");
    let year = real_year();
    for (script, exe, why) in [
        ("./check-static.sh", &stat, "static"),
        ("./check-go.sh", &go, "go"),
    ] {
        let (code, report) = lab.run_json(&[
            "-n",
            "2",
            "--no-baseline",
            "-p",
            "faketime=+365d",
            "--",
            script,
            &year,
        ]);
        assert_eq!(code, 3, "{script}: {report}");
        not_applied_naming(&lab, &report, exe, why);
        for run in runs_of(&lab, "faketime=+365d") {
            // The shell is a wrapper: it does not count as the test process.
            assert!(run["processes"]["seen"].as_u64().unwrap() >= 2, "{run}");
        }
        std::fs::remove_dir_all(lab.store()).unwrap();
    }
}

#[test]
fn a_dynamically_linked_program_stays_applied_and_reads_the_shifted_clock() {
    if !gcc_static_available() {
        return;
    }
    let lab = Lab::new();
    let exe = c_program(&lab, "year-dyn", false);
    let year = real_year();
    let (code, report) =
        lab.run_json(&["-n", "5", "-p", "faketime=+365d", "--", "./year-dyn", &year]);
    assert_eq!(code, 1, "{report}");
    // Fails on the real clock, passes a year ahead.
    assert_eq!(counts(cell(&report, "baseline")), (5, 5, 0), "{report}");
    assert_eq!(
        counts(cell(&report, "faketime=+365d")),
        (0, 5, 0),
        "{report}"
    );
    for run in runs_of(&lab, "faketime=+365d") {
        assert_eq!(run["outcome"], "pass", "{run}");
        let check = &run["processes"];
        assert_eq!(
            check["tested_by"],
            serde_json::json!([exe.display().to_string()])
        );
        assert_eq!(check["bypassed"], serde_json::json!([]), "{run}");
    }
}

#[test]
fn a_static_helper_of_a_dynamic_test_process_is_only_a_warning() {
    if !gcc_static_available() || !capable("python3", sh_ok("python3 -V")) {
        return;
    }
    let lab = Lab::new();
    let helper = c_program(&lab, "year-static", true);
    let next = (real_year().parse::<i32>().unwrap() + 1).to_string();
    // The test process (python) calls the static program, alive 2 s, and
    // passes when its own clock reads next year.
    let test = format!(
        "import datetime, subprocess, sys\n\
         subprocess.run(['./year-static', '0', '2'])\n\
         sys.exit(0 if datetime.datetime.now(datetime.timezone.utc).year == {next} else 1)\n"
    );
    std::fs::write(lab.path().join("test_year.py"), test).unwrap();
    let (code, report) = lab.run_json(&[
        "-n",
        "2",
        "--no-baseline",
        "-p",
        "faketime=+365d",
        "--",
        "python3",
        "test_year.py",
    ]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        counts(cell(&report, "faketime=+365d")),
        (0, 2, 0),
        "{report}"
    );
    for run in runs_of(&lab, "faketime=+365d") {
        assert_eq!(run["outcome"], "pass", "{run}");
        let bypass = &run["processes"]["bypassed"][0];
        assert_eq!(bypass["role"], "helper", "{run}");
        assert_eq!(bypass["exe"], helper.display().to_string(), "{run}");
        let warnings = run["warnings"].to_string();
        assert!(
            warnings.contains("a helper process of the run"),
            "{warnings}"
        );
        let tested_by = run["processes"]["tested_by"][0].as_str().unwrap();
        assert!(tested_by.contains("python3"), "{tested_by}");
    }
}

#[test]
fn a_set_user_id_program_runs_without_the_preload() {
    // Making a set-user-ID copy owned by another user needs root, which the
    // test script cannot install: without it the test only says so.
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: making a set-user-ID copy of date needs root");
        return;
    }
    let lab = Lab::new();
    let date = lab.path().join("sdate");
    let made = sh_ok(&format!(
        "cp \"$(command -v date)\" {0} && chown nobody {0} && chmod 4755 {0}",
        date.display()
    ));
    assert!(made, "cannot make a set-user-ID copy of date");
    let exe = date.canonicalize().unwrap();
    let (code, report) = lab.run_json(&[
        "-n",
        "2",
        "--no-baseline",
        "-p",
        "faketime=+365d",
        "--",
        "./sdate",
        "+%Y",
    ]);
    assert_eq!(code, 3, "{report}");
    not_applied_naming(&lab, &report, &exe, "secure_exec");
}
