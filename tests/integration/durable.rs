//! No record lost: a harness killed with SIGKILL at a chosen run leaves a
//! store from which every finished run reads back, the session's plan is
//! known and `report` says it ended without a stop; the next session appends
//! cleanly after a cut-short last line in every store file; a session
//! stopped by Ctrl-C records its end; a full or read-only store mid-session
//! is a clear error (exit 2) that keeps the finished records readable.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use super::{bin, capable, sh_ok, wait_for_file, Lab, Reaped};

/// Lines of `file` that parse as JSON, and the lines that do not.
fn json_lines(file: &Path) -> (Vec<serde_json::Value>, usize) {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let mut bad = 0;
    let mut good = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str(line) {
            Ok(v) => good.push(v),
            Err(_) => bad += 1,
        }
    }
    (good, bad)
}

/// The run lines (`flakelab.run/…`) of every session's runs file
/// (`runs/<session>.jsonl`) that parse, and the lines of those files that
/// do not parse.
fn run_lines(lab: &Lab) -> (Vec<serde_json::Value>, usize) {
    let (mut runs, mut bad) = (Vec::new(), 0);
    if let Ok(dir) = std::fs::read_dir(lab.store().join("runs")) {
        for file in dir {
            let (good, b) = json_lines(&file.unwrap().path());
            bad += b;
            runs.extend(good.into_iter().filter(|v| {
                v["schema"]
                    .as_str()
                    .is_some_and(|s| s.starts_with("flakelab.run/"))
            }));
        }
    }
    (runs, bad)
}

