//! Two sessions appending to one store at once, each with `-j 2`, under
//! CPU stress: every record of both reads back, none is interleaved with
//! another. The sessions overlap by rendezvous, not by timing: every run of
//! each session waits until the other has started nearly as many, so the
//! two sessions' appends are in flight together from first to last.

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};

use super::Lab;

/// Busy loops started by the test and ended by it (by pid, on drop).
struct Stress(Vec<Child>);

impl Drop for Stress {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// One busy shell loop per CPU.
fn stress() -> Stress {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    Stress(
        (0..cpus)
            .map(|_| {
                Command::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect(),
    )
}

/// The subject of session `me`: note its start (a rendezvous file per run,
/// in the lab), then wait until the other session has started at least as
/// many runs, less two. The session behind can always go on, so neither
/// blocks for good, and the two stay within two runs of each other from
/// the first run to the last. It prints 50 lines tagged with its session.
fn subject(lab: &Lab, me: &str, other: &str) -> String {
    let dir = lab.path().display();
    format!(
        "touch {dir}/started.{me}.$FLAKELAB_RUN_ID; \
         mine=$(ls {dir} | grep -c '^started\\.{me}\\.'); \
         until [ $(ls {dir} | grep -c '^started\\.{other}\\.') -ge $((mine - 2)) ] \
           && ls {dir}/started.{other}.* >/dev/null 2>&1; do sleep 0.01; done; \
         i=0; while [ $i -lt 50 ]; do echo \"{me} line $i of run $FLAKELAB_RUN_ID\"; i=$((i+1)); done"
    )
}

#[test]
fn two_sessions_at_once_under_cpu_stress_lose_nothing_and_mix_nothing() {
    let lab = Lab::new();
    let _load = stress();
    let runs = 40usize;
    let start = |me: &str, other: &str| {
        lab.cmd()
            .args([
                "run",
                "-n",
                &runs.to_string(),
                "-j",
                "2",
                "-p",
                "env=SESSION=x",
            ])
            .args(["--no-sham", "--", "sh", "-c"])
            .arg(subject(&lab, me, other))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (start("a", "b"), start("b", "a"));
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // Every line of every store file is one whole record.
    // (the two sessions' runs files, `runs/<session>.jsonl`, and the files
    // both sessions append to.)
    let mut names: Vec<String> = std::fs::read_dir(lab.store().join("runs"))
        .unwrap()
        .map(|e| format!("runs/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    names.extend(["sessions.jsonl".into(), "session-ends.jsonl".into()]);
    for name in &names {
        let text = std::fs::read_to_string(lab.store().join(name)).unwrap();
        assert!(text.ends_with('\n'), "{name}");
        for (i, line) in text.lines().enumerate() {
            let v: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{name} line {}: {e}: {line}", i + 1));
            assert!(v["schema"]
                .as_str()
                .is_some_and(|s| s.starts_with("flakelab.")));
        }
    }
    // Each session's runs: exactly its plan, every index once.
    let mut per_session: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for run in lab.runs() {
        per_session
            .entry(run["session"].as_str().unwrap().to_string())
            .or_default()
            .push(run["index"].as_u64().unwrap());
    }
    assert_eq!(per_session.len(), 2);
    for (session, mut indices) in per_session {
        indices.sort();
        let planned: Vec<u64> = (0..2 * runs as u64).collect();
        assert_eq!(indices, planned, "session {session}");
        let out = lab.run(&["report", "--format", "json", &session]);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["recorded"], 2 * runs as u64);
        assert_eq!(report["skipped_lines"], 0);
        assert_eq!(report["session_end"], "finished");
    }
    // Each run's log holds only its own session's lines.
    for run in lab.runs() {
        let me = if run["argv"][2]
            .as_str()
            .unwrap()
            .contains("started.a.$FLAKELAB_RUN_ID")
        {
            "a"
        } else {
            "b"
        };
        let log = std::fs::read_to_string(lab.store().join(run["log"].as_str().unwrap())).unwrap();
        assert_eq!(log.lines().count(), 50);
        assert!(log.lines().all(|l| l.starts_with(&format!("{me} line "))));
    }
}
