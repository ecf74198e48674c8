//! Running one [`SessionSpec`]: probe every cell through the executor,
//! record the session, plan its runs (interleaved, seeded), turn each
//! planned run into a job (argv from the recipe, identity variables,
//! report path), hand the jobs to `exec::schedule`, classify each run's end
//! with the recipe's facts and append it to the store, then read the
//! session back. Nothing here prints a report.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{JunitSource, SessionSpec};
use crate::catalog::recipe::{argv, outcome};
use crate::catalog::Cell;
use crate::error::{Error, Result};
use crate::exec::child::{ChildLimits, ChildResult, Launch, Stop};
use crate::exec::schedule::{self, Event, Job};
use crate::exec::{ProbeAnswer, ProbeCall};
use crate::perturb::{self, Prepared};
use crate::plan::{self, Plan};
use crate::record::{
    CellRecord, Outcome, ProcessEnd, RunRecord, SessionRecord, RUN_SCHEMA, SESSION_SCHEMA,
};
use crate::report::progress::Progress;
use crate::{host, repro};

/// How long a probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

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

/// The variables every run gets, identically named in every cell.
fn identity_env(run_id: &str, seed: u64, cell: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("FLAKELAB".to_string(), "1".to_string()),
        ("FLAKELAB_RUN_ID".to_string(), run_id.to_string()),
        ("FLAKELAB_SEED".to_string(), seed.to_string()),
        ("FLAKELAB_CELL".to_string(), cell.to_string()),
    ])
}

fn launch_for(
    settings: &SessionSpec,
    prepared: &Prepared,
    argv: Vec<String>,
    identity: BTreeMap<String, String>,
    extra: &BTreeMap<String, String>,
) -> Launch {
    let mut env_set = identity;
    env_set.extend(prepared.set.iter().map(|(k, v)| (k.clone(), v.clone())));
    env_set.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    Launch {
        argv,
        cwd: settings.dir.clone(),
        env_set,
        env_unset: prepared.unset.clone(),
    }
}

