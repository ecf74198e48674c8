//! The lines of the compact run encoding (`store::compact`) as serde reads
//! and writes them: the test table's entries, a context and its parsed
//! templates, a run and its tests; and the id a run gets. Shared by the
//! writer and reader (`compact`), the serde-free reader (`fast`) and the
//! view of a run (`view`).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::template::{self, Compiled, Vars};
use crate::record::{
    EnvDelta, Outcome, ProcessCheck, ProcessEnd, RunCpu, RunRecord, RunTopology, TestOutcome,
};

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
pub(super) struct Entry {
    pub(super) id: String,
    pub(super) family: Option<String>,
    pub(super) usual: TestOutcome,
}

impl Entry {
    /// `["id"]`, `["id", 8]` (family = the id's first 8 bytes), `["id",
    /// "family"]`, with the usual outcome third when it is not `pass`.
    pub(super) fn to_json(&self) -> serde_json::Value {
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

    pub(super) fn from_json(v: &serde_json::Value) -> Option<Entry> {
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
}

#[derive(Serialize, Deserialize)]
pub(super) struct TestsLine {
    pub(super) schema: String,
    pub(super) w: String,
    pub(super) session: String,
    pub(super) from: usize,
    pub(super) tests: Vec<serde_json::Value>,
}

/// The fields every run of a context repeats, templated. Two contexts are
/// the same context when their JSON is the same: field for field, text for
/// text (the directory as its text too, not as a path's components,
/// which ignore a trailing `/`), as `Eq` and `Hash` compare them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(super) struct Context {
    pub(super) cell: String,
    perturbations: Vec<String>,
    argv: Vec<String>,
    cwd: String,
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

impl Context {
    /// The context of run `r` (`vars` being its values); None when a path
    /// is not UTF-8.
    pub(super) fn of(r: &RunRecord, vars: &Vars) -> Option<Context> {
        let path = |p: &Option<PathBuf>| -> Option<Option<String>> {
            match p {
                None => Some(None),
                Some(p) => p.to_str().map(|s| Some(template::make(s, vars))),
            }
        };
        Some(Context {
            cell: r.cell.clone(),
            perturbations: r.perturbations.clone(),
            argv: r.argv.iter().map(|a| template::make(a, vars)).collect(),
            cwd: r.cwd.to_str()?.to_string(),
            env: EnvDelta {
                set: r
                    .env
                    .set
                    .iter()
                    .map(|(k, v)| (k.clone(), template::make(v, vars)))
                    .collect::<BTreeMap<_, _>>(),
                unset: r.env.unset.clone(),
            },
            repro: template::make(&r.repro, vars),
            repro_note: r.repro_note.clone(),
            junit: path(&r.junit)?,
            log: path(&r.log)?,
            workers: r.workers,
        })
    }

    /// Whether this is [`Context::of`] `r`, found without making it.
    pub(super) fn made_from(&self, r: &RunRecord, vars: &Vars) -> bool {
        let makes = |text: &str, template: &str| template::makes(text, vars, template);
        let path = |p: &Option<PathBuf>, template: &Option<String>| match (p, template) {
            (None, None) => true,
            (Some(p), Some(t)) => p.to_str().is_some_and(|p| makes(p, t)),
            _ => false,
        };
        self.cell == r.cell
            && self.perturbations == r.perturbations
            && self.argv.len() == r.argv.len()
            && self.argv.iter().zip(&r.argv).all(|(t, a)| makes(a, t))
            && r.cwd.to_str() == Some(self.cwd.as_str())
            && self.env.set.len() == r.env.set.len()
            && (self.env.set.iter().zip(&r.env.set))
                .all(|((tk, tv), (k, v))| tk == k && makes(v, tv))
            && self.env.unset == r.env.unset
            && makes(&r.repro, &self.repro)
            && self.repro_note == r.repro_note
            && path(&r.junit, &self.junit)
            && path(&r.log, &self.log)
            && self.workers == r.workers
    }
}

#[derive(Serialize, Deserialize)]
pub(super) struct ContextLine {
    pub(super) schema: String,
    pub(super) w: String,
    pub(super) session: String,
    pub(super) c: u32,
    #[serde(flatten)]
    pub(super) context: Context,
}

/// A context with its templates parsed.
#[derive(Debug, Clone)]
pub(super) struct CompiledContext {
    pub(super) cell: String,
    pub(super) perturbations: Vec<String>,
    pub(super) argv: Vec<Compiled>,
    pub(super) cwd: PathBuf,
    pub(super) env_set: Vec<(String, Compiled)>,
    pub(super) env_unset: Vec<String>,
    pub(super) repro: Compiled,
    pub(super) repro_note: Option<String>,
    pub(super) junit: Option<Compiled>,
    pub(super) log: Option<Compiled>,
    pub(super) workers: Option<usize>,
}

impl CompiledContext {
    pub(super) fn new(c: Context) -> Option<CompiledContext> {
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
            cwd: PathBuf::from(c.cwd),
            repro_note: c.repro_note,
            workers: c.workers,
        })
    }
}

