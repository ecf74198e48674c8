//! Files a run's preload leaves behind, removed once the run is swept.
//!
//! libfaketime (0.9.10) makes a semaphore and a shared-memory segment in
//! `/dev/shm` in the first preloaded process of a tree, named after that
//! process's pid (`sem.faketime_sem_<pid>`, `faketime_shm_<pid>`), and
//! removes them only if that process ends through `exit()`. A subject that
//! ends through `_exit` (dash does), by `exec` (a shell's last command, a
//! runner's wrapper) or by a signal leaves both behind: a thousand runs of a
//! faketime cell left a thousand pairs. A later process with the same pid
//! then finds them, and libfaketime silently runs it without its shared
//! segment, or exits when only the segment is left: the apparatus would
//! change a later run. So after a run that preloads it, the pairs named
//! after the run's processes are removed, but only those made since the run
//! started (a pair older than the run is not the run's: some other process
//! with that pid made it, and it is not ours to remove).

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// Where the kernel's file timestamps may lag the clock we read: tmpfs
/// stamps files with the coarse clock, up to a tick behind.
const COARSE: Duration = Duration::from_millis(20);

/// The files libfaketime names after `pid`.
fn named_after(pid: i32) -> [PathBuf; 2] {
    [
        PathBuf::from(format!("/dev/shm/sem.faketime_sem_{pid}")),
        PathBuf::from(format!("/dev/shm/faketime_shm_{pid}")),
    ]
}

/// What the clean-up after a run found in `/dev/shm`.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Cleaned {
    /// Files made during the run, removed.
    pub removed: usize,
    /// Files named after the run's leader but older than the run: an
    /// earlier process with the same pid left them. Where libfaketime loaded
    /// in the leader, it found them in its way (it runs without its shared
    /// segment, or exits when only the segment was there). Kept: they are
    /// not ours.
    pub stale: Vec<PathBuf>,
}

/// Removes the libfaketime files named after `leader` or `others` that were
/// made at or after `started` (less the coarse clock's lag), and reports
/// those named after `leader` that are older than that. A file that vanished
/// or cannot be removed is left alone.
pub(super) fn remove_faketime_files(
    leader: i32,
    others: impl IntoIterator<Item = i32>,
    started: SystemTime,
) -> Cleaned {
    let since = started.checked_sub(COARSE).unwrap_or(started);
    let mut cleaned = Cleaned::default();
    let others = others.into_iter().filter(|&pid| pid != leader);
    for pid in std::iter::once(leader).chain(others) {
        for path in named_after(pid) {
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if !meta.is_file() {
                continue;
            }
            let recent = meta.modified().is_ok_and(|t| t >= since);
            if recent {
                if std::fs::remove_file(&path).is_ok() {
                    cleaned.removed += 1;
                }
            } else if pid == leader {
                cleaned.stale.push(path);
            }
        }
    }
    cleaned
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_made_during_the_run_is_removed_and_an_older_one_only_reported() {
        // A pid no process here has (above the default pid_max), so nothing
        // real is touched; the files are made by the test, named as
        // libfaketime names them.
        let pid = 4_194_400 + i32::try_from(std::process::id() % 1000).unwrap();
        let [sem, shm] = named_after(pid);
        if std::fs::write(&sem, b"").is_err() {
            return; // no writable /dev/shm here
        }
        let before = SystemTime::now();
        std::fs::write(&shm, b"").unwrap();
        // The semaphore counts as older than the run (started after it was
        // made), the segment as made during it.
        let started = std::fs::symlink_metadata(&shm)
            .unwrap()
            .modified()
            .unwrap()
            .max(before);
        let old = std::fs::File::options().write(true).open(&sem).unwrap();
        old.set_modified(started - Duration::from_secs(60)).unwrap();
        let cleaned = remove_faketime_files(pid, [pid, pid + 1], started);
        assert_eq!(cleaned.removed, 1);
        assert_eq!(cleaned.stale, std::slice::from_ref(&sem));
        assert!(!shm.exists());
        assert!(sem.exists(), "an older file is not the run's to remove");
        std::fs::remove_file(&sem).unwrap();
        // Named after another process of the run, an older file is not
        // reported: only the leader's own pair is in libfaketime's way.
        let old = std::fs::File::create(&sem).unwrap();
        old.set_modified(started - Duration::from_secs(60)).unwrap();
        let cleaned = remove_faketime_files(pid + 1, [pid], started);
        assert_eq!(cleaned, Cleaned::default());
        std::fs::remove_file(&sem).unwrap();
    }

    #[test]
    fn names_are_libfaketimes() {
        assert_eq!(
            named_after(42),
            [
                PathBuf::from("/dev/shm/sem.faketime_sem_42"),
                PathBuf::from("/dev/shm/faketime_shm_42")
            ]
        );
    }
}
