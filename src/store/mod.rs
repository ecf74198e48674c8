//! The store directory (by default `.flakelab`): `sessions.jsonl`, one
//! runs file per session under `runs/`, `logs/` and the legacy
//! `runs.jsonl` of older stores. This is the only module that writes under
//! the store; everything else asks it for paths and hands it records.
//!
//! Records are appended under an exclusive [`File::lock`], each in one
//! write, and flushed, so a crash loses at most the record in flight and two
//! sessions writing to one store lose nothing. Run records are written in
//! the compact encoding of [`compact`] and read back one at a time
//! ([`Store::runs_iter`]). Reading is tolerant: a truncated or corrupt line
//! is skipped and counted, and a duplicate id is read once (the first wins).

mod bisect;
pub mod compact;
#[cfg(test)]
mod compact_tests;
mod fast;
#[cfg(test)]
mod fast_tests;
pub mod foreign;
pub(crate) mod history;
mod lines;
pub(crate) mod open;
mod runs;
mod template;
mod view;

pub use bisect::{BISECTS_FILE, BISECT_DIR};
#[doc(hidden)]
pub use fast::read_with_serde_only;
pub use runs::RunIter;
pub use view::{RunView, TestView, Tests};

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::io::{BufReader, ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::record::{LadderRecord, RunRecord, SessionEndRecord, SessionRecord};

/// The default store directory, relative to the working directory.
pub const DEFAULT_ROOT: &str = ".flakelab";
/// The runs file of stores written before `flakelab.run/2`: one whole
/// [`RunRecord`] per line, every session's in one file. Still read; no
/// longer written.
pub const RUNS_FILE: &str = "runs.jsonl";
/// Directory holding one runs file per session, `runs/<session>.jsonl`.
pub const RUNS_DIR: &str = "runs";
/// File holding one [`SessionRecord`] per line.
pub const SESSIONS_FILE: &str = "sessions.jsonl";
/// File holding one screen record (`flakelab.screen/1`) per line.
pub const SCREENS_FILE: &str = "screens.jsonl";
/// File holding one `scan --prove` record (`flakelab.prove/1`) per line.
pub const PROVES_FILE: &str = "proves.jsonl";
/// File holding one [`LadderRecord`] per line.
pub const LADDERS_FILE: &str = "ladders.jsonl";
/// File holding one [`SessionEndRecord`] per line.
pub const SESSION_ENDS_FILE: &str = "session-ends.jsonl";
/// Directory holding captured output, one subdirectory per session.
pub const LOGS_DIR: &str = "logs";
/// Directory (under the store) of harness-owned JUnit reports.
pub const JUNIT_DIR: &str = "junit";

const HINT_OPEN: &str = "choose a writable directory with --store";
const HINT_WRITE: &str =
    "check that the store is writable and the disk is not full, or choose another directory with --store";
pub(crate) const HINT_READ: &str =
    "check the store's permissions, or choose another directory with --store";

/// An opened store directory. Clones share the encoders of the sessions
/// they write.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    writers: Arc<Mutex<HashMap<String, SessionWriter>>>,
    /// Per-session directories this store has made (or found), so a run's
    /// log or record does not ask the filesystem again.
    made: Arc<Mutex<HashSet<PathBuf>>>,
}

/// What this store knows of a session's runs file it appends to.
#[derive(Debug)]
struct SessionWriter {
    compact: compact::Writer,
    /// The file's length after this store's last append (which ended with a
    /// newline); when the file still has it, nobody cut its last line.
    len: Option<u64>,
    /// The session's runs file ([`Store::runs_path`]).
    path: PathBuf,
}

/// What a tolerant read had to skip.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LoadStats {
    /// Non-blank lines that did not parse (a truncated last line from a
    /// crash, or a corrupt line).
    pub skipped_lines: usize,
    /// Records whose id had already been read (the first one wins).
    pub duplicate_ids: usize,
}

/// A design's record, kept one JSON line each in its own file of the store
/// (the screen's, `scan --prove`'s, bisect's). The design implements it
/// beside its record type, so the store depends on no design.
pub trait DesignRecord: Serialize + serde::de::DeserializeOwned + Keyed {
    /// Its file, directly under the store.
    const FILE: &'static str;
    /// The session it belongs to.
    fn session(&self) -> &str;
}

/// A record with an id, which a tolerant read deduplicates on.
pub trait Keyed {
    /// The id: of two records with one id, the first read is kept.
    fn key(&self) -> Cow<'_, str>;
}

