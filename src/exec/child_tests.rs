//! The tests of `exec::child`: real processes, run to their end.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};

use super::*;
use crate::exec::caplog::DRAIN_BOUND;
use crate::exec::inspect::{resolve, SeenProcess};
use crate::exec::procfs::{environ_has, parse_stat};

#[test]
fn status_converts_once() {
    assert_eq!(
        end_from_status(ExitStatus::from_raw(3 << 8)),
        ProcessEnd::Exited { code: 3 }
    );
    assert_eq!(
        end_from_status(ExitStatus::from_raw(9)),
        ProcessEnd::Signaled { signal: 9 }
    );
}

// ---- real processes ----

static NEXT: AtomicU32 = AtomicU32::new(0);

fn unique_marker() -> String {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("exec-test-{}-{n}", std::process::id())
}

fn launch(argv: &[&str], cwd: &Path, marker: &str) -> Launch {
    Launch {
        argv: argv.iter().map(|s| s.to_string()).collect(),
        cwd: cwd.to_path_buf(),
        env_set: BTreeMap::from([(RUN_ID_VAR.to_string(), marker.to_string())]),
        env_unset: Vec::new(),
        isolation: Default::default(),
        netns_cell: None,
        preload_cleanup: None,
        clock_record: false,
    }
}

fn limits() -> ChildLimits {
    ChildLimits {
        // A safety net only; no test here should come near it.
        timeout: Some(Duration::from_secs(60)),
        grace: Duration::from_secs(2),
        log_head: 64 * 1024,
        log_tail: 64 * 1024,
    }
}

struct Run {
    dir: tempfile::TempDir,
    marker: String,
    result: ChildResult,
}

impl Run {
    fn log(&self) -> Vec<u8> {
        std::fs::read(self.dir.path().join("log")).unwrap()
    }
    fn file(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(name)).unwrap()
    }
}

async fn run(argv: &[&str], limits: ChildLimits) -> Run {
    become_subreaper().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let marker = unique_marker();
    let launch = launch(argv, dir.path(), &marker);
    let (_stop, stop_rx) = watch::channel(Stop::Run);
    let log = dir.path().join("log");
    let result = run_child(&launch, limits, Some(&log), &marker, stop_rx).await;
    Run {
        dir,
        marker,
        result,
    }
}

/// Pids of every process on the machine carrying the marker.
fn marked(marker: &str) -> Vec<i32> {
    let entry = format!("{RUN_ID_VAR}={marker}");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| environ_has(&env, entry.as_bytes()))
        })
        .collect()
}

/// Pids (zombies included) in process group `pgid`.
fn group_members(pgid: i32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|raw| parse_stat(&raw))
                .is_some_and(|stat| stat.pgrp == pgid)
        })
        .collect()
}

/// Readiness by polling for a file the child creates.
async fn wait_for_file(path: &Path) {
    let start = std::time::Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{} never appeared",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn exit_code_is_kept() {
    let run = run(&["sh", "-c", "exit 3"], limits()).await;
    assert_eq!(run.result.end, ProcessEnd::Exited { code: 3 });
    assert_eq!(run.result.stragglers, 0);
    assert!(run.result.warnings.is_empty(), "{:?}", run.result.warnings);
}

#[tokio::test]
async fn own_signal_is_signaled() {
    let run = run(&["sh", "-c", "kill -9 $$"], limits()).await;
    assert_eq!(run.result.end, ProcessEnd::Signaled { signal: 9 });
}

#[tokio::test]
async fn missing_program_is_spawn_failed() {
    let run = run(&["flakelab-no-such-program-xyz", "arg"], limits()).await;
    let ProcessEnd::SpawnFailed { message } = &run.result.end else {
        panic!("expected SpawnFailed, got {:?}", run.result.end);
    };
    assert!(
        message.contains("flakelab-no-such-program-xyz"),
        "{message}"
    );
    assert!(message.contains("No such file or directory"), "{message}");
    assert!(run.result.duration < Duration::from_secs(1));
    assert_eq!(run.result.output_bytes, 0);
}

#[tokio::test]
async fn empty_argv_is_spawn_failed() {
    let dir = tempfile::tempdir().unwrap();
    let marker = unique_marker();
    let launch = launch(&[], dir.path(), &marker);
    let (_stop, stop_rx) = watch::channel(Stop::Run);
    let result = run_child(&launch, limits(), None, &marker, stop_rx).await;
    assert!(matches!(result.end, ProcessEnd::SpawnFailed { .. }));
}

