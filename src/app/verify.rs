//! `flakelab verify`: the same cells on two git revisions, interleaved in
//! one session, each revision in its own temporary worktree. The fix is
//! proven when the failure reproduces before it (the negative control) and
//! is gone after it (0 of N, with its bound).

use serde::Serialize;

use crate::cli::{LadderFormat, VerifyArgs};
use crate::error::{Error, Result};
use crate::ladder::{self, Criterion};
use crate::record::RungCount;
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
            }
        })
        .collect();
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
    let (control, fix) = (&verdict.negative_control, &verdict.fix);
    let applied = verdict.cells.iter().all(|c| c.applied);
    // A half fails on what was measured: runs failed after the fix, or
    // nothing reproduced before it though every cell ran and was measured.
    let differs = verdict.cells.iter().any(|c| c.after.k > 0)
        || (!control.holds && applied && verdict.cells.iter().all(|c| c.before.n > 0));
    Ok(Verdict::of(Findings {
        interrupted: verdict.interrupted,
        differs,
        not_applied: !applied,
        measured: control.holds && fix.holds,
    })
    .exit_code())
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
    let rows: Vec<[String; 3]> = std::iter::once([
        "cell".to_string(),
        "before the fix".to_string(),
        "after the fix".to_string(),
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
        ]
    }))
    .collect();
    let w: Vec<usize> = (0..3)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for r in &rows {
        let _ = writeln!(
            out,
            "{:<w0$}  {:<w1$}  {}",
            r[0],
            r[1],
            r[2],
            w0 = w[0],
            w1 = w[1]
        );
    }
    let _ = writeln!(out, "\nnegative control {}", v.negative_control.sentence);
    let _ = writeln!(out, "fix {}", v.fix.sentence);
    let _ = writeln!(
        out,
        "\n{}",
        match (v.negative_control.holds, v.fix.holds) {
            (true, true) => "The fix is verified: red before, green after.",
            (false, true) => "Not verified: the negative control failed (nothing was red before).",
            (true, false) => "Not verified: the fix half failed (still red after).",
            (false, false) => "Not verified: neither half holds.",
        }
    );
    out
}
