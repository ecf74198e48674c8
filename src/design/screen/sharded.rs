//! `run --design screen --shard I/N`: one shard's share of the candidates
//! of a screen run alone (`--screen-only`), confirmed under the screen's
//! rule and written as the shard's part of its record.

use super::confirm::{confirm_all, Context};
use crate::error::{Error, Result};
use crate::exec::child::Stop;
use crate::record::SessionRecord;
use crate::screen::{self, Candidate, ScreenRecord};
use crate::session::SessionSpec;

/// One shard's share of a screen run alone, checked against the store
/// and ready to confirm.
pub(crate) struct ShardPlan {
    /// This shard.
    pub shard: crate::context::shard::Shard,
    /// The screened session's id.
    pub id: String,
    /// The session every confirmation derives from.
    pub settings: SessionSpec,
    /// The screened session.
    pub session: SessionRecord,
    /// The screen's record awaiting its shards.
    pub pending: ScreenRecord,
    /// The cells this shard confirms (`crate::screen::shard::cells_of`).
    pub cells: Vec<String>,
    /// Its candidates' positions among the screen's.
    pub positions: Vec<u32>,
    /// Its candidates.
    pub mine: Vec<Candidate>,
}

/// `run --design screen --shard I/N`'s share of session `id`, a screen run
/// alone (`--screen-only`) and recorded in `full`'s store: the cells
/// `crate::screen::shard::cells_of` gives shard `shard`, each cell's
/// candidates together. `seed_given`: whether `--seed` was given (else the
/// screen's seed is taken). Refuses a store without that screen, one that
/// holds this shard already, and another plan than the screen's.
pub(crate) fn shard_of(
    full: SessionSpec,
    shard: crate::context::shard::Shard,
    id: String,
    seed_given: bool,
) -> Result<ShardPlan> {
    let store = full.store.clone();
    let shown = store.root().display().to_string();
    let first = format!(
        "run the screen first, on one machine: `flakelab run --design screen --screen-only --session-id {id} …`, and start each shard in a copy of its store"
    );
    let Some(session) = store.session(Some(&id))?.filter(|s| s.id == id) else {
        return Err(Error::usage(
            format!("the store {shown} holds no screen of session {id} to confirm"),
            first,
        ));
    };
    let records = store.screen_records_of(&id)?;
    let Some(pending) = records.iter().rev().find(|r| r.pending).cloned() else {
        return Err(Error::usage(
            format!("session {id} in {shown} is not a screen awaiting its shards (run with --screen-only)"),
            first,
        ));
    };
    if (records.iter())
        .filter_map(|r| r.part.as_ref())
        .any(|p| p.index == shard.index && p.total == shard.total)
    {
        return Err(Error::usage(
            format!("the store {shown} already holds shard {} of {}'s confirmations of session {id}", shard.index, shard.total),
            "start each shard in a fresh copy of the screen's store, and merge them with `flakelab merge`",
        ));
    }
    let settings = match seed_given {
        true => full.with_runs(1),
        false => full.with_runs(1).with_seed(session.seed),
    };
    if let Some(why) = other_plan(&settings, &session) {
        return Err(Error::usage(
            format!(
                "shard {} of {} is another plan than the screen of session {id}: {why}",
                shard.index, shard.total
            ),
            "start every shard with the screen's command, cells and seed (and the same flakelab)",
        ));
    }
    let cells = crate::screen::shard::cells_of(&pending.candidates, shard.index, shard.total);
    let (positions, mine): (Vec<u32>, Vec<Candidate>) = (pending.candidates.iter().enumerate())
        .filter(|(_, c)| cells.contains(&c.cell))
        .map(|(i, c)| (i as u32, c.clone()))
        .unzip();
    Ok(ShardPlan {
        shard,
        id,
        settings,
        session,
        pending,
        cells,
        positions,
        mine,
    })
}

/// Confirms `plan`'s candidates under the screen's rule and writes the
/// shard's part; returns it as stored.
pub(crate) async fn confirm_shard(
    plan: &ShardPlan,
    max_runs: Option<u64>,
    stop: &tokio::sync::watch::Receiver<Stop>,
) -> Result<ScreenRecord> {
    let ctx = Context {
        settings: &plan.settings,
        screen: &plan.session,
        rule: &plan.pending.rule,
        stop,
        shard: Some(plan.shard),
    };
    // A shard has not the screen's runs at hand: its shuffle candidates
    // replay their seed on the whole command.
    let (confirmed, totals) = confirm_all(&ctx, &plan.mine, &[], max_runs).await?;
    let mut record = ScreenRecord {
        schema: screen::SCREEN_SCHEMA.into(),
        session: plan.id.clone(),
        screen_runs: plan.pending.screen_runs,
        rule: plan.pending.rule,
        confirmations: confirmed,
        confirm_totals: Some(totals),
        rounds: Vec::new(),
        chosen: None,
        pending: false,
        candidates: Vec::new(),
        part: Some(crate::screen::shard::ScreenPart {
            index: plan.shard.index,
            total: plan.shard.total,
            cells: plan.cells.clone(),
            positions: plan.positions.clone(),
        }),
        shards: None,
    };
    crate::session::scrub::screen(&plan.settings.redaction, &mut record);
    plan.settings.store.append_screen(&record)?;
    Ok(record)
}

/// The first way `spec` is another plan than the screened `session`, if
/// it is: the command, the cells, the seed, flakelab's version.
fn other_plan(spec: &SessionSpec, session: &crate::record::SessionRecord) -> Option<String> {
    if spec.command != session.command {
        return Some(format!(
            "the command differs: `{}` here, `{}` in the screen",
            spec.command.join(" "),
            session.command.join(" ")
        ));
    }
    let here: Vec<&str> = spec.cells.iter().map(|(c, _)| c.name.as_str()).collect();
    let there: Vec<&str> = session.cells.iter().map(|c| c.name.as_str()).collect();
    if here != there {
        return Some(format!(
            "the cells differ: {} here, {} in the screen",
            here.join(", "),
            there.join(", ")
        ));
    }
    if spec.seed != session.seed {
        return Some(format!(
            "the seed differs: {} here, {} in the screen",
            spec.seed, session.seed
        ));
    }
    let version = env!("CARGO_PKG_VERSION");
    if session.flakelab_version != version {
        return Some(format!(
            "flakelab's version differs: {version} here, {} in the screen",
            session.flakelab_version
        ));
    }
    None
}
