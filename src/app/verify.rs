//! `flakelab verify`: the same cells on two git revisions, interleaved in
//! one session, each revision in its own temporary worktree. The fix is
//! verified when the failure reproduces before it (the negative control),
//! is gone after it (0 of N, with its bound), and the two halves differ at
//! the stated confidence (Fisher's exact test on both halves' counts, Holm
//! across the cells). Short of that, the verdict says how many runs would
//! settle it.

use serde::Serialize;

use crate::cli::{LadderFormat, VerifyArgs};
use crate::error::{Error, Result};
use crate::ladder::{self, Criterion};
use crate::record::RungCount;
use crate::report::VsBaseline;
use crate::session::{self, resolve::Layers, Intent};
use crate::stats;
use crate::verdict::{Findings, Verdict};
use crate::workspace::WorkingCopies;

/// Schema tag of `verify --format json`.
const VERIFY_SCHEMA: &str = "flakelab.verify/1";

/// One revision of the comparison.
#[derive(Debug, Serialize)]
struct Revision {
    rev: String,
    commit: String,
}

/// One cell on both revisions.
#[derive(Debug, Serialize)]
struct CellVerdict {
    cell: String,
    applied: bool,
    before: RungCount,
    after: RungCount,
    /// The before half against the after half: Fisher's two-sided test on
    /// their counts, Holm-adjusted across the cells compared (both halves
    /// measured); `null` when either measured nothing.
    before_vs_after: Option<VsBaseline>,
}

/// One half of the verdict.
#[derive(Debug, Serialize)]
struct Half {
    holds: bool,
    sentence: String,
}

/// The whole verdict, as printed and as JSON.
#[derive(Debug, Serialize)]
struct VerifyReport {
    schema: &'static str,
    session: String,
    criterion: String,
    confidence: f64,
    before: Revision,
    after: Revision,
    cells: Vec<CellVerdict>,
    negative_control: Half,
    fix: Half,
    /// The third condition: the halves differ at the confidence.
    difference: Half,
    /// Runs per cell on each revision that would settle a difference not
    /// shown at this N (`-n`), when one would.
    runs_to_settle: Option<u64>,
    /// All three hold: red before, green after, and the two differ.
    verified: bool,
    interrupted: bool,
}

fn words(c: &RungCount) -> String {
    if c.n == 0 {
        "nothing measured".into()
    } else if c.k == 0 {
        format!("0 of {} — {}", c.n, stats::format_bound(c.high))
    } else {
        format!("{} of {}", c.k, c.n)
    }
}

/// Runs per cell on each revision when no layer sets them.
const DEFAULT_RUNS: u32 = 10;

