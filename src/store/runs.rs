//! Reading run records back one at a time: [`RunIter`] walks the runs files
//! of a store (or of one session) line by line, decodes each record as it
//! comes and holds no more than the line in hand, the writers' tables and
//! one bit per run index already seen.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::File;
use std::io::{BufRead, BufReader, ErrorKind};
use std::path::PathBuf;

use super::compact::{self, Line, Reader};
use super::{LoadStats, HINT_READ};
use crate::error::{Error, Result};
use crate::record::RunRecord;

/// Runs already read, so that a duplicate (a file concatenated onto itself,
/// a store merged twice) is read once: a bit per index for ids of the form
/// `<session>.<index:05>`, the id itself for any other.
#[derive(Debug, Default)]
struct Seen {
    by_session: HashMap<String, Vec<u64>>,
    others: HashSet<String>,
}

/// Indices above this are remembered by id: a bit set that large is not
/// worth it.
const MAX_BIT_INDEX: usize = 1 << 26;

impl Seen {
    /// Whether `r` is new (and remembers it).
    fn insert(&mut self, r: &RunRecord) -> bool {
        if r.index < MAX_BIT_INDEX && r.id == compact::run_id(&r.session, r.index) {
            let bits = match self.by_session.get_mut(&r.session) {
                Some(bits) => bits,
                None => self.by_session.entry(r.session.clone()).or_default(),
            };
            let (word, bit) = (r.index / 64, 1u64 << (r.index % 64));
            if bits.len() <= word {
                bits.resize(word + 1, 0);
            }
            let new = bits[word] & bit == 0;
            bits[word] |= bit;
            new
        } else {
            self.others.insert(r.id.clone())
        }
    }
}

/// The run records of a store or of one session, decoded one line at a
/// time, in file order (the legacy `runs.jsonl` first, then the session
/// files by name); within a file that is the order the runs ended in, not
/// index order. Blank lines are ignored; lines that do not decode are
/// skipped and counted; a run read before is skipped and counted.
///
/// An I/O error ends the iteration; [`RunIter::finish`] returns it.
#[derive(Debug)]
pub struct RunIter {
    files: VecDeque<PathBuf>,
    current: Option<(PathBuf, BufReader<File>, Reader)>,
    session: Option<String>,
    seen: Seen,
    stats: LoadStats,
    error: Option<Error>,
    line: Vec<u8>,
}

impl RunIter {
    pub(super) fn new(files: Vec<PathBuf>, session: Option<String>) -> RunIter {
        RunIter {
            files: files.into(),
            current: None,
            session,
            seen: Seen::default(),
            stats: LoadStats::default(),
            error: None,
            line: Vec::new(),
        }
    }

    /// What the reading skipped so far.
    pub fn stats(&self) -> LoadStats {
        self.stats
    }

    /// Ends the reading: the I/O error that stopped it early, if one did,
    /// else what it skipped.
    pub fn finish(self) -> Result<LoadStats> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.stats),
        }
    }

    /// Opens the next file that exists; false when none is left.
    fn open_next(&mut self) -> bool {
        while let Some(path) = self.files.pop_front() {
            match File::open(&path) {
                Ok(file) => {
                    self.current = Some((path, BufReader::new(file), Reader::default()));
                    return true;
                }
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => {
                    self.error = Some(Error::store(&path, e, HINT_READ));
                    return false;
                }
            }
        }
        false
    }
}

impl Iterator for RunIter {
    type Item = RunRecord;

    fn next(&mut self) -> Option<RunRecord> {
        loop {
            if self.error.is_some() {
                return None;
            }
            if self.current.is_none() && !self.open_next() {
                return None;
            }
            let (path, reader, decoder) = self.current.as_mut()?;
            self.line.clear();
            match reader.read_until(b'\n', &mut self.line) {
                Ok(0) => {
                    self.current = None;
                    continue;
                }
                Ok(_) => {}
                Err(e) => {
                    self.error = Some(Error::store(path.as_path(), e, HINT_READ));
                    return None;
                }
            }
            let line = self.line.trim_ascii();
            if line.is_empty() {
                continue;
            }
            match decoder.line(line, self.session.as_deref()) {
                Line::Run(r) => {
                    if self.seen.insert(&r) {
                        return Some(*r);
                    }
                    self.stats.duplicate_ids += 1;
                }
                Line::Other => {}
                Line::Unreadable => self.stats.skipped_lines += 1,
            }
        }
    }
}
