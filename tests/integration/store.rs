//! The store end to end: concurrent sessions, truncated lines, re-rendering.

use std::io::Write;

use super::Lab;

#[test]
fn two_concurrent_sessions_on_one_store_lose_no_record() {
    let lab = Lab::new();
    let spawn = || {
        lab.cmd()
            .args(["run", "-n", "60", "-j", "2", "--", "true"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let (mut a, mut b) = (spawn(), spawn());
    assert!(a.wait().unwrap().success());
    assert!(b.wait().unwrap().success());
    let runs = lab.runs();
    assert_eq!(runs.len(), 120);
    let ids: std::collections::HashSet<_> = runs.iter().map(|r| r["id"].to_string()).collect();
    assert_eq!(ids.len(), 120);
    let sessions = std::fs::read_to_string(lab.store().join("sessions.jsonl")).unwrap();
    assert_eq!(sessions.lines().count(), 2);
}

#[test]
fn a_truncated_last_line_is_tolerated_and_later_appends_stay_readable() {
    let lab = Lab::new();
    assert!(lab.run(&["run", "-n", "3", "--", "true"]).status.success());
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(lab.store().join("runs.jsonl"))
        .unwrap();
    f.write_all(b"{\"schema\":\"flakelab.run/1\",\"id\":\"cut-off-by-a-cr")
        .unwrap();
    drop(f);
    let out = lab.run(&["report", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["cells"][0]["n"].as_u64(), Some(3));
    assert_eq!(report["skipped_lines"].as_u64(), Some(1));
    // A new session appends after the fragment without merging into it.
    assert!(lab.run(&["run", "-n", "2", "--", "true"]).status.success());
    assert_eq!(lab.runs().len(), 5);
}

#[test]
fn records_hold_what_reproduces_the_run() {
    let lab = Lab::new();
    assert!(lab
        .run(&[
            "run",
            "-n",
            "1",
            "--no-baseline",
            "--seed",
            "5",
            "-p",
            "env=API_TOKEN=hunter2",
            "--",
            "true"
        ])
        .status
        .success());
    let run = &lab.runs()[0];
    assert_eq!(run["schema"], "flakelab.run/1");
    assert_eq!(run["argv"], serde_json::json!(["true"]));
    assert_eq!(
        run["cwd"].as_str().unwrap(),
        lab.path().canonicalize().unwrap().to_str().unwrap()
    );
    assert_eq!(run["env"]["set"]["API_TOKEN"], "<redacted>");
    assert_eq!(run["env"]["set"]["FLAKELAB"], "1");
    assert!(!run["repro"].as_str().unwrap().contains("hunter2"));
    // A run that printed nothing has no log file.
    assert!(run["log"].is_null(), "{run}");
    assert_eq!(run["output_bytes"].as_u64(), Some(0));
    let session: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(lab.store().join("sessions.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(session["seed"].as_u64(), Some(5));
    assert!(session["host"]["cpus"].as_u64().unwrap() >= 1);
    assert!(!session["host"]["kernel"].as_str().unwrap().is_empty());
    // The plan is stored as what builds it (cells, runs per cell, seed),
    // not as a list of every planned run: one cell of one run.
    assert_eq!(session["plan"]["runs_per_cell"].as_u64(), Some(1));
    assert_eq!(session["plan"]["cells"].as_array().unwrap().len(), 1);
    assert_eq!(session["plan"]["seed"].as_u64(), Some(5));
    assert!(session["plan"].get("runs").is_none(), "{session}");
}
