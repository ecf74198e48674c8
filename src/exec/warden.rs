//! The warden: what ends every run's processes when flakelab itself dies,
//! however it dies (SIGKILL, the OOM killer, a panic, a closed terminal).
//!
//! Once per flakelab process that runs sessions, [`start`] spawns a copy of
//! our own binary as `flakelab __warden`, in a process group of its own and
//! deaf to SIGINT, SIGTERM and SIGHUP, with the read end of a pipe (the
//! *lifeline*) as its stdin. Only flakelab holds the write end (close-on-exec,
//! so no subject inherits it). Every run tells the warden its marker (the
//! `FLAKELAB_RUN_ID` value) before it is spawned, its process group once it
//! is, and that it is done once its sweep is over ([`enlist`], [`grouped`],
//! [`release`]: one short line each, no reply awaited).
//!
//! When flakelab dies the kernel closes its descriptors, so the warden reads
//! end-of-file. It then SIGKILLs the process group of every run not yet
//! released and every process whose environment carries one of their
//! markers (setsid'd and double-forked descendants inherit it), round after
//! round until a round finds nothing alive, and exits. A normal exit releases
//! every run first, so the warden then has nothing to do.
//!
//! The cost of a plain run is three `write`s to a pipe: no extra process, no
//! namespace and no `pre_exec` (which would turn the spawn's `posix_spawn`
//! into a full `fork`). Where the warden cannot start, [`status`] says why:
//! the session records it as a warning and runs as before, its processes
//! then ended only while flakelab lives (`doctor` reports the same check).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{self, BufRead, Write};
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::signal::{kill, killpg, signal, SigHandler, Signal};
use nix::unistd::{pipe2, Pid};

use super::child::{environ_has, proc_stats, RUN_ID_VAR};

/// The hidden switch that keeps the warden from starting, so the fallback
/// can be tested (documented as test-only in the book).
pub const DISABLE_VAR: &str = "FLAKELAB_TEST_NO_WARDEN";
/// The warden's subcommand.
pub const SUBCOMMAND: &str = "__warden";
/// How many kill-and-rescan rounds the warden makes at most.
const ROUNDS: usize = 1000;
/// Rounds in a row that must find nothing before the warden is done.
const QUIET_ROUNDS: usize = 3;
/// Pause between rounds, so killed processes get to die.
const PAUSE: Duration = Duration::from_millis(10);

/// The running warden, or why there is none.
static WARDEN: OnceLock<Result<Lifeline, String>> = OnceLock::new();

/// Our end of the lifeline.
struct Lifeline {
    /// The write end; `None` once a write failed (the warden is gone) or
    /// [`finish`] closed it.
    pipe: Mutex<Option<File>>,
    /// The warden, waited for by [`finish`].
    child: Mutex<Option<std::process::Child>>,
}

/// Starts the warden for this process, once; later calls return the first
/// answer. `Err` says why there is no warden (the session then warns).
pub fn start() -> Result<(), String> {
    let started = WARDEN.get_or_init(|| {
        spawn_warden().map(|(pipe, child)| Lifeline {
            pipe: Mutex::new(Some(pipe)),
            child: Mutex::new(Some(child)),
        })
    });
    started.as_ref().map(|_| ()).map_err(Clone::clone)
}

/// `None` when the warden is running; otherwise why processes of the runs
/// would outlive flakelab if it were killed (also when [`start`] was never
/// called).
pub fn status() -> Option<String> {
    match WARDEN.get() {
        Some(Ok(lifeline)) => {
            let alive = lifeline.pipe.lock().map(|p| p.is_some()).unwrap_or(false);
            (!alive).then(|| "the warden process ended during the session".to_string())
        }
        Some(Err(why)) => Some(why.clone()),
        None => Some("no warden was started".into()),
    }
}

/// Closes the lifeline and waits for the warden to end, after it has ended
/// whatever runs were never released (none, on a normal end): call once
/// flakelab is done, so that nothing of it outlives its exit. A no-op when
/// no warden was started.
pub fn finish() {
    let Some(Ok(lifeline)) = WARDEN.get() else {
        return;
    };
    if let Ok(mut pipe) = lifeline.pipe.lock() {
        *pipe = None;
    }
    if let Ok(mut child) = lifeline.child.lock() {
        if let Some(mut child) = child.take() {
            let _ = child.wait();
        }
    }
}

