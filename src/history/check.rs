//! The CI gate: the history's per-context rates against a committed
//! baseline (`flakelab.baseline/1`, written by `flakelab check
//! --write-baseline`).
//!
//! A (test, context) fails the gate when it is newly proven
//! nondeterministic (a same-commit disagreement the baseline does not
//! already record for it), or measurably worse: both sides have at least
//! `--min-runs` runs and the lower bound of the new rate exceeds the upper
//! bound of the baseline's by more than the tolerance. It gets a note when
//! it is measurably better (the upper bound of the new rate below the
//! baseline's lower bound by more than the tolerance: "consider tightening
//! the baseline"), or when it fails and the baseline does not know it yet
//! but nothing proves it nondeterministic. Everything else passes quietly.
//!
//! Pure.

use serde::{Deserialize, Serialize};

use super::analyse::Analysis;

pub use crate::record::schema::BASELINE_SCHEMA;

/// One (test, context) of a baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineEntry {
    /// The test id.
    pub test: String,
    /// The context's name (`k=v,…`).
    pub context: String,
    /// Failures.
    pub k: u64,
    /// Runs.
    pub n: u64,
    /// Lower bound of the rate.
    pub low: f64,
    /// Upper bound of the rate.
    pub high: f64,
    /// Whether it was proven nondeterministic (a same-commit disagreement).
    pub proven: bool,
}

/// The baseline file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// [`BASELINE_SCHEMA`].
    pub schema: String,
    /// Confidence of the bounds.
    pub confidence: f64,
    /// Entries sorted by test, then context: only those that failed at
    /// least once (a clean test needs no entry).
    pub entries: Vec<BaselineEntry>,
}

/// The baseline of an analysis: every (test, context) with a failure.
pub fn baseline(a: &Analysis) -> Baseline {
    let mut entries = Vec::new();
    for t in &a.tests {
        for c in &t.contexts {
            if c.k == 0 {
                continue;
            }
            entries.push(BaselineEntry {
                test: t.test.clone(),
                context: c.context.clone(),
                k: c.k,
                n: c.n,
                low: c.low,
                high: c.high,
                proven: c.same_commit > 0,
            });
        }
    }
    entries.sort_by(|a, b| (&a.test, &a.context).cmp(&(&b.test, &b.context)));
    Baseline {
        schema: BASELINE_SCHEMA.to_string(),
        confidence: a.confidence,
        entries,
    }
}

/// How one (test, context) stands against the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Standing {
    /// Newly proven nondeterministic: fails the gate.
    NewlyProven,
    /// Measurably worse: fails the gate.
    Worse,
    /// Measurably better: a note.
    Better,
    /// Fails, not in the baseline, not proven: a note.
    NewFailures,
}

impl Standing {
    /// Whether it fails the gate.
    pub fn fails(self) -> bool {
        matches!(self, Standing::NewlyProven | Standing::Worse)
    }
}

/// One line of the gate's verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// The test id.
    pub test: String,
    /// The context's name.
    pub context: String,
    /// How it stands.
    pub standing: Standing,
    /// In a sentence, with the numbers.
    pub message: String,
    /// A failure's file, when a report gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Its line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// The knobs of [`check`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gate {
    /// Runs both sides need before a rate comparison counts.
    pub min_runs: u64,
    /// Margin, in rate, between the bounds.
    pub tolerance: f64,
}