impl Keyed for SessionRecord {
    fn key(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.id)
    }
}

impl Keyed for SessionEndRecord {
    fn key(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.session)
    }
}

impl Keyed for LadderRecord {
    fn key(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.id)
    }
}

impl Store {
    /// Opens (creating if needed) the store at `root`: creates `root` and
    /// `root/logs`.
    pub fn open(root: &Path) -> Result<Store> {
        let logs = root.join(LOGS_DIR);
        fs::create_dir_all(&logs).map_err(|e| Error::store_io(&logs, &e, HINT_OPEN))?;
        Ok(Store::at(root))
    }

    /// The store at `root`, creating nothing: for reading a store that may
    /// not exist (it then reads as empty).
    pub fn at(root: &Path) -> Store {
        Store {
            root: root.to_path_buf(),
            writers: Arc::default(),
            made: Arc::default(),
        }
    }

    /// The store directory, as given to [`Store::open`].
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Path for one run's log, `root/logs/<session>/<index:05>.log`,
    /// creating the session's log directory. The path is `root` joined with
    /// the rest, so it is absolute when `root` is.
    pub fn log_path(&self, session: &str, index: usize) -> Result<PathBuf> {
        self.run_file(LOGS_DIR, session, &Store::log_name(index))
    }

    /// Path for one run's harness-owned JUnit report (what `{junit}` in the
    /// command expands to): `root/junit/<session>/<index>.xml`.
    pub fn junit_path(&self, session: &str, index: usize) -> Result<PathBuf> {
        self.run_file(JUNIT_DIR, session, &format!("{index:05}.xml"))
    }

    /// The directory of `session`'s run logs, `root/logs/<session>`
    /// (created): [`Store::log_path`] is a file in it.
    pub fn log_dir(&self, session: &str) -> Result<PathBuf> {
        self.run_dir(LOGS_DIR, session)
    }

    /// The name of run `index`'s log in [`Store::log_dir`].
    pub fn log_name(index: usize) -> String {
        let mut name = String::with_capacity(9);
        template::push_index(&mut name, index);
        name.push_str(".log");
        name
    }

    fn run_file(&self, kind: &str, session: &str, file: &str) -> Result<PathBuf> {
        Ok(self.run_dir(kind, session)?.join(file))
    }

    fn run_dir(&self, kind: &str, session: &str) -> Result<PathBuf> {
        if !is_component(session) {
            return Err(Error::store(
                self.root.join(kind),
                format!("invalid session id {session:?} for a {kind} directory"),
                "session ids are single path components; this is a flakelab bug",
            ));
        }
        let dir = self.root.join(kind).join(session);
        self.make_dir(&dir)?;
        Ok(dir)
    }

    /// Creates `dir` (and its parents) once per store; later calls for the
    /// same directory ask nothing of the filesystem.
    fn make_dir(&self, dir: &Path) -> Result<()> {
        let mut made = self.made.lock().unwrap_or_else(|e| e.into_inner());
        if made.contains(dir) {
            return Ok(());
        }
        fs::create_dir_all(dir).map_err(|e| Error::store_io(dir, &e, HINT_WRITE))?;
        made.insert(dir.to_path_buf());
        Ok(())
    }

    /// `path` relative to the store root (what goes into
    /// [`RunRecord::log`]); a path outside the store is returned unchanged.
    pub fn relative(&self, path: &Path) -> PathBuf {
        path.strip_prefix(&self.root)
            .map_or_else(|_| path.to_path_buf(), Path::to_path_buf)
    }

    /// The runs file of `session`, `root/runs/<session>.jsonl`.
    pub fn runs_path(&self, session: &str) -> Result<PathBuf> {
        if !is_component(session) {
            return Err(Error::store(
                self.root.join(RUNS_DIR),
                format!("invalid session id {session:?} for a runs file"),
                "session ids are single path components; this is a flakelab bug",
            ));
        }
        Ok(self.root.join(RUNS_DIR).join(format!("{session}.jsonl")))
    }

    /// Whether the store has a runs file for `session` (a session under
    /// that id has recorded a run).
    pub fn holds_runs_of(&self, session: &str) -> bool {
        self.runs_path(session)
            .is_ok_and(|p| fs::symlink_metadata(p).is_ok())
    }

