//! Wiring only: one file per subcommand, each turning parsed arguments into
//! a session spec (`crate::session`), running it, and handing the result to
//! `crate::report` to render. This file dispatches.

use crate::cli::{self, Command, Format};
use crate::error::{Error, Result};
use crate::exec::child::Stop;
use crate::exec::Executor;

mod bisect;
mod check;
mod compact;
mod completions;
mod dashboard;
mod demo;
mod history;
mod info;
mod ingest;
mod internal;
mod ladder;
mod ledger;
mod merge;
mod prove;
mod quarantine;
mod replay;
mod report_cmd;
mod run;
mod runs;
mod scan;
mod screen;
mod shared;
mod verify;

// `run` and `report` write GitHub's step summary beside their output.
use crate::report::outputs;
use shared::{num_cpus, print_report, print_text, runtime, set_color, start_watching};

/// What every subcommand shares: how subjects and probes are started.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ctx {
    /// Real processes, or the fake executor's script.
    pub executor: Executor,
}

/// The session `run` asks for (its own and the screen design's): the
/// shared flags and `--matrix`, over the project's layers.
fn run_spec(ctx: &Ctx, args: &cli::RunArgs) -> Result<crate::session::SessionSpec> {
    use crate::session::{self, resolve::Layers, Intent};
    let mut intent = Intent::from_flags(&args.session, &args.matrix);
    intent.shams = !args.no_sham;
    let dir = session::subject_dir(intent.dir.as_deref())?;
    session::resolve(intent, &Layers::of_project(&dir)?, &ctx.executor)
}

/// Runs one parsed command line; returns the process exit code.
pub fn run(cli: cli::Cli) -> Result<i32> {
    let executor = Executor::from_script(cli.fake_executor.as_deref())
        .map_err(|e| Error::usage(e, "fix the script (see `src/exec/fake.rs`)"))?;
    set_color(cli.color);
    let ctx = Ctx { executor };
    let code = dispatch(&ctx, cli.command);
    // Nothing of this flakelab outlives its exit, its warden included.
    crate::exec::warden::finish();
    code
}

fn dispatch(ctx: &Ctx, command: Command) -> Result<i32> {
    match command {
        Command::Run(args) => runtime()?.block_on(run::run_cmd(ctx, args)),
        Command::Ladder(args) => runtime()?.block_on(ladder::ladder_cmd(ctx, args)),
        Command::Verify(args) => runtime()?.block_on(verify::verify_cmd(ctx, args)),
        Command::Replay(args) => replay::replay_cmd(ctx, &args),
        Command::Bisect(args) => runtime()?.block_on(bisect::bisect_cmd(ctx, args)),
        Command::Demo(args) => demo::demo_cmd(ctx, &args),
        Command::Scan(args) => scan::scan_cmd(ctx, &args),
        Command::Completions(args) => completions::completions_cmd(&args),
        Command::Man => completions::man_cmd(),
        Command::Report(args) => report_cmd::report_cmd(&args),
        Command::Runs(args) => runs::runs_cmd(&args),
        Command::Merge(args) => merge::merge_cmd(&args),
        Command::Evidence(args) => report_cmd::evidence_cmd(ctx, &args),
        Command::Init(args) => info::init_cmd(&args),
        Command::Ingest(args) => ingest::ingest_cmd(&args),
        Command::History(args) if args.dashboard => dashboard::dashboard_cmd(&args),
        Command::History(args) => history::history_cmd(&args),
        Command::Check(args) => check::check_cmd(&args),
        Command::Quarantine(args) => quarantine::quarantine_cmd(&args),
        Command::Compact(args) => compact::compact_cmd(&args),
        Command::Doctor => info::doctor_cmd(),
        Command::Recipes(args) => info::recipes_cmd(&args),
        Command::Plan(args) => info::plan_cmd(&args),
        Command::Perturbations(args) => info::perturbations_cmd(&args),
        Command::Probe(args) => internal::probe_cmd(&args),
        Command::Exec(args) => internal::exec_cmd(&args),
        Command::DemoSuite(args) => internal::demo_suite_cmd(&args),
        Command::Warden => Ok(crate::exec::warden::helper()),
    }
}

/// Runs `spec` in a runtime of its own and prints the report the store then
/// holds; returns the exit code (`replay`, `demo`).
fn run_and_report(spec: &crate::session::SessionSpec, format: Format) -> Result<i32> {
    use crate::stats::verdict::{Findings, Verdict};
    runtime()?.block_on(async {
        let stop = start_watching()?;
        // A replay runs its recorded command; a demo's orders cell its
        // systematic orders.
        let spec = match spec.replay.of {
            Some(_) => spec.clone(),
            None => match crate::design::orders::systematic(spec.clone(), &stop).await? {
                Some(spec) => spec,
                None => return Ok(Verdict::Interrupted.exit_code()),
            },
        };
        let Some(done) = crate::session::run_session(&spec, &stop).await? else {
            return Ok(Verdict::Interrupted.exit_code());
        };
        let (report, _) = report_cmd::shown(&spec.store, &done.session)?;
        print_report(&report, format, &spec.redaction);
        Ok(Verdict::of(Findings {
            interrupted: done.interrupted || *stop.borrow() != Stop::Run,
            ..report.findings()
        })
        .exit_code())
    })
}
