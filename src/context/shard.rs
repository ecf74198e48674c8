//! One session run as N shards on N machines, and joined again: which
//! shard this process is (`--shard I/N`, or the CI system's variables),
//! the session id and seed every shard shares, which planned runs belong
//! to a shard, the plan digest shards are checked against, how two
//! records of one sharded session join, and the shards block of a report
//! (which hosts ran which shards; per cell, whether the rate differs
//! between hosts before the runs are pooled). Pure: no I/O; the
//! environment is passed in as a lookup. [`merge`] joins the shards'
//! stores into one.
//!
//! Slicing is by replicate block: the plan runs replicate `r` of every cell
//! in block `r`, and shard `I` of `N` runs the blocks with `r mod N = I − 1`.
//! Every shard therefore runs every cell, the baseline included, equally
//! often, so drift on one machine falls on all cells alike.

pub mod merge;

use std::collections::BTreeMap;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::record::{HostInfo, Outcome, SessionRecord, ShardPart, ShardSet};
use crate::stats;

/// This process's shard of a session: `index` of `total`, 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 1-based index.
    pub index: u32,
    /// Number of shards.
    pub total: u32,
}

impl Shard {
    /// Whether replicate `replicate` of every cell belongs to this shard.
    pub fn owns(self, replicate: u32) -> bool {
        shard_of(replicate, self.total) == self.index
    }
}

/// The 1-based shard that runs replicate `replicate` of a session split in
/// `total` shards.
pub fn shard_of(replicate: u32, total: u32) -> u32 {
    replicate % total.max(1) + 1
}

/// The runs shard `index` of `total` plans: its blocks times the cells.
pub fn planned_runs(index: u32, total: u32, runs_per_cell: u32, cells: usize) -> u64 {
    let blocks = (0..runs_per_cell)
        .filter(|&r| shard_of(r, total) == index)
        .count();
    (blocks * cells) as u64
}

/// Parses `I/N` (1-based, 1 ≤ I ≤ N).
pub fn parse(text: &str) -> Result<Shard, String> {
    let bad = || {
        format!(
            "`--shard {text}` is not I/N with 1 ≤ I ≤ N (e.g. `--shard 2/4`; shards count from 1)"
        )
    };
    let (i, n) = text.split_once('/').ok_or_else(bad)?;
    let index: u32 = i.trim().parse().map_err(|_| bad())?;
    let total: u32 = n.trim().parse().map_err(|_| bad())?;
    if index == 0 || total == 0 || index > total {
        return Err(bad());
    }
    Ok(Shard { index, total })
}

/// Which shard this process is, from `--shard I/N`, else from the CI
/// system's variables: GitLab's `CI_NODE_INDEX`/`CI_NODE_TOTAL` (1-based),
/// Buildkite's `BUILDKITE_PARALLEL_JOB`/`BUILDKITE_PARALLEL_JOB_COUNT`
/// (0-based), or with `--shards N` Kubernetes' `JOB_COMPLETION_INDEX`
/// (0-based). Returns the shard and where it came from; None when the
/// session is not sharded.
pub fn resolve(
    flag: Option<&str>,
    shards: Option<u32>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<(Shard, String)>, String> {
    let num = |name: &str| -> Result<Option<u32>, String> {
        match env(name) {
            None => Ok(None),
            Some(v) if v.trim().is_empty() => Ok(None),
            Some(v) => v
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| format!("{name}={v:?} is not a number")),
        }
    };
    let found = if let Some(text) = flag {
        Some((parse(text)?, format!("--shard {text}")))
    } else if let (Some(i), Some(n)) = (num("CI_NODE_INDEX")?, num("CI_NODE_TOTAL")?) {
        Some((
            Shard { index: i, total: n },
            format!("CI_NODE_INDEX={i} of CI_NODE_TOTAL={n} (1-based)"),
        ))
    } else if let (Some(i), Some(n)) = (
        num("BUILDKITE_PARALLEL_JOB")?,
        num("BUILDKITE_PARALLEL_JOB_COUNT")?,
    ) {
        Some((
            Shard {
                index: i + 1,
                total: n,
            },
            format!("BUILDKITE_PARALLEL_JOB={i} of BUILDKITE_PARALLEL_JOB_COUNT={n} (0-based)"),
        ))
    } else if let Some(total) = shards {
        let i = num("JOB_COMPLETION_INDEX")?.ok_or_else(|| {
            "`--shards N` takes the shard's index from JOB_COMPLETION_INDEX (a Kubernetes Indexed Job), which is not set".to_string()
        })?;
        Some((
            Shard {
                index: i + 1,
                total,
            },
            format!("JOB_COMPLETION_INDEX={i} of --shards {total} (0-based)"),
        ))
    } else {
        None
    };
    let Some((shard, from)) = found else {
        return Ok(None);
    };
    if shard.total == 0 || shard.index == 0 || shard.index > shard.total {
        return Err(format!(
            "shard {} of {} (from {from}) is out of range",
            shard.index, shard.total
        ));
    }
    if let Some(n) = shards.filter(|&n| n != shard.total) {
        return Err(format!(
            "--shards {n} disagrees with {from}: the shard count is {}",
            shard.total
        ));
    }
    Ok(Some((shard, from)))
}

