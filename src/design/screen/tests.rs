//! The screen design's driver through the library and the fake executor:
//! the screen's candidates and the confirmations it records, read from the
//! values it returns rather than from a report the binary printed.

use super::{confirm, record_pending, screen, Ask, Screened, DEFAULT_CAP};
use crate::exec::child::Stop;
use crate::exec::Executor;
use crate::screen::Decision;
use crate::session::resolve::{resolve, Intent, Layers};
use crate::session::SessionSpec;

/// A one-file JUnit report: each test passes, or fails with its message.
fn junit(tests: &[(&str, Option<&str>)]) -> String {
    let cases: String = (tests.iter())
        .map(|(name, fail)| match fail {
            Some(m) => format!("<testcase classname='tests.test_a' name='{name}'><failure message='{m}'/></testcase>"),
            None => format!("<testcase classname='tests.test_a' name='{name}'/>"),
        })
        .collect();
    format!(
        "<testsuite name='s' tests='{}'>{cases}</testsuite>",
        tests.len()
    )
}

/// A `tz=UTC` session of `subject {junit}` in `dir`, run by the fake
/// executor under `script`.
fn spec_of(dir: &std::path::Path, script: &str) -> SessionSpec {
    let path = dir.join("fake.toml");
    std::fs::write(&path, script).unwrap();
    let executor = Executor::from_script(Some(&path)).unwrap();
    let intent = Intent {
        command: vec!["subject".into(), "--junit={junit}".into()],
        dir: Some(dir.to_path_buf()),
        cells: vec!["tz=UTC".into()],
        seed: Some(3),
        ..Intent::default()
    };
    resolve(intent, &Layers::none(), &executor).unwrap()
}

fn ask(named: Option<&str>) -> Ask {
    Ask {
        screen_runs: 2,
        clear_below: 0.3,
        cap: DEFAULT_CAP,
        named: named.map(String::from),
        seed_given: true,
        max_runs: None,
    }
}

/// `test_zone` fails in every `tz=UTC` run; `test_once` in its first only.
fn zone_and_chance() -> String {
    let pass = junit(&[("test_zone", None), ("test_once", None), ("test_ok", None)]);
    let zone = junit(&[
        ("test_zone", Some("offset")),
        ("test_once", None),
        ("test_ok", None),
    ]);
    let once = junit(&[
        ("test_zone", Some("offset")),
        ("test_once", Some("chance")),
        ("test_ok", None),
    ]);
    format!(
        "[[run]]\ncell = \"tz=UTC\"\ntimes = 1\nexit = 1\njunit = \"{once}\"\n\
         [[run]]\ncell = \"tz=UTC\"\nexit = 1\njunit = \"{zone}\"\n\
         [[run]]\njunit = \"{pass}\"\n"
    )
}

fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(f)
}

#[test]
fn the_driver_confirms_a_zone_dependence_and_clears_a_chance_flip() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec_of(dir.path(), &zone_and_chance());
    let store = spec.store.clone();
    let (_tx, stop) = tokio::sync::watch::channel(Stop::Run);
    let ask = ask(None);
    let record = block_on(async {
        let Screened::Done(done) = screen(spec, &ask, &stop).await.unwrap() else {
            panic!("the screen did not finish");
        };
        let mut flagged: Vec<(&str, &str)> = (done.candidates.iter())
            .map(|c| (c.cell.as_str(), c.test.as_str()))
            .collect();
        flagged.sort();
        assert_eq!(
            flagged,
            [
                ("tz=UTC", "tests.test_a::test_once"),
                ("tz=UTC", "tests.test_a::test_zone")
            ]
        );
        assert_eq!(done.rule.looks, DEFAULT_CAP / 2);
        confirm(&done, &ask, "asked".into(), &stop).await.unwrap()
    });
    assert!(!record.pending && record.candidates.is_empty());
    assert_eq!(record.chosen.as_deref(), Some("asked"));
    let of = |test: &str| {
        (record.confirmations.iter())
            .find(|c| c.candidate.test == test)
            .unwrap_or_else(|| panic!("no confirmation of {test}: {record:#?}"))
    };
    let zone = of("tests.test_a::test_zone");
    assert_eq!(zone.decision, Decision::Differs, "{zone:#?}");
    assert_eq!(zone.cell.0, zone.cell.1, "every cell run failed it");
    assert_eq!(zone.baseline.0, 0, "no baseline run failed it");
    assert!(!zone.looks.is_empty() && zone.looks.len() < 15, "{zone:#?}");
    let once = of("tests.test_a::test_once");
    assert_eq!(once.decision, Decision::Cleared, "{once:#?}");
    assert_eq!(once.cell.0, 0, "it never failed again");
    // What was returned is what the store holds.
    let stored = store.screen_of(&record.session).unwrap().unwrap();
    assert_eq!(stored.confirmations.len(), 2);
    let (sessions, _) = store.load_sessions().unwrap();
    let parts = (sessions.iter())
        .filter(|s| s.part_of.as_deref() == Some(record.session.as_str()))
        .count() as u64;
    assert_eq!(record.confirm_totals.map(|t| t.0), Some(parts));
}

