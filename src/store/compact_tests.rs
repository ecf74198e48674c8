//! The compact encoding against whole records: round trips (exact, and by
//! property), what it writes, v1 and whole lines among compact ones,
//! concatenation, healing, selections, crashes mid-suite, failures.

use std::io::Write;
use std::path::PathBuf;

use proptest::prelude::*;

use super::compact::{v1_line, Writer};
use super::{LoadStats, Store};
use crate::record::{
    EnvDelta, Outcome, ProcessEnd, RunCpu, RunRecord, RunTopology, TestOutcome, TestRecord,
    RUN_SCHEMA,
};

const SESSION: &str = "20250101-000000-abcd";

fn test(id: &str, outcome: TestOutcome) -> TestRecord {
    let family = id.split_once('[').map(|(f, _)| f.to_string());
    let failed = matches!(outcome, TestOutcome::Fail | TestOutcome::Error);
    TestRecord {
        id: id.to_string(),
        family,
        outcome,
        passed_on_rerun: false,
        retries: 0,
        signature: failed.then(|| "AssertionError: <n> != <n>".to_string()),
        message: failed.then(|| "AssertionError: 3 != 4".to_string()),
        signature_match: None,
        signature_pattern: None,
    }
}

fn suite(n: usize) -> Vec<TestRecord> {
    (0..n)
        .map(|i| {
            let id = if i % 3 == 0 {
                format!("tests/test_m{}.py::test_{i}[p{}]", i / 50, i % 7)
            } else {
                format!("tests/test_m{}.py::test_{i}", i / 50)
            };
            test(
                &id,
                if i % 11 == 5 {
                    TestOutcome::Skip
                } else {
                    TestOutcome::Pass
                },
            )
        })
        .collect()
}

/// A run as the engine records it: paths, argv and env carry its id, seed
/// and index.
pub(super) fn run(index: usize, cell: &str, tests: Vec<TestRecord>) -> RunRecord {
    let id = format!("{SESSION}.{index:05}");
    let seed = 1_000_000 + index as u64 * 7919;
    let junit = format!("/tmp/p/.flakelab/junit/{SESSION}/{index:05}.xml");
    let mut env = EnvDelta::default();
    for (k, v) in [
        ("FLAKELAB", "1".to_string()),
        ("FLAKELAB_CELL", cell.to_string()),
        ("FLAKELAB_RUN_ID", id.clone()),
        ("FLAKELAB_SEED", seed.to_string()),
    ] {
        env.set.insert(k.to_string(), v);
    }
    RunRecord {
        schema: RUN_SCHEMA.to_string(),
        id: id.clone(),
        session: SESSION.to_string(),
        index,
        cell: cell.to_string(),
        perturbations: if cell == "baseline" {
            vec![]
        } else {
            vec![cell.to_string()]
        },
        replicate: (index / 2) as u32,
        seed,
        started_at: format!("2025-01-01T00:00:{:02}.5Z", index % 60),
        duration_s: 0.25 + index as f64 / 3.0,
        outcome: Outcome::Pass,
        end: ProcessEnd::Exited { code: 0 },
        exit_code: Some(0),
        signal: None,
        signature_match: None,
        signature_pattern: None,
        reason: None,
        log: Some(PathBuf::from(format!("logs/{SESSION}/{index:05}.log"))),
        output_bytes: 120,
        output_dropped: 0,
        argv: vec!["pytest".into(), format!("--junitxml={junit}"), "-p".into(), "{x}".into()],
        cwd: PathBuf::from("/tmp/p"),
        repro: format!(
            "cd /tmp/p && env FLAKELAB=1 FLAKELAB_CELL={cell} FLAKELAB_RUN_ID={id} FLAKELAB_SEED={seed} pytest --junitxml={junit} -p '{{x}}'"
        ),
        env,
        repro_note: None,
        cpu_busy: Some(0.5),
        cpu: Some(RunCpu {
            window_s: 0.3,
            subject_s: Some(0.1),
            stress: None,
        }),
        stragglers: 0,
        warnings: vec![],
        workers: None,
        junit: Some(PathBuf::from(junit)),
        tests_missing: None,
        tests,
        failure_signature: None,
        topology: None,
        processes: None,
    }
}

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join(".flakelab")).unwrap();
    (dir, store)
}

