//! `verify`'s design: the same cells on two git revisions, interleaved in
//! one session, each revision in its own tree. The fix is verified when
//! the failure reproduces before it (the negative control), is gone after
//! it (0 of N, with its bound), and the two halves differ at the stated
//! confidence (`report::verify`'s rules: Fisher's exact test on both
//! halves' counts, Holm across the cells). Short of that, the verdict says
//! how many runs would settle it.

use std::path::PathBuf;

use tokio::sync::watch;

use crate::error::Result;
use crate::exec::child::Stop;
use crate::ladder::{self, Criterion};
use crate::report::verify::{self as verdict, CellVerdict, Revision, VerifyReport, VERIFY_SCHEMA};
use crate::session::{self, SessionSpec};
use crate::stats::verdict::{Findings, Verdict};

/// The two revisions compared, before the fix first, each with the tree
/// it is checked out in.
pub(crate) struct Trees {
    /// The revision before the fix and its tree.
    pub before: (Revision, PathBuf),
    /// The revision with the fix and its tree.
    pub after: (Revision, PathBuf),
}

/// Runs `base`'s cells on both trees in one session and decides; `None`
/// when stopped before the session recorded anything.
pub(crate) async fn verify(
    base: SessionSpec,
    trees: Trees,
    criterion: &Criterion,
    stop: &watch::Receiver<Stop>,
) -> Result<Option<VerifyReport>> {
    let names: Vec<String> = base.cells.iter().map(|(c, _)| c.name.clone()).collect();
    // Every cell twice: on the revision before the fix and on the one after.
    let settings = base.on_trees(&[
        ("before", trees.before.1.clone()),
        ("after", trees.after.1.clone()),
    ]);
    let confidence = settings.confidence;
    let Some(done) = session::run_session(&settings, stop).await? else {
        return Ok(None);
    };
    let (runs, _) = done.runs(&settings.store)?;
    let count = |name: &str| ladder::count_cell(&runs, name, criterion, confidence).0;
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
    Ok(Some(VerifyReport {
        schema: VERIFY_SCHEMA,
        session: done.session.id.clone(),
        criterion: criterion.describe(),
        confidence,
        before: trees.before.0,
        after: trees.after.0,
        cells: verdicts,
        negative_control,
        fix,
        difference,
        runs_to_settle,
        verified,
        interrupted: done.interrupted,
    }))
}

/// The exit code of a verdict.
pub(crate) fn exit_code(verdict: &VerifyReport) -> i32 {
    let control = &verdict.negative_control;
    let applied = verdict.cells.iter().all(|c| c.applied);
    // A half fails on what was measured: runs failed after the fix, or
    // nothing reproduced before it though every cell ran and was measured.
    let differs = verdict.cells.iter().any(|c| c.after.k > 0)
        || (!control.holds && applied && verdict.cells.iter().all(|c| c.before.n > 0));
    // A fix not shown at the confidence is never clean: too little was
    // measured to settle it (exit 2, with the runs that would).
    Verdict::of(Findings {
        interrupted: verdict.interrupted,
        differs,
        undecided: false,
        not_applied: !applied,
        measured: verdict.verified,
    })
    .exit_code()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design::testing;

    #[test]
    fn red_before_and_green_after_is_verified() {
        let dir = tempfile::tempdir().unwrap();
        let (before, after) = (dir.path().join("before"), dir.path().join("after"));
        std::fs::create_dir_all(&before).unwrap();
        std::fs::create_dir_all(&after).unwrap();
        let executor = testing::fake(
            dir.path(),
            "[[run]]\ncell = \"before:baseline\"\nexit = 1\noutput = \"boom\"\n",
        );
        let base = testing::spec(dir.path(), &executor, &["subject"], &[], 4);
        let revision = |rev: &str| Revision {
            rev: rev.into(),
            commit: format!("{rev}0000"),
        };
        let trees = Trees {
            before: (revision("a"), before),
            after: (revision("b"), after),
        };
        let got =
            testing::run(
                |stop| async move { verify(base, trees, &Criterion::AnyFailure, &stop).await },
            )
            .unwrap()
            .expect("the session ran");
        assert_eq!(got.cells.len(), 1);
        let cell = &got.cells[0];
        assert_eq!(cell.cell, "baseline");
        assert_eq!((cell.before.k, cell.before.n), (4, 4));
        assert_eq!((cell.after.k, cell.after.n), (0, 4));
        assert!(got.negative_control.holds && got.fix.holds, "{got:?}");
        assert!(got.verified, "4 of 4 against 0 of 4 differs at 95%");
        assert_eq!(
            (got.before.rev.as_str(), got.after.commit.as_str()),
            ("a", "b0000")
        );
        assert_eq!(exit_code(&got), 0);
    }
}
