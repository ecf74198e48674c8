//! Confirming the screen's candidates: round after round, each round's
//! undecided candidates packed into sessions (`group.rs`), every member
//! looking after each pair of runs under the sequential rule.

use super::active::{pairs_of, Active, StageCounts};
use super::facts::{executions, kind_of};
use super::group::{group_spec, next_group, pack, Group};
use super::rules;
use crate::error::Result;
use crate::exec::child::Stop;
use crate::record::RunRecord;
use crate::screen::{self, Candidate, Confirmation, Decision, Rule};
use crate::session::{self, SessionSpec};

/// What every confirmation of one screened session shares.
#[derive(Clone, Copy)]
pub(super) struct Context<'a> {
    pub settings: &'a SessionSpec,
    pub screen: &'a crate::record::SessionRecord,
    pub rule: &'a Rule,
    pub stop: &'a tokio::sync::watch::Receiver<Stop>,
    /// The shard confirming its share of a screen run alone: its
    /// confirmation sessions are named after it, and probe afresh (the
    /// screen ran on another machine).
    pub shard: Option<crate::context::shard::Shard>,
}

/// Confirms every candidate, round after round: in each round the
/// undecided candidates of each cell are packed into invocations that do
/// not interfere (`rules::batches`), and the first invocation of each cell
/// that can share a baseline arm with the others joins one session
/// ([`Group`]): one baseline arm for several cells' candidates. A candidate
/// whose selection must widen climbs and waits for the next round. Returns
/// the confirmations and the stage's (sessions, runs, executions).
pub(super) async fn confirm_all(
    ctx: &Context<'_>,
    candidates: &[Candidate],
    orders: &[Option<rules::FlipOrders>],
    mut budget: Option<u64>,
) -> Result<(Vec<Confirmation>, (u64, u64, u64))> {
    let settings = ctx.settings;
    let recipe = settings.recipe.as_ref();
    let select = recipe.and_then(|r| r.select.as_ref());
    let from = select.and_then(|s| s.id_from).unwrap_or_default();
    let repeats = select.is_some_and(|s| s.repeats);
    let mut actives: Vec<Active> = (candidates.iter().enumerate())
        .map(|(i, c)| {
            let kind = kind_of(settings, &c.cell).1;
            let order = orders.get(i).and_then(Option::as_ref);
            Active::start(c, kind, order, (from, select.is_some()), &settings.dir)
        })
        .collect();
    let mut totals = (0u64, 0u64, 0u64);
    let mut batch_no = 0u32;
    // Each cell's invocations are numbered on their own: a session's fresh
    // seeds derive from its first cell's number.
    let mut cell_batches: std::collections::BTreeMap<String, u32> = Default::default();
    'rounds: loop {
        for a in actives.iter_mut().filter(|a| !a.done) {
            if pairs_of(a) >= ctx.rule.looks {
                a.done = true;
            }
        }
        let mut cells: Vec<&str> = Vec::new();
        for a in actives.iter().filter(|a| !a.done) {
            if !cells.contains(&a.out.candidate.cell.as_str()) {
                cells.push(&a.out.candidate.cell);
            }
        }
        if cells.is_empty() {
            break;
        }
        let cells: Vec<String> = cells.into_iter().map(String::from).collect();
        let mut queues: Vec<(String, std::collections::VecDeque<rules::Batch>)> = Vec::new();
        for cell in &cells {
            let packed = pack(cell, &actives, (from, repeats), &settings.dir);
            queues.push((cell.clone(), packed));
        }
        while let Some(group) = next_group(&mut queues, &actives, repeats) {
            if *ctx.stop.borrow() != Stop::Run {
                break 'rounds;
            }
            // Each invocation's fresh seeds derive from the session seed,
            // its first cell and that cell's invocation number, so a
            // screened session is reproducible from it.
            let first = &group.members[0].0;
            let nth = cell_batches.get(first).copied().unwrap_or(0);
            let position = settings.cell_index(first).unwrap_or(0) as u32;
            let seed = crate::plan::run_seed(settings.seed, 1_000_000 + 10_000 * position + nth);
            for (cell, _) in &group.members {
                *cell_batches.entry(cell.clone()).or_default() += 1;
            }
            batch_no += 1;
            let more = run_group(
                ctx,
                &group,
                (seed, batch_no),
                &mut actives,
                &mut budget,
                &mut totals,
            )
            .await?;
            if !more {
                break 'rounds;
            }
        }
    }
    let out = actives.into_iter().map(|a| a.out).collect();
    Ok((out, totals))
}

