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
/// cell and failure signature), each in a session part of this one; with
/// `--signature`, a run whose failure matched no pattern (an other
/// failure) is replayed too, after the matched ones. Returns
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

/// The session's distinct failing runs, in plan order (with `--signature`,
/// the matched failures first, then the other failures): only failing runs
/// are held (read in file order, then sorted), not the session's every run.
fn distinct_failures(spec: &SessionSpec, done: &SessionDone) -> Result<Vec<RunRecord>> {
    let mut failed: Vec<RunRecord> = Vec::new();
    spec.store.each_run(&done.session.id, |r| {
        if r.outcome == Outcome::Fail {
            failed.push(r);
        }
        Ok(())
    })?;
    // With --signature, the failures matching a pattern first, then the
    // other failures (real failures too, replayed like them), each in
    // plan order.
    let patterns = !done.session.patterns().is_empty();
    failed.sort_by_key(|r| (patterns && r.signature_match != Some(true), r.index));
    let mut seen = BTreeSet::new();
    let mut failing = Vec::new();
    for run in failed {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::Executor;
    use crate::session::resolve::{resolve, Intent, Layers};

    #[test]
    fn each_distinct_failing_run_is_replayed_in_a_session_part_of_the_confirmed_one() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("fake.toml");
        // env=A=1 always fails; env=B=1 fails its first run only.
        std::fs::write(
            &script,
            "[[run]]\ncell = \"env=A=1\"\nexit = 1\n[[run]]\ncell = \"env=B=1\"\ntimes = 1\nexit = 1\n",
        )
        .unwrap();
        let executor = Executor::from_script(Some(&script)).unwrap();
        let mut intent = Intent {
            command: vec!["subject".into()],
            dir: Some(dir.path().to_path_buf()),
            cells: vec!["env=A=1".into(), "env=B=1".into()],
            seed: Some(9),
            ..Intent::default()
        };
        intent.flags.runs = Some(6);
        let spec = resolve(intent, &Layers::none(), &executor).unwrap();
        let (_tx, stop) = tokio::sync::watch::channel(Stop::Run);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut seen = Vec::new();
        let (done, replayed) = rt.block_on(async {
            let done = session::run_session(&spec, &stop).await.unwrap().unwrap();
            let mut progress = |p: Progress<'_>| match p {
                Progress::Truncated(n) => seen.push(format!("truncated {n}")),
                Progress::Replaying(run, times) => seen.push(format!("{} {times}", run.cell)),
            };
            let replayed = confirm_failures(&spec, &done, 3, &stop, &mut progress)
                .await
                .unwrap();
            (done, replayed)
        });
        // One failing run of each cell (env=A=1's six share its cell and
        // failure signature), in plan order.
        assert_eq!(replayed.len(), 2, "{replayed:?}");
        let mut cells = seen.clone();
        cells.sort();
        assert_eq!(cells, ["env=A=1 3", "env=B=1 3"]);
        let (sessions, _) = spec.store.load_sessions().unwrap();
        let parts: Vec<_> = (sessions.iter())
            .filter(|s| s.part_of.as_deref() == Some(done.session.id.as_str()))
            .collect();
        assert_eq!(parts.len(), 2);
        let replays: Vec<&str> = parts
            .iter()
            .filter_map(|s| s.replay_of.as_deref())
            .collect();
        assert_eq!(
            replays,
            replayed.iter().map(String::as_str).collect::<Vec<_>>()
        );
    }
}
