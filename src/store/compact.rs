//! The compact run encoding, `flakelab.run/2`: what a session's runs share
//! is written once per writer, and each run line holds only what is its own.
//!
//! A writer (one [`super::Store`] writing one session) names itself with a
//! random id `w` and writes three kinds of lines, all JSON objects:
//!
//! - `flakelab.tests/2`: entries `from..` of the writer's test table, one
//!   per test id in the order first seen, with its family and its usual
//!   outcome (`pass`, or `skip` for a test first seen skipped);
//! - `flakelab.context/2`: context `c`, the fields every run of a cell
//!   repeats (cell, perturbations, argv, cwd, env, repro line, report and
//!   log paths, workers), with the run's id, session, seed and index as
//!   placeholders
//!   (see `store::template`);
//! - `flakelab.run/2`: one run: its index, context, replicate, seed, times
//!   and ends, and of its tests only the count of table entries it covers
//!   (`n`), the ranges of them it did not run (`ab`), and those whose record
//!   is not the plain usual outcome (`t`).
//!
//! A record the compact form cannot give back exactly (a test id twice in
//! one run, a path that is not UTF-8, an id that is not `<session>.<index>`
//! is kept in the line) is written whole instead: the run record's JSON as
//! in `flakelab.run/1`, tagged `flakelab.run/2`.
//!
//! What changes on the way back: a passing run's `tests` come back in the
//! table's order (first-seen order across the session), not its report's
//! order, which differs only when the runner shuffled the tests. A run with
//! a failed or errored test whose order is not the table's is written whole,
//! so the order it failed in — what `flakelab bisect` replays — is kept.
//!
//! Pure: bytes in, records out.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;

use super::lines::{CompiledContext, Context, ContextLine, Entry, RunLine, TestLine, TestsLine};
use super::template::Vars;
use super::view::{CompactRun, RunView, Whole};
use crate::record::{ProcessEnd, RunRecord, TestOutcome, RUN_SCHEMA, RUN_SCHEMA_V1};

/// The most contexts one writer's lines may index (a context is one cell
/// in one working copy): a larger `c` is an unreadable line.
const MAX_CONTEXTS: usize = 1 << 16;
pub use crate::record::schema::{CONTEXT_SCHEMA, TESTS_SCHEMA};

pub use super::lines::run_id;

/// The `flakelab.run/1` line of a record (the encoding before the compact
/// one), without its newline: kept to measure against and for stores that
/// must be read by an older flakelab.
pub fn v1_line(record: &RunRecord) -> serde_json::Result<String> {
    let mut json = serde_json::to_value(record)?;
    json["schema"] = RUN_SCHEMA_V1.into();
    serde_json::to_string(&json)
}

/// What one append adds: its text and the writer state it commits.
#[derive(Debug)]
pub struct Pending {
    /// The lines to write in one write, each ending in a newline.
    pub text: Vec<u8>,
    entries: Vec<Entry>,
    context: Option<(Context, u32)>,
    /// The context of the run, when it is not its cell's last one.
    recent: Option<(Context, u32)>,
}

/// The encoding state of one writer of one session.
#[derive(Debug)]
pub struct Writer {
    w: String,
    session: String,
    table: Vec<Entry>,
    by_id: HashMap<String, u32>,
    contexts: HashMap<Context, u32>,
    /// The context of each cell's last run.
    recent: HashMap<String, (Context, u32)>,
}

impl Writer {
    /// A writer of `session` named `w` (unique among the writers of a
    /// session: a random hex string).
    pub fn new(w: String, session: String) -> Writer {
        Writer {
            w,
            session,
            table: Vec::new(),
            by_id: HashMap::new(),
            contexts: HashMap::new(),
            recent: HashMap::new(),
        }
    }

    /// The lines that append `record`. Nothing changes until
    /// [`Writer::commit`]: a failed write is simply not committed.
    pub fn encode(&self, record: &RunRecord) -> serde_json::Result<Pending> {
        match self.compact(record)? {
            Some(p) => Ok(p),
            None => {
                let mut text = serde_json::to_vec(record)?;
                text.push(b'\n');
                Ok(Pending {
                    text,
                    entries: Vec::new(),
                    context: None,
                    recent: None,
                })
            }
        }
    }

