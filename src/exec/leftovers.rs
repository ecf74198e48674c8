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
//! change a later run. So after a run that set `FAKETIME`, the pairs named
//! after the run's processes are removed, but only those made since the run
//! started (a pair older than the run is not the run's: some other process
//! with that pid made it, and it is not ours to remove).

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// The variable libfaketime reads; a launch that sets it preloads it.
pub(super) const FAKETIME_VAR: &str = "FAKETIME";

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

/// Removes the libfaketime files named after `pids` that were made at or
/// after `started` (less the coarse clock's lag). Returns how many were
/// removed; a file that vanished or cannot be removed is left alone.
pub(super) fn remove_faketime_files(
    pids: impl IntoIterator<Item = i32>,
    started: SystemTime,
) -> usize {
    let since = started.checked_sub(COARSE).unwrap_or(started);
    let mut removed = 0;
    for pid in pids {
        for path in named_after(pid) {
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let recent = meta.modified().is_ok_and(|t| t >= since);
            if meta.is_file() && recent && std::fs::remove_file(&path).is_ok() {
                removed += 1;
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

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
