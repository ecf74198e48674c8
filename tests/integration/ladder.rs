//! `flakelab ladder` end to end on `tests/fixtures/ladder-project` (pytest):
//! a zone dependence reproduces at rung 1, an order dependence at rung 2, a
//! fixed-port collision at rung 3 and a collision between lanes through a
//! path outside the working copy at rung 5, each with its rung's meaning;
//! working copies are removed afterwards, also after Ctrl-C.

use std::path::Path;
use std::process::{Command, Output};

use crate::{capable, copy_fixture, git, sh_ok, Lab};

fn pytest_available() -> bool {
    capable(
        "pytest with pytest-randomly and pytest-xdist",
        sh_ok("python3 -c 'import pytest, pytest_randomly, xdist'"),
    )
}

/// `flakelab ladder --format json ARGS` with extra variables; the JSON.
fn ladder(lab: &Lab, env: &[(&str, &Path)], args: &[&str]) -> (Output, serde_json::Value) {
    let mut all = vec!["ladder", "--format", "json"];
    all.extend_from_slice(args);
    let out = lab
        .cmd()
        .envs(env.iter().copied())
        .args(&all)
        .output()
        .unwrap();
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no ladder JSON ({e}); stdout: {} stderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out, json)
}

/// (rung, status, n, k) of every rung.
fn shape(json: &serde_json::Value) -> Vec<(u64, String, u64, u64)> {
    json["rungs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["rung"].as_u64().unwrap(),
                r["status"].as_str().unwrap().to_string(),
                r["n"].as_u64().unwrap(),
                r["k"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn rung(json: &serde_json::Value, n: u64) -> &serde_json::Value {
    json["rungs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["rung"] == n)
        .unwrap()
}

/// `flakelab ladder ARGS` (the table), and the ladder it stored: the same
/// record `--format json` prints (one climb, both views, instead of
/// climbing the ladder twice).
fn table_and_record(lab: &Lab, args: &[&str]) -> (Output, String, serde_json::Value) {
    let mut all = vec!["ladder"];
    all.extend_from_slice(args);
    let out = lab.cmd().args(&all).output().unwrap();
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    let (ladders, _) = flakelab::store::Store::at(&lab.store())
        .load_ladders()
        .expect("the store reads");
    let [ladder] = &ladders[..] else {
        panic!("one ladder stored, not {}: {text}", ladders.len())
    };
    let json = serde_json::to_value(ladder).unwrap();
    assert!(
        text.contains(ladder.id.as_str()),
        "the table is the stored ladder's: {text}"
    );
    (out, text, json)
}

#[test]
fn a_zone_dependent_test_reproduces_alone_at_rung_1() {
    if !pytest_available() {
        return;
    }
    let lab = Lab::new();
    copy_fixture(&lab, "ladder-project");
    let args = [
        "-n",
        "3",
        "--seed",
        "7",
        "-p",
        "tz=Pacific/Kiritimati",
        "--test",
        "tests/test_zone.py::test_invoice_header_offset",
        "--",
        "python3",
        "-m",
        "pytest",
        "tests/test_zone.py",
    ];
    let (out, text, json) = table_and_record(&lab, &args);
    assert_eq!(out.status.code(), Some(1), "{json}");
    assert_eq!(json["schema"], "flakelab.ladder/1");
    assert_eq!(json["reproduced_at"], 1);
    let r1 = rung(&json, 1);
    assert_eq!(
        (r1["status"].as_str(), r1["k"].as_u64(), r1["n"].as_u64()),
        (Some("reproduced"), Some(3), Some(3))
    );
    assert_eq!(r1["baseline"]["k"], 0, "{r1}");
    assert_eq!(r1["baseline"]["n"], 3, "{r1}");
    // Rung 1 ran the test alone: the other test of the file is not in argv.
    let argv: Vec<&str> = r1["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(
        argv.contains(&"tests/test_zone.py::test_invoice_header_offset"),
        "{argv:?}"
    );
    assert!(!argv.contains(&"tests/test_zone.py"), "{argv:?}");
    assert!(shape(&json)[1..].iter().all(|r| r.1 == "not_run"), "{json}");
    assert!(
        text.contains("Reproduced at rung 1 (alone): the failure needs no concurrency"),
        "{text}"
    );
}

#[test]
fn an_order_dependent_pair_reproduces_with_its_neighbours_not_alone() {
    if !pytest_available() {
        return;
    }
    let lab = Lab::new();
    copy_fixture(&lab, "ladder-project");
    let args = [
        "-n",
        "3",
        "--confirm",
        "2",
        "--test",
        "tests/test_order.py::test_default_currency",
        "--",
        "python3",
        "-m",
        "pytest",
        "tests/test_order.py",
    ];
    let (out, text, json) = table_and_record(&lab, &args);
    assert_eq!(out.status.code(), Some(1), "{json}");
    assert_eq!(json["reproduced_at"], 2);
    let s = shape(&json);
    assert_eq!(s[0], (1, "clean".into(), 3, 0), "{json}");
    assert_eq!(s[1], (2, "reproduced".into(), 3, 3), "{json}");
    // Confirmed under the first reproduction's seed: the order determines it.
    let c = &rung(&json, 2)["confirmation"];
    assert_eq!(
        (c["k"].as_u64(), c["n"].as_u64()),
        (Some(2), Some(2)),
        "{json}"
    );
    assert_eq!(c["verdict"], "deterministic");
    assert!(
        text.contains("Reproduced at rung 2 (neighbours): tests interfere when scheduled together"),
        "{text}"
    );
    assert!(text.contains("0 of 3 — rate < 0.632"), "{text}");
    // It hands over to bisect from its first reproducing run, and the
    // command it prints finds the polluter.
    let first = rung(&json, 2)["first_reproduction"][0].as_str().unwrap();
    let bisect =
        format!("flakelab bisect {first} --test tests/test_order.py::test_default_currency");
    assert!(
        text.contains(&format!(
            "find which test that ran before it makes it fail:\n  {bisect}"
        )),
        "{text}"
    );
    let out = (lab.cmd())
        .args([
            "bisect",
            first,
            "--test",
            "tests/test_order.py::test_default_currency",
        ])
        .args(["--confirm", "1", "--no-cleaners"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    // Bisect names tests as the runner's report does; its repro line as
    // the runner selects them.
    assert!(
        said.lines()
            .any(|l| l == "polluter: tests.test_order::test_switch_currency")
            && said.contains(
                "-p no:randomly tests/test_order.py::test_switch_currency tests/test_order.py::test_default_currency"
            ),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_fixed_port_collides_only_between_processes_at_rung_3() {
    if !pytest_available() {
        return;
    }
    let lab = Lab::new();
    copy_fixture(&lab, "ladder-project");
    // A port free now. The processes of a group meet through marker files in
    // `shared` (the fixture's conftest.py finds its group in the store), so
    // the one that got the port serves until the other has tried it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let shared = tempfile::tempdir().unwrap();
    let out = lab
        .cmd()
        .env("LADDER_PORT", &port)
        .env("LADDER_SHARED", shared.path())
        .env("LADDER_STORE", lab.store())
        .args([
            "ladder",
            "--format",
            "json",
            "-n",
            "2",
            "--processes",
            "2",
            "--test",
            "tests/test_port.py::test_serves_on_fixed_port",
            "--",
            "python3",
            "-m",
            "pytest",
            "tests/test_port.py",
        ])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{json}");
    assert_eq!(json["reproduced_at"], 3, "{json}");
    let s = shape(&json);
    assert_eq!(
        &s[..2],
        [(1, "clean".into(), 2, 0), (2, "clean".into(), 2, 0)],
        "{json}"
    );
    assert_eq!((s[2].0, s[2].1.as_str()), (3, "reproduced"), "{json}");
    assert!(s[2].3 >= 1, "{json}");
    // Deterministic: every group collides.
    assert_eq!(s[2].3, 2, "{json}");
    assert_eq!(rung(&json, 3)["processes"], 2);
    // The two processes of each run had their own report and log.
    let session = rung(&json, 3)["session"].as_str().unwrap().to_string();
    let runs: Vec<serde_json::Value> = lab
        .runs()
        .into_iter()
        .filter(|r| r["session"] == session.as_str())
        .collect();
    assert_eq!(runs.len(), 4);
    let mut junits: Vec<&str> = runs.iter().map(|r| r["junit"].as_str().unwrap()).collect();
    let mut logs: Vec<&str> = runs.iter().filter_map(|r| r["log"].as_str()).collect();
    junits.sort();
    junits.dedup();
    logs.sort();
    logs.dedup();
    assert_eq!(junits.len(), 4);
    assert_eq!(
        logs.len(),
        runs.iter().filter(|r| r["log"].is_string()).count()
    );
    let groups: Vec<u64> = runs
        .iter()
        .map(|r| r["topology"]["group"].as_u64().unwrap())
        .collect();
    assert_eq!(
        groups.iter().filter(|g| **g == groups[0]).count(),
        2,
        "{groups:?}"
    );
    // The collision is named by the failing test's own words: one process
    // of each group lost the port.
    let failed: Vec<&serde_json::Value> = runs.iter().filter(|r| r["outcome"] == "fail").collect();
    assert!(!failed.is_empty());
    assert_eq!(failed.len(), 2, "{failed:?}");
    assert!(
        failed.iter().all(|r| r["failure_signature"]
            .as_str()
            .is_some_and(|s| s.contains("Address already in use"))),
        "{failed:?}"
    );
}

fn leftover_copies(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("flakelab-copies-"))
        .collect()
}

fn worktrees(dir: &Path) -> usize {
    let out = Command::new("git")
        .args(["worktree", "list", "--porcelain"])
        .current_dir(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("worktree "))
        .count()
}

#[test]
fn lanes_collide_outside_their_working_copies_at_rung_5() {
    if !pytest_available() || !capable("git", sh_ok("git --version")) {
        return;
    }
    let lab = Lab::new();
    copy_fixture(&lab, "ladder-project");
    std::fs::write(
        lab.path().join("flakelab.toml"),
        "[lane]\ncommand = \"python3 -m pytest tests/test_lane.py\"\nworkers = 2\n",
    )
    .unwrap();
    git(
        lab.path(),
        "git init -q && git add . && git commit -qm fixture",
    );
    let shared = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let store = lab.store();
    let (out, json) = ladder(
        &lab,
        &[
            ("LADDER_SHARED", shared.path()),
            ("LADDER_STORE", store.as_path()),
            ("TMPDIR", tmp.path()),
        ],
        &[
            "-n",
            "2",
            "--processes",
            "2",
            "--",
            "python3",
            "-m",
            "pytest",
            "tests/test_zone.py",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{json}");
    assert_eq!(json["reproduced_at"], 5, "{json}");
    let s = shape(&json);
    assert_eq!(s[0].1, "skipped", "{json}");
    assert!(rung(&json, 1)["reason"]
        .as_str()
        .unwrap()
        .contains("no --test"));
    for (r, status, n, k) in &s[1..4] {
        assert_eq!(
            (status.as_str(), *n, *k),
            ("clean", 2, 0),
            "rung {r}: {json}"
        );
    }
    assert_eq!(s[4].1, "reproduced", "{json}");
    // Deterministic: the lanes of every group collide.
    assert_eq!((s[4].2, s[4].3), (2, 2), "{json}");
    // The lane ran at its configured workers.
    let lane_argv = rung(&json, 4)["argv"].to_string();
    assert!(lane_argv.contains("\"-n\",\"2\""), "{lane_argv}");
    assert!(
        rung(&json, 5)["reason"]
            .as_str()
            .unwrap()
            .contains("2 git worktrees at"),
        "{json}"
    );
    // Each lane ran in its own working copy, and the copies are gone.
    let session = rung(&json, 5)["session"].as_str().unwrap().to_string();
    let cwds: std::collections::BTreeSet<String> = lab
        .runs()
        .into_iter()
        .filter(|r| r["session"] == session.as_str())
        .map(|r| r["cwd"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(cwds.len(), 2, "{cwds:?}");
    assert!(cwds.iter().all(|c| !Path::new(c).exists()), "{cwds:?}");
    assert_eq!(leftover_copies(tmp.path()), Vec::<String>::new());
    assert_eq!(worktrees(lab.path()), 1);
    // A reproducing run of rung 5 replays in the subject's directory, alone,
    // and says so: its working copy is gone, and alone it does not collide.
    let first = rung(&json, 5)["first_reproduction"][0]
        .as_str()
        .unwrap()
        .to_string();
    let out = lab
        .cmd()
        .env("LADDER_SHARED", shared.path())
        .env("LADDER_STORE", &store)
        .args(["replay", &first, "--times", "1", "--format", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is gone; replaying in"), "{stderr}");
    assert!(stderr.contains("replayed alone here"), "{stderr}");
    let replayed = crate::report_from(&out, 0);
    assert_eq!(replayed["cells"][0]["n"], 1, "{replayed}");
    assert_eq!(replayed["cells"][0]["k"], 0, "{replayed}");
}

/// The command every lane of [`rung_5`] runs: it says it started, then
/// holds until it is ended.
const HELD_LANE: &str = "touch \\\"$LADDER_SHARED/started.$$\\\"; exec sleep 300";

/// Writes `lab`'s lane command.
fn lane(lab: &Lab, command: &str) {
    std::fs::write(
        lab.path().join("flakelab.toml"),
        format!("[lane]\ncommand = [\"sh\", \"-c\", \"{command}\"]\n"),
    )
    .unwrap();
}

/// `flakelab ladder --from 5 --processes 2 -n 1` in `lab` (a git repository
/// of its lane), its copies under `tmp`, started and returned once both
/// lanes have said they started (in `shared`; their own signal).
fn rung_5(lab: &Lab, shared: &Path, tmp: &Path) -> std::process::Child {
    let child = lab
        .cmd()
        .env("LADDER_SHARED", shared)
        .env("TMPDIR", tmp)
        .args(RUNG_5)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    until("the lanes started", || {
        std::fs::read_dir(shared).unwrap().count() >= 2
    });
    child
}

const RUNG_5: [&str; 9] = [
    "ladder",
    "--from",
    "5",
    "--processes",
    "2",
    "-n",
    "1",
    "--",
    "true",
];

/// Waits until `done` holds: for an outcome, not for a time (the deadline
/// only turns a hang into a failure).
fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "never: {what}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn ctrl_c_during_a_rung_removes_its_working_copies() {
    if !capable("git", sh_ok("git --version")) {
        return;
    }
    let lab = Lab::new();
    let shared = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    lane(&lab, HELD_LANE);
    git(
        lab.path(),
        "git init -q && git add . && git commit -qm fixture",
    );
    let child = rung_5(&lab, shared.path(), tmp.path());
    assert_eq!(leftover_copies(tmp.path()).len(), 1);
    assert_eq!(worktrees(lab.path()), 3);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(leftover_copies(tmp.path()), Vec::<String>::new());
    assert_eq!(worktrees(lab.path()), 1);
}

#[test]
fn the_copies_of_a_killed_ladder_are_removed_by_its_warden_and_their_registrations_by_the_next() {
    if !capable("git", sh_ok("git --version")) {
        return;
    }
    let lab = Lab::new();
    let shared = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    lane(&lab, HELD_LANE);
    git(
        lab.path(),
        "git init -q && git add . && git commit -qm fixture",
    );
    let mut child = rung_5(&lab, shared.path(), tmp.path());
    // Killed without a chance to clean up: its warden removes the copies
    // once the runs are ended (it works on after the ladder is gone).
    assert_eq!(leftover_copies(tmp.path()).len(), 1);
    child.kill().unwrap();
    child.wait().unwrap();
    until("the warden removed the copies", || {
        leftover_copies(tmp.path()).is_empty()
    });
    // Their registrations stay (the warden runs no git): the next ladder
    // that makes copies prunes them first.
    assert_eq!(worktrees(lab.path()), 3);
    lane(&lab, "true");
    let out = lab
        .cmd()
        .env("TMPDIR", tmp.path())
        .args(RUNG_5)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(leftover_copies(tmp.path()), Vec::<String>::new());
    assert_eq!(worktrees(lab.path()), 1);
}

#[test]
fn a_rung_that_cannot_be_built_is_skipped_with_why_never_clean() {
    let lab = Lab::new();
    let (out, json) = ladder(
        &lab,
        &[],
        &[
            "-n",
            "2",
            "--to",
            "4",
            "--processes",
            "2",
            "--test",
            "t1",
            "--",
            "sh",
            "-c",
            "exit 0",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{json}");
    let s = shape(&json);
    assert_eq!(
        s,
        [
            (1, "skipped".into(), 0, 0),
            (2, "clean".into(), 2, 0),
            (3, "clean".into(), 2, 0),
            (4, "skipped".into(), 0, 0)
        ],
        "{json}"
    );
    assert!(rung(&json, 1)["reason"]
        .as_str()
        .unwrap()
        .contains("no runner recipe"));
    assert!(rung(&json, 4)["reason"]
        .as_str()
        .unwrap()
        .contains("no lane"));
    assert!(json["reproduced_at"].is_null());
    // Bad input: an empty rung range is a usage error naming the fix.
    let out = lab.run(&["ladder", "--from", "4", "--to", "2", "--", "true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--from 4 --to 2"));
}
