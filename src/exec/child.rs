//! One child process per run: spawn it in its own process group, capture its
//! output into a capped log, enforce the timeout, honour session stops, and
//! sweep whatever it left behind.
//!
//! The pieces that do not touch the OS (the head/tail log cap and the `/proc`
//! parsers) are small synchronous functions with their own tests; the async
//! part only wires them to tokio and nix.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::signal::{kill, killpg, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{pipe2, Pid};
use serde::{Deserialize, Serialize};
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStdout};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::inspect::{Inspector, SeenProcess, Watch, Watcher, POLL_MIN};
use super::setup::{Armed, Isolation};
use super::warden;
use super::{leftovers, spawn};
use crate::record::ProcessEnd;

/// The variable that marks every process of a run. Its value (the run's
/// marker) is inherited by every descendant, which is how processes that left
/// the run's process group are found again.
pub const RUN_ID_VAR: &str = "FLAKELAB_RUN_ID";

/// Size of the buffer the output pipe is read with.
const READ_BUF: usize = 64 * 1024;
/// How many kill-and-rescan rounds the sweep makes at most.
const SWEEP_ROUNDS: usize = 100;
/// Pause between sweep rounds, so killed processes get to die.
const SWEEP_PAUSE: Duration = Duration::from_millis(10);
/// How long to wait for the output pipe to close after the sweep.
const DRAIN_BOUND: Duration = Duration::from_secs(2);

/// What to start: exact argv (no shell unless argv itself is `sh -c …`), cwd,
/// env changes on top of the inherited environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    /// The program (`argv[0]`, looked up in `PATH` when it has no slash) and
    /// its arguments.
    pub argv: Vec<String>,
    /// The working directory.
    pub cwd: PathBuf,
    /// Variables set on top of the inherited environment. Applied after
    /// `env_unset`, so a name in both is set.
    pub env_set: BTreeMap<String, String>,
    /// Inherited variables removed.
    pub env_unset: Vec<String>,
    /// Set up in the child between fork and exec ([`super::setup`]): a new
    /// network namespace, limits, CPU affinity.
    #[serde(default, skip_serializing_if = "Isolation::is_empty")]
    pub isolation: Isolation,
}

/// Limits for one child.
#[derive(Debug, Clone, Copy)]
pub struct ChildLimits {
    /// Time from spawn after which the group gets SIGTERM (None: no limit).
    pub timeout: Option<Duration>,
    /// Time between SIGTERM and SIGKILL, for timeouts and graceful stops.
    pub grace: Duration,
    /// Bytes kept from the start of the output.
    pub log_head: usize,
    /// Bytes kept from the end of the output.
    pub log_tail: usize,
}

/// How the session asks running children to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Keep going.
    Run,
    /// SIGTERM to the group, wait the grace period, then SIGKILL.
    Graceful,
    /// SIGKILL to the group now (also cuts a grace period short).
    Kill,
}

/// How one child ended and what it left behind.
#[derive(Debug, Clone)]
pub struct ChildResult {
    /// How the process ended.
    pub end: ProcessEnd,
    /// From just before spawn to the end of the group leader (monotonic).
    pub duration: Duration,
    /// Bytes the child wrote to stdout and stderr together.
    pub output_bytes: u64,
    /// Bytes left out of the log by the head/tail cap
    /// (`output_bytes - log_head - log_tail`, at least 0).
    pub output_dropped: u64,
    /// Distinct processes of the run found alive after the leader ended
    /// (group members and escaped descendants); all were killed.
    pub stragglers: u32,
    /// Problems that did not change the end (log not writable, pipe held
    /// open, a sweep that gave up, …).
    pub warnings: Vec<String>,
    /// The programs the run's processes ran, when the run was watched
    /// ([`run_child_watched`]).
    pub processes: Option<Vec<SeenProcess>>,
}

impl ChildResult {
    /// A result for a child that never ran.
    fn not_run(end: ProcessEnd, warnings: Vec<String>) -> Self {
        ChildResult {
            end,
            duration: Duration::ZERO,
            output_bytes: 0,
            output_dropped: 0,
            stragglers: 0,
            warnings,
            processes: None,
        }
    }
}

/// Makes this process a child subreaper (prctl `PR_SET_CHILD_SUBREAPER`) so
/// orphans of runs reparent to us. Idempotent.
pub fn become_subreaper() -> io::Result<()> {
    nix::sys::prctl::set_child_subreaper(true).map_err(io::Error::from)
}

/// Runs one child to its end. `marker` is the value of the `FLAKELAB_RUN_ID`
/// variable that `launch.env_set` gives the child (every descendant inherits
/// it); it is how escaped descendants are found.
///
/// The child runs in its own process group (not its own session), with stdin
/// from `/dev/null` and stdout and stderr on one pipe, so `log` interleaves as
/// a terminal would. After every end (normal, timeout, stop) the group and
/// every live process carrying the marker are killed, and those reparented to
/// us are reaped. Call [`become_subreaper`] once before the first run so that
/// escaped descendants reparent to this process.
///
/// If `stop` already asks to stop, nothing is started (and no log is
/// written): the end is [`ProcessEnd::Interrupted`]. If the launch does not
/// set `FLAKELAB_RUN_ID` to `marker`, the child gets it anyway and a warning
/// says so.
pub async fn run_child(
    launch: &Launch,
    limits: ChildLimits,
    log: Option<&Path>,
    marker: &str,
    stop: watch::Receiver<Stop>,
) -> ChildResult {
    run_child_watched(launch, limits, log, marker, None, stop).await
}