/// Runs every probe of a cell through the cell's launch path.
async fn probe_cell(
    settings: &SessionSpec,
    session: &str,
    index: usize,
    cell: &Cell,
    prepared: &Prepared,
    stop: &tokio::sync::watch::Receiver<Stop>,
) -> Result<CellRecord> {
    let mut record = CellRecord {
        name: cell.name.clone(),
        perturbations: cell.recorded(&settings.redaction),
        applied: true,
        reason: None,
        probes: Vec::new(),
    };
    if let Some(reason) = &prepared.not_applicable {
        record.applied = false;
        record.reason = Some(reason.clone());
        return Ok(record);
    }
    for (i, probe) in prepared.probes.iter().enumerate() {
        let marker = format!("{session}.probe{index}.{i}");
        let launch = launch_for(
            settings,
            prepared,
            prepared.wrap(&settings.facts.self_exe, &probe.argv),
            identity_env(&marker, 0, &cell.name),
            &BTreeMap::new(),
        );
        let log = tempfile::NamedTempFile::new().map_err(|e| {
            Error::harness(
                format!("cannot create a temporary file for a probe: {e}"),
                "check that $TMPDIR is writable",
            )
        })?;
        let limits = ChildLimits {
            timeout: Some(PROBE_TIMEOUT),
            log_head: 64 << 10,
            log_tail: 64 << 10,
            ..settings.limits
        };
        let busy_probe = matches!(probe.expect, perturb::Expect::Busy { .. });
        let call = ProbeCall {
            cell: &cell.name,
            perturbation: &probe.perturbation,
            launch: &launch,
            limits,
            log: log.path(),
            marker: &marker,
            stress: prepared.stress.as_ref().filter(|_| busy_probe),
        };
        let judged = match settings.executor.probe(call, stop.clone()).await {
            ProbeAnswer::Ran { result, cpu_busy } => {
                let seen = perturb::probe::Observed {
                    real_now: jiff::Timestamp::now().as_second(),
                    busy: cpu_busy,
                };
                let output = std::fs::read_to_string(log.path()).unwrap_or_default();
                perturb::probe::judge(probe, &result.end, &output, seen)
            }
            ProbeAnswer::Decided(answer) => answer,
        };
        match judged {
            Ok(fact) => record.probes.push(fact),
            Err(reason) => {
                record.applied = false;
                record.reason = Some(reason);
                break;
            }
        }
    }
    Ok(record)
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
    let session = SessionRecord {
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
                cpu_busy,
            } => {
                let Some(mut record) = pending.remove(&index) else {
                    return;
                };
                record.cpu_busy = cpu_busy;
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

/// One process of one planned run: its record (stored at once when the
/// cell is not applied) and the job that runs it.
fn plan_process(
    settings: &SessionSpec,
    session: &SessionRecord,
    cells: &[CellRecord],
    spec: &plan::RunSpec,
    copy: usize,
) -> Result<Option<(Job, RunRecord)>> {
    let (cell, prepared) = &settings.cells[spec.cell];
    let index = spec.index * settings.copies + copy;
    let id = format!("{}.{:05}", session.id, index);
    let applied = cells[spec.cell].applied;
    let dir = settings
        .copy_dirs
        .get(copy)
        .or(settings.cell_dirs.get(spec.cell))
        .unwrap_or(&settings.dir);
    let junit = match (&settings.junit, applied) {
        (Some(JunitSource::Harness | JunitSource::Recipe), true) => {
            Some(settings.store.junit_path(&session.id, index)?)
        }
        (Some(JunitSource::Path(template)), true) => Some(dir.join(template.replace("{run}", &id))),
        _ => None,
    };
    if let Some(path) = &junit {
        // A report left by an earlier run must never pass as this run's.
        let _ = std::fs::remove_file(path);
    }
    let report = match (&settings.junit, junit.as_deref()) {
        (Some(JunitSource::Harness), Some(path)) => Some(argv::Report::InCommand(path)),
        (Some(JunitSource::Recipe), Some(path)) => Some(argv::Report::Recipe(path)),
        _ => None,
    };
    let ask = argv::RunArgv {
        report,
        shuffle_seed: prepared.shuffle.then_some(spec.seed),
        workers: prepared.workers,
    };
    let (command, extra_env) = argv::for_run(settings.recipe.as_ref(), &settings.command, ask)
        .map_err(|e| {
            Error::harness(
                format!("the runner recipe could not build the command: {e}"),
                "fix the recipe (`flakelab recipes show NAME`) or pass --runner none",
            )
        })?;
    let mut launch = launch_for(
        settings,
        prepared,
        prepared.wrap(&settings.facts.self_exe, &command),
        identity_env(&id, spec.seed, &cell.name),
        &extra_env,
    );
    launch.cwd = dir.clone();
    let env = repro::recorded_env(&settings.redaction, &launch.env_set, &launch.env_unset);
    let topology = (settings.copies > 1 || !settings.copy_dirs.is_empty()).then(|| {
        crate::record::RunTopology {
            group: spec.index,
            copy: copy as u32,
            working_copy: settings.copy_dirs.get(copy).cloned(),
        }
    });
    let mut repro_note = prepared.repro_note();
    if topology.is_some() {
        let together = format!(
            "one of {} processes started together (group {}){}",
            settings.copies,
            spec.index,
            if settings.copy_dirs.is_empty() {
                String::new()
            } else {
                "; its working copy was temporary and is gone: run it in a fresh `git worktree add --detach DIR COMMIT`".to_string()
            }
        );
        repro_note = Some(match repro_note {
            Some(n) => format!("{n}; {together}"),
            None => together,
        });
    }
    let mut record = RunRecord {
        schema: RUN_SCHEMA.into(),
        id: id.clone(),
        session: session.id.clone(),
        index,
        cell: cell.name.clone(),
        perturbations: cell.recorded(&settings.redaction),
        replicate: spec.replicate,
        seed: spec.seed,
        started_at: session.started_at.clone(),
        duration_s: 0.0,
        outcome: Outcome::NotApplied,
        end: ProcessEnd::NotStarted,
        exit_code: None,
        signal: None,
        signature_match: None,
        reason: None,
        log: None,
        output_bytes: 0,
        output_dropped: 0,
        repro: repro::line(&launch.cwd, &env, &prepared.repro_argv(&command)),
        repro_note,
        cpu_busy: None,
        argv: launch.argv.clone(),
        cwd: launch.cwd.clone(),
        env,
        stragglers: 0,
        warnings: Vec::new(),
        junit,
        workers: None,
        tests_missing: None,
        tests: Vec::new(),
        failure_signature: None,
        topology,
    };
    if !applied {
        record.reason = cells[spec.cell].reason.clone();
        settings.store.append_run(&record)?;
        return Ok(None);
    }
    let log = settings.store.log_path(&session.id, index)?;
    record.log = Some(settings.store.relative(&log));
    let grouped = settings.copies > 1;
    let job = Job {
        index,
        launch,
        log: Some(log),
        marker: id,
        // One stress per group: the group runs alone, so copy 0's threads
        // load the host for all of it.
        stress: prepared.stress.clone().filter(|_| copy == 0),
        group: grouped.then_some(spec.index),
        cell: cell.name.clone(),
        replicate: spec.replicate,
        seed: spec.seed,
        junit: record.junit.clone(),
    };
    Ok(Some((job, record)))
}

/// Fills a planned record from how its child ended.
fn finish_record(
    record: &mut RunRecord,
    started_at: jiff::Timestamp,
    result: ChildResult,
    settings: &SessionSpec,
    prepared: &Prepared,
) {
    record.started_at = started_at
        .round(jiff::Unit::Millisecond)
        .map(|t| t.to_string())
        .unwrap_or_default();
    record.duration_s = result.duration.as_secs_f64();
    record.output_bytes = result.output_bytes;
    record.output_dropped = result.output_dropped;
    if result.output_bytes == 0 {
        // Nothing was printed, so no log file was created.
        record.log = None;
    }
    record.stragglers = result.stragglers;
    record.warnings = result.warnings;
    record.outcome = match &result.end {
        ProcessEnd::Exited { code: 0 } => Outcome::Pass,
        ProcessEnd::Exited { .. } | ProcessEnd::Signaled { .. } => Outcome::Fail,
        ProcessEnd::TimedOut { .. } => Outcome::Timeout,
        ProcessEnd::SpawnFailed { .. } | ProcessEnd::Interrupted | ProcessEnd::NotStarted => {
            Outcome::Error
        }
    };
    match &result.end {
        ProcessEnd::Exited { code } => record.exit_code = Some(*code),
        ProcessEnd::Signaled { signal } | ProcessEnd::TimedOut { signal } => {
            record.signal = Some(*signal)
        }
        ProcessEnd::SpawnFailed { message } => record.reason = Some(message.clone()),
        _ => {}
    }
    record.end = result.end;
    if !matches!(record.outcome, Outcome::Pass | Outcome::Fail) {
        read_tests(record, settings);
        return;
    }
    let log = record.log.as_ref().map(|l| settings.store.root().join(l));
    let text = log.and_then(|p| std::fs::read(p).ok()).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let wrapped = record.argv.get(1).is_some_and(|a| a == "__exec");
    if wrapped && record.exit_code == Some(perturb::isolate::SETUP_EXIT) {
        if let Some(line) = text
            .lines()
            .find(|l| l.starts_with(perturb::isolate::SETUP_FAILED))
        {
            // The helper could not set the cell up: nothing of the subject ran.
            record.outcome = Outcome::NotApplied;
            record.reason = Some(line.to_string());
            return;
        }
    }
    if let Some(recipe) = &settings.recipe {
        if let Some(reason) = outcome::runner_error(recipe, record.exit_code, &text) {
            // A usage error or an empty run measured nothing: never a pass or a fail.
            record.outcome = Outcome::Error;
            record.reason = Some(reason);
            return;
        }
        let asked = outcome::Asked {
            shuffle: prepared.shuffle,
            seed: record.seed,
            workers: prepared.workers,
        };
        if recipe.workers.is_some() {
            record.workers = prepared.workers;
        }
        if let Some(reason) = outcome::not_applied(recipe, asked, &text) {
            record.outcome = Outcome::NotApplied;
            record.reason = Some(reason);
            return;
        }
    }
    read_tests(record, settings);
    if record.outcome != Outcome::Fail {
        return;
    }
    if let Some(sig) = &settings.signature {
        record.signature_match = Some(sig.is_match(&text));
    }
    record.failure_signature = record
        .tests
        .iter()
        .find(|t| t.failed())
        .and_then(|t| t.signature.clone())
        .or_else(|| crate::signature::from_log(&text));
}

fn read_tests(record: &mut RunRecord, settings: &SessionSpec) {
    let Some(path) = record.junit.clone() else {
        return;
    };
    if !matches!(
        record.outcome,
        Outcome::Pass | Outcome::Fail | Outcome::Timeout
    ) {
        return;
    }
    match crate::junit::parse_file(&path) {
        Ok(parsed) => {
            let sig = settings.signature.clone();
            let matches = move |text: &str| sig.as_ref().is_some_and(|r| r.is_match(text));
            let matcher: Option<&dyn Fn(&str) -> bool> = if settings.signature.is_some() {
                Some(&matches)
            } else {
                None
            };
            record.tests = crate::outcomes::records(&parsed, matcher);
            if record.tests.is_empty() {
                record.tests_missing =
                    Some(format!("the report {} holds no test case", path.display()));
            }
        }
        Err(e) => record.tests_missing = Some(e.to_string()),
    }
}
