//! `run --design screen` end to end with real pytest on
//! `tests/fixtures/ladder-project`: a zone-dependent test confirmed alone, a
//! test that flipped once by chance not confirmed, and an order-dependent
//! test screened by the systematic orders and confirmed in the order that
//! flipped it; on
//! `tests/fixtures/context-project` a brittle test, a fixed-port pair under
//! workers, an order victim of a large file and one polluted from another
//! file, each against the baseline that keeps its context.

use crate::{capable, copy_fixture, sh_ok, Lab};

fn pytest_available() -> bool {
    capable(
        "pytest with pytest-randomly",
        sh_ok("python3 -c 'import pytest, pytest_randomly'"),
    )
}

/// The confirmed rows (`stage: confirm`) of a report, by (cell, test id).
fn confirmed(report: &serde_json::Value) -> Vec<(String, serde_json::Value)> {
    let mut out = Vec::new();
    for cell in report["cells"].as_array().unwrap() {
        for t in cell["tests"].as_array().unwrap() {
            if t["stage"] == "confirm" {
                out.push((cell["name"].as_str().unwrap().to_string(), t.clone()));
            }
        }
    }
    out
}

#[test]
fn a_zone_dependence_is_confirmed_alone_and_a_chance_flip_is_not() {
    if !pytest_available() {
        return;
    }
    let lab = Lab::new();
    copy_fixture(&lab, "ladder-project");
    let counter = lab.path().join("once-counter");
    let out = lab
        .cmd()
        .env("ONCE_COUNTER", &counter)
        .args([
            "run",
            "--format",
            "json",
            "--design",
            "screen",
            "--seed",
            "3",
            "-p",
            "tz=Pacific/Kiritimati",
            "--",
            "python3",
            "-m",
            "pytest",
            "tests/test_zone.py",
            "tests/test_once.py",
        ])
        .output()
        .unwrap();
    let report = crate::report_from(&out, 1);
    assert_eq!(report["schema"], "flakelab.report/1");
    let design = &report["design"];
    assert_eq!(
        (design["candidates"].as_u64(), design["confirmed"].as_u64()),
        (Some(2), Some(1)),
        "{design}"
    );
    let rows = confirmed(&report);
    let zone = &rows
        .iter()
        .find(|(_, t)| t["id"] == "tests.test_zone::test_invoice_header_offset")
        .expect("the zone test is a candidate")
        .1;
    assert_eq!(zone["vs_baseline"]["differs"], true, "{zone}");
    let verdict = zone["verdict"].as_str().unwrap();
    assert!(
        verdict.contains("alone (tests/test_zone.py::test_invoice_header_offset)"),
        "{verdict}"
    );
    // n and k count the confirmation runs its verdict rests on.
    assert_eq!(zone["k"], zone["n"]);
    assert_eq!(zone["runs"].as_u64(), Some(2 * zone["n"].as_u64().unwrap()));
    assert!(zone["boundary"].as_f64().unwrap() > 0.0);
    let looks = zone["looks"].as_array().unwrap();
    assert_eq!(looks.last().unwrap()["decision"], "differs");
    assert!(looks[..looks.len() - 1]
        .iter()
        .all(|l| l["decision"] == "continue"));
    // The chance flip: a candidate, confirmed on fresh runs, not different.
    let once = &rows
        .iter()
        .find(|(_, t)| t["id"] == "tests.test_once::test_once")
        .expect("the chance flip is a candidate")
        .1;
    assert_eq!(once["vs_baseline"]["differs"], false, "{once}");
    assert_eq!(once["k"], 0, "{once}");
    assert!(
        once["verdict"]
            .as_str()
            .unwrap()
            .starts_with("no difference"),
        "{once}"
    );
    // `flakelab report` (the latest session of the user's own: the screen,
    // not a confirmation) renders the same verdicts later.
    let again = lab.run(&["report", "--format", "json"]);
    let again = crate::report_from(&again, 1);
    assert_eq!(again["session"], report["session"]);
    assert_eq!(again["design"], report["design"]);
    assert_eq!(confirmed(&again), rows);
    // So does the evidence block: the confirmed row is the one that differs.
    let evidence = lab.run(&["evidence", "--format", "json"]);
    let evidence: serde_json::Value = serde_json::from_slice(&evidence.stdout).unwrap();
    let differing: Vec<&str> = evidence["tests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["differs"] == true)
        .map(|t| t["test"].as_str().unwrap())
        .collect();
    assert_eq!(
        differing,
        ["tests.test_zone::test_invoice_header_offset"],
        "{evidence}"
    );
    // Every other row is a screen row, never a verdict.
    for cell in report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"] != "baseline")
    {
        for t in cell["tests"].as_array().unwrap() {
            if t["stage"] == "screen" {
                assert_eq!(t["vs_baseline"]["differs"], false, "{t}");
            }
        }
    }
}

#[test]
fn an_order_dependence_is_confirmed_in_the_order_that_flipped_it() {
    if !pytest_available() {
        return;
    }
    let lab = Lab::new();
    copy_fixture(&lab, "ladder-project");
    let out = lab.run(&[
        "run",
        "--format",
        "json",
        "--design",
        "screen",
        "--seed",
        "3",
        "-p",
        "shuffle",
        "--",
        "python3",
        "-m",
        "pytest",
        "tests/test_prices.py",
    ]);
    let report = crate::report_from(&out, 1);
    let rows = confirmed(&report);
    assert_eq!(rows.len(), 1, "{report}");
    let (cell, row) = &rows[0];
    assert_eq!(cell, "shuffle");
    assert_eq!(row["id"], "tests.test_prices::test_default_price");
    assert_eq!(row["vs_baseline"]["differs"], true, "{row}");
    let verdict = row["verdict"].as_str().unwrap();
    // A shuffle candidate replays the order that flipped it (pytest's
    // recipe runs a given order), never its seed on a smaller selection.
    assert!(
        verdict.contains("confirmed in the order that flipped it"),
        "{verdict}"
    );
    let looks = row["looks"].as_array().unwrap();
    assert!(
        looks.iter().all(|l| l["stage"] == "ordered prefix"),
        "{looks:?}"
    );
    assert_eq!(row["k"], row["n"], "{row}");
    // Its screen was the systematic orders (one module of 5 tests: w(5) =
    // 6 orders, within what a confirmation arm may take), and the row
    // names the run it failed in and the bisect from it.
    let rescreened = report["design"]["rescreened"].as_array().unwrap();
    assert_eq!(rescreened.len(), 1, "{rescreened:?}");
    assert_eq!(rescreened[0][0], "shuffle");
    assert!(
        (rescreened[0][1].as_str().unwrap()).starts_with("systematic orders")
            && rescreened[0][1].as_str().unwrap().contains("(6 orders)"),
        "{rescreened:?}"
    );
    let first = row["first_failure"].as_str().expect("the run it failed in");
    assert_eq!(
        row["bisect"],
        format!("flakelab bisect {first} --test tests.test_prices::test_default_price")
    );
    // The confirmation's runs ran an ordered list, the cell's own shuffle off.
    let screens = std::fs::read_to_string(lab.store().join("screens.jsonl")).unwrap();
    let record: serde_json::Value = serde_json::from_str(screens.lines().last().unwrap()).unwrap();
    let sessions = record["confirmations"][0]["sessions"].as_array().unwrap();
    assert!(!sessions.is_empty());
    let confirming: Vec<serde_json::Value> = lab
        .runs()
        .into_iter()
        .filter(|r| sessions.contains(&r["session"]) && r["cell"] == "shuffle")
        .collect();
    assert!(!confirming.is_empty());
    for r in &confirming {
        let argv: Vec<&str> = (r["argv"].as_array().unwrap().iter())
            .map(|a| a.as_str().unwrap())
            .collect();
        assert!(argv.contains(&"flakelab_order"), "{argv:?}");
        assert!(
            !argv.iter().any(|a| a.starts_with("--randomly-seed")),
            "{argv:?}"
        );
    }
}

#[test]
fn the_generated_suite_yields_exactly_its_planted_pairs() {
    if !capable("python3", sh_ok("python3 -c 'import sys'")) {
        return;
    }
    let lab = Lab::new();
    copy_fixture(&lab, "generated-suite");
    // 30 modules (600 tests) hold one zone and one order dependence.
    let out = lab
        .cmd()
        .env("SUITE_MODULES", "30")
        .args([
            "run",
            "--format",
            "json",
            "--design",
            "screen",
            "--seed",
            "1",
            "-p",
            "tz=Pacific/Kiritimati",
            "-p",
            "shuffle",
            "--",
            "python3",
            "suite.py",
        ])
        .output()
        .unwrap();
    let report = crate::report_from(&out, 1);
    let mut differing: Vec<(String, String)> = Vec::new();
    for cell in report["cells"].as_array().unwrap() {
        for t in cell["tests"].as_array().unwrap() {
            if t["vs_baseline"]["differs"] == true {
                differing.push((
                    cell["name"].as_str().unwrap().into(),
                    t["id"].as_str().unwrap().into(),
                ));
            }
        }
    }
    differing.sort();
    assert_eq!(
        differing,
        [
            ("shuffle".to_string(), "mod_25::test_order_a".to_string()),
            (
                "tz=Pacific/Kiritimati".to_string(),
                "mod_03::test_zone_a".to_string()
            )
        ],
        "{}",
        report["design"]
    );
    let design = &report["design"];
    // 600 tests in each of three cells: the zone, the shuffle, and the
    // zone's sham (the host's own zone; shuffle has no mechanism beside it).
    assert_eq!(design["pairs_screened"], 1800);
    // The adaptive screen: one full run in each of 4 cells (baseline,
    // zone, sham, shuffle), then one more (`--screen 2`) in the shuffle
    // (random by nature: its first order reversed) and the sham (its first
    // run flagged nothing), not in the zone.
    assert_eq!(design["executions"][0], (4 + 2) * 600, "{design}");
    let again: Vec<&str> = design["rescreened"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c[0].as_str().unwrap())
        .collect();
    assert_eq!(again.len(), 2, "{design}");
    assert!(again.contains(&"shuffle"), "{design}");
    // The zone candidate is confirmed alone, the order candidate in the
    // order that flipped it restricted to its module: one invocation for
    // both, their baseline arm shared (the zone test listed after the order
    // victim's baseline list). Both decide at the planned look, 4 pairs
    // (1 / C(8, 4) ≤ 0.75 × 0.05 / 2): 4 runs of each of the three arms.
    assert_eq!(design["confirm_sessions"], 1, "{design}");
    assert_eq!(design["runs"][1], 12, "{design}");
}

/// The test ids of a JUnit report, in its order (`classname::name`).
fn junit_order(path: &str) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let attr = |tag: &str, name: &str| -> String {
        let key = format!(" {name}=\"");
        let at = tag.find(&key).map(|i| i + key.len()).unwrap();
        tag[at..].split('"').next().unwrap().to_string()
    };
    text.split("<testcase")
        .skip(1)
        .map(|tag| format!("{}::{}", attr(tag, "classname"), attr(tag, "name")))
        .collect()
}