/// [`run_child`], inspecting the run's processes while it runs when `watch`
/// says what to look for (`exec::inspect`, on a thread of its own): the
/// programs the launch execs, then every process of the run every
/// [`POLL_MIN`] or more, and once more when the
/// leader has ended, before the sweep. The programs seen are in
/// [`ChildResult::processes`].
pub async fn run_child_watched(
    launch: &Launch,
    limits: ChildLimits,
    log: Option<&Path>,
    marker: &str,
    watch: Option<&Watch>,
    mut stop: watch::Receiver<Stop>,
) -> ChildResult {
    let mut warnings = Vec::new();
    let initial = *stop.borrow();
    if initial != Stop::Run {
        return ChildResult::not_run(ProcessEnd::Interrupted, warnings);
    }
    let Some((program, _)) = launch.argv.split_first() else {
        return ChildResult::not_run(spawn_failed("the command line is empty".into()), warnings);
    };
    let (pipe, write_out) = match output_pipe() {
        Ok(ends) => ends,
        Err(err) => {
            let message = format!("cannot set up the output pipe for `{program}`: {err}");
            return ChildResult::not_run(spawn_failed(message), warnings);
        }
    };
    let lacks_marker = launch.env_set.get(RUN_ID_VAR).map(String::as_str) != Some(marker);
    if lacks_marker {
        warnings.push(format!(
            "the launch does not set {RUN_ID_VAR}={marker}; it was added so escaped processes can be found"
        ));
    }
    let cannot_start = |err: io::Error| {
        format!(
            "cannot start `{program}` in {}: {err}",
            launch.cwd.display()
        )
    };

    let sink = log.map(LazyFile::new);
    let cap = CapLog::new(sink, limits.log_head, limits.log_tail);

    let armed = if launch.isolation.is_empty() {
        None
    } else {
        // A cell's runs in a session enter the cell's one namespace.
        let cell_netns = match launch.env_set.get("FLAKELAB_CELL") {
            Some(cell) if launch.isolation.netns => {
                super::cellns::for_cell(&super::cellns::key(marker, cell))
            }
            _ => None,
        };
        match Armed::new(&launch.isolation, cell_netns) {
            Ok(armed) => Some(armed),
            Err(message) => return ChildResult::not_run(spawn_failed(message), warnings),
        }
    };

    // Files the run's preload leaves behind are told apart by this.
    let wall_started = std::time::SystemTime::now();
    let (started, spawned) = match armed {
        Some(armed) if !armed.may_share_memory() => spawn_std(
            launch,
            marker,
            lacks_marker,
            write_out,
            armed,
            &cannot_start,
        ),
        armed => {
            // Our own spawn (`exec::spawn`), the setup (if any) in the child.
            let prepared =
                spawn::Prepared::new(launch, lacks_marker.then_some((RUN_ID_VAR, marker)));
            // The warden learns the marker before the spawn: a flakelab killed
            // from here on leaves nothing of this run behind.
            warden::enlist(marker);
            let started = Instant::now();
            let fd = write_out.as_raw_fd();
            let spawned =
                prepared.and_then(|prepared| spawn::spawn(&prepared, fd, fd, armed.as_ref()));
            // EOF only comes once our copy of the write end is closed.
            drop(write_out);
            let setup_failure = armed.and_then(|a| a.failure(spawned.is_err()));
            let spawned = spawned
                .map(Leader::Own)
                .map_err(|err| setup_failure.unwrap_or_else(|| cannot_start(err)));
            (started, spawned)
        }
    };
    let mut child = match spawned {
        Ok(child) => child,
        Err(message) => {
            warden::release(marker);
            let mut result = ChildResult::not_run(spawn_failed(message), warnings);
            result.duration = started.elapsed();
            return result;
        }
    };
    let Some(pgid) = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .filter(|&id| id > 0)
    else {
        // Unreachable in practice: the id is known until the child is reaped.
        let message = format!("lost the process id of `{program}` right after spawning it");
        return ChildResult::not_run(spawn_failed(message), warnings);
    };
    let pgid = Pid::from_raw(pgid);
    warden::grouped(marker, pgid.as_raw());
    let guard = GroupGuard { pgid: Some(pgid) };
    // The spawn returns once the leader has exec'd: its programs are known
    // from their files at once.
    let inspector = watch.map(|w| Inspector::start(w, launch, marker, pgid.as_raw()));

    let (cancel, cancelled) = oneshot::channel();
    let reader = tokio::spawn(drain(pipe, cap, cancelled));

    let deadline = limits.timeout.map(|timeout| started + timeout);
    let supervised = supervise(
        &mut child,
        pgid,
        deadline,
        limits.grace,
        &mut stop,
        &mut warnings,
    );
    // A run that lasts past the first pause gets its processes looked at
    // while it runs, on a thread of their own; a shorter one costs no thread.
    let (end, watched) = match inspector {
        None => (supervised.await, Watched::No),
        Some(inspector) => {
            tokio::pin!(supervised);
            tokio::select! {
                biased;
                end = &mut supervised => (end, Watched::Briefly(Box::new(inspector))),
                () = tokio::time::sleep(POLL_MIN) => {
                    let watcher = Watcher::start(inspector);
                    (supervised.await, Watched::Running(watcher))
                }
            }
        }
    };
    let duration = started.elapsed();

    // What outlived the leader is looked at before the sweep kills it.
    let processes = match watched {
        Watched::No => None,
        Watched::Briefly(inspector) => Some(inspector.last_look()),
        Watched::Running(watcher) => watcher.finish(&mut warnings).await,
    };
    let stragglers = sweep(pgid, marker, &mut warnings).await;
    if launch.env_set.contains_key(leftovers::FAKETIME_VAR) {
        let seen = processes.iter().flatten().map(|p| p.pid);
        let cleaned = leftovers::remove_faketime_files(pgid.as_raw(), seen, wall_started);
        for path in cleaned.stale {
            warnings.push(format!(
                "{} was in /dev/shm before this run, left by an earlier process with the leader's pid: if libfaketime loaded in the leader, it found the file in its way (libfaketime then runs without its shared segment, or exits when only the segment is there); it was not removed, as it is not this run's",
                path.display()
            ));
        }
    }
    guard.disarm();
    warden::release(marker);

    let drained = finish_drain(reader, cancel, &mut warnings).await;
    let (output_bytes, output_dropped) = match drained {
        Some(summary) => {
            if let Some(failure) = summary.failure {
                let path = log.map(|p| p.display().to_string()).unwrap_or_default();
                warnings.push(format!(
                    "writing the log {path} failed: {failure}; the output was still drained and counted"
                ));
            }
            (summary.total, summary.dropped)
        }
        None => (0, 0),
    };

    ChildResult {
        end,
        duration,
        output_bytes,
        output_dropped,
        stragglers: u32::try_from(stragglers).unwrap_or(u32::MAX),
        warnings,
        processes,
    }
}