    /// Forgets each cell's last context: the next run's is made anew.
    #[cfg(test)]
    pub(super) fn forget_recent(&mut self) {
        self.recent.clear();
    }

    /// Takes in what a written [`Pending`] added.
    pub fn commit(&mut self, pending: Pending) {
        for e in pending.entries {
            self.by_id.insert(e.id.clone(), self.table.len() as u32);
            self.table.push(e);
        }
        if let Some((key, c)) = pending.context {
            self.contexts.insert(key, c);
        }
        if let Some((context, c)) = pending.recent {
            self.recent.insert(context.cell.clone(), (context, c));
        }
    }

    fn compact(&self, r: &RunRecord) -> serde_json::Result<Option<Pending>> {
        if r.session != self.session || r.schema != RUN_SCHEMA {
            return Ok(None);
        }
        let vars = Vars::new(&r.id, &r.session, r.seed, r.index);
        // Whether the id is `run_id(session, index)`, found without making it.
        let derived = (r.id.strip_prefix(r.session.as_str()))
            .and_then(|rest| rest.strip_prefix('.'))
            .is_some_and(|index| index == vars.index);
        // Tests: table entries, new ones appended in the run's order.
        let mut entries: Vec<Entry> = Vec::new();
        let mut new_ids: HashMap<&str, u32> = HashMap::new();
        let mut present: Vec<bool> = vec![false; self.table.len()];
        let mut exceptions: Vec<TestLine> = Vec::new();
        // Whether the run's tests come in table order. A compact line
        // lists them in table order, so a run that ran them otherwise loses
        // its own order; for a run with a failure that order is evidence
        // (bisect replays what ran before the victim), so such a run is
        // written whole instead.
        let mut in_table_order = true;
        let mut last_k: Option<u32> = None;
        for t in &r.tests {
            let k = match self.by_id.get(&t.id).or(new_ids.get(t.id.as_str())) {
                Some(&k) => k,
                None => {
                    let k = (self.table.len() + entries.len()) as u32;
                    entries.push(Entry {
                        id: t.id.clone(),
                        family: t.family.clone(),
                        usual: if t.outcome == TestOutcome::Skip {
                            TestOutcome::Skip
                        } else {
                            TestOutcome::Pass
                        },
                    });
                    new_ids.insert(&t.id, k);
                    present.push(false);
                    k
                }
            };
            let entry = match (k as usize).checked_sub(self.table.len()) {
                None => &self.table[k as usize],
                Some(i) => &entries[i],
            };
            if present[k as usize] || entry.family != t.family {
                // A test twice in one run, or a family that changed.
                return Ok(None);
            }
            in_table_order &= last_k.is_none_or(|last| last < k);
            last_k = Some(k);
            present[k as usize] = true;
            let plain = t.outcome == entry.usual
                && !t.passed_on_rerun
                && t.retries == 0
                && t.signature.is_none()
                && t.message.is_none()
                && t.signature_match.is_none()
                && t.signature_pattern.is_none();
            if !plain {
                exceptions.push(TestLine {
                    k,
                    o: t.outcome,
                    rr: t.passed_on_rerun,
                    re: t.retries,
                    sig: t.signature.clone(),
                    msg: t.message.clone(),
                    sm: t.signature_match,
                    sp: t.signature_pattern,
                });
            }
        }
        if !in_table_order && r.tests.iter().any(|t| t.failed()) {
            return Ok(None);
        }
        exceptions.sort_by_key(|t| t.k);
        let n = if r.tests.is_empty() { 0 } else { present.len() };
        let mut ab = Vec::new();
        let mut k = 0;
        while k < n {
            if present[k] {
                k += 1;
                continue;
            }
            let start = k;
            while k < n && !present[k] {
                k += 1;
            }
            ab.extend([start as u32, k as u32]);
        }

        let shortcut = match r.end {
            ProcessEnd::Exited { code } if r.exit_code == Some(code) && r.signal.is_none() => {
                Some(code)
            }
            _ => None,
        };
        // Most runs have the context their cell's last run had: checked
        // against it without making it anew.
        let recent = (self.recent.get(&r.cell))
            .filter(|(context, _)| context.made_from(r, &vars))
            .map(|&(_, c)| c);
        let (c, new_context, recent) = match recent {
            Some(c) => (c, None, None),
            None => {
                let Some(context) = Context::of(r, &vars) else {
                    return Ok(None);
                };
                match self.contexts.get(&context) {
                    Some(&c) => (c, None, Some((context, c))),
                    None => {
                        let c = self.contexts.len() as u32;
                        (c, Some(context.clone()), Some((context, c)))
                    }
                }
            }
        };
        let line = RunLine {
            schema: Cow::Borrowed(RUN_SCHEMA),
            w: Cow::Borrowed(self.w.as_str()),
            i: r.index,
            id: (!derived).then_some(Cow::Borrowed(r.id.as_str())),
            c,
            r: r.replicate,
            s: r.seed,
            at: Cow::Borrowed(r.started_at.as_str()),
            d: r.duration_s,
            o: r.outcome,
            x: shortcut,
            end: shortcut.is_none().then(|| r.end.clone()),
            codes: shortcut.is_none().then_some((r.exit_code, r.signal)),
            sm: r.signature_match,
            why: r.reason.clone(),
            ob: r.output_bytes,
            od: r.output_dropped,
            busy: r.cpu_busy,
            cpu: r.cpu.clone().map(Box::new),
            strag: r.stragglers,
            warn: r.warnings.clone(),
            tm: r.tests_missing.clone(),
            fs: r.failure_signature.clone(),
            topo: r.topology.clone().map(Box::new),
            procs: r.processes.clone().map(Box::new),
            n: n as u32,
            ab,
            t: exceptions,
            sp: r.signature_pattern,
        };

        // A run line is a few hundred bytes: one allocation for most.
        let mut text = Vec::with_capacity(512);
        if !entries.is_empty() {
            serde_json::to_writer(
                &mut text,
                &TestsLine {
                    schema: TESTS_SCHEMA.into(),
                    w: self.w.clone(),
                    session: self.session.clone(),
                    from: self.table.len(),
                    tests: entries.iter().map(Entry::to_json).collect(),
                },
            )?;
            text.push(b'\n');
        }
        if let Some(context) = &new_context {
            serde_json::to_writer(
                &mut text,
                &ContextLine {
                    schema: CONTEXT_SCHEMA.into(),
                    w: self.w.clone(),
                    session: self.session.clone(),
                    c,
                    context: context.clone(),
                },
            )?;
            text.push(b'\n');
        }
        serde_json::to_writer(&mut text, &line)?;
        text.push(b'\n');
        Ok(Some(Pending {
            text,
            entries,
            context: new_context.map(|k| (k, c)),
            recent,
        }))
    }
}