#[test]
fn a_screen_alone_records_its_candidates_for_its_shards() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec_of(dir.path(), &zone_and_chance());
    let store = spec.store.clone();
    let (_tx, stop) = tokio::sync::watch::channel(Stop::Run);
    let ask = ask(Some("ci-7"));
    let record = block_on(async {
        let Screened::Done(done) = screen(spec, &ask, &stop).await.unwrap() else {
            panic!("the screen did not finish");
        };
        assert_eq!(done.session.id, "ci-7");
        record_pending(*done, &ask, "asked".into()).unwrap()
    });
    assert!(record.pending && record.confirmations.is_empty());
    assert_eq!(record.candidates.len(), 2);
    let stored = store.screen_records_of("ci-7").unwrap();
    assert_eq!(stored.len(), 1);
    assert!(stored[0].pending);
}

#[test]
fn a_stop_before_the_screen_runs_yields_no_screen() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec_of(dir.path(), &zone_and_chance());
    let (tx, stop) = tokio::sync::watch::channel(Stop::Run);
    tx.send(Stop::Graceful).unwrap();
    let ask = ask(None);
    let screened = block_on(screen(spec, &ask, &stop)).unwrap();
    assert!(!matches!(screened, Screened::Done(_)));
}

#[test]
fn an_orders_cell_runs_every_systematic_order_as_a_round_and_its_flip_names_its_run() {
    let dir = tempfile::tempdir().unwrap();
    let pass = junit(&[("test_a", None), ("test_p", None), ("test_v", None)]);
    let fail = junit(&[
        ("test_a", None),
        ("test_p", None),
        ("test_v", Some("dirty")),
    ]);
    // Only the second systematic order fails the victim.
    let script = format!(
        "version = \"pytest 9.2.0\"\n\
         [[run]]\nargv = \"order-0001.txt\"\nexit = 1\njunit = \"{fail}\"\n\
         [[run]]\njunit = \"{pass}\"\n"
    );
    let path = dir.path().join("fake.toml");
    std::fs::write(&path, script).unwrap();
    let executor = Executor::from_script(Some(&path)).unwrap();
    let intent = Intent {
        command: vec!["pytest".into(), "tests".into()],
        dir: Some(dir.path().to_path_buf()),
        cells: vec!["orders".into()],
        seed: Some(3),
        ..Intent::default()
    };
    let spec = resolve(intent, &Layers::none(), &executor).unwrap();
    let store = spec.store.clone();
    let (_tx, stop) = tokio::sync::watch::channel(Stop::Run);
    let ask = ask(None);
    block_on(async {
        let Screened::Done(done) = screen(spec, &ask, &stop).await.unwrap() else {
            panic!("the screen did not finish");
        };
        // One module of three tests: w(3) = 4 orders, one round.
        assert_eq!(done.rounds.len(), 1, "{:?}", done.rounds);
        let round = &done.rounds[0];
        assert_eq!((round.runs_per_cell, round.runs), (4, 4));
        assert!(round.cells[0].1.contains("(4 orders)"), "{:?}", round.cells);
        let [c] = done.candidates.as_slice() else {
            panic!("{:?}", done.candidates);
        };
        assert_eq!(
            (c.cell.as_str(), c.test.as_str()),
            ("orders", "tests.test_a::test_v")
        );
        assert_eq!(c.screen_cell, (1, 5));
        // No seed makes an order: the order itself is replayed.
        assert_eq!(c.flip_seed, None);
        let (runs, _) = store.runs_of(&round.session).unwrap();
        let flipped = runs
            .iter()
            .find(|r| r.outcome == crate::record::Outcome::Fail);
        assert_eq!(c.flip_run.as_deref(), flipped.map(|r| r.id.as_str()));
        assert!(flipped
            .unwrap()
            .argv
            .iter()
            .any(|a| a.ends_with("order-0001.txt")));
    });
}