/// Starts a launch whose setup needs a real fork (a new user namespace)
/// through tokio's (std's) spawn, with the setup as its `pre_exec` step.
fn spawn_std(
    launch: &Launch,
    marker: &str,
    lacks_marker: bool,
    write_out: OwnedFd,
    armed: Armed,
    cannot_start: &dyn Fn(io::Error) -> String,
) -> (Instant, Result<Leader, String>) {
    let program = launch.argv.first().map_or("", String::as_str);
    let args = launch.argv.get(1..).unwrap_or_default();
    let write_err = match write_out.try_clone() {
        Ok(fd) => fd,
        Err(err) => {
            let message = format!("cannot set up the output pipe for `{program}`: {err}");
            return (Instant::now(), Err(message));
        }
    };
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args).current_dir(&launch.cwd);
    for name in &launch.env_unset {
        cmd.env_remove(name);
    }
    cmd.envs(&launch.env_set);
    if lacks_marker {
        cmd.env(RUN_ID_VAR, marker);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::from(write_out))
        .stderr(Stdio::from(write_err))
        .process_group(0)
        .kill_on_drop(false);
    armed.install(cmd.as_std_mut());
    warden::enlist(marker);
    let started = Instant::now();
    let spawned = cmd.spawn();
    // The Command keeps the Stdio values (our copies of the pipe's write
    // ends) alive; EOF only comes once they are closed.
    drop(cmd);
    let setup_failure = armed.failure(spawned.is_err());
    let spawned = spawned
        .map(Leader::Std)
        .map_err(|err| setup_failure.unwrap_or_else(|| cannot_start(err)));
    (started, spawned)
}

/// How a run's processes were inspected.
enum Watched {
    /// Not at all (nothing to watch).
    No,
    /// The run ended before the first look: what outlived it is looked at
    /// here.
    Briefly(Box<Inspector>),
    /// Looked at while it ran.
    Running(Watcher),
}

fn spawn_failed(message: String) -> ProcessEnd {
    ProcessEnd::SpawnFailed { message }
}

/// Creates the output pipe: the async read end and the write end (the
/// child's stdout and stderr). Both ends are close-on-exec, so a child
/// spawned concurrently by another run never inherits them; the spawn dup2s
/// the write end onto fds 1 and 2, which clears the flag there.
fn output_pipe() -> io::Result<(ChildStdout, OwnedFd)> {
    let (read, write) = pipe2(OFlag::O_CLOEXEC)?;
    // tokio's `net` feature (pipe::Receiver, AsyncFd) is not enabled; the
    // process feature can register any pipe read end through ChildStdout.
    // This sets O_NONBLOCK on the read end's open file description only.
    let read = ChildStdout::from_std(std::process::ChildStdout::from(read))?;
    Ok((read, write))
}

