//! Snapshots of the three renderers on one fixed session: a baseline, a cell
//! that differs with per-test data, a cell that was not applied, and a cell
//! whose runs hang. The data is built by hand, so nothing needs redacting.

use crate::plan;
use crate::record::{
    CellRecord, EnvDelta, Outcome, ProcessEnd, RunRecord, SessionRecord, TestOutcome, TestRecord,
    RUN_SCHEMA, SESSION_SCHEMA,
};
use crate::store::LoadStats;

pub(super) fn session() -> SessionRecord {
    let cells = ["baseline", "tz=Asia/Kathmandu", "netns", "faketime=+365d"];
    let names: Vec<String> = cells.iter().map(|c| c.to_string()).collect();
    SessionRecord {
        schema: SESSION_SCHEMA.into(),
        id: "20261129-120000-abcd".into(),
        started_at: "2026-11-29T12:00:00.000Z".into(),
        flakelab_version: "0.1.0".into(),
        command: vec!["python3".into(), "-m".into(), "pytest".into()],
        cwd: "/src/shop".into(),
        seed: 7,
        confidence: 0.95,
        signature: None,
        signatures: Vec::new(),
        timeout_s: Some(2.0),
        jobs: 1,
        cells: cells
            .iter()
            .map(|c| CellRecord {
                name: c.to_string(),
                perturbations: if *c == "baseline" { vec![] } else { vec![c.to_string()] },
                applied: *c != "netns",
                reason: (*c == "netns").then(|| {
                    "netns: the kernel refused a network namespace: No space left on device (ENOSPC)".into()
                }),
                probes: vec![],
                sham_of: None,
                sham: None,
                notes: vec![],
            })
            .collect(),
        plan: plan::build(&names, 6, 7),
        host: crate::record::HostInfo {
            hostname: "h".into(),
            os: "Debian GNU/Linux 12".into(),
            kernel: "6.18".into(),
            arch: "x86_64".into(),
            cpu_model: "cpu".into(),
            cpus: 2,
            memory_bytes: 1 << 34,
        },
        repo: None,
        replay_of: None,
        junit: None,
        runner: Some("pytest".into()),
        runner_note: None,
            runner_version: None,
        left_out: vec!["shuffled-order: cannot shuffle: …".into()],
        rung: None,
        part_of: None,
        shards: None,
        warnings: Vec::new(),
        records_end: false,
        design_chosen: None,
        scan_prove: None,
        per_test_from: None,
    }
}

pub(super) fn run(
    session: &SessionRecord,
    index: usize,
    cell: &str,
    outcome: Outcome,
) -> RunRecord {
    let failing = outcome == Outcome::Fail;
    RunRecord {
        schema: RUN_SCHEMA.into(),
        id: format!("{}.{index:05}", session.id),
        session: session.id.clone(),
        index,
        cell: cell.into(),
        perturbations: if cell == "baseline" {
            vec![]
        } else {
            vec![cell.into()]
        },
        replicate: 0,
        seed: 1,
        started_at: "2026-11-29T12:00:01.000Z".into(),
        duration_s: 0.5,
        outcome,
        end: match outcome {
            Outcome::Timeout => ProcessEnd::TimedOut { signal: 15 },
            Outcome::NotApplied => ProcessEnd::NotStarted,
            _ => ProcessEnd::Exited {
                code: i32::from(failing),
            },
        },
        exit_code: None,
        signal: None,
        signature_match: None,
        signature_pattern: None,
        reason: None,
        log: None,
        output_bytes: 0,
        output_dropped: 0,
        argv: vec![],
        cwd: "/src/shop".into(),
        env: EnvDelta::default(),
        stragglers: 0,
        warnings: vec![],
        repro: format!("cd /src/shop && env TZ=Asia/Kathmandu python3 -m pytest # run {index}"),
        repro_note: None,
        cpu_busy: None,
        cpu: None,
        workers: None,
        junit: None,
        tests_missing: None,
        tests: if matches!(outcome, Outcome::Pass | Outcome::Fail) {
            vec![
                TestRecord {
                    id: "test_billing::test_due_date".into(),
                    family: None,
                    outcome: if failing {
                        TestOutcome::Fail
                    } else {
                        TestOutcome::Pass
                    },
                    passed_on_rerun: false,
                    retries: 0,
                    signature: failing.then(|| "AssertionError: offset is <n>".into()),
                    message: None,
                    signature_match: None,
                    signature_pattern: None,
                },
                TestRecord {
                    id: "test_billing::test_total".into(),
                    family: None,
                    outcome: TestOutcome::Pass,
                    passed_on_rerun: false,
                    retries: 0,
                    signature: None,
                    message: None,
                    signature_match: None,
                    signature_pattern: None,
                },
            ]
        } else {
            vec![]
        },
        failure_signature: failing.then(|| "AssertionError: offset is <n>".into()),
        topology: None,
        processes: None,
    }
}

