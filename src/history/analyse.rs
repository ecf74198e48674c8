//! What history says per test: the observations folded into counts per
//! (test, context, commit) ([`Fold`]), then ([`analyse`]) same-commit
//! disagreement, k of N per context with its Clopper–Pearson interval,
//! transitions between commits within a context (a context holds its
//! branch, so never across branches), where failures concentrate (Fisher's
//! exact test per dimension, Holm across dimensions and tests), and the
//! plain statements for tests that are always failing, always skipped or
//! have too few runs.
//!
//! No weighting: every execution counts once, so a rate is an honest k of
//! N with an exact interval. Recency is a window counted in commits
//! (`--commits N`: the last N commits each (test, context) was seen on), not
//! in observations, so a burst of runs on one commit uses all its evidence,
//! and a test fixed N commits ago leaves its failures behind.
//!
//! Pure.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::{context_name, Context, Counts, CountsRecord, InfraNote, Item, COUNTS_SCHEMA};
use crate::stats;

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One folded (test, context, commit).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The test id.
    pub test: String,
    /// Index into [`Fold::contexts`].
    pub context: usize,
    /// The commit.
    pub commit: Option<String>,
    /// The counts.
    pub counts: Counts,
    /// The first failure's file, when a report gave one.
    pub file: Option<String>,
    /// Its line.
    pub line: Option<u32>,
    /// The page of the last run in `counts.failing_runs`, when its report
    /// recorded one (raw reports only: `compact` keeps no page).
    pub last_failing_url: Option<String>,
}

/// Observations folded into counts, rows in first-seen order.
#[derive(Debug, Default, Clone)]
pub struct Fold {
    /// The distinct contexts, first seen first.
    pub contexts: Vec<Context>,
    ctx_index: HashMap<Context, usize>,
    index: HashMap<(String, usize, Option<String>), usize>,
    /// The rows.
    pub rows: Vec<Row>,
    /// The identity keys of the reports folded, first seen first.
    pub keys: Vec<String>,
    /// Runner-infrastructure notes, one per report, first seen first.
    pub infra: Vec<InfraNote>,
    /// The raw reports' heads, for the matrix-leg warning.
    pub heads: Vec<super::Head>,
}

impl Fold {
    /// An empty fold.
    pub fn new() -> Fold {
        Fold::default()
    }

    fn context(&mut self, c: &Context) -> usize {
        if let Some(&i) = self.ctx_index.get(c) {
            return i;
        }
        self.contexts.push(c.clone());
        self.ctx_index.insert(c.clone(), self.contexts.len() - 1);
        self.contexts.len() - 1
    }

    fn row(&mut self, test: &str, context: usize, commit: &Option<String>) -> &mut Row {
        let key = (test.to_string(), context, commit.clone());
        let i = match self.index.get(&key) {
            Some(&i) => i,
            None => {
                self.rows.push(Row {
                    test: test.to_string(),
                    context,
                    commit: commit.clone(),
                    counts: Counts::default(),
                    file: None,
                    line: None,
                    last_failing_url: None,
                });
                self.index.insert(key, self.rows.len() - 1);
                self.rows.len() - 1
            }
        };
        &mut self.rows[i]
    }

    fn note(&mut self, note: InfraNote) {
        if !self.infra.iter().any(|n| n.key == note.key) {
            self.infra.push(note);
        }
    }

