//! The warden: what ends every run's processes when flakelab itself dies,
//! however it dies (SIGKILL, the OOM killer, a panic, a closed terminal).
//!
//! Once per flakelab process that runs sessions, [`start`] spawns a copy of
//! our own binary as `flakelab __warden`, in a process group of its own and
//! deaf to SIGINT, SIGTERM and SIGHUP, with the read end of a pipe (the
//! *lifeline*) as its stdin and the *roll* as its stdout: an in-memory file
//! (`memfd`) of fixed-size slots, one per run in flight. Only flakelab holds
//! the lifeline's write end and its own descriptor of the roll (both
//! close-on-exec, so no subject inherits them). Every run writes its marker
//! (the `FLAKELAB_RUN_ID` value) into a free slot before it is spawned, its
//! process group once it is, and frees the slot once its sweep is over
//! ([`enlist`], [`grouped`], [`release`]: stores to the roll, which
//! flakelab maps shared (`exec::roll_map`), and which no reader waits for).
//!
//! The warden never reads while flakelab lives: it sleeps in a `read` of the
//! lifeline, which nobody writes to. When flakelab dies the kernel closes
//! its descriptors, so that `read` returns end-of-file. The warden then reads
//! the roll and SIGKILLs the process group of every slot still held and
//! every process whose environment carries one of their markers (setsid'd
//! and double-forked descendants inherit it), round after round until a
//! round finds nothing alive, and exits. A normal exit frees every slot
//! first, so the warden then has nothing to do.
//!
//! The cost of a plain run is three stores to memory: no system call, no
//! process woken, no namespace, nothing in the run's own process. Where
//! the warden cannot start,
//! [`status`] says why: the session records it as a warning and runs as
//! before, its processes then ended only while flakelab lives (`doctor`
//! reports the same check).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::memfd::{memfd_create, MemFdCreateFlag};
use nix::sys::signal::{kill, killpg, signal, SigHandler, Signal};
use nix::unistd::{pipe2, Pid};

use super::launch::RUN_ID_VAR;
use super::procfs::{environ_has, proc_stats};
use super::roll_map::{RollMap, HELD, LEN, MARKER, MARKER_MAX, PGID, SLOT};

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

/// Our ends of the lifeline and the roll.
struct Lifeline {
    /// The lifeline's write end (never written; its closing is the news),
    /// the roll, and which slot each run holds. The lifeline is `None` once
    /// [`finish`] closed it.
    state: Mutex<State>,
    /// The warden, waited for by [`finish`].
    child: Mutex<Option<std::process::Child>>,
    /// The warden's process id.
    pid: i32,
}

/// What [`Lifeline`] guards.
struct State {
    pipe: Option<File>,
    roll: RollMap,
    slots: Slots,
    /// Why a run could not be put on the roll, once one could not.
    broken: Option<String>,
}

/// Starts the warden for this process, once; later calls return the first
/// answer. `Err` says why there is no warden (the session then warns).
pub fn start() -> Result<(), String> {
    let started = WARDEN.get_or_init(|| {
        spawn_warden().map(|(pipe, roll, child)| Lifeline {
            state: Mutex::new(State {
                pipe: Some(pipe),
                roll,
                slots: Slots::default(),
                broken: None,
            }),
            pid: i32::try_from(child.id()).unwrap_or(0),
            child: Mutex::new(Some(child)),
        })
    });
    started.as_ref().map(|_| ()).map_err(Clone::clone)
}

/// The warden's process id, once started: a child of ours that is no run's.
pub fn pid() -> Option<i32> {
    match WARDEN.get() {
        Some(Ok(lifeline)) => Some(lifeline.pid),
        _ => None,
    }
}

