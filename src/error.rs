//! Errors that stop a session (as opposed to run outcomes, which are data),
//! and the exit codes of DESIGN section 9. Each error renders as a lowercase
//! fragment naming what failed and the offending value, then a `hint:` line.

use std::path::PathBuf;

/// Every cell ran and was applied, and no cell differs from the baseline.
pub const EXIT_OK: i32 = 0;
/// A cell or test differs from the baseline, or the signature reproduced.
pub const EXIT_DIFFERS: i32 = 1;
/// Usage, configuration or catalog error: nothing ran.
pub const EXIT_USAGE: i32 = 2;
/// A requested perturbation could not be applied in at least one cell.
pub const EXIT_NOT_APPLIED: i32 = 3;
/// A pair whose raw counts differ was left undecided: the design stopped
/// (a cap, `--max-runs`, the correction over many pairs) before it could
/// decide it. Never clean.
pub const EXIT_UNDECIDED: i32 = 4;
/// Interrupted: finished runs are kept and a partial report is printed.
pub const EXIT_INTERRUPTED: i32 = 130;

/// An error that stops flakelab before or outside the runs.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A command-line value is wrong.
    #[error("{message}\nhint: {hint}")]
    Usage {
        /// What is wrong, with the offending value.
        message: String,
        /// How to fix it.
        hint: String,
    },
    /// A catalog file (embedded or project override) is invalid.
    #[error("invalid catalog file {path}: {message}\nhint: {hint}")]
    Catalog {
        /// The file.
        path: String,
        /// What is wrong, naming the key.
        message: String,
        /// How to fix it.
        hint: String,
    },
    /// The store could not be read or written.
    #[error("store {path}: {message}\nhint: {hint}")]
    Store {
        /// The file or directory.
        path: PathBuf,
        /// The I/O problem.
        message: String,
        /// How to fix it.
        hint: String,
    },
    /// The harness itself could not do its work (not the subject's fault).
    #[error("{message}\nhint: {hint}")]
    Harness {
        /// What failed.
        message: String,
        /// How to fix it.
        hint: String,
    },
}

impl Error {
    /// A usage error with its hint.
    pub fn usage(message: impl Into<String>, hint: impl Into<String>) -> Self {
        Error::Usage {
            message: message.into(),
            hint: hint.into(),
        }
    }

    /// A harness error with its hint.
    pub fn harness(message: impl Into<String>, hint: impl Into<String>) -> Self {
        Error::Harness {
            message: message.into(),
            hint: hint.into(),
        }
    }

    /// A store error with its hint.
    pub fn store(
        path: impl Into<PathBuf>,
        err: impl std::fmt::Display,
        hint: impl Into<String>,
    ) -> Self {
        Error::Store {
            path: path.into(),
            message: err.to_string(),
            hint: hint.into(),
        }
    }

    /// A store error from an I/O error: a full disk, a read-only
    /// filesystem, a quota or a permission refusal is named as such, with
    /// its own fix; any other error keeps `hint`.
    pub fn store_io(path: impl Into<PathBuf>, err: &std::io::Error, hint: &str) -> Self {
        let (what, fix) = match err.raw_os_error().map(nix::errno::Errno::from_raw) {
            Some(nix::errno::Errno::ENOSPC) => (
                "the filesystem holding the store is full",
                "free space on that filesystem, or choose another directory with --store; \
                 the runs recorded so far are kept and readable",
            ),
            Some(nix::errno::Errno::EDQUOT) => (
                "the disk quota of the filesystem holding the store is exhausted",
                "free space within the quota, or choose another directory with --store; \
                 the runs recorded so far are kept and readable",
            ),
            Some(nix::errno::Errno::EROFS) => (
                "the store is on a read-only filesystem",
                "remount it read-write, or choose a writable directory with --store; \
                 the runs recorded so far are kept and readable",
            ),
            Some(nix::errno::Errno::EACCES | nix::errno::Errno::EPERM) => (
                "permission denied",
                "make the store writable by this user, or choose another directory with --store",
            ),
            _ => return Error::store(path, err, hint),
        };
        Error::Store {
            path: path.into(),
            message: format!("{what} ({err})"),
            hint: fix.to_string(),
        }
    }

    /// What failed, in one line, without the hint (the first line of the
    /// error as displayed).
    pub fn message(&self) -> String {
        match self {
            Error::Usage { message, .. } | Error::Harness { message, .. } => message.clone(),
            Error::Catalog { path, message, .. } => {
                format!("invalid catalog file {path}: {message}")
            }
            Error::Store { path, message, .. } => format!("store {}: {message}", path.display()),
        }
    }

    /// How to fix it.
    pub fn hint(&self) -> &str {
        match self {
            Error::Usage { hint, .. }
            | Error::Catalog { hint, .. }
            | Error::Store { hint, .. }
            | Error::Harness { hint, .. } => hint,
        }
    }

    /// The exit code this error maps to.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage { .. } | Error::Catalog { .. } | Error::Store { .. } => EXIT_USAGE,
            Error::Harness { .. } => EXIT_USAGE,
        }
    }
}

/// Result alias for fallible flakelab operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_and_a_read_only_store_are_named_with_their_fix() {
        let io = |errno: i32| std::io::Error::from_raw_os_error(errno);
        let full = Error::store_io("/s/runs.jsonl", &io(nix::libc::ENOSPC), "other");
        assert!(full.to_string().starts_with(
            "store /s/runs.jsonl: the filesystem holding the store is full (No space left on device"
        ));
        assert!(full.hint().starts_with("free space on that filesystem"));
        assert_eq!(full.exit_code(), EXIT_USAGE);
        let ro = Error::store_io("/s", &io(nix::libc::EROFS), "other");
        assert!(ro
            .message()
            .contains("the store is on a read-only filesystem"));
        assert!(ro.hint().starts_with("remount it read-write"));
        // Anything else keeps the caller's hint.
        let other = Error::store_io("/s", &io(nix::libc::EIO), "the caller's hint");
        assert_eq!(other.hint(), "the caller's hint");
    }
}
