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
    let session = lab.runs()[0]["session"].as_str().unwrap().to_string();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(lab.store().join(format!("runs/{session}.jsonl")))
        .unwrap();
    f.write_all(b"{\"schema\":\"flakelab.run/2\",\"w\":\"cut-off-by-a-cr")
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
    assert_eq!(run["schema"], "flakelab.run/2");
    // On disk: the context once, then the run's own line, small.
    let session = run["session"].as_str().unwrap();
    let text = std::fs::read_to_string(lab.store().join(format!("runs/{session}.jsonl"))).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0]["schema"], "flakelab.context/2");
    assert_eq!(lines[0]["env"]["set"]["FLAKELAB_RUN_ID"], "{id}");
    assert_eq!(lines[0]["env"]["set"]["API_TOKEN"], "<redacted>");
    assert_eq!(lines[1]["schema"], "flakelab.run/2");
    assert_eq!(lines[1]["w"], lines[0]["w"]);
    assert_eq!(lines[1]["s"], run["seed"]);
    assert!(!text.contains("hunter2"));
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

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/store-v1")
        .join(name)
}

fn stdout(lab: &Lab, args: &[&str]) -> String {
    let out = lab.run(args);
    assert!(out.status.code().is_some_and(|c| c <= 1), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_store_written_in_flakelab_run_1_reads_as_it_did() {
    // Written by flakelab before the compact format: `runs.jsonl` holds
    // whole records; the reports beside it are what that flakelab printed.
    let lab = Lab::new();
    std::fs::create_dir_all(lab.store()).unwrap();
    for f in ["runs.jsonl", "sessions.jsonl"] {
        std::fs::copy(fixture(f), lab.store().join(f)).unwrap();
    }
    for format in ["json", "table", "markdown"] {
        assert_eq!(
            stdout(&lab, &["report", "--format", format]),
            std::fs::read_to_string(fixture(&format!("report.{format}"))).unwrap(),
            "report --format {format}"
        );
    }
    // The evidence as it was, plus what was added within its schema since
    // (#14: the two classes only CI history speaks to, not tested here).
    let mut now: serde_json::Value =
        serde_json::from_str(&stdout(&lab, &["evidence", "--format", "json"])).unwrap();
    let then: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("evidence.json")).unwrap()).unwrap();
    let coverage = now["coverage"].as_array_mut().unwrap();
    let added: Vec<serde_json::Value> = coverage.split_off(coverage.len() - 2);
    assert_eq!(
        added
            .iter()
            .map(|c| (c["class"].as_str().unwrap(), c["status"].as_str().unwrap()))
            .collect::<Vec<_>>(),
        [
            ("platform_or_entry_path", "not_tested"),
            ("runner_infrastructure", "not_tested")
        ]
    );
    // #35: a data race has its own coverage line, and the advice for an
    // expiring date names what tells it apart (a clock past the date).
    let race = coverage
        .iter()
        .position(|c| c["class"] == "data_race")
        .expect("a data_race coverage line");
    assert_eq!(coverage.remove(race)["status"], "not_tested");
    let mut then = then;
    for c in then["coverage"].as_array_mut().unwrap() {
        if c["class"] == "expiring_date" {
            c["try_with"] =
                "-p faketime=+365d (a clock past the date, beside the baseline before it)".into();
        }
    }
    // #38: the baseline's count names its unit (runs, not a ladder's groups).
    for c in then["classification"]["not_determinable"]
        .as_array_mut()
        .unwrap()
    {
        let why = c["why"]
            .as_str()
            .unwrap()
            .replace("fails 2 of 3,", "fails 2 of its 3 runs,");
        c["why"] = why.into();
    }
    assert_eq!(now, then);
    let runs = lab.runs();
    assert_eq!(runs.len(), 6);
    assert!(runs.iter().all(|r| r["schema"] == "flakelab.run/1"));
    // A new session beside the old one writes the compact form, and the
    // old session still reads the same.
    std::fs::copy(fixture("suite.sh"), lab.path().join("suite.sh")).unwrap();
    assert!(lab
        .run(&["run", "-n", "2", "--seed", "3", "--", "sh", "suite.sh", "{junit}"])
        .status
        .code()
        .is_some_and(|c| c <= 1));
    let session: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("report.json")).unwrap()).unwrap();
    let old = session["session"].as_str().unwrap();
    assert_eq!(
        stdout(&lab, &["report", "--format", "json", old]),
        std::fs::read_to_string(fixture("report.json")).unwrap()
    );
    assert_eq!(lab.runs().len(), 8);
}

