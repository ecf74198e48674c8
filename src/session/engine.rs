//! Running one [`SessionSpec`]: probe every cell through the executor
//! (`launch`), record the session, plan its runs (interleaved, seeded),
//! turn each planned run into a job (`job`), hand the jobs to
//! `exec::schedule`, record each run's end (`finish`) in the store, then
//! read the session back. Nothing here prints a report.

use std::collections::BTreeMap;

use super::finish::finish_record;
use super::job::plan_process;
use super::launch::probe_cell;
use super::{JunitSource, SessionSpec};
use crate::error::Result;
use crate::exec::child::Stop;
use crate::exec::schedule::{self, Event};
use crate::host;
use crate::plan::{self, Plan};
use crate::record::{CellRecord, Outcome, RunRecord, SessionRecord, SESSION_SCHEMA};
use crate::report::progress::Progress;

/// Called after each replicate block with the session's runs so far;
/// returns true to stop the session there (a sequential decision).
pub type OnBlock<'a> = &'a mut dyn FnMut(&[RunRecord]) -> bool;

/// A new session id: the UTC time and 16 random bits.
pub fn new_session_id() -> String {
    let now = jiff::Timestamp::now().to_zoned(jiff::tz::TimeZone::UTC);
    format!(
        "{}-{:04x}",
        now.strftime("%Y%m%d-%H%M%S"),
        rand::random::<u16>()
    )
}

