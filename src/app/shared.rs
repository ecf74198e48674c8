//! What the subcommands share: the async runtime, the Ctrl-C watch and the
//! warden, color, and printing a rendered output to stdout.

use std::io::Write as _;

use crate::cli::{self, Format};
use crate::error::{Error, Result};
use crate::exec::child::Stop;
use crate::report::{self, Report};

/// Decides, once, whether stdout and stderr get color (`report::color`).
pub(super) fn set_color(when: cli::ColorWhen) {
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

pub(super) fn runtime() -> Result<tokio::runtime::Runtime> {
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
pub(super) fn start_watching() -> Result<tokio::sync::watch::Receiver<Stop>> {
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

/// Prints a report in `format`, masked by `redaction` ([`report::render`]).
pub(super) fn print_report(report: &Report, format: Format, redaction: &crate::redact::Redaction) {
    print_text(&report::render(report, format, redaction));
}

/// Writes a rendered output to stdout.
pub(super) fn print_text(text: &str) {
    let mut out = std::io::stdout().lock();
    // A closed stdout (`| head`) is not an error worth a non-zero exit.
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
}

pub(super) fn num_cpus() -> usize {
    crate::perturb::isolate::allowed_cpus().len().max(1)
}

/// The one `--signature` of a command that counts one failure under
/// investigation (`ladder`, `verify`): several are a usage error there.
pub(super) fn one_signature<'a>(
    flags: &'a cli::SessionFlags,
    command: &str,
) -> Result<Option<&'a str>> {
    match flags.signature.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one.as_str())),
        _ => Err(Error::usage(
            format!(
                "{command} takes one --signature (the failure it looks for); {} were given",
                flags.signature.len()
            ),
            "give the one pattern of the failure under investigation; `flakelab run` counts several side by side",
        )),
    }
}
