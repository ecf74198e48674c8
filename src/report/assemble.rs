//! The report of a stored session as the user sees it, live or later:
//! read from the store in one pass over its runs, then marked by the
//! designs that ran on it (the screen's verdicts, or the fixed design's
//! undecided pairs; the handovers; `scan --prove`; `--confirm`'s replays).
//! `run`, `flakelab report` and `flakelab evidence` all assemble it here.

use std::collections::BTreeSet;

use crate::error::Result;
use crate::record::{RunRecord, SessionRecord};
use crate::screen::ScreenRecord;
use crate::store::{RunView, Store};

use super::Report;

/// What [`shown`] leaves to its caller: what else rides along its one pass
/// over the runs (the evidence's facts), and a screened session's verdicts.
pub(crate) trait Along {
    /// Sees each run of the session as it is folded.
    fn add(&mut self, run: &RunView);
    /// Writes the screen design's verdicts into a screened session's report.
    fn screened(&self, report: &mut Report, screen: &ScreenRecord);
}

/// The report of `session`: its cells and tests, the screen design's
/// verdicts when it was screened (through `along`), and the confirmations
/// of the sessions that are part of it. The session's runs are read once,
/// one at a time, into the report's fold (and `along`): memory follows the
/// cells and tests, not the runs.
pub(crate) fn shown(
    store: &Store,
    session: &SessionRecord,
    along: &mut dyn Along,
) -> Result<Report> {
    let (sessions, _) = store.load_sessions()?;
    let replays: Vec<SessionRecord> = sessions
        .into_iter()
        .filter(|s| s.part_of.as_deref() == Some(session.id.as_str()) && s.replay_of.is_some())
        .collect();
    // The runs the confirmations replayed: the only runs kept whole.
    let replayed: BTreeSet<&str> = replays
        .iter()
        .filter_map(|s| s.replay_of.as_deref())
        .collect();
    let mut fold = super::Fold::new(session);
    let mut kept: Vec<RunRecord> = Vec::new();
    let load = store.each_view(&session.id, |r| {
        fold.add(r);
        along.add(r);
        if !replayed.is_empty() && replayed.contains(r.id().as_ref()) {
            kept.push(r.to_record());
        }
        Ok(())
    })?;
    let screen = store.screen_of(&session.id)?;
    // A screen's later rounds (its cells run again, a shuffle cell's
    // reversed order, the systematic orders) are screen runs too: the
    // cells' and tests' counts hold them (the screen's own totals count
    // them from its record).
    for round in screen.iter().flat_map(|s| &s.rounds) {
        store.each_view(&round.session, |r| {
            fold.add(r);
            Ok(())
        })?;
    }
    let mut report = fold.finish(load);
    for round in screen.iter().flat_map(|s| &s.rounds) {
        for (name, _) in &round.cells {
            report.planned += u64::from(round.runs_per_cell);
            if let Some(cell) = report.cells.iter_mut().find(|c| &c.name == name) {
                cell.planned += u64::from(round.runs_per_cell);
            }
        }
    }
    if session.records_end {
        report.session_end = Some(crate::context::liveness::state(store, &session.id)?.word());
        if let Some(end) = store.session_end(&session.id)? {
            report.stop_reason = end.reason;
            report.warnings.extend(end.warnings);
        }
    }
    if let Some(screen) = screen {
        along.screened(&mut report, &screen);
    } else {
        super::undecided::mark(&mut report, session.confidence);
    }
    super::handover::mark(&mut report);
    report.scan_prove = store.prove_of(&session.id)?;
    kept.sort_by_key(|r| r.index);
    let mut again = Vec::new();
    for s in replays {
        let (runs, _) = store.runs_of(&s.id)?;
        again.push((s, runs));
    }
    report.confirmations = super::confirmations(session, &kept, &again);
    Ok(report)
}