/// The session id every shard shares: `--session-id` (or
/// `FLAKELAB_SESSION_ID`) as given, else one made of the CI run's
/// identity, the same in every job of the run: GitHub Actions'
/// `GITHUB_RUN_ID`, `GITHUB_RUN_ATTEMPT` and `GITHUB_JOB`; GitLab's
/// `CI_PIPELINE_ID` and `CI_JOB_NAME` without its ` I/N` suffix;
/// Buildkite's `BUILDKITE_BUILD_ID` and `BUILDKITE_STEP_ID`.
pub fn session_id(
    explicit: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let given = explicit
        .map(str::to_string)
        .or_else(|| env("FLAKELAB_SESSION_ID").filter(|v| !v.is_empty()));
    if let Some(id) = given {
        let ok = !id.is_empty()
            && id.len() <= 128
            && !id.starts_with('.')
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        return if ok {
            Ok(id)
        } else {
            Err(format!(
                "session id {id:?} must be 1 to 128 letters, digits, `-`, `_` or `.` (not starting with `.`)"
            ))
        };
    }
    let get = |k: &str| env(k).filter(|v| !v.is_empty());
    let parts: Option<Vec<String>> = if let Some(run) = get("GITHUB_RUN_ID") {
        Some(vec![
            "github".into(),
            run,
            get("GITHUB_RUN_ATTEMPT").unwrap_or_else(|| "1".into()),
            get("GITHUB_JOB").unwrap_or_default(),
        ])
    } else if let Some(pipeline) = get("CI_PIPELINE_ID") {
        let name = get("CI_JOB_NAME").unwrap_or_default();
        Some(vec![
            "gitlab".into(),
            pipeline,
            strip_parallel_suffix(&name),
        ])
    } else {
        get("BUILDKITE_BUILD_ID").map(|build| {
            vec![
                "buildkite".into(),
                build,
                get("BUILDKITE_STEP_ID").unwrap_or_default(),
            ]
        })
    };
    let parts = parts.ok_or_else(|| {
        "a sharded session needs an id every shard shares, and no CI run id (GITHUB_RUN_ID, CI_PIPELINE_ID, BUILDKITE_BUILD_ID) is set".to_string()
    })?;
    let id: String = parts
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| sanitize(p))
        .collect::<Vec<_>>()
        .join("-");
    Ok(id)
}

/// GitLab names the jobs of `parallel: N` `name I/N`; the shared part is `name`.
fn strip_parallel_suffix(name: &str) -> String {
    match name.rsplit_once(' ') {
        Some((head, tail)) if parse(tail).is_ok() => head.to_string(),
        _ => name.to_string(),
    }
}

fn sanitize(part: &str) -> String {
    let s: String = part
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    s.trim_matches(|c| c == '-' || c == '.')
        .chars()
        .take(60)
        .collect()
}