/// `run --design screen` on `tests/fixtures/context-project` with `-p SPEC`
/// on `files`: the report, checked to have one confirmed row.
fn context_screen(
    spec: &str,
    seed: &str,
    files: &[&str],
) -> (Lab, serde_json::Value, serde_json::Value) {
    let lab = Lab::new();
    copy_fixture(&lab, "context-project");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let rendezvous = lab.path().join("rendezvous");
    std::fs::create_dir_all(&rendezvous).unwrap();
    let mut args = vec![
        "run",
        "--format",
        "json",
        "--design",
        "screen",
        "--seed",
        seed,
        "--no-sham",
        "-p",
        spec,
        "--",
        "python3",
        "-m",
        "pytest",
    ];
    args.extend_from_slice(files);
    let out = lab
        .cmd()
        .env("PAIR_PORT", port.to_string())
        .env("PAIR_DIR", &rendezvous)
        .args(&args)
        .output()
        .unwrap();
    let report = crate::report_from(&out, 1);
    let rows = confirmed(&report);
    let differing: Vec<_> = rows
        .iter()
        .filter(|(_, t)| t["vs_baseline"]["differs"] == true)
        .collect();
    assert_eq!(differing.len(), 1, "{}", report["design"]);
    let row = differing[0].1.clone();
    (lab, report, row)
}