/// Polls until the store holds `n` run records (the harness's own records
/// are the readiness signal); panics after a generous limit.
fn wait_for_runs(lab: &Lab, n: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while run_lines(lab).0.len() < n {
        assert!(
            std::time::Instant::now() < deadline,
            "the store never held {n} runs"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// A subject that blocks at run index `at` until `release` exists, after
/// saying so with `blocked`; every other run passes at once.
fn blocking_subject(lab: &Lab, at: usize) -> String {
    let dir = lab.path().display();
    format!(
        "case \"$FLAKELAB_RUN_ID\" in *.{at:05}) touch {dir}/blocked; \
         while [ ! -e {dir}/release ]; do sleep 0.02; done;; esac"
    )
}

/// `report --format json` of the last session and its exit code.
fn report(lab: &Lab, extra: &[&str]) -> (i32, serde_json::Value) {
    let mut args = vec!["report", "--format", "json"];
    args.extend_from_slice(extra);
    let out = lab.run(&args);
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap(), json)
}

#[test]
fn a_session_killed_at_a_chosen_run_keeps_its_plan_and_runs_and_reports_no_stop() {
    for (at, jobs) in [(0usize, "1"), (3, "1"), (4, "2")] {
        let lab = Lab::new();
        let mut harness = Reaped(
            lab.cmd()
                .args([
                    "run", "-n", "6", "-j", jobs, "--seed", "77", "--", "sh", "-c",
                ])
                .arg(blocking_subject(&lab, at))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        wait_for_file(&lab.path().join("blocked"));
        // With -j 1 every run before `at` has ended; wait for its record.
        let before = if jobs == "1" { at } else { 0 };
        wait_for_runs(&lab, before);
        // While it runs, `report` says so.
        let (_, live) = report(&lab, &[]);
        assert_eq!(live["session_end"], "running", "{live}");
        harness.kill().unwrap(); // SIGKILL
        harness.wait().unwrap();
        std::fs::write(lab.path().join("release"), "").unwrap();

        let (runs, bad) = run_lines(&lab);
        assert_eq!(bad, 0, "a killed harness left a broken line");
        if jobs == "1" {
            assert_eq!(runs.len(), at, "at {at}");
        }
        // The plan was recorded before the first run.
        let (sessions, _) = json_lines(&lab.store().join("sessions.jsonl"));
        assert_eq!(sessions.len(), 1);
        let plan = &sessions[0]["plan"];
        assert_eq!(
            (
                plan["runs_per_cell"].as_u64(),
                plan["cells"].as_array().map(Vec::len)
            ),
            (Some(6), Some(1))
        );
        assert_eq!(sessions[0]["plan"]["seed"], 77);

        let (_, r) = report(&lab, &[]);
        assert_eq!(r["planned"], 6);
        assert_eq!(r["recorded"].as_u64(), Some(runs.len() as u64));
        assert_eq!(r["session_end"], "no_stop", "{r}");
        let table = lab.run(&["report"]);
        let text = String::from_utf8_lossy(&table.stdout);
        assert!(
            text.contains(&format!(
                "ended without a stop: {} of 6 planned runs were recorded",
                runs.len()
            )),
            "{text}"
        );
    }
}

#[test]
fn after_a_kill_the_next_session_appends_cleanly_past_a_cut_short_line_in_every_file() {
    let lab = Lab::new();
    let mut harness = Reaped(
        lab.cmd()
            .args(["run", "-n", "3", "--", "sh", "-c"])
            .arg(blocking_subject(&lab, 2))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for_file(&lab.path().join("blocked"));
    wait_for_runs(&lab, 2);
    harness.kill().unwrap();
    harness.wait().unwrap();
    std::fs::write(lab.path().join("release"), "").unwrap();
    let killed = json_lines(&lab.store().join("sessions.jsonl")).0[0]["id"]
        .as_str()
        .unwrap()
        .to_string();

    // A finished session first, so session-ends.jsonl exists; then a line
    // cut short at the end of each store file, as a crash mid-write leaves.
    assert!(lab.run(&["run", "-n", "1", "--", "true"]).status.success());
    // The killed session's own runs file, and the files every session
    // appends to.
    let killed_runs = format!("runs/{killed}.jsonl");
    let files = [killed_runs.as_str(), "sessions.jsonl", "session-ends.jsonl"];
    for name in files {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(lab.store().join(name))
            .unwrap();
        f.write_all(b"{\"schema\":\"flakelab.cut/1\",\"id\":\"cut-short-by-a-cr")
            .unwrap();
    }
    let out = lab.run(&["run", "--format", "json", "-n", "2", "--", "true"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    for name in files {
        let (_, bad) = json_lines(&lab.store().join(name));
        assert_eq!(bad, 1, "{name}: only the cut-short line is lost");
    }
    let (runs, _) = run_lines(&lab);
    assert_eq!(runs.len(), 2 + 1 + 2);
    let (r, _) = (report(&lab, &[]).1, ());
    assert_eq!(r["recorded"], 2);
    assert_eq!(r["session_end"], "finished");
    // The new session reads only its own runs file.
    assert_eq!(r["skipped_lines"], 0);
    let (_, old) = report(&lab, &[&killed]);
    assert_eq!(
        (
            old["recorded"].as_u64(),
            old["session_end"].as_str(),
            old["skipped_lines"].as_u64()
        ),
        (Some(2), Some("no_stop"), Some(1))
    );
}

#[test]
fn a_session_stopped_by_ctrl_c_records_its_end_as_interrupted() {
    let lab = Lab::new();
    let script = lab.path().join("fake.toml");
    std::fs::write(&script, "[[run]]\ntimes = 1\ninterrupt = true\n").unwrap();
    let out = lab.run(&[
        "--fake-executor",
        script.to_str().unwrap(),
        "run",
        "-n",
        "5",
        "--",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(130));
    let (ends, _) = json_lines(&lab.store().join("session-ends.jsonl"));
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0]["schema"], "flakelab.session-end/1");
    assert_eq!(ends[0]["how"], "interrupted");
    let (_, r) = report(&lab, &[]);
    assert_eq!(r["session_end"], "interrupted");
    assert!(!lab
        .store()
        .join("running")
        .read_dir()
        .unwrap()
        .any(|_| true));
}

/// `unshare` arguments for a private mount namespace in which this user
/// may mount (a user namespace too when not root).
fn private_mounts() -> Vec<&'static str> {
    if nix::unistd::geteuid().is_root() {
        vec!["-m"]
    } else {
        vec!["-r", "-m"]
    }
}

fn can_mount_tmpfs() -> bool {
    let dir = tempfile::tempdir().unwrap();
    let args = private_mounts().join(" ");
    sh_ok(&format!(
        "unshare {args} sh -c 'mount -t tmpfs -o size=64k tmpfs {} && mount --bind {0} {0} && mount -o remount,ro,bind {0}'",
        dir.path().display()
    ))
}

/// Runs `flakelab run ARGS` with its store on a tmpfs of `size` mounted in
/// a private mount namespace (set up by `setup`, a shell fragment run
/// before flakelab with `$S` the store), then reads the store back in the
/// same namespace (it vanishes with it): returns run's exit code and
/// stderr, the report of the session, and runs.jsonl.
fn in_small_store(
    lab: &Lab,
    setup: &str,
    args: &[&str],
) -> (i32, String, serde_json::Value, String) {
    let out = lab.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let store = lab.path().join("store");
    std::fs::create_dir_all(&store).unwrap();
    let words: Vec<String> = args
        .iter()
        .map(|a| shell_words::quote(a).into_owned())
        .collect();
    let script = format!(
        "set -e; S={s}; export S; {setup}\n\
         set +e; {bin} run --store $S {args} > {o}/run.out 2> {o}/run.err; echo $? > {o}/rc\n\
         {bin} report --store $S --format json > {o}/report.json 2> {o}/report.err\n\
         cat $S/runs/*.jsonl > {o}/runs.jsonl\n",
        s = store.display(),
        bin = bin().display(),
        args = words.join(" "),
        o = out.display(),
    );
    let mut cmd = Command::new("unshare");
    super::scrub(&mut cmd);
    let status = cmd
        .args(private_mounts())
        .args(["sh", "-c", &script])
        .current_dir(lab.path())
        .status()
        .unwrap();
    assert!(status.success(), "the namespace script failed");
    let read = |name: &str| std::fs::read_to_string(out.join(name)).unwrap();
    let rc: i32 = read("rc").trim().parse().unwrap();
    let report = serde_json::from_str(&read("report.json"))
        .unwrap_or_else(|e| panic!("no report ({e}): {}", read("report.err")));
    (rc, read("run.err"), report, read("runs.jsonl"))
}

/// A subject that, at run index `at`, runs `act` (with `$S` the store).
fn acting_at(at: usize, act: &str) -> String {
    // flakelab starts run `at` before it appends run `at - 1`'s record: the
    // act waits for that record (a rendezvous on the store, no timing window).
    let before = at - 1;
    format!(
        "case \"$FLAKELAB_RUN_ID\" in *.{at:05}) until grep -qs '\"i\":{before},' \"$S\"/runs/*.jsonl; do :; done; {act};; esac; exit 0"
    )
}

#[test]
fn a_store_filled_mid_session_is_a_clear_error_and_its_finished_records_stay_readable() {
    if !capable(
        "a private mount namespace with a small tmpfs",
        can_mount_tmpfs(),
    ) {
        return;
    }
    let lab = Lab::new();
    let store = lab.path().join("store");
    let fill = format!(
        "dd if=/dev/zero of={}/filler bs=4096 2>/dev/null",
        store.display()
    );
    let (rc, err, report, runs) = in_small_store(
        &lab,
        "mount -t tmpfs -o size=256k tmpfs $S",
        // Enough runs after the filler that their lines (under 200 bytes
        // each) outgrow the page the runs file already holds.
        &["-n", "60", "--", "sh", "-c", &acting_at(2, &fill)],
    );
    assert_eq!(rc, 2, "{err}");
    assert!(
        err.contains(&format!("{}/", store.display())),
        "the error names the path: {err}"
    );
    assert!(
        err.contains("the filesystem holding the store is full"),
        "{err}"
    );
    assert!(
        err.contains(
            "hint: free space on that filesystem, or choose another directory with --store"
        ),
        "{err}"
    );
    // The runs before the filler ended were recorded, and read back.
    let complete = runs
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| {
            v["schema"]
                .as_str()
                .is_some_and(|s| s.starts_with("flakelab.run/"))
        })
        .count();
    assert!((2..60).contains(&complete), "{complete} records: {runs}");
    assert_eq!(
        report["recorded"].as_u64(),
        Some(complete as u64),
        "{report}"
    );
    assert!(report["skipped_lines"].as_u64().unwrap() <= 1, "{report}");
}

#[test]
fn a_store_made_read_only_mid_session_is_a_clear_error_and_stays_readable() {
    if !capable(
        "a private mount namespace with a read-only bind mount",
        can_mount_tmpfs(),
    ) {
        return;
    }
    let lab = Lab::new();
    let (rc, err, report, runs) = in_small_store(
        &lab,
        "mount -t tmpfs -o size=4m tmpfs $S; mount --bind $S $S",
        &[
            "-n",
            "3",
            "--",
            "sh",
            "-c",
            &acting_at(1, "mount -o remount,ro,bind \"$S\""),
        ],
    );
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("/runs/"), "{err}");
    assert!(
        err.contains("the store is on a read-only filesystem"),
        "{err}"
    );
    assert!(
        err.contains("hint: remount it read-write, or choose a writable directory with --store"),
        "{err}"
    );
    // Run 0 was recorded before the store turned read-only, and reads back
    // from the read-only store.
    let recorded = runs
        .lines()
        .filter(|l| l.contains("\"schema\":\"flakelab.run/"))
        .count();
    assert_eq!(recorded, 1, "{runs}");
    assert_eq!(report["recorded"], 1, "{report}");
    assert_eq!(report["planned"], 3);
}
