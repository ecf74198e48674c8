//! The per-run side of flakelab's clock preload: the run's anchor (the real
//! time it started, which every process of the run shifts an absolute clock
//! from) and its record file (each preloaded process appends to it; the
//! preload never creates it; on a memory-backed file system when there is
//! one), read back once the run has been swept and removed. The lines are
//! `perturb::clock`'s to parse.

use std::io;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use super::launch::Launch;

/// The variable holding the run's anchor: the real time (epoch nanoseconds)
/// at its start.
pub const ANCHOR_VAR: &str = "FLAKELAB_CLOCK_ANCHOR";
/// The variable naming the run's record file.
pub const RECORD_VAR: &str = "FLAKELAB_CLOCK_RECORD";

/// The programs flakelab resolved for a clock run's launch, one
/// `path<TAB>exe` line each: a process exec'd by one of those paths
/// announces that exe without reading `/proc/self/exe` (the preload's
/// costliest system call at start-up).
pub const EXES_VAR: &str = "FLAKELAB_CLOCK_EXES";

/// A record file's name starts so.
const PREFIX: &str = "flakelab-clock-";
/// A record file's name ends so.
const SUFFIX: &str = ".record";

/// A run's record file, created empty (mode 0600, a name no one else has),
/// locked (`flock`) while the run lasts, on the warden's roll, and removed
/// when dropped. A flakelab killed mid-run leaves it unlocked: its warden
/// removes it, and where no warden ran, the next flakelab's first clock run
/// does ([`sweep`]).
pub(super) struct RunRecord {
    file: tempfile::NamedTempFile,
    _roll: Option<OnRoll>,
}

/// An entry on the warden's roll, released when dropped.
struct OnRoll(String);

impl Drop for OnRoll {
    fn drop(&mut self) {
        super::warden::release(&self.0);
    }
}

impl RunRecord {
    /// Creates the record file in a memory-backed directory when there is
    /// one of ours ([`memory_dirs`]), else in the temporary directory.
    pub(super) fn create() -> io::Result<RunRecord> {
        static SWEPT: std::sync::Once = std::sync::Once::new();
        let dirs = memory_dirs();
        SWEPT.call_once(|| {
            for dir in dirs.iter().chain([&std::env::temp_dir()]) {
                sweep(dir);
            }
        });
        let builder = || {
            let mut b = tempfile::Builder::new();
            b.prefix(PREFIX).suffix(SUFFIX);
            b
        };
        let file = match dirs.iter().find_map(|dir| builder().tempfile_in(dir).ok()) {
            Some(file) => file,
            None => builder().tempfile()?,
        };
        file.as_file().lock()?;
        // A path too long for a slot of the roll is left to the next sweep.
        let marker = (file.path().to_str())
            .map(|p| format!("{}{p}", super::warden::FILE_ON_ROLL))
            .filter(|m| m.len() <= super::roll_map::MARKER_MAX);
        let roll = marker.map(|m| {
            super::warden::enlist(&m);
            OnRoll(m)
        });
        Ok(RunRecord { file, _roll: roll })
    }

    /// `launch` with the run's anchor (now), the record's path and the
    /// programs flakelab resolved for the launch (`exes`, see
    /// [`EXES_VAR`]; not set when empty).
    pub(super) fn launch(&self, launch: &Launch, exes: String) -> Launch {
        let mut with = launch.clone();
        if !exes.is_empty() {
            with.env_set.insert(EXES_VAR.into(), exes);
        }
        let now = jiff::Timestamp::now().as_nanosecond();
        with.env_set.insert(ANCHOR_VAR.into(), now.to_string());
        with.env_set.insert(
            RECORD_VAR.into(),
            self.file.path().to_string_lossy().into_owned(),
        );
        with
    }

    /// What the run's processes recorded; the file is removed.
    pub(super) fn finish(self) -> io::Result<String> {
        let bytes = std::fs::read(self.file.path())?;
        self.file.close()?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}

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
fn sweep(dir: &Path) -> Vec<PathBuf> {
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
fn memory_dirs() -> Vec<std::path::PathBuf> {
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

    #[test]
    fn a_record_file_is_locked_while_its_run_lasts() {
        let record = RunRecord::create().unwrap();
        let path = record.file.path().to_path_buf();
        assert!(!orphaned(&path));
        assert_eq!(record.finish().unwrap(), "");
        assert!(!path.exists());
    }

    #[test]
    fn the_record_is_handed_back_and_removed() {
        let record = RunRecord::create().unwrap();
        let launch = Launch {
            argv: vec!["true".into()],
            cwd: "/".into(),
            env_set: Default::default(),
            env_unset: Vec::new(),
            isolation: Default::default(),
            netns_cell: None,
            preload_cleanup: None,
            clock_record: true,
        };
        let with = record.launch(&launch, String::new());
        let path = std::path::PathBuf::from(&with.env_set[RECORD_VAR]);
        assert!(with.env_set[ANCHOR_VAR].parse::<i128>().unwrap() > 0);
        std::fs::write(&path, "A 1 0 /bin/true\n").unwrap();
        assert_eq!(record.finish().unwrap(), "A 1 0 /bin/true\n");
        assert!(!path.exists());
    }
}