#[test]
fn a_brittle_test_climbs_to_its_file_when_alone_breaks_its_baseline() {
    if !pytest_available() {
        return;
    }
    let (_lab, _report, row) =
        context_screen("tz=Pacific/Kiritimati", "3", &["tests/test_registry.py"]);
    assert_eq!(row["id"], "tests.test_registry::test_lookup");
    let verdict = row["verdict"].as_str().unwrap();
    assert!(
        verdict.contains("confirmed with its neighbours (tests/test_registry.py)"),
        "{verdict}"
    );
    assert!(
        verdict.contains("climbed from alone (tests/test_registry.py::test_lookup) to with its neighbours (tests/test_registry.py): its baseline arm failed 1 of 1 where the screen's baseline failed 0 of 1"),
        "{verdict}"
    );
    let looks = row["looks"].as_array().unwrap();
    assert_eq!(looks[0]["stage"], "alone");
    assert_eq!(looks[0]["decision"], "climb");
    assert!(
        looks[1..].iter().all(|l| l["stage"] == "neighbours"),
        "{looks:?}"
    );
    // The verdict rests on the file's runs: failing in the zone, passing at baseline.
    assert_eq!(row["k"], row["n"]);
}

#[test]
fn a_port_collision_is_confirmed_beside_its_partner_under_workers() {
    if !capable(
        "pytest with pytest-xdist",
        sh_ok("python3 -c 'import pytest, xdist'"),
    ) {
        return;
    }
    let (_lab, _report, row) = context_screen("workers=2", "3", &["tests/test_ports.py"]);
    assert_eq!(row["id"], "tests.test_ports::test_port_b");
    let verdict = row["verdict"].as_str().unwrap();
    assert!(
        verdict.contains("confirmed with its neighbours (tests/test_ports.py)"),
        "{verdict}"
    );
    assert!(verdict.contains("never alone"), "{verdict}");
    let looks = row["looks"].as_array().unwrap();
    assert!(
        looks.iter().all(|l| l["stage"] == "neighbours"),
        "{looks:?}"
    );
}

