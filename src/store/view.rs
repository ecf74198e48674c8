//! A run as it is read, before (or instead of) becoming a [`RunRecord`]:
//! [`RunView`] answers what a fold asks of a run — its cell, outcome,
//! tests, first-failure facts — straight from the compact line and its
//! writer's table and context, without expanding argv, environment or the
//! repro line and without copying a test id. [`RunView::to_record`] gives
//! the whole record, field for field what [`super::Store::runs_iter`]
//! yields.

use std::borrow::Cow;
use std::path::PathBuf;

use super::lines::{run_id, CompiledContext, Entry, RunLine, TestLine};
use super::template::{Compiled, Vars};
use crate::record::{
    EnvDelta, Outcome, ProcessEnd, RunCpu, RunRecord, TestOutcome, TestRecord, RUN_SCHEMA,
};

/// One run of a store, borrowed from the reader or from a record.
// Handled on the stack, one at a time: boxing the compact run would cost an
// allocation per run read.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum RunView<'a> {
    /// A whole record (`flakelab.run/1`, or one the compact form could not
    /// hold, or a record in memory).
    Whole(Whole<'a>),
    /// A compact `flakelab.run/2` line with its writer's table and context.
    Compact(CompactRun<'a>),
}

/// A whole record, borrowed or owned (boxed: a record is large).
#[derive(Debug)]
pub enum Whole<'a> {
    /// A record the caller holds.
    Borrowed(&'a RunRecord),
    /// A record read from a whole line.
    Owned(Box<RunRecord>),
}

impl std::ops::Deref for Whole<'_> {
    type Target = RunRecord;

    fn deref(&self) -> &RunRecord {
        match self {
            Whole::Borrowed(r) => r,
            Whole::Owned(r) => r,
        }
    }
}

/// A compact run line, checked, with what it refers to.
#[derive(Debug)]
pub struct CompactRun<'a> {
    session: &'a str,
    table: &'a [Entry],
    ctx: &'a CompiledContext,
    line: RunLine<'a>,
    end: ProcessEnd,
    exit_code: Option<i32>,
    signal: Option<i32>,
}

impl<'a> From<&'a RunRecord> for RunView<'a> {
    fn from(r: &'a RunRecord) -> RunView<'a> {
        RunView::of(r)
    }
}

impl<'a> CompactRun<'a> {
    /// The run of `line`, when the line is consistent with its table:
    /// None for a line that cannot be decoded (an exception for an absent
    /// or unknown entry, ranges out of order, ends that contradict).
    #[inline]
    pub(super) fn new(
        session: &'a str,
        table: &'a [Entry],
        ctx: &'a CompiledContext,
        line: RunLine<'a>,
    ) -> Option<CompactRun<'a>> {
        let (end, exit_code, signal) = match (line.x, &line.end, line.codes) {
            (Some(code), None, None) => (ProcessEnd::Exited { code }, Some(code), None),
            (None, Some(end), Some((exit, signal))) => (end.clone(), exit, signal),
            _ => return None,
        };
        let n = line.n as usize;
        if n > table.len() || line.ab.len() % 2 == 1 {
            return None;
        }
        // The walk the tests iterator makes, checked once.
        let mut absent = line.ab.chunks_exact(2);
        let mut next_absent = absent.next();
        let mut exceptions = line.t.iter().peekable();
        let mut k = 0;
        while k < n {
            if let Some(r) = next_absent {
                let (start, end) = (r[0] as usize, r[1] as usize);
                if start <= k {
                    if end <= k || end > n {
                        return None;
                    }
                    if exceptions.peek().is_some_and(|t| (t.k as usize) < end) {
                        return None;
                    }
                    k = end;
                    next_absent = absent.next();
                    continue;
                }
            }
            if exceptions.peek().is_some_and(|t| t.k as usize == k) {
                exceptions.next();
            }
            if exceptions.peek().is_some_and(|t| (t.k as usize) <= k) {
                return None;
            }
            k += 1;
        }
        if exceptions.next().is_some() || next_absent.is_some() {
            return None;
        }
        Some(CompactRun {
            session,
            table,
            ctx,
            line,
            end,
            exit_code,
            signal,
        })
    }

    fn vars<'s>(&'s self, id: &'s str) -> Vars<'s> {
        Vars::new(id, self.session, self.line.s, self.line.i)
    }
}