fn read(store: &Store) -> (Vec<RunRecord>, LoadStats) {
    store.runs_of(SESSION).unwrap()
}

fn file(store: &Store) -> String {
    std::fs::read_to_string(store.runs_path(SESSION).unwrap()).unwrap()
}

#[test]
fn runs_come_back_exactly() {
    let (_dir, store) = store();
    let mut runs = Vec::new();
    for i in 0..6 {
        let mut tests = suite(40);
        if i % 2 == 1 {
            tests[7] = test(&tests[7].id.clone(), TestOutcome::Fail);
            tests[7].signature_match = Some(true);
        }
        let mut r = run(i, if i % 2 == 0 { "baseline" } else { "tz=UTC" }, tests);
        if i % 2 == 1 {
            r.outcome = Outcome::Fail;
            r.end = ProcessEnd::Exited { code: 1 };
            r.exit_code = Some(1);
            r.failure_signature = Some("AssertionError: <n> != <n>".into());
        }
        store.append_run(&r).unwrap();
        runs.push(r);
    }
    assert_eq!(read(&store), (runs, LoadStats::default()));
}

#[test]
fn a_run_line_holds_only_what_is_unusual() {
    let (_dir, store) = store();
    store.append_run(&run(0, "baseline", suite(2000))).unwrap();
    let mut failing = suite(2000);
    failing[1234] = test(&failing[1234].id.clone(), TestOutcome::Error);
    store.append_run(&run(1, "baseline", failing)).unwrap();
    let text = file(&store);
    let lines: Vec<&str> = text.lines().collect();
    // The table and the context once, then one line per run.
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[0].starts_with(r#"{"schema":"flakelab.tests/2","w":""#));
    assert!(lines[1].starts_with(r#"{"schema":"flakelab.context/2","w":""#));
    assert!(
        lines[1].contains(r#""FLAKELAB_RUN_ID":"{id}""#),
        "{}",
        lines[1]
    );
    assert!(lines[1].contains("-p '{{x}}'"), "{}", lines[1]);
    for line in &lines[2..] {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["schema"], "flakelab.run/2");
        assert_eq!(v["n"], 2000);
        assert!(line.len() < 300, "{line}");
    }
    let v: serde_json::Value = serde_json::from_str(lines[3]).unwrap();
    assert_eq!(v["t"][0]["k"], 1234);
    assert_eq!(v["t"][0]["o"], "error");
    assert_eq!(v["t"][0]["msg"], "AssertionError: 3 != 4");
}

#[test]
fn a_selection_and_a_crash_mid_suite_come_back_with_their_tests_absent() {
    let (_dir, store) = store();
    let full = suite(30);
    let selection: Vec<TestRecord> = [3, 4, 17, 29].iter().map(|&i| full[i].clone()).collect();
    let crashed: Vec<TestRecord> = full[..12].to_vec();
    let mut runs = vec![
        run(0, "baseline", full.clone()),
        run(1, "baseline", selection),
        run(2, "baseline", crashed),
        run(3, "baseline", vec![]),
    ];
    runs[2].outcome = Outcome::Fail;
    runs[2].end = ProcessEnd::Signaled { signal: 11 };
    runs[2].exit_code = None;
    runs[2].signal = Some(11);
    runs[3].tests_missing = Some("the report holds no test case".into());
    for r in &runs {
        store.append_run(r).unwrap();
    }
    let text = file(&store);
    let line = |i: usize| -> serde_json::Value {
        serde_json::from_str(text.lines().nth(2 + i).unwrap()).unwrap()
    };
    assert_eq!(line(1)["ab"], serde_json::json!([0, 3, 5, 17, 18, 29]));
    assert_eq!(line(2)["ab"], serde_json::json!([12, 30]));
    assert!(line(3).get("n").is_none());
    assert_eq!(read(&store), (runs, LoadStats::default()));
}

#[test]
fn tests_first_seen_later_extend_the_table() {
    let (_dir, store) = store();
    let mut grown = suite(10);
    grown.insert(4, test("tests/new.py::test_late", TestOutcome::Pass));
    let runs = vec![run(0, "baseline", suite(10)), run(1, "baseline", grown)];
    for r in &runs {
        store.append_run(r).unwrap();
    }
    let (back, _) = read(&store);
    assert_eq!(back[0], runs[0]);
    // Table order: the late test comes back after the ten it joined.
    let ids: Vec<&str> = back[1].tests.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids.len(), 11);
    assert_eq!(ids[10], "tests/new.py::test_late");
    let mut expected = runs[1].tests.clone();
    let late = expected.remove(4);
    expected.push(late);
    assert_eq!(back[1].tests, expected);
}

#[test]
fn reruns_retries_and_signature_matches_are_kept() {
    let (_dir, store) = store();
    let mut tests = suite(5);
    tests[1] = test(&tests[1].id.clone(), TestOutcome::Fail);
    tests[1].passed_on_rerun = true;
    tests[1].retries = 2;
    tests[1].signature_match = Some(false);
    tests[2].retries = 1;
    tests[4] = test(&tests[4].id.clone(), TestOutcome::Skip);
    let r = run(0, "baseline", tests);
    store.append_run(&r).unwrap();
    assert_eq!(read(&store).0, vec![r]);
}

#[test]
fn what_the_compact_form_cannot_hold_is_written_whole() {
    let (_dir, store) = store();
    let mut twice = run(0, "baseline", suite(3));
    twice.tests.push(twice.tests[0].clone());
    let mut odd_id = run(1, "baseline", suite(3));
    odd_id.id = "hand-made".into();
    let mut ended = run(2, "baseline", suite(3));
    ended.end = ProcessEnd::TimedOut { signal: 9 };
    ended.outcome = Outcome::Timeout;
    ended.exit_code = None;
    ended.topology = Some(RunTopology {
        group: 1,
        copy: 2,
        working_copy: None,
    });
    for r in [&twice, &odd_id, &ended] {
        store.append_run(r).unwrap();
    }
    let text = file(&store);
    assert!(text.lines().next().unwrap().contains(r#""tests":[{"id""#));
    assert!(text.contains(r#""id":"hand-made""#));
    assert_eq!(read(&store).0, vec![twice, odd_id, ended]);
}

#[test]
fn v1_lines_and_compact_lines_read_from_one_file() {
    let (_dir, store) = store();
    let mut old = run(0, "baseline", suite(4));
    old.schema = "flakelab.run/1".into();
    std::fs::create_dir_all(store.root().join("runs")).unwrap();
    let mut f = std::fs::File::create(store.runs_path(SESSION).unwrap()).unwrap();
    writeln!(f, "{}", v1_line(&old).unwrap()).unwrap();
    drop(f);
    let new = run(1, "baseline", suite(4));
    store.append_run(&new).unwrap();
    // And a legacy runs.jsonl beside it, holding another of its runs.
    let mut legacy = run(2, "baseline", suite(4));
    legacy.schema = "flakelab.run/1".into();
    std::fs::write(
        store.root().join("runs.jsonl"),
        format!("{}\n", v1_line(&legacy).unwrap()),
    )
    .unwrap();
    assert_eq!(read(&store), (vec![old, new, legacy], LoadStats::default()));
}

#[test]
fn a_file_concatenated_onto_itself_or_another_writers_reads_the_same() {
    let (dir, store) = store();
    let runs: Vec<RunRecord> = (0..4)
        .map(|i| {
            let mut t = suite(20);
            if i == 2 {
                t[3] = test(&t[3].id.clone(), TestOutcome::Fail);
            }
            run(i, "baseline", t)
        })
        .collect();
    for r in &runs[..2] {
        store.append_run(r).unwrap();
    }
    // Another writer (a shard on another machine) wrote the other two.
    let other = Store::open(&dir.path().join("other")).unwrap();
    for r in &runs[2..] {
        other.append_run(r).unwrap();
    }
    let mine = file(&store);
    let theirs = std::fs::read_to_string(other.runs_path(SESSION).unwrap()).unwrap();
    std::fs::write(
        store.runs_path(SESSION).unwrap(),
        format!("{mine}{theirs}{mine}{theirs}"),
    )
    .unwrap();
    let (back, stats) = read(&store);
    assert_eq!(back, runs);
    assert_eq!(
        stats,
        LoadStats {
            skipped_lines: 0,
            duplicate_ids: 4
        }
    );
}

#[test]
fn a_cut_short_write_loses_only_its_run_and_the_next_append_heals() {
    let (_dir, store) = store();
    store.append_run(&run(0, "baseline", suite(5))).unwrap();
    let path = store.runs_path(SESSION).unwrap();
    // A crash in the middle of a write that carried new table entries.
    let text = file(&store);
    let mut more = suite(5);
    more.push(test("tests/x.py::test_new", TestOutcome::Pass));
    let other = Store::open(store.root()).unwrap();
    other.append_run(&run(1, "baseline", more.clone())).unwrap();
    let full = file(&store);
    let added = &full[text.len()..];
    std::fs::write(&path, format!("{text}{}", &added[..added.len() / 3])).unwrap();
    let (back, stats) = read(&store);
    assert_eq!(back.len(), 1);
    assert_eq!(stats.skipped_lines, 1);
    // The next append (a new writer: the old one crashed) starts a line.
    store.append_run(&run(2, "baseline", more.clone())).unwrap();
    let (back, stats) = read(&store);
    assert_eq!(
        back,
        vec![run(0, "baseline", suite(5)), run(2, "baseline", more)]
    );
    assert_eq!(stats.skipped_lines, 1);
}

#[test]
fn reading_one_session_does_not_open_another_sessions_file() {
    let (_dir, store) = store();
    let mut other = run(0, "baseline", suite(3));
    other.session = "20250102-000000-ffff".into();
    other.id = format!("{}.00000", other.session);
    store.append_run(&other).unwrap();
    store.append_run(&run(0, "baseline", suite(3))).unwrap();
    // Make the other session's file unreadable: reading this one still works.
    let path = store.runs_path(&other.session).unwrap();
    std::fs::write(&path, "garbage\n").unwrap();
    assert_eq!(
        read(&store),
        (vec![run(0, "baseline", suite(3))], LoadStats::default())
    );
    let mut count = 0;
    let stats = store
        .each_run(SESSION, |r| {
            assert_eq!(r.session, SESSION);
            count += 1;
            Ok(())
        })
        .unwrap();
    assert_eq!((count, stats), (1, LoadStats::default()));
    assert_eq!(store.load_runs().unwrap().1.skipped_lines, 1);
}

#[test]
fn the_same_run_encodes_the_same_way_twice() {
    let w = Writer::new("w1".into(), SESSION.into());
    let r = run(3, "baseline", suite(3));
    assert_eq!(w.encode(&r).unwrap().text, w.encode(&r).unwrap().text);
}

fn arb_test() -> impl Strategy<Value = TestRecord> {
    (
        0usize..12,
        prop_oneof![
            Just(TestOutcome::Pass),
            Just(TestOutcome::Fail),
            Just(TestOutcome::Error),
            Just(TestOutcome::Skip)
        ],
        any::<bool>(),
        0u32..3,
        proptest::option::of("[a-z {}]{0,8}"),
        proptest::option::of(any::<bool>()),
        proptest::option::of(0u32..3),
    )
        .prop_map(|(i, outcome, rerun, retries, sig, sm, sp)| TestRecord {
            id: if i % 2 == 0 {
                format!("m::t{i}[x]")
            } else {
                format!("m::t{i}")
            },
            family: (i % 2 == 0).then(|| format!("m::t{i}")),
            outcome,
            passed_on_rerun: rerun,
            retries,
            message: sig.clone().map(|s| format!("{s}!")),
            signature: sig,
            signature_match: sm,
            signature_pattern: sp,
        })
}

#[test]
fn a_failing_run_keeps_the_order_it_ran_in_and_a_passing_one_comes_back_in_table_order() {
    let (_dir, store) = store();
    let t = |id: &str, outcome: TestOutcome| TestRecord {
        id: id.into(),
        family: None,
        outcome,
        passed_on_rerun: false,
        retries: 0,
        message: None,
        signature: None,
        signature_match: None,
        signature_pattern: None,
    };
    let ids = |r: &RunRecord| -> Vec<String> { r.tests.iter().map(|t| t.id.clone()).collect() };
    let pass = TestOutcome::Pass;
    // The baseline's order makes the table: victim, f, polluter.
    store
        .append_run(&run(
            0,
            "baseline",
            vec![t("v", pass), t("f", pass), t("p", pass)],
        ))
        .unwrap();
    // Shuffled: the polluter ran first and the victim failed after it.
    let failing = vec![t("p", pass), t("v", TestOutcome::Fail), t("f", pass)];
    store.append_run(&run(1, "shuffle", failing)).unwrap();
    // Shuffled and passing: its order is not kept.
    let passing = vec![t("f", pass), t("v", pass), t("p", pass)];
    store.append_run(&run(2, "shuffle", passing)).unwrap();
    let (back, _) = read(&store);
    assert_eq!(ids(&back[0]), ["v", "f", "p"]);
    assert_eq!(ids(&back[1]), ["p", "v", "f"], "the order it failed in");
    assert_eq!(ids(&back[2]), ["v", "f", "p"], "table order");
    // The failing run's line is the whole record; the others are compact.
    let text = std::fs::read_to_string(store.runs_path(SESSION).unwrap()).unwrap();
    let whole: Vec<bool> = (text.lines())
        .filter(|l| l.contains("\"flakelab.run/2\""))
        .map(|l| l.contains("\"tests\":"))
        .collect();
    assert_eq!(whole, [false, true, false], "{text}");
}

pub(super) fn arb_run() -> impl Strategy<Value = RunRecord> {
    (
        0usize..40,
        proptest::collection::vec(arb_test(), 0..10),
        prop_oneof![Just("baseline"), Just("tz=UTC"), Just("env=A={b}")],
        any::<u64>(),
        any::<f64>().prop_filter("finite", |d| d.is_finite()),
        proptest::option::of(-3i32..300),
        any::<bool>(),
    )
        .prop_map(|(index, tests, cell, seed, duration, code, nolog)| {
            // One record per test id, as the JUnit reader gives.
            let mut seen = std::collections::HashSet::new();
            let tests = tests
                .into_iter()
                .filter(|t| seen.insert(t.id.clone()))
                .collect();
            let mut r = run(index, cell, tests);
            r.seed = seed;
            r.duration_s = duration;
            if let Some(code) = code {
                r.end = ProcessEnd::Exited { code };
                r.exit_code = Some(code);
            } else {
                r.end = ProcessEnd::SpawnFailed {
                    message: "no such file".into(),
                };
                r.exit_code = None;
                r.outcome = Outcome::Error;
            }
            if nolog {
                r.log = None;
            }
            r
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any sequence of runs comes back as written, except that a passing
    /// run's tests come back in table order (first seen in the session).
    #[test]
    fn any_runs_come_back(runs in proptest::collection::vec(arb_run(), 1..8)) {
        let (_dir, store) = store();
        let mut order: Vec<String> = Vec::new();
        let mut expected = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for mut r in runs {
            if !seen.insert(r.index) {
                continue;
            }
            store.append_run(&r).unwrap();
            // The table as this run would extend it, and whether the run
            // is in that order: a failing run out of it is kept whole, in
            // its own order, and extends nothing.
            let mut table = order.clone();
            for t in &r.tests {
                if !table.contains(&t.id) {
                    table.push(t.id.clone());
                }
            }
            let at = |id: &str| table.iter().position(|o| o == id);
            let ordered = r.tests.windows(2).all(|w| at(&w[0].id) < at(&w[1].id));
            if ordered || !r.tests.iter().any(|t| t.failed()) {
                r.tests.sort_by_key(|t| at(&t.id));
                order = table;
            }
            expected.push(r);
        }
        expected.sort_by_key(|r| r.index);
        let (back, stats) = read(&store);
        prop_assert_eq!(stats, LoadStats::default());
        prop_assert_eq!(back, expected);

        // A view answers as the record it makes does.
        let records: Vec<RunRecord> = store.runs_iter(Some(SESSION)).unwrap().collect();
        let mut at = 0;
        let stats = store
            .each_view(SESSION, |v| {
                let r = &records[at];
                at += 1;
                assert_eq!(&v.to_record(), r);
                assert_eq!(v.id(), r.id.as_str());
                assert_eq!((v.session(), v.index(), v.cell()), (r.session.as_str(), r.index, r.cell.as_str()));
                assert_eq!((v.replicate(), v.started_at(), v.duration_s()), (r.replicate, r.started_at.as_str(), r.duration_s));
                assert_eq!((v.outcome(), v.end(), v.signature_match()), (r.outcome, &r.end, r.signature_match));
                assert_eq!((v.reason(), v.cpu(), v.stragglers()), (r.reason.as_deref(), r.cpu.as_ref(), r.stragglers));
                assert_eq!(v.tests_missing(), r.tests_missing.as_deref());
                assert_eq!(v.failure_signature(), r.failure_signature.as_deref());
                assert_eq!((v.repro(), v.repro_note(), v.log()), (r.repro.clone(), r.repro_note.as_deref(), r.log.clone()));
                let tests: Vec<TestRecord> = v.tests().map(|t| t.to_record()).collect();
                assert_eq!(&tests, &r.tests);
                assert_eq!((v.tests_len(), v.has_tests()), (r.tests.len(), !r.tests.is_empty()));
                Ok(())
            })
            .unwrap();
        prop_assert_eq!(at, records.len());
        prop_assert_eq!(stats, LoadStats::default());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A run whose context is its cell's last one, found without making it,
    /// is written byte for byte as when its context is made anew: the
    /// same context number, no context line; any field that differs
    /// from the last run's gives a context of its own.
    #[test]
    fn a_context_reused_from_a_cells_last_run_writes_the_same_bytes(
        runs in proptest::collection::vec((arb_run(), 0u8..7), 1..12),
    ) {
        let mut reused = Writer::new("w1".into(), SESSION.into());
        let mut anew = Writer::new("w1".into(), SESSION.into());
        for (mut r, change) in runs {
            match change {
                1 => r.argv.push("-v".into()),
                2 => r.repro_note = Some("note".into()),
                3 => r.env.unset.push("HOME".into()),
                4 => r.workers = Some(2),
                // The same directory with a trailing `/`: another context.
                5 => r.cwd.as_mut_os_string().push("/"),
                6 => r.repro.push_str(" {x}"),
                _ => {}
            }
            let a = reused.encode(&r).unwrap();
            anew.forget_recent();
            let b = anew.encode(&r).unwrap();
            prop_assert_eq!(String::from_utf8_lossy(&a.text), String::from_utf8_lossy(&b.text));
            reused.commit(a);
            anew.commit(b);
        }
    }
}

#[test]
fn runs_of_one_cell_share_their_context_and_keep_their_own_values() {
    let mut w = Writer::new("w1".into(), SESSION.into());
    let mut lines = Vec::new();
    for index in 0..4 {
        let cell = if index % 2 == 0 { "baseline" } else { "tz=UTC" };
        let p = w.encode(&run(index, cell, vec![])).unwrap();
        lines.push(String::from_utf8(p.text.clone()).unwrap());
        w.commit(p);
    }
    // The first run of each cell writes its context; the second reuses it.
    assert!(lines[0].starts_with(r#"{"schema":"flakelab.context/2""#));
    assert!(lines[1].starts_with(r#"{"schema":"flakelab.context/2""#));
    assert!(lines[2].starts_with(r#"{"schema":"flakelab.run/2""#));
    assert!(lines[2].contains(r#","c":0,"#), "{}", lines[2]);
    assert!(lines[3].contains(r#","c":1,"#), "{}", lines[3]);
    // Each run line still holds its own index and seed.
    assert!(lines[2].contains(r#""i":2,"#));
    assert!(lines[2].contains(&format!(r#""s":{},"#, 1_000_000 + 2 * 7919)));
    assert!(lines[3].contains(&format!(r#""s":{},"#, 1_000_000 + 3 * 7919)));
}

#[test]
fn a_run_line_that_contradicts_its_table_is_skipped() {
    let (_dir, store) = store();
    let mut failing = suite(10);
    failing[7] = test(&failing[7].id.clone(), TestOutcome::Fail);
    store.append_run(&run(0, "baseline", suite(10))).unwrap();
    let mut r = run(1, "baseline", failing);
    r.tests.remove(3);
    store.append_run(&r).unwrap();
    let text = file(&store);
    let good = text.lines().last().unwrap().to_string();
    assert!(good.contains(r#""ab":[3,4]"#), "{good}");
    assert!(good.contains(r#""t":[{"k":7,"#), "{good}");
    let bad = [
        // An exception on an absent entry.
        good.replace(r#""ab":[3,4]"#, r#""ab":[7,8]"#),
        // Ranges out of order, or past the run's entries.
        good.replace(r#""ab":[3,4]"#, r#""ab":[4,3]"#),
        good.replace(r#""ab":[3,4]"#, r#""ab":[3,11]"#),
        good.replace(r#""ab":[3,4]"#, r#""ab":[3]"#),
        // An exception past the run's entries, more entries than the table.
        good.replace(r#""t":[{"k":7,"#, r#""t":[{"k":10,"#),
        good.replace(r#""n":10"#, r#""n":11"#),
        // Ends that contradict.
        good.replace(r#""x":0"#, r#""x":0,"codes":[0,null]"#),
    ];
    for line in &bad {
        assert_ne!(line, &good);
        let head: String = text.lines().take(3).map(|l| format!("{l}\n")).collect();
        std::fs::write(store.runs_path(SESSION).unwrap(), format!("{head}{line}\n")).unwrap();
        let (back, stats) = read(&store);
        assert_eq!(back.len(), 1, "{line}");
        assert_eq!(stats.skipped_lines, 1, "{line}");
        let mut views = 0;
        let stats = store.each_view(SESSION, |_| {
            views += 1;
            Ok(())
        });
        assert_eq!((views, stats.unwrap().skipped_lines), (1, 1), "{line}");
    }
}

#[test]
fn a_line_longer_than_the_read_buffer_and_a_last_line_without_newline_read_back() {
    let (_dir, store) = store();
    let mut long = run(0, "baseline", suite(3));
    long.tests[1] = test(&long.tests[1].id.clone(), TestOutcome::Fail);
    long.tests[1].message = Some("x".repeat(3 << 20));
    let short = run(1, "baseline", suite(3));
    store.append_run(&long).unwrap();
    store.append_run(&short).unwrap();
    let path = store.runs_path(SESSION).unwrap();
    let text = file(&store);
    std::fs::write(&path, text.trim_end_matches('\n')).unwrap();
    let (back, stats) = read(&store);
    assert_eq!(stats, LoadStats::default());
    assert_eq!(back, vec![long, short]);
}

#[test]
fn an_id_is_left_out_of_its_line_only_when_it_is_the_derived_one() {
    let w = Writer::new("w1".into(), SESSION.into());
    let line = |id: &str| {
        let mut r = run(3, "baseline", vec![]);
        r.id = id.to_string();
        let text = String::from_utf8(w.encode(&r).unwrap().text).unwrap();
        text.lines().last().unwrap().to_string()
    };
    assert_eq!(
        super::compact::run_id(SESSION, 3),
        format!("{SESSION}.00003")
    );
    assert_eq!(super::compact::run_id("s", 123_456), "s.123456");
    assert!(!line(&format!("{SESSION}.00003")).contains(r#""id":"#));
    for kept in [
        format!("{SESSION}.0003"),
        format!("{SESSION}.000030"),
        format!("{SESSION}-00003"),
        format!("{SESSION}.00004"),
        format!("x{SESSION}.00003"),
        "00003".to_string(),
    ] {
        assert!(line(&kept).contains(&format!(r#""id":"{kept}""#)), "{kept}");
    }
}

#[test]
fn a_runs_file_removed_or_replaced_mid_session_gets_the_next_record_at_its_path() {
    // The runs file stays open between appends; a record must still land
    // in the file a reader finds at the path, never in an unlinked one.
    let (_dir, store) = store();
    store.append_run(&run(0, "baseline", suite(2))).unwrap();
    let path = store.runs_path(SESSION).unwrap();
    std::fs::remove_file(&path).unwrap();
    store.append_run(&run(1, "baseline", suite(2))).unwrap();
    let after_removal = file(&store);
    assert!(
        !after_removal.is_empty(),
        "the record went to a new file at the path"
    );
    let copy = path.with_extension("tmp");
    std::fs::write(&copy, &after_removal).unwrap();
    std::fs::rename(&copy, &path).unwrap();
    store.append_run(&run(2, "baseline", suite(2))).unwrap();
    let after_rename = file(&store);
    assert!(
        after_rename.len() > after_removal.len() && after_rename.starts_with(&after_removal),
        "the record was appended to the file that replaced the old one"
    );
}