/// `--seed 7`: the file's 40 tests take 40 systematic orders, more than a
/// confirmation arm's 15 runs, so the shuffle screens by the reversed
/// order. The screen's first shuffle run passes the victim, and its
/// second, the first's order reversed, puts the polluter before the victim
/// with no cleaner between (a quarter of the orders do so; of the orders
/// whose reverse does, half). pytest-randomly's order is a function of its
/// seed, so this is fixed.
#[test]
fn an_order_victim_of_a_large_file_replays_its_flipping_order() {
    if !pytest_available() {
        return;
    }
    let (lab, report, row) = context_screen("shuffle", "7", &["tests/test_order.py"]);
    assert_eq!(row["id"], "tests.test_order::test_victim");
    let verdict = row["verdict"].as_str().unwrap();
    assert!(
        verdict.contains("confirmed in the order that flipped it"),
        "{verdict}"
    );
    // Flipped by the reversed run, which no seed makes: the order itself
    // is replayed, and no seed is named.
    assert!(
        verdict.contains("its cell arm replays the order that flipped it"),
        "{verdict}"
    );
    assert!(!verdict.contains("under seed"), "{verdict}");
    let rescreened = report["design"]["rescreened"].as_array().unwrap();
    assert_eq!(rescreened.len(), 1, "{rescreened:?}");
    let why = rescreened[0][1].as_str().unwrap();
    assert!(
        why.contains("first run's order reversed")
            && why.contains("its 40 systematic orders are more than the 15 runs"),
        "{rescreened:?}"
    );
    let looks = row["looks"].as_array().unwrap();
    assert!(
        looks.iter().all(|l| l["stage"] == "ordered prefix"),
        "{looks:?}"
    );
    // Every confirmation cell run replayed the one order and failed; every
    // baseline run ran what preceded it at baseline and passed.
    assert_eq!(row["k"], row["n"]);
    let last = looks.last().unwrap();
    assert_eq!(last["baseline"][0], 0, "{last}");
    // The replayed list ends with the victim, the polluter before it and
    // no cleaner between them.
    let order_files: Vec<String> = lab
        .runs()
        .into_iter()
        .filter(|r| r["session"] != report["session"] && r["cell"] == "shuffle")
        .filter_map(|r| {
            (r["argv"].as_array().unwrap().iter())
                .filter_map(|a| a.as_str()?.strip_prefix("--flakelab-order="))
                .map(String::from)
                .next()
        })
        .collect();
    // The screen's reversed run listed the whole file, the first shuffle
    // run's order the other way round.
    let (reversed, confirming): (Vec<&String>, Vec<&String>) =
        order_files.iter().partition(|f| f.contains("-reversed/"));
    assert_eq!(reversed.len(), 1, "{order_files:?}");
    let whole = std::fs::read_to_string(reversed[0]).unwrap();
    assert_eq!(whole.lines().count(), 40, "{whole}");
    let first = lab
        .runs()
        .into_iter()
        .find(|r| r["session"] == report["session"] && r["cell"] == "shuffle")
        .expect("the first shuffle run");
    let first_order = junit_order(first["junit"].as_str().expect("its report kept"));
    let mut back: Vec<&str> = whole.lines().collect();
    back.reverse();
    assert_eq!(back, first_order, "{whole}");
    let listed =
        std::fs::read_to_string(confirming.first().expect("an ordered confirmation run")).unwrap();
    let names: Vec<&str> = listed
        .lines()
        .map(|l| l.rsplit("::").next().unwrap())
        .collect();
    assert_eq!(names.last(), Some(&"test_victim"), "{listed}");
    let polluter = names.iter().position(|n| *n == "test_polluter").unwrap();
    assert!(
        !names[polluter..]
            .iter()
            .any(|n| n.starts_with("test_cleaner")),
        "{listed}"
    );
    // The row names the reversed run it failed in (a run of the screen's
    // second round, not of the screened session) and the bisect from it,
    // which names the polluter.
    let first = row["first_failure"].as_str().expect("the run it failed in");
    assert!(
        !first.starts_with(report["session"].as_str().unwrap()),
        "{first}"
    );
    assert_eq!(
        row["bisect"],
        format!("flakelab bisect {first} --test tests.test_order::test_victim")
    );
    let out = lab
        .cmd()
        .args([
            "bisect",
            "--format",
            "json",
            "--no-cleaners",
            "--confirm",
            "1",
        ])
        .args([first, "--test", "tests.test_order::test_victim"])
        .output()
        .unwrap();
    let found: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(found["kind"], "polluted", "{found}");
    assert_eq!(
        found["polluters"],
        serde_json::json!(["tests.test_order::test_polluter"]),
        "{found}"
    );
}