    /// Appends one run record to its session's runs file, compactly (with
    /// the test-table and context lines it needs first, in the same write),
    /// and flushes it.
    pub fn append_run(&self, record: &RunRecord) -> Result<()> {
        let mut writers = self.writers.lock().unwrap_or_else(|e| e.into_inner());
        // The session's file is found (and its directory made) at its
        // first run, not at every run.
        if !writers.contains_key(&record.session) {
            let path = self.runs_path(&record.session)?;
            self.make_dir(&self.root.join(RUNS_DIR))?;
            writers.insert(
                record.session.clone(),
                SessionWriter {
                    compact: compact::Writer::new(
                        format!("{:08x}", rand::random::<u32>()),
                        record.session.clone(),
                    ),
                    len: None,
                    path,
                },
            );
        }
        let Some(writer) = writers.get_mut(&record.session) else {
            unreachable!("the session's writer was just added");
        };
        let path = &writer.path;
        let pending = writer
            .compact
            .encode(record)
            .map_err(|e| Error::store(path, e, HINT_WRITE))?;
        writer.len = Some(append_bytes_after(path, &pending.text, writer.len)?);
        writer.compact.commit(pending);
        Ok(())
    }

    /// The run records of `session` (every session's when None, sessions in
    /// the order they were recorded), one at a
    /// time as they are decoded, in file order: see [`RunIter`]. Only the
    /// session's own file is read (and the legacy `runs.jsonl`, when the
    /// store has one).
    pub fn runs_iter(&self, session: Option<&str>) -> Result<RunIter> {
        let mut files = vec![self.root.join(RUNS_FILE)];
        match session {
            Some(s) => {
                if let Ok(path) = self.runs_path(s) {
                    files.push(path);
                }
            }
            None => {
                let dir = self.root.join(RUNS_DIR);
                let mut found: Vec<PathBuf> = match fs::read_dir(&dir) {
                    Ok(entries) => entries
                        .map(|e| e.map(|e| e.path()))
                        .collect::<std::io::Result<_>>()
                        .map_err(|e| Error::store(&dir, e, HINT_READ))?,
                    Err(e) if e.kind() == ErrorKind::NotFound => Vec::new(),
                    Err(e) => return Err(Error::store(&dir, e, HINT_READ)),
                };
                found.retain(|p| p.extension().is_some_and(|x| x == "jsonl"));
                // Sessions in the order they were recorded (ids that start
                // in the same second do not sort by time), then any file
                // no session record names, by name.
                let (sessions, _) = self.load_sessions()?;
                let order: HashMap<&str, usize> = sessions
                    .iter()
                    .enumerate()
                    .map(|(i, s)| (s.id.as_str(), i))
                    .collect();
                found.sort_by_cached_key(|p| {
                    let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or("");
                    (order.get(stem).copied().unwrap_or(usize::MAX), p.clone())
                });
                files.extend(found);
            }
        }
        Ok(RunIter::new(files, session.map(str::to_string)))
    }

    /// Calls `f` with each run record of `session`, decoded one at a time
    /// (see [`Store::runs_iter`]); stops at the first error `f` returns.
    pub fn each_run(
        &self,
        session: &str,
        mut f: impl FnMut(RunRecord) -> Result<()>,
    ) -> Result<LoadStats> {
        let mut runs = self.runs_iter(Some(session))?;
        for r in runs.by_ref() {
            f(r)?;
        }
        runs.finish()
    }