/// A run's group leader, as started by our own spawn or by std's.
enum Leader {
    /// Started by `exec::spawn` (no setup before exec).
    Own(spawn::Leader),
    /// Started by tokio's (std's) spawn, with a `pre_exec` setup.
    Std(Child),
}

impl Leader {
    fn id(&self) -> Option<u32> {
        match self {
            Leader::Own(leader) => Some(leader.id()),
            Leader::Std(child) => child.id(),
        }
    }

    /// Waits for the leader's end and reaps it (once; later calls return the
    /// same status).
    async fn wait(&mut self) -> io::Result<ExitStatus> {
        match self {
            Leader::Own(leader) => leader.wait().await,
            Leader::Std(child) => child.wait().await,
        }
    }

    /// SIGKILL to the leader itself, unless it has been reaped.
    fn start_kill(&mut self) -> io::Result<()> {
        match self {
            Leader::Own(leader) => leader.start_kill(),
            Leader::Std(child) => child.start_kill(),
        }
    }
}

/// SIGKILLs the group if `run_child` is dropped before its sweep finished.
struct GroupGuard {
    pgid: Option<Pid>,
}

impl GroupGuard {
    fn disarm(mut self) {
        self.pgid = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid {
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}

/// Waits for the leader to end, the deadline, or a stop request, and ends the
/// group accordingly. Returns once the leader has been reaped.
async fn supervise(
    child: &mut Leader,
    pgid: Pid,
    deadline: Option<Instant>,
    grace: Duration,
    stop: &mut watch::Receiver<Stop>,
    warnings: &mut Vec<String>,
) -> ProcessEnd {
    let timer = async {
        match deadline {
            Some(deadline) => tokio::time::sleep_until(deadline).await,
            None => std::future::pending().await,
        }
    };
    // Biased: a leader that has already ended keeps its own end even when
    // the deadline or a stop request is ready at the same time.
    tokio::select! {
        biased;
        status = child.wait() => match status {
            Ok(status) => end_from_status(status),
            Err(err) => {
                // The group is still swept, so a live leader is killed there.
                spawn_failed(format!("lost track of the child while waiting for it: {err}"))
            }
        },
        () = timer => {
            let signal = terminate(child, pgid, grace, stop, warnings).await;
            ProcessEnd::TimedOut { signal }
        }
        request = stop_requested(stop) => {
            if request == Stop::Kill {
                kill_now(child, pgid, warnings).await;
            } else {
                terminate(child, pgid, grace, stop, warnings).await;
            }
            ProcessEnd::Interrupted
        }
    }
}

/// Resolves with the first non-`Run` value; never, if the sender is gone.
async fn stop_requested(stop: &mut watch::Receiver<Stop>) -> Stop {
    let request = stop.wait_for(|s| *s != Stop::Run).await.map(|r| *r);
    match request {
        Ok(request) => request,
        Err(_) => std::future::pending().await,
    }
}

/// Resolves once `Stop::Kill` is asked for; never, if the sender is gone.
async fn kill_requested(stop: &mut watch::Receiver<Stop>) {
    let failed = stop.wait_for(|s| *s == Stop::Kill).await.is_err();
    if failed {
        std::future::pending::<()>().await;
    }
}

/// SIGTERM to the group, up to `grace` for the leader, then SIGKILL. Returns
/// the last signal sent.
async fn terminate(
    child: &mut Leader,
    pgid: Pid,
    grace: Duration,
    stop: &mut watch::Receiver<Stop>,
    warnings: &mut Vec<String>,
) -> i32 {
    signal_group(pgid, Signal::SIGTERM, warnings);
    let escalate = tokio::select! {
        biased;
        status = child.wait() => {
            if let Err(err) = status {
                warn_once(warnings, format!("waiting for the child after SIGTERM failed: {err}"));
            }
            false
        }
        () = tokio::time::sleep(grace) => true,
        () = kill_requested(stop) => true,
    };
    if escalate {
        kill_now(child, pgid, warnings).await;
        Signal::SIGKILL as i32
    } else {
        Signal::SIGTERM as i32
    }
}

/// SIGKILL to the group and the leader, then reap the leader.
async fn kill_now(child: &mut Leader, pgid: Pid, warnings: &mut Vec<String>) {
    signal_group(pgid, Signal::SIGKILL, warnings);
    // In case the leader moved to another group. tokio knows whether it has
    // been reaped, so this never hits a recycled pid.
    let _ = child.start_kill();
    if let Err(err) = child.wait().await {
        warn_once(
            warnings,
            format!("waiting for the child after SIGKILL failed: {err}"),
        );
    }
}

fn signal_group(pgid: Pid, signal: Signal, warnings: &mut Vec<String>) {
    match killpg(pgid, signal) {
        Ok(()) | Err(Errno::ESRCH) => {}
        Err(err) => warn_once(
            warnings,
            format!("cannot send {signal} to process group {pgid}: {err}"),
        ),
    }
}

fn warn_once(warnings: &mut Vec<String>, warning: String) {
    if !warnings.contains(&warning) {
        warnings.push(warning);
    }
}

/// Converts the leader's wait status, once.
fn end_from_status(status: ExitStatus) -> ProcessEnd {
    if let Some(code) = status.code() {
        ProcessEnd::Exited { code }
    } else if let Some(signal) = status.signal() {
        ProcessEnd::Signaled { signal }
    } else {
        spawn_failed(format!("unexpected wait status {status}"))
    }
}

/// Kills everything the run left behind and returns how many distinct
/// processes were found alive. Each round scans `/proc` for members of the
/// group and for processes carrying the marker, SIGKILLs the live ones and
/// reaps the dead ones reparented to us, until a round finds nothing to do.
async fn sweep(pgid: Pid, marker: &str, warnings: &mut Vec<String>) -> usize {
    let me = Pid::this();
    let entry = format!("{RUN_ID_VAR}={marker}").into_bytes();
    if nothing_left(pgid, &entry) {
        return 0;
    }
    let mut seen: BTreeSet<i32> = BTreeSet::new();
    let mut group_exists = true;
    for _ in 0..SWEEP_ROUNDS {
        let found = match scan_proc(me.as_raw(), pgid.as_raw(), &entry, &seen) {
            Ok(found) => found,
            Err(err) => {
                warn_once(
                    warnings,
                    format!("cannot scan /proc for leftover processes: {err}"),
                );
                Vec::new()
            }
        };
        // Scan first, then kill, so the count sees processes while alive.
        // Stop once the group is gone: its id could then be recycled.
        if group_exists {
            match killpg(pgid, Signal::SIGKILL) {
                Err(Errno::ESRCH) => group_exists = false,
                Ok(()) => {}
                Err(err) => warn_once(warnings, format!("cannot kill process group {pgid}: {err}")),
            }
        }
        let mut busy = false;
        for proc in &found {
            let pid = Pid::from_raw(proc.pid);
            if proc.stat.alive() {
                seen.insert(proc.pid);
                busy = true;
                match kill(pid, Signal::SIGKILL) {
                    Ok(()) | Err(Errno::ESRCH) => {}
                    Err(err) => warn_once(
                        warnings,
                        format!("cannot kill leftover process {pid}: {err}"),
                    ),
                }
            } else if proc.stat.ppid == me.as_raw() {
                // Reparented to us (we are the subreaper). Only this pid:
                // waitpid(-1) would steal tokio's children.
                match waitpid(pid, Some(WaitPidFlag::WNOHANG)) {
                    Ok(WaitStatus::StillAlive) | Err(Errno::EINTR) => busy = true,
                    Ok(_) | Err(Errno::ECHILD) => {}
                    Err(err) => warn_once(
                        warnings,
                        format!("cannot reap leftover process {pid}: {err}"),
                    ),
                }
            }
        }
        if !busy {
            return seen.len();
        }
        tokio::time::sleep(SWEEP_PAUSE).await;
    }
    warnings.push(format!(
        "gave up sweeping after {SWEEP_ROUNDS} rounds; processes of this run may still be alive"
    ));
    seen.len()
}

/// The fast path of the sweep, which keeps the per-run cost near a bare
/// fork/exec: true when the group is empty (not even a zombie is left in it)
/// and none of our direct children carries the run's marker. Anything that
/// escaped the group has, by then, been reparented to us (the subreaper) or
/// has an ancestor that was, because every ancestor inside the group is
/// gone; so it is enough to look at our own children. Returns false (take
/// the full `/proc` scan) whenever it cannot be sure.
fn nothing_left(pgid: Pid, entry: &[u8]) -> bool {
    if !matches!(killpg(pgid, None), Err(Errno::ESRCH)) {
        return false;
    }
    let Ok(children) = super::children::list() else {
        return false;
    };
    // The warden is our child and no run's: its environment is empty.
    let warden = warden::pid();
    for pid in children {
        if Some(pid) == warden {
            continue;
        }
        match std::fs::read(format!("/proc/{pid}/environ")) {
            Ok(environ) if environ_has(&environ, entry) => return false,
            _ => {}
        }
    }
    true
}

/// A process of the run, as seen in `/proc`.
#[derive(Debug)]
struct Found {
    pid: i32,
    stat: ProcStat,
}

/// Lists the run's processes: members of group `pgid`, live processes whose
/// environment has exactly `entry`, and dead processes already in `seen`
/// (a zombie's environment reads as empty). Skips `me` and anything that
/// vanishes or cannot be read.
fn scan_proc(me: i32, pgid: i32, entry: &[u8], seen: &BTreeSet<i32>) -> io::Result<Vec<Found>> {
    let mut found = Vec::new();
    for (pid, stat) in proc_stats(me)? {
        let ours = stat.pgrp == pgid
            || if stat.alive() {
                std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|environ| environ_has(&environ, entry))
            } else {
                seen.contains(&pid)
            };
        if ours {
            found.push(Found { pid, stat });
        }
    }
    Ok(found)
}

/// Every process in `/proc` but `me`, with its stat; those that vanish or
/// cannot be read while the directory is walked are skipped.
pub(super) fn proc_stats(me: i32) -> io::Result<impl Iterator<Item = (i32, ProcStat)>> {
    Ok(std::fs::read_dir("/proc")?
        .flatten()
        .filter_map(move |dirent| {
            let pid = dirent.file_name().to_str()?.parse::<i32>().ok()?;
            if pid == me {
                return None;
            }
            let stat = parse_stat(&std::fs::read(format!("/proc/{pid}/stat")).ok()?)?;
            Some((pid, stat))
        }))
}

/// The fields of `/proc/PID/stat` the sweep and the inspection need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ProcStat {
    /// State letter (`R`, `S`, `D`, `Z`, …).
    pub(super) state: u8,
    /// Parent pid.
    pub(super) ppid: i32,
    /// Process group id.
    pub(super) pgrp: i32,
    /// Start time after boot, in clock ticks (tells a recycled pid apart).
    pub(super) start: u64,
}

