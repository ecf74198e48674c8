//! `run --confirm K`: each distinct failing run of a finished session
//! replayed K times (its cell and seed), each replay a session part of the
//! confirmed one; `report` reads the replays back
//! (`crate::report::confirmations`).

use std::collections::BTreeSet;

use crate::error::Result;
use crate::exec::child::Stop;
use crate::record::{Outcome, RunRecord};
use crate::session::{self, SessionDone, SessionSpec};

/// At most this many distinct failing runs are confirmed per session.
pub(crate) const MAX_CONFIRMED: usize = 10;

/// What the confirmations are doing, as they go (the wiring in `app/` prints it).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Progress<'a> {
    /// More distinct failing runs than [`MAX_CONFIRMED`]: how many; only
    /// the first are confirmed.
    Truncated(usize),
    /// This run is about to be replayed this many times.
    Replaying(&'a RunRecord, u32),
}

/// Replays each distinct failing run of a finished session `times` times
/// (its cell and seed; a shuffle cell's runs are distinct by seed, others by
/// cell and failure signature), each in a session part of this one. Returns
/// the ids of the runs replayed, in order (the last maybe cut short by a
/// stop).
pub(crate) async fn confirm_failures(
    spec: &SessionSpec,
    done: &SessionDone,
    times: u32,
    stop: &tokio::sync::watch::Receiver<Stop>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<String>> {
    let mut failing = distinct_failures(spec, done)?;
    if failing.len() > MAX_CONFIRMED {
        progress(Progress::Truncated(failing.len()));
        failing.truncate(MAX_CONFIRMED);
    }
    let mut replayed = Vec::new();
    for run in &failing {
        if *stop.borrow() != Stop::Run {
            break;
        }
        progress(Progress::Replaying(run, times));
        let replay = spec
            .clone()
            .sharded(None)
            .replaying(run, times)?
            .part_of(&done.session.id);
        replayed.push(run.id.clone());
        if session::run_session(&replay, stop).await?.is_none() {
            break;
        }
    }
    Ok(replayed)
}

/// The session's distinct failing runs, in plan order: only failing runs
/// are held (read in file order, then sorted), not the session's every run.
fn distinct_failures(spec: &SessionSpec, done: &SessionDone) -> Result<Vec<RunRecord>> {
    let mut failed: Vec<RunRecord> = Vec::new();
    spec.store.each_run(&done.session.id, |r| {
        if r.outcome == Outcome::Fail {
            failed.push(r);
        }
        Ok(())
    })?;
    failed.sort_by_key(|r| r.index);
    let mut seen = BTreeSet::new();
    let mut failing = Vec::new();
    for run in failed {
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
    Ok(failing)
}
