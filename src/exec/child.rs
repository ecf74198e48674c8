//! One child process per run: spawn it in its own process group, enforce
//! the timeout, honour session stops, and have its output captured
//! (`caplog`) and whatever it left behind swept (`sweep`).
//!
//! What is started is a [`Launch`]; how it ended is a [`ChildResult`]. The
//! parts that do not touch the OS (the head/tail log cap and the `/proc`
//! parsers) are small synchronous functions with their own tests in their
//! own files; this one only wires them to tokio and nix.

use std::io;
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::process::Child;
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

use super::caplog::{drain, finish_drain, output_pipe, CapLog, LazyFile};
use super::clock_record::RunRecord;
use super::inspect::{Inspector, Watch, Watcher, POLL_MIN};
use super::launch::{ChildLimits, Launch, PreloadCleanup, RUN_ID_VAR};
use super::result::{warn_once, ChildResult};
use super::setup::Armed;
use super::sweep::sweep;
use super::warden;
use super::{leftovers, spawn};
use crate::record::ProcessEnd;

/// How the session asks running children to stop (kept here too for the
/// callers that name it `exec::child::Stop`; `exec::Stop` is the same).
pub use super::result::Stop;

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
    // flakelab's clock preload: the run's anchor and record file.
    let record = match launch.clock_record.then(RunRecord::create).transpose() {
        Ok(record) => record,
        Err(err) => {
            warnings.push(format!(
                "cannot create the clock preload's record file: {err}; the run's processes are judged by the /proc watch alone"
            ));
            None
        }
    };
    // The programs the launch execs, read from their files before the
    // spawn: none of it is in the run's measured time.
    let planned = watch.map(|w| Inspector::plan_for(w, launch, marker));
    let recorded;
    let launch = match &record {
        Some(record) => {
            let exes = planned.as_ref().map(Inspector::exes_for_preload);
            recorded = record.launch(launch, exes.unwrap_or_default());
            &recorded
        }
        None => launch,
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
        let cell_netns = match &launch.netns_cell {
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
    // The spawn returns once the leader has exec'd: its programs, read
    // just before, are its.
    let inspector = planned.map(|p| p.started(pgid.as_raw()));

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
    if launch.preload_cleanup == Some(PreloadCleanup::Faketime) {
        let seen = processes.iter().flatten().map(|p| p.pid);
        let cleaned = leftovers::remove_faketime_files(pgid.as_raw(), seen, wall_started);
        for path in cleaned.stale {
            warnings.push(format!(
                "{} was in /dev/shm before this run, left by an earlier process with the leader's pid: if libfaketime loaded in the leader, it found the file in its way (libfaketime then runs without its shared segment, or exits when only the segment is there); it was not removed, as it is not this run's",
                path.display()
            ));
        }
    }
    // Read once every process of the run is gone: nothing writes after.
    let clock_record = record.and_then(|record| match record.finish() {
        Ok(text) => Some(text),
        Err(err) => {
            warnings.push(format!(
                "cannot read the clock preload's record file: {err}"
            ));
            None
        }
    });
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
        clock_record,
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

#[cfg(test)]
#[path = "child_tests.rs"]
mod tests;