impl ProcStat {
    /// Not a zombie or dead.
    pub(super) fn alive(&self) -> bool {
        !matches!(self.state, b'Z' | b'X' | b'x')
    }
}

/// Parses `/proc/PID/stat`: `pid (comm) state ppid pgrp … starttime …`. The
/// command name may hold spaces, parentheses and non-UTF-8 bytes, so fields
/// are counted from the last `)`. The start time (field 22) is 0 when a
/// short line lacks it.
pub(super) fn parse_stat(raw: &[u8]) -> Option<ProcStat> {
    let close = raw.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(raw.get(close + 1..)?).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.as_bytes();
    let [state] = state else { return None };
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    // Fields 6 to 21 come before the start time.
    let start = fields.nth(16).and_then(|f| f.parse().ok()).unwrap_or(0);
    Some(ProcStat {
        state: *state,
        ppid,
        pgrp,
        start,
    })
}

/// Whether a NUL-separated environment block (`/proc/PID/environ`) has
/// exactly `entry` (`NAME=value`) as one of its entries.
pub(super) fn environ_has(environ: &[u8], entry: &[u8]) -> bool {
    environ.split(|&b| b == 0).any(|e| e == entry)
}

/// What the reader task hands back.
struct Drained {
    summary: CapSummary,
    read_error: Option<String>,
}

