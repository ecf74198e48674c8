//! The per-run side of flakelab's clock preload: the run's anchor (the real
//! time it started, which every process of the run shifts an absolute clock
//! from) and its record file (each preloaded process appends to it; the
//! preload never creates it; on a memory-backed file system when there is
//! one), read back once the run has been swept and removed. The lines are
//! `perturb::clock`'s to parse.

use std::io;

use super::launch::Launch;
use super::record_files::{memory_dirs, sweep, PREFIX, SUFFIX};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::record_files::orphaned;

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
