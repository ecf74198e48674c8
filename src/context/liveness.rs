//! Whether a session is still running, stopped, or ended without a stop.
//!
//! A running session holds an exclusive lock on `running/<session>.lock`
//! in its store from before its session record is appended until after its
//! end record ([`SessionEndRecord`], in `session-ends.jsonl`) is. The
//! kernel drops the lock when the process dies however it dies (SIGKILL, the
//! OOM killer), so a reader tells the three states apart without trusting
//! pids or clocks: an end record means the session stopped; no end record
//! and a held lock mean it is running; neither means it ended without a
//! stop. The lock file of a killed session stays behind (it holds only
//! the reserve below); the next session never reuses it, since ids are unique.
//!
//! The lock file holds a small reserve of disk space while the session
//! runs, given back just before the end record is written: a session that
//! a full disk stops still records that it stopped, and why.
//!
//! This module owns the `running/` directory; the end records go through
//! [`Store::append_session_end`] like every other record.

use std::fs::{self, File, OpenOptions};
use std::path::PathBuf;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::record::{SessionEndRecord, SessionStop, SESSION_END_SCHEMA};
use crate::store::Store;

/// Directory (under the store) of the running sessions' lock files.
pub const RUNNING_DIR: &str = "running";

/// Bytes a running session's lock file holds in reserve for its end record
/// (which is well under 1 KiB).
const RESERVE: usize = 16 * 1024;

/// What a reader can tell about a recorded session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionState {
    /// It recorded its end: finished, interrupted, or stopped by an error.
    Stopped(SessionStop),
    /// Its harness still holds the session's lock.
    Running,
    /// No end record and nobody holds the lock: the harness was killed (or
    /// the machine went down) before the session could record its end.
    NoStop,
}

impl SessionState {
    /// The state in one word, as `report --format json` writes it
    /// (`finished`, `interrupted`, `failed`, `running`, `no_stop`).
    pub fn word(self) -> &'static str {
        match self {
            SessionState::Stopped(SessionStop::Finished) => "finished",
            SessionState::Stopped(SessionStop::Interrupted) => "interrupted",
            SessionState::Stopped(SessionStop::Failed) => "failed",
            SessionState::Running => "running",
            SessionState::NoStop => "no_stop",
        }
    }
}

/// A running session's hold on its lock file. [`Running::end`] records
/// how it stopped; dropped without it (an error or a panic unwound the
/// session) it records [`SessionStop::Failed`] as best it can. Only a
/// harness that dies without unwinding leaves no end record.
#[derive(Debug)]
pub struct Running {
    store: Store,
    session: String,
    path: PathBuf,
    ended: bool,
    _file: File,
}

fn lock_path(store: &Store, session: &str) -> PathBuf {
    store
        .root()
        .join(RUNNING_DIR)
        .join(format!("{session}.lock"))
}

