//! One planned run as a job: its report path, its argv from the recipe,
//! its identity variables, its repro line and the record it starts as.

use super::launch::{identity_env, launch_for, launch_with};
use super::shared::{Cache, Fixed};
use super::{JunitSource, SessionSpec};
use crate::catalog::recipe::argv;
use crate::error::{Error, Result};
use crate::exec::job::Job;
use crate::plan;
use crate::record::{CellRecord, Outcome, ProcessEnd, RunRecord, SessionRecord, RUN_SCHEMA};
use crate::repro;

/// One process of one planned run: its record (stored at once when the
/// cell is not applied) and the job that runs it. What every run of its
/// cell shares comes from `cache` (built there at the cell's first run).
pub(super) fn plan_process(
    settings: &SessionSpec,
    session: &SessionRecord,
    cells: &[CellRecord],
    spec: &plan::RunSpec,
    copy: usize,
    cache: &mut Cache,
) -> Result<Option<(Job, RunRecord)>> {
    let (cell, prepared) = &settings.cells[spec.cell];
    let index = spec.index * settings.copies + copy;
    let id = crate::store::compact::run_id(&session.id, index);
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
        (Some(JunitSource::Runner), true) if settings.per_test_file() => {
            Some(settings.store.junit_path(&session.id, index)?)
        }
        _ => None,
    };
    match (&settings.junit, &junit) {
        // A path of the user's is never deleted: what is there now is
        // noted, and read after the run only if the run wrote it.
        (Some(JunitSource::Path(_)), Some(path)) => cache.note_report(index, path),
        // A report left in the store by an earlier run must never pass as
        // this run's (the path is flakelab's own).
        (_, Some(path)) => {
            let _ = std::fs::remove_file(path);
        }
        _ => {}
    }
    let report = match (&settings.junit, junit.as_deref()) {
        (Some(JunitSource::Harness), Some(path)) => Some(argv::Report::InCommand(path)),
        (Some(JunitSource::Recipe), Some(path)) => Some(argv::Report::Recipe(path)),
        (Some(JunitSource::Runner), path) if applied => Some(argv::Report::Runner(path)),
        _ => None,
    };
    let ask = argv::RunArgv {
        report,
        shuffle_seed: prepared.shuffle.then_some(spec.seed),
        workers: prepared.workers,
        race: prepared.race.as_deref(),
    };
    let seed = spec.seed.to_string();
    let shared = cache.cell(spec.cell, copy, || cell.recorded(&settings.redaction));
    let own_order = settings.cell_orders.contains_key(&cell.name);
    let (launch, env, repro, watch) = if own_values(&ask) || own_order {
        // The command holds this run's values: everything built anew.
        let (command, extra_env) = command_for(settings, &cell.name, spec.replicate, ask)?;
        let watch = prepared.watch(&command);
        let mut launch = launch_for(
            settings,
            prepared,
            &cell.name,
            command.clone(),
            identity_env(&id, spec.seed, &cell.name),
            &extra_env,
        );
        launch.cwd = dir.clone();
        let env = repro::recorded_env(&settings.redaction, &launch.env_set, &launch.env_unset);
        let repro = repro::line(&launch.cwd, &env, &prepared.repro_argv(&command));
        (launch, env, repro, watch)
    } else {
        let fixed = match &mut shared.fixed {
            Some(fixed) => fixed,
            empty => {
                let (command, extra_env) = command_for(settings, &cell.name, spec.replicate, ask)?;
                empty.insert(Fixed::new(
                    settings, prepared, &cell.name, command, &extra_env, dir,
                ))
            }
        };
        let launch = launch_with(
            prepared,
            &cell.name,
            fixed.command.clone(),
            dir.clone(),
            fixed.env(&id, &seed),
        );
        let env = fixed.recorded_env(&id, &seed);
        (launch, env, fixed.repro(&id, &seed), fixed.watch.clone())
    };
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
            "one of {} processes started together (group {}): the line starts it alone, without the processes it ran beside{}",
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
        perturbations: shared.perturbations.clone(),
        replicate: spec.replicate,
        seed: spec.seed,
        started_at: session.started_at.clone(),
        duration_s: 0.0,
        outcome: Outcome::NotApplied,
        end: ProcessEnd::NotStarted,
        exit_code: None,
        signal: None,
        signature_match: None,
        signature_pattern: None,
        reason: None,
        log: None,
        output_bytes: 0,
        output_dropped: 0,
        repro,
        repro_note,
        cpu_busy: None,
        cpu: None,
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
        processes: None,
    };
    if !applied {
        record.reason = cells[spec.cell].reason.clone();
        super::scrub::run(&settings.redaction, &mut record);
        settings.store.append_run(&record)?;
        return Ok(None);
    }
    let (log, relative) = cache.log(&settings.store, &session.id, index)?;
    record.log = Some(relative);
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
        watch,
    };
    Ok(Some((job, record)))
}

/// Whether the command asked for holds a value of the run's own (its report
/// path, its shuffle seed): then it cannot be shared by the cell's runs.
fn own_values(ask: &argv::RunArgv<'_>) -> bool {
    ask.shuffle_seed.is_some() || !matches!(ask.report, None | Some(argv::Report::Runner(None)))
}

/// The command of a run of `cell` (replicate `replicate`) as the recipe
/// builds it, and the variables the recipe adds.
fn command_for(
    settings: &SessionSpec,
    cell: &str,
    replicate: u32,
    ask: argv::RunArgv<'_>,
) -> Result<(Vec<String>, std::collections::BTreeMap<String, String>)> {
    let ordered = (settings.cell_orders.get(cell))
        .filter(|o| !o.is_empty())
        .map(|o| &o[replicate as usize % o.len()]);
    argv::for_run(
        settings.recipe.as_ref(),
        ordered
            .or(settings.cell_commands.get(cell))
            .unwrap_or(&settings.command),
        ask,
    )
    .map_err(|e| {
        Error::harness(
            format!("the runner recipe could not build the command: {e}"),
            "fix the recipe (`flakelab recipes show NAME`) or pass --runner none",
        )
    })
}
