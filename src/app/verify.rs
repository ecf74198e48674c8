//! `flakelab verify`: wiring only. Checks the two revisions out in
//! temporary worktrees, resolves the session, runs `design::verify` and
//! prints its verdict (`report::verify`).

use crate::cli::{LadderFormat, VerifyArgs};
use crate::context::workspace::WorkingCopies;
use crate::design::verify::{self, Trees};
use crate::error::{Error, Result};
use crate::ladder::Criterion;
use crate::report::verify::Revision;
use crate::session::{self, resolve::Layers, Intent};
use crate::stats::verdict::Verdict;

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
    let redaction = base.redaction.clone();
    let criterion = Criterion::from_flags(
        super::shared::one_signature(flags, "verify")?,
        args.test.as_deref(),
    );
    let stop = super::start_watching()?;
    eprintln!(
        "flakelab verify: {} ({}) against {} ({}), {} run(s) per cell on each",
        args.before,
        &commits[0][..12.min(commits[0].len())],
        args.after,
        &commits[1][..12.min(commits[1].len())],
        base.runs
    );
    let dirs = copies.subject_dirs();
    let trees = Trees {
        before: (
            Revision {
                rev: args.before.clone(),
                commit: commits[0].clone(),
            },
            dirs[0].clone(),
        ),
        after: (
            Revision {
                rev: args.after.clone(),
                commit: commits[1].clone(),
            },
            dirs[1].clone(),
        ),
    };
    let verdict = verify::verify(base, trees, &criterion, &stop).await;
    drop(copies);
    let Some(verdict) = verdict? else {
        return Ok(Verdict::Interrupted.exit_code());
    };
    let text = match args.format {
        LadderFormat::Json => crate::report::verify::render_json(&verdict),
        LadderFormat::Table => crate::report::verify::render(&verdict),
    };
    super::print_text(&redaction.text(&text));
    Ok(verify::exit_code(&verdict))
}
