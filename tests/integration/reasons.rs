//! Every run that is not a pass says why on one line, through the real
//! binary: in the table's notes, in `report --format json` (the cell's
//! `error_reason` for runs not measured, `signal_reason` for failures by a
//! signal), in the evidence, and in each run's record (`reason`).

use super::{capable, cell, sh_ok, Lab};

/// The table, the JSON report and the evidence of the lab's last session.
fn said(lab: &Lab) -> (String, serde_json::Value, serde_json::Value) {
    let table = lab.run(&["report"]);
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    let json = lab.run(&["report", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let evidence = lab.run(&["evidence", "--format", "json"]);
    let evidence: serde_json::Value = serde_json::from_slice(&evidence.stdout).unwrap();
    (table, json, evidence)
}

fn run_reasons(lab: &Lab) -> Vec<String> {
    lab.runs()
        .iter()
        .map(|r| r["reason"].as_str().unwrap_or("(none)").to_string())
        .collect()
}

#[test]
fn a_timeout_names_its_limit() {
    let lab = Lab::new();
    // Certain to fire: the subject sleeps far beyond the limit.
    let out = lab.run(&["run", "-n", "1", "--timeout", "1s", "--", "sleep", "1000"]);
    assert_ne!(out.status.code(), Some(0));
    assert_eq!(run_reasons(&lab), ["timed out after 1s (--timeout)"]);
    let (table, json, evidence) = said(&lab);
    assert!(
        table.contains("baseline: 1 timed out (not counted in N; the first: ")
            && table.contains(": timed out after 1s (--timeout))"),
        "{table}"
    );
    let why = cell(&json, "baseline")["error_reason"].as_str().unwrap();
    assert!(why.ends_with(": timed out after 1s (--timeout)"), "{json}");
    assert_eq!(evidence["cells"][0]["error_reason"].as_str(), Some(why));
}

#[test]
fn a_death_by_a_signal_names_the_signal() {
    let lab = Lab::new();
    // Run 0 kills itself with SIGSEGV, run 1 with SIGKILL, run 2 passes.
    std::fs::write(lab.path().join("counter"), "0").unwrap();
    let script = "n=$(cat counter); echo $((n+1)) > counter; \
                  case $n in 0) kill -SEGV $$;; 1) kill -KILL $$;; esac; exit 0";
    let out = lab.run(&["run", "-n", "3", "-j", "1", "--", "sh", "-c", script]);
    // A baseline alone compares nothing: its failures are its finding.
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let mut reasons = run_reasons(&lab);
    reasons.sort();
    assert_eq!(
        reasons,
        [
            "(none)",
            "killed by SIGKILL (signal 9)",
            "killed by SIGSEGV (signal 11)"
        ]
    );
    let (table, json, evidence) = said(&lab);
    let c = cell(&json, "baseline");
    assert_eq!(
        (c["failed"].as_u64(), c["signaled"].as_u64()),
        (Some(2), Some(2))
    );
    let why = c["signal_reason"].as_str().unwrap();
    assert!(why.ends_with(": killed by SIGSEGV (signal 11)"), "{c}");
    assert!(
        table.contains(&format!(
            "baseline: 2 of 2 failure(s) died by a signal; the first: {why}"
        )),
        "{table}"
    );
    assert_eq!(evidence["cells"][0]["signal_reason"].as_str(), Some(why));
}

#[test]
fn a_command_that_cannot_start_says_so_everywhere() {
    let lab = Lab::new();
    let out = lab.run(&["run", "-n", "1", "--", "no-such-command-here"]);
    assert_eq!(out.status.code(), Some(2));
    let reasons = run_reasons(&lab);
    assert!(
        reasons[0].starts_with("cannot start `no-such-command-here`"),
        "{reasons:?}"
    );
    let (table, json, evidence) = said(&lab);
    let why = cell(&json, "baseline")["error_reason"].as_str().unwrap();
    assert!(why.contains(&reasons[0]), "{json}");
    assert!(table.contains(why), "{table}");
    assert_eq!(evidence["cells"][0]["error_reason"].as_str(), Some(why));
}

#[test]
fn a_runner_usage_error_is_named_with_its_exit_code() {
    if !capable("pytest", sh_ok("python3 -m pytest --version")) {
        return;
    }
    let lab = Lab::new();
    let out = lab.run(&[
        "run",
        "-n",
        "1",
        "--",
        "python3",
        "-m",
        "pytest",
        "--no-such-flag",
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let reasons = run_reasons(&lab);
    assert!(reasons[0].contains("usage error (exit 4)"), "{reasons:?}");
    let (table, json, evidence) = said(&lab);
    let why = cell(&json, "baseline")["error_reason"].as_str().unwrap();
    assert!(why.contains("usage error (exit 4)"), "{json}");
    assert!(table.contains(why), "{table}");
    assert_eq!(evidence["cells"][0]["error_reason"].as_str(), Some(why));
}