    /// Folds one item of the history.
    pub fn add(&mut self, item: Item<'_>) {
        match item {
            Item::Report(r, obs) => {
                self.keys.push(r.key.clone());
                self.heads.push(super::Head::of(r));
                if !r.infra.is_empty() {
                    self.note(InfraNote {
                        key: r.key.clone(),
                        context: context_name(&r.context),
                        commit: r.commit.clone(),
                        run: r.provenance.label(&r.path),
                        path: r.path.clone(),
                        what: r.infra.clone(),
                    });
                }
                let c = self.context(&r.context);
                let label = r.provenance.label(&r.path);
                for o in obs {
                    let row = self.row(&o.test, c, &r.commit);
                    let runs = row.counts.failing_runs.len();
                    row.counts.add(o.outcome, &label);
                    if row.counts.failing_runs.len() > runs {
                        // The page of the run `failing_runs` ends with.
                        row.last_failing_url.clone_from(&r.provenance.url);
                    }
                    if o.retried {
                        // The run also holds the retry's pass.
                        row.counts.retried += 1;
                        super::push_once(&mut row.counts.passing_runs, &label);
                    }
                    if row.file.is_none() && o.file.is_some() {
                        row.file.clone_from(&o.file);
                        row.line = o.line;
                    }
                }
            }
            Item::Infra(note) => self.note(note.clone()),
            Item::Counts(rec) => {
                let c = self.context(&rec.context);
                let row = self.row(&rec.test, c, &rec.commit);
                let runs = row.counts.failing_runs.len();
                row.counts.merge(&rec.counts);
                if row.counts.failing_runs.len() > runs {
                    row.last_failing_url = None;
                }
                if row.file.is_none() && rec.file.is_some() {
                    row.file.clone_from(&rec.file);
                    row.line = rec.line;
                }
            }
        }
    }

    /// The rows as `flakelab.counts/1` records, in first-seen order (what
    /// `flakelab compact` writes; folding them again gives this fold).
    pub fn records(&self) -> Vec<CountsRecord> {
        self.rows
            .iter()
            .map(|r| CountsRecord {
                schema: COUNTS_SCHEMA.to_string(),
                test: r.test.clone(),
                context: self.contexts[r.context].clone(),
                commit: r.commit.clone(),
                counts: r.counts.clone(),
                file: r.file.clone(),
                line: r.line,
            })
            .collect()
    }
}

/// The knobs of [`analyse`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Fewer runs (skips excluded) than this, with no same-commit
    /// disagreement, is "too few runs".
    pub min_runs: u64,
    /// Confidence of the intervals.
    pub confidence: f64,
    /// Family-wise error rate of the associations (after Holm).
    pub alpha: f64,
    /// Only the last N commits of each (test, context) count; `None`: all.
    pub commits: Option<usize>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            min_runs: 5,
            confidence: 0.95,
            alpha: 0.05,
            commits: None,
        }
    }
}

/// What history says of one test, in one word (the statement says it in a
/// sentence; the counts say it in numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Finding {
    /// Passed and failed on one commit in one context: proven
    /// nondeterministic there.
    SameCommit,
    /// On one commit, failed in every run of one context and passed in
    /// every run of another: the outcome follows the context (a platform or
    /// entry-path mismatch), deterministic within each.
    ContextSplit,
    /// Failed and passed in reports that recorded no commit: the
    /// disagreement cannot be placed on one commit, so it proves nothing
    /// (a regression and its fix look the same).
    CommitUnknown,
    /// Failed and passed, but never on one commit in one context: weaker
    /// evidence (a regression and its fix look the same).
    CrossCommit,
    /// Failed in every run.
    AlwaysFailing,
    /// Skipped in every run.
    AlwaysSkipped,
    /// Fewer runs than `--min-runs`.
    TooFewRuns,
    /// Passed in every run.
    Passing,
}

/// One commit of one context where a test both passed and failed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SameCommit {
    /// The context's name.
    pub context: String,
    /// The commit (`None`: the reports named none).
    pub commit: Option<String>,
    /// Failures (failed + errored) on it.
    pub failed: u64,
    /// Passes on it.
    pub passed: u64,
    /// Of the failures, first attempts whose retry passed in the same run:
    /// a disagreement on one commit by itself.
    #[serde(skip_serializing_if = "is_zero")]
    pub passed_on_retry: u64,
    /// The runs with a failure.
    pub failing_runs: Vec<String>,
    /// The runs with a pass.
    pub passing_runs: Vec<String>,
}