/// The session seed shards derive when no `--seed` is given: from the
/// shared session id, so every shard derives the same one.
pub fn seed_of(session_id: &str) -> u64 {
    let hash = Sha256::digest(format!("flakelab.seed/1:{session_id}").as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&hash[..8]);
    u64::from_le_bytes(bytes) % 1_000_000_000
}

/// What a shard's plan depends on: the fields that must be equal in every
/// shard of a session, in the order a difference is named.
fn plan_fields(session: &SessionRecord, total: u32) -> Vec<(&'static str, String)> {
    let cells: Vec<String> = session
        .cells
        .iter()
        .map(|c| {
            if c.perturbations.is_empty() {
                c.name.clone()
            } else {
                format!("{} ({})", c.name, c.perturbations.join(" "))
            }
        })
        .collect();
    vec![
        ("flakelab version", session.flakelab_version.clone()),
        ("command", format!("{:?}", session.command)),
        ("seed", session.seed.to_string()),
        ("cells", cells.join(", ")),
        ("runs per cell", session.plan.runs_per_cell.to_string()),
        ("shards", total.to_string()),
        ("confidence", session.confidence.to_string()),
        (
            "signature",
            match session.signatures.as_slice() {
                // One pattern digests as it did before several could be given.
                [] => format!("{:?}", session.signature),
                all => format!("{all:?}"),
            },
        ),
        ("timeout", format!("{:?}", session.timeout_s)),
    ]
}

/// The plan digest of a session split in `total` shards: SHA-256 over
/// the fields every shard must share (flakelab version, command, seed,
/// cells, runs per cell, shards, confidence, signature, timeout), hex.
pub fn plan_digest(session: &SessionRecord, total: u32) -> String {
    let mut h = Sha256::new();
    for (name, value) in plan_fields(session, total) {
        h.update(name.as_bytes());
        h.update([0]);
        h.update(value.as_bytes());
        h.update([0]);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The shard block a shard's own session record carries.
pub fn shard_set(session: &SessionRecord, shard: Shard) -> ShardSet {
    ShardSet {
        total: shard.total,
        plan_digest: plan_digest(session, shard.total),
        present: vec![ShardPart {
            index: shard.index,
            host: session.host.clone(),
            started_at: session.started_at.clone(),
            runner_version: session.runner_version.clone(),
            not_applied: session
                .cells
                .iter()
                .filter(|c| !c.applied)
                .map(|c| {
                    format!(
                        "{}: {}",
                        c.name,
                        c.reason.as_deref().unwrap_or("not applied")
                    )
                })
                .collect(),
        }],
    }
}

/// Joins two records of one session id (`a` already held, `b` merged in):
/// equal records join to themselves; two shards of one plan join into one
/// record listing both shards' parts. A difference is an error naming it.
pub fn join(a: &SessionRecord, b: &SessionRecord) -> Result<SessionRecord, String> {
    if a == b {
        return Ok(a.clone());
    }
    let (Some(sa), Some(sb)) = (&a.shards, &b.shards) else {
        return Err(format!(
            "session {} is held twice with different content ({}), and {} not a shard of a sharded session",
            a.id,
            first_difference(a, b),
            if a.shards.is_none() && b.shards.is_none() { "neither is" } else { "one is" }
        ));
    };
    for ((name, va), (_, vb)) in plan_fields(a, sa.total)
        .into_iter()
        .zip(plan_fields(b, sb.total))
    {
        if va != vb {
            return Err(format!(
                "session {}: a shard of another plan: {name} is {va} in one and {vb} in the other",
                a.id
            ));
        }
    }
    if sa.plan_digest != sb.plan_digest {
        return Err(format!(
            "session {}: the plan digests differ ({} and {}) although every field they cover is equal",
            a.id, sa.plan_digest, sb.plan_digest
        ));
    }
    let mut parts: BTreeMap<u32, ShardPart> = BTreeMap::new();
    for part in sa.present.iter().chain(&sb.present) {
        if let Some(held) = parts.get(&part.index) {
            if held != part {
                return Err(format!(
                    "session {}: shard {} of {} is held twice from different runs (started {} on {} and {} on {}): keep one",
                    a.id,
                    part.index,
                    sa.total,
                    held.started_at,
                    held.host.hostname,
                    part.started_at,
                    part.host.hostname
                ));
            }
        }
        parts.insert(part.index, part.clone());
    }
    // The record of the lowest shard present speaks for the session; the
    // cells are applied only where every shard applied them.
    let lowest_a = sa.present.iter().map(|p| p.index).min().unwrap_or(u32::MAX);
    let lowest_b = sb.present.iter().map(|p| p.index).min().unwrap_or(u32::MAX);
    let mut joined = if lowest_b < lowest_a {
        b.clone()
    } else {
        a.clone()
    };
    let other = if lowest_b < lowest_a { a } else { b };
    for (cell, theirs) in joined.cells.iter_mut().zip(&other.cells) {
        if cell.applied && !theirs.applied {
            cell.applied = false;
            cell.reason = theirs.reason.clone();
        }
    }
    joined.started_at = a.started_at.clone().min(b.started_at.clone());
    joined.shards = Some(ShardSet {
        total: sa.total,
        plan_digest: sa.plan_digest.clone(),
        present: parts.into_values().collect(),
    });
    Ok(joined)
}

/// The first top-level field in which two records' JSON differs.
pub fn first_difference<T: Serialize>(a: &T, b: &T) -> String {
    let (Ok(serde_json::Value::Object(x)), Ok(serde_json::Value::Object(y))) =
        (serde_json::to_value(a), serde_json::to_value(b))
    else {
        return "their content".into();
    };
    let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        if x.get(k) != y.get(k) {
            let show = |v: Option<&serde_json::Value>| {
                let t = v.map_or("absent".to_string(), |v| v.to_string());
                if t.len() > 60 {
                    format!("{}…", t.chars().take(60).collect::<String>())
                } else {
                    t
                }
            };
            return format!(
                "`{k}` is {} in one and {} in the other",
                show(x.get(k)),
                show(y.get(k))
            );
        }
    }
    "their content".into()
}

/// A missing shard, as reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MissingShard {
    /// Its 1-based index.
    pub index: u32,
    /// The runs it planned, missing from the store.
    pub planned_runs: u64,
}

