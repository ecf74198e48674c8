//! Hostile subjects (issue #19): a run that forks a thousand processes,
//! closes its output, floods it, ignores SIGTERM, leaves its process group,
//! makes itself a subreaper or fills a filesystem ends as the book's
//! "Hostile subjects" section says, and the session goes on. Every test
//! checks that nothing of its subject is left.

use super::{capable, marker, processes_with_env, sh_ok, Lab};

/// `flakelab run --format json ARGS` with `mark` in the subject's
/// environment; returns the exit code and the run records.
fn session(lab: &Lab, mark: &(String, String), args: &[&str]) -> (i32, Vec<serde_json::Value>) {
    let out = lab
        .cmd()
        .env(&mark.0, &mark.1)
        .args(["run", "--format", "json"])
        .args(args)
        .output()
        .unwrap();
    let code = out.status.code().unwrap_or(-1);
    // 2: nothing measured, when every run timed out.
    assert!(
        matches!(code, 0..=2),
        "exit {code}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (code, lab.runs())
}

fn assert_nothing_left(mark: &(String, String)) {
    let left = processes_with_env(&format!("{}={}", mark.0, mark.1));
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

#[test]
fn a_thousand_forked_processes_are_all_killed_at_run_end() {
    let lab = Lab::new();
    let mark = marker("forks");
    // 500 in the run's group, 500 in sessions of their own; the leader
    // exits at once.
    let script =
        "i=0; while [ $i -lt 500 ]; do sleep 1000 & setsid sleep 1000 & i=$((i+1)); done; exit 0";
    let (_, runs) = session(&lab, &mark, &["-n", "2", "--", "sh", "-c", script]);
    assert_eq!(runs.len(), 2, "the session went on to its second run");
    for run in &runs {
        assert_eq!(run["outcome"], "pass", "{run}");
        assert_eq!(run["stragglers"].as_u64(), Some(1000), "{run}");
        assert_eq!(run["warnings"].as_array().map(Vec::len), Some(0), "{run}");
    }
    assert_nothing_left(&mark);
}

#[test]
fn a_subject_that_closes_its_output_is_still_waited_for() {
    let lab = Lab::new();
    let mark = marker("closed");
    // End-of-file on the pipe is not the end of the run: the leader goes on
    // writing into closed descriptors, then exits 3.
    let script = "echo before; exec >&- 2>&-; i=0; while [ $i -lt 200 ]; do echo lost; i=$((i+1)); done; exit 3";
    let (_, runs) = session(&lab, &mark, &["-n", "2", "--", "sh", "-c", script]);
    assert_eq!(runs.len(), 2);
    for run in &runs {
        assert_eq!(run["outcome"], "fail", "{run}");
        assert_eq!(run["exit_code"].as_i64(), Some(3), "{run}");
        assert_eq!(run["output_bytes"].as_u64(), Some(7), "{run}");
        let log = lab.store().join(run["log"].as_str().unwrap());
        assert_eq!(std::fs::read_to_string(log).unwrap(), "before\n");
    }
    assert_nothing_left(&mark);
}

#[test]
fn endless_output_is_capped_and_ended_by_the_timeout() {
    let lab = Lab::new();
    let mark = marker("endless");
    let (_, runs) = session(
        &lab,
        &mark,
        &[
            "-n",
            "2",
            "--timeout",
            "1s",
            "--kill-grace",
            "1s",
            "--",
            "yes",
            "flood",
        ],
    );
    assert_eq!(runs.len(), 2);
    for run in &runs {
        assert_eq!(run["outcome"], "timeout", "{run}");
        let written = run["output_bytes"].as_u64().unwrap();
        let dropped = run["output_dropped"].as_u64().unwrap();
        assert!(written > 2 << 20, "{run}");
        assert_eq!(dropped, written - (2 << 20), "{run}");
        let log = lab.store().join(run["log"].as_str().unwrap());
        let size = std::fs::metadata(log).unwrap().len();
        let marker_line =
            format!("\n[flakelab: {dropped} bytes dropped from the middle of the output]\n");
        assert_eq!(size, (2 << 20) + marker_line.len() as u64, "{run}");
    }
    assert_nothing_left(&mark);
}

#[test]
fn a_subject_that_ignores_sigterm_is_killed_after_the_grace() {
    let lab = Lab::new();
    let mark = marker("noterm");
    let (_, runs) = session(
        &lab,
        &mark,
        &[
            "-n",
            "2",
            "--timeout",
            "300ms",
            "--kill-grace",
            "300ms",
            "--",
            "sh",
            "-c",
            "trap '' TERM; sleep 1000 & exec sleep 1000",
        ],
    );
    assert_eq!(runs.len(), 2);
    for run in &runs {
        assert_eq!(run["outcome"], "timeout", "{run}");
        assert_eq!(run["end"]["how"], "timed_out", "{run}");
        assert_eq!(run["end"]["signal"].as_i64(), Some(9), "{run}");
    }
    assert_nothing_left(&mark);
}

#[test]
fn processes_that_leave_the_group_or_the_session_are_found_and_killed() {
    let lab = Lab::new();
    let mark = marker("regroup");
    if !capable("python3", sh_ok("python3 -c pass")) {
        return;
    }
    // One child moves to a process group of its own, one to a session of
    // its own; both block; the leader waits until both have moved.
    let script = r#"python3 -c 'import os, time; os.setpgid(0, 0); open("moved.pg", "w").close(); time.sleep(1000)' &
python3 -c 'import os, time; os.setsid(); open("moved.sid", "w").close(); time.sleep(1000)' &
until [ -e moved.pg ] && [ -e moved.sid ]; do sleep 0.01; done
rm moved.pg moved.sid"#;
    let (_, runs) = session(&lab, &mark, &["-n", "2", "--", "sh", "-c", script]);
    assert_eq!(runs.len(), 2);
    for run in &runs {
        assert_eq!(run["outcome"], "pass", "{run}");
        assert_eq!(run["stragglers"].as_u64(), Some(2), "{run}");
    }
    assert_nothing_left(&mark);
}

#[test]
fn a_subject_that_makes_itself_a_subreaper_loses_its_orphans_to_the_sweep() {
    let lab = Lab::new();
    let mark = marker("subreaper");
    if !capable("python3", sh_ok("python3 -c pass")) {
        return;
    }
    // The leader becomes a child subreaper (PR_SET_CHILD_SUBREAPER = 36),
    // double-forks a setsid'd grandchild, which is reparented to it, and
    // exits once that grandchild is its child: the grandchild then goes to
    // flakelab, the next subreaper up.
    let script = r#"import ctypes, os, subprocess, time
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(36, 1, 0, 0, 0) == 0, ctypes.get_errno()
subprocess.run(["sh", "-c", "setsid sleep 1000 & echo $! > orphan"], check=True)
orphan = int(open("orphan").read())
while int(open(f"/proc/{orphan}/stat").read().rsplit(")", 1)[1].split()[1]) != os.getpid():
    time.sleep(0.01)
print("adopted", flush=True)
"#;
    let (_, runs) = session(&lab, &mark, &["-n", "2", "--", "python3", "-c", script]);
    assert_eq!(runs.len(), 2);
    for run in &runs {
        assert_eq!(run["outcome"], "pass", "{run}");
        assert_eq!(run["stragglers"].as_u64(), Some(1), "{run}");
    }
    assert_nothing_left(&mark);
}

#[test]
fn a_subject_that_fills_its_filesystem_fails_and_the_session_goes_on() {
    let lab = Lab::new();
    let mark = marker("fill");
    // A 1 MiB tmpfs as the subject's working directory, in a private mount
    // namespace of flakelab's own (`unshare -m` as root, `-rm` otherwise);
    // the store stays on the lab's disk.
    let unshare = if nix::unistd::geteuid().is_root() {
        "-m"
    } else {
        "-rm"
    };
    if !capable(
        "a private mount namespace (unshare)",
        sh_ok(&format!(
            "unshare {unshare} sh -c 'mount -t tmpfs -o size=1m tmpfs /mnt'"
        )),
    ) {
        return;
    }
    std::fs::create_dir(lab.path().join("small")).unwrap();
    let store = lab.store();
    let inner = format!(
        "mount -t tmpfs -o size=1m tmpfs small && cd small && exec \"$0\" run --format json \
         --store '{}' -n 2 -- sh -c 'head -c 4000000 /dev/zero > fill'",
        store.display()
    );
    let mut cmd = std::process::Command::new("unshare");
    super::scrub(&mut cmd);
    let out = cmd
        .current_dir(lab.path())
        .env(&mark.0, &mark.1)
        .args([unshare, "sh", "-c", &inner])
        .arg(super::bin())
        .output()
        .unwrap();
    // Failing runs at the baseline alone, with no cell to compare, are the
    // session's finding: exit 1.
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let runs = lab.runs();
    assert_eq!(runs.len(), 2, "the session went on");
    for run in &runs {
        assert_eq!(run["outcome"], "fail", "{run}");
        assert_eq!(run["exit_code"].as_i64(), Some(1), "{run}");
        let log = lab.store().join(run["log"].as_str().unwrap());
        let text = std::fs::read_to_string(log).unwrap();
        assert!(text.contains("No space left on device"), "{text}");
    }
    assert_nothing_left(&mark);
}