/// One commit where one context always failed and another always passed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextSplit {
    /// The commit.
    pub commit: Option<String>,
    /// Contexts where every run on it failed, with (failed, runs).
    pub failing: Vec<(String, u64)>,
    /// Contexts where every run on it passed, with their runs.
    pub passing: Vec<(String, u64)>,
}

/// A no-failure stretch at the end of a context's history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PassingSince {
    /// The first commit of the stretch.
    pub commit: Option<String>,
    /// Commits in it.
    pub commits: u64,
    /// Runs in it.
    pub runs: u64,
}

/// k of N in one context.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextRate {
    /// `k=v,…`.
    pub context: String,
    /// The dimensions.
    pub dimensions: Context,
    /// Failures (failed + errored).
    pub k: u64,
    /// Runs (skips excluded).
    pub n: u64,
    /// Skipped runs.
    pub skipped: u64,
    /// Of the failures, those that passed on a retry (their first attempt
    /// failed: counted in `k`).
    #[serde(skip_serializing_if = "is_zero")]
    pub passed_on_retry: u64,
    /// Point rate.
    pub rate: f64,
    /// Clopper–Pearson lower bound.
    pub low: f64,
    /// Clopper–Pearson upper bound.
    pub high: f64,
    /// Commits seen (with at least one run).
    pub commits: u64,
    /// Changes of state (pass / fail / both) between consecutive commits.
    pub transitions: u64,
    /// Commits where the test both passed and failed.
    pub same_commit: u64,
    /// After failures, the stretch of passing commits at the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passing_since: Option<PassingSince>,
}

/// Where failures concentrate, for one dimension of one test.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Association {
    /// The dimension.
    pub dimension: String,
    /// The value failures concentrate in.
    pub value: String,
    /// Failures with that value.
    pub failed_in: u64,
    /// Runs with that value.
    pub ran_in: u64,
    /// Failures with any other value.
    pub failed_out: u64,
    /// Runs with any other value.
    pub ran_out: u64,
    /// Effect size: the rate with the value minus the rate without.
    pub difference: f64,
    /// Fisher's exact p, times the number of values tried when more than 2.
    pub p: f64,
    /// Holm-adjusted across every dimension of every test.
    pub p_holm: f64,
    /// Whether `p_holm` is below alpha.
    pub significant: bool,
    /// Dimensions that split this test's runs exactly as this one does:
    /// the data cannot tell them apart.
    pub inseparable_from: Vec<String>,
}

/// What history says of one test.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TestHistory {
    /// The test id.
    pub test: String,
    /// In one word.
    pub finding: Finding,
    /// In a sentence.
    pub statement: String,
    /// Runs (skips excluded), all contexts.
    pub n: u64,
    /// Failures, all contexts.
    pub k: u64,
    /// Skipped runs.
    pub skipped: u64,
    /// Per context.
    pub contexts: Vec<ContextRate>,
    /// Same-commit disagreements, strongest evidence first.
    pub same_commit: Vec<SameCommit>,
    /// Commits where one context always failed and another always passed.
    pub context_splits: Vec<ContextSplit>,
    /// Per dimension with two or more values, where it failed.
    pub associations: Vec<Association>,
    /// A failure's file, when a report gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Its line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// Everything history says.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis {
    /// `flakelab.history/1`.
    pub schema: &'static str,
    /// The knobs it was computed with.
    pub min_runs: u64,
    /// Confidence of the intervals.
    pub confidence: f64,
    /// Alpha of the associations.
    pub alpha: f64,
    /// The commit window, when one was set.
    pub commits: Option<usize>,
    /// Per test, by id.
    pub tests: Vec<TestHistory>,
    /// Direct evidence of runner-infrastructure trouble in the reports:
    /// unreadable reports, errors outside any test case.
    pub infrastructure: Vec<InfraNote>,
    /// Matrix legs that cannot be told apart
    /// ([`super::identity::indistinct_legs`]).
    pub warnings: Vec<String>,
    /// Reports read (raw and folded).
    pub reports: u64,
}

pub use crate::record::schema::HISTORY_JSON_SCHEMA;

