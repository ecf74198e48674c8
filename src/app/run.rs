//! `flakelab run`: resolve the session, run it, confirm its failing runs
//! when asked (`--confirm K`, each a replay session part of this one), and
//! print the report the store now holds.

use crate::cli::{Design, RunArgs};
use crate::design::confirm;
use crate::error::{Error, Result};
use crate::exec::child::Stop;
use crate::session::{self, SessionSpec};
use crate::stats::verdict::{Findings, Verdict};

/// This process's shard of the session, when it is one: from `--shard`,
/// `--shards` and the CI system's variables (`crate::context::shard::resolve`).
fn sharding_of(args: &RunArgs) -> Result<Option<(crate::context::shard::Shard, String)>> {
    let env = |k: &str| std::env::var(k).ok();
    let found =
        crate::context::shard::resolve(args.shard.as_deref(), args.shards, &env).map_err(|m| {
            Error::usage(
                m,
                "give --shard I/N with 1 ≤ I ≤ N (e.g. --shard 2/4), the same N in every shard",
            )
        })?;
    if args.screen_only && args.design != Design::Screen {
        return Err(Error::usage(
            "--screen-only runs the screen design's screen alone, and this session is not screened",
            "add --design screen, or drop --screen-only",
        ));
    }
    if found.is_none() && args.session_id.is_some() && !args.screen_only {
        return Err(Error::usage(
            "--session-id names the session every shard shares, and this session is not sharded",
            "add --shard I/N, or drop --session-id",
        ));
    }
    Ok(found)
}

/// Makes `spec` shard `shard`: the shared session id, and the seed derived
/// from it when none is given; refuses a store that already holds it.
fn shard_spec(
    args: &RunArgs,
    mut spec: SessionSpec,
    (shard, from): (crate::context::shard::Shard, String),
) -> Result<SessionSpec> {
    let env = |k: &str| std::env::var(k).ok();
    let id = crate::context::shard::session_id(args.session_id.as_deref(), &env).map_err(|m| {
        Error::usage(
            m,
            "give --session-id ID (or FLAKELAB_SESSION_ID), the same in every shard of the session",
        )
    })?;
    if spec.runs < shard.total {
        return Err(Error::usage(
            format!(
                "{} runs per cell are {} replicate blocks, too few for {} shards: a shard runs whole blocks",
                spec.runs, spec.runs, shard.total
            ),
            format!("use at most {} shards, or -n {} or more", spec.runs.max(1), shard.total),
        ));
    }
    if (spec.store.session(Some(&id))?).is_some_and(|s| s.id == id) {
        return Err(Error::usage(
            format!(
                "the store {} already holds session {id}",
                spec.store.root().display()
            ),
            "give each shard its own store (--store DIR) and merge them with `flakelab merge`; a new session needs another --session-id",
        ));
    }
    if args.session.seed.is_none() {
        spec = spec.with_seed(crate::context::shard::seed_of(&id));
    }
    eprintln!(
        "flakelab: shard {} of {} ({from}) of session {id}, seed {}",
        shard.index, shard.total, spec.seed
    );
    Ok(spec.sharded(Some(session::Sharding {
        shard,
        session_id: id,
    })))
}

pub(super) async fn run_cmd(ctx: &super::Ctx, args: RunArgs) -> Result<i32> {
    let sharding = sharding_of(&args)?;
    let mut args = args;
    let mut chosen = None;
    // Resolved once: the design does not change what the session resolves
    // to, and resolving reads the catalog, the recipes and the host.
    let mut resolved = None;
    if args.design == Design::Auto {
        let spec = super::run_spec(ctx, &args)?;
        let (design, why) =
            crate::design::choice::auto_design(&spec, args.confirm.is_some(), sharding.is_some())?;
        eprintln!("flakelab: {why}");
        args.design = design;
        chosen = Some(why);
        resolved = Some(spec);
    }
    if args.design == Design::Screen {
        let chosen = chosen.unwrap_or_else(|| "screen design (asked for)".into());
        if args.confirm.is_some() {
            return Err(Error::usage(
                "--confirm and --design screen both re-run failures",
                "drop --confirm: the screen design confirms every candidate on fresh runs",
            ));
        }
        return super::screen::screen_cmd(ctx, args, chosen, sharding, resolved).await;
    }
    if args.confirm == Some(0) {
        return Err(Error::usage(
            "`--confirm 0` replays nothing",
            "use --confirm 1 or more (e.g. --confirm 5)",
        ));
    }
    let mut spec = match resolved {
        Some(spec) => spec,
        None => super::run_spec(ctx, &args)?,
    };
    spec.design_chosen = chosen.clone();
    if let Some(shard) = sharding {
        spec = shard_spec(&args, spec, shard)?;
    }
    let stop = super::start_watching()?;
    let Some(spec) = crate::design::orders::systematic(spec, &stop).await? else {
        return Ok(Verdict::Interrupted.exit_code());
    };
    let Some(done) = session::run_session(&spec, &stop).await? else {
        return Ok(Verdict::Interrupted.exit_code());
    };
    if let (Some(times), false) = (args.confirm, done.interrupted) {
        let mut progress = |p: confirm::Progress<'_>| match p {
            confirm::Progress::Truncated(distinct) => eprintln!(
                "flakelab: {distinct} distinct failing runs; confirming the first {}",
                confirm::MAX_CONFIRMED
            ),
            confirm::Progress::Replaying(run, times) => eprintln!(
                "flakelab: confirming run {} ({}, seed {}) {times} times",
                run.id, run.cell, run.seed
            ),
        };
        confirm::confirm_failures(&spec, &done, times, &stop, &mut progress).await?;
    }
    let (mut report, _) = super::report_cmd::shown(&spec.store, &done.session)?;
    report.design_chosen = chosen;
    super::print_report(&report, args.format, &spec.redaction);
    if args.format != crate::cli::Format::Github {
        super::outputs::auto_summary(&report, args.summary, &spec.redaction);
    }
    let interrupted = done.interrupted || *stop.borrow() != Stop::Run;
    Ok(Verdict::of(Findings {
        interrupted,
        ..report.findings()
    })
    .exit_code())
}
