//! Temporary directories flakelab makes and owns (ladder working copies,
//! the demo project): each holds an owner file its process keeps locked
//! (`flock`) for as long as the directory is in use. The kernel drops the
//! lock however the process dies, so a directory of this kind whose owner
//! file is no longer locked was left by a killed flakelab: the next
//! flakelab that makes one of the same kind removes it. Only a real
//! directory directly in the temporary directory, named with the kind's
//! prefix, owned by this user and holding a regular owner file, is ever
//! removed.

use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

/// The owner file's name inside an owned directory.
const OWNER: &str = ".flakelab-owner";

/// A temporary directory this process owns; removed when dropped.
#[derive(Debug)]
pub struct OwnedDir {
    dir: tempfile::TempDir,
    _owner: File,
}

impl OwnedDir {
    /// Makes a directory named `prefix…` in the temporary directory, after
    /// removing those of the same prefix that a killed flakelab left.
    pub fn new(prefix: &str) -> io::Result<OwnedDir> {
        sweep(&std::env::temp_dir(), prefix);
        let dir = tempfile::Builder::new().prefix(prefix).tempdir()?;
        let owner = File::create(dir.path().join(OWNER))?;
        owner.lock()?;
        Ok(OwnedDir { dir, _owner: owner })
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Keeps it past this process: the owner file goes, so no later sweep
    /// takes it; returns its path.
    pub fn keep(self) -> PathBuf {
        let _ = std::fs::remove_file(self.dir.path().join(OWNER));
        self.dir.keep()
    }

    /// Removes it now (dropping does the same, ignoring errors).
    pub fn close(self) -> io::Result<()> {
        self.dir.close()
    }
}

/// Removes every directory in `tmp` named `prefix…` that a dead flakelab
/// owned (see the module doc); returns those removed.
pub fn sweep(tmp: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return Vec::new();
    };
    let uid = nix::unistd::geteuid().as_raw();
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let named = entry.file_name().to_string_lossy().starts_with(prefix);
        // Never through a link: the directory itself, and its owner file.
        let ours = |p: &Path, dir: bool| {
            std::fs::symlink_metadata(p)
                .is_ok_and(|m| m.uid() == uid && if dir { m.is_dir() } else { m.is_file() })
        };
        if !named || !ours(&path, true) || !ours(&path.join(OWNER), false) {
            continue;
        }
        let Ok(owner) = File::open(path.join(OWNER)) else {
            continue;
        };
        // Locked: its flakelab is alive. Free: it died.
        if owner.try_lock().is_ok() && std::fs::remove_dir_all(&path).is_ok() {
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