/// One shard present, as reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShardHost {
    /// Its 1-based index.
    pub index: u32,
    /// The host's name.
    pub hostname: String,
    /// The host's context (OS, kernel, CPU model, runner version), in
    /// words; shards with equal contexts are pooled without a test.
    pub context: String,
    /// Runs of the shard recorded in the store.
    pub runs: u64,
    /// Cells not applied on that host, with why (`cell: reason`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_applied: Vec<String>,
}

/// One cell's rates per host context, tested before pooling.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellHosts {
    /// The cell.
    pub cell: String,
    /// Per context (in [`ShardsReport::contexts`] order): k of n.
    pub by_context: Vec<(u64, u64)>,
    /// Two-sided Fisher exact p of the rate differing between contexts
    /// (two contexts: that pair; more: the smallest Holm-adjusted p of
    /// each context against the others).
    pub p: f64,
    /// Whether `p` is below 1 − confidence: the pooled count mixes rates.
    pub differs: bool,
}

/// The shards block of a report on a sharded session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShardsReport {
    /// The number of shards the session was split into.
    pub total: u32,
    /// The plan digest the shards share.
    pub plan_digest: String,
    /// The shards the store holds.
    pub present: Vec<ShardHost>,
    /// The shards it does not hold.
    pub missing: Vec<MissingShard>,
    /// The distinct host contexts the present shards ran on.
    pub contexts: Vec<String>,
    /// Per cell, its rate per context and the test (only when more than one
    /// context ran the shards).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cells: Vec<CellHosts>,
}