/// A session of the fixture's subject: per-test outcomes with a failure
/// on odd runs, a skipped test and a test only even runs run.
fn junit_session(lab: &Lab, extra: &[&str]) -> String {
    std::fs::copy(fixture("suite.sh"), lab.path().join("suite.sh")).unwrap();
    let mut args = vec!["run", "-n", "4", "-p", "env=X=1"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "sh", "suite.sh", "{junit}"]);
    let out = lab.run(&args);
    assert!(out.status.code().is_some_and(|c| c <= 1), "{out:?}");
    lab.runs()[0]["session"].as_str().unwrap().to_string()
}

#[test]
fn concatenating_runs_files_changes_no_figure() {
    let lab = Lab::new();
    let session = junit_session(&lab, &["--seed", "11"]);
    let before = stdout(&lab, &["report", "--format", "json"]);
    let file = lab.store().join(format!("runs/{session}.jsonl"));
    let text = std::fs::read_to_string(&file).unwrap();
    // The store onto itself.
    std::fs::write(&file, format!("{text}{text}")).unwrap();
    assert_eq!(stdout(&lab, &["report", "--format", "json"]), before);
    assert_eq!(lab.runs().len(), 8);

    // Two stores of two sessions, merged file by file with cat.
    let other = Lab::new();
    let second = junit_session(&other, &["--seed", "12"]);
    let merged = Lab::new();
    std::fs::create_dir_all(merged.store().join("runs")).unwrap();
    let sessions = |l: &Lab| std::fs::read_to_string(l.store().join("sessions.jsonl")).unwrap();
    std::fs::write(
        merged.store().join("sessions.jsonl"),
        sessions(&lab) + &sessions(&other),
    )
    .unwrap();
    let ends = |l: &Lab| std::fs::read_to_string(l.store().join("session-ends.jsonl")).unwrap();
    std::fs::write(
        merged.store().join("session-ends.jsonl"),
        ends(&lab) + &ends(&other),
    )
    .unwrap();
    for (l, s) in [(&lab, &session), (&other, &second)] {
        let name = format!("runs/{s}.jsonl");
        std::fs::copy(l.store().join(&name), merged.store().join(&name)).unwrap();
    }
    for (l, s) in [(&lab, &session), (&other, &second)] {
        let report = |at: &Lab| stdout(at, &["report", "--format", "json", s]);
        assert_eq!(report(&merged), report(l));
    }
    assert_eq!(merged.runs().len(), 16);
}

#[test]
fn harness_owned_reports_are_deleted_once_read_unless_kept() {
    let lab = Lab::new();
    let session = junit_session(&lab, &["--seed", "11"]);
    let dir = lab.store().join(format!("junit/{session}"));
    let left: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert_eq!(left, Vec::<std::path::PathBuf>::new());
    // The outcomes were read before the files went.
    let runs = lab.runs();
    assert!(runs
        .iter()
        .all(|r| r["tests"].as_array().unwrap().len() >= 3));

    let kept = Lab::new();
    let session = junit_session(&kept, &["--seed", "11", "--keep-junit"]);
    let dir = kept.store().join(format!("junit/{session}"));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 8);
    for r in kept.runs() {
        assert!(std::path::Path::new(r["junit"].as_str().unwrap()).is_file());
    }
}