fn spawn_warden() -> Result<(File, std::process::Child), String> {
    if std::env::var_os(DISABLE_VAR).is_some_and(|v| !v.is_empty()) {
        return Err(format!("{DISABLE_VAR} is set (a test-only switch)"));
    }
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find flakelab's own executable: {e}"))?;
    let (read, write) =
        pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("cannot create a pipe: {e}"))?;
    // Non-blocking on our side only: pipe2 would set it on both ends.
    nix::fcntl::fcntl(
        std::os::fd::AsRawFd::as_raw_fd(&write),
        nix::fcntl::FcntlArg::F_SETFL(OFlag::O_NONBLOCK),
    )
    .map_err(|e| format!("cannot set up the pipe: {e}"))?;
    let child = Command::new(&exe)
        .arg(SUBCOMMAND)
        // Holds no directory (a mount) busy.
        .current_dir("/")
        // It needs no variable, and carries none of a subject's markers.
        .env_clear()
        .stdin(Stdio::from(read))
        // Not our stdout or stderr: a reader of flakelab's output must see
        // end-of-file when flakelab ends, not when its warden does.
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own group: a Ctrl-C or a `kill -- -PGID` meant for flakelab
        // does not end the warden before it has done its job.
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start {} {SUBCOMMAND}: {e}", exe.display()))?;
    // Lines wait in the pipe until the warden reads them, and it reads all
    // of them before acting on end-of-file: a kill right after the first
    // spawn is covered even if the warden has not been scheduled yet.
    Ok((File::from(write), child))
}

/// Writes one line in one `write` (atomic below `PIPE_BUF`). The write end
/// is non-blocking: a warden that stopped reading (a full pipe) never
/// stalls a session; it is then taken as gone, and [`status`] says so.
fn send(line: &str) {
    let Some(Ok(lifeline)) = WARDEN.get() else {
        return;
    };
    let Ok(mut guard) = lifeline.pipe.lock() else {
        return;
    };
    if let Some(pipe) = guard.as_mut() {
        if pipe.write_all(line.as_bytes()).is_err() {
            *guard = None;
        }
    }
}

/// Tells the warden a run with `marker` is about to start.
pub fn enlist(marker: &str) {
    send(&format!("+{marker}\n"));
}

/// Tells the warden the run with `marker` leads process group `pgid`.
pub fn grouped(marker: &str, pgid: i32) {
    send(&format!("={pgid} {marker}\n"));
}

/// Tells the warden the run with `marker` is over and swept.
pub fn release(marker: &str) {
    send(&format!("-{marker}\n"));
}

/// The runs the warden holds: marker to process group (once known).
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Roll {
    runs: BTreeMap<String, Option<i32>>,
}

impl Roll {
    /// Applies one line of the lifeline protocol; unknown lines are ignored.
    pub(super) fn apply(&mut self, line: &str) {
        if let Some(marker) = line.strip_prefix('+') {
            self.runs.insert(marker.to_string(), None);
        } else if let Some(rest) = line.strip_prefix('=') {
            if let Some((pgid, marker)) = rest.split_once(' ') {
                if let Ok(pgid) = pgid.parse::<i32>() {
                    if pgid > 1 {
                        self.runs.insert(marker.to_string(), Some(pgid));
                    }
                }
            }
        } else if let Some(marker) = line.strip_prefix('-') {
            self.runs.remove(marker);
        }
    }

    /// The `FLAKELAB_RUN_ID=<marker>` entries to look for.
    fn entries(&self) -> Vec<Vec<u8>> {
        self.runs
            .keys()
            .map(|m| format!("{RUN_ID_VAR}={m}").into_bytes())
            .collect()
    }

    /// The process groups to kill.
    fn groups(&self) -> BTreeSet<i32> {
        self.runs.values().flatten().copied().collect()
    }
}

/// The `__warden` body: reads the lifeline until end-of-file, then ends
/// every process of the runs still on its roll. Returns the exit code.
pub fn helper() -> i32 {
    for sig in [
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGQUIT,
    ] {
        let _ = ignore(sig);
    }
    let mut roll = Roll::default();
    let mut stdin = io::stdin().lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        match stdin.read_until(b'\n', &mut line) {
            // End-of-file: flakelab is gone.
            Ok(0) => break,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line);
                roll.apply(text.trim_end_matches('\n'));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // The lifeline cannot be read any more: as good as gone.
            Err(_) => break,
        }
    }
    if roll.runs.is_empty() {
        return 0;
    }
    end_all(&roll);
    0
}

#[expect(
    unsafe_code,
    reason = "signal(2) with SIG_IGN: no handler runs, so nothing async-signal-unsafe can happen"
)]
fn ignore(sig: Signal) -> nix::Result<SigHandler> {
    // SAFETY: SIG_IGN installs no handler function.
    unsafe { signal(sig, SigHandler::SigIgn) }
}

