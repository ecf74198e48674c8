//! The files a clock run's record lives in (`exec::clock_record`): where
//! they go (a memory-backed directory of ours when there is one), and which
//! of them a dead flakelab left (named so, ours, a regular file, unlocked),
//! so that its warden or the next flakelab removes them. Only a file that
//! is all of these, directly in a directory record files go to, is ever
//! removed.

use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

/// A record file's name starts so.
pub(super) const PREFIX: &str = "flakelab-clock-";
/// A record file's name ends so.
pub(super) const SUFFIX: &str = ".record";

/// Whether `path` is a record file a dead flakelab left: a regular file
/// (never through a link) named `flakelab-clock-….record`, this user's,
/// that no process holds locked.
pub(super) fn orphaned(path: &Path) -> bool {
    let named = path.file_name().is_some_and(|n| {
        let n = n.to_string_lossy();
        n.starts_with(PREFIX) && n.ends_with(SUFFIX)
    });
    let uid = nix::unistd::geteuid().as_raw();
    let ours = std::fs::symlink_metadata(path)
        .is_ok_and(|m| m.is_file() && std::os::unix::fs::MetadataExt::uid(&m) == uid);
    named
        && ours
        && std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
            .open(path)
            .is_ok_and(|f| f.try_lock().is_ok())
}

/// Removes `path` when it is an orphaned record file ([`orphaned`])
/// directly in one of the directories record files go to; returns whether
/// it did.
pub(super) fn remove_orphan(path: &Path) -> bool {
    let parent = path.parent();
    let placed = memory_dirs()
        .iter()
        .chain([&std::env::temp_dir()])
        .any(|d| parent == Some(d.as_path()));
    placed && orphaned(path) && std::fs::remove_file(path).is_ok()
}

/// Removes the orphaned record files directly in `dir`; returns them.
pub(super) fn sweep(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let named = entry.file_name().to_string_lossy().starts_with(PREFIX);
        if named && orphaned(&path) && std::fs::remove_file(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

/// The memory-backed (tmpfs) directories a record file may go to, first
/// choice first: `$XDG_RUNTIME_DIR`, then `/dev/shm`. Creating and removing
/// a file on a disk's file system costs milliseconds a run on a busy
/// machine (3.6 ms for the removal on ext4 at load 13, against 21 µs on
/// tmpfs); the file is removed at the run's end either way.
pub(super) fn memory_dirs() -> Vec<std::path::PathBuf> {
    let runtime = std::env::var_os("XDG_RUNTIME_DIR")
        .map(std::path::PathBuf::from)
        .filter(|p| p.is_absolute());
    runtime
        .into_iter()
        .chain(std::iter::once("/dev/shm".into()))
        .filter(|dir| {
            nix::sys::statfs::statfs(dir.as_path())
                .is_ok_and(|fs| fs.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unlocked_record_files_of_ours_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name);
        let write = |name: &str| std::fs::write(at(name), "A 1 0 /bin/true\n").unwrap();
        write("flakelab-clock-dead.record");
        write("flakelab-clock-alive.record");
        let held = std::fs::File::open(at("flakelab-clock-alive.record")).unwrap();
        held.lock().unwrap();
        // Not a record file: another name, a directory, a link to one.
        write("flakelab-clock-other.txt");
        write("notes.record");
        std::fs::create_dir(at("flakelab-clock-dir.record")).unwrap();
        write("target");
        std::os::unix::fs::symlink(at("target"), at("flakelab-clock-link.record")).unwrap();
        let removed = sweep(dir.path());
        assert_eq!(removed, [at("flakelab-clock-dead.record")]);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "flakelab-clock-alive.record",
                "flakelab-clock-dir.record",
                "flakelab-clock-link.record",
                "flakelab-clock-other.txt",
                "notes.record",
                "target"
            ]
        );
        // The warden's removal also wants the file where records go: a
        // dead record file anywhere else stays.
        write("flakelab-clock-dead2.record");
        assert!(orphaned(&at("flakelab-clock-dead2.record")));
        assert!(!remove_orphan(&at("flakelab-clock-dead2.record")));
        assert!(at("flakelab-clock-dead2.record").exists());
        drop(held);
        assert!(orphaned(&at("flakelab-clock-alive.record")));
    }
}
