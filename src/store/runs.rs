//! Reading run records back one at a time: [`RunIter`] walks the runs files
//! of a store (or of one session) line by line, decodes each record as it
//! comes and holds no more than the line in hand, the writers' tables and
//! one bit per run index already seen.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::File;
use std::io::{BufRead, BufReader, ErrorKind};
use std::path::PathBuf;

use super::compact::{Line, Reader};
use super::lines::MAX_BIT_INDEX;
use super::open::MAX_LINE;
use super::view::RunView;
use super::{LoadStats, HINT_READ};
use crate::error::{Error, Result};
use crate::record::RunRecord;

/// Runs already read, so that a duplicate (a file concatenated onto itself,
/// a store merged twice) is read once: for ids of the form
/// `<session>.<digits>` (every id flakelab writes) a bit per number, one bit
/// set per session and digit count (so `s.00005` and `s.0000005` stay two
/// ids), the id itself for any other.
/// One bit set per digit count of a session's run ids.
type BitSets = Vec<(usize, Vec<u64>)>;

#[derive(Debug, Default)]
struct Seen {
    /// Per session; runs come in runs of one session, so the last one
    /// met is tried before the index.
    by_session: Vec<(String, BitSets)>,
    index: HashMap<String, usize>,
    last: usize,
    others: HashSet<String>,
}

/// The digit count and number of `id` when it is `<session>.<digits>` with
/// a number below [`MAX_BIT_INDEX`].
fn numbered(id: &str, session: &str) -> Option<(usize, usize)> {
    let digits = id.strip_prefix(session)?.strip_prefix('.')?;
    if digits.is_empty() || digits.len() > 18 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    (n < MAX_BIT_INDEX).then_some((digits.len(), n as usize))
}

impl Seen {
    /// Whether `r` is new (and remembers it).
    fn insert(&mut self, r: &RunView) -> bool {
        let numbered = r
            .derived_number()
            .or_else(|| numbered(&r.id(), r.session()));
        let Some((width, n)) = numbered else {
            return self.others.insert(r.id().into_owned());
        };
        let session = r.session();
        let at = match self.by_session.get(self.last) {
            Some((s, _)) if s == session => self.last,
            _ => match self.index.get(session) {
                Some(&at) => at,
                None => {
                    self.index
                        .insert(session.to_string(), self.by_session.len());
                    self.by_session.push((session.to_string(), Vec::new()));
                    self.by_session.len() - 1
                }
            },
        };
        self.last = at;
        let sets = &mut self.by_session[at].1;
        let bits = match sets.iter().position(|(w, _)| *w == width) {
            Some(at) => &mut sets[at].1,
            None => {
                sets.push((width, Vec::new()));
                &mut sets.last_mut().expect("just pushed").1
            }
        };
        let (word, bit) = (n / 64, 1u64 << (n % 64));
        if bits.len() <= word {
            bits.resize(word + 1, 0);
        }
        let new = bits[word] & bit == 0;
        bits[word] |= bit;
        new
    }
}

#[cfg(test)]
mod seen_tests {
    use super::numbered;

    #[test]
    fn numbered_ids_keep_their_digit_count() {
        assert_eq!(numbered("s.00005", "s"), Some((5, 5)));
        assert_eq!(numbered("s.0000005", "s"), Some((7, 5)));
        assert_eq!(numbered("s.5", "s"), Some((1, 5)));
        assert_eq!(numbered("s.+5", "s"), None);
        assert_eq!(numbered("s.", "s"), None);
        assert_eq!(numbered("s5", "s"), None);
        assert_eq!(numbered("t.00005", "s"), None);
        assert_eq!(numbered("s.00005x", "s"), None);
        assert_eq!(numbered("s.99999999999", "s"), None);
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
    /// In a line longer than [`MAX_LINE`], skipped up to its newline.
    skipping: bool,
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
            skipping: false,
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
            match super::open::read(&path) {
                Ok(file) => {
                    self.current = Some((
                        path,
                        BufReader::with_capacity(1 << 20, file),
                        Reader::default(),
                    ));
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

impl RunIter {
    /// Reads on to the next run not read before and hands it to `f`;
    /// false at the end (or at an I/O error). A line whole in the read
    /// buffer is decoded where it lies; only a line across the buffer's
    /// end is copied.
    fn step(&mut self, f: &mut dyn FnMut(RunView<'_>)) -> bool {
        loop {
            if self.error.is_some() {
                return false;
            }
            if self.current.is_none() && !self.open_next() {
                return false;
            }
            let Some((path, reader, decoder)) = self.current.as_mut() else {
                return false;
            };
            let buf = match reader.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.error = Some(Error::store(path.as_path(), e, HINT_READ));
                    return false;
                }
            };
            let (line, used, last) = if buf.is_empty() {
                // The end of the file: a last line without its newline.
                if self.line.is_empty() {
                    self.current = None;
                    continue;
                }
                (self.line.as_slice(), 0, true)
            } else {
                match memchr::memchr(b'\n', buf) {
                    Some(at) if self.line.is_empty() => (&buf[..at], at + 1, false),
                    Some(at) => {
                        self.line.extend_from_slice(&buf[..at]);
                        (self.line.as_slice(), at + 1, false)
                    }
                    None => {
                        let n = buf.len();
                        if self.line.len() + n > MAX_LINE {
                            // Too long to be a record: skipped up to its end,
                            // never held whole.
                            self.skipping = true;
                            self.line.clear();
                        } else if !self.skipping {
                            self.line.extend_from_slice(buf);
                        }
                        reader.consume(n);
                        continue;
                    }
                }
            };
            let line = line.trim_ascii();
            let mut found = false;
            if std::mem::take(&mut self.skipping) || line.len() > MAX_LINE {
                self.stats.skipped_lines += 1;
            } else if !line.is_empty() {
                match decoder.line(line, self.session.as_deref()) {
                    Line::Run(r) => {
                        if self.seen.insert(&r) {
                            found = true;
                            f(r);
                        } else {
                            self.stats.duplicate_ids += 1;
                        }
                    }
                    Line::Other => {}
                    Line::Unreadable => self.stats.skipped_lines += 1,
                }
            }
            reader.consume(used);
            self.line.clear();
            if last {
                self.current = None;
            }
            if found {
                return true;
            }
        }
    }

    /// Calls `f` with each run left, as a view (nothing expanded), until
    /// the end or the first error `f` returns.
    pub fn each_view(&mut self, mut f: impl FnMut(&RunView<'_>) -> Result<()>) -> Result<()> {
        let mut outcome = Ok(());
        while outcome.is_ok() && self.step(&mut |r| outcome = f(&r)) {}
        outcome
    }
}

impl Iterator for RunIter {
    type Item = RunRecord;

    fn next(&mut self) -> Option<RunRecord> {
        let mut out = None;
        self.step(&mut |r| out = Some(r.into_record()));
        out
    }
}
