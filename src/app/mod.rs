//! Wiring only: one file per subcommand, each turning parsed arguments into
//! a session spec (`crate::session`), running it, and handing the result to
//! `crate::report` to render. This file dispatches.

use std::io::Write as _;

use crate::cli::{self, Command, Format};
use crate::error::{Error, Result};
use crate::exec::child::Stop;
use crate::exec::Executor;
use crate::report::{self, Report};

mod bisect;
mod check;
mod compact;
mod completions;
mod demo;
mod history;
mod info;
mod ingest;
mod internal;
mod ladder;
mod merge;
mod prove;
mod quarantine;
mod replay;
mod report_cmd;
mod run;
mod scan;
mod screen;
mod verify;

// `run` and `report` write GitHub's step summary beside their output.
use crate::report::outputs;

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
        Command::Merge(args) => merge::merge_cmd(&args),
        Command::Evidence(args) => report_cmd::evidence_cmd(ctx, &args),
        Command::Init(args) => info::init_cmd(&args),
        Command::Ingest(args) => ingest::ingest_cmd(&args),
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

/// Decides, once, whether stdout and stderr get color (`report::color`).
fn set_color(when: cli::ColorWhen) {
    use std::io::IsTerminal as _;
    let choice = match when {
        cli::ColorWhen::Auto => report::color::Choice::Auto,
        cli::ColorWhen::Always => report::color::Choice::Always,
        cli::ColorWhen::Never => report::color::Choice::Never,
    };
    let var = |name: &str| std::env::var(name).ok();
    let (no_color, force) = (var("NO_COLOR"), var("CLICOLOR_FORCE"));
    let on = |terminal: bool| {
        report::color::enabled(choice, no_color.as_deref(), force.as_deref(), terminal)
    };
    report::color::set(
        on(std::io::stdout().is_terminal()),
        on(std::io::stderr().is_terminal()),
    );
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    // One thread: the work happens in the children; a single-threaded loop
    // hands each exit to the next spawn without cross-thread wake-ups.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            Error::harness(
                format!("cannot start the async runtime: {e}"),
                "report this as a bug",
            )
        })
}

/// Watches for Ctrl-C, makes flakelab a child subreaper and starts the
/// warden (`exec::warden`; a warden that cannot start becomes a warning on
/// each session): call once per process, before the first session.
fn start_watching() -> Result<tokio::sync::watch::Receiver<Stop>> {
    let stop = crate::exec::schedule::watch_signals().map_err(|e| {
        Error::harness(
            format!("cannot watch for Ctrl-C: {e}"),
            "report this as a bug",
        )
    })?;
    if let Err(e) = crate::exec::child::become_subreaper() {
        return Err(Error::harness(
            format!("cannot become a child subreaper: {e}"),
            "flakelab needs Linux's PR_SET_CHILD_SUBREAPER to find processes that escape a run",
        ));
    }
    // Its refusal is read back by each session (`exec::warden::status`).
    let _ = crate::exec::warden::start();
    Ok(stop)
}

/// Runs `spec` in a runtime of its own and prints the report the store then
/// holds; returns the exit code (`replay`, `demo`).
fn run_and_report(spec: &crate::session::SessionSpec, format: Format) -> Result<i32> {
    use crate::verdict::{Findings, Verdict};
    runtime()?.block_on(async {
        let stop = start_watching()?;
        let Some(done) = crate::session::run_session(spec, &stop).await? else {
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

/// Prints a report in `format`, masked by `redaction` ([`report::render`]).
fn print_report(report: &Report, format: Format, redaction: &crate::redact::Redaction) {
    print_text(&report::render(report, format, redaction));
}

/// Writes a rendered output to stdout.
fn print_text(text: &str) {
    let mut out = std::io::stdout().lock();
    // A closed stdout (`| head`) is not an error worth a non-zero exit.
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
}

fn num_cpus() -> usize {
    crate::perturb::isolate::allowed_cpus().len().max(1)
}
