//! `flakelab run --design screen`: its flags checked and resolved, the
//! screen design run (`crate::design::screen`: the adaptive screen, then
//! the confirmations, or one shard's share of them), and the session's
//! report printed from what it recorded.

use crate::cli::RunArgs;
use crate::design::screen::{self, Ask, Screened};
use crate::error::{Error, Result};
use crate::exec::child::Stop;
use crate::report;
use crate::session::SessionSpec;
use crate::stats::verdict::{Findings, Verdict};

/// Runs `run --design screen`; returns the exit code. `chosen`: why this
/// design runs (`--design auto`'s reason, or that it was asked for).
pub(super) async fn screen_cmd(
    ctx: &super::Ctx,
    args: RunArgs,
    chosen: String,
    sharding: Option<(crate::context::shard::Shard, String)>,
    resolved: Option<SessionSpec>,
) -> Result<i32> {
    if args.screen == 0 {
        return Err(Error::usage(
            "`--screen 0` screens nothing",
            "use --screen 2 or more (2 by default)",
        ));
    }
    if !(args.clear_below > 0.0 && args.clear_below <= 1.0) {
        return Err(Error::usage(
            format!("--clear-below {} is outside (0, 1]", args.clear_below),
            "use a rate such as 0.3",
        ));
    }
    let cap = args.session.runs.unwrap_or(screen::DEFAULT_CAP).max(2);
    let full = match resolved {
        Some(spec) => spec,
        None => super::run_spec(ctx, &args)?,
    };
    if full.junit.is_none() {
        return Err(Error::usage(
            "--design screen needs per-test outcomes: no JUnit report for this command",
            "use a runner flakelab recognises (`flakelab recipes`), `{junit}` in the command, or --junit PATH",
        ));
    }
    if let Some(shard) = sharding {
        return shard_cmd(&args, full, shard).await;
    }
    let ask = Ask {
        screen_runs: args.screen,
        clear_below: args.clear_below,
        cap,
        named: match args.screen_only {
            true => Some(screen_id(&args)?),
            false => None,
        },
        seed_given: args.session.seed.is_some(),
        max_runs: args.max_runs,
    };
    let redaction = full.redaction.clone();
    let stop = super::start_watching()?;
    let done = match screen::screen(full, &ask, &stop).await? {
        Screened::Stopped => return Ok(Verdict::Interrupted.exit_code()),
        Screened::Interrupted {
            session,
            runs,
            load,
        } => {
            let report = report::build(&session, &runs, load);
            super::print_report(&report, args.format, &redaction);
            return Ok(Verdict::Interrupted.exit_code());
        }
        Screened::Done(done) => done,
    };
    let (store, session) = (done.settings.store.clone(), done.session.clone());
    if args.screen_only {
        let record = screen::record_pending(*done, &ask, chosen)?;
        let (report, _) = super::report_cmd::shown(&store, &session)?;
        super::print_report(&report, args.format, &redaction);
        eprintln!(
            "flakelab: screen of session {} recorded with {} candidate(s); confirm them in shards: `flakelab run --design screen --shard I/N --session-id {} …` (the same command and cells), each in a copy of {}, then `flakelab merge`",
            session.id,
            record.candidates.len(),
            session.id,
            store.root().display()
        );
        return Ok(Verdict::of(Findings {
            interrupted: *stop.borrow() != Stop::Run,
            ..report.findings()
        })
        .exit_code());
    }
    eprintln!(
        "flakelab: screen done: {} candidate (test, cell) pair(s) to confirm, at most {} run(s) each",
        done.candidates.len(),
        2 * done.rule.looks
    );
    let needed = crate::screen::runs_needed_each(done.rule.boundary);
    if let Some(line) = report::screen::cap_text(done.candidates.len(), done.rule.looks, needed) {
        // The report's sentence, as a stderr line (lowercase after the prefix).
        let mut chars = line.chars();
        let first = chars.next().map(|c| c.to_lowercase().to_string());
        eprintln!("flakelab: {}{}", first.unwrap_or_default(), chars.as_str());
    }
    screen::confirm(&done, &ask, chosen, &stop).await?;
    let interrupted = *stop.borrow() != Stop::Run;
    let (report, _) = super::report_cmd::shown(&store, &session)?;
    super::print_report(&report, args.format, &redaction);
    Ok(Verdict::of(Findings {
        interrupted,
        ..report.findings()
    })
    .exit_code())
}

/// `run --design screen --shard I/N`: confirms this shard's share of the
/// candidates of a screen run alone and recorded in the store.
async fn shard_cmd(
    args: &RunArgs,
    full: SessionSpec,
    (shard, from): (crate::context::shard::Shard, String),
) -> Result<i32> {
    if args.screen_only {
        return Err(Error::usage(
            format!("--screen-only runs the screen on one machine, and this is shard {} of {} ({from})", shard.index, shard.total),
            "run the screen once without --shard, then each shard with --shard I/N in a copy of its store",
        ));
    }
    let id = screen_id(args)?;
    let plan = screen::shard_of(full, shard, id, args.session.seed.is_some())?;
    eprintln!(
        "flakelab: shard {} of {} ({from}) of screened session {}: {} of its {} candidate(s) to confirm{}",
        shard.index,
        shard.total,
        plan.id,
        plan.mine.len(),
        plan.pending.candidates.len(),
        match plan.cells.is_empty() {
            true => String::new(),
            false => format!(", in {}", plan.cells.join(", ")),
        }
    );
    let stop = super::start_watching()?;
    screen::confirm_shard(&plan, args.max_runs, &stop).await?;
    let interrupted = *stop.borrow() != Stop::Run;
    let (report, _) = super::report_cmd::shown(&plan.settings.store, &plan.session)?;
    super::print_report(&report, args.format, &plan.settings.redaction);
    Ok(Verdict::of(Findings {
        interrupted,
        ..report.findings()
    })
    .exit_code())
}

/// The id of a screen run alone for its shards: `--session-id`, else
/// FLAKELAB_SESSION_ID or the CI run's id (`crate::context::shard::session_id`).
fn screen_id(args: &RunArgs) -> Result<String> {
    let env = |k: &str| std::env::var(k).ok();
    crate::context::shard::session_id(args.session_id.as_deref(), &env).map_err(|m| {
        Error::usage(
            m,
            "give --session-id ID (or FLAKELAB_SESSION_ID): the shards that confirm the screen name it",
        )
    })
}