/// One test of a run, borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestView<'a> {
    /// Its id.
    pub id: &'a str,
    /// Its family, when it differs from the id.
    pub family: Option<&'a str>,
    /// The first attempt's outcome.
    pub outcome: TestOutcome,
    /// The first attempt failed and a retry passed.
    pub passed_on_rerun: bool,
    /// Further attempts the report holds.
    pub retries: u32,
    /// Normalised failure signature.
    pub signature: Option<&'a str>,
    /// The failure message, cut short.
    pub message: Option<&'a str>,
    /// Whether the failure matched `--signature`.
    pub signature_match: Option<bool>,
    /// Which `--signature` it matched (its index), when recorded.
    pub signature_pattern: Option<u32>,
}

impl<'a> TestView<'a> {
    /// The family id (the id itself when it has no parameters).
    pub fn family(&self) -> &'a str {
        self.family.unwrap_or(self.id)
    }

    /// Whether the first attempt failed or errored.
    pub fn failed(&self) -> bool {
        matches!(self.outcome, TestOutcome::Fail | TestOutcome::Error)
    }

    /// The `--signature` its failure matched ([`crate::record::matched_pattern`]).
    pub fn matched_pattern(&self) -> Option<usize> {
        crate::record::matched_pattern(self.signature_match, self.signature_pattern)
    }

    /// The owned record.
    pub fn to_record(&self) -> TestRecord {
        TestRecord {
            id: self.id.to_string(),
            family: self.family.map(str::to_string),
            outcome: self.outcome,
            passed_on_rerun: self.passed_on_rerun,
            retries: self.retries,
            signature: self.signature.map(str::to_string),
            message: self.message.map(str::to_string),
            signature_match: self.signature_match,
            signature_pattern: self.signature_pattern,
        }
    }
}

impl<'a> From<&'a TestRecord> for TestView<'a> {
    fn from(t: &'a TestRecord) -> TestView<'a> {
        TestView {
            id: &t.id,
            family: t.family.as_deref(),
            outcome: t.outcome,
            passed_on_rerun: t.passed_on_rerun,
            retries: t.retries,
            signature: t.signature.as_deref(),
            message: t.message.as_deref(),
            signature_match: t.signature_match,
            signature_pattern: t.signature_pattern,
        }
    }
}

fn entry_view<'t>(entry: &'t Entry, exception: Option<&'t TestLine>) -> TestView<'t> {
    match exception {
        Some(t) => TestView {
            id: &entry.id,
            family: entry.family.as_deref(),
            outcome: t.o,
            passed_on_rerun: t.rr,
            retries: t.re,
            signature: t.sig.as_deref(),
            message: t.msg.as_deref(),
            signature_match: t.sm,
            signature_pattern: t.sp,
        },
        None => TestView {
            id: &entry.id,
            family: entry.family.as_deref(),
            outcome: entry.usual,
            passed_on_rerun: false,
            retries: 0,
            signature: None,
            message: None,
            signature_match: None,
            signature_pattern: None,
        },
    }
}

/// The tests of a run, in the order [`RunRecord::tests`] has them.
#[derive(Debug)]
pub struct Tests<'v> {
    inner: TestsInner<'v>,
}

#[derive(Debug)]
enum TestsInner<'v> {
    Whole(std::slice::Iter<'v, TestRecord>),
    Compact {
        table: &'v [Entry],
        k: usize,
        n: usize,
        absent: &'v [u32],
        exceptions: &'v [TestLine],
    },
}

impl<'v> Iterator for Tests<'v> {
    type Item = TestView<'v>;

    fn next(&mut self) -> Option<TestView<'v>> {
        match &mut self.inner {
            TestsInner::Whole(it) => it.next().map(TestView::from),
            TestsInner::Compact {
                table,
                k,
                n,
                absent,
                exceptions,
            } => {
                // Checked by `CompactRun::new`: ranges in order within n,
                // exceptions in order on present entries.
                while let [start, end, rest @ ..] = absent {
                    if (*start as usize) <= *k {
                        *k = (*end as usize).max(*k);
                        *absent = rest;
                    } else {
                        break;
                    }
                }
                if *k >= *n {
                    return None;
                }
                let entry = &table[*k];
                let exception = match exceptions {
                    [t, rest @ ..] if t.k as usize == *k => {
                        *exceptions = rest;
                        Some(t)
                    }
                    _ => None,
                };
                *k += 1;
                Some(entry_view(entry, exception))
            }
        }
    }
}