/// What the reader knows of one writer.
#[derive(Debug, Default)]
struct WriterState {
    session: String,
    table: Vec<Entry>,
    contexts: Vec<Option<CompiledContext>>,
}

/// What one line of a runs file was.
// A line lives on the stack while it is handled: boxing the run would cost
// an allocation per run read.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Line<'r> {
    /// A run (of the session asked for, when one was).
    Run(RunView<'r>),
    /// A table or context line, a run of another session: nothing to yield.
    Other,
    /// Not a line this reader can use: counted as skipped.
    Unreadable,
}

/// Decodes the lines of one runs file, in order: the state of every writer
/// met so far.
#[derive(Debug, Default)]
pub struct Reader {
    writers: Vec<(String, WriterState)>,
    by_name: HashMap<String, usize>,
    /// The writer of the last run line (most lines follow their writer's).
    last: usize,
}

#[derive(Deserialize)]
struct Schema<'a> {
    #[serde(borrow)]
    schema: std::borrow::Cow<'a, str>,
    #[serde(default)]
    w: Option<serde::de::IgnoredAny>,
}

impl Reader {
    /// Decodes one non-blank line; `session` keeps only that session's runs.
    /// A compact run comes back as a view of the line and this reader's
    /// state (nothing expanded); [`RunView::into_record`] makes it whole.
    pub fn line<'r>(&'r mut self, bytes: &'r [u8], session: Option<&str>) -> Line<'r> {
        const RUN_PREFIX: &[u8] = b"{\"schema\":\"flakelab.run/2\",\"w\":";
        if bytes.starts_with(RUN_PREFIX) {
            // The writer's own shape is read by hand; anything else, as
            // every other line, by serde_json.
            if let Some(line) = super::fast::enabled()
                .then(|| super::fast::run_line(bytes))
                .flatten()
            {
                return self.run(line, session);
            }
            return match serde_json::from_slice::<RunLine>(bytes) {
                Ok(line) => self.run(line, session),
                Err(_) => Line::Unreadable,
            };
        }
        let Ok(head) = serde_json::from_slice::<Schema>(bytes) else {
            return Line::Unreadable;
        };
        let keep = |r: RunRecord| {
            if session.is_none_or(|s| s == r.session) {
                Line::Run(RunView::Whole(Whole::Owned(Box::new(r))))
            } else {
                Line::Other
            }
        };
        match (head.schema.as_ref(), head.w.is_some()) {
            (TESTS_SCHEMA, _) => match serde_json::from_slice(bytes) {
                Ok(t) => self.tests(t),
                Err(_) => Line::Unreadable,
            },
            (CONTEXT_SCHEMA, _) => match serde_json::from_slice(bytes) {
                Ok(c) => self.context(c),
                Err(_) => Line::Unreadable,
            },
            (RUN_SCHEMA, true) => match serde_json::from_slice::<RunLine>(bytes) {
                Ok(line) => self.run(line, session),
                Err(_) => Line::Unreadable,
            },
            // A whole record: `flakelab.run/1`, or a run/2 record the
            // compact form could not hold.
            _ => match serde_json::from_slice::<RunRecord>(bytes) {
                Ok(r) => keep(r),
                Err(_) => Line::Unreadable,
            },
        }
    }

