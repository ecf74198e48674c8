//! No survivor after the harness dies (issue #19): flakelab killed with
//! SIGKILL, SIGTERM or SIGHUP while its runs hold setsid'd and double-forked
//! descendants leaves no process behind, every finished record readable,
//! and a store the next session appends to cleanly.
//!
//! Readiness is always the subject's own word: each process of a run writes
//! its pid into `pids/` (write, then rename), and the test acts once the
//! processes it waits for have announced themselves. The only bounded poll
//! waits for killed processes to disappear from `/proc`.

use std::collections::BTreeMap;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use rand::{Rng, SeedableRng};

use super::{capable, marker, processes_with_env, sh_ok, wait_for_file, Lab};

/// A process of a run that announces its pid as `pids/<index:05>.<role>` and
/// then blocks until killed (`sleep` keeps the pid: it is exec'd).
const HOLD: &str = r#"i=${FLAKELAB_RUN_ID##*.}
echo $$ > "pids/$i.$1.tmp" && mv "pids/$i.$1.tmp" "pids/$i.$1"
exec sleep 1000
"#;

/// The subject: a setsid'd child, a double-forked grandchild that stays in
/// the run's group and one that also leaves it with setsid. Runs before
/// index `$HOLD_FROM` then exit (flakelab sweeps what they left); the others
/// announce their leader too and block.
const RUN: &str = r#"i=${FLAKELAB_RUN_ID##*.}
setsid sh hold.sh setsid &
sh -c 'sh hold.sh orphan &'
sh -c 'setsid sh hold.sh far &'
until [ -e "pids/$i.setsid" ] && [ -e "pids/$i.orphan" ] && [ -e "pids/$i.far" ]; do sleep 0.01; done
[ "$i" -lt "$HOLD_FROM" ] && exit 0
exec sh hold.sh leader
"#;

/// The roles every run announces; a blocked run announces `leader` too.
const ROLES: [&str; 4] = ["setsid", "orphan", "far", "leader"];

/// A lab with the subject written in, and the marker its processes inherit.
fn setup() -> (Lab, (String, String)) {
    let lab = Lab::new();
    std::fs::write(lab.path().join("hold.sh"), HOLD).unwrap();
    std::fs::write(lab.path().join("run.sh"), RUN).unwrap();
    std::fs::create_dir(lab.path().join("pids")).unwrap();
    let mark = marker("survive");
    (lab, mark)
}

/// Starts `flakelab run -n RUNS -j JOBS -- sh run.sh`, whose runs from
/// `hold_from` on block.
fn start(lab: &Lab, mark: &(String, String), runs: usize, jobs: usize, hold_from: usize) -> Child {
    lab.cmd()
        .env(&mark.0, &mark.1)
        .env("HOLD_FROM", hold_from.to_string())
        .args([
            "run",
            "-n",
            &runs.to_string(),
            "-j",
            &jobs.to_string(),
            "--kill-grace",
            "2s",
            "--format",
            "json",
            "--",
            "sh",
            "run.sh",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("flakelab starts")
}

/// A process identity safe against pid reuse: pid and start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Proc {
    pid: i32,
    start: u64,
}

/// The state and start time of `pid`, from `/proc/PID/stat`.
fn stat(pid: i32) -> Option<(char, u64)> {
    let raw = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &raw[raw.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((state, start))
}

/// Every pid announced so far, with its start time (read at once: the
/// process is blocked in `sleep` until killed).
fn announced(lab: &Lab) -> BTreeMap<String, Proc> {
    let mut found = BTreeMap::new();
    for entry in std::fs::read_dir(lab.path().join("pids"))
        .unwrap()
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".tmp") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        let pid: i32 = text.trim().parse().expect("a pid");
        // A process already gone (a finished run's, swept) has no start time.
        let start = stat(pid).map_or(0, |(_, start)| start);
        found.insert(name, Proc { pid, start });
    }
    found
}

/// Whether this very process is still alive (not gone, not a zombie, not
/// a recycled pid).
fn alive(p: Proc) -> bool {
    stat(p.pid).is_some_and(|(state, start)| start == p.start && !matches!(state, 'Z' | 'X'))
}