#[tokio::test]
async fn output_interleaves_stdout_and_stderr() {
    let run = run(
        &["sh", "-c", "echo one; echo two >&2; echo three"],
        limits(),
    )
    .await;
    assert_eq!(run.result.end, ProcessEnd::Exited { code: 0 });
    assert_eq!(run.log(), b"one\ntwo\nthree\n");
    assert_eq!(run.result.output_bytes, 14);
    assert_eq!(run.result.output_dropped, 0);
}

/// An inherited variable the shell will not recreate on its own (dash
/// invents a default `PATH` when it has none, so `PATH` is no good).
fn inherited_var() -> String {
    let shell_owned = [
        "PATH", "PWD", "OLDPWD", "IFS", "PS1", "PS2", "PS4", "OPTIND", "PPID",
    ];
    let vars: Vec<String> = std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .collect();
    ["HOME", "CARGO_MANIFEST_DIR", "USER", "LANG"]
        .iter()
        .map(|name| name.to_string())
        .find(|name| vars.contains(name))
        .or_else(|| {
            vars.into_iter().find(|name| {
                !shell_owned.contains(&name.as_str())
                    && name.starts_with(|c: char| c.is_ascii_alphabetic())
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
        })
        .expect("the test process inherits at least one plain variable")
}

#[tokio::test]
async fn env_is_set_and_unset() {
    become_subreaper().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let marker = unique_marker();
    let unset = inherited_var();
    let script = format!(
        r#"echo "set=$FLAKELAB_TEST_SET"; echo "unset=${{{unset}-gone}}"; echo "id=$FLAKELAB_RUN_ID""#
    );
    let mut launch = launch(&["sh", "-c", &script], dir.path(), &marker);
    launch
        .env_set
        .insert("FLAKELAB_TEST_SET".into(), "a b".into());
    launch.env_unset.push(unset);
    let log = dir.path().join("log");
    let (_stop, stop_rx) = watch::channel(Stop::Run);
    let result = run_child(&launch, limits(), Some(&log), &marker, stop_rx).await;
    assert_eq!(result.end, ProcessEnd::Exited { code: 0 });
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        format!("set=a b\nunset=gone\nid={marker}\n")
    );
}

#[tokio::test]
async fn missing_marker_is_added_with_a_warning() {
    become_subreaper().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let marker = unique_marker();
    let mut launch = launch(&["sh", "-c", "echo $FLAKELAB_RUN_ID"], dir.path(), &marker);
    launch.env_set.clear();
    let log = dir.path().join("log");
    let (_stop, stop_rx) = watch::channel(Stop::Run);
    let result = run_child(&launch, limits(), Some(&log), &marker, stop_rx).await;
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        format!("{marker}\n")
    );
    assert_eq!(result.warnings.len(), 1, "{:?}", result.warnings);
}

#[tokio::test]
async fn timeout_sends_term() {
    let run = run(
        &["sleep", "100"],
        ChildLimits {
            timeout: Some(Duration::from_millis(300)),
            grace: Duration::from_secs(2),
            ..limits()
        },
    )
    .await;
    assert_eq!(run.result.end, ProcessEnd::TimedOut { signal: 15 });
    assert!(run.result.duration >= Duration::from_millis(300));
    assert!(run.result.duration < Duration::from_secs(5));
    assert_eq!(run.result.stragglers, 0);
}

#[tokio::test]
async fn timeout_escalates_to_kill() {
    let run = run(
        &["sh", "-c", "trap '' TERM; while :; do :; done"],
        ChildLimits {
            timeout: Some(Duration::from_millis(300)),
            grace: Duration::from_millis(300),
            ..limits()
        },
    )
    .await;
    assert_eq!(run.result.end, ProcessEnd::TimedOut { signal: 9 });
    assert!(run.result.duration >= Duration::from_millis(600));
    assert!(run.result.duration < Duration::from_secs(5));
}

#[tokio::test]
async fn setsid_escapee_is_found_and_reaped() {
    // The leader ignores TERM until the escapee has left the session, so
    // the timeout cannot beat the escape; the escapee ignores TERM, so
    // only the sweep can end it.
    let script = r#"trap '' TERM
(exec setsid sh -c 'echo $$ > escaped.tmp; mv escaped.tmp escaped; exec sleep 300') &
echo $$ > leader
until [ -e escaped ]; do sleep 0.01; done
trap - TERM
exec sleep 100"#;
    let run = run(
        &["sh", "-c", script],
        ChildLimits {
            timeout: Some(Duration::from_millis(300)),
            grace: Duration::from_secs(5),
            ..limits()
        },
    )
    .await;
    assert!(
        matches!(run.result.end, ProcessEnd::TimedOut { .. }),
        "{:?}",
        run.result.end
    );
    assert!(run.result.stragglers >= 1);
    assert_eq!(marked(&run.marker), Vec::<i32>::new());
    let escaped: i32 = run.file("escaped").trim().parse().unwrap();
    let leader: i32 = run.file("leader").trim().parse().unwrap();
    assert_ne!(escaped, leader);
    // Gone, not a zombie: it was reaped.
    assert!(!Path::new(&format!("/proc/{escaped}")).exists());
    assert_eq!(group_members(leader), Vec::<i32>::new());
}

