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
//! What changes on the way back: a run's `tests` come back in the table's
//! order (first-seen order across the session), not its report's order,
//! which differs only when the runner shuffled the tests.
//!
//! Pure: bytes in, records out.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::template::{self, Compiled, Vars};
use crate::record::{
    EnvDelta, Outcome, ProcessCheck, ProcessEnd, RunCpu, RunRecord, RunTopology, TestOutcome,
    TestRecord, RUN_SCHEMA, RUN_SCHEMA_V1,
};

/// Schema of a test-table line.
pub const TESTS_SCHEMA: &str = "flakelab.tests/2";
/// Schema of a context line.
pub const CONTEXT_SCHEMA: &str = "flakelab.context/2";

fn is_zero32(n: &u32) -> bool {
    *n == 0
}

fn is_zero64(n: &u64) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// One entry of a writer's test table.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    id: String,
    family: Option<String>,
    usual: TestOutcome,
}

impl Entry {
    /// `["id"]`, `["id", 8]` (family = the id's first 8 bytes), `["id",
    /// "family"]`, with the usual outcome third when it is not `pass`.
    fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        let mut v = vec![Value::from(self.id.as_str())];
        let family = match &self.family {
            None => Value::Null,
            Some(f) if self.id.starts_with(f.as_str()) => Value::from(f.len()),
            Some(f) => Value::from(f.as_str()),
        };
        if self.usual != TestOutcome::Pass {
            v.push(family);
            v.push(serde_json::to_value(self.usual).unwrap_or(Value::Null));
        } else if !family.is_null() {
            v.push(family);
        }
        Value::Array(v)
    }

    fn from_json(v: &serde_json::Value) -> Option<Entry> {
        let a = v.as_array()?;
        let id = a.first()?.as_str()?.to_string();
        let family = match a.get(1) {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::String(f)) => Some(f.clone()),
            Some(n) => Some(id.get(..usize::try_from(n.as_u64()?).ok()?)?.to_string()),
        };
        let usual = match a.get(2) {
            None => TestOutcome::Pass,
            Some(o) => serde_json::from_value(o.clone()).ok()?,
        };
        (a.len() <= 3).then_some(Entry { id, family, usual })
    }

    /// The record of this test at its usual outcome, with nothing else.
    fn plain(&self) -> TestRecord {
        TestRecord {
            id: self.id.clone(),
            family: self.family.clone(),
            outcome: self.usual,
            passed_on_rerun: false,
            retries: 0,
            signature: None,
            message: None,
            signature_match: None,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct TestsLine {
    schema: String,
    w: String,
    session: String,
    from: usize,
    tests: Vec<serde_json::Value>,
}

/// The fields every run of a context repeats, templated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Context {
    cell: String,
    perturbations: Vec<String>,
    argv: Vec<String>,
    cwd: PathBuf,
    env: EnvDelta,
    repro: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    repro_note: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    junit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    log: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    workers: Option<usize>,
}

#[derive(Serialize, Deserialize)]
struct ContextLine {
    schema: String,
    w: String,
    session: String,
    c: u32,
    #[serde(flatten)]
    context: Context,
}

/// A context with its templates parsed.
#[derive(Debug, Clone)]
struct CompiledContext {
    cell: String,
    perturbations: Vec<String>,
    argv: Vec<Compiled>,
    cwd: PathBuf,
    env_set: Vec<(String, Compiled)>,
    env_unset: Vec<String>,
    repro: Compiled,
    repro_note: Option<String>,
    junit: Option<Compiled>,
    log: Option<Compiled>,
    workers: Option<usize>,
}

impl CompiledContext {
    fn new(c: Context) -> Option<CompiledContext> {
        let opt = |t: Option<String>| {
            t.map(|t| Compiled::parse(&t))
                .map_or(Some(None), |c| c.map(Some))
        };
        Some(CompiledContext {
            argv: c
                .argv
                .iter()
                .map(|a| Compiled::parse(a))
                .collect::<Option<_>>()?,
            env_set: c
                .env
                .set
                .into_iter()
                .map(|(k, v)| Compiled::parse(&v).map(|v| (k, v)))
                .collect::<Option<_>>()?,
            env_unset: c.env.unset,
            repro: Compiled::parse(&c.repro)?,
            junit: opt(c.junit)?,
            log: opt(c.log)?,
            cell: c.cell,
            perturbations: c.perturbations,
            cwd: c.cwd,
            repro_note: c.repro_note,
            workers: c.workers,
        })
    }
}

/// One test of a run that is not its entry's plain usual outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct TestLine {
    k: u32,
    o: TestOutcome,
    #[serde(default, skip_serializing_if = "is_false")]
    rr: bool,
    #[serde(default, skip_serializing_if = "is_zero32")]
    re: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sig: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    msg: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sm: Option<bool>,
}