impl<'a> RunView<'a> {
    /// The view of a whole record.
    pub fn of(r: &'a RunRecord) -> RunView<'a> {
        RunView::Whole(Whole::Borrowed(r))
    }

    /// The run's id.
    pub fn id(&self) -> Cow<'_, str> {
        match self {
            RunView::Whole(r) => Cow::Borrowed(&r.id),
            RunView::Compact(c) => match &c.line.id {
                Some(id) => Cow::Borrowed(id),
                None => Cow::Owned(run_id(c.session, c.line.i)),
            },
        }
    }

    /// The run's id when it is the one flakelab derives (`<session>.<index
    /// padded to 5>`): (digit count, number), without formatting it.
    pub(super) fn derived_number(&self) -> Option<(usize, usize)> {
        match self {
            // A number too large for a bit set is remembered by id (the
            // line's number is read from a file anyone may edit).
            RunView::Compact(c)
                if c.line.id.is_none() && (c.line.i as u64) < super::lines::MAX_BIT_INDEX =>
            {
                let i = c.line.i;
                let digits = if i == 0 { 1 } else { i.ilog10() as usize + 1 };
                Some((digits.max(5), i))
            }
            _ => None,
        }
    }

    /// Its session.
    pub fn session(&self) -> &str {
        match self {
            RunView::Whole(r) => &r.session,
            RunView::Compact(c) => c.session,
        }
    }

    /// Its index in the plan.
    pub fn index(&self) -> usize {
        match self {
            RunView::Whole(r) => r.index,
            RunView::Compact(c) => c.line.i,
        }
    }

    /// Its cell's name.
    pub fn cell(&self) -> &str {
        match self {
            RunView::Whole(r) => &r.cell,
            RunView::Compact(c) => &c.ctx.cell,
        }
    }

    /// Its replicate.
    pub fn replicate(&self) -> u32 {
        match self {
            RunView::Whole(r) => r.replicate,
            RunView::Compact(c) => c.line.r,
        }
    }

    /// Its seed.
    pub fn seed(&self) -> u64 {
        match self {
            RunView::Whole(r) => r.seed,
            RunView::Compact(c) => c.line.s,
        }
    }

    /// Its exit code, when its process exited on its own.
    pub fn exit_code(&self) -> Option<i32> {
        match self {
            RunView::Whole(r) => r.exit_code,
            RunView::Compact(c) => c.exit_code,
        }
    }

    /// When it started (RFC 3339).
    pub fn started_at(&self) -> &str {
        match self {
            RunView::Whole(r) => &r.started_at,
            RunView::Compact(c) => &c.line.at,
        }
    }

    /// Its wall time, seconds.
    pub fn duration_s(&self) -> f64 {
        match self {
            RunView::Whole(r) => r.duration_s,
            RunView::Compact(c) => c.line.d,
        }
    }

    /// Its outcome.
    pub fn outcome(&self) -> Outcome {
        match self {
            RunView::Whole(r) => r.outcome,
            RunView::Compact(c) => c.line.o,
        }
    }

    /// How its process ended.
    pub fn end(&self) -> &ProcessEnd {
        match self {
            RunView::Whole(r) => &r.end,
            RunView::Compact(c) => &c.end,
        }
    }

    /// Whether its output (or a test) matched `--signature`.
    pub fn signature_match(&self) -> Option<bool> {
        match self {
            RunView::Whole(r) => r.signature_match,
            RunView::Compact(c) => c.line.sm,
        }
    }

    /// Which `--signature` it reproduced: its recorded pattern index; a
    /// match recorded without one (older records) is the first pattern's,
    /// as is a failing test's match in a run whose own field says nothing.
    pub fn matched_pattern(&self) -> Option<usize> {
        let (matched, pattern) = match self {
            RunView::Whole(r) => (r.signature_match, r.signature_pattern),
            RunView::Compact(c) => (c.line.sm, c.line.sp),
        };
        crate::record::matched_pattern(matched, pattern)
            .or_else(|| self.tests().filter_map(|t| t.matched_pattern()).min())
    }

    /// Why it was not applied.
    pub fn reason(&self) -> Option<&str> {
        match self {
            RunView::Whole(r) => r.reason.as_deref(),
            RunView::Compact(c) => c.line.why.as_deref(),
        }
    }

    /// Its CPU measurement.
    pub fn cpu(&self) -> Option<&RunCpu> {
        match self {
            RunView::Whole(r) => r.cpu.as_ref(),
            RunView::Compact(c) => c.line.cpu.as_deref(),
        }
    }