/// The report of the renderers' fixed session: every cell's runs, one
/// outcome per cell.
pub(super) fn report() -> super::Report {
    let s = session();
    let mut runs = Vec::new();
    for spec in s.plan.iter() {
        let cell = s.plan.cells[spec.cell].as_str();
        let outcome = match cell {
            "baseline" => Outcome::Pass,
            "tz=Asia/Kathmandu" => Outcome::Fail,
            "netns" => Outcome::NotApplied,
            _ => Outcome::Timeout,
        };
        runs.push(run(&s, spec.index, cell, outcome));
    }
    super::build(&s, &runs, LoadStats::default())
}

#[test]
fn table() {
    insta::assert_snapshot!(super::table::render(&report()));
}

#[test]
fn the_colored_table_is_the_plain_table_with_its_verdict_words_painted() {
    let report = report();
    let plain = super::table::render(&report);
    assert_eq!(super::table::render_colored(&report, false), plain);
    let colored = super::table::render_colored(&report, true);
    // Color adds escapes and nothing else: stripped, the bytes are the plain table's.
    let ansi = regex::Regex::new(r"\x1b\[[0-9;]*m").unwrap();
    assert_eq!(ansi.replace_all(&colored, ""), plain);
    let cells: Vec<&str> = colored.lines().filter(|l| l.contains('\x1b')).collect();
    assert_eq!(cells.len(), 5, "{colored}");
    let pad =
        " ".repeat("differs (p=0.002; rate +1.00 [+0.45, +1.00])  ".len() - "(reference)".len());
    assert!(cells[0].contains(&format!("\x1b[2m(reference)\x1b[0m{pad}applied")));
    assert!(
        cells[1].contains("\x1b[1;31mdiffers\x1b[0m (p=0.002; rate +1.00 [+0.45, +1.00])  applied")
    );
    assert!(cells[2].contains("\x1b[1;33mNOT APPLIED\x1b[0m: netns"));
    assert!(cells[3].contains("\x1b[1;31mtimeouts differ\x1b[0m (p=0.002)"));
    assert!(cells[4].contains("test_due_date  6 of 6"));
    assert!(cells[4].ends_with("\x1b[1;31mdiffers\x1b[0m (p=0.004; rate +1.00 [+0.45, +1.00])"));
}

#[test]
fn markdown() {
    insta::assert_snapshot!(super::markdown::render(&report()));
}

#[test]
fn json() {
    insta::assert_snapshot!(super::json::render(&report()));
}

#[test]
fn the_per_test_heading_names_where_the_rows_come_from() {
    let mut report = report();
    let heading = |r: &super::Report| -> Vec<String> {
        let renders = [
            super::table::render(r),
            super::markdown::render(r),
            super::html::render(r),
        ];
        (renders.iter())
            .map(|text| {
                let at = text.to_lowercase().find("per-test outcomes (").unwrap();
                let rest = &text[at + "per-test outcomes (".len()..];
                rest[..rest.find(')').unwrap()].to_string()
            })
            .collect()
    };
    // A session that did not record it reads as it always did.
    assert_eq!(heading(&report), ["JUnit"; 3]);
    report.per_test_from = Some("go test -json".into());
    assert_eq!(heading(&report), ["go test -json"; 3]);
    let json: serde_json::Value = serde_json::from_str(&super::json::render(&report)).unwrap();
    assert_eq!(json["per_test_from"], "go test -json");
}