    /// Calls `f` with a view of each run of `session` (see
    /// [`Store::runs_iter`]): what a fold needs, read straight from the
    /// line without making the whole record; stops at the first error `f`
    /// returns.
    pub fn each_view(
        &self,
        session: &str,
        f: impl FnMut(&RunView<'_>) -> Result<()>,
    ) -> Result<LoadStats> {
        let mut runs = self.runs_iter(Some(session))?;
        runs.each_view(f)?;
        runs.finish()
    }

    /// Appends one record to `sessions.jsonl` and flushes it.
    pub fn append_session(&self, record: &SessionRecord) -> Result<()> {
        append_line(&self.root.join(SESSIONS_FILE), record)
    }

    /// Appends one record to `ladders.jsonl` and flushes it.
    pub fn append_ladder(&self, record: &LadderRecord) -> Result<()> {
        append_line(&self.root.join(LADDERS_FILE), record)
    }

    /// Reads every ladder, in file order, as tolerantly as
    /// [`Store::load_runs`].
    pub fn load_ladders(&self) -> Result<(Vec<LadderRecord>, LoadStats)> {
        read_lines(&self.root.join(LADDERS_FILE), |_| true)
    }

    /// Appends a session's end record to `session-ends.jsonl`.
    pub fn append_session_end(&self, record: &SessionEndRecord) -> Result<()> {
        append_line(&self.root.join(SESSION_ENDS_FILE), record)
    }

    /// The end record of `session`, if it recorded one.
    pub fn session_end(&self, session: &str) -> Result<Option<SessionEndRecord>> {
        let (mut found, _) = read_lines(
            &self.root.join(SESSION_ENDS_FILE),
            |r: &SessionEndRecord| r.session == session,
        )?;
        Ok(found.pop())
    }

    /// Appends `record` to its design's file and flushes it.
    pub fn append_record<R: DesignRecord>(&self, record: &R) -> Result<()> {
        append_line(&self.root.join(R::FILE), record)
    }

    /// Every record of `R`'s file that belongs to `session`, in file order
    /// (deduplicated on its key, as every tolerant read is).
    pub fn records_of<R: DesignRecord>(&self, session: &str) -> Result<Vec<R>> {
        let (found, _) = read_lines(&self.root.join(R::FILE), |r: &R| r.session() == session)?;
        Ok(found)
    }

    /// Writes `text` to `name` in the directory `dir` under the store
    /// (created if needed), replacing what was there; returns the file's
    /// path. For what a design hands its subjects (a runner plugin, the list
    /// of one ordered run).
    pub fn write_support_file(&self, dir: &Path, name: &str, text: &str) -> Result<PathBuf> {
        let dir = self.root.join(dir);
        fs::create_dir_all(&dir).map_err(|e| Error::store_io(&dir, &e, HINT_WRITE))?;
        let file = dir.join(name);
        fs::write(&file, text).map_err(|e| Error::store_io(&file, &e, HINT_WRITE))?;
        Ok(file)
    }

    /// Reads every run of every session, in file order (see
    /// [`Store::runs_iter`]). Blank lines are ignored, lines that do not
    /// parse and repeated ids are skipped and counted. A missing store reads
    /// as empty.
    pub fn load_runs(&self) -> Result<(Vec<RunRecord>, LoadStats)> {
        let mut runs = self.runs_iter(None)?;
        let all: Vec<RunRecord> = runs.by_ref().collect();
        Ok((all, runs.finish()?))
    }

    /// Reads every session, in file order, as tolerantly as
    /// [`Store::load_runs`].
    pub fn load_sessions(&self) -> Result<(Vec<SessionRecord>, LoadStats)> {
        read_lines(&self.root.join(SESSIONS_FILE), |_| true)
    }

    /// The session with this id, or the latest one (last in the file) when
    /// `id` is None. A unique prefix of an id is accepted; a prefix matching
    /// several sessions is a usage error.
    pub fn session(&self, id: Option<&str>) -> Result<Option<SessionRecord>> {
        let (mut sessions, _) = self.load_sessions()?;
        let Some(id) = id else {
            // The latest session of the user's own, not a derived one.
            return Ok(sessions.into_iter().rev().find(|s| s.part_of.is_none()));
        };
        if let Some(pos) = sessions.iter().position(|s| s.id == id) {
            return Ok(Some(sessions.swap_remove(pos)));
        }
        let mut matches: Vec<SessionRecord> = sessions
            .into_iter()
            .filter(|s| s.id.starts_with(id))
            .collect();
        match matches.len() {
            0 => Ok(None),
            1 => Ok(matches.pop()),
            n => {
                let ids: Vec<&str> = matches.iter().map(|s| s.id.as_str()).collect();
                Err(Error::usage(
                    format!(
                        "session prefix {id:?} matches {n} sessions: {}",
                        ids.join(", ")
                    ),
                    "give more characters of the session id",
                ))
            }
        }
    }

    /// All runs of the session with exactly this id, in index order. The
    /// stats describe the files read (the session's, and the legacy
    /// `runs.jsonl`).
    pub fn runs_of(&self, session: &str) -> Result<(Vec<RunRecord>, LoadStats)> {
        let mut runs = self.runs_iter(Some(session))?;
        let mut all: Vec<RunRecord> = runs.by_ref().collect();
        all.sort_by_key(|r| r.index);
        Ok((all, runs.finish()?))
    }
}

/// Whether `name` is one normal path component (a session id).
fn is_component(name: &str) -> bool {
    let mut parts = Path::new(name).components();
    matches!(
        (parts.next(), parts.next()),
        (Some(Component::Normal(_)), None)
    )
}

/// Appends `record` as one JSON line to `path` under an exclusive lock. When
/// the file does not end with a newline (a line truncated by a crash), a
/// newline is written first so the new record starts its own line; the
/// separator, the record and its newline go out in one write.
fn append_line<T: Serialize>(path: &Path, record: &T) -> Result<()> {
    let mut json = serde_json::to_vec(record).map_err(|e| Error::store(path, e, HINT_WRITE))?;
    json.push(b'\n');
    append_bytes(path, &json)
}

/// Appends `text` (whole lines, each ending in a newline) to `path` under an
/// exclusive lock, in one write, healing a cut-short last line first as
/// [`append_line`] says.
fn append_bytes(path: &Path, text: &[u8]) -> Result<()> {
    append_bytes_after(path, text, None).map(|_| ())
}

/// [`append_bytes`], told the file's length after the caller's last append
/// (which ended with a newline): a file still that long needs no look at
/// its last byte. Returns the file's length after this append.
fn append_bytes_after(path: &Path, text: &[u8], known: Option<u64>) -> Result<u64> {
    let io_err = |e: std::io::Error| Error::store_io(path, &e, HINT_WRITE);

    let mut file = open::append(path).map_err(io_err)?;
    file.lock().map_err(io_err)?;
    let result = (|| {
        let len = file.metadata()?.len();
        // One write either way: the text, or a newline and the text.
        let healed;
        let buf = if known != Some(len) && !ends_with_newline(&mut file, len)? {
            healed = [b"\n", text].concat();
            &healed[..]
        } else {
            text
        };
        file.write_all(buf)?;
        file.flush()?;
        Ok(len + buf.len() as u64)
    })();
    let unlocked = file.unlock();
    let len = result.map_err(io_err)?;
    unlocked.map_err(io_err)?;
    Ok(len)
}

/// Whether `file` (of `len` bytes) is empty or its last byte is `\n`. Call
/// with the lock held.
fn ends_with_newline(file: &mut File, len: u64) -> std::io::Result<bool> {
    if len == 0 {
        return Ok(true);
    }
    file.seek(SeekFrom::Start(len - 1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    Ok(last[0] == b'\n')
}

/// Streams the JSON lines of `path`, keeping the records `keep` accepts.
/// Blank lines are ignored; lines that are not valid UTF-8 JSON of `T` are
/// counted in [`LoadStats::skipped_lines`]; a record whose id was seen
/// earlier in the file is counted in [`LoadStats::duplicate_ids`] and
/// dropped. A missing file reads as empty.
fn read_lines<T, F>(path: &Path, keep: F) -> Result<(Vec<T>, LoadStats)>
where
    T: DeserializeOwned + Keyed,
    F: FnMut(&T) -> bool,
{
    let mut records = Vec::new();
    let stats = each_line(path, keep, |r| records.push(r))?;
    Ok((records, stats))
}

/// [`read_lines`], handing each kept record to `sink` instead of holding it.
fn each_line<T, F, S>(path: &Path, mut keep: F, mut sink: S) -> Result<LoadStats>
where
    T: DeserializeOwned + Keyed,
    F: FnMut(&T) -> bool,
    S: FnMut(T),
{
    let mut stats = LoadStats::default();
    let file = match open::read(path) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(stats),
        Err(e) => return Err(Error::store(path, e, HINT_READ)),
    };
    let mut reader = BufReader::new(file);
    let mut seen = HashSet::new();
    let mut line = Vec::new();
    loop {
        match open::read_line(&mut reader, &mut line)
            .map_err(|e| Error::store(path, e, HINT_READ))?
        {
            open::LineRead::End => break,
            open::LineRead::TooLong => {
                stats.skipped_lines += 1;
                continue;
            }
            open::LineRead::Line => {}
        }
        if line.trim_ascii().is_empty() {
            continue;
        }
        let record: T = match serde_json::from_slice(&line) {
            Ok(record) => record,
            Err(_) => {
                stats.skipped_lines += 1;
                continue;
            }
        };
        if !seen.insert(record.key().into_owned()) {
            stats.duplicate_ids += 1;
            continue;
        }
        if keep(&record) {
            sink(record);
        }
    }
    Ok(stats)
}

// Added for `flakelab merge` (issue #20): which directories are stores, and
// a joined session record taking the place of the one a store holds.
impl Store {
    /// Whether `dir` holds a store (its sessions file), as opposed to a
    /// directory that merely contains one.
    pub fn is_store(dir: &Path) -> bool {
        // Whatever the entry is: a link or a FIFO in its place is then named
        // by the reader that refuses it, rather than hiding the store.
        fs::symlink_metadata(dir.join(SESSIONS_FILE)).is_ok()
    }

    /// Puts `record` in place of the stored session with its id (or appends
    /// it when there is none), under the sessions file's lock: every other
    /// line, readable or not, is kept byte for byte, and the file is
    /// replaced by a rename, so a crash leaves the old file or the new one.
    pub fn replace_session(&self, record: &SessionRecord) -> Result<()> {
        let path = self.root.join(SESSIONS_FILE);
        let io_err = |e: std::io::Error| Error::store_io(&path, &e, HINT_WRITE);
        let json = serde_json::to_string(record).map_err(|e| Error::store(&path, e, HINT_WRITE))?;
        let mut file = open::append(&path).map_err(io_err)?;
        file.lock().map_err(io_err)?;
        let result = (|| {
            let mut text = Vec::new();
            file.seek(SeekFrom::Start(0))?;
            file.read_to_end(&mut text)?;
            let mut out = Vec::with_capacity(text.len() + json.len() + 1);
            let mut replaced = false;
            for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                let same = !replaced
                    && serde_json::from_slice::<SessionRecord>(line)
                        .is_ok_and(|s| s.id == record.id);
                if same {
                    out.extend_from_slice(json.as_bytes());
                    replaced = true;
                } else {
                    out.extend_from_slice(line);
                }
                out.push(b'\n');
            }
            if !replaced {
                out.extend_from_slice(json.as_bytes());
                out.push(b'\n');
            }
            let tmp = path.with_extension("jsonl.merge-tmp");
            let mut new = File::create(&tmp)?;
            new.write_all(&out)?;
            new.sync_all()?;
            fs::rename(&tmp, &path)
        })();
        let unlocked = file.unlock();
        result.map_err(io_err)?;
        unlocked.map_err(io_err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::HostInfo;
    use crate::record::{EnvDelta, Outcome, ProcessEnd, RUN_SCHEMA, SESSION_SCHEMA};
    use std::fs::OpenOptions;

    fn run(session: &str, index: usize) -> RunRecord {
        RunRecord {
            schema: RUN_SCHEMA.to_string(),
            id: format!("{session}.{index}"),
            session: session.to_string(),
            index,
            cell: "baseline".to_string(),
            perturbations: vec!["cpu=1".to_string()],
            replicate: 0,
            seed: 42,
            started_at: "2025-01-01T00:00:00Z".to_string(),
            duration_s: 0.25,
            outcome: Outcome::Fail,
            end: ProcessEnd::Exited { code: 1 },
            exit_code: Some(1),
            signal: None,
            signature_match: Some(true),
            signature_pattern: None,
            reason: None,
            log: Some(PathBuf::from(format!("logs/{session}/{index:05}.log"))),
            output_bytes: 10,
            output_dropped: 0,
            argv: vec!["sh".to_string(), "-c".to_string(), "exit 1".to_string()],
            cwd: PathBuf::from("/tmp"),
            env: EnvDelta::default(),
            repro: "sh -c 'exit 1'".to_string(),
            repro_note: None,
            cpu_busy: None,
            cpu: None,
            junit: None,
            workers: None,
            tests_missing: None,
            tests: Vec::new(),
            failure_signature: None,
            topology: None,
            processes: None,
            stragglers: 0,
            warnings: vec![],
        }
    }

    fn session(id: &str) -> SessionRecord {
        SessionRecord {
            schema: SESSION_SCHEMA.to_string(),
            id: id.to_string(),
            started_at: "2025-01-01T00:00:00Z".to_string(),
            flakelab_version: "0.1.0".to_string(),
            command: vec!["true".to_string()],
            cwd: PathBuf::from("/tmp"),
            seed: 1,
            confidence: 0.95,
            signature: None,
            signatures: Vec::new(),
            timeout_s: Some(10.0),
            jobs: 1,
            cells: vec![],
            plan: crate::plan::build(&["baseline".into()], 2, 1),
            host: HostInfo {
                hostname: "h".to_string(),
                os: "Linux".to_string(),
                kernel: "6".to_string(),
                arch: "x86_64".to_string(),
                cpu_model: "cpu".to_string(),
                cpus: 1,
                memory_bytes: 1 << 30,
            },
            repo: None,
            replay_of: None,
            junit: None,
            runner: None,
            runner_note: None,
            runner_version: None,
            left_out: Vec::new(),
            rung: None,
            part_of: None,
            shards: None,
            warnings: Vec::new(),
            records_end: false,
            design_chosen: None,
            scan_prove: None,
            per_test_from: None,
        }
    }

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join(".flakelab")).unwrap();
        (dir, store)
    }

    #[test]
    fn a_replaced_session_takes_its_place_and_every_other_line_stays() {
        let (_d, store) = store();
        assert!(!Store::is_store(store.root()));
        store.append_session(&session("a")).unwrap();
        store.append_session(&session("b")).unwrap();
        let path = store.root().join(SESSIONS_FILE);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{not json\n").unwrap();
        assert!(Store::is_store(store.root()));
        let mut a = session("a");
        a.seed = 99;
        store.replace_session(&a).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].contains("\"seed\":99"), "{}", lines[0]);
        assert!(lines[1].contains("\"id\":\"b\""));
        assert_eq!(lines[2], "{not json");
        assert_eq!(store.session(Some("a")).unwrap().unwrap().seed, 99);
        // A session not held is appended.
        store.replace_session(&session("c")).unwrap();
        assert_eq!(store.load_sessions().unwrap().0.len(), 3);
    }