/// One run, compact.
///
/// Its schema and writer id are borrowed from the line being read: a run
/// line decodes with no allocation of its own for them.
#[derive(Debug, Serialize, Deserialize)]
struct RunLine<'a> {
    #[serde(borrow)]
    schema: Cow<'a, str>,
    #[serde(borrow)]
    w: Cow<'a, str>,
    i: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    c: u32,
    #[serde(default, skip_serializing_if = "is_zero32")]
    r: u32,
    s: u64,
    at: String,
    d: f64,
    o: Outcome,
    /// The exit code, standing for `end` = exited with it, `exit_code` =
    /// it, `signal` = null.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    x: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    end: Option<ProcessEnd>,
    /// `[exit_code, signal]` beside `end`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    codes: Option<(Option<i32>, Option<i32>)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sm: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    why: Option<String>,
    #[serde(default, skip_serializing_if = "is_zero64")]
    ob: u64,
    #[serde(default, skip_serializing_if = "is_zero64")]
    od: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    busy: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cpu: Option<RunCpu>,
    #[serde(default, skip_serializing_if = "is_zero32")]
    strag: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    warn: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tm: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fs: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    topo: Option<RunTopology>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    procs: Option<ProcessCheck>,
    /// Table entries this run covers (the table's size when it was written).
    #[serde(default, skip_serializing_if = "is_zero32")]
    n: u32,
    /// Half-open ranges `[start, end, start, end, …]` of entries below `n`
    /// the run did not run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    ab: Vec<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    t: Vec<TestLine>,
}

/// The `flakelab.run/1` line of a record (the encoding before the compact
/// one), without its newline: kept to measure against and for stores that
/// must be read by an older flakelab.
pub fn v1_line(record: &RunRecord) -> serde_json::Result<String> {
    let mut json = serde_json::to_value(record)?;
    json["schema"] = RUN_SCHEMA_V1.into();
    serde_json::to_string(&json)
}

/// The id a run of `session` at `index` gets.
pub fn run_id(session: &str, index: usize) -> String {
    format!("{session}.{index:05}")
}

/// What one append adds: its text and the writer state it commits.
#[derive(Debug)]
pub struct Pending {
    /// The lines to write in one write, each ending in a newline.
    pub text: Vec<u8>,
    entries: Vec<Entry>,
    context: Option<(String, u32)>,
}