impl Running {
    /// Takes the lock of `session` (call before its session record is
    /// appended).
    pub fn start(store: &Store, session: &str) -> Result<Running> {
        let path = lock_path(store, session);
        let hint = "check that the store is writable, or choose another directory with --store";
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(|e| Error::store_io(dir, &e, hint))?;
        }
        let mut reserve = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| Error::store_io(&path, &e, hint))?;
        // Written, not just sized: a sparse file reserves nothing. A disk
        // too full for it is named before the session starts.
        std::io::Write::write_all(&mut reserve, &[0; RESERVE])
            .and_then(|()| reserve.sync_all())
            .map_err(|e| Error::store_io(&path, &e, hint))?;
        drop(reserve);
        // Held open read-only: a file open for writing would keep the
        // store's filesystem from being remounted read-only.
        let file = File::open(&path).map_err(|e| Error::store_io(&path, &e, hint))?;
        match file.try_lock() {
            Ok(()) => {}
            // Another flakelab runs a session of this id in this store: two
            // writers of one session would each report the other's runs.
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(Error::usage(
                    format!(
                        "session {session} is running in the store {} (another flakelab holds {})",
                        store.root().display(),
                        path.display()
                    ),
                    "give this session another --session-id, or a store of its own (--store DIR), and merge the stores afterwards",
                ))
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(Error::store_io(&path, &e, hint)),
        }
        Ok(Running {
            store: store.clone(),
            session: session.to_string(),
            path,
            ended: false,
            _file: file,
        })
    }

    /// Releases the lock of a session that never started (nothing of it
    /// was recorded, so no end record either).
    pub fn abandon(mut self) {
        self.ended = true;
        let _ = fs::remove_file(&self.path);
    }

    /// Records that the session finished, or was interrupted by a stop
    /// signal, with what it learnt while it ran (`warnings`), then releases
    /// and removes the lock.
    pub fn end(mut self, interrupted: bool, warnings: Vec<String>) -> Result<()> {
        self.ended = true;
        let how = match interrupted {
            true => SessionStop::Interrupted,
            false => SessionStop::Finished,
        };
        self.record(how, None, warnings)
    }

    /// Records that an error stopped the session, with the error, then
    /// releases and removes the lock. A store that cannot take the record
    /// reads "no stop" later; the caller reports the error either way.
    pub fn fail(mut self, why: &Error) {
        self.ended = true;
        // The error's first line: what happened, not the hint.
        let text = why.to_string();
        let what = text.lines().next().unwrap_or_default().to_string();
        let _ = self.record(SessionStop::Failed, Some(what), Vec::new());
    }

    /// Appends the end record, then removes the lock file. The record comes
    /// first: a reader never sees neither.
    fn record(
        &self,
        how: SessionStop,
        reason: Option<String>,
        warnings: Vec<String>,
    ) -> Result<()> {
        // The reserve given back first, so the record fits on a full disk.
        if let Ok(file) = OpenOptions::new().write(true).open(&self.path) {
            let _ = file.set_len(0);
        }
        let record = SessionEndRecord {
            schema: SESSION_END_SCHEMA.into(),
            session: self.session.clone(),
            ended_at: jiff::Timestamp::now()
                .round(jiff::Unit::Millisecond)
                .map(|t| t.to_string())
                .unwrap_or_default(),
            how,
            reason,
            warnings,
        };
        self.store.append_session_end(&record)?;
        // A leftover lock file is harmless: the end record decides.
        let _ = fs::remove_file(&self.path);
        Ok(())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.ended {
            // The error that unwound the session is reported by its caller;
            // a store that cannot take this record either reads "no stop".
            let _ = self.record(SessionStop::Failed, None, Vec::new());
        }
    }
}

/// The state of the recorded session `session`.
pub fn state(store: &Store, session: &str) -> Result<SessionState> {
    if let Some(end) = store.session_end(session)? {
        return Ok(SessionState::Stopped(end.how));
    }
    let path = lock_path(store, session);
    let Ok(file) = File::open(&path) else {
        return Ok(SessionState::NoStop);
    };
    match file.try_lock_shared() {
        Ok(()) => Ok(SessionState::NoStop),
        Err(std::fs::TryLockError::WouldBlock) => Ok(SessionState::Running),
        Err(std::fs::TryLockError::Error(e)) => Err(Error::store_io(
            &path,
            &e,
            "check the store's permissions, or choose another directory with --store",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_is_running_a_released_one_no_stop_an_ended_one_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(state(&store, "s1").unwrap(), SessionState::NoStop);
        let running = Running::start(&store, "s1").unwrap();
        assert_eq!(state(&store, "s1").unwrap(), SessionState::Running);
        running.end(true, Vec::new()).unwrap();
        assert_eq!(
            state(&store, "s1").unwrap(),
            SessionState::Stopped(SessionStop::Interrupted)
        );
        assert!(!lock_path(&store, "s1").exists());

        // A lock file nobody holds and no end record: ended without a stop.
        fs::write(lock_path(&store, "s2"), "").unwrap();
        assert_eq!(state(&store, "s2").unwrap().word(), "no_stop");

        // An error unwinding the session records it as failed.
        drop(Running::start(&store, "s3").unwrap());
        assert_eq!(
            state(&store, "s3").unwrap(),
            SessionState::Stopped(SessionStop::Failed)
        );
        Running::start(&store, "s4")
            .unwrap()
            .end(false, Vec::new())
            .unwrap();
        assert_eq!(state(&store, "s4").unwrap().word(), "finished");
    }

    #[test]
    fn a_second_start_of_a_running_session_is_refused_not_queued() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let first = Running::start(&store, "s1").unwrap();
        let second = Running::start(&store, "s1").expect_err("refused");
        assert!(
            second.to_string().contains("session s1 is running"),
            "{second}"
        );
        // The refusal left the first one's lock and record alone.
        assert_eq!(state(&store, "s1").unwrap(), SessionState::Running);
        first.end(false, Vec::new()).unwrap();
        assert_eq!(state(&store, "s1").unwrap().word(), "finished");
        // Abandoned: no end record, no lock left.
        Running::start(&store, "s2").unwrap().abandon();
        assert!(!lock_path(&store, "s2").exists());
        assert!(store.session_end("s2").unwrap().is_none());
    }
}