/// The gate's verdicts, failing ones first, then by test and context.
pub fn check(a: &Analysis, base: &Baseline, gate: &Gate) -> Vec<Verdict> {
    let mut out = Vec::new();
    for t in &a.tests {
        for c in &t.contexts {
            let old = base
                .entries
                .iter()
                .find(|e| e.test == t.test && e.context == c.context);
            let rate =
                |k: u64, n: u64, low: f64, high: f64| format!("{k} of {n} [{low:.3}, {high:.3}]");
            let now = rate(c.k, c.n, c.low, c.high);
            let standing = if c.same_commit > 0 && !old.is_some_and(|o| o.proven) {
                let s = t
                    .same_commit
                    .iter()
                    .find(|s| s.context == c.context)
                    .map(|s| {
                        format!(
                            " on commit {}: {} failed, {} passed",
                            s.commit.as_deref().unwrap_or("(unknown)"),
                            s.failed,
                            s.passed
                        )
                    })
                    .unwrap_or_default();
                Some((
                    Standing::NewlyProven,
                    format!("newly proven nondeterministic in {}{s} (now {now}; not in the baseline as nondeterministic)", c.context),
                ))
            } else if let Some(o) = old {
                let then = rate(o.k, o.n, o.low, o.high);
                let enough = c.n >= gate.min_runs && o.n >= gate.min_runs;
                if enough && c.low > o.high + gate.tolerance {
                    Some((
                        Standing::Worse,
                        format!("measurably worse in {}: {now}, baseline {then}", c.context),
                    ))
                } else if enough && c.high + gate.tolerance < o.low {
                    Some((
                        Standing::Better,
                        format!(
                            "measurably better in {}: {now}, baseline {then}: consider tightening the baseline (flakelab check --write-baseline)",
                            c.context
                        ),
                    ))
                } else {
                    None
                }
            } else if c.k > 0 {
                Some((
                    Standing::NewFailures,
                    format!(
                        "failed {now} in {}, not in the baseline, not proven nondeterministic (no same-commit disagreement)",
                        c.context
                    ),
                ))
            } else {
                None
            };
            if let Some((standing, message)) = standing {
                out.push(Verdict {
                    test: t.test.clone(),
                    context: c.context.clone(),
                    standing,
                    message,
                    file: t.file.clone(),
                    line: t.line,
                });
            }
        }
    }
    out.sort_by(|a, b| {
        (!a.standing.fails(), &a.test, &a.context).cmp(&(!b.standing.fails(), &b.test, &b.context))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::analyse::{analyse, Fold, Options};
    use crate::history::{Counts, CountsRecord, Item, COUNTS_SCHEMA};

    fn fold(rows: &[(&str, &str, &str, u64, u64)]) -> Analysis {
        let mut f = Fold::new();
        for &(test, os, commit, passed, failed) in rows {
            let rec = CountsRecord {
                schema: COUNTS_SCHEMA.into(),
                test: test.into(),
                context: [("os".to_string(), os.to_string())].into(),
                commit: Some(commit.into()),
                counts: Counts {
                    passed,
                    failed,
                    ..Counts::default()
                },
                file: Some("t.py".into()),
                line: Some(3),
            };
            f.add(Item::Counts(&rec));
        }
        analyse(&f, &Options::default())
    }

    #[test]
    fn standings() {
        let gate = Gate {
            min_runs: 5,
            tolerance: 0.0,
        };
        let old = fold(&[
            ("known", "linux", "c1", 5, 5),
            ("rate", "linux", "c1", 40, 0),
            ("rate", "linux", "c2", 0, 0),
            ("better", "linux", "c1", 0, 20),
            ("better", "linux", "c2", 20, 0),
        ]);
        let base = baseline(&old);
        assert_eq!(base.entries.len(), 2, "{base:?}");
        assert!(base.entries.iter().any(|e| e.test == "known" && e.proven));
        let new = fold(&[
            ("known", "linux", "c3", 3, 3),
            ("known", "macos", "c3", 3, 3),
            ("rate", "linux", "c3", 40, 0),
            ("better", "linux", "c3", 40, 0),
            ("new", "linux", "c3", 10, 0),
            ("new", "linux", "c4", 0, 2),
        ]);
        let v = check(&new, &base, &gate);
        let s: Vec<(&str, &str, Standing)> = v
            .iter()
            .map(|v| (v.test.as_str(), v.context.as_str(), v.standing))
            .collect();
        assert_eq!(
            s,
            [
                ("known", "os=macos", Standing::NewlyProven),
                ("better", "os=linux", Standing::Better),
                ("new", "os=linux", Standing::NewFailures),
            ]
        );
        assert_eq!(v[0].file.as_deref(), Some("t.py"));
        // Worse: 0 failures of 40 in the baseline, 30 of 40 now.
        let base = baseline(&fold(&[("rate", "linux", "c1", 39, 1)]));
        let worse = check(
            &fold(&[
                ("rate", "linux", "c1", 10, 0),
                ("rate", "linux", "c2", 0, 30),
            ]),
            &base,
            &gate,
        );
        assert_eq!(worse[0].standing, Standing::Worse);
        // Too few runs on one side: no comparison.
        let few = Gate {
            min_runs: 100,
            ..gate
        };
        assert!(check(
            &fold(&[
                ("rate", "linux", "c1", 10, 0),
                ("rate", "linux", "c2", 0, 30)
            ]),
            &base,
            &few
        )
        .is_empty());
    }
}