/// A host's context: what can change a test's behaviour between machines
/// (the host name cannot, and differs on every CI runner).
fn context(host: &HostInfo, runner_version: Option<&str>) -> String {
    let mut s = format!(
        "{}, kernel {}, {} ({})",
        host.os, host.kernel, host.cpu_model, host.arch
    );
    if let Some(v) = runner_version {
        s.push_str(", ");
        s.push_str(v);
    }
    s
}

/// What the shards block needs from a sharded session's runs, gathered one
/// run at a time: runs per shard and k of n per (cell, shard). Its size
/// follows the cells and shards, never the runs.
#[derive(Debug, Clone, Default)]
pub struct ShardTally {
    runs: BTreeMap<u32, u64>,
    cells: BTreeMap<(String, u32), (u64, u64)>,
}

impl ShardTally {
    /// Counts one run of `session` (nothing for a session that is not sharded).
    pub fn add(&mut self, session: &SessionRecord, r: &crate::store::RunView) {
        let Some(set) = session.shards.as_ref() else {
            return;
        };
        let shard = shard_of(r.replicate(), set.total);
        *self.runs.entry(shard).or_default() += 1;
        let failed = match r.outcome() {
            Outcome::Fail => session.patterns().is_empty() || r.signature_match() == Some(true),
            Outcome::Pass => false,
            _ => return,
        };
        let counts = self.cells.entry((r.cell().to_string(), shard)).or_default();
        counts.0 += u64::from(failed);
        counts.1 += 1;
    }
}

/// The shards block of a report: None for a session that was not sharded.
/// Runs are attributed to shards by replicate (the shard that owns it).
pub fn summary(session: &SessionRecord, tally: &ShardTally) -> Option<ShardsReport> {
    let set = session.shards.as_ref()?;
    let mut contexts: Vec<String> = Vec::new();
    let mut context_of: BTreeMap<u32, usize> = BTreeMap::new();
    let mut present = Vec::new();
    for part in &set.present {
        let ctx = context(&part.host, part.runner_version.as_deref());
        let i = contexts.iter().position(|c| *c == ctx).unwrap_or_else(|| {
            contexts.push(ctx.clone());
            contexts.len() - 1
        });
        context_of.insert(part.index, i);
        present.push(ShardHost {
            index: part.index,
            hostname: part.host.hostname.clone(),
            context: ctx,
            runs: tally.runs.get(&part.index).copied().unwrap_or(0),
            not_applied: part.not_applied.clone(),
        });
    }
    let missing = (1..=set.total)
        .filter(|i| !context_of.contains_key(i))
        .map(|index| MissingShard {
            index,
            planned_runs: planned_runs(
                index,
                set.total,
                session.plan.runs_per_cell,
                session.plan.cells.len(),
            ),
        })
        .collect();
    let mut cells = Vec::new();
    if contexts.len() > 1 {
        let alpha = 1.0 - session.confidence;
        for cell in &session.cells {
            let mut by_context = vec![(0u64, 0u64); contexts.len()];
            let counted = tally
                .cells
                .range((cell.name.clone(), 0)..=(cell.name.clone(), u32::MAX));
            for ((_, shard), &(k, n)) in counted {
                let Some(&c) = context_of.get(shard) else {
                    continue;
                };
                by_context[c].0 += k;
                by_context[c].1 += n;
            }
            let p = between_contexts(&by_context);
            cells.push(CellHosts {
                cell: cell.name.clone(),
                by_context,
                p,
                differs: p < alpha,
            });
        }
    }
    Some(ShardsReport {
        total: set.total,
        plan_digest: set.plan_digest.clone(),
        present,
        missing,
        contexts,
        cells,
    })
}

