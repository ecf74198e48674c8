//! `flakelab verify`: the same cells on two git revisions, interleaved in
//! one session, each revision in its own temporary worktree. The fix is
//! verified when the failure reproduces before it (the negative control),
//! is gone after it (0 of N, with its bound), and the two halves differ at
//! the stated confidence (Fisher's exact test on both halves' counts, Holm
//! across the cells). Short of that, the verdict says how many runs would
//! settle it.

use crate::cli::{LadderFormat, VerifyArgs};
use crate::error::{Error, Result};
use crate::ladder::{self, Criterion};
use crate::report::verify::{self as verdict, CellVerdict, Revision, VerifyReport, VERIFY_SCHEMA};
use crate::session::{self, resolve::Layers, Intent};
use crate::verdict::{Findings, Verdict};
use crate::workspace::WorkingCopies;

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
    let (runs, _) = done.runs(&settings.store)?;
    let count = |name: &str| ladder::count_cell(&runs, name, &criterion, confidence).0;
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
    verdict::compare_halves(&mut verdicts, confidence);
    let (negative_control, fix) = verdict::halves(&verdicts, confidence);
    let (difference, runs_to_settle) =
        verdict::difference(&verdicts, &negative_control, &fix, confidence);
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
        LadderFormat::Table => verdict::render(&verdict),
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