#[test]
fn a_shuffle_cell_screens_by_the_systematic_orders_where_the_recipe_runs_a_given_order() {
    let dir = tempfile::tempdir().unwrap();
    let pass = junit(&[("test_a", None), ("test_p", None), ("test_v", None)]);
    let fail = junit(&[
        ("test_a", None),
        ("test_p", None),
        ("test_v", Some("dirty")),
    ]);
    // Only the third systematic order fails the victim; every seeded
    // shuffle passes it.
    let script = format!(
        "version = \"pytest 9.2.0\"\n\
         [[run]]\nargv = \"order-0002.txt\"\nexit = 1\njunit = \"{fail}\"\n\
         [[run]]\noutput = \"Using --randomly-seed={{seed}}\"\njunit = \"{pass}\"\n"
    );
    let path = dir.path().join("fake.toml");
    std::fs::write(&path, script).unwrap();
    let executor = Executor::from_script(Some(&path)).unwrap();
    let intent = Intent {
        command: vec!["pytest".into(), "tests".into()],
        dir: Some(dir.path().to_path_buf()),
        cells: vec!["shuffle".into()],
        seed: Some(3),
        ..Intent::default()
    };
    let spec = resolve(intent, &Layers::none(), &executor).unwrap();
    let store = spec.store.clone();
    let (_tx, stop) = tokio::sync::watch::channel(Stop::Run);
    let ask = ask(None);
    block_on(async {
        let Screened::Done(done) = screen(spec, &ask, &stop).await.unwrap() else {
            panic!("the screen did not finish");
        };
        // One module of three tests: w(3) = 4 orders, one round, in place
        // of the reversed run and the seeds (`--screen 2`).
        assert_eq!(done.rounds.len(), 1, "{:?}", done.rounds);
        let round = &done.rounds[0];
        assert_eq!((round.runs_per_cell, round.runs), (4, 4));
        assert_eq!(round.cells[0].0, "shuffle");
        assert!(round.cells[0].1.contains("(4 orders)"), "{:?}", round.cells);
        let [c] = done.candidates.as_slice() else {
            panic!("{:?}", done.candidates);
        };
        assert_eq!(
            (c.cell.as_str(), c.test.as_str()),
            ("shuffle", "tests.test_a::test_v")
        );
        // Counted per test like any cell: 1 of 5 screen runs.
        assert_eq!(c.screen_cell, (1, 5));
        assert_eq!(c.flip_seed, None);
        let (runs, _) = store.runs_of(&round.session).unwrap();
        assert_eq!(runs.len(), 4);
        // Each order run lists its order, its seeded shuffle off.
        for r in &runs {
            assert!(
                r.argv.iter().any(|a| a.contains("-orders/order-")),
                "{:?}",
                r.argv
            );
            assert!(
                !r.argv.iter().any(|a| a.contains("randomly-seed")),
                "{:?}",
                r.argv
            );
        }
        let flipped = runs
            .iter()
            .find(|r| r.outcome == crate::record::Outcome::Fail)
            .unwrap();
        assert_eq!(c.flip_run.as_deref(), Some(flipped.id.as_str()));
        assert!(flipped.argv.iter().any(|a| a.ends_with("order-0002.txt")));
        // The candidate replays that order, read from its kept report.
        let [Some(orders)] = done.orders.as_slice() else {
            panic!("{:?}", done.orders);
        };
        assert_eq!(orders.flip.len(), 3);
    });
}