/// Fisher's exact test of k of n differing between groups: two groups,
/// that pair; more, each group against the rest, Holm-adjusted, the
/// smallest.
pub fn between_contexts(groups: &[(u64, u64)]) -> f64 {
    let used: Vec<(u64, u64)> = groups.iter().copied().filter(|g| g.1 > 0).collect();
    match used.len() {
        0 | 1 => 1.0,
        2 => {
            let ((k1, n1), (k2, n2)) = (used[0], used[1]);
            stats::fisher_exact(k1, n1 - k1, k2, n2 - k2)
        }
        _ => {
            let (kt, nt) = used.iter().fold((0, 0), |(a, b), g| (a + g.0, b + g.1));
            let raw: Vec<f64> = used
                .iter()
                .map(|&(k, n)| stats::fisher_exact(k, n - k, kt - k, (nt - n) - (kt - k)))
                .collect();
            stats::holm(&raw).into_iter().fold(1.0, f64::min)
        }
    }
}

/// `1250` → `1,250`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The sentence naming one missing shard.
pub fn missing_text(m: &MissingShard, total: u32) -> String {
    format!(
        "shard {} of {total} not present: {} planned runs missing",
        m.index,
        thousands(m.planned_runs)
    )
}

/// The report's notes on a sharded session: the shards present (host,
/// context, runs), those missing, and per cell whether the hosts' rates
/// differ before they are pooled.
pub fn notes(report: &ShardsReport) -> Vec<String> {
    let mut out = vec![format!(
        "sharded session: {} of {} shards present (plan {})",
        report.present.len(),
        report.total,
        &report.plan_digest[..report.plan_digest.len().min(12)]
    )];
    for s in &report.present {
        out.push(format!(
            "shard {} of {} ran on {} ({}): {} runs",
            s.index,
            report.total,
            s.hostname,
            s.context,
            thousands(s.runs)
        ));
        for cell in &s.not_applied {
            out.push(format!("on shard {}'s host, not applied: {cell}", s.index));
        }
    }
    for m in &report.missing {
        out.push(missing_text(m, report.total));
    }
    if report.contexts.len() <= 1 {
        if report.present.len() > 1 {
            out.push("every shard ran on one host context: the shards' runs are pooled".into());
        }
        return out;
    }
    out.push(format!(
        "the shards ran on {} host contexts; each cell's rate is tested between them (Fisher exact) before pooling:",
        report.contexts.len()
    ));
    for c in &report.cells {
        let counts: Vec<String> = c
            .by_context
            .iter()
            .enumerate()
            .map(|(i, (k, n))| format!("context {}: {k} of {n}", i + 1))
            .collect();
        out.push(format!(
            "{}: {} — {}: {}",
            c.cell,
            counts.join(", "),
            stats::p_text(c.p),
            if c.differs {
                "the rate differs between hosts; the pooled k of N mixes them, read it per host"
            } else {
                "no difference between hosts shown; pooled"
            }
        ));
    }
    for (i, ctx) in report.contexts.iter().enumerate() {
        out.push(format!("context {}: {ctx}", i + 1));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn shard_flags_and_ci_variables_give_one_based_shards() {
        let none = env_of(&[]);
        assert_eq!(resolve(None, None, &none), Ok(None));
        let (s, _) = resolve(Some("2/4"), None, &none).unwrap().unwrap();
        assert_eq!((s.index, s.total), (2, 4));
        for bad in ["0/4", "5/4", "2", "a/b", "1/0"] {
            assert!(resolve(Some(bad), None, &none).is_err(), "{bad}");
        }
        // GitLab counts from 1, Buildkite and Kubernetes from 0.
        let gitlab = env_of(&[("CI_NODE_INDEX", "3"), ("CI_NODE_TOTAL", "4")]);
        let (s, from) = resolve(None, None, &gitlab).unwrap().unwrap();
        assert_eq!((s.index, s.total), (3, 4));
        assert!(from.contains("1-based"), "{from}");
        let bk = env_of(&[
            ("BUILDKITE_PARALLEL_JOB", "0"),
            ("BUILDKITE_PARALLEL_JOB_COUNT", "4"),
        ]);
        let (s, _) = resolve(None, None, &bk).unwrap().unwrap();
        assert_eq!((s.index, s.total), (1, 4));
        let k8s = env_of(&[("JOB_COMPLETION_INDEX", "3")]);
        let (s, _) = resolve(None, Some(4), &k8s).unwrap().unwrap();
        assert_eq!((s.index, s.total), (4, 4));
        assert!(resolve(None, Some(4), &none)
            .unwrap_err()
            .contains("JOB_COMPLETION_INDEX"));
        assert!(
            resolve(None, None, &env_of(&[("JOB_COMPLETION_INDEX", "4")]))
                .unwrap()
                .is_none()
        );
        let out = env_of(&[("JOB_COMPLETION_INDEX", "4")]);
        assert!(resolve(None, Some(4), &out)
            .unwrap_err()
            .contains("out of range"));
        assert!(resolve(Some("1/3"), Some(4), &none)
            .unwrap_err()
            .contains("disagrees"));
    }

    #[test]
    fn slices_are_whole_blocks_that_cover_the_plan_once() {
        let plan = crate::plan::build(&["baseline".into(), "a".into(), "b".into()], 10, 3);
        let mut seen = vec![0u32; plan.len()];
        for index in 1..=4 {
            let shard = Shard { index, total: 4 };
            let mine: Vec<_> = plan.iter().filter(|r| shard.owns(r.replicate)).collect();
            assert_eq!(mine.len() as u64, planned_runs(index, 4, 10, 3));
            // Every cell equally often in each shard: the baseline beside its cells.
            for cell in 0..3 {
                let n = mine.iter().filter(|r| r.cell == cell).count();
                assert_eq!(n * 3, mine.len(), "shard {index} cell {cell}");
            }
            for r in mine {
                seen[r.index] += 1;
            }
        }
        assert!(seen.iter().all(|&n| n == 1));
        // 10 blocks in 4 shards: 3, 3, 2, 2 blocks.
        assert_eq!(
            (1..=4)
                .map(|i| planned_runs(i, 4, 10, 3))
                .collect::<Vec<_>>(),
            vec![9, 9, 6, 6]
        );
    }

    #[test]
    fn session_ids_come_from_the_flag_or_the_ci_run() {
        let none = env_of(&[]);
        assert_eq!(session_id(Some("nightly-7"), &none).unwrap(), "nightly-7");
        assert!(session_id(Some("../x"), &none).is_err());
        assert!(session_id(None, &none)
            .unwrap_err()
            .contains("GITHUB_RUN_ID"));
        let gh = env_of(&[
            ("GITHUB_RUN_ID", "981"),
            ("GITHUB_RUN_ATTEMPT", "2"),
            ("GITHUB_JOB", "shard"),
        ]);
        assert_eq!(session_id(None, &gh).unwrap(), "github-981-2-shard");
        // Every job of a GitLab `parallel:` gets the same id.
        let a = env_of(&[("CI_PIPELINE_ID", "55"), ("CI_JOB_NAME", "flakelab 1/4")]);
        let b = env_of(&[("CI_PIPELINE_ID", "55"), ("CI_JOB_NAME", "flakelab 4/4")]);
        assert_eq!(session_id(None, &a).unwrap(), "gitlab-55-flakelab");
        assert_eq!(session_id(None, &a), session_id(None, &b));
        assert_eq!(seed_of("gitlab-55-flakelab"), seed_of("gitlab-55-flakelab"));
        assert_ne!(seed_of("gitlab-55-flakelab"), seed_of("gitlab-56-flakelab"));
        assert!(seed_of("x") < 1_000_000_000);
    }

    #[test]
    fn contexts_are_compared_with_fisher() {
        // 0 of 10 against 8 of 10: p = 0.0007 (R: fisher.test).
        assert!((between_contexts(&[(0, 10), (8, 10)]) - 0.000_714_5).abs() < 1e-6);
        assert_eq!(between_contexts(&[(1, 10), (1, 10)]), 1.0);
        assert_eq!(between_contexts(&[(3, 10)]), 1.0);
        assert!(between_contexts(&[(0, 10), (0, 10), (9, 10)]) < 0.01);
        assert_eq!(thousands(1250), "1,250");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }
}