/// One test of a run that is not its entry's plain usual outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct TestLine {
    pub(super) k: u32,
    pub(super) o: TestOutcome,
    #[serde(default, skip_serializing_if = "is_false")]
    pub(super) rr: bool,
    #[serde(default, skip_serializing_if = "is_zero32")]
    pub(super) re: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) sig: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) msg: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) sm: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) sp: Option<u32>,
}

/// One run, compact.
///
/// Its schema and writer id are borrowed from the line being read: a run
/// line decodes with no allocation of its own for them.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct RunLine<'a> {
    #[serde(borrow)]
    pub(super) schema: Cow<'a, str>,
    #[serde(borrow)]
    pub(super) w: Cow<'a, str>,
    pub(super) i: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(borrow)]
    pub(super) id: Option<Cow<'a, str>>,
    pub(super) c: u32,
    #[serde(default, skip_serializing_if = "is_zero32")]
    pub(super) r: u32,
    pub(super) s: u64,
    #[serde(borrow)]
    pub(super) at: Cow<'a, str>,
    pub(super) d: f64,
    pub(super) o: Outcome,
    /// The exit code, standing for `end` = exited with it, `exit_code` =
    /// it, `signal` = null.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) x: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) end: Option<ProcessEnd>,
    /// `[exit_code, signal]` beside `end`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) codes: Option<(Option<i32>, Option<i32>)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) sm: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) why: Option<String>,
    #[serde(default, skip_serializing_if = "is_zero64")]
    pub(super) ob: u64,
    #[serde(default, skip_serializing_if = "is_zero64")]
    pub(super) od: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) busy: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) cpu: Option<Box<RunCpu>>,
    #[serde(default, skip_serializing_if = "is_zero32")]
    pub(super) strag: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) warn: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) tm: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) fs: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) topo: Option<Box<RunTopology>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) procs: Option<Box<ProcessCheck>>,
    /// Table entries this run covers (the table's size when it was written).
    #[serde(default, skip_serializing_if = "is_zero32")]
    pub(super) n: u32,
    /// Half-open ranges `[start, end, start, end, …]` of entries below `n`
    /// the run did not run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) ab: Vec<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) t: Vec<TestLine>,
    /// The `--signature` pattern the run reproduced (`signature_pattern`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) sp: Option<u32>,
}

/// A run number at or above this is remembered by id, not as a bit: a bit
/// set that large is not worth it (and a number read from a line never
/// sizes one).
pub(super) const MAX_BIT_INDEX: u64 = 1 << 26;

/// The id a run of `session` at `index` gets.
pub fn run_id(session: &str, index: usize) -> String {
    let mut id = String::with_capacity(session.len() + 6);
    id.push_str(session);
    id.push('.');
    template::push_index(&mut id, index);
    id
}