/// `--seed 4`: a screen run puts `test_cross_a.py` (the polluter) before
/// the victim's file with one filler of the victim's file before it, so the
/// ordered selection restricted to its file has something to replay.
#[test]
fn an_order_victim_polluted_from_another_file_climbs_from_its_file() {
    if !pytest_available() {
        return;
    }
    let (_lab, _report, row) = context_screen(
        "shuffle",
        "4",
        &["tests/test_cross_b.py", "tests/test_cross_a.py"],
    );
    assert_eq!(row["id"], "tests.test_cross_b::test_cross_victim");
    let verdict = row["verdict"].as_str().unwrap();
    // Its file's tests in the flipping order never flip it: it climbs to
    // every test that ran before it, where the polluter is.
    assert!(
        verdict.contains("climbed from in the order that flipped it, restricted to its file (tests/test_cross_b.py"),
        "{verdict}"
    );
    assert!(
        verdict.contains("it never failed in the cell (0 of 3) though the screen saw it fail"),
        "{verdict}"
    );
    let stages: Vec<&str> = (row["looks"].as_array().unwrap().iter())
        .map(|l| l["stage"].as_str().unwrap())
        .collect();
    assert_eq!(stages[..3], ["ordered file"; 3], "{stages:?}");
    assert!(
        stages[3..].iter().all(|s| *s == "ordered prefix"),
        "{stages:?}"
    );
    assert_eq!(row["k"], row["n"]);
}
