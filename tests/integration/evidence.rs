//! `flakelab evidence` end to end: subjects with a planted cause, whose
//! evidence names that cause with the row that discriminates it; a clean
//! subject whose evidence claims nothing and says what it looked at; and
//! secrets that never leave through a record or an output.

use serde_json::Value;

use super::{capable, copy_fixture, sh_ok, Lab};

/// `flakelab evidence --format json` in the lab (the latest session).
fn evidence(lab: &Lab, extra: &[&str]) -> Value {
    let mut args = vec!["evidence", "--format", "json"];
    args.extend_from_slice(extra);
    let out = lab.run(&args);
    super::report_from(&out, 0)
}

/// `flakelab evidence` (Markdown) in the lab.
fn markdown(lab: &Lab, extra: &[&str]) -> String {
    let mut args = vec!["evidence"];
    args.extend_from_slice(extra);
    let out = lab.run(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for word in ["flaky", "stable"] {
        assert!(!text.to_lowercase().contains(word), "`{word}` in:\n{text}");
    }
    text
}

/// The claimed finding of `class`, whose row is about `cell`.
fn claimed<'a>(e: &'a Value, class: &str, cell: &str) -> &'a Value {
    e["classification"]["claimed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["class"] == class && f["row"]["cell"] == cell)
        .unwrap_or_else(|| {
            panic!(
                "{class} not claimed with `{cell}`: {:#}",
                e["classification"]
            )
        })
}

fn claimed_classes(e: &Value) -> Vec<String> {
    e["classification"]["claimed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["class"].as_str().unwrap().to_string())
        .collect()
}

fn against<'a>(e: &'a Value, class: &str, cell: &str) -> &'a Value {
    e["classification"]["against"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["class"] == class && f["row"]["cell"] == cell)
        .unwrap_or_else(|| {
            panic!(
                "nothing against {class} from `{cell}`: {:#}",
                e["classification"]
            )
        })
}

/// Asserts the row shows `k of n` against the baseline's `bk of bn` with an
/// adjusted p below 0.05.
fn row_is(f: &Value, k: u64, n: u64, bk: u64, bn: u64) {
    let row = &f["row"];
    assert_eq!(row["count"]["k"].as_u64(), Some(k), "{f}");
    assert_eq!(row["count"]["n"].as_u64(), Some(n), "{f}");
    assert_eq!(row["baseline"]["k"].as_u64(), Some(bk), "{f}");
    assert_eq!(row["baseline"]["n"].as_u64(), Some(bn), "{f}");
    assert!(row["p"].as_f64().unwrap() < 0.05, "{f}");
}

fn netns_available() -> bool {
    capable(
        "network namespaces",
        sh_ok(&format!(
            "{} __exec --netns -- true",
            super::bin().display()
        )),
    )
}

fn pytest_plugins_available() -> bool {
    capable(
        "pytest with pytest-randomly and pytest-xdist",
        sh_ok("python3 -c 'import pytest, pytest_randomly, xdist'"),
    )
}

#[test]
fn a_zone_dependent_subject_is_classified_clock_and_zone_by_its_zone_cell() {
    let lab = Lab::new();
    // Kiritimati is UTC+14 all year; no host runs there.
    let (code, _) = lab.run_json(&[
        "-n",
        "6",
        "-p",
        "tz=Pacific/Kiritimati",
        "--",
        "sh",
        "-c",
        "test \"$(date +%z)\" != +1400",
    ]);
    assert_eq!(code, 1);
    let e = evidence(&lab, &[]);
    assert_eq!(e["schema"], "flakelab.evidence/1");
    let f = claimed(&e, "clock_and_zone", "tz=Pacific/Kiritimati");
    row_is(f, 6, 6, 0, 6);
    assert_eq!(claimed_classes(&e), ["clock_and_zone"]);
    // The reproduction line of the differing cell is its first failing run.
    let repro = &e["reproductions"][0];
    assert_eq!(repro["cell"], "tz=Pacific/Kiritimati");
    assert!(repro["line"]
        .as_str()
        .unwrap()
        .contains("TZ=Pacific/Kiritimati"));
    let md = markdown(&lab, &[]);
    assert!(
        md.contains("- **clock and zone** — `tz=Pacific/Kiritimati`: 6 of 6"),
        "{md}"
    );
    assert!(
        md.contains("| clock and zone | checked (`tz=Pacific/Kiritimati`; N = 6) |"),
        "{md}"
    );
}