/// `None` when the warden is running; otherwise why processes of the runs
/// would outlive flakelab if it were killed (also when [`start`] was never
/// called).
pub fn status() -> Option<String> {
    match WARDEN.get() {
        Some(Ok(lifeline)) => {
            if let Some(why) = lifeline.state.lock().ok().and_then(|s| s.broken.clone()) {
                return Some(why);
            }
            let alive = lifeline
                .child
                .lock()
                .ok()
                .and_then(|mut c| c.as_mut().map(|c| matches!(c.try_wait(), Ok(None))))
                .unwrap_or(false);
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
    if let Ok(mut state) = lifeline.state.lock() {
        state.pipe = None;
    }
    if let Ok(mut child) = lifeline.child.lock() {
        if let Some(mut child) = child.take() {
            let _ = child.wait();
        }
    }
}

/// A new roll: an in-memory file, close-on-exec.
fn new_roll() -> Result<File, String> {
    memfd_create(c"flakelab-roll", MemFdCreateFlag::MFD_CLOEXEC)
        .map(File::from)
        .map_err(|e| format!("cannot create the warden's roll (memfd_create): {e}"))
}

/// Starts `exe __warden` with `lifeline` as its stdin and `roll` as its
/// stdout.
fn spawn_helper(exe: &Path, lifeline: File, roll: &File) -> Result<std::process::Child, String> {
    let roll = roll
        .try_clone()
        .map_err(|e| format!("cannot hand the roll to the warden: {e}"))?;
    Command::new(exe)
        .arg(SUBCOMMAND)
        // Holds no directory (a mount) busy.
        .current_dir("/")
        // It carries none of a subject's markers: only flakelab's temporary
        // directory, where the owned directories it may remove are.
        .env_clear()
        .env("TMPDIR", std::env::temp_dir())
        .stdin(Stdio::from(lifeline))
        // The roll, which it only reads. Not our stdout: a reader of
        // flakelab's output must see end-of-file when flakelab ends, not
        // when its warden does.
        .stdout(Stdio::from(roll))
        .stderr(Stdio::null())
        // Its own group: a Ctrl-C or a `kill -- -PGID` meant for flakelab
        // does not end the warden before it has done its job.
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start {} {SUBCOMMAND}: {e}", exe.display()))
}

fn spawn_warden() -> Result<(File, RollMap, std::process::Child), String> {
    if std::env::var_os(DISABLE_VAR).is_some_and(|v| !v.is_empty()) {
        return Err(format!("{DISABLE_VAR} is set (a test-only switch)"));
    }
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find flakelab's own executable: {e}"))?;
    let (read, write) =
        pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("cannot create a pipe: {e}"))?;
    let roll = RollMap::new(new_roll()?)?;
    // The roll is read only once flakelab is gone, so a kill right after the
    // first spawn is covered even if the warden has not been scheduled yet.
    let child = spawn_helper(&exe, File::from(read), roll.file())?;
    Ok((File::from(write), roll, child))
}

/// Applies one change to the roll. A roll that cannot be written (memory
/// exhausted) is remembered, and [`status`] says so.
fn update(change: impl FnOnce(&mut Slots, &mut RollMap) -> Result<(), String>) {
    let Some(Ok(lifeline)) = WARDEN.get() else {
        return;
    };
    let Ok(mut state) = lifeline.state.lock() else {
        return;
    };
    let State {
        roll,
        slots,
        broken,
        ..
    } = &mut *state;
    if let Err(why) = change(slots, roll) {
        broken.get_or_insert(why);
    }
}

/// Tells the warden a run with `marker` is about to start.
pub fn enlist(marker: &str) {
    update(|slots, roll| slots.enlist(roll, marker));
}

/// Tells the warden the run with `marker` leads process group `pgid`.
pub fn grouped(marker: &str, pgid: i32) {
    update(|slots, roll| {
        slots.grouped(roll, marker, pgid);
        Ok(())
    });
}

/// Tells the warden the run with `marker` is over and swept.
pub fn release(marker: &str) {
    update(|slots, roll| {
        slots.release(roll, marker);
        Ok(())
    });
}

/// Which slot of the roll each run in flight holds.
#[derive(Debug, Default)]
struct Slots {
    held: BTreeMap<String, usize>,
    /// Slots freed, reused before the roll grows.
    free: Vec<usize>,
    /// Slots the roll has.
    len: usize,
}

impl Slots {
    fn enlist(&mut self, roll: &mut RollMap, marker: &str) -> Result<(), String> {
        let bytes = marker.as_bytes();
        if bytes.len() > MARKER_MAX {
            return Err(format!(
                "a run's marker is longer than the warden's {MARKER_MAX} bytes"
            ));
        }
        let index = match self.held.get(marker) {
            Some(&index) => index,
            None => self.free.pop().unwrap_or_else(|| {
                self.len += 1;
                self.len - 1
            }),
        };
        if let Err(why) = roll.hold(index, bytes) {
            self.free.push(index);
            return Err(why);
        }
        self.held.insert(marker.to_string(), index);
        Ok(())
    }

    fn grouped(&self, roll: &RollMap, marker: &str, pgid: i32) {
        if let Some(&index) = self.held.get(marker) {
            roll.set_group(index, pgid);
        }
    }

    fn release(&mut self, roll: &RollMap, marker: &str) {
        if let Some(index) = self.held.remove(marker) {
            self.free.push(index);
            roll.free(index);
        }
    }
}

/// The runs the warden holds: marker to process group (once known), as read
/// from the roll.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Roll {
    runs: BTreeMap<String, Option<i32>>,
}