/// Waits (bounded, generously) for every process in `procs` and every
/// process carrying the marker to be gone; panics naming the survivors.
fn assert_no_survivor(procs: &BTreeMap<String, Proc>, mark: &(String, String)) {
    let entry = format!("{}={}", mark.0, mark.1);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left: Vec<(&String, &Proc)> = procs.iter().filter(|(_, p)| alive(**p)).collect();
        let marked: Vec<i32> = processes_with_env(&entry)
            .into_iter()
            .filter(|&pid| stat(pid).is_some_and(|(s, _)| !matches!(s, 'Z' | 'X')))
            .collect();
        if left.is_empty() && marked.is_empty() {
            return;
        }
        if Instant::now() > deadline {
            // Do not leak them into the next test.
            for &pid in &marked {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
            panic!("survivors: announced {left:?}, marked {marked:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits for run `index` to announce every role.
fn wait_for_run(lab: &Lab, index: usize) {
    for role in ROLES {
        wait_for_file(&lab.path().join("pids").join(format!("{index:05}.{role}")));
    }
}

/// The store as `flakelab report --format json` reads it back, checked
/// against the raw lines: every line a whole record, each counted once.
fn check_records(lab: &Lab) -> serde_json::Value {
    // Every session's own runs file (`runs/<session>.jsonl`): its run lines,
    // beside the test table and context lines the compact format writes.
    let mut raw = String::new();
    let mut lines = 0;
    if let Ok(dir) = std::fs::read_dir(lab.store().join("runs")) {
        for file in dir {
            let text = std::fs::read_to_string(file.unwrap().path()).unwrap();
            assert!(
                text.is_empty() || text.ends_with('\n'),
                "a torn last line:\n{text}"
            );
            lines += text
                .lines()
                .filter(|l| l.contains("\"flakelab.run/"))
                .count();
            raw.push_str(&text);
        }
    }
    assert_eq!(lab.runs().len(), lines, "an unreadable record:\n{raw}");
    let out = lab.run(&["report", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no report ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(report["recorded"].as_u64(), Some(lines as u64), "{report}");
    report
}

/// A second session on the same store runs cleanly and appends.
fn second_session_runs_cleanly(lab: &Lab, before: usize) {
    let (code, report) = lab.run_json(&["-n", "2", "--", "true"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["recorded"].as_u64(), Some(2), "{report}");
    assert_eq!(report["planned"].as_u64(), Some(2), "{report}");
    assert_eq!(lab.runs().len(), before + 2);
}

/// One SIGKILL at the seed's point: after run `hold_from`'s processes have
/// all announced themselves, with `jobs` at once.
fn sigkill_once(seed: u64) {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let hold_from = rng.gen_range(0..4usize);
    let jobs = rng.gen_range(1..=2usize);
    let runs = hold_from + 2;
    let (lab, mark) = setup();
    let mut child = start(&lab, &mark, runs, jobs, hold_from);
    wait_for_run(&lab, hold_from);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9),
        "seed {seed}"
    );
    let procs = announced(&lab);
    assert!(procs.len() >= ROLES.len(), "seed {seed}: {procs:?}");
    assert_no_survivor(&procs, &mark);
    let report = check_records(&lab);
    // Runs before `hold_from` finished; the last of them may still have been
    // on its way into the store (-j 2) when the kill came.
    let recorded = report["recorded"].as_u64().unwrap() as usize;
    assert!(
        recorded <= hold_from && recorded + jobs > hold_from,
        "seed {seed}: {recorded} recorded with {hold_from} finished: {report}"
    );
    assert_eq!(report["planned"].as_u64(), Some(runs as u64), "{report}");
    for run in lab.runs() {
        assert_eq!(run["outcome"], "pass", "seed {seed}: {run}");
    }
    second_session_runs_cleanly(&lab, recorded);
}

#[test]
fn sigkill_at_a_random_point_leaves_no_process_and_every_finished_record() {
    for seed in 0..20 {
        sigkill_once(seed);
    }
}

/// SIGTERM or SIGHUP: flakelab stops the runs itself, keeps what finished
/// and exits 130.
fn stopped_by(signal: Signal) {
    let (lab, mark) = setup();
    let child = start(&lab, &mark, 4, 2, 2);
    wait_for_run(&lab, 2);
    kill(Pid::from_raw(child.id() as i32), signal).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{signal}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let procs = announced(&lab);
    assert_no_survivor(&procs, &mark);
    let report = check_records(&lab);
    assert_eq!(report["recorded"].as_u64(), Some(2), "{report}");
    second_session_runs_cleanly(&lab, 2);
}

#[test]
fn sigterm_ends_every_run_and_keeps_the_finished_records() {
    stopped_by(Signal::SIGTERM);
}

#[test]
fn sighup_ends_every_run_and_keeps_the_finished_records() {
    stopped_by(Signal::SIGHUP);
}

/// The subject of the issue's measurement: two runs at once, each with a
/// background, a setsid'd and a foreground `sleep`.
/// `warden: false` sets the test-only `FLAKELAB_TEST_NO_WARDEN`.
fn sleeps_then_sigkill(lab: &Lab, mark: &(String, String), warden: bool) -> Vec<Proc> {
    let mut cmd = lab.cmd();
    if !warden {
        cmd.env("FLAKELAB_TEST_NO_WARDEN", "1");
    }
    let mut child = cmd
        .env(&mark.0, &mark.1)
        .args([
            "run",
            "-n",
            "4",
            "-j",
            "2",
            "--",
            "sh",
            "-c",
            "sleep 30 & setsid sleep 31 & sleep 32",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Ready once both runs' three sleeps exist (their own word: they are
    // in /proc with the marker and have exec'd sleep).
    let entry = format!("{}={}", mark.0, mark.1);
    let deadline = Instant::now() + Duration::from_secs(60);
    let sleeps = loop {
        let sleeps: Vec<i32> = processes_with_env(&entry)
            .into_iter()
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .is_ok_and(|c| c.trim() == "sleep")
            })
            .collect();
        if sleeps.len() >= 6 {
            break sleeps;
        }
        assert!(
            Instant::now() < deadline,
            "the sleeps never started: {sleeps:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let procs: Vec<Proc> = sleeps
        .iter()
        .filter_map(|&pid| stat(pid).map(|(_, start)| Proc { pid, start }))
        .collect();
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    procs
}

#[test]
fn the_issues_kill_9_leaves_none_of_the_eight_processes() {
    let (lab, mark) = setup();
    let procs = sleeps_then_sigkill(&lab, &mark, true);
    let named: BTreeMap<String, Proc> = procs.iter().map(|p| (p.pid.to_string(), *p)).collect();
    assert_no_survivor(&named, &mark);
}

/// The guard catches: with the warden switched off (the test-only
/// `FLAKELAB_TEST_NO_WARDEN`), the same kill leaves the sleeps running, and
/// the session recorded a warning saying so.
#[test]
fn without_the_warden_a_kill_leaves_survivors_and_the_session_says_so() {
    let (lab, mark) = setup();
    let store = lab.store();
    let procs = sleeps_then_sigkill(&lab, &mark, false);
    let survivors: Vec<Proc> = procs.iter().copied().filter(|p| alive(*p)).collect();
    // Clean up what the test's own subject left before asserting.
    for p in &survivors {
        let _ = kill(Pid::from_raw(p.pid), Signal::SIGKILL);
    }
    assert!(
        !survivors.is_empty(),
        "every process ended without the warden: the test no longer shows what the warden does"
    );
    let named: BTreeMap<String, Proc> = procs.iter().map(|p| (p.pid.to_string(), *p)).collect();
    assert_no_survivor(&named, &mark);
    let sessions = std::fs::read_to_string(store.join("sessions.jsonl")).unwrap();
    let session: serde_json::Value =
        serde_json::from_str(sessions.lines().next().unwrap()).unwrap();
    let warning = session["warnings"][0].as_str().unwrap_or_default();
    assert!(warning.contains("no warden"), "{session}");
    let out = lab.run(&["report"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("warning: no warden"), "{table}");
}

/// `flakelab doctor` says whether the guard works, and says so when it
/// does not.
#[test]
fn doctor_reports_the_survivor_guard() {
    let lab = Lab::new();
    let out = lab.run(&["doctor"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("survivor guard"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains(" ok "), "{line}");
    let out = lab
        .cmd()
        .env("FLAKELAB_TEST_NO_WARDEN", "1")
        .arg("doctor")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("survivor guard"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("unavailable"), "{line}");
    assert!(text.contains("fix: without it a flakelab killed"), "{text}");
}

/// Processes carrying `entry` that hold the network namespace `ns`
/// (`net:[INODE]`): inside it, or with a descriptor of it open.
fn holding_namespace(ns: &str, entry: &str) -> Vec<i32> {
    let is_ns = |link: std::io::Result<std::path::PathBuf>| link.is_ok_and(|l| l.as_os_str() == ns);
    processes_with_env(entry)
        .into_iter()
        .filter(|&pid| {
            is_ns(std::fs::read_link(format!("/proc/{pid}/ns/net")))
                || std::fs::read_dir(format!("/proc/{pid}/fd"))
                    .is_ok_and(|d| d.flatten().any(|f| is_ns(std::fs::read_link(f.path()))))
        })
        .collect()
}

/// A `netns` cell's runs share one namespace (not the host's), held by
/// flakelab only while the session lasts; a SIGKILL of flakelab leaves
/// nothing of ours holding it. The guard is shown to catch a holder: while
/// a run sleeps in the namespace, the same scan finds it and flakelab.
#[test]
fn a_netns_cells_namespace_is_shared_by_its_runs_and_held_by_nothing_after_flakelab() {
    let ok = sh_ok(&format!(
        "{} __exec --netns -- true",
        super::bin().display()
    ));
    if !capable("network namespaces", ok) {
        return;
    }
    let (lab, mark) = setup();
    let entry = format!("{}={}", mark.0, mark.1);
    let host = std::fs::read_link("/proc/self/ns/net").unwrap();
    let write_ns = r#"i=${FLAKELAB_RUN_ID##*.}
readlink /proc/self/ns/net > "pids/$i.tmp" && mv "pids/$i.tmp" "pids/$FLAKELAB_CELL.$i"
[ -z "$HOLD" ] || exec sleep 1000"#;
    let out = lab
        .cmd()
        .env(&mark.0, &mark.1)
        .args(["run", "-n", "3", "-p", "netns", "--", "sh", "-c", write_ns])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in std::fs::read_dir(lab.path().join("pids"))
        .unwrap()
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        let cell = name.split('.').next().unwrap().to_string();
        let ns = std::fs::read_to_string(e.path()).unwrap();
        seen.entry(cell).or_default().push(ns.trim().to_string());
    }
    let host = host.to_string_lossy().into_owned();
    assert_eq!(seen["baseline"], vec![host.clone(); 3], "{seen:?}");
    let cell_ns = seen["netns"][0].clone();
    assert_ne!(cell_ns, host);
    assert_eq!(seen["netns"], vec![cell_ns.clone(); 3], "{seen:?}");
    assert_eq!(holding_namespace(&cell_ns, &entry), Vec::<i32>::new());

    // Killed while a run sleeps inside.
    std::fs::remove_dir_all(lab.path().join("pids")).unwrap();
    std::fs::create_dir(lab.path().join("pids")).unwrap();
    let mut child = lab
        .cmd()
        .env(&mark.0, &mark.1)
        .env("HOLD", "1")
        .args([
            "run",
            "-n",
            "2",
            "--no-baseline",
            "--no-sham",
            "-p",
            "netns",
            "--",
        ])
        .args(["sh", "-c", write_ns])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(lab.path().join("stderr")).unwrap())
        .spawn()
        .unwrap();
    // Its first run announces its namespace, then sleeps in it.
    let first = lab.path().join("pids/netns.00000");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !first.exists() {
        if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let err = std::fs::read_to_string(lab.path().join("stderr")).unwrap_or_default();
            let pids: Vec<_> = std::fs::read_dir(lab.path().join("pids"))
                .unwrap()
                .flatten()
                .map(|e| e.file_name())
                .collect();
            panic!("the run never announced its namespace: {pids:?}\n{err}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let ns = std::fs::read_to_string(&first).unwrap().trim().to_string();
    assert_ne!(ns, host);
    let holders = holding_namespace(&ns, &entry);
    assert!(
        holders.contains(&(child.id() as i32)) && holders.len() >= 2,
        "the scan does not see flakelab's descriptor and the sleeping run: {holders:?}"
    );
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    assert_no_survivor(&BTreeMap::new(), &mark);
    assert_eq!(holding_namespace(&ns, &entry), Vec::<i32>::new());
}