/// Runs `flakelab verify`; returns the exit code.
pub(super) async fn verify_cmd(ctx: &super::Ctx, args: VerifyArgs) -> Result<i32> {
    let flags = &args.session;
    let dir = session::subject_dir(flags.store.dir.as_deref())?;
    let (copies, commits) = WorkingCopies::at_revisions(&dir, &[&args.before, &args.after])
        .map_err(|e| {
            Error::usage(
                e,
                "verify needs the subject in a git repository and two revisions (`git log --oneline` lists them)",
            )
        })?;
    let mut intent = Intent::from_flags(flags, &[]);
    // Without -p the baseline itself is the failing cell.
    intent.no_baseline = flags.no_baseline || !flags.perturb.is_empty();
    intent.default_runs = Some(DEFAULT_RUNS);
    let layers = Layers::of_project(&dir)?.without_matrix();
    let base = session::resolve(intent, &layers, &ctx.executor)?;
    let names: Vec<String> = base.cells.iter().map(|(c, _)| c.name.clone()).collect();
    // Every cell twice: on the revision before the fix and on the one after.
    let trees: Vec<(&str, std::path::PathBuf)> = ["before", "after"]
        .into_iter()
        .zip(copies.subject_dirs().iter().cloned())
        .collect();
    let settings = base.on_trees(&trees);
    let confidence = settings.confidence;
    let criterion = Criterion::from_flags(flags.signature.as_deref(), args.test.as_deref());
    let stop = super::start_watching()?;
    eprintln!(
        "flakelab verify: {} ({}) against {} ({}), {} run(s) per cell on each",
        args.before,
        &commits[0][..12.min(commits[0].len())],
        args.after,
        &commits[1][..12.min(commits[1].len())],
        settings.runs
    );
    let done = session::run_session(&settings, &stop).await;
    drop(copies);
    let Some(done) = done? else {
        return Ok(Verdict::Interrupted.exit_code());
    };
    let count = |name: &str| ladder::count_cell(&done.runs, name, &criterion, confidence).0;
    let verdicts: Vec<CellVerdict> = names
        .iter()
        .map(|name| {
            let applied = ["before", "after"].iter().all(|t| {
                done.session
                    .cells
                    .iter()
                    .find(|c| c.name == format!("{t}:{name}"))
                    .is_none_or(|c| c.applied)
            });
            CellVerdict {
                cell: name.clone(),
                applied,
                before: count(&format!("before:{name}")),
                after: count(&format!("after:{name}")),
                before_vs_after: None,
            }
        })
        .collect();
    let mut verdicts = verdicts;
    compare_halves(&mut verdicts, confidence);
    let reproduced: Vec<&CellVerdict> = verdicts.iter().filter(|v| v.before.k > 0).collect();
    let negative_control = if reproduced.is_empty() {
        Half {
            holds: false,
            sentence: format!(
                "does NOT hold: before the fix nothing reproduced ({}), so the after runs cannot show the fix changed anything; raise -n or choose the cell that fails",
                verdicts
                    .iter()
                    .map(|v| format!("{}: {}", v.cell, words(&v.before)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    } else {
        Half {
            holds: true,
            sentence: format!(
                "holds: before the fix it reproduced ({})",
                reproduced
                    .iter()
                    .map(|v| format!("{}: {}", v.cell, words(&v.before)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    };
    let still: Vec<&CellVerdict> = verdicts.iter().filter(|v| v.after.k > 0).collect();
    let unmeasured = verdicts.iter().any(|v| v.after.n == 0);
    let fix = if !still.is_empty() {
        Half {
            holds: false,
            sentence: format!(
                "does NOT hold: after the fix it still reproduces ({})",
                still
                    .iter()
                    .map(|v| format!("{}: {}", v.cell, words(&v.after)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    } else if unmeasured {
        Half {
            holds: false,
            sentence: "cannot be shown: a cell measured nothing after the fix".into(),
        }
    } else {
        Half {
            holds: true,
            sentence: format!(
                "holds: after the fix {} at {}% confidence",
                verdicts
                    .iter()
                    .map(|v| format!("{}: {}", v.cell, words(&v.after)))
                    .collect::<Vec<_>>()
                    .join(", "),
                (confidence * 100.0).round()
            ),
        }
    };
    let (difference, runs_to_settle) = difference(&verdicts, &negative_control, &fix, confidence);
    let verified = negative_control.holds && fix.holds && difference.holds;
    let verdict = VerifyReport {
        schema: VERIFY_SCHEMA,
        session: done.session.id.clone(),
        criterion: criterion.describe(),
        confidence,
        before: Revision {
            rev: args.before.clone(),
            commit: commits[0].clone(),
        },
        after: Revision {
            rev: args.after.clone(),
            commit: commits[1].clone(),
        },
        cells: verdicts,
        negative_control,
        fix,
        difference,
        runs_to_settle,
        verified,
        interrupted: done.interrupted,
    };
    let text = match args.format {
        LadderFormat::Json => {
            let mut t = serde_json::to_string_pretty(&verdict).unwrap_or_default();
            t.push('\n');
            t
        }
        LadderFormat::Table => render(&verdict),
    };
    super::print_text(&settings.redaction.text(&text));
    let control = &verdict.negative_control;
    let applied = verdict.cells.iter().all(|c| c.applied);
    // A half fails on what was measured: runs failed after the fix, or
    // nothing reproduced before it though every cell ran and was measured.
    let differs = verdict.cells.iter().any(|c| c.after.k > 0)
        || (!control.holds && applied && verdict.cells.iter().all(|c| c.before.n > 0));
    // A fix not shown at the confidence is never clean: too little was
    // measured to settle it (exit 2, with the runs that would).
    Ok(Verdict::of(Findings {
        interrupted: verdict.interrupted,
        differs,
        not_applied: !applied,
        measured: verdict.verified,
    })
    .exit_code())
}

/// Fisher's exact test of each cell's before half against its after half,
/// Holm across the cells whose halves both measured something.
fn compare_halves(cells: &mut [CellVerdict], confidence: f64) {
    let compared: Vec<usize> = (0..cells.len())
        .filter(|&i| cells[i].before.n > 0 && cells[i].after.n > 0)
        .collect();
    let raw: Vec<f64> = compared
        .iter()
        .map(|&i| {
            let (b, a) = (&cells[i].before, &cells[i].after);
            stats::fisher_exact(b.k, b.n - b.k, a.k, a.n - a.k)
        })
        .collect();
    let alpha = 1.0 - confidence;
    for ((&i, &p), &adj) in compared.iter().zip(&raw).zip(&stats::holm(&raw)) {
        cells[i].before_vs_after = Some(VsBaseline {
            fisher_p: p,
            adjusted_p: adj,
            differs: adj < alpha,
        });
    }
}

/// A cell's two halves in words: `4 of 4 before, 0 of 4 after, Fisher
/// p=0.029 (Holm-adjusted p=0.029)`.
fn halves_words(c: &CellVerdict) -> String {
    let mut s = format!(
        "{}: {} of {} before, {} of {} after",
        c.cell, c.before.k, c.before.n, c.after.k, c.after.n
    );
    if let Some(v) = &c.before_vs_after {
        s.push_str(&format!(
            ", Fisher {} (Holm-adjusted {})",
            stats::p_text(v.fisher_p),
            stats::p_text(v.adjusted_p)
        ));
    }
    s
}

/// The third half: every cell that reproduced before differs from its
/// after half at the confidence. When one does not, the runs per cell on
/// each revision that would show it at the rate it reproduced before.
fn difference(
    cells: &[CellVerdict],
    control: &Half,
    fix: &Half,
    confidence: f64,
) -> (Half, Option<u64>) {
    let pct = (confidence * 100.0).round();
    let reproduced: Vec<&CellVerdict> = cells.iter().filter(|c| c.before.k > 0).collect();
    if !control.holds || reproduced.is_empty() {
        return (
            Half {
                holds: false,
                sentence: "cannot be shown: nothing reproduced before the fix".into(),
            },
            None,
        );
    }
    let words = reproduced
        .iter()
        .map(|c| halves_words(c))
        .collect::<Vec<_>>()
        .join("; ");
    let unshown: Vec<&&CellVerdict> = reproduced
        .iter()
        .filter(|c| !c.before_vs_after.as_ref().is_some_and(|v| v.differs))
        .collect();
    if unshown.is_empty() {
        return (
            Half {
                holds: true,
                sentence: format!("holds: the halves differ at {pct}% confidence ({words})"),
            },
            None,
        );
    }
    // Holm's strictest step is Bonferroni over the cells compared.
    let compared = cells
        .iter()
        .filter(|c| c.before_vs_after.is_some())
        .count()
        .max(1);
    let alpha = (1.0 - confidence) / compared as f64;
    let settle = unshown
        .iter()
        .filter(|c| c.before.n > 0)
        .map(|c| crate::plan::runs_to_separate(c.before.k as f64 / c.before.n as f64, alpha))
        .collect::<Option<Vec<u64>>>()
        .and_then(|n| n.into_iter().max())
        .filter(|_| fix.holds);
    let how = match settle {
        Some(n) => format!(
            "; at the rate it reproduced before, about {n} runs per cell on each revision would settle it (`-n {n}`)"
        ),
        None if fix.holds => "; it reproduced too rarely before for any number of runs up to 100,000 to settle it: raise the rate first (a cell that fails more often)".into(),
        None => String::new(),
    };
    (
        Half {
            holds: false,
            sentence: format!("is not shown at {pct}% confidence ({words}){how}"),
        },
        settle,
    )
}

fn render(v: &VerifyReport) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "verify · session {} · {}% confidence · reproducing means {}",
        v.session,
        (v.confidence * 100.0).round(),
        v.criterion
    );
    let _ = writeln!(out, "before: {} ({})", v.before.rev, v.before.commit);
    let _ = writeln!(out, "after:  {} ({})\n", v.after.rev, v.after.commit);
    let rows: Vec<[String; 4]> = std::iter::once([
        "cell".to_string(),
        "before the fix".to_string(),
        "after the fix".to_string(),
        "before vs after".to_string(),
    ])
    .chain(v.cells.iter().map(|c| {
        [
            if c.applied {
                c.cell.clone()
            } else {
                format!("{} (NOT APPLIED)", c.cell)
            },
            words(&c.before),
            words(&c.after),
            match &c.before_vs_after {
                None => "not compared".into(),
                Some(x) if x.differs => format!("differs ({})", stats::p_text(x.adjusted_p)),
                Some(x) => format!("no difference shown ({})", stats::p_text(x.adjusted_p)),
            },
        ]
    }))
    .collect();
    let w: Vec<usize> = (0..4)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for r in &rows {
        let _ = writeln!(
            out,
            "{:<w0$}  {:<w1$}  {:<w2$}  {}",
            r[0],
            r[1],
            r[2],
            r[3],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2]
        );
    }
    let pct = (v.confidence * 100.0).round();
    let _ = writeln!(out, "\nnegative control {}", v.negative_control.sentence);
    let _ = writeln!(out, "fix {}", v.fix.sentence);
    let _ = writeln!(out, "difference {}", v.difference.sentence);
    let verdict = match (v.negative_control.holds, v.fix.holds, v.difference.holds) {
        (true, true, true) => format!(
            "The fix is verified: red before, green after, and the two differ at {pct}% confidence."
        ),
        (true, true, false) => match v.runs_to_settle {
            Some(n) => format!(
                "Not verified: red before and green after, but too few runs to tell the two apart at {pct}% confidence; run again with `-n {n}`."
            ),
            None => format!(
                "Not verified: red before and green after, but the two are not told apart at {pct}% confidence."
            ),
        },
        (false, true, _) => {
            "Not verified: the negative control failed (nothing was red before).".to_string()
        }
        (true, false, _) => "Not verified: the fix half failed (still red after).".to_string(),
        (false, false, _) => "Not verified: neither half holds.".to_string(),
    };
    let _ = writeln!(out, "\n{verdict}");
    out
}