#[test]
fn a_date_that_expires_is_told_from_the_zone_by_a_clean_zone_cell() {
    let lab = Lab::new();
    let expiry = jiff::Timestamp::now().as_second() + 200 * 86_400;
    let script = format!("test \"$(date +%s)\" -lt {expiry}");
    // The clock alone: it fails past an instant and passes before it (the
    // baseline, at the present): an expiring date, not the clock reading.
    let (code, _) = lab.run_json(&["-n", "6", "-p", "faketime=+365d", "--", "sh", "-c", &script]);
    assert_eq!(code, 1);
    let e = evidence(&lab, &[]);
    assert_eq!(claimed_classes(&e), ["expiring_date"]);
    row_is(claimed(&e, "expiring_date", "faketime=+365d"), 6, 6, 0, 6);

    // Beside a zone cell that runs clean: an expiring date.
    let (code, _) = lab.run_json(&[
        "-n",
        "6",
        "-p",
        "faketime=+365d",
        "-p",
        "tz=Pacific/Kiritimati",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert_eq!(code, 1);
    let e = evidence(&lab, &[]);
    assert_eq!(claimed_classes(&e), ["expiring_date"]);
    let f = claimed(&e, "expiring_date", "faketime=+365d");
    row_is(f, 6, 6, 0, 6);
    let a = against(&e, "clock_and_zone", "tz=Pacific/Kiritimati");
    assert!(a["row"]["text"]
        .as_str()
        .unwrap()
        .contains("0 of 6 — rate < 0.393 at 95%"));
}

#[test]
fn a_subject_that_needs_a_route_off_the_host_is_classified_real_network() {
    if !netns_available() {
        return;
    }
    // A UDP connect sends nothing: it only asks the kernel for a route to a
    // documentation address (TEST-NET-2).
    let probe = "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect(('198.51.100.7', 9))";
    if !capable(
        "a route off the host (for the baseline)",
        sh_ok(&format!("python3 -c \"{probe}\"")),
    ) {
        return;
    }
    let lab = Lab::new();
    let (code, _) = lab.run_json(&["-n", "6", "-p", "netns", "--", "python3", "-c", probe]);
    assert_eq!(code, 1);
    let e = evidence(&lab, &[]);
    row_is(claimed(&e, "real_network", "netns"), 6, 6, 0, 6);
    assert_eq!(claimed_classes(&e), ["real_network"]);
}

#[test]
fn a_deadline_that_assumes_a_whole_cpu_is_classified_load_sensitive() {
    // The subject (WHOLE_CPU_DEADLINE) is a Python script.
    if !capable("python3", sh_ok("python3 -c 'import os'")) {
        return;
    }
    let lab = Lab::new();
    // A worker whose deadline assumes a whole CPU: it fails exactly when busy
    // threads run beside it, which it sees in /proc rather than by timing
    // itself (see WHOLE_CPU_DEADLINE), so the count does not depend on the
    // host's load. 5 runs a cell: 5 of 5 against 0 of 5 is p = 0.0079, below
    // 0.05 after Holm across the stress cell and its sham.
    let (_, report) = lab.run_json(&[
        "-n",
        "5",
        "--seed",
        "3",
        "-p",
        "cpu-stress=2x",
        "--",
        "python3",
        "-c",
        super::WHOLE_CPU_DEADLINE,
    ]);
    let e = evidence(&lab, &[]);
    let f = claimed(&e, "load_sensitive_synchronisation", "cpu-stress=2x");
    row_is(f, 5, 5, 0, 5);
    assert_eq!(
        claimed_classes(&e),
        ["load_sensitive_synchronisation"],
        "{report}"
    );
}

#[test]
fn an_order_dependent_pair_is_classified_by_the_shuffle_cell() {
    if !pytest_plugins_available() {
        return;
    }
    let lab = Lab::new();
    copy_fixture(&lab, "pytest-project");
    // The seed fixes every run's shuffle, so the count is the same each time
    // (seed 1: the dependent test runs before its neighbour in 5 of 6
    // shuffled runs; 5 of 6 against 0 of 6 is p = 0.015, and 0.045 for the
    // test after Holm across the file's three tests).
    let (code, report) = lab.run_json(&[
        "-n",
        "6",
        "--seed",
        "1",
        "-p",
        "shuffle",
        "--",
        "python3",
        "-m",
        "pytest",
        "test_config.py",
    ]);
    assert_eq!(code, 1, "{report}");
    let e = evidence(&lab, &[]);
    let f = claimed(&e, "order_dependence", "shuffle");
    assert_eq!(f["row"]["baseline"]["k"].as_u64(), Some(0), "{f}");
    assert!(f["row"]["p"].as_f64().unwrap() < 0.05, "{f}");
    // The per-test row names the test that depends on its neighbour.
    assert!(e["tests"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["cell"] == "shuffle"
            && t["test"] == "test_config::test_b_formats_price"
            && t["differs"] == true));
    assert!(e["recurring_signature"]["signature"]
        .as_str()
        .unwrap()
        .contains("currency was never loaded"));
    assert!(
        e["runner"]["version"]
            .as_str()
            .unwrap()
            .starts_with("pytest "),
        "{}",
        e["runner"]
    );
    assert_eq!(e["runner"]["version_source"], "recorded at run time");
}

#[test]
fn workers_that_collide_beside_clean_cpu_load_are_classified_a_host_resource_collision() {
    if !pytest_plugins_available() {
        return;
    }
    // The collision is the fixture's rendezvous (conftest.py), not timing.
    let lab = Lab::new();
    copy_fixture(&lab, "pytest-project");
    // No sham: nothing here is asserted on one, and without the sham of the
    // stress cell 5 of 5 against 0 of 5 (p = 0.0079) stays below 0.05 after
    // Holm across the two cells.
    let (code, report) = lab.run_json(&[
        "--no-sham",
        "-n",
        "5",
        "--seed",
        "5",
        "-p",
        "workers=2",
        "-p",
        "cpu-stress=2x",
        "--",
        "python3",
        "-m",
        "pytest",
        "test_orders.py",
    ]);
    assert_eq!(code, 1, "{report}");
    let e = evidence(&lab, &[]);
    row_is(
        claimed(&e, "host_resource_collision", "workers=2"),
        5,
        5,
        0,
        5,
    );
    against(&e, "load_sensitive_synchronisation", "cpu-stress=2x");
    assert_eq!(claimed_classes(&e), ["host_resource_collision"]);
}

#[test]
fn a_ladder_given_by_id_brings_its_rungs_and_its_collision_into_the_evidence() {
    let lab = Lab::new();
    let (code, _) = lab.run_json(&["-n", "3", "--", "true"]);
    assert_eq!(code, 0);
    let session = evidence(&lab, &[])["session"].as_str().unwrap().to_string();
    let rung = |r: u8, status: &str, k: u64, session: Option<&str>| {
        serde_json::json!({
            "rung": r, "name": format!("r{r}"), "topology": format!("topology {r}"),
            "shows": format!("shows {r}"), "status": status, "processes": r, "n": 10, "k": k,
            "low": 0.0, "high": if k == 0 { 0.259 } else { 0.878 },
            "baseline": {"n": 10, "k": 0, "low": 0.0, "high": 0.259, "timeouts": 0},
            "reason": null, "session": session,
            "first_reproduction": if k > 0 { serde_json::json!(["x.00001", "cd /x && ./collide"]) } else { Value::Null }
        })
    };
    let ladder = serde_json::json!({
        "schema": "flakelab.ladder/1", "id": "ladder-1", "started_at": "2026-11-29T12:00:00Z",
        "command": ["true"], "cwd": lab.path(), "lane": null, "test": null, "signature": null,
        "criterion": "any failure", "cell": "baseline", "runs_per_rung": 10, "confidence": 0.95,
        "rungs": [rung(1, "clean", 0, None), rung(2, "clean", 0, None), rung(3, "reproduced", 6, Some(&session))],
        "reproduced_at": 3, "interrupted": false
    });
    std::fs::write(
        lab.store().join("ladders.jsonl"),
        format!("{}\n", serde_json::to_string(&ladder).unwrap()),
    )
    .unwrap();
    for args in [&["ladder-1"][..], &[][..]] {
        let e = evidence(&lab, args);
        assert_eq!(e["session"], session.as_str());
        assert_eq!(e["ladder"]["id"], "ladder-1");
        let f = e["classification"]["claimed"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["class"] == "host_resource_collision")
            .expect("collision claimed");
        assert_eq!(f["row"]["rung"].as_u64(), Some(3));
        assert!(e["reproductions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["line"] == "cd /x && ./collide"));
    }
    let md = markdown(&lab, &["ladder-1"]);
    assert!(md.contains("#### Ladder `ladder-1`"), "{md}");
    assert!(md.contains("First rung that reproduced: 3."), "{md}");
}

#[test]
fn a_clean_subject_claims_nothing_and_its_coverage_names_every_class() {
    let lab = Lab::new();
    let mut args = vec!["-n", "5", "-p", "tz=Asia/Kathmandu", "-p", "locale=C.UTF-8"];
    if netns_available() {
        args.extend(["-p", "netns"]);
    }
    args.extend(["--", "true"]);
    let (code, _) = lab.run_json(&args);
    assert_eq!(code, 0);
    let e = evidence(&lab, &[]);
    assert!(claimed_classes(&e).is_empty(), "{:#}", e["classification"]);
    let coverage = e["coverage"].as_array().unwrap();
    assert_eq!(coverage.len(), 12, "{coverage:#?}");
    let status = |class: &str| {
        coverage
            .iter()
            .find(|c| c["class"] == class)
            .unwrap_or_else(|| panic!("{class} missing from coverage"))
            .clone()
    };
    assert_eq!(status("clock_and_zone")["status"], "checked");
    assert_eq!(status("clock_and_zone")["n"].as_u64(), Some(5));
    assert_eq!(status("locale")["status"], "checked");
    assert_eq!(status("unseeded_randomness")["status"], "checked");
    assert_eq!(status("order_dependence")["status"], "not_tested");
    assert_eq!(status("host_resource_collision")["status"], "not_tested");
    // Without CI history in the store, the history's classes are not tested.
    assert_eq!(status("platform_or_entry_path")["status"], "not_tested");
    assert_eq!(status("runner_infrastructure")["status"], "not_tested");
    against(&e, "locale", "locale=C.UTF-8");
    let md = markdown(&lab, &[]);
    assert!(md.contains("No class is claimed"), "{md}");
    assert!(md.contains("#### Coverage"), "{md}");
    assert!(
        md.contains("`tz=Asia/Kathmandu` | 0 of 5 — rate < 0.451 at 95%"),
        "{md}"
    );
    for label in [
        "clock and zone",
        "expiring date",
        "order dependence",
        "real network",
        "load-sensitive synchronisation",
        "host-resource collision",
        "data race",
        "unseeded randomness",
        "locale",
        "incomplete lifecycle",
    ] {
        assert!(md.contains(&format!("| {label}")), "{label} missing:\n{md}");
    }
}

#[test]
fn planted_secrets_never_reach_a_record_a_repro_line_or_an_output() {
    let lab = Lab::new();
    std::fs::write(
        lab.path().join("flakelab.toml"),
        "[redact]\nnames = [\"DEPLOY_CODE\"]\n",
    )
    .unwrap();
    let secrets = [
        "s3cret-inherited-4711",
        "s3cret-given-4712",
        "s3cret-configured-4713",
        "s3cret-listed-4714",
    ];
    let given = format!("env=MY_TOKEN={}", secrets[1]);
    let configured = format!("env=DEPLOY_CODE={}", secrets[2]);
    let listed = format!("env=BUILD_PIN={}", secrets[3]);
    let flakelab = |args: &[&str]| {
        lab.cmd()
            .env("MY_TOKEN", secrets[0])
            .env("FLAKELAB_REDACT", "build_pin, OTHER")
            .args(args)
            .output()
            .unwrap()
    };
    // The subject uses the values (a failing cell has a repro line to show)
    // but never prints them.
    let run = flakelab(&[
        "run",
        "-n",
        "6",
        "--format",
        "markdown",
        "-p",
        &given,
        "-p",
        &configured,
        "-p",
        &listed,
        "--",
        "sh",
        "-c",
        "test -z \"$DEPLOY_CODE\"",
    ]);
    assert_eq!(
        run.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let outputs = super::with_every_reader(run, flakelab);
    let texts = super::everything_written(&outputs, &lab.store());
    for (name, text) in &texts {
        for secret in secrets {
            assert!(
                !text.contains(secret),
                "{secret} leaked into {name}:\n{text}"
            );
        }
    }
    // The redaction is visible where the values would have been.
    let evidence_md = &texts[2 * 4].1;
    assert!(
        evidence_md.contains("DEPLOY_CODE='<redacted>'")
            || evidence_md.contains("DEPLOY_CODE=<redacted>"),
        "{evidence_md}"
    );
}

#[test]
fn the_evidence_marks_sham_rows_as_the_report_does() {
    let lab = Lab::new();
    let bin = super::bin().display().to_string();
    let out = lab.run(&[
        "run",
        "-n",
        "2",
        "-p",
        "tz=Asia/Kathmandu",
        "--",
        &bin,
        "__demo-suite",
        "--project",
        ".",
        "--only",
        "zone::",
    ]);
    assert!(out.status.code().is_some_and(|c| c <= 1), "{out:?}");
    let e = evidence(&lab, &[]);
    let sham = e["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["sham_of"].is_string())
        .unwrap_or_else(|| panic!("no sham cell in {e}"));
    let name = sham["name"].as_str().unwrap();
    let text = markdown(&lab, &[]);
    assert!(
        text.contains(&format!("| `{name}` (sham) | ")),
        "{name} unmarked in\n{text}"
    );
    assert!(!text.contains("| `tz=Asia/Kathmandu` (sham)"), "{text}");
}
