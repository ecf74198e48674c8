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
    if let Some(path) = &junit {
        // A report left by an earlier run must never pass as this run's.
        let _ = std::fs::remove_file(path);
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
    let (launch, env, repro, watch) = if own_values(&ask) {
        // The command holds this run's values: everything built anew.
        let (command, extra_env) = command_for(settings, &cell.name, ask)?;
        let watch = prepared.watch(&command);
        let mut launch = launch_for(
            settings,
            prepared,
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
                let (command, extra_env) = command_for(settings, &cell.name, ask)?;
                empty.insert(Fixed::new(
                    settings, prepared, &cell.name, command, &extra_env, dir,
                ))
            }
        };
        let launch = launch_with(
            prepared,
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

/// The command of a run of `cell` as the recipe builds it, and the
/// variables the recipe adds.
fn command_for(
    settings: &SessionSpec,
    cell: &str,
    ask: argv::RunArgv<'_>,
) -> Result<(Vec<String>, std::collections::BTreeMap<String, String>)> {
    argv::for_run(
        settings.recipe.as_ref(),
        settings
            .cell_commands
            .get(cell)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::Executor;
    use crate::session::resolve::{resolve, Intent, Layers};

    /// A session of `cells` through the fake executor: its spec and record.
    fn session(dir: &std::path::Path, cells: &[&str]) -> (SessionSpec, SessionRecord) {
        let script = dir.join("fake.toml");
        std::fs::write(&script, "").unwrap();
        let executor = Executor::from_script(Some(&script)).unwrap();
        let mut intent = Intent {
            command: vec!["sh".into(), "-c".into(), "echo 'it''s' $X".into()],
            dir: Some(dir.to_path_buf()),
            cells: cells.iter().map(|c| c.to_string()).collect(),
            seed: Some(5),
            ..Intent::default()
        };
        intent.flags.runs = Some(1);
        let spec = resolve(intent, &Layers::none(), &executor).unwrap();
        let done = super::super::engine::run_to_end(&spec);
        (spec, done.session)
    }

    #[test]
    fn a_run_built_from_its_cells_shared_parts_is_the_run_built_anew() {
        let dir = tempfile::tempdir().unwrap();
        let (spec, session) = session(dir.path(), &["env=X=1", "env=API_TOKEN=hunter22"]);
        let mut reused = Cache::default();
        let mut seeds = std::collections::BTreeSet::new();
        let mut repros = std::collections::BTreeSet::new();
        let names: Vec<String> = spec.cells.iter().map(|(c, _)| c.name.clone()).collect();
        let plan = plan::build(&names, 4, 11);
        for run in plan.iter() {
            let shared = plan_process(&spec, &session, &session.cells, &run, 0, &mut reused)
                .unwrap()
                .unwrap();
            let mut off = Cache::off();
            let anew = plan_process(&spec, &session, &session.cells, &run, 0, &mut off)
                .unwrap()
                .unwrap();
            assert_eq!(format!("{shared:?}"), format!("{anew:?}"));
            let (job, record) = shared;
            // The run's own values, in a cell that does not set them.
            if record.env.set.contains_key("X") {
                assert_eq!(job.launch.env_set["FLAKELAB_RUN_ID"], record.id);
                assert_eq!(record.env.set["FLAKELAB_SEED"], run.seed.to_string());
                assert!(record
                    .repro
                    .contains(&format!("FLAKELAB_SEED={} ", run.seed)));
                seeds.insert(record.env.set["FLAKELAB_SEED"].clone());
                repros.insert(record.repro.clone());
            }
            if record.env.set.contains_key("API_TOKEN") {
                assert_eq!(record.env.set["API_TOKEN"], crate::redact::REDACTED);
                assert_eq!(job.launch.env_set["API_TOKEN"], "hunter22");
                assert!(!record.repro.contains("hunter22"));
            }
            assert_eq!(
                record.log.as_deref(),
                Some(std::path::Path::new(&format!(
                    "logs/{}/{:05}.log",
                    session.id, record.index
                )))
            );
        }
        // Four runs of the cell, four seeds, four lines: reused parts do not
        // freeze a run's own values.
        assert_eq!(seeds.len(), 4);
        assert_eq!(repros.len(), 4);
    }
}
