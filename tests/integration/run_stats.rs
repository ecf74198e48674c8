//! `flakelab run` end to end: cells, counts, intervals, comparisons, exit codes.

use super::{cell, Lab};

const NOT_UTC: &str = "test \"$(date +%z)\" = +0000";

#[test]
fn zone_dependent_command_fails_every_run_under_kiritimati_only() {
    let lab = Lab::new();
    let (code, report) = lab.run_json(&[
        "-n",
        "20",
        "--seed",
        "7",
        "--no-sham",
        "-p",
        "tz=Pacific/Kiritimati",
        "--",
        "sh",
        "-c",
        NOT_UTC,
    ]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["schema"], "flakelab.report/1");
    let base = cell(&report, "baseline");
    assert_eq!(
        (base["k"].as_u64(), base["n"].as_u64()),
        (Some(0), Some(20))
    );
    assert!((base["high"].as_f64().unwrap() - 0.1391).abs() < 1e-3);
    assert!(base["vs_baseline"].is_null());
    let kiri = cell(&report, "tz=Pacific/Kiritimati");
    assert_eq!(
        (kiri["k"].as_u64(), kiri["n"].as_u64()),
        (Some(20), Some(20))
    );
    assert_eq!(kiri["applied"], true);
    assert_eq!(kiri["vs_baseline"]["differs"], true);
    assert!(kiri["vs_baseline"]["fisher_p"].as_f64().unwrap() < 1e-10);
    assert!((kiri["low"].as_f64().unwrap() - 0.8316).abs() < 1e-3);
    // Interleaved: the first ten runs are not all one cell.
    let cells: Vec<String> = lab.runs().iter().map(|r| r["cell"].to_string()).collect();
    assert_eq!(cells.len(), 40);
    assert!(cells[..10].iter().any(|c| c.contains("baseline")));
    assert!(cells[..10].iter().any(|c| c.contains("Kiritimati")));
}