    /// Processes still running in its group at the end.
    pub fn stragglers(&self) -> u32 {
        match self {
            RunView::Whole(r) => r.stragglers,
            RunView::Compact(c) => c.line.strag,
        }
    }

    /// Problems the harness met that did not change the outcome.
    pub fn warnings(&self) -> &[String] {
        match self {
            RunView::Whole(r) => &r.warnings,
            RunView::Compact(c) => &c.line.warn,
        }
    }

    /// Why it has no per-test data, when it was expected.
    pub fn tests_missing(&self) -> Option<&str> {
        match self {
            RunView::Whole(r) => r.tests_missing.as_deref(),
            RunView::Compact(c) => c.line.tm.as_deref(),
        }
    }

    /// Its failure signature.
    pub fn failure_signature(&self) -> Option<&str> {
        match self {
            RunView::Whole(r) => r.failure_signature.as_deref(),
            RunView::Compact(c) => c.line.fs.as_deref(),
        }
    }

    /// The number of tests it ran.
    pub fn tests_len(&self) -> usize {
        self.tests().count()
    }

    /// Whether it carries per-test outcomes.
    pub fn has_tests(&self) -> bool {
        self.tests().next().is_some()
    }

    /// Its tests, in the record's order.
    pub fn tests(&self) -> Tests<'_> {
        let inner = match self {
            RunView::Whole(r) => TestsInner::Whole(r.tests.iter()),
            RunView::Compact(c) => TestsInner::Compact {
                table: c.table,
                k: 0,
                n: c.line.n as usize,
                absent: &c.line.ab,
                exceptions: &c.line.t,
            },
        };
        Tests { inner }
    }

    /// Its repro line.
    pub fn repro(&self) -> String {
        match self {
            RunView::Whole(r) => r.repro.clone(),
            RunView::Compact(c) => {
                let id = self.id();
                c.ctx.repro.expand(&c.vars(&id))
            }
        }
    }

    /// Why its repro line may not reproduce it.
    pub fn repro_note(&self) -> Option<&str> {
        match self {
            RunView::Whole(r) => r.repro_note.as_deref(),
            RunView::Compact(c) => c.ctx.repro_note.as_deref(),
        }
    }

    /// Its output log's path.
    pub fn log(&self) -> Option<PathBuf> {
        match self {
            RunView::Whole(r) => r.log.clone(),
            RunView::Compact(c) => {
                let id = self.id();
                path(&c.ctx.log, &c.vars(&id))
            }
        }
    }

    /// The whole record.
    pub fn to_record(&self) -> RunRecord {
        match self {
            RunView::Whole(r) => RunRecord::clone(r),
            RunView::Compact(c) => {
                let id = self.id().into_owned();
                let vars = c.vars(&id);
                let ctx = c.ctx;
                let line = &c.line;
                RunRecord {
                    schema: RUN_SCHEMA.to_string(),
                    session: c.session.to_string(),
                    index: line.i,
                    cell: ctx.cell.clone(),
                    perturbations: ctx.perturbations.clone(),
                    replicate: line.r,
                    seed: line.s,
                    started_at: line.at.to_string(),
                    duration_s: line.d,
                    outcome: line.o,
                    end: c.end.clone(),
                    exit_code: c.exit_code,
                    signal: c.signal,
                    signature_match: line.sm,
                    signature_pattern: line.sp,
                    reason: line.why.clone(),
                    log: path(&ctx.log, &vars),
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
                    cpu: line.cpu.as_deref().cloned(),
                    stragglers: line.strag,
                    warnings: line.warn.clone(),
                    workers: ctx.workers,
                    junit: path(&ctx.junit, &vars),
                    tests_missing: line.tm.clone(),
                    tests: self.tests().map(|t| t.to_record()).collect(),
                    failure_signature: line.fs.clone(),
                    topology: line.topo.as_deref().cloned(),
                    processes: line.procs.as_deref().cloned(),
                    id: id.clone(),
                }
            }
        }
    }

    /// The whole record, moved out where the view owns it.
    pub fn into_record(self) -> RunRecord {
        match self {
            RunView::Whole(Whole::Owned(r)) => *r,
            RunView::Whole(Whole::Borrowed(r)) => r.clone(),
            compact => compact.to_record(),
        }
    }
}

fn path(c: &Option<Compiled>, vars: &Vars) -> Option<PathBuf> {
    c.as_ref().map(|c| PathBuf::from(c.expand(vars)))
}
