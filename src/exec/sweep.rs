//! The sweep after every run: whatever the run left behind (members of its
//! process group, and processes that carry its marker after leaving the
//! group) is killed, and those reparented to us are reaped.

use std::collections::BTreeSet;
use std::io;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{kill, killpg, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use super::launch::RUN_ID_VAR;
use super::procfs::{environ_has, proc_stats, ProcStat};
use super::result::warn_once;
use super::warden;

/// How many kill-and-rescan rounds the sweep makes at most.
const SWEEP_ROUNDS: usize = 100;
/// Pause between sweep rounds, so killed processes get to die.
const SWEEP_PAUSE: Duration = Duration::from_millis(10);

/// Kills everything the run left behind and returns how many distinct
/// processes were found alive. Each round scans `/proc` for members of the
/// group and for processes carrying the marker, SIGKILLs the live ones and
/// reaps the dead ones reparented to us, until a round finds nothing to do.
pub(super) async fn sweep(pgid: Pid, marker: &str, warnings: &mut Vec<String>) -> usize {
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