/// Reads the output pipe to EOF (or until cancelled) into the capped log.
async fn drain(
    mut pipe: ChildStdout,
    mut cap: CapLog<LazyFile>,
    mut cancelled: oneshot::Receiver<()>,
) -> Drained {
    // Read into spare capacity (`read_buf`): a zeroed 64 KiB buffer per
    // run was the largest single cost of a short run in the harness
    // (callgrind: about a fifth of its instructions per run of /bin/true).
    let mut buf = Vec::with_capacity(READ_BUF);
    let mut read_error = None;
    loop {
        buf.clear();
        tokio::select! {
            biased;
            _ = &mut cancelled => break,
            read = pipe.read_buf(&mut buf) => match read {
                Ok(0) => break,
                Ok(n) => cap.push(&buf[..n]),
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => {
                    read_error = Some(err.to_string());
                    break;
                }
            },
        }
    }
    Drained {
        summary: cap.finish(),
        read_error,
    }
}

/// Waits (bounded) for the reader to see EOF; abandons the pipe if something
/// outside our reach still holds it open.
async fn finish_drain(
    mut reader: JoinHandle<Drained>,
    cancel: oneshot::Sender<()>,
    warnings: &mut Vec<String>,
) -> Option<CapSummary> {
    let joined = match tokio::time::timeout(DRAIN_BOUND, &mut reader).await {
        Ok(joined) => joined,
        Err(_) => {
            warnings.push(format!(
                "the output pipe was still open {}s after the run was swept (a process outside \
                 the run's group without its {RUN_ID_VAR} holds it); stopped reading",
                DRAIN_BOUND.as_secs()
            ));
            let _ = cancel.send(());
            reader.await
        }
    };
    match joined {
        Ok(drained) => {
            if let Some(err) = drained.read_error {
                warnings.push(format!(
                    "reading the output failed: {err}; the rest was lost"
                ));
            }
            Some(drained.summary)
        }
        Err(err) => {
            warnings.push(format!("the output reader failed: {err}"));
            None
        }
    }
}

/// The line written between head and tail when bytes were dropped.
fn dropped_marker(dropped: u64) -> String {
    format!("\n[flakelab: {dropped} bytes dropped from the middle of the output]\n")
}

/// Totals of a capped log.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CapSummary {
    /// Bytes pushed.
    total: u64,
    /// Bytes beyond head + tail, left out of the log.
    dropped: u64,
    /// The first write error, after which the sink was dropped.
    failure: Option<String>,
}

/// A log file created on the first byte written: a run that prints nothing
/// costs no file (creating one is the largest fixed cost of a quiet run).
#[derive(Debug)]
struct LazyFile {
    path: PathBuf,
    file: Option<File>,
}

impl LazyFile {
    fn new(path: &Path) -> Self {
        LazyFile {
            path: path.to_path_buf(),
            file: None,
        }
    }
}