#[tokio::test]
async fn leftover_after_exit_is_a_straggler() {
    let run = run(
        &["sh", "-c", "echo $$ > leader; sleep 300 & exit 0"],
        limits(),
    )
    .await;
    assert_eq!(run.result.end, ProcessEnd::Exited { code: 0 });
    assert_eq!(run.result.stragglers, 1);
    assert_eq!(marked(&run.marker), Vec::<i32>::new());
    let leader: i32 = run.file("leader").trim().parse().unwrap();
    assert_eq!(group_members(leader), Vec::<i32>::new());
    assert!(run.result.warnings.is_empty(), "{:?}", run.result.warnings);
}

#[tokio::test]
async fn flood_is_capped() {
    let total: u64 = 100_000_000;
    let run = run(&["head", "-c", "100000000", "/dev/zero"], limits()).await;
    assert_eq!(run.result.end, ProcessEnd::Exited { code: 0 });
    assert_eq!(run.result.output_bytes, total);
    assert_eq!(run.result.output_dropped, total - 131_072);
    let log = run.log();
    let marker = format!(
        "\n[flakelab: {} bytes dropped from the middle of the output]\n",
        total - 131_072
    );
    assert_eq!(log.len(), 131_072 + marker.len());
    assert_eq!(&log[65_536..65_536 + marker.len()], marker.as_bytes());
}

#[tokio::test]
async fn unwritable_log_only_warns() {
    become_subreaper().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let marker = unique_marker();
    let launch = launch(&["sh", "-c", "echo hello"], dir.path(), &marker);
    let log = dir.path().join("missing-dir").join("log");
    let (_stop, stop_rx) = watch::channel(Stop::Run);
    let result = run_child(&launch, limits(), Some(&log), &marker, stop_rx).await;
    assert_eq!(result.end, ProcessEnd::Exited { code: 0 });
    assert_eq!(result.output_bytes, 6);
    assert_eq!(result.warnings.len(), 1, "{:?}", result.warnings);
    assert!(result.warnings[0].contains("cannot create the log"));
}

#[tokio::test]
async fn pipe_held_outside_reach_is_abandoned() {
    // The escapee drops the marker and leaves the group, so the sweep
    // cannot find it; it keeps the output pipe open for 4 s.
    let script = r#"env -u FLAKELAB_RUN_ID setsid sh -c 'touch out; exec sleep 4' &
until [ -e out ]; do sleep 0.01; done
echo done"#;
    let start = Instant::now();
    let run = run(&["sh", "-c", script], limits()).await;
    assert_eq!(run.result.end, ProcessEnd::Exited { code: 0 });
    assert!(start.elapsed() >= DRAIN_BOUND);
    assert!(start.elapsed() < Duration::from_secs(4));
    assert_eq!(run.result.warnings.len(), 1, "{:?}", run.result.warnings);
    assert!(run.result.warnings[0].contains("output pipe was still open"));
    assert_eq!(run.log(), b"done\n");
    assert_eq!(run.result.output_bytes, 5);
}

#[tokio::test]
async fn graceful_stop_interrupts() {
    become_subreaper().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let marker = unique_marker();
    let launch = launch(
        &["sh", "-c", "touch ready; exec sleep 100"],
        dir.path(),
        &marker,
    );
    let grace = Duration::from_secs(5);
    let (stop, stop_rx) = watch::channel(Stop::Run);
    let ready = dir.path().join("ready");
    let run = run_child(
        &launch,
        ChildLimits { grace, ..limits() },
        None,
        &marker,
        stop_rx,
    );
    let control = async {
        wait_for_file(&ready).await;
        stop.send(Stop::Graceful).unwrap();
        Instant::now()
    };
    let (result, sent) = tokio::join!(run, control);
    assert_eq!(result.end, ProcessEnd::Interrupted);
    assert!(sent.elapsed() < grace);
    assert_eq!(marked(&marker), Vec::<i32>::new());
}