    fn writer(&mut self, w: String, session: String) -> Option<&mut WriterState> {
        let at = match self.by_name.get(&w) {
            Some(&at) => at,
            None => {
                self.by_name.insert(w.clone(), self.writers.len());
                self.writers.push((
                    w,
                    WriterState {
                        session: session.clone(),
                        ..WriterState::default()
                    },
                ));
                self.writers.len() - 1
            }
        };
        let state = &mut self.writers[at].1;
        (state.session == session).then_some(state)
    }

    fn tests(&mut self, line: TestsLine) -> Line<'static> {
        let Some(entries) = line
            .tests
            .iter()
            .map(Entry::from_json)
            .collect::<Option<Vec<_>>>()
        else {
            return Line::Unreadable;
        };
        let Some(state) = self.writer(line.w, line.session) else {
            return Line::Unreadable;
        };
        let have = state.table.len();
        if line.from > have {
            // An earlier table line was lost: runs needing it are unreadable.
            return Line::Unreadable;
        }
        // A table line read again (a store concatenated onto itself) must
        // say what it said the first time.
        let overlap = (have - line.from).min(entries.len());
        if state.table[line.from..line.from + overlap] != entries[..overlap] {
            return Line::Unreadable;
        }
        state.table.extend(entries.into_iter().skip(overlap));
        Line::Other
    }

    fn context(&mut self, line: ContextLine) -> Line<'static> {
        let Some(compiled) = CompiledContext::new(line.context) else {
            return Line::Unreadable;
        };
        let Some(state) = self.writer(line.w, line.session) else {
            return Line::Unreadable;
        };
        let c = line.c as usize;
        if c >= MAX_CONTEXTS {
            // Read from a file anyone may edit: never sizes a table.
            return Line::Unreadable;
        }
        if state.contexts.len() <= c {
            state.contexts.resize(c + 1, None);
        }
        if state.contexts[c].is_none() {
            state.contexts[c] = Some(compiled);
        }
        Line::Other
    }

    #[inline]
    fn run<'r>(&'r mut self, line: RunLine<'r>, session: Option<&str>) -> Line<'r> {
        let at = match self.writers.get(self.last) {
            Some((name, _)) if *name == line.w => self.last,
            _ => match self.by_name.get(line.w.as_ref()) {
                Some(&at) => at,
                None => return Line::Unreadable,
            },
        };
        self.last = at;
        let state = &self.writers[at].1;
        if session.is_some_and(|s| s != state.session) {
            return Line::Other;
        }
        let Some(Some(ctx)) = state.contexts.get(line.c as usize) else {
            return Line::Unreadable;
        };
        match CompactRun::new(&state.session, &state.table, ctx, line) {
            Some(run) => Line::Run(RunView::Compact(run)),
            None => Line::Unreadable,
        }
    }
}
