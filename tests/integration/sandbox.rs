//! Sandboxed execution: timeouts, escaped grandchildren, Ctrl-C, output caps.
//! Every test checks that no process it started is left behind.

use std::process::Stdio;

use super::{marker, processes_with_env, wait_for_file, Lab};

#[test]
fn a_hanging_run_is_killed_at_its_timeout_with_its_setsid_grandchild() {
    let lab = Lab::new();
    let (name, value) = marker("timeout");
    let out = lab
        .cmd()
        .env(&name, &value)
        .args([
            "run",
            "--format",
            "json",
            "-n",
            "2",
            "--timeout",
            "500ms",
            "--kill-grace",
            "1s",
            "--",
            "sh",
            "-c",
            "setsid sh -c 'sleep 300' & sleep 300",
        ])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let base = super::cell(&report, "baseline");
    assert_eq!(base["timed_out"].as_u64(), Some(2), "{report}");
    assert_eq!(base["n"].as_u64(), Some(0), "timeouts are not counted in N");
    for run in lab.runs() {
        assert_eq!(run["outcome"], "timeout");
        assert_eq!(run["end"]["how"], "timed_out");
        assert!(run["stragglers"].as_u64().unwrap() >= 1, "{run}");
        // Ended by a signal flakelab sent (TERM, or KILL after the grace),
        // not by the subject's own 300 s sleep running out.
        let signal = run["end"]["signal"].as_i64();
        assert!(matches!(signal, Some(15 | 9)), "{run}");
        assert!(run["exit_code"].is_null(), "{run}");
    }
    let left = processes_with_env(&format!("{name}={value}"));
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

#[test]
fn ctrl_c_kills_every_run_keeps_finished_records_and_exits_130() {
    let lab = Lab::new();
    let (name, value) = marker("ctrlc");
    // Runs 1 and 2 finish; run 3 says it is ready and hangs with an escaped grandchild.
    let script = "n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; \
                  if [ $n -ge 3 ]; then setsid sh -c 'sleep 300' & touch ready; sleep 300; fi";
    let child = lab
        .cmd()
        .env(&name, &value)
        .args([
            "run",
            "-n",
            "10",
            "--kill-grace",
            "2s",
            "--",
            "sh",
            "-c",
            script,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(&lab.path().join("ready"));
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
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("partial session: 2 of 10"), "{table}");
    assert!(table.contains("0 of 2"), "{table}");
    assert_eq!(lab.runs().len(), 2);
    let left = processes_with_env(&format!("{name}={value}"));
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

#[test]
fn a_100_mb_flood_keeps_the_harness_under_50_mb_and_the_log_capped() {
    let lab = Lab::new();
    // The subject reads its parent's (flakelab's) peak resident memory after
    // the flood has gone through the pipe.
    let out = lab.run(&[
        "run",
        "-n",
        "1",
        "--",
        "sh",
        "-c",
        "head -c 100000000 /dev/zero; grep VmHWM /proc/$PPID/status > hwm",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hwm = std::fs::read_to_string(lab.path().join("hwm")).unwrap();
    let kb: u64 = hwm.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(kb < 50 * 1024, "harness peak memory {kb} kB");
    let run = &lab.runs()[0];
    assert_eq!(run["output_bytes"].as_u64(), Some(100_000_000));
    let dropped = run["output_dropped"].as_u64().unwrap();
    assert_eq!(dropped, 100_000_000 - 2 * 1024 * 1024);
    let log = lab.store().join(run["log"].as_str().unwrap());
    let size = std::fs::metadata(&log).unwrap().len();
    assert!(size < 2 * 1024 * 1024 + 200, "log is {size} bytes");
    let text = std::fs::read(&log).unwrap();
    let marker = format!("[flakelab: {dropped} bytes dropped");
    assert!(String::from_utf8_lossy(&text).contains(&marker));
}

#[test]
fn a_command_that_cannot_start_is_an_error_outcome_not_a_crash() {
    let lab = Lab::new();
    let (code, report) = lab.run_json(&["-n", "2", "--", "no-such-program-flakelab-test"]);
    // Nothing was measured: never a clean exit.
    assert_eq!(code, 2, "{report}");
    let base = super::cell(&report, "baseline");
    assert_eq!(base["errored"].as_u64(), Some(2));
    assert_eq!(base["n"].as_u64(), Some(0));
    let run = &lab.runs()[0];
    assert_eq!(run["outcome"], "error");
    assert!(
        run["reason"].as_str().unwrap().contains("no-such-program"),
        "{run}"
    );
}