impl Write for LazyFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let file = match &mut self.file {
            Some(file) => file,
            None => self.file.insert(File::create(&self.path).map_err(|err| {
                io::Error::new(
                    err.kind(),
                    format!("cannot create the log {}: {err}", self.path.display()),
                )
            })?),
        };
        file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.as_mut().map_or(Ok(()), Write::flush)
    }
}

/// A streaming head/tail cap: the first `head` bytes go straight to the sink,
/// the last `tail` bytes are kept in a ring and written by
/// [`CapLog::finish`], after a marker line when bytes were dropped. Memory is
/// bounded by `tail`. A write error drops the sink; counting goes on.
struct CapLog<W: Write> {
    sink: Option<W>,
    head: u64,
    tail: u64,
    total: u64,
    ring: TailRing,
    failure: Option<String>,
}

impl<W: Write> CapLog<W> {
    fn new(sink: Option<W>, head: usize, tail: usize) -> Self {
        // Without a sink the tail is never written, so it is not kept either.
        let ring_cap = if sink.is_some() { tail } else { 0 };
        CapLog {
            sink,
            head: head as u64,
            tail: tail as u64,
            total: 0,
            ring: TailRing::new(ring_cap),
            failure: None,
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        let head_room = self.head.saturating_sub(self.total);
        let split = usize::try_from(head_room).map_or(chunk.len(), |room| room.min(chunk.len()));
        self.total += chunk.len() as u64;
        let (head, rest) = chunk.split_at(split);
        if !head.is_empty() {
            self.write(head);
        }
        if !rest.is_empty() && self.sink.is_some() {
            self.ring.push(rest);
        }
    }

    fn write(&mut self, bytes: &[u8]) {
        if let Some(sink) = &mut self.sink {
            if let Err(err) = sink.write_all(bytes) {
                self.fail(err);
            }
        }
    }

    fn fail(&mut self, err: io::Error) {
        self.failure.get_or_insert_with(|| err.to_string());
        self.sink = None;
        self.ring = TailRing::new(0);
    }

    fn dropped(&self) -> u64 {
        self.total
            .saturating_sub(self.head.saturating_add(self.tail))
    }

    fn finish(mut self) -> CapSummary {
        let dropped = self.dropped();
        if self.sink.is_some() {
            if dropped > 0 {
                self.write(dropped_marker(dropped).as_bytes());
            }
            let ring = std::mem::replace(&mut self.ring, TailRing::new(0));
            let (older, newer) = ring.slices();
            self.write(older);
            self.write(newer);
            if let Some(sink) = &mut self.sink {
                if let Err(err) = sink.flush() {
                    self.fail(err);
                }
            }
        }
        CapSummary {
            total: self.total,
            dropped,
            failure: self.failure,
        }
    }
}

/// The last `cap` bytes pushed. Grows up to `cap`, then overwrites the oldest.
#[derive(Debug)]
struct TailRing {
    cap: usize,
    buf: Vec<u8>,
    /// Once full: index of the oldest byte (and of the next write).
    start: usize,
}

impl TailRing {
    fn new(cap: usize) -> Self {
        TailRing {
            cap,
            buf: Vec::new(),
            start: 0,
        }
    }