/// The state of a commit: 1 pass only, 2 fail only, 3 both.
fn state(c: &Counts) -> u8 {
    // A retry that passed is a pass on the commit.
    u8::from(c.passed > 0 || c.retried > 0) | (u8::from(c.bad() > 0) << 1)
}

/// What history says, per test.
pub fn analyse(fold: &Fold, opts: &Options) -> Analysis {
    // Rows per test, per context, in first-seen order.
    let mut by_test: BTreeMap<&str, BTreeMap<usize, Vec<&Row>>> = BTreeMap::new();
    for r in &fold.rows {
        by_test
            .entry(r.test.as_str())
            .or_default()
            .entry(r.context)
            .or_default()
            .push(r);
    }
    let mut tests = Vec::new();
    // (test index, association) for Holm.
    let mut pending: Vec<(usize, Association)> = Vec::new();
    for (test, per_ctx) in &mut by_test {
        if let Some(window) = opts.commits {
            for rows in per_ctx.values_mut() {
                // Skip-only commits do not use up the window.
                let mut seen = 0;
                let mut cut = 0;
                for (i, r) in rows.iter().enumerate().rev() {
                    if r.counts.ran() > 0 {
                        seen += 1;
                        if seen > window {
                            cut = i + 1;
                            break;
                        }
                    }
                }
                rows.drain(..cut);
            }
        }
        let th = one_test(test, per_ctx, fold, opts, tests.len(), &mut pending);
        tests.push(th);
    }
    let adjusted = stats::holm(&pending.iter().map(|(_, a)| a.p).collect::<Vec<_>>());
    for ((i, mut a), q) in pending.into_iter().zip(adjusted) {
        a.p_holm = q;
        a.significant = q < opts.alpha;
        tests[i].associations.push(a);
    }
    Analysis {
        schema: HISTORY_JSON_SCHEMA,
        min_runs: opts.min_runs,
        confidence: opts.confidence,
        alpha: opts.alpha,
        commits: opts.commits,
        tests,
        infrastructure: fold.infra.clone(),
        warnings: super::identity::indistinct_legs(&fold.heads),
        reports: fold.keys.len() as u64,
    }
}

