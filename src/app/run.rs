//! `flakelab run`: resolve the session, run it, confirm its failing runs
//! when asked (`--confirm K`, each a replay session part of this one), and
//! print the report the store now holds.

use std::collections::BTreeSet;

use crate::cli::{Design, RunArgs};
use crate::error::{Error, Result};
use crate::exec::child::Stop;
use crate::record::{Outcome, RunRecord};
use crate::session::{self, resolve::Layers, Intent, SessionDone, SessionSpec};
use crate::verdict::{Findings, Verdict};

/// At most this many distinct failing runs are confirmed per session.
const MAX_CONFIRMED: usize = 10;

/// The session `run` asks for: the shared flags and `--matrix`, over the
/// project's layers.
pub(super) fn spec_of(ctx: &super::Ctx, args: &RunArgs) -> Result<SessionSpec> {
    let mut intent = Intent::from_flags(&args.session, &args.matrix);
    intent.shams = !args.no_sham;
    let dir = session::subject_dir(intent.dir.as_deref())?;
    session::resolve(intent, &Layers::of_project(&dir)?, &ctx.executor)
}

pub(super) async fn run_cmd(ctx: &super::Ctx, args: RunArgs) -> Result<i32> {
    if args.design == Design::Screen {
        if args.confirm.is_some() {
            return Err(Error::usage(
                "--confirm and --design screen both re-run failures",
                "drop --confirm: the screen design confirms every candidate on fresh runs",
            ));
        }
        return super::screen::screen_cmd(ctx, args).await;
    }
    if args.confirm == Some(0) {
        return Err(Error::usage(
            "`--confirm 0` replays nothing",
            "use --confirm 1 or more (e.g. --confirm 5)",
        ));
    }
    let spec = spec_of(ctx, &args)?;
    let stop = super::start_watching()?;
    let Some(done) = session::run_session(&spec, &stop).await? else {
        return Ok(Verdict::Interrupted.exit_code());
    };
    if let (Some(times), false) = (args.confirm, done.interrupted) {
        confirm_failures(&spec, &done, times, &stop).await?;
    }
    let (report, _) = super::report_cmd::shown(&spec.store, &done.session)?;
    super::print_report(&report, args.format, &spec.redaction);
    let interrupted = done.interrupted || *stop.borrow() != Stop::Run;
    Ok(Verdict::of(Findings {
        interrupted,
        ..report.findings()
    })
    .exit_code())
}

/// Replays each distinct failing run of a finished session `times` times
/// (its cell and seed; a shuffle cell's runs are distinct by seed, others by
/// cell and failure signature), each in a session part of this one.
async fn confirm_failures(
    spec: &SessionSpec,
    done: &SessionDone,
    times: u32,
    stop: &tokio::sync::watch::Receiver<Stop>,
) -> Result<()> {
    // Only the failing runs are held (read in file order, then put in plan
    // order), not the session's every run.
    let mut failed: Vec<RunRecord> = Vec::new();
    spec.store.each_run(&done.session.id, |r| {
        if r.outcome == Outcome::Fail {
            failed.push(r);
        }
    })?;
    failed.sort_by_key(|r| r.index);
    let mut seen = BTreeSet::new();
    let mut failing: Vec<&RunRecord> = Vec::new();
    for run in &failed {
        if done.session.signature.is_some() && run.signature_match != Some(true) {
            continue;
        }
        let shuffled = spec
            .cell_index(&run.cell)
            .is_some_and(|i| spec.cells[i].1.shuffle);
        let key = (
            run.cell.clone(),
            shuffled.then_some(run.seed),
            run.failure_signature.clone(),
        );
        if seen.insert(key) {
            failing.push(run);
        }
    }
    if failing.len() > MAX_CONFIRMED {
        eprintln!(
            "flakelab: {} distinct failing runs; confirming the first {MAX_CONFIRMED}",
            failing.len()
        );
        failing.truncate(MAX_CONFIRMED);
    }
    for run in failing {
        if *stop.borrow() != Stop::Run {
            break;
        }
        eprintln!(
            "flakelab: confirming run {} ({}, seed {}) {times} times",
            run.id, run.cell, run.seed
        );
        let replay = spec
            .clone()
            .replaying(run, times)?
            .part_of(&done.session.id);
        if session::run_session(&replay, stop).await?.is_none() {
            break;
        }
    }
    Ok(())
}
