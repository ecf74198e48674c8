//! The ladder's design: climbs the declared rungs, one session per rung,
//! and stops at the first rung that reproduces. The reasoning (what
//! reproduces, how a rung counts) is in `crate::ladder`; this module
//! derives each rung's session from the one resolved spec, runs it, and
//! returns the stored record.

use std::path::PathBuf;

use tokio::sync::watch;

use crate::catalog::recipe::argv;
use crate::catalog::topology::{Processes, Rung, RungRuns, WorkingCopy};
use crate::context::workspace::WorkingCopies;
use crate::error::Result;
use crate::exec::child::Stop;
use crate::ladder::{self, Criterion};
use crate::record::{LadderRecord, RungResult, RungStatus, SessionRung, LADDER_SCHEMA};
use crate::session::engine::{new_session_id, now_text};
use crate::session::{self, SessionSpec};

/// One ladder, resolved: what it climbs and how.
pub(crate) struct Ladder {
    /// The rungs to climb, lowest first.
    pub rungs: Vec<Rung>,
    /// The project's lane: its command and workers, when declared.
    pub lane: Option<(Vec<String>, Option<usize>)>,
    /// Processes at once on a parallel rung.
    pub processes: usize,
    /// The focused test (`--test`).
    pub test: Option<String>,
    /// The signature a reproduction matches (`--signature`).
    pub signature: Option<String>,
    /// Runs of a reproducing rung again under its first reproduction's
    /// seed (`--confirm`).
    pub confirm: Option<u32>,
    /// The subject's directory.
    pub cwd: PathBuf,
}

/// What the climb reports as it goes.
pub(crate) enum Progress<'a> {
    /// A rung's session is about to run.
    Rung {
        /// The rung.
        rung: &'a Rung,
        /// Its session.
        spec: &'a SessionSpec,
    },
    /// A reproducing rung is about to run again `times` times under the
    /// cell and seed of its first reproducing run, `run`.
    Confirming {
        /// Runs of the confirmation.
        times: u32,
        /// The first reproducing run's id.
        run: &'a str,
    },
}