fn one_test(
    test: &str,
    per_ctx: &BTreeMap<usize, Vec<&Row>>,
    fold: &Fold,
    opts: &Options,
    index: usize,
    pending: &mut Vec<(usize, Association)>,
) -> TestHistory {
    let mut contexts = Vec::new();
    let mut same_commit = Vec::new();
    // Passed and failed where no commit was recorded: not one commit.
    let mut unplaced = false;
    let mut total = Counts::default();
    let (mut file, mut line) = (None, None);
    for (&c, rows) in per_ctx {
        let name = context_name(&fold.contexts[c]);
        let mut sum = Counts::default();
        let mut states = Vec::new();
        let mut proven = 0u64;
        for r in rows {
            sum.merge(&Counts {
                failing_runs: Vec::new(),
                passing_runs: Vec::new(),
                ..r.counts.clone()
            });
            if file.is_none() && r.file.is_some() {
                file.clone_from(&r.file);
                line = r.line;
            }
            if r.counts.ran() == 0 {
                continue;
            }
            states.push((state(&r.counts), *r));
            let bad = r.counts.bad();
            if r.commit.is_none() {
                // Reports with no commit may come from any commit: only a
                // retry's pass beside its failed first attempt (one run)
                // is a disagreement on one commit.
                if r.counts.retried > 0 {
                    proven += 1;
                    same_commit.push(SameCommit {
                        context: name.clone(),
                        commit: None,
                        failed: r.counts.retried,
                        passed: 0,
                        passed_on_retry: r.counts.retried,
                        failing_runs: Vec::new(),
                        passing_runs: Vec::new(),
                    });
                } else if r.counts.passed > 0 && bad > 0 {
                    unplaced = true;
                }
                continue;
            }
            // A first attempt that failed and a retry that passed disagree
            // on one commit as much as two runs do.
            if (r.counts.passed > 0 || r.counts.retried > 0) && bad > 0 {
                proven += 1;
                same_commit.push(SameCommit {
                    context: name.clone(),
                    commit: r.commit.clone(),
                    failed: bad,
                    passed: r.counts.passed,
                    passed_on_retry: r.counts.retried,
                    failing_runs: r.counts.failing_runs.clone(),
                    passing_runs: r.counts.passing_runs.clone(),
                });
            }
        }
        let transitions = states.windows(2).filter(|w| w[0].0 != w[1].0).count() as u64;
        let passing_since = {
            let tail: Vec<&(u8, &Row)> = states.iter().rev().take_while(|(s, _)| *s == 1).collect();
            (sum.bad() > 0 && !tail.is_empty()).then(|| PassingSince {
                commit: tail.last().and_then(|(_, r)| r.commit.clone()),
                commits: tail.len() as u64,
                runs: tail.iter().map(|(_, r)| r.counts.ran()).sum(),
            })
        };
        let p = stats::proportion(sum.bad(), sum.ran(), opts.confidence);
        contexts.push(ContextRate {
            context: name,
            dimensions: fold.contexts[c].clone(),
            k: p.k,
            n: p.n,
            skipped: sum.skipped,
            passed_on_retry: sum.retried,
            rate: p.rate,
            low: p.low,
            high: p.high,
            commits: states.len() as u64,
            transitions,
            same_commit: proven,
            passing_since,
        });
        total.merge(&sum);
    }
    same_commit.sort_by(|a, b| {
        (b.failed.min(b.passed), b.failed + b.passed)
            .cmp(&(a.failed.min(a.passed), a.failed + a.passed))
    });
    let (n, k) = (total.ran(), total.bad());
    let context_splits = splits(per_ctx, fold);
    let finding = if !same_commit.is_empty() {
        Finding::SameCommit
    } else if !context_splits.is_empty() {
        Finding::ContextSplit
    } else if n == 0 {
        Finding::AlwaysSkipped
    } else if n < opts.min_runs {
        Finding::TooFewRuns
    } else if k == n {
        Finding::AlwaysFailing
    } else if unplaced {
        Finding::CommitUnknown
    } else if k > 0 {
        Finding::CrossCommit
    } else {
        Finding::Passing
    };
    if k > 0 && k < n {
        associations(per_ctx, fold, index, pending);
    }
    let statement = statement(finding, &total, &same_commit, &context_splits, opts);
    TestHistory {
        test: test.to_string(),
        finding,
        statement,
        n,
        k,
        skipped: total.skipped,
        contexts,
        same_commit,
        context_splits,
        associations: Vec::new(),
        file,
        line,
    }
}

/// Commits where a context failed in every run and another passed in
/// every run, in first-seen commit order.
fn splits(per_ctx: &BTreeMap<usize, Vec<&Row>>, fold: &Fold) -> Vec<ContextSplit> {
    let mut order: Vec<&Option<String>> = Vec::new();
    let mut by_commit: HashMap<&Option<String>, ContextSplit> = HashMap::new();
    for (&c, rows) in per_ctx {
        for r in rows {
            let (bad, ran) = (r.counts.bad(), r.counts.ran());
            // Contexts split on one commit only where the commit is known.
            if ran == 0 || (bad > 0 && r.counts.passed > 0) || r.commit.is_none() {
                continue;
            }
            let e = by_commit.entry(&r.commit).or_insert_with(|| {
                order.push(&r.commit);
                ContextSplit {
                    commit: r.commit.clone(),
                    failing: Vec::new(),
                    passing: Vec::new(),
                }
            });
            let name = context_name(&fold.contexts[c]);
            if bad == ran {
                e.failing.push((name, ran));
            } else {
                e.passing.push((name, ran));
            }
        }
    }
    order
        .into_iter()
        .filter_map(|c| by_commit.remove(c))
        .filter(|s| !s.failing.is_empty() && !s.passing.is_empty())
        .collect()
}

