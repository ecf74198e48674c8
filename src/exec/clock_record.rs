//! The per-run side of flakelab's clock preload: the run's anchor (the real
//! time it started, which every process of the run shifts an absolute clock
//! from) and its record file (each preloaded process appends to it; the
//! preload never creates it; on a memory-backed file system when there is
//! one), read back once the run has been swept and removed. The lines are
//! `perturb::clock`'s to parse.

use std::io;

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

/// A run's record file, created empty (mode 0600, a name no one else has)
/// and removed when dropped.
pub(super) struct RunRecord {
    file: tempfile::NamedTempFile,
}

impl RunRecord {
    /// Creates the record file in a memory-backed directory when there is
    /// one of ours ([`memory_dirs`]), else in the temporary directory.
    pub(super) fn create() -> io::Result<RunRecord> {
        let builder = || {
            let mut b = tempfile::Builder::new();
            b.prefix("flakelab-clock-").suffix(".record");
            b
        };
        for dir in memory_dirs() {
            if let Ok(file) = builder().tempfile_in(&dir) {
                return Ok(RunRecord { file });
            }
        }
        Ok(RunRecord {
            file: builder().tempfile()?,
        })
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