/// Now, as recorded (RFC 3339, milliseconds).
pub fn now_text() -> String {
    jiff::Timestamp::now()
        .round(jiff::Unit::Millisecond)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// A finished (or interrupted) session, read back from the store.
pub struct SessionDone {
    /// The session's record.
    pub session: SessionRecord,
    /// Its runs, in index order.
    pub runs: Vec<RunRecord>,
    /// How the store's runs file read.
    pub load: crate::store::LoadStats,
    /// Whether a stop signal cut it short.
    pub interrupted: bool,
}

/// Probes the cells, records the session, runs its plan and reads its runs
/// back. `None` when Ctrl-C came while probing (nothing was run).
pub async fn run_session(
    settings: &SessionSpec,
    stop: &tokio::sync::watch::Receiver<Stop>,
) -> Result<Option<SessionDone>> {
    run_session_looking(settings, stop, None).await
}

/// [`run_session`], calling `on_block` after each replicate block (every
/// cell once) and stopping early when it says so.
pub async fn run_session_looking(
    settings: &SessionSpec,
    stop: &tokio::sync::watch::Receiver<Stop>,
    mut on_block: Option<OnBlock<'_>>,
) -> Result<Option<SessionDone>> {
    let session_id = new_session_id();
    let started_at = now_text();
    let names: Vec<String> = settings.cells.iter().map(|(c, _)| c.name.clone()).collect();
    let replay = &settings.replay;
    let mut plan = plan::build(&names, settings.runs, settings.seed);
    if let Some(seed) = replay.seed {
        for run in &mut plan.runs {
            run.seed = seed;
        }
    }
    if let Some(seed) = replay.first_seed {
        for run in plan.runs.iter_mut().filter(|r| r.replicate == 0) {
            run.seed = seed;
        }
    }

    let mut cell_records = Vec::new();
    for (i, (cell, prepared)) in settings.cells.iter().enumerate() {
        cell_records.push(probe_cell(settings, &session_id, i, cell, prepared, stop).await?);
        if *stop.borrow() != Stop::Run {
            eprintln!("flakelab: interrupted while probing; nothing was run");
            return Ok(None);
        }
    }
    let mut session = SessionRecord {
        schema: SESSION_SCHEMA.into(),
        id: session_id.clone(),
        started_at: started_at.clone(),
        flakelab_version: env!("CARGO_PKG_VERSION").into(),
        command: settings.command.clone(),
        cwd: settings.dir.clone(),
        seed: settings.seed,
        confidence: settings.confidence,
        signature: settings.signature.as_ref().map(|r| r.as_str().to_string()),
        timeout_s: settings.limits.timeout.map(|t| t.as_secs_f64()),
        jobs: settings.jobs,
        cells: cell_records.clone(),
        plan: plan.clone(),
        host: host::host_info(),
        repo: host::repo_info(&settings.dir),
        replay_of: replay.of.clone(),
        runner: settings.recipe.as_ref().map(|r| r.name.clone()),
        runner_note: settings.runner_note.clone(),
        runner_version: (settings.recipe.as_ref())
            .and_then(|r| crate::catalog::recipe::version_argv(r, &settings.command))
            .and_then(|argv| settings.executor.version(&argv, &settings.dir)),
        left_out: settings
            .left_out
            .iter()
            .map(|(cell, why)| format!("{cell}: {why}"))
            .collect(),
        junit: match &settings.junit {
            Some(JunitSource::Path(p)) => Some(p.clone()),
            _ => None,
        },
        rung: settings.rung.clone(),
        part_of: settings.part_of.clone(),
    };
    super::scrub::session(&settings.redaction, &mut session);
    // Held until the end record is appended, so a reader tells a running
    // session from one killed without a stop (see `liveness`).
    let running = crate::liveness::Running::start(&settings.store, &session_id)?;
    settings.store.append_session(&session)?;

    let interrupted = match on_block.as_mut() {
        None => execute(settings, &session, &plan, &cell_records, stop.clone()).await?,
        Some(look) => {
            let mut interrupted = false;
            for replicate in 0..settings.runs {
                let block = Plan {
                    runs: plan
                        .runs
                        .iter()
                        .filter(|r| r.replicate == replicate)
                        .copied()
                        .collect(),
                    ..plan.clone()
                };
                interrupted =
                    execute(settings, &session, &block, &cell_records, stop.clone()).await?;
                if interrupted {
                    break;
                }
                let (runs, _) = settings.store.runs_of(&session_id)?;
                if look(&runs) {
                    break;
                }
            }
            interrupted
        }
    };
    running.end(interrupted)?;
    let (runs, load) = settings.store.runs_of(&session_id)?;
    Ok(Some(SessionDone {
        session,
        runs,
        load,
        interrupted,
    }))
}

/// Runs the plan, appending each finished run to the store. Returns whether
/// the session was interrupted.
async fn execute(
    settings: &SessionSpec,
    session: &SessionRecord,
    plan: &Plan,
    cells: &[CellRecord],
    stop: tokio::sync::watch::Receiver<Stop>,
) -> Result<bool> {
    let mut jobs = Vec::new();
    let mut pending: BTreeMap<usize, RunRecord> = BTreeMap::new();
    for spec in &plan.runs {
        for copy in 0..settings.copies {
            if let Some((job, record)) = plan_process(settings, session, cells, spec, copy)? {
                pending.insert(job.index, record);
                jobs.push(job);
            }
        }
    }

    let mut progress = Progress::new(jobs.len() as u64);
    let mut store_error = None;
    let end = schedule::schedule(
        &settings.executor,
        jobs,
        settings.jobs,
        settings.limits,
        stop,
        |event| match event {
            Event::Started { .. } => {}
            Event::Interrupted => progress.interrupted(),
            Event::Finished {
                index,
                started_at,
                result,
                measured,
            } => {
                let Some(mut record) = pending.remove(&index) else {
                    return;
                };
                record.cpu_busy = measured.host_busy;
                record.cpu = measured.cpu;
                let prepared = &settings.cells[settings.cell_index(&record.cell).unwrap_or(0)].1;
                finish_record(&mut record, started_at, result, settings, prepared);
                progress.finished(record.outcome == Outcome::Fail);
                if let Err(e) = settings.store.append_run(&record) {
                    store_error.get_or_insert(e);
                }
            }
        },
    )
    .await;
    progress.finish();
    match store_error {
        Some(e) => Err(e),
        None => Ok(end.interrupted),
    }
}
