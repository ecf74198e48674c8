//! `flakelab ladder`: wiring only. Checks the flags, loads the declared
//! rungs and the lane, resolves the one spec every rung derives from, and
//! climbs through `design::ladder`; prints each rung as it starts and the
//! record (`report::ladder`) at the end.

use crate::catalog::topology::{self, Rung};
use crate::cli::{LadderArgs, LadderFormat};
use crate::design::ladder::{self, Ladder, Progress};
use crate::error::{Error, Result};
use crate::session::{self, resolve::Layers, Intent};

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
    let signature = super::shared::one_signature(flags, "ladder")?.map(str::to_string);
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
    let stop = super::start_watching()?;
    let design = Ladder {
        rungs,
        lane,
        processes,
        test: args.test.clone(),
        signature,
        confirm: args.confirm,
        cwd: dir,
    };
    let record = ladder::climb(&design, &base, &stop, &mut progress).await?;
    let text = match args.format {
        LadderFormat::Table => crate::report::ladder::render_table(&record),
        LadderFormat::Json => crate::report::ladder::render_json(&record),
    };
    super::print_text(&base.redaction.text(&text));
    Ok(crate::ladder::exit_code(&record))
}

/// Prints the climb's progress to stderr.
fn progress(p: Progress<'_>) {
    match p {
        Progress::Rung { rung, spec } => eprintln!(
            "flakelab ladder: rung {} ({}): {} run(s) per cell of {} process(es): {}",
            rung.rung,
            rung.name,
            spec.runs,
            spec.copies,
            crate::repro::join(&spec.command)
        ),
        Progress::Confirming { times, run } => eprintln!(
            "flakelab ladder: confirming: the rung again {times} times under run {run}'s cell and seed"
        ),
    }
}
