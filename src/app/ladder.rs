//! `flakelab ladder`: climbs the declared rungs, one session per rung, and
//! stops at the first rung that reproduces. The reasoning (what reproduces,
//! how a rung counts) is in `crate::ladder`; this module derives each rung's
//! session from the one resolved spec and runs it.

use crate::catalog::recipe::argv;
use crate::catalog::topology::{self, Processes, Rung, RungRuns, WorkingCopy};
use crate::cli::{LadderArgs, LadderFormat};
use crate::error::{Error, Result};
use crate::ladder::{self, Criterion};
use crate::record::{LadderRecord, RungResult, RungStatus, SessionRung, LADDER_SCHEMA};
use crate::session::engine::{new_session_id, now_text};
use crate::session::{self, resolve::Layers, Intent, SessionSpec};
use crate::workspace::WorkingCopies;

/// Runs per cell at each rung when no layer sets them.
const DEFAULT_RUNS: u32 = 10;

/// Runs `flakelab ladder`; returns the exit code.
pub(super) async fn ladder_cmd(ctx: &super::Ctx, args: LadderArgs) -> Result<i32> {
    if args.from == 0 || args.from > args.to {
        return Err(Error::usage(
            format!("--from {} --to {} names no rung", args.from, args.to),
            "rungs are numbered from 1; give --from R no larger than --to R",
        ));
    }
    if args.processes == Some(0) {
        return Err(Error::usage(
            "`--processes 0` would run nothing",
            "use 2 or more (or leave it out: the online CPUs, at least 2)",
        ));
    }
    let flags = &args.session;
    let dir = session::subject_dir(flags.store.dir.as_deref())?;
    let rungs: Vec<Rung> = topology::load(Some(
        &dir.join(".flakelab").join("topologies").join("ladder.toml"),
    ))?
    .into_iter()
    .filter(|r| (args.from..=args.to).contains(&r.rung))
    .collect();
    let layers = Layers::of_project(&dir)?.without_matrix();
    let lane = match layers.file.as_ref().and_then(|c| c.lane.as_ref()) {
        Some(l) => Some((
            l.argv()
                .map_err(|e| Error::usage(e, "fix [lane] in flakelab.toml"))?,
            l.workers,
        )),
        None => None,
    };
    let processes = args.processes.unwrap_or_else(|| super::num_cpus().max(2));
    let seed = flags
        .seed
        .unwrap_or_else(|| u64::from(rand::random::<u32>()));
    // All -p together form the one cell the ladder climbs with.
    let cell_spec = (!flags.perturb.is_empty()).then(|| flags.perturb.join("+"));
    let mut intent = Intent::from_flags(flags, &[]);
    intent.cells = cell_spec.iter().cloned().collect();
    intent.no_baseline = flags.no_baseline && cell_spec.is_some();
    intent.seed = Some(seed);
    intent.default_runs = Some(DEFAULT_RUNS);
    // Errors in what the user typed stop the ladder before anything runs.
    let base = session::resolve(intent, &layers, &ctx.executor)?.with_jobs(1);
    let criterion = Criterion::from_flags(flags.signature.as_deref(), args.test.as_deref());
    let target = base
        .cells
        .last()
        .map(|(c, _)| c.name.clone())
        .unwrap_or_else(|| "baseline".into());
    let stop = super::start_watching()?;
    let mut record = LadderRecord {
        schema: LADDER_SCHEMA.into(),
        id: format!("ladder-{}", new_session_id()),
        started_at: now_text(),
        command: base.command.clone(),
        cwd: dir.clone(),
        lane: lane.as_ref().map(|(argv, _)| argv.clone()),
        test: args.test.clone(),
        signature: flags.signature.clone(),
        criterion: criterion.describe(),
        cell: target.clone(),
        runs_per_rung: base.runs,
        confidence: base.confidence,
        rungs: Vec::new(),
        reproduced_at: None,
        interrupted: false,
    };
    for rung in &rungs {
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
        let built = match build_rung(rung, &args, &base, lane.as_ref(), processes) {
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
        let settings = settings.as_rung(SessionRung {
            ladder: record.id.clone(),
            rung: rung.rung,
            processes: processes_here,
            own_working_copies: copies.is_some(),
        });
        eprintln!(
            "flakelab ladder: rung {} ({}): {} run(s) per cell of {} process(es): {}",
            rung.rung,
            rung.name,
            settings.runs,
            settings.copies,
            crate::repro::join(&settings.command)
        );
        let done = session::run_session(&settings, &stop).await;
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
            if let (Some(times), Some(first), false) = (args.confirm, first, done.interrupted) {
                confirmation = confirm_rung(
                    &settings,
                    &done.session.id,
                    &target,
                    first,
                    times,
                    &criterion,
                    &stop,
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
    let text = match args.format {
        LadderFormat::Table => crate::report::ladder::render_table(&record),
        LadderFormat::Json => crate::report::ladder::render_json(&record),
    };
    super::print_text(&base.redaction.text(&text));
    Ok(ladder::exit_code(&record))
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
    stop: &tokio::sync::watch::Receiver<crate::exec::child::Stop>,
) -> Result<Option<crate::record::RungConfirmation>> {
    eprintln!(
        "flakelab ladder: confirming: the rung again {times} times under run {}'s cell and seed",
        first.id
    );
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
    args: &LadderArgs,
    base: &SessionSpec,
    lane: Option<&(Vec<String>, Option<usize>)>,
    processes: usize,
) -> std::result::Result<BuiltRung, String> {
    let mut notes = Vec::new();
    let mut settings = base.clone();
    let mut lane_workers = None;
    match rung.runs {
        RungRuns::Command => {}
        RungRuns::Selection => {
            let Some(id) = &args.test else {
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