#[tokio::test]
async fn kill_cuts_the_grace_short() {
    become_subreaper().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let marker = unique_marker();
    let launch = launch(
        &["sh", "-c", "trap '' TERM; touch ready; while :; do :; done"],
        dir.path(),
        &marker,
    );
    let grace = Duration::from_secs(30);
    let (stop, stop_rx) = watch::channel(Stop::Run);
    let ready = dir.path().join("ready");
    let run = run_child(
        &launch,
        ChildLimits { grace, ..limits() },
        None,
        &marker,
        stop_rx,
    );
    let control = async {
        wait_for_file(&ready).await;
        stop.send(Stop::Graceful).unwrap();
        // The TERM is ignored; the second request escalates at once.
        stop.send(Stop::Kill).unwrap();
        Instant::now()
    };
    let (result, sent) = tokio::join!(run, control);
    assert_eq!(result.end, ProcessEnd::Interrupted);
    assert!(sent.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn stop_before_start_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let marker = unique_marker();
    let launch = launch(&["sh", "-c", "touch started"], dir.path(), &marker);
    let (_stop, stop_rx) = watch::channel(Stop::Graceful);
    let result = run_child(&launch, limits(), None, &marker, stop_rx).await;
    assert_eq!(result.end, ProcessEnd::Interrupted);
    assert!(!dir.path().join("started").exists());
}

// ---- the inspection of a watched run (`exec::inspect`) ----

fn watched_launch(argv: &[&str], cwd: &Path, marker: &str) -> (Launch, Watch) {
    let launch = Launch {
        argv: argv.iter().map(|s| s.to_string()).collect(),
        cwd: cwd.to_path_buf(),
        env_set: BTreeMap::from([
            (RUN_ID_VAR.to_string(), marker.to_string()),
            ("FAKETIME".to_string(), "+1d".to_string()),
        ]),
        env_unset: Vec::new(),
        isolation: Default::default(),
        netns_cell: None,
        preload_cleanup: None,
        clock_record: false,
    };
    let watch = Watch {
        env: vec!["FAKETIME".into()],
        execs: vec![argv[0].to_string()],
    };
    (launch, watch)
}

async fn watched(argv: &[&str], dir: &Path) -> Vec<SeenProcess> {
    become_subreaper().unwrap();
    let marker = format!(
        "inspect-test-{}-{}",
        std::process::id(),
        argv.join("_").len()
    );
    let (launch, watch) = watched_launch(argv, dir, &marker);
    let limits = ChildLimits {
        timeout: Some(Duration::from_secs(60)),
        grace: Duration::from_secs(2),
        log_head: 1024,
        log_tail: 1024,
    };
    let (_stop, rx) = watch::channel(Stop::Run);
    let result = run_child_watched(&launch, limits, None, &marker, Some(&watch), rx).await;
    result.processes.expect("a watched run lists its processes")
}

#[tokio::test]
async fn a_leader_that_ends_at_once_is_known_from_its_launch() {
    let dir = tempfile::tempdir().unwrap();
    let seen = watched(&["true"], dir.path()).await;
    let truth = std::fs::canonicalize(
        resolve("true", &std::env::var("PATH").unwrap(), dir.path()).unwrap(),
    )
    .unwrap();
    assert_eq!(seen[0].exe.as_deref(), Some(truth.to_str().unwrap()));
    assert_eq!(seen[0].parent, None);
    assert_eq!(seen[0].static_linked, Some(false));
    assert_eq!(seen[0].go, Some(false));
    assert_eq!(seen[0].secure, Some(false));
    assert_eq!(seen[0].env.as_ref().unwrap()["FAKETIME"], "+1d");
    assert!(seen.iter().all(|p| p.exe == seen[0].exe), "{seen:?}");
}

#[tokio::test]
async fn what_outlives_the_leader_is_seen_before_the_sweep() {
    // The escapee is alive when the leader ends, whatever the timing:
    // the last look finds it among our children by its marker.
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("run.sh");
    std::fs::write(
        &script,
        // Readiness: the escapee's own exe is `sleep` before the leader ends.
        "#!/bin/sh\ns=$(readlink -f \"$(command -v sleep)\")\n\
         setsid env FAKETIME=+2d sleep 30 &\n\
         i=0; until [ \"$(readlink /proc/$!/exe)\" = \"$s\" ]; do\n\
         i=$((i+1)); [ $i -gt 3000 ] && exit 1; sleep 0.01; done\nexit 0\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let seen = watched(&["./run.sh"], dir.path()).await;
    let sh = std::fs::canonicalize("/bin/sh").unwrap();
    assert_eq!(
        seen[0].exe.as_deref(),
        Some(sh.to_str().unwrap()),
        "{seen:?}"
    );
    // The loop's own `sleep 0.01` may be seen too; the escapee is the
    // one with its own FAKETIME.
    let escaped = seen.iter().find(|p| {
        p.exe.as_deref().is_some_and(|e| e.ends_with("/sleep"))
            && p.env.as_ref().is_some_and(|e| e["FAKETIME"] == "+2d")
    });
    let escaped = escaped.unwrap_or_else(|| panic!("the escaped sleep was not seen: {seen:?}"));
    assert_eq!(escaped.static_linked, Some(false));
}