impl Roll {
    /// Reads the held slots of a roll's bytes; a slot that does not parse
    /// (a marker that is not UTF-8 or too long) is skipped.
    pub(super) fn parse(bytes: &[u8]) -> Self {
        let mut runs = BTreeMap::new();
        for slot in bytes.chunks(SLOT) {
            if slot.len() < MARKER || slot[HELD] != 1 {
                continue;
            }
            let len = usize::from(slot[LEN]);
            let Some(marker) = slot.get(MARKER..MARKER + len) else {
                continue;
            };
            let Ok(marker) = std::str::from_utf8(marker) else {
                continue;
            };
            let pgid =
                i32::from_le_bytes([slot[PGID], slot[PGID + 1], slot[PGID + 2], slot[PGID + 3]]);
            runs.insert(marker.to_string(), (pgid > 1).then_some(pgid));
        }
        Roll { runs }
    }

    /// Takes the entries named `prefix…` off the roll (the owned
    /// directories', [`ON_ROLL`], or the record files', [`FILE_ON_ROLL`]):
    /// their paths.
    fn take(&mut self, prefix: &str) -> Vec<String> {
        let paths: Vec<String> = (self.runs.keys())
            .filter_map(|m| m.strip_prefix(prefix))
            .map(String::from)
            .collect();
        self.runs.retain(|m, _| !m.starts_with(prefix));
        paths
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

/// The owner file's name inside an owned directory (`exec::owned`).
pub(super) const OWNER: &str = ".flakelab-owner";

/// The prefix every owned directory's name starts with.
const NAMED: &str = "flakelab-";

/// The prefix of an owned directory's entry on the roll (a run's entry is
/// its run id, which never starts so).
pub(super) const ON_ROLL: &str = "rm:";

/// The prefix of a clock run's record file's entry on the roll
/// (`exec::record_files`).
pub(super) const FILE_ON_ROLL: &str = "rf:";

/// Whether `path` is an owned directory whose owner is gone: a real
/// directory named `flakelab-…`, this user's, holding a regular owner file
/// that no process has locked.
pub(super) fn orphaned(path: &Path) -> bool {
    let uid = nix::unistd::geteuid().as_raw();
    let named = path
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with(NAMED));
    // Never through a link: the directory itself, and its owner file.
    let ours = |p: &Path, dir: bool| {
        std::fs::symlink_metadata(p)
            .is_ok_and(|m| m.uid() == uid && if dir { m.is_dir() } else { m.is_file() })
    };
    if !named || !ours(path, true) || !ours(&path.join(OWNER), false) {
        return false;
    }
    // Locked: its flakelab is alive. Free: it died.
    File::open(path.join(OWNER)).is_ok_and(|owner| owner.try_lock().is_ok())
}

/// Removes `path` when it is an owned directory directly in the temporary
/// directory whose owner is gone (the warden, for the directories on its
/// roll once flakelab died); returns whether it did.
fn remove_orphan(path: &Path) -> bool {
    let in_tmp = path.parent() == Some(std::env::temp_dir().as_path());
    in_tmp && orphaned(path) && std::fs::remove_dir_all(path).is_ok()
}

/// The `__warden` body: waits for end-of-file on the lifeline, then reads
/// the roll (its stdout) and ends every process of the runs still on it.
/// Returns the exit code.
pub fn helper() -> i32 {
    for sig in [
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGQUIT,
    ] {
        let _ = ignore(sig);
    }
    let mut stdin = io::stdin().lock();
    let mut buf = [0u8; 64];
    loop {
        match stdin.read(&mut buf) {
            // End-of-file, or a lifeline that cannot be read any more:
            // flakelab is gone.
            Ok(0) => break,
            // Nothing is ever written; ignore it if something is.
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    // Opened anew through /proc: from offset 0, whatever flakelab did with
    // its own descriptor.
    let roll = std::fs::read("/proc/self/fd/1").map(|bytes| Roll::parse(&bytes));
    let Ok(mut roll) = roll else {
        return 0;
    };
    let dirs = roll.take(ON_ROLL);
    let files = roll.take(FILE_ON_ROLL);
    if !roll.runs.is_empty() {
        end_all(&roll);
    }
    // The clock runs' record files (their runs are ended): each only if
    // it is still a record file no process holds (`exec::record_files`).
    for file in files {
        super::record_files::remove_orphan(Path::new(&file));
    }
    // Then the directories flakelab was using (its runs are ended, so
    // nothing writes there any more): each only if it is still an owned
    // directory whose owner is gone (`exec::owned`).
    for dir in dirs {
        remove_orphan(Path::new(&dir));
    }
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
    let (read, write) =
        pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("cannot create a pipe: {e}"))?;
    let mut roll = RollMap::new(new_roll()?)?;
    let mut warden = spawn_helper(self_exe, File::from(read), roll.file())?;
    let mut slots = Slots::default();
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
            let _ = slots.enlist(&mut roll, &marker);
            drop(write);
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
    use std::os::unix::fs::FileExt as _;

    use super::super::roll_map::SLOTS_MAX;

    #[test]
    fn the_roll_reads_back_what_the_runs_wrote() {
        let (file, mut roll) = mapped_roll();
        let mut slots = Slots::default();
        for marker in ["s.1", "s.2", "s.probe a b.0"] {
            slots.enlist(&mut roll, marker).unwrap();
        }
        slots.grouped(&roll, "s.1", 1234);
        slots.grouped(&roll, "s.probe a b.0", 77);
        slots.release(&roll, "s.2");
        // Unknown markers change nothing.
        slots.grouped(&roll, "s.9", 5);
        slots.release(&roll, "s.9");
        let read = |roll: &File| {
            let mut all = vec![0; slots_len(roll)];
            roll.read_exact_at(&mut all, 0).unwrap();
            Roll::parse(&all)
        };
        let got = read(&file);
        assert_eq!(
            got.runs,
            BTreeMap::from([
                ("s.1".to_string(), Some(1234)),
                ("s.probe a b.0".to_string(), Some(77)),
            ])
        );
        assert_eq!(got.groups(), BTreeSet::from([77, 1234]));
        // A freed slot is reused, and what it held before does not show.
        slots.enlist(&mut roll, "s.3").unwrap();
        assert_eq!(slots.len, 3);
        let got = read(&file);
        assert_eq!(got.runs.get("s.3"), Some(&None));
        slots.release(&roll, "s.1");
        slots.release(&roll, "s.3");
        slots.release(&roll, "s.probe a b.0");
        assert!(read(&file).runs.is_empty());
    }

    fn slots_len(roll: &File) -> usize {
        roll.metadata().unwrap().len() as usize
    }

    /// A new roll, mapped, and a descriptor of it to read it back as the
    /// warden does.
    #[test]
    fn owned_directories_leave_the_roll_before_its_runs_are_ended() {
        let mut roll = Roll {
            runs: [
                ("rm:scratch/flakelab-copies-x".to_string(), None),
                ("s.00001".to_string(), Some(42)),
            ]
            .into(),
        };
        assert_eq!(roll.take(ON_ROLL), ["scratch/flakelab-copies-x"]);
        assert_eq!(roll.groups(), [42].into());
        assert_eq!(roll.entries().len(), 1);
    }

    fn mapped_roll() -> (File, RollMap) {
        let file = new_roll().unwrap();
        let roll = RollMap::new(file.try_clone().unwrap()).unwrap();
        (file, roll)
    }

    #[test]
    fn a_roll_grows_by_pages_and_refuses_a_slot_past_its_room() {
        let (file, mut roll) = mapped_roll();
        let mut slots = Slots::default();
        slots.enlist(&mut roll, "s.1").unwrap();
        assert_eq!(slots_len(&file), 4096, "one page");
        for run in 2..=17 {
            slots.enlist(&mut roll, &format!("s.{run}")).unwrap();
        }
        assert_eq!(
            slots_len(&file),
            2 * 4096,
            "the 17th slot is on a second page"
        );
        slots.len = SLOTS_MAX;
        let err = slots.enlist(&mut roll, "s.full").unwrap_err();
        assert!(err.contains("full"), "{err}");
        let mut all = vec![0; slots_len(&file)];
        file.read_exact_at(&mut all, 0).unwrap();
        assert_eq!(
            Roll::parse(&all).runs.len(),
            17,
            "the refused run is not held"
        );
    }

    #[test]
    fn a_marker_too_long_for_a_slot_is_refused_not_cut() {
        let (file, mut roll) = mapped_roll();
        let mut slots = Slots::default();
        let long = "m".repeat(MARKER_MAX + 1);
        let err = slots.enlist(&mut roll, &long).unwrap_err();
        assert!(err.contains("longer"), "{err}");
        slots.enlist(&mut roll, &"m".repeat(MARKER_MAX)).unwrap();
        let mut all = vec![0; slots_len(&file)];
        file.read_exact_at(&mut all, 0).unwrap();
        assert_eq!(Roll::parse(&all).entries().len(), 1);
    }

    #[test]
    fn slots_that_do_not_parse_are_skipped() {
        let mut bytes = vec![0u8; 3 * SLOT];
        // Held, a length past the slot's end.
        bytes[HELD] = 1;
        bytes[LEN] = 255;
        // Held, not UTF-8.
        bytes[SLOT + HELD] = 1;
        bytes[SLOT + LEN] = 1;
        bytes[SLOT + MARKER] = 0xff;
        // Held, a process group of 1 is never killed.
        bytes[2 * SLOT + HELD] = 1;
        bytes[2 * SLOT + PGID] = 1;
        bytes[2 * SLOT + LEN] = 1;
        bytes[2 * SLOT + MARKER] = b'x';
        let roll = Roll::parse(&bytes);
        assert_eq!(roll.runs, BTreeMap::from([("x".to_string(), None)]));
    }
}