/// Runs one group's session and takes every member's looks after each
/// pair; false when the confirmation stage must end (interrupted, or
/// `--max-runs` spent).
async fn run_group(
    ctx: &Context<'_>,
    group: &Group,
    (seed, batch_no): (u64, u32),
    actives: &mut [Active],
    budget: &mut Option<u64>,
    totals: &mut (u64, u64, u64),
) -> Result<bool> {
    let Context {
        settings,
        screen: screen_session,
        rule,
        stop,
        shard,
    } = *ctx;
    // Every member candidate, with its cell.
    let members: Vec<(usize, &str)> = (group.members.iter())
        .flat_map(|(cell, b)| b.members.iter().map(move |&i| (i, cell.as_str())))
        .collect();
    let spec = group_spec(settings, group, (&screen_session.id, batch_no)).map(|s| {
        let s = s.with_seed(seed).part_of(&screen_session.id);
        match shard {
            None => s.knowing(screen_session),
            Some(sh) => s.named(&format!(
                "{}-s{}of{}-c{batch_no}",
                screen_session.id, sh.index, sh.total
            )),
        }
    });
    let spec = match spec {
        Ok(s) => s,
        Err((why, hint)) => {
            give_up(actives, &members, &why, &hint);
            return Ok(true);
        }
    };
    let looks_left = (members.iter())
        .map(|&(i, _)| rule.looks.saturating_sub(pairs_of(&actives[i])))
        .max()
        .unwrap_or(1)
        .max(1);
    let spec = spec.with_runs(looks_left);
    // Members still looking in this invocation.
    let mut looking: Vec<usize> = members.iter().map(|&(i, _)| i).collect();
    let mut exhausted = false;
    let mut used = 0u64;
    let start: Vec<StageCounts> = members.iter().map(|&(i, _)| actives[i].stage).collect();
    let mut on_block = |runs: &[RunRecord]| -> bool {
        used = runs.len() as u64;
        for (m, &(i, cell)) in members.iter().enumerate() {
            if looking.contains(&i) && !take_look(&mut actives[i], runs, cell, start[m], rule) {
                looking.retain(|&x| x != i);
            }
        }
        if budget.is_some_and(|left| used >= left) {
            exhausted = true;
            return true;
        }
        looking.is_empty()
    };
    let done = session::run_session_looking(&spec, stop, Some(&mut on_block)).await?;
    if let Some(left) = budget.as_mut() {
        *left = left.saturating_sub(used);
    }
    let Some(done) = done else {
        return Ok(false);
    };
    let (runs, _) = done.runs(&spec.store)?;
    *totals = (
        totals.0 + 1,
        totals.1 + runs.len() as u64,
        totals.2 + executions(&runs),
    );
    count_runs(actives, &members, &runs, &done.session.id);
    if exhausted {
        for a in actives.iter_mut().filter(|a| !a.done) {
            a.out.note = Some("--max-runs reached".into());
            a.done = true;
        }
        *budget = Some(0);
        return Ok(false);
    }
    Ok(!done.interrupted)
}

/// Ends every member of a group whose session cannot be made, noting why
/// at its selection.
fn give_up(actives: &mut [Active], members: &[(usize, &str)], why: &str, hint: &str) {
    for &(i, _) in members {
        let a = &mut actives[i];
        let words = &a.ladder[a.rung].words;
        a.out.note = Some(match hint.is_empty() {
            true => format!("{words}: {why}"),
            false => format!("{words}: {why} (hint: {hint})"),
        });
        a.done = true;
    }
}

/// Takes candidate `a`'s look after the runs so far of its group's session
/// (`start`: its stage's counts when the session began); false once it
/// stops looking in this session (decided, climbing, or at its cap).
fn take_look(
    a: &mut Active,
    runs: &[RunRecord],
    cell: &str,
    start: StageCounts,
    rule: &Rule,
) -> bool {
    let tests = a.out.candidate.tests();
    let (c0, b0, p0) = start;
    let (kc, nc) = rules::arm(runs, cell, &tests);
    let (kb, nb) = rules::arm(runs, "baseline", &tests);
    let pairs_here = runs.iter().filter(|r| r.cell == cell).count() as u32;
    a.stage = (
        (c0.0 + kc, c0.1 + nc),
        (b0.0 + kb, b0.1 + nb),
        p0 + pairs_here,
    );
    let at = rules::At {
        pair: pairs_of(a) + 1,
        stage_pairs: a.stage.2,
        planned_taken: a.out.looks.iter().any(|l| l.planned),
        fails_more: a.out.candidate.fails_more(),
    };
    let level = a.ladder[a.rung].level;
    let can_climb = a.rung + 1 < a.ladder.len();
    let (look, why) = rules::look_at(
        rule,
        at,
        level,
        a.stage.0,
        a.stage.1,
        a.out.candidate.screen_baseline,
        can_climb,
        a.out.candidate.screen_cell.0 > 0,
    );
    let decision = look.decision;
    a.out.spent_p = a.out.spent_p.min(look.spent_p);
    a.out.looks.push(look);
    a.out.selection = a.ladder[a.rung].words.clone();
    a.out.cell = a.stage.0;
    a.out.baseline = a.stage.1;
    a.out.stage_runs = 2 * u64::from(a.stage.2);
    a.out.decision = decision;
    follow(a, decision, why, at.pair >= rule.looks)
}

/// Follows candidate `a`'s decision at a look (`capped`: that look was its
/// last); false once it stops looking in this session.
fn follow(a: &mut Active, decision: Decision, why: Option<String>, capped: bool) -> bool {
    match decision {
        Decision::Climb => {
            let from = a.ladder[a.rung].words.clone();
            a.rung += 1;
            a.out.climbs.push(screen::Climb {
                from,
                to: a.ladder[a.rung].words.clone(),
                why: why.unwrap_or_default(),
            });
            a.stage = ((0, 0), (0, 0), 0);
            false
        }
        Decision::Differs | Decision::Cleared => {
            a.done = true;
            false
        }
        Decision::Continue => {
            if let Some(why) = why {
                a.out.note = Some(why);
            }
            if capped {
                a.done = true;
                return false;
            }
            true
        }
    }
}

/// Adds a finished group session's runs to each member: its cell's and
/// the baseline arm it shares.
fn count_runs(
    actives: &mut [Active],
    members: &[(usize, &str)],
    runs: &[RunRecord],
    session: &str,
) {
    for &(i, cell) in members {
        let own: Vec<&RunRecord> = (runs.iter())
            .filter(|r| r.cell == cell || r.cell == "baseline")
            .collect();
        let a = &mut actives[i];
        a.out.all_runs += own.len() as u64;
        a.out.executions += own.iter().map(|r| r.tests.len() as u64).sum::<u64>();
        a.out.sessions.push(session.to_string());
    }
}
