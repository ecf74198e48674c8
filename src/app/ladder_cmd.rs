//! `flakelab ladder`: climbs the declared rungs, one session per rung, and
//! stops at the first rung that reproduces. The reasoning (what reproduces,
//! how a rung counts) is in `crate::ladder`; this module builds each rung's
//! settings and runs it.

use std::collections::BTreeMap;

use super::{
    new_session_id, now_text, resolve, run_session, start_watching, subject_dir, Replay, Settings,
};
use crate::catalog::topology::{self, Processes, Rung, RungRuns, WorkingCopy};
use crate::cli::{Format, LadderArgs, LadderFormat, RunArgs};
use crate::error::{Error, Result};
use crate::ladder::{self, Criterion};
use crate::record::{LadderRecord, RungResult, RungStatus, SessionRung, LADDER_SCHEMA};
use crate::workspace::WorkingCopies;

/// Runs `flakelab ladder`; returns the exit code.
pub(super) async fn ladder_cmd(args: LadderArgs) -> Result<i32> {
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
    let dir = subject_dir(args.store.dir.as_deref())?;
    let rungs: Vec<Rung> = topology::load(Some(
        &dir.join(".flakelab").join("topologies").join("ladder.toml"),
    ))?
    .into_iter()
    .filter(|r| (args.from..=args.to).contains(&r.rung))
    .collect();
    let config = crate::config::load(&dir)?;
    let lane = match config.as_ref().and_then(|c| c.lane.as_ref()) {
        Some(l) => Some((
            l.argv()
                .map_err(|e| Error::usage(e, "fix [lane] in flakelab.toml"))?,
            l.workers,
        )),
        None => None,
    };
    let processes = args.processes.unwrap_or_else(|| super::num_cpus().max(2));
    let seed = args
        .seed
        .unwrap_or_else(|| u64::from(rand::random::<u32>()));
    let cell_spec = (!args.perturb.is_empty()).then(|| args.perturb.join("+"));
    let base_args = RunArgs {
        runs: Some(args.runs),
        perturb: cell_spec.iter().cloned().collect(),
        matrix: Vec::new(),
        no_baseline: args.no_baseline && cell_spec.is_some(),
        timeout: args.timeout.clone(),
        kill_grace: Some(args.kill_grace.clone()),
        jobs: Some(1),
        seed: Some(seed),
        confidence: Some(args.confidence),
        signature: args.signature.clone(),
        runner: args.runner.clone(),
        junit: args.junit.clone(),
        format: Format::Table,
        confirm: None,
        design: crate::cli::Design::Fixed,
        screen: 3,
        max_runs: None,
        clear_below: 0.3,
        store: args.store.clone(),
        command: args.command.clone(),
        exact: true,
    };
    // Errors in what the user typed stop the ladder before anything runs.
    let base = resolve(base_args.clone())?;
    let criterion = Criterion::from_flags(args.signature.as_deref(), args.test.as_deref());
    let target = base
        .cells
        .last()
        .map(|(c, _)| c.name.clone())
        .unwrap_or_else(|| "baseline".into());
    let stop = start_watching()?;
    let mut record = LadderRecord {
        schema: LADDER_SCHEMA.into(),
        id: format!("ladder-{}", new_session_id()),
        started_at: now_text(),
        command: args.command.clone(),
        cwd: dir.clone(),
        lane: lane.as_ref().map(|(argv, _)| argv.clone()),
        test: args.test.clone(),
        signature: args.signature.clone(),
        criterion: criterion.describe(),
        cell: target.clone(),
        runs_per_rung: args.runs,
        confidence: args.confidence,
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
        let built = match build_rung(rung, &args, &base, &base_args, lane.as_ref(), processes) {
            Ok(b) => b,
            Err(why) => {
                record
                    .rungs
                    .push(ladder::not_run(rung, RungStatus::Skipped, why));
                continue;
            }
        };
        let BuiltRung {
            mut settings,
            copies,
            note,
        } = built;
        settings.rung = Some(SessionRung {
            ladder: record.id.clone(),
            rung: rung.rung,
            processes: settings.copies,
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
        let done = run_session(&settings, &Replay::default(), &stop).await;
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
        let (count, first) = ladder::count_cell(&done.runs, &target, &criterion, args.confidence);
        let baseline = (target != "baseline")
            .then(|| ladder::count_cell(&done.runs, "baseline", &criterion, args.confidence).0)
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
                    &mut settings,
                    &target,
                    first,
                    times,
                    &criterion,
                    &args,
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
    base.store.append_ladder(&record)?;
    let text = match args.format {
        LadderFormat::Table => crate::report::ladder::render_table(&record),
        LadderFormat::Json => crate::report::ladder::render_json(&record),
    };
    super::print_text(&text);
    Ok(ladder::exit_code(&record))
}

/// Runs a reproducing rung `times` more times, its target cell only, every
/// run under the first reproducing run's seed.
async fn confirm_rung(
    settings: &mut Settings,
    target: &str,
    first: &crate::record::RunRecord,
    times: u32,
    criterion: &Criterion,
    args: &LadderArgs,
    stop: &tokio::sync::watch::Receiver<crate::exec::child::Stop>,
) -> Result<Option<crate::record::RungConfirmation>> {
    settings.runs = times;
    settings.cells.retain(|(c, _)| c.name == target);
    eprintln!(
        "flakelab ladder: confirming: the rung again {times} times under run {}'s cell and seed",
        first.id
    );
    let replay = Replay {
        of: Some(first.id.clone()),
        seed: Some(first.seed),
        first_seed: None,
    };
    let Some(again) = run_session(settings, &replay, stop).await? else {
        return Ok(None);
    };
    let (count, _) = ladder::count_cell(&again.runs, target, criterion, args.confidence);
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
    settings: Settings,
    /// The rung's working copies, removed when dropped.
    copies: Option<WorkingCopies>,
    /// How the rung was built, when that needs saying.
    note: Option<String>,
}

/// Builds a rung's settings, or says why it cannot be built here.
fn build_rung(
    rung: &Rung,
    args: &LadderArgs,
    base: &Settings,
    base_args: &RunArgs,
    lane: Option<&(Vec<String>, Option<usize>)>,
    processes: usize,
) -> std::result::Result<BuiltRung, String> {
    let mut notes = Vec::new();
    let mut rung_args = base_args.clone();
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
            let Some(select) = &recipe.select else {
                return Err(format!(
                    "the {} recipe declares no [select]: it cannot run one test alone",
                    recipe.name
                ));
            };
            let argv = super::select_command(recipe, select, &args.command, id, &base.dir)?;
            rung_args.command = argv;
        }
        RungRuns::Lane => match lane {
            Some((argv, workers)) => {
                rung_args.command = argv.clone();
                // The lane is its own command: its runner is detected anew.
                rung_args.runner = None;
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
    rung_args.jobs = Some(copies);
    if rung.working_copy == WorkingCopy::Own {
        // Each process has its own directory: a fixed report path cannot collide.
        rung_args.jobs = Some(1);
    }
    let mut settings = resolve(rung_args).map_err(|e| first_line(&e.to_string()))?;
    if let Some(n) = lane_workers {
        match settings.recipe.as_ref().and_then(|r| r.workers.clone().map(|w| (r, w))) {
            Some((recipe, w)) => {
                let argv = crate::catalog::recipe::remove_options(&settings.command, &w.replaces);
                let end = crate::catalog::recipe::runner_words_end(recipe, &argv);
                let vars = BTreeMap::from([("workers", n.to_string())]);
                let (argv, _) = w
                    .set
                    .apply_at(&argv, &vars, end)
                    .map_err(|e| format!("the lane's workers: {e}"))?;
                settings.command = argv;
            }
            None => notes.push(format!(
                "[lane] workers = {n} not applied: {} has no workers option, so the lane runs as written",
                settings.recipe.as_ref().map_or("the lane's runner", |r| r.name.as_str())
            )),
        }
    }
    settings.copies = copies;
    settings.jobs = copies;
    let mut working = None;
    if rung.working_copy == WorkingCopy::Own {
        let made = WorkingCopies::create(&settings.dir, copies)
            .map_err(|e| format!("cannot make working copies: {e}"))?;
        settings.copy_dirs = made.subject_dirs().to_vec();
        notes.push(made.describe().to_string());
        working = Some(made);
    }
    Ok(BuiltRung {
        settings,
        copies: working,
        note: (!notes.is_empty()).then(|| notes.join("; ")),
    })
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or(text).to_string()
}