/// The encoding state of one writer of one session.
#[derive(Debug)]
pub struct Writer {
    w: String,
    session: String,
    table: Vec<Entry>,
    by_id: HashMap<String, u32>,
    contexts: HashMap<String, u32>,
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
                })
            }
        }
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
    }

    fn compact(&self, r: &RunRecord) -> serde_json::Result<Option<Pending>> {
        if r.session != self.session || r.schema != RUN_SCHEMA {
            return Ok(None);
        }
        let derived = run_id(&r.session, r.index);
        let vars = Vars::new(&r.id, &r.session, r.seed, r.index);
        let path = |p: &Option<PathBuf>| -> Option<Option<String>> {
            match p {
                None => Some(None),
                Some(p) => p.to_str().map(|s| Some(template::make(s, &vars))),
            }
        };
        let (Some(junit), Some(log)) = (path(&r.junit), path(&r.log)) else {
            return Ok(None);
        };
        if r.cwd.to_str().is_none() {
            return Ok(None);
        }
        let context = Context {
            cell: r.cell.clone(),
            perturbations: r.perturbations.clone(),
            argv: r.argv.iter().map(|a| template::make(a, &vars)).collect(),
            cwd: r.cwd.clone(),
            env: EnvDelta {
                set: r
                    .env
                    .set
                    .iter()
                    .map(|(k, v)| (k.clone(), template::make(v, &vars)))
                    .collect::<BTreeMap<_, _>>(),
                unset: r.env.unset.clone(),
            },
            repro: template::make(&r.repro, &vars),
            repro_note: r.repro_note.clone(),
            junit,
            log,
            workers: r.workers,
        };

        // Tests: table entries, new ones appended in the run's order.
        let mut entries: Vec<Entry> = Vec::new();
        let mut new_ids: HashMap<&str, u32> = HashMap::new();
        let mut present: Vec<bool> = vec![false; self.table.len()];
        let mut exceptions: Vec<TestLine> = Vec::new();
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
            present[k as usize] = true;
            let plain = t.outcome == entry.usual
                && !t.passed_on_rerun
                && t.retries == 0
                && t.signature.is_none()
                && t.message.is_none()
                && t.signature_match.is_none();
            if !plain {
                exceptions.push(TestLine {
                    k,
                    o: t.outcome,
                    rr: t.passed_on_rerun,
                    re: t.retries,
                    sig: t.signature.clone(),
                    msg: t.message.clone(),
                    sm: t.signature_match,
                });
            }
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
        let key = serde_json::to_string(&context)?;
        let (c, new_context) = match self.contexts.get(&key) {
            Some(&c) => (c, None),
            None => (self.contexts.len() as u32, Some(key)),
        };
        let line = RunLine {
            schema: Cow::Borrowed(RUN_SCHEMA),
            w: Cow::Borrowed(self.w.as_str()),
            i: r.index,
            id: (r.id != derived).then(|| r.id.clone()),
            c,
            r: r.replicate,
            s: r.seed,
            at: r.started_at.clone(),
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
            cpu: r.cpu.clone(),
            strag: r.stragglers,
            warn: r.warnings.clone(),
            tm: r.tests_missing.clone(),
            fs: r.failure_signature.clone(),
            topo: r.topology.clone(),
            procs: r.processes.clone(),
            n: n as u32,
            ab,
            t: exceptions,
        };

        let mut text = Vec::new();
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
        if new_context.is_some() {
            serde_json::to_writer(
                &mut text,
                &ContextLine {
                    schema: CONTEXT_SCHEMA.into(),
                    w: self.w.clone(),
                    session: self.session.clone(),
                    c,
                    context,
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
#[derive(Debug)]
pub enum Line {
    /// A run (of the session asked for, when one was).
    Run(Box<RunRecord>),
    /// A table or context line, a run of another session: nothing to yield.
    Other,
    /// Not a line this reader can use: counted as skipped.
    Unreadable,
}

/// Decodes the lines of one runs file, in order: the state of every writer
/// met so far.
#[derive(Debug, Default)]
pub struct Reader {
    writers: HashMap<String, WriterState>,
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
    pub fn line(&mut self, bytes: &[u8], session: Option<&str>) -> Line {
        const RUN_PREFIX: &[u8] = b"{\"schema\":\"flakelab.run/2\",\"w\":";
        if bytes.starts_with(RUN_PREFIX) {
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
                Line::Run(Box::new(r))
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
        let state = self.writers.entry(w).or_insert_with(|| WriterState {
            session: session.clone(),
            ..WriterState::default()
        });
        (state.session == session).then_some(state)
    }

    fn tests(&mut self, line: TestsLine) -> Line {
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

    fn context(&mut self, line: ContextLine) -> Line {
        let Some(compiled) = CompiledContext::new(line.context) else {
            return Line::Unreadable;
        };
        let Some(state) = self.writer(line.w, line.session) else {
            return Line::Unreadable;
        };
        let c = line.c as usize;
        if state.contexts.len() <= c {
            state.contexts.resize(c + 1, None);
        }
        if state.contexts[c].is_none() {
            state.contexts[c] = Some(compiled);
        }
        Line::Other
    }

    fn run(&mut self, line: RunLine, session: Option<&str>) -> Line {
        let Some(state) = self.writers.get(line.w.as_ref()) else {
            return Line::Unreadable;
        };
        if session.is_some_and(|s| s != state.session) {
            return Line::Other;
        }
        match decode(state, line) {
            Some(r) => Line::Run(Box::new(r)),
            None => Line::Unreadable,
        }
    }
}

fn decode(state: &WriterState, line: RunLine) -> Option<RunRecord> {
    let ctx = state.contexts.get(line.c as usize)?.as_ref()?;
    let id = line.id.unwrap_or_else(|| run_id(&state.session, line.i));
    let vars = Vars::new(&id, &state.session, line.s, line.i);
    let (end, exit_code, signal) = match (line.x, line.end, line.codes) {
        (Some(code), None, None) => (ProcessEnd::Exited { code }, Some(code), None),
        (None, Some(end), Some((exit, signal))) => (end, exit, signal),
        _ => return None,
    };

    let n = line.n as usize;
    if n > state.table.len() || line.ab.len() % 2 == 1 {
        return None;
    }
    let mut tests = Vec::with_capacity(n);
    let mut absent = line
        .ab
        .chunks_exact(2)
        .map(|r| (r[0] as usize, r[1] as usize));
    let mut next_absent = absent.next();
    let mut exceptions = line.t.into_iter().peekable();
    let mut k = 0;
    while k < n {
        if let Some((start, end)) = next_absent {
            if start <= k {
                if end <= k || end > n {
                    return None;
                }
                k = end;
                next_absent = absent.next();
                continue;
            }
        }
        let entry = &state.table[k];
        match exceptions.peek() {
            Some(t) if t.k as usize == k => {
                let t = exceptions.next()?;
                tests.push(TestRecord {
                    id: entry.id.clone(),
                    family: entry.family.clone(),
                    outcome: t.o,
                    passed_on_rerun: t.rr,
                    retries: t.re,
                    signature: t.sig,
                    message: t.msg,
                    signature_match: t.sm,
                });
            }
            _ => tests.push(entry.plain()),
        }
        k += 1;
    }
    if exceptions.next().is_some() || next_absent.is_some() {
        // An exception for an absent or unknown entry, or ranges out of order.
        return None;
    }
    let path = |c: &Option<Compiled>| c.as_ref().map(|c| PathBuf::from(c.expand(&vars)));
    Some(RunRecord {
        schema: RUN_SCHEMA.to_string(),
        session: state.session.clone(),
        index: line.i,
        cell: ctx.cell.clone(),
        perturbations: ctx.perturbations.clone(),
        replicate: line.r,
        seed: line.s,
        started_at: line.at,
        duration_s: line.d,
        outcome: line.o,
        end,
        exit_code,
        signal,
        signature_match: line.sm,
        reason: line.why,
        log: path(&ctx.log),
        output_bytes: line.ob,
        output_dropped: line.od,
        argv: ctx.argv.iter().map(|a| a.expand(&vars)).collect(),
        cwd: ctx.cwd.clone(),
        env: EnvDelta {
            set: ctx
                .env_set
                .iter()
                .map(|(k, v)| (k.clone(), v.expand(&vars)))
                .collect(),
            unset: ctx.env_unset.clone(),
        },
        repro: ctx.repro.expand(&vars),
        repro_note: ctx.repro_note.clone(),
        cpu_busy: line.busy,
        cpu: line.cpu,
        stragglers: line.strag,
        warnings: line.warn,
        workers: ctx.workers,
        junit: path(&ctx.junit),
        tests_missing: line.tm,
        tests,
        failure_signature: line.fs,
        topology: line.topo,
        processes: line.procs,
        id,
    })
}
