//! Sham controls: every mechanism that can disturb a subject by being there
//! (a set TZ, the clock preload, the setup before exec, runs scheduled
//! alone for CPU stress) also runs with a null parameter, and a difference
//! from the baseline is the parameter's only when it differs from the sham
//! too. Decisions through the fake executor; the preload with flakelab's
//! own clock preload.

use std::process::Output;

use serde_json::Value;

use crate::Lab;

fn cells(report: &Value) -> Vec<&Value> {
    report["cells"].as_array().unwrap().iter().collect()
}

fn cell<'a>(report: &'a Value, name: &str) -> &'a Value {
    cells(report)
        .into_iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no cell {name}: {report:#}"))
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// `flakelab run --format json ARGS` under the fake executor's `script`,
/// with a stand-in for libfaketime (nothing is preloaded by the fake).
fn fake_run(lab: &Lab, script: &str, args: &[&str]) -> (i32, Value) {
    let path = lab.path().join("fake.toml");
    std::fs::write(&path, script).unwrap();
    let mut c = lab.cmd();
    c.env("FAKETIME_LIB", "/bin/sh")
        .arg("--fake-executor")
        .arg(&path)
        .args(["run", "--format", "json", "--seed", "4"])
        .args(args);
    let out = c.output().unwrap();
    (out.status.code().unwrap_or(-1), json(&out))
}

#[test]
fn every_mechanism_gets_one_sham_and_no_sham_leaves_them_out() {
    let lab = Lab::new();
    let (code, report) = fake_run(
        &lab,
        "",
        &[
            "-n",
            "2",
            "-p",
            "tz=Pacific/Kiritimati",
            "-p",
            "tz=Pacific/Pago_Pago",
            "-p",
            "faketime=+365d",
            "-p",
            "netns",
            "-p",
            "rlimit=nofile:64",
            "-p",
            "cpu-stress=2",
            "-p",
            "locale=C.UTF-8",
            "--",
            "subject",
        ],
    );
    assert_eq!(code, 0, "{report:#}");
    let shams: Vec<(&str, &str)> = cells(&report)
        .into_iter()
        .filter(|c| !c["sham_of"].is_null())
        .map(|c| (c["name"].as_str().unwrap(), c["sham_of"].as_str().unwrap()))
        .collect();
    // One per mechanism, whatever the number of cells using it.
    assert_eq!(shams.len(), 4, "{shams:?}");
    assert!(
        shams
            .iter()
            .any(|(n, m)| n.starts_with("tz=") && *m == "TZ set"),
        "{shams:?}"
    );
    assert!(shams.contains(&("faketime=+0", "the clock preload")));
    assert!(shams
        .iter()
        .any(|(n, m)| n.starts_with("cpu-pin=") && *m == "the setup before exec"));
    assert!(shams.contains(&("cpu-stress=0", "a run scheduled alone")));
    assert_eq!(
        cell(&report, "netns")["sham"],
        cell(&report, "rlimit=nofile:64")["sham"]
    );
    assert_eq!(cell(&report, "faketime=+365d")["sham"], "faketime=+0");
    assert!(
        cell(&report, "locale=C.UTF-8")["sham"].is_null(),
        "no mechanism beside the variable"
    );
    assert!(cell(&report, "baseline")["sham"].is_null());

    let (_, plain) = fake_run(
        &lab,
        "",
        &[
            "-n",
            "2",
            "-p",
            "faketime=+365d",
            "--no-sham",
            "--",
            "subject",
        ],
    );
    assert_eq!(cells(&plain).len(), 2, "{plain:#}");
}

#[test]
fn a_difference_the_sham_shares_is_the_mechanisms_not_the_parameters() {
    let lab = Lab::new();
    // Fails whenever the preload is there: the shift and the sham alike.
    let (code, report) = fake_run(
        &lab,
        "[[run]]\ncell = \"faketime=+365d\"\nexit = 1\n[[run]]\ncell = \"faketime=+0\"\nexit = 1\n",
        &["-n", "8", "-p", "faketime=+365d", "--", "subject"],
    );
    assert_eq!(
        code, 1,
        "a difference from the baseline is still a finding: {report:#}"
    );
    let shifted = cell(&report, "faketime=+365d");
    assert_eq!(shifted["vs_baseline"]["differs"], true);
    assert_eq!(shifted["vs_sham"]["differs"], false, "{shifted:#}");
    let table = String::from_utf8_lossy(&lab.run(&["report"]).stdout).into_owned();
    assert!(table.contains("not from its sham"), "{table}");
    assert!(
        table.contains("the clock preload alone may reproduce it"),
        "{table}"
    );
    assert!(
        table.contains("faketime=+0: this sham differs from the baseline"),
        "{table}"
    );
    let e = json(&lab.run(&["evidence", "--format", "json"]));
    let claimed = e["classification"]["claimed"].as_array().unwrap();
    assert!(
        claimed.is_empty(),
        "nothing is attributed to the clock: {claimed:#?}"
    );
    let open = e["classification"]["not_determinable"].as_array().unwrap();
    assert!(
        open.iter().any(|o| o["why"]
            .as_str()
            .unwrap()
            .contains("not from its sham `faketime=+0`")),
        "{open:#?}"
    );

    // Fails only under the shift: the shift's.
    let (code, report) = fake_run(
        &lab,
        "[[run]]\ncell = \"faketime=+365d\"\nexit = 1\n",
        &["-n", "8", "-p", "faketime=+365d", "--", "subject"],
    );
    assert_eq!(code, 1);
    let shifted = cell(&report, "faketime=+365d");
    assert_eq!(shifted["vs_sham"]["differs"], true, "{shifted:#}");
    let e = json(&lab.run(&["evidence", "--format", "json"]));
    assert!(
        e["classification"]["claimed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["row"]["cell"] == "faketime=+365d"),
        "{:#}",
        e["classification"]
    );
}

#[test]
fn per_test_rows_are_compared_with_the_sham_too() {
    let lab = Lab::new();
    let junit = |fail: bool| {
        let case = if fail {
            "<testcase classname='t' name='zone'><failure message='offset'/></testcase>"
        } else {
            "<testcase classname='t' name='zone'/>"
        };
        format!("<testsuite name='s'>{case}<testcase classname='t' name='ok'/></testsuite>")
    };
    let script = format!(
        "[[run]]\ncell = \"tz=Pacific/Kiritimati\"\nexit = 1\njunit = \"{}\"\n[[run]]\njunit = \"{}\"\n",
        junit(true),
        junit(false)
    );
    let (code, report) = fake_run(
        &lab,
        &script,
        &[
            "-n",
            "8",
            "-p",
            "tz=Pacific/Kiritimati",
            "--",
            "subject",
            "{junit}",
        ],
    );
    assert_eq!(code, 1, "{report:#}");
    let zone = cell(&report, "tz=Pacific/Kiritimati");
    let row = zone["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "t::zone")
        .unwrap();
    assert_eq!(row["sham"], zone["sham"]);
    assert_eq!(row["vs_sham"]["differs"], true, "{row:#}");
}

#[test]
fn with_the_real_preload_a_preload_sensitive_subject_is_the_mechanisms_and_a_year_check_the_shifts()
{
    let lab = Lab::new();
    // Fails whenever anything is preloaded: the mechanism, not the clock.
    let out = lab.run(&[
        "run",
        "--format",
        "json",
        "-n",
        "6",
        "-p",
        "faketime=+365d",
        "--",
        "sh",
        "-c",
        "test -z \"$LD_PRELOAD\"",
    ]);
    let report = json(&out);
    assert_eq!(out.status.code(), Some(1), "{report:#}");
    let shifted = cell(&report, "faketime=+365d");
    assert_eq!(shifted["vs_baseline"]["differs"], true, "{shifted:#}");
    assert_eq!(shifted["vs_sham"]["differs"], false, "{shifted:#}");
    assert_eq!(cell(&report, "faketime=+0")["k"].as_u64(), Some(6));

    // Fails when the clock reads more than 30 days past now: the shift.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let check = format!("test \"$(date +%s)\" -lt {}", now + 30 * 86_400);
    let out = lab.run(&[
        "run",
        "--format",
        "json",
        "-n",
        "6",
        "-p",
        "faketime=+365d",
        "--",
        "sh",
        "-c",
        &check,
    ]);
    let report = json(&out);
    assert_eq!(out.status.code(), Some(1), "{report:#}");
    let shifted = cell(&report, "faketime=+365d");
    assert_eq!(shifted["vs_sham"]["differs"], true, "{shifted:#}");
    assert_eq!(cell(&report, "faketime=+0")["k"].as_u64(), Some(0));
}

/// A JUnit report of three tests that always fail and `zone`, failing or not.
fn suite(zone_fails: bool) -> String {
    let always: String = (1..=3)
        .map(|i| {
            format!(
                "<testcase classname='t' name='broken{i}'><failure message='always'/></testcase>"
            )
        })
        .collect();
    let zone = if zone_fails {
        "<testcase classname='t' name='zone'><failure message='offset'/></testcase>"
    } else {
        "<testcase classname='t' name='zone'/>"
    };
    format!("<testsuite name='s'>{always}{zone}<testcase classname='t' name='ok'/></testsuite>")
}

#[test]
fn evidence_follows_per_test_verdicts_beside_tests_that_always_fail() {
    for design in ["fixed", "screen"] {
        let lab = Lab::new();
        // Every run fails (three tests always do); only Kiritimati flips `zone`.
        let script = format!(
            "[[run]]\ncell = \"tz=Pacific/Kiritimati\"\nexit = 1\njunit = \"{}\"\n[[run]]\nexit = 1\njunit = \"{}\"\n",
            suite(true),
            suite(false)
        );
        let mut args = vec![
            "--design",
            design,
            "-p",
            "tz=Pacific/Kiritimati",
            "-p",
            "tz=Pacific/Pago_Pago",
        ];
        if design == "fixed" {
            args.extend_from_slice(&["-n", "8"]);
        }
        args.extend_from_slice(&["--", "subject", "{junit}"]);
        let (code, report) = fake_run(&lab, &script, &args);
        assert_eq!(code, 1, "{design}: {report:#}");
        let kiri = cell(&report, "tz=Pacific/Kiritimati");
        assert_ne!(
            kiri["vs_baseline"]["differs"], true,
            "{design}: whole runs all fail everywhere"
        );
        let e = json(&lab.run(&["evidence", "--format", "json"]));
        let c = &e["classification"];
        let claim = c["claimed"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["class"] == "clock_and_zone")
            .unwrap_or_else(|| panic!("{design}: the zone flip is claimed: {c:#}"));
        assert_eq!(
            claim["row"]["cell"], "tz=Pacific/Kiritimati",
            "{design}: {claim:#}"
        );
        assert!(
            claim["row"]["text"].as_str().unwrap().contains("t::zone"),
            "{claim:#}"
        );
        assert!(
            !c["against"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["class"] == "clock_and_zone"),
            "{design}: nothing argues against what is proven: {c:#}"
        );
        let always: Vec<&str> = e["always_failing"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        assert_eq!(
            always,
            ["t::broken1", "t::broken2", "t::broken3"],
            "{design}"
        );
        assert!(
            !e["tests"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["test"].as_str().unwrap().starts_with("t::broken")),
            "{design}: listed once, not per cell: {:#}",
            e["tests"]
        );
        let md = String::from_utf8_lossy(&lab.run(&["evidence"]).stdout).into_owned();
        assert!(
            md.contains("3 test(s) failed in every run of every cell"),
            "{md}"
        );
    }
}
