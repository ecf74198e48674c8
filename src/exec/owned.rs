//! Temporary directories flakelab makes and owns (ladder working copies,
//! the demo project): each holds an owner file its process keeps locked
//! (`flock`) for as long as the directory is in use. The kernel drops the
//! lock however the process dies, so a directory of this kind whose owner
//! file is no longer locked was left by a killed flakelab. Its warden
//! removes it (the directory is on the warden's roll while it is in use,
//! `exec::warden`), and where no warden ran, the next flakelab that makes
//! one of the same kind does. Only a real directory directly in the
//! temporary directory, named `flakelab-…`, owned by this user and holding
//! a regular owner file no process has locked, is ever removed.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use super::warden::{orphaned, ON_ROLL, OWNER};

/// A temporary directory this process owns; removed when dropped.
#[derive(Debug)]
pub struct OwnedDir {
    dir: Option<tempfile::TempDir>,
    /// Its entry on the warden's roll.
    marker: Option<String>,
    _owner: File,
}

impl OwnedDir {
    /// Makes a directory named `prefix…` (which starts with `flakelab-`) in
    /// the temporary directory, after removing those of the same prefix
    /// that a killed flakelab left, and puts it on the warden's roll when a
    /// warden runs.
    pub fn new(prefix: &str) -> io::Result<OwnedDir> {
        debug_assert!(prefix.starts_with("flakelab-"));
        sweep(&std::env::temp_dir(), prefix);
        let dir = tempfile::Builder::new().prefix(prefix).tempdir()?;
        let owner = File::create(dir.path().join(OWNER))?;
        owner.lock()?;
        // A path too long for a slot of the roll is left to the next sweep.
        let marker = (dir.path().to_str())
            .map(|p| format!("{ON_ROLL}{p}"))
            .filter(|m| m.len() <= super::roll_map::MARKER_MAX);
        if let Some(m) = &marker {
            super::warden::enlist(m);
        }
        Ok(OwnedDir {
            dir: Some(dir),
            marker,
            _owner: owner,
        })
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        self.dir.as_ref().map_or(Path::new(""), |d| d.path())
    }

    /// Keeps it past this process: the owner file goes, so no later sweep
    /// takes it; returns its path.
    pub fn keep(mut self) -> PathBuf {
        let dir = self.dir.take().expect("held until dropped");
        let _ = std::fs::remove_file(dir.path().join(OWNER));
        dir.keep()
    }

    /// Removes it now (dropping does the same, ignoring errors).
    pub fn close(mut self) -> io::Result<()> {
        self.dir.take().map_or(Ok(()), tempfile::TempDir::close)
    }
}

impl Drop for OwnedDir {
    fn drop(&mut self) {
        drop(self.dir.take());
        if let Some(m) = &self.marker {
            super::warden::release(m);
        }
    }
}

/// Removes every directory in `tmp` named `prefix…` that a dead flakelab
/// owned (see the module doc); returns those removed.
pub fn sweep(tmp: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let named = entry.file_name().to_string_lossy().starts_with(prefix);
        if named && orphaned(&path) && std::fs::remove_dir_all(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_dead_owners_directory_of_the_kind_is_swept() {
        let tmp = tempfile::tempdir().unwrap();
        let make = |name: &str, owner: bool| {
            let dir = tmp.path().join(name);
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join("file"), "x").unwrap();
            if owner {
                std::fs::write(dir.join(OWNER), "").unwrap();
            }
            dir
        };
        let dead = make("flakelab-copies-dead", true);
        let alive = make("flakelab-copies-alive", true);
        let held = File::open(alive.join(OWNER)).unwrap();
        held.lock().unwrap();
        // Not ours: no owner file, another kind, a link to a directory.
        let unmarked = make("flakelab-copies-unmarked", false);
        let other = make("flakelab-demo-x", true);
        let target = make("target", true);
        std::os::unix::fs::symlink(&target, tmp.path().join("flakelab-copies-link")).unwrap();
        assert_eq!(
            sweep(tmp.path(), "flakelab-copies-"),
            std::slice::from_ref(&dead)
        );
        assert!(!dead.exists());
        for kept in [&alive, &unmarked, &other, &target] {
            assert!(kept.join("file").exists(), "{}", kept.display());
        }
        drop(held);
        assert_eq!(sweep(tmp.path(), "flakelab-copies-"), [alive]);
    }

    #[test]
    fn a_live_owned_directory_survives_a_sweep_and_goes_when_dropped() {
        let owned = OwnedDir::new("flakelab-test-owned-").unwrap();
        let path = owned.path().to_path_buf();
        let parent = path.parent().unwrap().to_path_buf();
        assert!(!sweep(&parent, "flakelab-test-owned-").contains(&path));
        assert!(path.join(OWNER).exists());
        drop(owned);
        assert!(!path.exists());
    }
}