    #[test]
    fn a_line_cut_short_by_another_writer_between_two_appends_is_healed() {
        let (_d, store) = store();
        store.append_run(&run("s", 0)).unwrap();
        let path = store.runs_path("s").unwrap();
        let before = fs::read(&path).unwrap();
        assert_eq!(before.last(), Some(&b'\n'));
        // Untouched: the next append does not look at the last byte, and
        // the file is the two appends back to back.
        store.append_run(&run("s", 1)).unwrap();
        let after = fs::read(&path).unwrap();
        assert_eq!(&after[..before.len()], &before[..]);
        // Another writer leaves a line without its newline: the length the
        // store remembers no longer matches, so it looks, and heals it.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"cut").unwrap();
        store.append_run(&run("s", 2)).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.contains("{\"cut\n"), "{text}");
        let (runs, stats) = store.load_runs().unwrap();
        let indexes: Vec<usize> = runs.iter().map(|r| r.index).collect();
        assert_eq!(indexes, [0, 1, 2]);
        assert_eq!(stats.skipped_lines, 1);
    }

    #[test]
    fn open_creates_root_and_logs() {
        let (_dir, store) = store();
        assert!(store.root().join(LOGS_DIR).is_dir());
        assert_eq!(store.load_runs().unwrap(), (vec![], LoadStats::default()));
        assert_eq!(store.session(None).unwrap(), None);
    }

    #[test]
    fn open_fails_with_a_hint_under_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        fs::write(&file, "x").unwrap();
        let err = Store::open(&file.join("store")).unwrap_err();
        assert!(err
            .to_string()
            .contains("hint: choose a writable directory with --store"));
    }

    #[test]
    fn log_paths_are_under_the_session_dir() {
        let (_dir, store) = store();
        let path = store.log_path("s1", 7).unwrap();
        assert_eq!(path, store.root().join("logs/s1/00007.log"));
        assert!(path.parent().unwrap().is_dir());
        assert_eq!(store.relative(&path), PathBuf::from("logs/s1/00007.log"));
        // The directory and the name make the same path, relative too.
        let dir = store.log_dir("s1").unwrap();
        assert_eq!(dir.join(Store::log_name(7)), path);
        assert_eq!(
            store.relative(&dir).join(Store::log_name(7)),
            store.relative(&path)
        );
        assert!(store.log_dir("../x").is_err());
        assert!(store.log_path("../x", 0).is_err());
        assert!(store.log_path("", 0).is_err());
    }

    #[test]
    fn round_trip() {
        let (_dir, store) = store();
        let runs = vec![run("s1", 0), run("s1", 1), run("s2", 0)];
        for r in &runs {
            store.append_run(r).unwrap();
        }
        store.append_session(&session("s1")).unwrap();
        store.append_session(&session("s2")).unwrap();

        assert_eq!(store.load_runs().unwrap(), (runs, LoadStats::default()));
        let (sessions, stats) = store.load_sessions().unwrap();
        assert_eq!(sessions, vec![session("s1"), session("s2")]);
        assert_eq!(stats, LoadStats::default());
    }

    #[test]
    fn truncated_last_line_is_tolerated_and_healed() {
        let (_dir, store) = store();
        store.append_run(&run("s", 0)).unwrap();
        let line = serde_json::to_string(&run("s", 1)).unwrap();
        let mut file = OpenOptions::new()
            .append(true)
            .open(store.runs_path("s").unwrap())
            .unwrap();
        file.write_all(&line.as_bytes()[..line.len() / 2]).unwrap();
        drop(file);

        let (runs, stats) = store.load_runs().unwrap();
        assert_eq!(runs, vec![run("s", 0)]);
        assert_eq!(stats.skipped_lines, 1);

        store.append_run(&run("s", 2)).unwrap();
        let (runs, stats) = store.load_runs().unwrap();
        assert_eq!(runs, vec![run("s", 0), run("s", 2)]);
        assert_eq!(
            stats,
            LoadStats {
                skipped_lines: 1,
                duplicate_ids: 0
            }
        );
    }

    #[test]
    fn blank_and_corrupt_lines() {
        let (_dir, store) = store();
        store.append_run(&run("s", 0)).unwrap();
        let mut file = OpenOptions::new()
            .append(true)
            .open(store.runs_path("s").unwrap())
            .unwrap();
        file.write_all(b"\n   \n{not json}\n\xff\xfe\n").unwrap();
        drop(file);
        store.append_run(&run("s", 1)).unwrap();

        let (runs, stats) = store.load_runs().unwrap();
        assert_eq!(runs, vec![run("s", 0), run("s", 1)]);
        assert_eq!(
            stats,
            LoadStats {
                skipped_lines: 2,
                duplicate_ids: 0
            }
        );
    }

    #[test]
    fn duplicate_ids_are_read_once() {
        let (_dir, store) = store();
        let first = run("s", 0);
        let mut second = run("s", 0);
        second.outcome = Outcome::Pass;
        store.append_run(&first).unwrap();
        store.append_run(&second).unwrap();
        store.append_run(&run("s", 1)).unwrap();
        store.append_session(&session("s")).unwrap();
        store.append_session(&session("s")).unwrap();

        let (runs, stats) = store.load_runs().unwrap();
        assert_eq!(runs, vec![first, run("s", 1)]);
        assert_eq!(
            stats,
            LoadStats {
                skipped_lines: 0,
                duplicate_ids: 1
            }
        );
        let (sessions, stats) = store.load_sessions().unwrap();
        assert_eq!(sessions.len(), 1);
        assert_eq!(stats.duplicate_ids, 1);
    }

    #[test]
    fn session_lookup_by_latest_id_and_prefix() {
        let (_dir, store) = store();
        for id in ["20250101-aaaa", "20250101-aabb", "20250102-cccc"] {
            store.append_session(&session(id)).unwrap();
        }
        let id = |s: Option<SessionRecord>| s.map(|s| s.id);
        assert_eq!(
            id(store.session(None).unwrap()).as_deref(),
            Some("20250102-cccc")
        );
        assert_eq!(
            id(store.session(Some("20250101-aabb")).unwrap()).as_deref(),
            Some("20250101-aabb")
        );
        assert_eq!(
            id(store.session(Some("20250102")).unwrap()).as_deref(),
            Some("20250102-cccc")
        );
        assert_eq!(id(store.session(Some("nope")).unwrap()), None);
        let err = store.session(Some("20250101-aa")).unwrap_err();
        assert!(err.to_string().contains("matches 2 sessions"));
    }

    #[test]
    fn runs_of_filters_and_sorts_by_index() {
        let (_dir, store) = store();
        for r in [run("a", 2), run("b", 0), run("a", 0), run("a", 1)] {
            store.append_run(&r).unwrap();
        }
        let (runs, stats) = store.runs_of("a").unwrap();
        let indices: Vec<usize> = runs.iter().map(|r| r.index).collect();
        assert_eq!(indices, vec![0, 1, 2]);
        assert!(runs.iter().all(|r| r.session == "a"));
        assert_eq!(stats, LoadStats::default());
        assert!(store.runs_of("c").unwrap().0.is_empty());
    }

    #[test]
    fn concurrent_appends_from_separate_handles_lose_nothing() {
        const THREADS: usize = 8;
        const PER_THREAD: usize = 200;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join(".flakelab");
        std::thread::scope(|scope| {
            for t in 0..THREADS {
                let root = &root;
                scope.spawn(move || {
                    let store = Store::open(root).unwrap();
                    for i in 0..PER_THREAD {
                        store.append_run(&run(&format!("t{t}"), i)).unwrap();
                    }
                });
            }
        });

        let (runs, stats) = Store::open(&root).unwrap().load_runs().unwrap();
        assert_eq!(stats, LoadStats::default());
        let ids: HashSet<&str> = runs.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(runs.len(), THREADS * PER_THREAD);
        assert_eq!(ids.len(), THREADS * PER_THREAD);
    }
}
