//! `flakelab replay RUN --times K`: the session of a recorded run rebuilt
//! from its record (no layer in between), replaying that run K times.

use crate::cli;
use crate::error::{Error, Result};
use crate::record::RunRecord;
use crate::session::{self, resolve::store_root, subject_dir};
use crate::store::Store;

pub(super) fn replay_cmd(ctx: &super::Ctx, args: &cli::ReplayArgs) -> Result<i32> {
    let dir = subject_dir(args.store.dir.as_deref())?;
    let root = store_root(args.store.store.as_deref(), &dir);
    let store = Store::open(&root)?;
    // Streamed: only the runs that match are kept.
    let mut runs = store.runs_iter(None)?;
    let matching: Vec<RunRecord> = runs
        .by_ref()
        .filter(|r| r.id.starts_with(&args.run))
        .collect();
    runs.finish()?;
    let run = match matching.as_slice() {
        [one] => one,
        [] => {
            return Err(Error::usage(
                format!("no run `{}` in {}", args.run, root.display()),
                "copy a run id from a report (`flakelab report`) or from `flakelab report --format json`",
            ))
        }
        many => {
            return Err(Error::usage(
                format!("`{}` matches {} runs", args.run, many.len()),
                "give more characters of the run id",
            ))
        }
    };
    if run
        .perturbations
        .iter()
        .any(|p| p.contains(crate::redact::REDACTED))
    {
        return Err(Error::usage(
            format!(
                "run {} set a credential-like variable whose value was not recorded",
                run.id
            ),
            "re-run it with `flakelab run`, giving the variable again with -p env=NAME=VALUE",
        ));
    }
    let recorded = store.session(Some(&run.session))?.ok_or_else(|| {
        Error::usage(
            format!(
                "the session {} of run {} is not in the store",
                run.session, run.id
            ),
            "replay needs the session record (sessions.jsonl) of the run",
        )
    })?;
    if args.times == 0 {
        return Err(Error::usage(
            "`--times 0` replays nothing",
            "use --times 1 or more",
        ));
    }
    if recorded
        .command
        .iter()
        .chain(&run.argv)
        .any(|w| w.contains(crate::redact::REDACTED))
    {
        return Err(Error::usage(
            format!(
                "the command of run {} held a credential value, which was masked when recorded",
                run.id
            ),
            "re-run it with `flakelab run`, giving the command again",
        ));
    }
    let mut at = run.clone();
    if let Some(t) = &run.topology {
        eprintln!(
            "flakelab: run {} was one of several processes started together (group {}); it is replayed alone here: `flakelab ladder --from R --to R` re-runs its rung",
            run.id, t.group
        );
        if t.working_copy.is_some() && !run.cwd.exists() {
            // The rung's temporary working copy is gone: the subject's own
            // directory stands in for it.
            eprintln!(
                "flakelab: its working copy {} is gone; replaying in {}",
                run.cwd.display(),
                recorded.cwd.display()
            );
            at.cwd = recorded.cwd.clone();
        }
    }
    let spec = session::resolve::recorded(&recorded, &at, &root, &ctx.executor)?
        .replaying(&at, args.times)?;
    super::run_and_report(&spec, args.format)
}