fn statement(
    finding: Finding,
    total: &Counts,
    same: &[SameCommit],
    splits: &[ContextSplit],
    opts: &Options,
) -> String {
    let (n, k) = (total.ran(), total.bad());
    match finding {
        Finding::SameCommit => {
            let s = &same[0];
            let more = match same.len() {
                1 => String::new(),
                m => format!("; {} more commit(s) like it", m - 1),
            };
            let retried = match s.passed_on_retry {
                0 => String::new(),
                r => format!(", {r} of the failures passed on a retry"),
            };
            format!(
                "passed and failed on the same commit {} in {}: {} failed{retried}, {} passed ({} failing; {} passing): proven nondeterministic there{more}",
                s.commit.as_deref().unwrap_or("(not recorded: a retry's pass in the run itself)"),
                s.context,
                s.failed,
                s.passed,
                s.failing_runs.join(", "),
                s.passing_runs.join(", "),
            )
        }
        Finding::ContextSplit => {
            let s = &splits[0];
            let names = |v: &[(String, u64)]| {
                v.iter()
                    .map(|(c, n)| format!("{c} ({n} of {n})"))
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            format!(
                "on commit {} it failed in every run of {} and passed in every run of {}{}: the outcome follows the context (a platform or entry-path mismatch), not chance",
                s.commit.as_deref().unwrap_or("(unknown commit)"),
                names(&s.failing),
                names(&s.passing),
                match splits.len() {
                    1 => String::new(),
                    m => format!("; {} more commit(s) like it", m - 1),
                }
            )
        }
        Finding::CommitUnknown => format!(
            "failed {k} of {n}, passing and failing in reports that recorded no commit: the disagreement cannot be placed on one commit, so it proves nothing (ingest with --commit SHA, or in CI where the commit is read)"
        ),
        Finding::CrossCommit => format!(
            "failed {k} of {n}, but never on a commit where it also passed: the disagreement is across commits, weaker evidence (a regression and its fix look the same)"
        ),
        Finding::AlwaysFailing => {
            format!("failed in all {n} runs: broken, not flaky; more runs will not change this")
        }
        Finding::AlwaysSkipped => format!(
            "skipped in all {} runs: more runs will not change this",
            total.skipped
        ),
        Finding::TooFewRuns => format!(
            "only {n} run(s), fewer than --min-runs {}: too few to say anything",
            opts.min_runs
        ),
        Finding::Passing => format!(
            "passed all {n} runs ({})",
            stats::format_bound(stats::proportion(0, n, opts.confidence).high)
        ),
    }
}

/// The dimension's value of a context (`(none)` when it lacks it).
fn value<'a>(c: &'a Context, dim: &str) -> &'a str {
    c.get(dim).map_or("(none)", String::as_str)
}

