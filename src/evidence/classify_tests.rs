//! Each mapping from evidence to a flake class, on hand-built sessions.

use super::*;
use crate::catalog::perturbation::split_cell;
use crate::plan;
use crate::record::{
    CellRecord, EnvDelta, Outcome, ProcessEnd, RunRecord, RungCount, SessionRecord, RUN_SCHEMA,
    SESSION_SCHEMA,
};
use crate::store::LoadStats;
use FlakeClass::*;

/// A cell: name, failures, runs, whether applied.
pub(crate) struct C<'a>(pub &'a str, pub u64, pub u64, pub bool);

pub(crate) fn session(cells: &[C]) -> SessionRecord {
    let names: Vec<String> = cells.iter().map(|c| c.0.to_string()).collect();
    let n = cells.iter().map(|c| c.2).max().unwrap_or(1).max(1) as u32;
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
        timeout_s: None,
        jobs: 1,
        cells: cells
            .iter()
            .map(|c| CellRecord {
                name: c.0.to_string(),
                perturbations: perturbations(c.0),
                applied: c.3,
                reason: (!c.3).then(|| format!("{}: the probe failed", c.0)),
                probes: vec![],
                sham_of: None,
                sham: None,
                notes: vec![],
            })
            .collect(),
        plan: plan::build(&names, n, 7),
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
        left_out: vec![],
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

fn perturbations(cell: &str) -> Vec<String> {
    if cell == "baseline" {
        vec![]
    } else {
        split_cell(cell, |_| false)
            .into_iter()
            .map(str::to_string)
            .collect()
    }
}

/// Runs for `cells`: the first k of each fail, with `sig(cell, i)`.
pub(crate) fn runs_with(
    s: &SessionRecord,
    cells: &[C],
    sig: impl Fn(&str, u64) -> String,
) -> Vec<RunRecord> {
    let mut out = Vec::new();
    for c in cells {
        let total = c.2;
        for i in 0..total {
            let outcome = if !c.3 {
                Outcome::NotApplied
            } else if i < c.1 {
                Outcome::Fail
            } else {
                Outcome::Pass
            };
            let index = out.len();
            let failing = outcome == Outcome::Fail;
            out.push(RunRecord {
                schema: RUN_SCHEMA.into(),
                id: format!("{}.{index:05}", s.id),
                session: s.id.clone(),
                index,
                cell: c.0.into(),
                perturbations: perturbations(c.0),
                replicate: i as u32,
                seed: 1,
                started_at: format!("2026-11-29T12:00:{:02}.000Z", index % 60),
                duration_s: 0.5,
                outcome,
                end: if c.3 {
                    ProcessEnd::Exited {
                        code: i32::from(failing),
                    }
                } else {
                    ProcessEnd::NotStarted
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
                repro: format!("cd /src/shop && python3 -m pytest # run {index}"),
                repro_note: None,
                cpu_busy: None,
                cpu: None,
                workers: None,
                junit: None,
                tests_missing: None,
                tests: vec![],
                failure_signature: failing.then(|| sig(c.0, i)),
                topology: None,
                processes: None,
            });
        }
    }
    out
}

pub(crate) fn report_of(cells: &[C]) -> Report {
    let s = session(cells);
    let runs = runs_with(&s, cells, |_, _| "AssertionError: boom".into());
    crate::report::build(&s, &runs, LoadStats::default())
}

fn start() -> Option<jiff::Timestamp> {
    "2026-11-29T12:00:00Z".parse().ok()
}

fn classes(fs: &[Finding]) -> Vec<FlakeClass> {
    fs.iter().map(|f| f.class).collect()
}

fn of(r: &Report) -> Classification {
    classify(r, None, None, start())
}

#[test]
fn a_zone_cell_that_differs_claims_clock_and_zone_with_its_row() {
    let r = report_of(&[
        C("baseline", 0, 8, true),
        C("tz=Pacific/Kiritimati", 8, 8, true),
    ]);
    let c = of(&r);
    assert_eq!(classes(&c.claimed), [ClockAndZone]);
    let row = &c.claimed[0].row;
    assert_eq!(row.cell.as_deref(), Some("tz=Pacific/Kiritimati"));
    assert_eq!(row.count, Count { k: 8, n: 8 });
    assert_eq!(row.baseline, Some(Count { k: 0, n: 8 }));
    assert!(row.p.unwrap() < 0.05);
    assert!(row.text.contains("8 of 8"), "{}", row.text);
    assert!(
        row.text
            .contains("vs baseline 0 of 8 — rate < 0.312 at 95%"),
        "{}",
        row.text
    );
    assert!(row.text.contains("Holm-adjusted p="), "{}", row.text);
}

#[test]
fn a_forward_clock_with_a_clean_zone_cell_is_an_expiring_date() {
    let r = report_of(&[
        C("baseline", 0, 8, true),
        C("faketime=+365d", 8, 8, true),
        C("tz=Asia/Kathmandu", 0, 8, true),
    ]);
    let c = of(&r);
    assert_eq!(classes(&c.claimed), [ExpiringDate]);
    assert!(c.claimed[0]
        .because
        .contains("`tz=Asia/Kathmandu` ran clean"));
    // The clean zone cell argues against the zone reading.
    let against: Vec<_> = c
        .against
        .iter()
        .filter(|f| f.class == ClockAndZone)
        .collect();
    assert_eq!(against.len(), 1);
    assert_eq!(against[0].row.cell.as_deref(), Some("tz=Asia/Kathmandu"));
}

#[test]
fn a_year_ahead_failure_is_an_expiring_date_past_its_instant() {
    let r = report_of(&[C("baseline", 0, 8, true), C("faketime=+365d", 8, 8, true)]);
    let c = of(&r);
    assert_eq!(classes(&c.claimed), [ExpiringDate]);
    let because = &c.claimed[0].because;
    assert!(
        because.contains("fails with the clock at 2027-11-29T12:00:00Z (+365d)"),
        "{because}"
    );
    assert!(
        because.contains("passes before it (the baseline, at the present, ran clean)"),
        "{because}"
    );
    assert!(c.not_determinable.iter().all(|o| o.class != ExpiringDate));
    // A clean clock short of it brackets the instant.
    let r = report_of(&[
        C("baseline", 0, 8, true),
        C("faketime=+30d", 0, 8, true),
        C("faketime=+365d", 8, 8, true),
    ]);
    let c = of(&r);
    assert_eq!(classes(&c.claimed), [ExpiringDate]);
    assert!(
        c.claimed[0]
            .because
            .contains("(`faketime=+30d`, the clock at 2026-12-29T12:00:00Z,"),
        "{}",
        c.claimed[0].because
    );
}

#[test]
fn a_backward_clock_or_a_failing_zone_is_clock_and_zone_not_a_date() {
    let r = report_of(&[
        C("baseline", 0, 8, true),
        C("faketime=-30d", 8, 8, true),
        C("tz=Asia/Kathmandu", 0, 8, true),
    ]);
    assert_eq!(classes(&of(&r).claimed), [ClockAndZone]);
    let r = report_of(&[
        C("baseline", 0, 8, true),
        C("faketime=+365d", 8, 8, true),
        C("tz=Asia/Kathmandu", 8, 8, true),
    ]);
    let c = of(&r);
    assert_eq!(classes(&c.claimed), [ClockAndZone, ClockAndZone]);
    assert!(c.not_determinable.iter().all(|o| o.class != ExpiringDate));
    // A baseline that already fails is no date that expires later.
    let r = report_of(&[
        C("baseline", 2, 8, true),
        C("faketime=+365d", 8, 8, true),
        C("tz=Asia/Kathmandu", 2, 8, true),
    ]);
    let c = of(&r);
    assert_eq!(classes(&c.claimed), [ClockAndZone]);
    assert_eq!(c.claimed[0].row.cell.as_deref(), Some("faketime=+365d"));
}

#[test]
fn no_network_that_differs_claims_it_and_a_clean_one_argues_against_with_its_bound() {
    let r = report_of(&[C("baseline", 0, 6, true), C("netns", 6, 6, true)]);
    assert_eq!(classes(&of(&r).claimed), [RealNetwork]);
    let r = report_of(&[C("baseline", 0, 20, true), C("netns", 0, 20, true)]);
    let c = of(&r);
    assert!(c.claimed.is_empty());
    let f = c.against.iter().find(|f| f.class == RealNetwork).unwrap();
    assert!(
        f.row
            .text
            .contains("`netns`: 0 of 20 — rate < 0.139 at 95%"),
        "{}",
        f.row.text
    );
    assert!(f.row.text.contains("no difference shown"), "{}", f.row.text);
}

#[test]
fn cpu_load_claims_load_sensitive_synchronisation() {
    for cell in ["cpu-stress=2x", "cpu-pin=1", "cpu-stress=2x+cpu-pin=1"] {
        let r = report_of(&[C("baseline", 0, 10, true), C(cell, 9, 10, true)]);
        let c = of(&r);
        assert_eq!(
            classes(&c.claimed),
            [LoadSensitiveSynchronisation],
            "{cell}"
        );
        assert_eq!(
            c.claimed[0].because.contains("combines"),
            cell.contains('+'),
            "{cell}"
        );
    }
}

#[test]
fn workers_beside_clean_load_are_a_collision_and_alone_leave_it_open() {
    let r = report_of(&[
        C("baseline", 0, 8, true),
        C("workers=2", 8, 8, true),
        C("cpu-stress=2x", 0, 8, true),
    ]);
    let c = of(&r);
    assert_eq!(classes(&c.claimed), [HostResourceCollision]);
    assert!(c
        .against
        .iter()
        .any(|f| f.class == LoadSensitiveSynchronisation
            && f.row.cell.as_deref() == Some("cpu-stress=2x")));

    // Workers alone add load and concurrency at once: neither is shown.
    let r = report_of(&[C("baseline", 0, 8, true), C("workers=2", 8, 8, true)]);
    let c = of(&r);
    assert!(c.claimed.is_empty(), "{:?}", c.claimed);
    assert!(c
        .not_determinable
        .iter()
        .any(|o| o.class == HostResourceCollision && o.why.contains("no CPU-load cell ran")));
    assert!(c
        .not_determinable
        .iter()
        .any(|o| o.class == LoadSensitiveSynchronisation && o.why.contains("not by workers")));
}

/// A report whose failures in `failing` cell carry `signature`.
fn report_signed(cells: &[C], failing: &str, signature: &str) -> Report {
    let s = session(cells);
    let runs = runs_with(&s, cells, |cell, _| {
        if cell == failing {
            signature.to_string()
        } else {
            "AssertionError: boom".into()
        }
    });
    crate::report::build(&s, &runs, LoadStats::default())
}

#[test]
fn workers_whose_failures_name_a_contested_port_are_a_collision_not_load() {
    for load in [None, Some(8)] {
        let mut cells = vec![C("baseline", 0, 8, true), C("workers=2x", 8, 8, true)];
        if let Some(k) = load {
            cells.push(C("cpu-stress=2x", k, 8, true));
        }
        let r = report_signed(
            &cells,
            "workers=2x",
            "OSError: [Errno <n>] Address already in use",
        );
        let c = of(&r);
        let collision: Vec<&Finding> = c
            .claimed
            .iter()
            .filter(|f| f.class == HostResourceCollision)
            .collect();
        assert_eq!(collision.len(), 1, "{:?}", c.claimed);
        assert_eq!(collision[0].row.cell.as_deref(), Some("workers=2x"));
        assert!(
            collision[0].because.contains("name a port they contest"),
            "{}",
            collision[0].because
        );
        // Load-sensitivity comes from the stress cell only.
        let load_claims: Vec<Option<&str>> = c
            .claimed
            .iter()
            .filter(|f| f.class == LoadSensitiveSynchronisation)
            .map(|f| f.row.cell.as_deref())
            .collect();
        let expected: Vec<Option<&str>> = load.map(|_| Some("cpu-stress=2x")).into_iter().collect();
        assert_eq!(load_claims, expected);
    }
    // A path and a lock are contested resources too.
    for sig in [
        "FileExistsError: [Errno <n>] File exists: '<tmp>'",
        "sqlite3.OperationalError: database is locked",
    ] {
        let r = report_signed(
            &[C("baseline", 0, 8, true), C("workers=2x", 8, 8, true)],
            "workers=2x",
            sig,
        );
        assert_eq!(classes(&of(&r).claimed), [HostResourceCollision], "{sig}");
    }
}

#[test]
fn a_race_detector_difference_is_a_data_race_when_its_report_is_the_failure() {
    let cells = [C("baseline", 0, 6, true), C("race", 6, 6, true)];
    let r = report_signed(
        &cells,
        "race",
        "data race: main.inc x.go:<n> × main.read x.go:<n>",
    );
    let c = of(&r);
    assert_eq!(classes(&c.claimed), [DataRace]);
    assert!(c.unmapped.is_empty(), "{:?}", c.unmapped);
    assert!(c.claimed[0].because.contains("data race: main.inc"));
    // A failure that is no race report may be the instrumentation's slowdown.
    let r = report_signed(&cells, "race", "FAIL: TestDeadline: took too long");
    let c = of(&r);
    assert!(c.claimed.is_empty());
    assert!(c
        .not_determinable
        .iter()
        .any(|o| o.class == DataRace && o.why.contains("no failure is a race report")));
    // The coverage block has the class, checked by the race cell.
    let cov = coverage(&r, None, start());
    let race = cov.iter().find(|c| c.class == DataRace).unwrap();
    assert_eq!(
        race.coverage,
        Coverage::Checked {
            cells: vec!["race".into()],
            n: 6,
            not_applied: vec![],
        }
    );
}

#[test]
fn a_clean_cell_argues_against_its_classes_only_with_the_power_to_differ() {
    // 1 of 1 against 1 of 1, and 0 of 3 against 0 of 3 (3 of 3 would give
    // p = 0.1): no power, nothing argued against.
    for cells in [
        [C("baseline", 1, 1, true), C("workers=2x", 1, 1, true)],
        [C("baseline", 0, 3, true), C("netns", 0, 3, true)],
        [C("baseline", 0, 1, true), C("cpu-stress=2x", 0, 1, true)],
    ] {
        let c = of(&report_of(&cells));
        assert!(
            c.against
                .iter()
                .all(|f| f.row.cell.as_deref() != Some(cells[1].0)),
            "{:?}",
            c.against
        );
    }
    let c = of(&report_of(&[
        C("baseline", 0, 3, true),
        C("netns", 0, 3, true),
    ]));
    let o = c
        .not_determinable
        .iter()
        .find(|o| o.class == RealNetwork)
        .unwrap();
    assert!(o.why.contains("argues against nothing"), "{}", o.why);
    // 0 of 14 against 0 of 14 could have shown one, and says its bound.
    let c = of(&report_of(&[
        C("baseline", 0, 14, true),
        C("netns", 0, 14, true),
    ]));
    let f = c.against.iter().find(|f| f.class == RealNetwork).unwrap();
    assert!(
        f.because.contains("(0 of 14 — rate < 0.193 at 95%)"),
        "{}",
        f.because
    );
}

#[test]
fn shuffle_locale_and_rlimit_map_to_their_classes() {
    for (cell, class) in [
        ("shuffle", OrderDependence),
        ("locale=de_DE.UTF-8", Locale),
        ("rlimit=nofile:64", HostResourceCollision),
        ("env=PYTHONHASHSEED=1", UnseededRandomness),
    ] {
        let r = report_of(&[C("baseline", 0, 8, true), C(cell, 8, 8, true)]);
        let c = of(&r);
        assert_eq!(classes(&c.claimed), [class], "{cell}");
        assert_eq!(c.claimed[0].row.cell.as_deref(), Some(cell));
    }
}

#[test]
fn an_arbitrary_variable_that_differs_names_no_class() {
    let r = report_of(&[C("baseline", 0, 8, true), C("env=MODE=fast", 8, 8, true)]);
    let c = of(&r);
    assert!(c.claimed.is_empty());
    assert_eq!(c.unmapped.len(), 1);
    assert!(c.unmapped[0].contains("`env=MODE=fast`"));
}

#[test]
fn a_cell_above_the_baseline_without_confidence_argues_neither_way() {
    let r = report_of(&[
        C("baseline", 0, 3, true),
        C("tz=Pacific/Kiritimati", 3, 3, true),
    ]);
    let c = of(&r);
    assert!(c.claimed.is_empty());
    assert!(c.against.iter().all(|f| f.class != ClockAndZone));
    let o = c
        .not_determinable
        .iter()
        .find(|o| o.class == ClockAndZone)
        .unwrap();
    assert!(o.why.contains("more runs would settle it"), "{}", o.why);
}

fn rung(r: u8, status: RungStatus, k: u64, n: u64) -> RungResult {
    let p = crate::stats::proportion(k, n, 0.95);
    RungResult {
        rung: r,
        name: format!("rung{r}"),
        topology: format!("topology {r}"),
        shows: format!("shows {r}"),
        status,
        processes: usize::from(r),
        n,
        k,
        low: p.low,
        high: p.high,
        baseline: Some(RungCount {
            n,
            k: 0,
            low: 0.0,
            high: crate::stats::proportion(0, n, 0.95).high,
            timeouts: 0,
        }),
        reason: None,
        session: Some(format!("s{r}")),
        argv: vec![],
        first_reproduction: (status == RungStatus::Reproduced)
            .then(|| (format!("s{r}.00001"), format!("cd /x && run rung {r}"))),
        confirmation: None,
    }
}

pub(crate) fn ladder(rungs: Vec<RungResult>) -> LadderRecord {
    LadderRecord {
        schema: crate::record::LADDER_SCHEMA.into(),
        id: "L1".into(),
        started_at: "2026-11-29T12:00:00.000Z".into(),
        command: vec!["pytest".into()],
        cwd: "/src/shop".into(),
        lane: None,
        test: Some("tests/test_db.py::test_write".into()),
        signature: Some("database is locked".into()),
        criterion: "a failure matching `database is locked`".into(),
        cell: "baseline".into(),
        runs_per_rung: 10,
        confidence: 0.95,
        reproduced_at: rungs
            .iter()
            .find(|r| r.status == RungStatus::Reproduced)
            .map(|r| r.rung),
        rungs,
        interrupted: false,
    }
}

pub(crate) fn collision_ladder() -> LadderRecord {
    ladder(vec![
        rung(1, RungStatus::Clean, 0, 10),
        rung(2, RungStatus::Clean, 0, 10),
        rung(3, RungStatus::Reproduced, 6, 10),
        rung(4, RungStatus::NotRun, 0, 0),
        rung(5, RungStatus::NotRun, 0, 0),
    ])
}

#[test]
fn a_ladder_reproduced_at_rung_3_is_a_collision_and_its_clean_rung_2_argues_against_order() {
    let r = report_of(&[C("baseline", 6, 10, true)]);
    let l = collision_ladder();
    let c = classify(&r, Some(3), Some(&l), start());
    let f = c
        .claimed
        .iter()
        .find(|f| f.class == HostResourceCollision)
        .unwrap();
    assert_eq!(f.row.rung, Some(3));
    assert_eq!(f.row.count, Count { k: 6, n: 10 });
    assert_eq!(f.row.baseline, Some(Count { k: 0, n: 10 }));
    assert!(f.row.text.contains("Fisher p="), "{}", f.row.text);
    for class in [OrderDependence, IncompleteLifecycle] {
        let a = c.against.iter().find(|a| a.class == class).unwrap();
        assert_eq!(a.row.rung, Some(2));
        assert!(
            a.row.text.contains("0 of 10 — rate < 0.259 at 95%"),
            "{}",
            a.row.text
        );
    }
    let cov = coverage(&r, Some(&l), start());
    let collision = cov
        .iter()
        .find(|c| c.class == HostResourceCollision)
        .unwrap();
    assert_eq!(
        collision.coverage,
        Coverage::Checked {
            cells: vec!["ladder rung 3".into()],
            n: 10,
            not_applied: vec![],
        }
    );
}

#[test]
fn a_clean_rung_too_short_to_differ_from_its_baseline_argues_against_nothing() {
    let r = report_of(&[C("baseline", 0, 10, true)]);
    // 2 of 2 against the rung's 0 of 2 would give p = 0.33.
    let l = ladder(vec![
        rung(1, RungStatus::Clean, 0, 10),
        rung(2, RungStatus::Clean, 0, 2),
        rung(3, RungStatus::Reproduced, 6, 10),
    ]);
    let c = classify(&r, Some(3), Some(&l), start());
    assert!(
        c.against.iter().all(|a| a.row.rung != Some(2)),
        "{:?}",
        c.against
    );
    let o = c
        .not_determinable
        .iter()
        .find(|o| o.class == OrderDependence)
        .unwrap();
    assert!(o.why.contains("argues against nothing"), "{}", o.why);
}

#[test]
fn a_ladder_reproduced_at_rung_2_claims_order_and_lifecycle_and_rung_1_names_none() {
    let r = report_of(&[C("baseline", 4, 10, true)]);
    let l = ladder(vec![
        rung(1, RungStatus::Clean, 0, 10),
        rung(2, RungStatus::Reproduced, 4, 10),
    ]);
    let c = classify(&r, Some(2), Some(&l), start());
    let claimed = classes(&c.claimed);
    assert!(claimed.contains(&OrderDependence) && claimed.contains(&IncompleteLifecycle));
    assert!(c.claimed.iter().all(|f| f.row.rung == Some(2)));

    let l = ladder(vec![rung(1, RungStatus::Reproduced, 4, 10)]);
    let c = classify(&r, Some(1), Some(&l), start());
    assert!(!classes(&c.claimed).contains(&HostResourceCollision));
    assert!(c.notes[0].contains("needs no concurrency"), "{:?}", c.notes);
}

#[test]
fn a_baseline_failing_with_varying_signatures_and_no_cell_differing_is_a_randomness_candidate() {
    let cells = [
        C("baseline", 4, 10, true),
        C("tz=Asia/Kathmandu", 3, 10, true),
    ];
    let s = session(&cells);
    let varied = runs_with(&s, &cells, |_, i| {
        format!("assert {}", ["a", "b", "c"][i as usize % 3])
    });
    let r = crate::report::build(&s, &varied, LoadStats::default());
    let c = of(&r);
    assert_eq!(classes(&c.claimed), [UnseededRandomness]);
    assert!(c.claimed[0]
        .row
        .text
        .contains("distinct failure signatures"));

    // One signature: not determinable.
    let r = report_of(&cells);
    let c = of(&r);
    assert!(c.claimed.is_empty());
    assert!(c
        .not_determinable
        .iter()
        .any(|o| o.class == UnseededRandomness && o.why.contains("same signature")));

    // A clean baseline argues against it.
    let r = report_of(&[C("baseline", 0, 10, true)]);
    assert!(of(&r).against.iter().any(|f| f.class == UnseededRandomness));
}

#[test]
fn coverage_names_every_class_as_checked_not_applied_or_not_tested() {
    let r = report_of(&[
        C("baseline", 0, 5, true),
        C("tz=Asia/Kathmandu", 0, 5, true),
        C("faketime=+365d", 0, 5, true),
        C("netns", 0, 5, false),
    ]);
    let cov = coverage(&r, None, start());
    assert_eq!(cov.len(), FlakeClass::ALL.len());
    let get = |class| &cov.iter().find(|c| c.class == class).unwrap().coverage;
    assert_eq!(
        get(ClockAndZone),
        &Coverage::Checked {
            cells: vec!["tz=Asia/Kathmandu".into(), "faketime=+365d".into()],
            n: 10,
            not_applied: vec![],
        }
    );
    assert_eq!(
        get(ExpiringDate),
        &Coverage::Checked {
            cells: vec!["faketime=+365d".into()],
            n: 5,
            not_applied: vec![],
        }
    );
    assert!(
        matches!(get(RealNetwork), Coverage::NotApplied { reason } if reason.contains("the probe failed"))
    );
    assert!(matches!(get(Locale), Coverage::NotTested { .. }));
    assert_eq!(
        coverage_text(get(UnseededRandomness)),
        "checked (`baseline`; N = 5)"
    );
    assert!(coverage_text(get(Locale)).starts_with("not tested"));
}

#[test]
fn a_rung_of_process_groups_says_its_baseline_count_is_of_processes_not_groups() {
    let r = report_of(&[C("baseline", 5, 10, true)]);
    let l = ladder(vec![
        rung(1, RungStatus::Clean, 0, 10),
        rung(2, RungStatus::Clean, 0, 10),
        rung(3, RungStatus::Reproduced, 5, 5),
    ]);
    let why = |c: &Classification| {
        c.not_determinable
            .iter()
            .find(|o| o.class == UnseededRandomness)
            .map(|o| o.why.clone())
            .unwrap_or_default()
    };
    let at3 = why(&classify(&r, Some(3), Some(&l), start()));
    assert!(
        at3.starts_with("the baseline fails 5 of its 10 runs at ladder rung 3 (each process a run; the ladder's table counts groups"),
        "{at3}"
    );
    let plain = why(&of(&r));
    assert!(
        plain.starts_with("the baseline fails 5 of its 10 runs, but"),
        "{plain}"
    );
}