    fn push(&mut self, data: &[u8]) {
        let cap = self.cap;
        if cap == 0 {
            return;
        }
        let mut data = &data[data.len().saturating_sub(cap)..];
        if self.buf.len() < cap {
            let n = (cap - self.buf.len()).min(data.len());
            if self.buf.capacity() < self.buf.len() + n {
                // Grow geometrically but never past `cap`.
                let want = (self.buf.capacity() * 2).max(self.buf.len() + n).min(cap);
                self.buf.reserve_exact(want - self.buf.len());
            }
            self.buf.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        while !data.is_empty() {
            let n = (cap - self.start).min(data.len());
            self.buf[self.start..self.start + n].copy_from_slice(&data[..n]);
            self.start = (self.start + n) % cap;
            data = &data[n..];
        }
    }

    /// The kept bytes, oldest first, in two pieces.
    fn slices(&self) -> (&[u8], &[u8]) {
        let (newer, older) = self.buf.split_at(self.start);
        (older, newer)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use proptest::prelude::*;

    use super::*;

    // ---- pure parts ----

    /// What the log must hold for `all` under the cap.
    fn expected_log(all: &[u8], head: usize, tail: usize) -> Vec<u8> {
        if all.len() <= head + tail {
            return all.to_vec();
        }
        let dropped = (all.len() - head - tail) as u64;
        let mut log = all[..head].to_vec();
        log.extend_from_slice(dropped_marker(dropped).as_bytes());
        log.extend_from_slice(&all[all.len() - tail..]);
        log
    }

    fn cap_through(chunks: &[Vec<u8>], head: usize, tail: usize) -> (Vec<u8>, CapSummary) {
        let mut sink = Vec::new();
        let mut cap = CapLog::new(Some(&mut sink), head, tail);
        for chunk in chunks {
            cap.push(chunk);
        }
        let summary = cap.finish();
        (sink, summary)
    }

    #[test]
    fn cap_keeps_everything_that_fits() {
        let (log, summary) = cap_through(&[b"hello ".to_vec(), b"world".to_vec()], 4, 100);
        assert_eq!(log, b"hello world");
        assert_eq!(summary.total, 11);
        assert_eq!(summary.dropped, 0);
        assert_eq!(summary.failure, None);
    }

    #[test]
    fn cap_drops_the_middle_with_a_marker() {
        let (log, summary) = cap_through(&[b"0123456789".to_vec(), b"abcdef".to_vec()], 3, 4);
        assert_eq!(
            String::from_utf8(log).unwrap(),
            "012\n[flakelab: 9 bytes dropped from the middle of the output]\ncdef"
        );
        assert_eq!(summary.total, 16);
        assert_eq!(summary.dropped, 9);
    }

    #[test]
    fn cap_with_zero_head_and_tail_writes_only_the_marker() {
        let (log, summary) = cap_through(&[b"abc".to_vec()], 0, 0);
        assert_eq!(log, dropped_marker(3).as_bytes());
        assert_eq!(summary.dropped, 3);
    }

    #[test]
    fn cap_without_sink_counts_only() {
        let mut cap = CapLog::<Vec<u8>>::new(None, 2, 2);
        cap.push(b"abcdefgh");
        assert_eq!(cap.ring.buf.capacity(), 0);
        let summary = cap.finish();
        assert_eq!((summary.total, summary.dropped), (8, 4));
    }

    /// Accepts `budget` bytes, then fails.
    struct Failing {
        budget: usize,
    }

    impl Write for Failing {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.budget == 0 {
                return Err(io::Error::other("disk full"));
            }
            let n = buf.len().min(self.budget);
            self.budget -= n;
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn cap_survives_a_failing_sink() {
        let mut cap = CapLog::new(Some(Failing { budget: 5 }), 10, 10);
        cap.push(b"0123456789");
        assert!(cap.sink.is_none());
        cap.push(&[b'x'; 100]);
        let summary = cap.finish();
        assert_eq!(summary.total, 110);
        assert_eq!(summary.dropped, 90);
        assert_eq!(summary.failure.as_deref(), Some("disk full"));
    }

    #[test]
    fn ring_wraps_and_stays_bounded() {
        let mut ring = TailRing::new(4);
        ring.push(b"ab");
        ring.push(b"cde");
        ring.push(b"f");
        let (a, b) = ring.slices();
        assert_eq!([a, b].concat(), b"cdef");
        ring.push(b"0123456789");
        let (a, b) = ring.slices();
        assert_eq!([a, b].concat(), b"6789");
        assert!(ring.buf.capacity() <= 4);
    }

    proptest! {
        #[test]
        fn cap_matches_the_reference(
            chunks in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..12),
            head in 0usize..50,
            tail in 0usize..50,
        ) {
            let all = chunks.concat();
            let (log, summary) = cap_through(&chunks, head, tail);
            prop_assert_eq!(&log, &expected_log(&all, head, tail));
            prop_assert_eq!(summary.total, all.len() as u64);
            prop_assert_eq!(summary.dropped, all.len().saturating_sub(head + tail) as u64);
        }
    }

    #[test]
    fn stat_parses_odd_command_names() {
        let raw = b"1234 (a) (b c) S 1 1234 1234 0 -1 4194560 100 0";
        assert_eq!(
            parse_stat(raw),
            Some(ProcStat {
                state: b'S',
                ppid: 1,
                pgrp: 1234,
                start: 0,
            })
        );
        let full = b"9 (sh) R 8 9 9 34816 9 4194304 112 0 0 0 0 0 0 0 20 0 1 0 8812345 2527232 223";
        assert_eq!(parse_stat(full).map(|s| s.start), Some(8_812_345));
        let mut raw = b"77 (\xff\xfe".to_vec();
        raw.extend_from_slice(b") Z 5 70 70 0");
        let stat = parse_stat(&raw).unwrap();
        assert_eq!((stat.state, stat.ppid, stat.pgrp), (b'Z', 5, 70));
        assert!(!stat.alive());
    }

    #[test]
    fn stat_rejects_garbage() {
        assert_eq!(parse_stat(b""), None);
        assert_eq!(parse_stat(b"12 (x)"), None);
        assert_eq!(parse_stat(b"12 (x) S one 3"), None);
        assert_eq!(parse_stat(b"12 (x) SS 1 3"), None);
    }

    #[test]
    fn environ_matches_whole_entries_only() {
        let env = b"A=1\0FLAKELAB_RUN_ID=run-12\0B=2\0";
        assert!(environ_has(env, b"FLAKELAB_RUN_ID=run-12"));
        assert!(!environ_has(env, b"FLAKELAB_RUN_ID=run-1"));
        assert!(!environ_has(env, b"FLAKELAB_RUN_ID=run-123"));
        assert!(environ_has(b"FLAKELAB_RUN_ID=x", b"FLAKELAB_RUN_ID=x"));
        assert!(!environ_has(b"XFLAKELAB_RUN_ID=x\0", b"FLAKELAB_RUN_ID=x"));
        assert!(!environ_has(b"", b"FLAKELAB_RUN_ID=x"));
    }

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
}