/// Climbs `ladder` from `base` (one job; the rungs set their processes),
/// stores the record (scrubbed) and returns it.
pub(crate) async fn climb(
    ladder: &Ladder,
    base: &SessionSpec,
    stop: &watch::Receiver<Stop>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<LadderRecord> {
    let criterion = Criterion::from_flags(ladder.signature.as_deref(), ladder.test.as_deref());
    let target = base
        .cells
        .last()
        .map(|(c, _)| c.name.clone())
        .unwrap_or_else(|| "baseline".into());
    let mut record = LadderRecord {
        schema: LADDER_SCHEMA.into(),
        id: format!("ladder-{}", new_session_id()),
        started_at: now_text(),
        command: base.command.clone(),
        cwd: ladder.cwd.clone(),
        lane: ladder.lane.as_ref().map(|(argv, _)| argv.clone()),
        test: ladder.test.clone(),
        signature: ladder.signature.clone(),
        criterion: criterion.describe(),
        cell: target.clone(),
        runs_per_rung: base.runs,
        confidence: base.confidence,
        rungs: Vec::new(),
        reproduced_at: None,
        interrupted: false,
    };
    for rung in &ladder.rungs {
        if let Some(at) = record.reproduced_at {
            record.rungs.push(ladder::not_run(
                rung,
                RungStatus::NotRun,
                format!("rung {at} reproduced: a higher rung would attribute less"),
            ));
            continue;
        }
        if record.interrupted {
            record.rungs.push(ladder::not_run(
                rung,
                RungStatus::NotRun,
                "interrupted".into(),
            ));
            continue;
        }
        let built = match build_rung(rung, base, ladder) {
            Ok(b) => b,
            Err(why) => {
                record
                    .rungs
                    .push(ladder::not_run(rung, RungStatus::Skipped, why));
                continue;
            }
        };
        let BuiltRung {
            settings,
            copies,
            note,
        } = built;
        let processes_here = settings.copies;
        let settings = settings.with_rung(SessionRung {
            ladder: record.id.clone(),
            rung: rung.rung,
            processes: processes_here,
            own_working_copies: copies.is_some(),
        });
        progress(Progress::Rung {
            rung,
            spec: &settings,
        });
        let done = session::run_session(&settings, stop).await;
        let Some(done) = done? else {
            record.interrupted = true;
            record.rungs.push(ladder::not_run(
                rung,
                RungStatus::NotRun,
                "interrupted while probing".into(),
            ));
            continue;
        };
        record.interrupted = done.interrupted;
        let (runs, _) = done.runs(&settings.store)?;
        let (count, first) = ladder::count_cell(&runs, &target, &criterion, base.confidence);
        let baseline = (target != "baseline")
            .then(|| ladder::count_cell(&runs, "baseline", &criterion, base.confidence).0)
            .filter(|_| done.session.cells.iter().any(|c| c.name == "baseline"));
        let cell = done.session.cells.iter().find(|c| c.name == target);
        let applied = cell.is_none_or(|c| c.applied);
        let status = ladder::status(&count, applied);
        let reason = match status {
            RungStatus::NotApplied => cell.and_then(|c| c.reason.clone()),
            RungStatus::Unmeasured => Some(format!(
                "no run measured anything ({} timed out; the rest errored, or their reports did not hold the focused test)",
                count.timeouts
            )),
            _ => note,
        };
        let mut confirmation = None;
        if status == RungStatus::Reproduced {
            record.reproduced_at = Some(rung.rung);
            if let (Some(times), Some(first), false) = (ladder.confirm, first, done.interrupted) {
                progress(Progress::Confirming {
                    times,
                    run: &first.id,
                });
                confirmation = confirm_rung(
                    &settings,
                    &done.session.id,
                    &target,
                    first,
                    times,
                    &criterion,
                    stop,
                )
                .await?;
            }
        }
        drop(copies);
        record.rungs.push(RungResult {
            rung: rung.rung,
            name: rung.name.clone(),
            topology: rung.topology.clone(),
            shows: rung.shows.clone(),
            status,
            processes: settings.copies,
            n: count.n,
            k: count.k,
            low: count.low,
            high: count.high,
            baseline,
            reason,
            session: Some(done.session.id.clone()),
            argv: settings.command.clone(),
            first_reproduction: first.map(|r| (r.id.clone(), r.repro.clone())),
            confirmation,
        });
    }
    crate::session::scrub::ladder(&base.redaction, &mut record);
    base.store.append_ladder(&record)?;
    Ok(record)
}

/// Runs a reproducing rung `times` more times, its target cell only, every
/// run under the first reproducing run's seed: a session part of the rung's.
async fn confirm_rung(
    settings: &SessionSpec,
    rung_session: &str,
    target: &str,
    first: &crate::record::RunRecord,
    times: u32,
    criterion: &Criterion,
    stop: &watch::Receiver<Stop>,
) -> Result<Option<crate::record::RungConfirmation>> {
    let again = settings
        .clone()
        .only_cells(&[target])?
        .with_runs(times)
        .under_seed_of(first)
        .part_of(rung_session);
    let Some(again) = session::run_session(&again, stop).await? else {
        return Ok(None);
    };
    let (runs, _) = again.runs(&settings.store)?;
    let (count, _) = ladder::count_cell(&runs, target, criterion, settings.confidence);
    Ok(Some(crate::record::RungConfirmation {
        times,
        n: count.n,
        k: count.k,
        verdict: crate::report::confirmation_verdict(times, count.n, count.k).to_string(),
        session: again.session.id.clone(),
    }))
}

/// A rung ready to run.
struct BuiltRung {
    settings: SessionSpec,
    /// The rung's working copies, removed when dropped.
    copies: Option<WorkingCopies>,
    /// How the rung was built, when that needs saying.
    note: Option<String>,
}

/// Builds a rung's session from the ladder's, or says why it cannot be
/// built here.
fn build_rung(
    rung: &Rung,
    base: &SessionSpec,
    ladder: &Ladder,
) -> std::result::Result<BuiltRung, String> {
    let (lane, processes) = (ladder.lane.as_ref(), ladder.processes);
    let mut notes = Vec::new();
    let mut settings = base.clone();
    let mut lane_workers = None;
    match rung.runs {
        RungRuns::Command => {}
        RungRuns::Selection => {
            let Some(id) = &ladder.test else {
                return Err("no --test given: this rung runs the focused test alone".into());
            };
            let Some(recipe) = &base.recipe else {
                return Err(format!(
                    "no runner recipe, so flakelab cannot select one test ({}); pass --runner NAME",
                    base.runner_note.as_deref().unwrap_or("not recognised")
                ));
            };
            let command = argv::select(recipe, &base.command, id, &base.dir)?;
            settings = settings.with_command(command);
        }
        RungRuns::Lane => match lane {
            Some((command, workers)) => {
                // The lane is its own command: its runner is detected anew.
                settings = settings
                    .with_own_runner(command.clone())
                    .map_err(|e| format!("{} (hint: {})", e.message(), e.hint()))?;
                lane_workers = *workers;
            }
            None if rung.working_copy == WorkingCopy::Own => {
                notes.push(
                    "no [lane] in flakelab.toml: the command after -- stands in for the lane"
                        .to_string(),
                );
            }
            None => return Err(
                "no lane: flakelab.toml declares no [lane] command (`flakelab init` writes one)"
                    .into(),
            ),
        },
    }
    let copies = match rung.processes {
        Processes::One => 1,
        Processes::Parallel => processes,
    };
    if copies > 1 && rung.working_copy != WorkingCopy::Own {
        if let Some(path) = settings.junit_path().filter(|p| !p.contains("{run}")) {
            return Err(format!(
                "--junit `{path}` with {copies} processes at once: they would overwrite each other's report; put {{run}} in the path"
            ));
        }
    }
    if let Some(n) = lane_workers {
        match settings.recipe.as_ref().filter(|r| r.workers.is_some()) {
            Some(recipe) => {
                let command = argv::with_workers(recipe, &settings.command, n)
                    .map_err(|e| format!("the lane's workers: {e}"))?;
                settings = settings.with_command(command);
            }
            None => notes.push(format!(
                "[lane] workers = {n} not applied: {} has no workers option, so the lane runs as written",
                settings.recipe.as_ref().map_or("the lane's runner", |r| r.name.as_str())
            )),
        }
    }
    let mut working = None;
    let mut dirs = Vec::new();
    if rung.working_copy == WorkingCopy::Own {
        let made = WorkingCopies::create(&settings.dir, copies)
            .map_err(|e| format!("cannot make working copies: {e}"))?;
        dirs = made.subject_dirs().to_vec();
        notes.push(made.describe().to_string());
        working = Some(made);
    }
    Ok(BuiltRung {
        settings: settings.in_copies(copies, dirs),
        copies: working,
        note: (!notes.is_empty()).then(|| notes.join("; ")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design::testing;

    #[test]
    fn the_climb_stops_at_the_first_reproducing_rung_and_confirms_it() {
        let dir = tempfile::tempdir().unwrap();
        let executor = testing::fake(dir.path(), "[[run]]\nexit = 1\noutput = \"boom\"\n");
        let base = testing::spec(dir.path(), &executor, &["subject"], &[], 3).with_jobs(1);
        let rungs = crate::catalog::topology::load(None).unwrap();
        let ladder = Ladder {
            rungs: rungs.into_iter().filter(|r| r.rung <= 3).collect(),
            lane: None,
            processes: 2,
            test: None,
            signature: None,
            confirm: Some(2),
            cwd: dir.path().to_path_buf(),
        };
        let mut seen = Vec::new();
        let record = testing::run(|stop| {
            let (ladder, base, seen) = (&ladder, &base, &mut seen);
            async move {
                let mut progress = |p: Progress<'_>| {
                    seen.push(match p {
                        Progress::Rung { rung, spec } => {
                            format!("rung {} x{}", rung.rung, spec.runs)
                        }
                        Progress::Confirming { times, .. } => format!("confirm {times}"),
                    })
                };
                climb(ladder, base, &stop, &mut progress).await
            }
        })
        .unwrap();
        assert_eq!(seen, ["rung 2 x3", "confirm 2"]);
        let status: Vec<RungStatus> = record.rungs.iter().map(|r| r.status).collect();
        assert_eq!(
            status,
            [
                RungStatus::Skipped,
                RungStatus::Reproduced,
                RungStatus::NotRun
            ]
        );
        assert_eq!(record.reproduced_at, Some(2));
        let two = &record.rungs[1];
        assert_eq!((two.k, two.n, two.processes), (3, 3, 1));
        let confirmation = two.confirmation.as_ref().expect("confirmed");
        assert_eq!(
            (confirmation.times, confirmation.k, confirmation.n),
            (2, 2, 2)
        );
        assert_eq!(record.criterion, "any failing run");
        assert!(!record.interrupted);
        let (stored, _) = base.store.load_ladders().unwrap();
        assert_eq!(stored.len(), 1);
        assert_eq!(stored[0].id, record.id);
        assert_eq!(crate::ladder::exit_code(&record), 1);
    }
}