fn associations(
    per_ctx: &BTreeMap<usize, Vec<&Row>>,
    fold: &Fold,
    index: usize,
    pending: &mut Vec<(usize, Association)>,
) {
    // (failures, runs) per context.
    let cells: Vec<(&Context, u64, u64)> = per_ctx
        .iter()
        .map(|(&c, rows)| {
            let bad = rows.iter().map(|r| r.counts.bad()).sum();
            let ran = rows.iter().map(|r| r.counts.ran()).sum();
            (&fold.contexts[c], bad, ran)
        })
        .filter(|(_, _, ran)| *ran > 0)
        .collect();
    let dims: BTreeSet<&str> = cells
        .iter()
        .flat_map(|(c, _, _)| c.keys().map(String::as_str))
        .collect();
    // Dimensions with two values or more, and each one's partition.
    let varying: Vec<&str> = dims
        .into_iter()
        .filter(|d| {
            cells
                .iter()
                .map(|(c, _, _)| value(c, d))
                .collect::<BTreeSet<_>>()
                .len()
                > 1
        })
        .collect();
    let same_split = |a: &str, b: &str| {
        let mut ab: HashMap<&str, &str> = HashMap::new();
        let mut ba: HashMap<&str, &str> = HashMap::new();
        cells.iter().all(|(c, _, _)| {
            let (x, y) = (value(c, a), value(c, b));
            *ab.entry(x).or_insert(y) == y && *ba.entry(y).or_insert(x) == x
        })
    };
    let (all_bad, all_ran): (u64, u64) = cells
        .iter()
        .fold((0, 0), |(b, r), (_, cb, cr)| (b + cb, r + cr));
    for dim in &varying {
        let mut per_value: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
        for (c, bad, ran) in &cells {
            let e = per_value.entry(value(c, dim)).or_default();
            e.0 += bad;
            e.1 += ran;
        }
        let tried = per_value.len() as f64;
        let best = per_value
            .iter()
            .map(|(v, &(bad, ran))| {
                let (fo, ro) = (all_bad - bad, all_ran - ran);
                let p = stats::fisher_exact(bad, ran - bad, fo, ro - fo);
                (p, *v, bad, ran, fo, ro)
            })
            // Lowest p; among ties the value with the higher rate.
            .min_by(|a, b| {
                a.0.total_cmp(&b.0).then_with(|| {
                    let ra = a.2 as f64 / a.3 as f64;
                    let rb = b.2 as f64 / b.3 as f64;
                    rb.total_cmp(&ra)
                })
            });
        let Some((p, v, bad, ran, fo, ro)) = best else {
            continue;
        };
        let p = if tried > 2.0 { (p * tried).min(1.0) } else { p };
        let difference =
            bad as f64 / ran as f64 - if ro == 0 { 0.0 } else { fo as f64 / ro as f64 };
        let inseparable_from = varying
            .iter()
            .filter(|o| *o != dim && same_split(dim, o))
            .map(|o| o.to_string())
            .collect();
        pending.push((
            index,
            Association {
                dimension: dim.to_string(),
                value: v.to_string(),
                failed_in: bad,
                ran_in: ran,
                failed_out: fo,
                ran_out: ro,
                difference,
                p,
                p_holm: f64::NAN,
                significant: false,
                inseparable_from,
            },
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Observation, Provenance, ReportRecord, REPORT_SCHEMA};
    use crate::results::junit::CaseOutcome::{self, Failed, Passed, Skipped};

    fn ctx(pairs: &[(&str, &str)]) -> Context {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Folds one report of `outcomes` of test `t` in `c` on `commit`.
    fn add(
        fold: &mut Fold,
        c: &Context,
        commit: &str,
        run: &str,
        t: &str,
        outcomes: &[CaseOutcome],
    ) {
        let r = ReportRecord {
            schema: REPORT_SCHEMA.into(),
            key: format!("{run}{commit}{}", fold.keys.len()),
            context: c.clone(),
            commit: Some(commit.into()),
            provenance: Provenance {
                run: Some(run.into()),
                ..Provenance::default()
            },
            path: "j.xml".into(),
            digest: "d".into(),
            n: outcomes.len() as u64,
            infra: Vec::new(),
        };
        let obs: Vec<Observation> = outcomes
            .iter()
            .enumerate()
            .map(|(i, &o)| Observation {
                test: t.into(),
                outcome: o,
                retried: false,
                rep: i as u32,
                file: None,
                line: None,
            })
            .collect();
        fold.add(Item::Report(&r, &obs));
    }

    #[test]
    fn a_concentrated_failure_is_a_significant_association_and_confounded_dimensions_are_inseparable(
    ) {
        let mut fold = Fold::new();
        let arm = ctx(&[("arch", "arm64"), ("image", "arm"), ("branch", "main")]);
        let x64 = ctx(&[("arch", "x64"), ("image", "std"), ("branch", "main")]);
        for i in 0..20 {
            let commit = format!("c{i}");
            add(
                &mut fold,
                &arm,
                &commit,
                "r",
                "t",
                &[if i % 2 == 0 { Failed } else { Passed }],
            );
            add(&mut fold, &x64, &commit, "r", "t", &[Passed]);
        }
        let a = analyse(&fold, &Options::default());
        let t = &a.tests[0];
        assert_eq!((t.k, t.n), (10, 40));
        assert_eq!(t.finding, Finding::ContextSplit);
        assert_eq!(t.context_splits.len(), 10);
        let arch = t
            .associations
            .iter()
            .find(|a| a.dimension == "arch")
            .unwrap();
        assert_eq!(
            (
                arch.value.as_str(),
                arch.failed_in,
                arch.ran_in,
                arch.failed_out,
                arch.ran_out
            ),
            ("arm64", 10, 20, 0, 20)
        );
        let p = stats::fisher_exact(10, 10, 0, 20);
        assert_eq!(arch.p, p);
        // Holm over arch and image (branch has one value): 2 p-values.
        assert_eq!(arch.p_holm, (2.0 * p).min(1.0));
        assert!(arch.significant);
        assert_eq!(arch.difference, 0.5);
        assert_eq!(arch.inseparable_from, ["image"]);
        assert!(t.associations.iter().all(|a| a.dimension != "branch"));
        // A transition per commit pair on arm64: F P F P … (19), none on x64.
        let c = t
            .contexts
            .iter()
            .find(|c| c.dimensions["arch"] == "arm64")
            .unwrap();
        assert_eq!((c.commits, c.transitions, c.same_commit), (20, 19, 0));
    }

    #[test]
    fn findings_and_the_commit_window() {
        let mut fold = Fold::new();
        let c = ctx(&[("os", "linux")]);
        add(
            &mut fold,
            &c,
            "c1",
            "r1",
            "burst",
            &[Passed, Failed, Passed],
        );
        add(&mut fold, &c, "c1", "r1", "skip", &[Skipped, Skipped]);
        add(&mut fold, &c, "c1", "r1", "few", &[Passed, Passed]);
        add(&mut fold, &c, "c1", "r1", "broken", &[Failed; 6]);
        for (i, commit) in ["c1", "c2", "c3", "c4", "c5"].iter().enumerate() {
            add(
                &mut fold,
                &c,
                commit,
                "r",
                "fixed",
                &[if i < 2 { Failed } else { Passed }; 2],
            );
        }
        let a = analyse(&fold, &Options::default());
        let get = |a: &Analysis, t: &str| a.tests.iter().find(|x| x.test == t).unwrap().clone();
        let burst = get(&a, "burst");
        assert_eq!(burst.finding, Finding::SameCommit);
        assert_eq!(
            (burst.same_commit[0].failed, burst.same_commit[0].passed),
            (1, 2)
        );
        assert_eq!(
            get(&a, "skip").statement,
            "skipped in all 2 runs: more runs will not change this"
        );
        assert_eq!(get(&a, "few").finding, Finding::TooFewRuns);
        assert_eq!(
            get(&a, "broken").statement,
            "failed in all 6 runs: broken, not flaky; more runs will not change this"
        );
        let fixed = get(&a, "fixed");
        assert_eq!(fixed.finding, Finding::CrossCommit);
        assert_eq!((fixed.k, fixed.n), (4, 10));
        let since = fixed.contexts[0].passing_since.clone().unwrap();
        assert_eq!(
            (since.commit.as_deref(), since.commits, since.runs),
            (Some("c3"), 3, 6)
        );
        // The last 3 commits: the fixed test's failures are behind it.
        let recent = analyse(
            &fold,
            &Options {
                commits: Some(3),
                ..Options::default()
            },
        );
        let fixed = get(&recent, "fixed");
        assert_eq!((fixed.k, fixed.n, fixed.finding), (0, 6, Finding::Passing));
        // The fold's records fold back into the same analysis.
        let mut again = Fold::new();
        for r in fold.records() {
            again.add(Item::Counts(&r));
        }
        // (A compaction keeps the folded reports' keys beside the counts.)
        again.keys = fold.keys.clone();
        assert_eq!(analyse(&again, &Options::default()), a);
    }
}