/// Kills the roll's groups and marked processes until [`QUIET_ROUNDS`]
/// rounds in a row find none alive (at most [`ROUNDS`]).
fn end_all(roll: &Roll) {
    let me = std::process::id() as i32;
    let entries = roll.entries();
    let groups = roll.groups();
    let mut live_groups = groups.clone();
    let mut quiet = 0;
    for _ in 0..ROUNDS {
        // A group of zombies still takes a signal: only the scan below says
        // whether anything is alive.
        live_groups
            .retain(|&pgid| killpg(Pid::from_raw(pgid), Signal::SIGKILL) != Err(Errno::ESRCH));
        let found = marked(me, &entries, &groups);
        for &pid in &found {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        // A few quiet rounds, not one: a run flakelab was spawning when it
        // died carries its marker only once its exec is through.
        quiet = if found.is_empty() { quiet + 1 } else { 0 };
        if quiet >= QUIET_ROUNDS {
            return;
        }
        std::thread::sleep(PAUSE);
    }
}

/// Live processes (not `me`) carrying one of `entries` or in one of `groups`.
fn marked(me: i32, entries: &[Vec<u8>], groups: &BTreeSet<i32>) -> Vec<i32> {
    let Ok(procs) = proc_stats(me) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for (pid, stat) in procs {
        if !stat.alive() {
            continue;
        }
        let ours = groups.contains(&stat.pgrp)
            || std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| entries.iter().any(|e| environ_has(&env, e)));
        if ours {
            found.push(pid);
        }
    }
    found
}

/// What `doctor` says about the warden here: `Ok(detail)` or `Err(reason)`.
/// It starts a warden of its own (`self_exe __warden`) with a marked sleeper
/// on its roll in a session of its own, closes the lifeline as a killed
/// flakelab would, and checks the sleeper is gone.
pub fn check(self_exe: &Path) -> Result<String, String> {
    if std::env::var_os(DISABLE_VAR).is_some_and(|v| !v.is_empty()) {
        return Err(format!("{DISABLE_VAR} is set (a test-only switch)"));
    }
    let marker = format!("doctor-{}", std::process::id());
    let (read, write): (OwnedFd, OwnedFd) =
        pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("cannot create a pipe: {e}"))?;
    let mut warden = Command::new(self_exe)
        .arg(SUBCOMMAND)
        .env_clear()
        .stdin(Stdio::from(read))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start {} {SUBCOMMAND}: {e}", self_exe.display()))?;
    let mut pipe = File::from(write);
    let mut sleeper = Command::new("setsid")
        .args(["sleep", "60"])
        .env(RUN_ID_VAR, &marker)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let outcome = match &mut sleeper {
        Err(e) => Err(format!("cannot start a test process (setsid sleep): {e}")),
        Ok(sleeper) => {
            let _ = writeln!(pipe, "+{marker}");
            drop(pipe);
            let _ = warden.wait();
            // The sleeper is our child: its end (by SIGKILL) is its status.
            match sleeper.try_wait() {
                Ok(Some(_)) | Err(_) => Ok(()),
                Ok(None) => {
                    // The warden has exited; give the kill a moment to land.
                    std::thread::sleep(Duration::from_millis(50));
                    match sleeper.try_wait() {
                        Ok(Some(_)) => Ok(()),
                        _ => Err(
                            "the warden did not end a marked process (is /proc/PID/environ \
                                  readable here? a `hidepid` /proc hides it)"
                                .to_string(),
                        ),
                    }
                }
            }
        }
    };
    if let Ok(sleeper) = &mut sleeper {
        let _ = sleeper.kill();
        let _ = sleeper.wait();
    }
    outcome.map(|()| {
        "a killed flakelab's runs are ended by its warden (lifeline pipe, process groups and \
         FLAKELAB_RUN_ID)"
            .to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_roll_follows_the_protocol() {
        let mut roll = Roll::default();
        for line in [
            "?",
            "+s.1",
            "+s.2",
            "=1234 s.1",
            "=1 s.2",
            "=x s.2",
            "-s.2",
            "junk",
        ] {
            roll.apply(line);
        }
        assert_eq!(roll.runs, BTreeMap::from([("s.1".to_string(), Some(1234))]));
        assert_eq!(roll.groups(), BTreeSet::from([1234]));
        assert_eq!(roll.entries(), vec![b"FLAKELAB_RUN_ID=s.1".to_vec()]);
        // A marker may hold spaces: the rest of the line is the marker.
        roll.apply("+s.probe a b.0");
        roll.apply("=77 s.probe a b.0");
        assert_eq!(roll.runs.get("s.probe a b.0"), Some(&Some(77)));
        roll.apply("-s.1");
        roll.apply("-s.probe a b.0");
        assert!(roll.runs.is_empty());
    }
}
