//! `flakelab bisect`: wiring only. Checks the flags, finds the failing run
//! (or resolves the one shuffled run `--seed` records first), bisects
//! through `design::bisect`, printing its progress, and prints the record
//! (`report::bisect`).

use crate::cli::{BisectArgs, LadderFormat};
use crate::context::config::RunFlags;
use crate::design::bisect::{self, Bisect, Failing, Progress};
use crate::error::{Error, Result};
use crate::record::RunRecord;
use crate::session::resolve::{store_root, Intent, Layers};
use crate::session::{self, subject_dir};
use crate::stats::verdict::Verdict;
use crate::store::Store;

/// Runs `flakelab bisect`; returns the exit code.
pub(super) async fn bisect_cmd(ctx: &super::Ctx, args: BisectArgs) -> Result<i32> {
    let dir = subject_dir(args.store.dir.as_deref())?;
    let root = store_root(args.store.store.as_deref(), &dir);
    if args.confirm == 0 {
        return Err(Error::usage(
            "`--confirm 0` confirms nothing",
            "use --confirm 1 or more (default 3)",
        ));
    }
    let stop = super::start_watching()?;
    let failing = match (&args.run, args.seed) {
        (Some(_), Some(_)) => {
            return Err(Error::usage(
                "give a run id or --seed, not both",
                "a run already has its seed: `flakelab bisect RUN`",
            ))
        }
        (None, None) => {
            return Err(Error::usage(
                "bisect needs a failing run, or a test and the seed it failed under",
                "`flakelab bisect RUN` (a run id from `flakelab report`), or `flakelab bisect --test ID --seed N -- CMD`",
            ))
        }
        (Some(id), None) => Failing::Recorded(Box::new(find_run(&Store::open(&root)?, &root, id)?)),
        (None, Some(seed)) => {
            if args.command.is_empty() || args.test.is_none() {
                return Err(Error::usage(
                    "--seed needs the victim (--test ID) and the test command after `--`",
                    "e.g. `flakelab bisect --test tests/test_a.py::test_v --seed 1234 -- pytest tests`",
                ));
            }
            Failing::Seeded(Box::new(seeded(ctx, &args, &dir, seed)?), seed)
        }
    };
    let how = Bisect {
        root,
        test: args.test.clone(),
        budget: args.budget,
        confirm: args.confirm,
        no_cleaners: args.no_cleaners,
    };
    let Some(done) = bisect::bisect(failing, &how, &ctx.executor, &stop, &mut progress).await?
    else {
        return Ok(Verdict::Interrupted.exit_code());
    };
    let text = match args.format {
        LadderFormat::Json => crate::report::bisect::render_json(&done.record),
        LadderFormat::Table => crate::report::bisect::render_table(&done.record),
    };
    super::print_text(&done.redaction.text(&text));
    Ok(done.exit_code())
}

/// Prints the bisection's progress to stderr.
fn progress(p: Progress<'_>) {
    match p {
        Progress::Seeded { seed } => {
            eprintln!("flakelab bisect: one shuffled run under seed {seed} first")
        }
        Progress::Start {
            victim,
            before,
            of,
            run,
        } => eprintln!(
            "flakelab bisect: {victim} ran after {before} of the {of} test(s) of run {run}"
        ),
        Progress::Ran { runs, before, seen } => eprintln!(
            "flakelab bisect: run {runs}: the victim after {before} test(s): {}",
            bisect::victim_outcome(seen)
        ),
        Progress::Repeating { how } => eprintln!("flakelab bisect: {how}"),
        Progress::Named { record } => {
            for line in record
                .lines()
                .iter()
                .filter(|l| l.starts_with("polluter: ") || l.starts_with("state-setter: "))
            {
                eprintln!("flakelab bisect: {}", crate::report::text::one_line(line));
            }
        }
    }
}

/// The run `id` names (a unique prefix) and its session's record.
fn find_run(
    store: &Store,
    root: &std::path::Path,
    id: &str,
) -> Result<(RunRecord, crate::record::SessionRecord)> {
    let mut runs = store.runs_iter(None)?;
    let matching: Vec<RunRecord> = runs.by_ref().filter(|r| r.id.starts_with(id)).collect();
    runs.finish()?;
    let run = match <[RunRecord; 1]>::try_from(matching) {
        Ok([one]) => one,
        Err(v) if v.is_empty() => {
            return Err(Error::usage(
                format!("no run `{id}` in {}", root.display()),
                "copy a run id from a report (`flakelab report`)",
            ))
        }
        Err(v) => {
            return Err(Error::usage(
                format!("`{id}` matches {} runs", v.len()),
                "give more characters of the run id",
            ))
        }
    };
    let session = store.session(Some(&run.session))?.ok_or_else(|| {
        Error::usage(
            format!(
                "the session {} of run {} is not in the store",
                run.session, run.id
            ),
            "bisect needs the session record (sessions.jsonl) of the run",
        )
    })?;
    Ok((run, session))
}

/// `--seed N -- CMD`: the spec of one shuffled run of the command under
/// seed N.
fn seeded(
    ctx: &super::Ctx,
    args: &BisectArgs,
    dir: &std::path::Path,
    seed: u64,
) -> Result<session::SessionSpec> {
    let intent = Intent {
        command: args.command.clone(),
        dir: args.store.dir.clone(),
        store: args.store.store.clone(),
        cells: vec!["shuffle".into()],
        no_baseline: true,
        seed: Some(seed),
        signatures: Vec::new(),
        runner: None,
        flags: RunFlags {
            runs: Some(1),
            matrix: Some(Vec::new()),
            jobs: Some(1),
            ..RunFlags::default()
        },
        default_runs: None,
        shams: false,
        keep_junit: false,
    };
    let layers = Layers::of_project(dir)?.without_matrix();
    Ok(session::resolve(intent, &layers, &ctx.executor)?
        .with_runs(1)
        .first_seed(Some(seed)))
}