#[test]
fn unknown_zone_is_refused_and_nothing_runs() {
    let lab = Lab::new();
    let out = lab.run(&["run", "-p", "tz=Mars/Olympus_Mons", "--", "touch", "ran"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown time zone `Mars/Olympus_Mons`"),
        "{err}"
    );
    assert!(err.contains("hint:"), "{err}");
    assert!(!lab.path().join("ran").exists());
    assert!(lab.runs().is_empty());
}

#[test]
fn every_second_run_failing_gives_half_and_the_published_interval() {
    let lab = Lab::new();
    // A counter file makes the subject deterministic: odd runs fail.
    let script =
        "n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; test $((n % 2)) -eq 0";
    let (code, report) = lab.run_json(&["-n", "20", "--", "sh", "-c", script]);
    // The baseline alone has no cell to compare: its failures are the finding.
    assert_eq!(code, 1, "{report}");
    let base = cell(&report, "baseline");
    assert_eq!(
        (base["k"].as_u64(), base["n"].as_u64()),
        (Some(10), Some(20))
    );
    // Clopper–Pearson 95% for 10/20 (R binom.test): [0.2720, 0.7280].
    assert!(
        (base["low"].as_f64().unwrap() - 0.27196).abs() < 1e-4,
        "{base}"
    );
    assert!(
        (base["high"].as_f64().unwrap() - 0.72804).abs() < 1e-4,
        "{base}"
    );
    assert_eq!(base["rate"].as_f64(), Some(0.5));
}

#[test]
fn signature_counts_only_matching_failures() {
    let lab = Lab::new();
    let script = "n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; \
                  if [ $((n % 4)) -eq 0 ]; then echo 'AssertionError: balance 41 != 42'; exit 1; fi; \
                  if [ $((n % 4)) -eq 2 ]; then echo 'ConnectionResetError'; exit 1; fi";
    let (code, report) = lab.run_json(&[
        "-n",
        "8",
        "--signature",
        "balance \\d+ != 42",
        "--",
        "sh",
        "-c",
        script,
    ]);
    assert_eq!(code, 1, "a reproduced signature exits 1: {report}");
    let base = cell(&report, "baseline");
    assert_eq!(base["failed"].as_u64(), Some(4));
    assert_eq!(base["k"].as_u64(), Some(2));
    assert_eq!(base["n"].as_u64(), Some(8));
    let matched: Vec<bool> = lab
        .runs()
        .iter()
        .filter(|r| r["outcome"] == "fail")
        .map(|r| r["signature_match"].as_bool().unwrap())
        .collect();
    assert_eq!(matched.iter().filter(|m| **m).count(), 2);
}

#[test]
fn env_and_locale_cells_reach_the_child() {
    let lab = Lab::new();
    let (code, report) = lab.run_json(&[
        "-n",
        "5",
        "-p",
        "env=GREETING=hi",
        "-p",
        "locale=C.UTF-8",
        "-p",
        "env=-HOME",
        "--",
        "sh",
        "-c",
        "test \"$GREETING\" != hi && test \"$LC_ALL\" != C.UTF-8 && test -n \"$HOME\"",
    ]);
    assert_eq!(
        code, 1,
        "all three cells differ from the baseline: {report}"
    );
    for name in ["env=GREETING=hi", "locale=C.UTF-8", "env=-HOME"] {
        let c = cell(&report, name);
        assert_eq!(c["applied"], true, "{c}");
        assert_eq!(c["k"].as_u64(), Some(5), "{c}");
        assert_eq!(c["vs_baseline"]["differs"], true, "{c}");
        assert!(!c["probes"].as_array().unwrap().is_empty());
    }
    assert_eq!(cell(&report, "baseline")["k"].as_u64(), Some(0));
}

#[test]
fn a_probe_that_sees_no_zone_marks_the_cell_not_applied_and_exits_3() {
    let lab = Lab::new();
    // A `date` that ignores TZ, as a broken libc or wrapper would.
    let fake = lab.path().join("fakebin");
    std::fs::create_dir(&fake).unwrap();
    // (It reads the clock, and always says +0000.)
    std::fs::write(
        fake.join("date"),
        "#!/bin/sh\necho \"$(command -p date +%s) +0000\"\n",
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(fake.join("date"))
        .status()
        .unwrap();
    let path = format!("{}:{}", fake.display(), std::env::var("PATH").unwrap());
    let out = lab
        .cmd()
        .env("PATH", path)
        .args([
            "run",
            "--format",
            "json",
            "-n",
            "4",
            "-p",
            "tz=Asia/Kathmandu",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = cell(&report, "tz=Asia/Kathmandu");
    assert_eq!(c["applied"], false);
    assert!(
        c["reason"].as_str().unwrap().contains("expected +0545"),
        "{c}"
    );
    assert_eq!(c["not_applied"].as_u64(), Some(4));
    assert_eq!(c["n"].as_u64(), Some(0));
    let table = String::from_utf8(lab.run(&["report"]).stdout).unwrap();
    assert!(table.contains("NOT APPLIED"), "{table}");
}

#[test]
fn repro_line_of_a_failing_run_reproduces_it_in_a_plain_shell() {
    let lab = Lab::new();
    let (_, report) = lab.run_json(&[
        "-n",
        "2",
        "-p",
        "tz=Pacific/Kiritimati",
        "--",
        "sh",
        "-c",
        NOT_UTC,
    ]);
    let repro = cell(&report, "tz=Pacific/Kiritimati")["first_failure"]["repro"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(repro.contains("TZ=Pacific/Kiritimati"), "{repro}");
    let failing = serde_json::json!({ "repro": repro });
    assert_eq!(
        super::run_repro(&failing, &[]).status.code(),
        Some(1),
        "{repro}"
    );
    // And the baseline's recorded line passes.
    let base = lab
        .runs()
        .into_iter()
        .find(|r| r["cell"] == "baseline")
        .unwrap();
    assert!(super::run_repro(&base, &[]).status.success());
}

#[test]
fn no_output_ever_labels_a_verdict_flaky_or_stable() {
    let lab = Lab::new();
    let script =
        "n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; test $((n % 3)) -ne 0";
    for format in ["table", "markdown", "json"] {
        let out = lab.run(&[
            "run", "-n", "6", "--format", format, "-p", "tz=UTC", "--", "sh", "-c", script,
        ]);
        let text = String::from_utf8_lossy(&out.stdout).to_lowercase();
        assert!(!text.is_empty());
        assert!(
            !text.contains("flaky") && !text.contains("stable"),
            "{text}"
        );
    }
}

#[test]
fn report_re_renders_the_stored_session_identically() {
    let lab = Lab::new();
    let live = lab.run(&[
        "run",
        "-n",
        "3",
        "--seed",
        "1",
        "-p",
        "tz=Asia/Kathmandu",
        "--",
        "sh",
        "-c",
        NOT_UTC,
    ]);
    let again = lab.run(&["report"]);
    assert_eq!(again.status.code(), live.status.code());
    assert_eq!(
        String::from_utf8_lossy(&again.stdout),
        String::from_utf8_lossy(&live.stdout)
    );
    let md = String::from_utf8(lab.run(&["report", "--format", "markdown"]).stdout).unwrap();
    assert!(md.contains("| `tz=Asia/Kathmandu` | 3 of 3 |"), "{md}");
}

#[test]
fn a_cell_whose_runs_hang_differs_by_its_timeouts() {
    // Timeouts are not in N, so they get their own comparison: a
    // perturbation that makes every run hang must not read as "no difference".
    // The timeout is also the baseline's deadline (a shell that tests one
    // variable): 3 s, far beyond what even a loaded host needs for it.
    let lab = Lab::new();
    let (code, report) = lab.run_json(&[
        "-n",
        "5",
        "--timeout",
        "3s",
        "--kill-grace",
        "200ms",
        "-p",
        "tz=Asia/Tokyo",
        "--",
        "sh",
        "-c",
        "if [ \"$TZ\" = Asia/Tokyo ]; then sleep 30; fi",
    ]);
    assert_eq!(code, 1, "{report}");
    let tokyo = cell(&report, "tz=Asia/Tokyo");
    assert_eq!(
        (tokyo["timed_out"].as_u64(), tokyo["n"].as_u64()),
        (Some(5), Some(0))
    );
    assert!(
        tokyo["vs_baseline"].is_null(),
        "nothing finished to compare: {tokyo}"
    );
    assert_eq!(tokyo["timeouts_vs_baseline"]["differs"], true, "{tokyo}");
    assert!(cell(&report, "baseline")["timeouts_vs_baseline"].is_null());
    let table = String::from_utf8(lab.run(&["report"]).stdout).unwrap();
    assert!(
        table.contains("time out more often than the baseline's: 5 of 5"),
        "{table}"
    );
}

#[test]
fn confirm_tells_a_deterministic_failure_from_one_that_is_not() {
    let lab = Lab::new();
    // Fails under the zone every time: K of K.
    let (code, report) = lab.run_json(&[
        "-n",
        "2",
        "--confirm",
        "3",
        "-p",
        "tz=Pacific/Kiritimati",
        "--",
        "sh",
        "-c",
        "test \"$(date +%z)\" != +1400",
    ]);
    assert_eq!(code, 0, "{report}");
    let c = &report["confirmations"];
    assert_eq!(c.as_array().unwrap().len(), 1, "{report}");
    assert_eq!(
        (c[0]["failed"].as_u64(), c[0]["measured"].as_u64()),
        (Some(3), Some(3))
    );
    assert_eq!(c[0]["verdict"], "deterministic");
    assert_eq!(c[0]["cell"], "tz=Pacific/Kiritimati");
    // Fails on every third call only (a counter file): fewer than K of K.
    std::fs::write(lab.path().join("counter"), "0").unwrap();
    let (_, report) = lab.run_json(&[
        "-n",
        "2",
        "--confirm",
        "3",
        "--",
        "sh",
        "-c",
        "n=$(cat counter); echo $((n+1)) > counter; [ $((n % 3)) -ne 1 ]",
    ]);
    let c = &report["confirmations"];
    assert_eq!(c.as_array().unwrap().len(), 1, "{report}");
    assert_eq!(
        (c[0]["failed"].as_u64(), c[0]["measured"].as_u64()),
        (Some(1), Some(3))
    );
    assert_eq!(c[0]["verdict"], "timing");
}

#[test]
fn a_run_that_cannot_start_or_times_out_says_why_in_the_table_and_the_json() {
    let lab = Lab::new();
    let out = lab.run(&["run", "-n", "2", "--", "no-such-command-here"]);
    assert_eq!(out.status.code(), Some(2));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("baseline: 2 errored (not counted in N; the first: ")
            && table.contains("cannot start `no-such-command-here`"),
        "{table}"
    );
    let (_, report) = lab.run_json(&["-n", "1", "--timeout", "1s", "--", "sleep", "30"]);
    let c = cell(&report, "baseline");
    assert_eq!(c["timed_out"].as_u64(), Some(1));
    let why = c["error_reason"].as_str().unwrap();
    assert!(why.ends_with(": timed out after 1s (--timeout)"), "{c}");
    // The evidence says the same.
    let out = lab.run(&["evidence", "--format", "json"]);
    let evidence: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cells = evidence["cells"].as_array().unwrap();
    assert_eq!(cells[0]["error_reason"].as_str(), Some(why), "{evidence}");
}
