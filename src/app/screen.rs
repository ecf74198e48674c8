//! `flakelab run --design screen`: an adaptive screen (one full run per
//! cell; more only in cells random by nature or whose first run flagged
//! nothing), then every (test, cell) pair whose outcomes differ from the
//! baseline's is confirmed on fresh runs under a selection that keeps the
//! baseline's context (`crate::screen::ladder`: alone, its file or module,
//! the whole command; climbing when the baseline arm does not reproduce
//! the screen's baseline), the candidates of one cell that do not
//! interfere together in one runner invocation, interleaved with their
//! baseline runs and stopped by the sequential rule in `crate::screen`.
//! Verdicts rest on the confirmation runs only, with Holm over the
//! candidates.

use crate::catalog::recipe::argv;
use crate::cli::RunArgs;
use crate::error::{Error, Result};
use crate::exec::child::Stop;
use crate::record::RunRecord;
use crate::report::{self, VsBaseline};
use crate::screen::{
    self, Candidate, CellKind, Confirmation, Decision, DesignSummary, Rule, ScreenRecord, Selection,
};
use crate::session::{self, SessionSpec};
use crate::verdict::{Findings, Verdict};

/// Confirmation runs per candidate (both arms) when `-n` is not given.
pub const DEFAULT_CAP: u32 = 30;

/// What a screened session's report reads from its screen runs: how
/// many, and the test executions they carried; folded one run at a time.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct ScreenRuns {
    /// Runs read.
    pub runs: u64,
    /// Test executions (per-test records) in them.
    pub executions: u64,
    /// Runs with per-test data.
    pub measured: u64,
}

impl ScreenRuns {
    /// Adds one run.
    pub fn add(&mut self, r: &crate::store::RunView) {
        self.runs += 1;
        let tests = r.tests_len() as u64;
        self.executions += tests;
        if tests > 0 {
            self.measured += 1;
        }
    }
}

/// A run's tests in the order its report lists them (the store keeps a
/// session's tests in first-seen order, not each run's): `None` without a
/// kept report or tests.
fn order_of(r: &RunRecord) -> Option<Vec<String>> {
    let parsed = crate::junit::parse_file(r.junit.as_deref()?).ok()?;
    let mut seen = std::collections::HashSet::new();
    let ids: Vec<String> = (crate::outcomes::records(&parsed, None).into_iter())
        .map(|t| t.id)
        .filter(|id| seen.insert(id.clone()))
        .collect();
    (!ids.is_empty()).then_some(ids)
}

/// What each shuffle candidate's ordered selections are cut from, when the
/// recipe runs a given order: the first screen run in which it failed in
/// its cell (the run [`screen::candidates`] takes its seed from) and the
/// screen's first baseline run with tests.
fn flip_orders(
    spec: &SessionSpec,
    runs: &[RunRecord],
    candidates: &[Candidate],
) -> Vec<Option<screen::FlipOrders>> {
    use crate::record::TestOutcome;
    if ordered_of(spec).is_none() {
        return vec![None; candidates.len()];
    }
    let baseline = (runs.iter())
        .filter(|r| r.cell == "baseline" && !r.tests.is_empty())
        .find_map(order_of);
    (candidates.iter())
        .map(|c| {
            if kind_of(spec, &c.cell).1 != CellKind::Shuffled {
                return None;
            }
            let flip = runs.iter().find(|r| {
                r.cell == c.cell
                    && (r.tests.iter()).any(|t| {
                        t.id == c.test
                            && matches!(t.outcome, TestOutcome::Fail | TestOutcome::Error)
                    })
            })?;
            Some(screen::FlipOrders {
                flip: order_of(flip)?,
                baseline: baseline.clone()?,
            })
        })
        .collect()
}

/// The recipe's way of running a given list in a given order, if it has one.
fn ordered_of(spec: &SessionSpec) -> Option<&crate::catalog::recipe::ordered::Ordered> {
    use crate::catalog::recipe::ordered::OrderHow;
    (spec.recipe.as_ref()?.ordered.as_ref())
        .filter(|o| matches!(o.how, OrderHow::PytestPlugin | OrderHow::Listed))
}

fn executions(runs: &[RunRecord]) -> u64 {
    runs.iter().map(|r| r.tests.len() as u64).sum()
}

/// Whether cell `name` of `spec` is random by nature (its runs differ by
/// seed or schedule: shuffle, workers, stress), and its kind for the
/// confirmation's ladder.
fn kind_of(spec: &SessionSpec, name: &str) -> (bool, CellKind) {
    let Some(p) = spec.cell_index(name).map(|i| &spec.cells[i].1) else {
        return (false, CellKind::Fixed);
    };
    let kind = if p.shuffle {
        CellKind::Shuffled
    } else if p.workers.is_some() {
        CellKind::Concurrent
    } else {
        CellKind::Fixed
    };
    (p.shuffle || p.workers.is_some() || p.stress.is_some(), kind)
}

/// Runs `run --design screen`; returns the exit code. `chosen`: why this
/// design runs (`--design auto`'s reason, or that it was asked for).
pub(super) async fn screen_cmd(
    ctx: &super::Ctx,
    args: RunArgs,
    chosen: String,
    sharding: Option<(crate::shard::Shard, String)>,
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
    let cap = args.session.runs.unwrap_or(DEFAULT_CAP).max(2);
    let full = match resolved {
        Some(spec) => spec,
        None => super::run::spec_of(ctx, &args)?,
    };
    if full.junit.is_none() {
        return Err(Error::usage(
            "--design screen needs per-test outcomes: no JUnit report for this command",
            "use a runner flakelab recognises (`flakelab recipes`), `{junit}` in the command, or --junit PATH",
        ));
    }
    if let Some(shard) = sharding {
        return confirm_shard(&args, full, shard).await;
    }
    let named = match args.screen_only {
        true => Some(screen_id(&args)?),
        false => None,
    };
    // A shuffle candidate replays the order that flipped it, read from its
    // run's report: the screen keeps its reports where the recipe runs a
    // given order.
    let mut full = full;
    let replays_orders = ordered_of(&full).is_some()
        && (full.cells.iter()).any(|(c, _)| kind_of(&full, &c.name).1 == CellKind::Shuffled);
    let user_keeps = full.keep_junit;
    full.keep_junit |= replays_orders;
    // Round one: one full run of every cell.
    let mut settings = full.clone().with_runs(1);
    if let Some(id) = &named {
        if args.session.seed.is_none() {
            settings = settings.with_seed(crate::shard::seed_of(id));
        }
        settings = settings.named(id);
    }
    let stop = super::start_watching()?;
    let Some(done) = session::run_session(&settings, &stop).await? else {
        return Ok(Verdict::Interrupted.exit_code());
    };
    let (mut runs, load) = done.runs(&settings.store)?;
    if done.interrupted {
        let report = report::build(&done.session, &runs, load);
        super::print_report(&report, args.format, &settings.redaction);
        return Ok(Verdict::Interrupted.exit_code());
    }
    let applied: Vec<String> = (done.session.cells.iter())
        .filter(|c| c.applied)
        .map(|c| c.name.clone())
        .collect();
    // Round two: the cells one run cannot tell about.
    let first = screen::candidates(&runs, &applied);
    let again: Vec<(String, String)> = (applied.iter())
        .filter(|c| c.as_str() != "baseline")
        .filter_map(|c| {
            let flagged = first.iter().filter(|x| &x.cell == c).count();
            screen::rescreen(kind_of(&settings, c).0, flagged).map(|why| (c.clone(), why.into()))
        })
        .collect();
    let Some((rounds, reversed_seeds)) = screen_again(
        &full,
        &settings,
        &done.session,
        &again,
        (args.screen, replays_orders),
        &mut runs,
        &stop,
    )
    .await?
    else {
        return Ok(Verdict::Interrupted.exit_code());
    };
    let mut candidates = screen::candidates(&runs, &applied);
    let orders = flip_orders(&settings, &runs, &candidates);
    // A candidate first flipped by a reversed run has no seed that makes
    // its order: it replays the order itself, never a seed.
    for c in &mut candidates {
        if c.flip_seed.is_some_and(|s| reversed_seeds.contains(&s)) {
            c.flip_seed = None;
        }
    }
    drop(runs);
    let rule = Rule::new(
        candidates.len(),
        (cap / 2).max(1),
        settings.confidence,
        args.clear_below,
    );
    if args.screen_only {
        let mut record = ScreenRecord {
            schema: screen::SCREEN_SCHEMA.into(),
            session: done.session.id.clone(),
            screen_runs: args.screen,
            rule,
            confirmations: Vec::new(),
            confirm_totals: None,
            rounds,
            chosen: Some(chosen),
            pending: true,
            candidates,
            part: None,
            shards: None,
        };
        crate::session::scrub::screen(&settings.redaction, &mut record);
        settings.store.append_screen(&record)?;
        let (report, _) = super::report_cmd::shown(&settings.store, &done.session)?;
        super::print_report(&report, args.format, &settings.redaction);
        eprintln!(
            "flakelab: screen of session {} recorded with {} candidate(s); confirm them in shards: `flakelab run --design screen --shard I/N --session-id {} …` (the same command and cells), each in a copy of {}, then `flakelab merge`",
            done.session.id,
            record.candidates.len(),
            done.session.id,
            settings.store.root().display()
        );
        return Ok(Verdict::of(Findings {
            interrupted: *stop.borrow() != Stop::Run,
            ..report.findings()
        })
        .exit_code());
    }
    eprintln!(
        "flakelab: screen done: {} candidate (test, cell) pair(s) to confirm, at most {} run(s) each",
        candidates.len(),
        2 * rule.looks
    );
    // The confirmations keep their reports only when asked to.
    let mut confirming = settings.clone();
    confirming.keep_junit = user_keeps;
    let ctx = Context {
        settings: &confirming,
        screen: &done.session,
        rule: &rule,
        stop: &stop,
        shard: None,
    };
    let (confirmed, totals) = confirm_all(&ctx, &candidates, &orders, args.max_runs).await?;
    let interrupted = *stop.borrow() != Stop::Run;
    let mut record = ScreenRecord {
        schema: screen::SCREEN_SCHEMA.into(),
        session: done.session.id.clone(),
        screen_runs: args.screen,
        rule,
        confirmations: confirmed,
        confirm_totals: Some(totals),
        rounds,
        chosen: Some(chosen),
        pending: false,
        candidates: Vec::new(),
        part: None,
        shards: None,
    };
    crate::session::scrub::screen(&settings.redaction, &mut record);
    settings.store.append_screen(&record)?;
    let (report, _) = super::report_cmd::shown(&settings.store, &done.session)?;
    super::print_report(&report, args.format, &settings.redaction);
    Ok(Verdict::of(Findings {
        interrupted,
        ..report.findings()
    })
    .exit_code())
}

/// The adaptive screen's later rounds for the cells `again` names (with
/// why): a shuffle cell whose recipe runs a given order replays its first
/// run's order reversed, then each cell runs the rest of its `screen_runs`
/// under fresh seeds. Their runs join `runs`. Returns the rounds and the
/// reversed runs' seeds; `None` when interrupted while probing.
async fn screen_again(
    full: &SessionSpec,
    settings: &SessionSpec,
    screened: &crate::record::SessionRecord,
    again: &[(String, String)],
    (screen_runs, replays_orders): (u32, bool),
    runs: &mut Vec<RunRecord>,
    stop: &tokio::sync::watch::Receiver<Stop>,
) -> Result<Option<(Vec<screen::Round>, Vec<u64>)>> {
    let mut rounds = Vec::new();
    // A shuffle cell whose recipe runs a given order replays its first
    // run's order reversed as its second run: every pair of tests then ran
    // both ways round, so a test that fails after one other test (or passes
    // only after one) fails in one of the two runs.
    let reversed: Vec<(String, Vec<String>)> = match screen_runs > 1 && replays_orders {
        false => Vec::new(),
        true => (again.iter())
            .filter(|(c, _)| kind_of(settings, c).1 == CellKind::Shuffled)
            .filter_map(|(c, _)| {
                let first = runs.iter().find(|r| &r.cell == c)?;
                let mut order = order_of(first)?;
                order.reverse();
                Some((c.clone(), order))
            })
            .collect(),
    };
    let mut reversed_seeds = Vec::new();
    if !reversed.is_empty() {
        let spec = reversed_spec(full, &reversed, screened)?
            .with_seed(crate::plan::run_seed(settings.seed, 2_000_001));
        let Some(more) = session::run_session(&spec, stop).await? else {
            return Ok(None);
        };
        let (extra, _) = more.runs(&spec.store)?;
        reversed_seeds.extend(extra.iter().map(|r| r.seed));
        rounds.push(screen::Round {
            session: more.session.id.clone(),
            cells: (reversed.iter())
                .map(|(c, _)| (c.clone(), screen::REVERSED_WHY.into()))
                .collect(),
            runs_per_cell: 1,
            runs: extra.len() as u64,
            executions: executions(&extra),
        });
        runs.extend(extra);
    }
    // The further runs, under fresh seeds: one fewer for a cell that ran
    // its order reversed.
    let further = |c: &str| match reversed.iter().any(|(r, _)| r == c) {
        true => screen_runs.saturating_sub(2),
        false => screen_runs.saturating_sub(1),
    };
    let mut by_count: Vec<(u32, Vec<(String, String)>)> = Vec::new();
    for (c, why) in again {
        let n = further(c);
        if n == 0 {
            continue;
        }
        match by_count.iter_mut().find(|(k, _)| *k == n) {
            Some((_, cells)) => cells.push((c.clone(), why.clone())),
            None => by_count.push((n, vec![(c.clone(), why.clone())])),
        }
    }
    for (k, (n, cells)) in by_count.into_iter().enumerate() {
        let names: Vec<&str> = cells.iter().map(|(c, _)| c.as_str()).collect();
        let spec = (full.clone().only_cells(&names)?)
            .with_runs(n)
            .with_seed(crate::plan::run_seed(
                settings.seed,
                2_000_000 + 2 * k as u32,
            ))
            .part_of(&screened.id)
            .knowing(screened);
        let Some(more) = session::run_session(&spec, stop).await? else {
            return Ok(None);
        };
        let (extra, _) = more.runs(&spec.store)?;
        rounds.push(screen::Round {
            session: more.session.id.clone(),
            cells,
            runs_per_cell: n,
            runs: extra.len() as u64,
            executions: executions(&extra),
        });
        runs.extend(extra);
    }
    Ok(Some((rounds, reversed_seeds)))
}

/// The screen's reversed round: each of `reversed`'s shuffle cells runs
/// its list (its first run's order reversed, written to a file in the
/// store) once, through the recipe's `[ordered]`, its own shuffle off.
fn reversed_spec(
    full: &SessionSpec,
    reversed: &[(String, Vec<String>)],
    screen: &crate::record::SessionRecord,
) -> Result<SessionSpec> {
    use crate::catalog::recipe::ordered::OrderHow;
    let ordered = ordered_of(full)
        .ok_or_else(|| Error::harness("the recipe runs no given order", "report this as a bug"))?;
    let names: Vec<&str> = reversed.iter().map(|(c, _)| c.as_str()).collect();
    let mut spec = (full.clone().only_cells(&names)?)
        .with_runs(1)
        .part_of(&screen.id)
        .knowing(screen);
    let name = format!("screen-{}-reversed", screen.id);
    for (step, (cell, list)) in reversed.iter().enumerate() {
        let file = full.store.write_bisect_order(&name, step as u32, list)?;
        let argv = (ordered.argv(&full.command, &file.display().to_string()))
            .map_err(|e| Error::harness(e, "report this as a bug"))?;
        spec = spec.with_cell_command(cell, argv);
        for (c, prepared) in &mut spec.cells {
            if &c.name == cell {
                prepared.shuffle = false;
            }
        }
    }
    if ordered.how == OrderHow::PytestPlugin {
        let dir = full.store.write_bisect_plugin()?;
        super::bisect::put_on_pythonpath(&mut spec, &dir);
    }
    Ok(spec)
}

/// The id of a screen run alone for its shards: `--session-id`, else
/// FLAKELAB_SESSION_ID or the CI run's id (`crate::shard::session_id`).
fn screen_id(args: &RunArgs) -> Result<String> {
    let env = |k: &str| std::env::var(k).ok();
    crate::shard::session_id(args.session_id.as_deref(), &env).map_err(|m| {
        Error::usage(
            m,
            "give --session-id ID (or FLAKELAB_SESSION_ID): the shards that confirm the screen name it",
        )
    })
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

/// `run --design screen --shard I/N`: confirms this shard's share of the
/// candidates of a screen run alone (`--screen-only`) and recorded in the
/// store: the cells `crate::screen::shard::cells_of` gives it, each cell's
/// candidates together, under the screen's rule; writes its part.
async fn confirm_shard(
    args: &RunArgs,
    full: SessionSpec,
    (shard, from): (crate::shard::Shard, String),
) -> Result<i32> {
    if args.screen_only {
        return Err(Error::usage(
            format!("--screen-only runs the screen on one machine, and this is shard {} of {} ({from})", shard.index, shard.total),
            "run the screen once without --shard, then each shard with --shard I/N in a copy of its store",
        ));
    }
    let id = screen_id(args)?;
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
    let settings = match args.session.seed {
        Some(_) => full.with_runs(1),
        None => full.with_runs(1).with_seed(session.seed),
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
    eprintln!(
        "flakelab: shard {} of {} ({from}) of screened session {id}: {} of its {} candidate(s) to confirm{}",
        shard.index,
        shard.total,
        mine.len(),
        pending.candidates.len(),
        match cells.is_empty() {
            true => String::new(),
            false => format!(", in {}", cells.join(", ")),
        }
    );
    let stop = super::start_watching()?;
    let ctx = Context {
        settings: &settings,
        screen: &session,
        rule: &pending.rule,
        stop: &stop,
        shard: Some(shard),
    };
    // A shard has not the screen's runs at hand: its shuffle candidates
    // replay their seed on the whole command.
    let (confirmed, totals) = confirm_all(&ctx, &mine, &[], args.max_runs).await?;
    let interrupted = *stop.borrow() != Stop::Run;
    let mut record = ScreenRecord {
        schema: screen::SCREEN_SCHEMA.into(),
        session: id,
        screen_runs: pending.screen_runs,
        rule: pending.rule,
        confirmations: confirmed,
        confirm_totals: Some(totals),
        rounds: Vec::new(),
        chosen: None,
        pending: false,
        candidates: Vec::new(),
        part: Some(crate::screen::shard::ScreenPart {
            index: shard.index,
            total: shard.total,
            cells,
            positions,
        }),
        shards: None,
    };
    crate::session::scrub::screen(&settings.redaction, &mut record);
    store.append_screen(&record)?;
    let (report, _) = super::report_cmd::shown(&store, &session)?;
    super::print_report(&report, args.format, &settings.redaction);
    Ok(Verdict::of(Findings {
        interrupted,
        ..report.findings()
    })
    .exit_code())
}

/// What every confirmation of one screened session shares.
#[derive(Clone, Copy)]
struct Context<'a> {
    settings: &'a SessionSpec,
    screen: &'a crate::record::SessionRecord,
    rule: &'a Rule,
    stop: &'a tokio::sync::watch::Receiver<Stop>,
    /// The shard confirming its share of a screen run alone: its
    /// confirmation sessions are named after it, and probe afresh (the
    /// screen ran on another machine).
    shard: Option<crate::shard::Shard>,
}

/// Counts at one rung: cell arm, baseline arm, pairs.
type StageCounts = ((u64, u64), (u64, u64), u32);

/// One candidate on its way through the confirmation stage.
struct Active {
    /// Its selections, narrowest first.
    ladder: Vec<Selection>,
    /// The rung it is on.
    rung: usize,
    /// Counts at this rung so far: cell arm, baseline arm, pairs.
    stage: StageCounts,
    /// The seed every cell run replays (a shuffle candidate).
    every_seed: Option<u64>,
    /// Decided, capped or given up.
    done: bool,
    /// What is recorded.
    out: Confirmation,
}

/// Confirms every candidate, round after round: in each round the
/// undecided candidates of each cell are packed into invocations that do
/// not interfere (`screen::batches`), and the first invocation of each cell
/// that can share a baseline arm with the others joins one session
/// ([`Group`]): one baseline arm for several cells' candidates. A candidate
/// whose selection must widen climbs and waits for the next round. Returns
/// the confirmations and the stage's (sessions, runs, executions).
async fn confirm_all(
    ctx: &Context<'_>,
    candidates: &[Candidate],
    orders: &[Option<screen::FlipOrders>],
    mut budget: Option<u64>,
) -> Result<(Vec<Confirmation>, (u64, u64, u64))> {
    let settings = ctx.settings;
    let recipe = settings.recipe.as_ref();
    let select = recipe.and_then(|r| r.select.as_ref());
    let from = select.and_then(|s| s.id_from).unwrap_or_default();
    let repeats = select.is_some_and(|s| s.repeats);
    let mut actives: Vec<Active> = candidates
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let kind = kind_of(settings, &c.cell).1;
            let every_seed = c.flip_seed.filter(|_| kind == CellKind::Shuffled);
            let order = orders.get(i).and_then(Option::as_ref);
            let ladder =
                screen::ladder(from, &c.test, &settings.dir, select.is_some(), kind, order);
            let ordered = ladder[0].order.is_some();
            Active {
                ladder,
                rung: 0,
                stage: ((0, 0), (0, 0), 0),
                every_seed,
                done: false,
                out: Confirmation {
                    candidate: c.clone(),
                    looks: Vec::new(),
                    selection: String::new(),
                    cell: (0, 0),
                    baseline: (0, 0),
                    stage_runs: 0,
                    all_runs: 0,
                    executions: 0,
                    decision: Decision::Continue,
                    spent_p: 1.0,
                    note: None,
                    replayed_seed: every_seed,
                    sessions: Vec::new(),
                    start: screen::start_reason(kind, c.flip_seed, ordered),
                    climbs: Vec::new(),
                    replayed_every: every_seed.is_some(),
                },
            }
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
        let mut queues: Vec<(String, std::collections::VecDeque<screen::Batch>)> = Vec::new();
        for cell in &cells {
            // Selections by the runner's ids (or the whole command), ordered
            // selections of one file each, and whole-prefix ones apart:
            // only the first two kinds share an invocation.
            let mut groups: [Vec<screen::BatchEntry>; 3] = Default::default();
            for (i, a) in actives.iter().enumerate() {
                if a.done || &a.out.candidate.cell != cell {
                    continue;
                }
                let rung = &a.ladder[a.rung];
                match rung.level {
                    screen::Level::OrderedFile => {
                        let file = neighbours_of(from, &a.out.candidate.test, &settings.dir);
                        groups[1].push((i, Some(file), None));
                    }
                    screen::Level::OrderedPrefix => {
                        groups[2].push((i, Some(a.out.candidate.test.clone()), None))
                    }
                    _ => groups[0].push((i, rung.id.clone(), a.every_seed)),
                }
            }
            let packed = (screen::batches(&groups[0], repeats).into_iter())
                .chain(screen::batches(&groups[1], true))
                .chain(screen::batches(&groups[2], false))
                .collect();
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

/// What the baseline arm of an invocation runs, and every cell arm but a
/// shuffle cell replaying its orders.
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    /// The whole command.
    Whole,
    /// The runner's ids, selected together.
    Ids(Vec<String>),
    /// Given lists in given orders (JUnit ids): what the baseline arm runs,
    /// and what the shuffle cell runs (the orders that flipped its
    /// candidates).
    Listed {
        baseline: Vec<String>,
        cell: Vec<String>,
    },
}

/// Candidates of several cells confirmed in one session: one batch of each
/// cell, one baseline arm for all of them. Every unshuffled cell arm runs
/// what the baseline arm runs, so each candidate's two arms run the same
/// selection; a shuffle cell runs the orders that flipped its candidates.
#[derive(Debug, Clone)]
struct Group {
    /// Each cell's batch.
    members: Vec<(String, screen::Batch)>,
    /// What the baseline arm runs.
    shape: Shape,
    /// The cell whose arm runs `Shape::Listed`'s cell list.
    listed_cell: Option<String>,
    /// The JUnit ids of every `Shape::Ids` member, when each is selected
    /// alone (so the ids can join a list): `None` once one is not.
    alone: Option<Vec<String>>,
    /// The seed every cell run replays (a group of one batch).
    every_seed: Option<u64>,
}

impl Group {
    /// A group of one batch.
    fn of(cell: &str, batch: screen::Batch, actives: &[Active]) -> Group {
        let (shape, alone) = shape_of(&batch, actives);
        Group {
            listed_cell: matches!(shape, Shape::Listed { .. }).then(|| cell.to_string()),
            every_seed: batch.every_seed,
            members: vec![(cell.to_string(), batch)],
            shape,
            alone,
        }
    }

    /// Takes `batch` of `cell` into the group when its arms can share the
    /// group's baseline arm: the whole command with the whole command; ids
    /// with ids the recipe selects together without one holding another;
    /// ids each selected alone with one shuffle cell's lists (the ids run
    /// after the lists, which keeps what ran before each replayed test).
    /// A seed replayed on every run keeps its invocation to itself.
    fn join(
        &mut self,
        cell: &str,
        batch: &screen::Batch,
        actives: &[Active],
        repeats: bool,
    ) -> bool {
        if self.every_seed.is_some() || batch.every_seed.is_some() {
            return false;
        }
        let (shape, alone) = shape_of(batch, actives);
        let alone_tests = |a: Option<Vec<String>>, b: Option<Vec<String>>| -> Option<Vec<String>> {
            let mut a = a?;
            a.extend(b?);
            Some(a)
        };
        let shape = match (&self.shape, shape) {
            (Shape::Whole, Shape::Whole) => Shape::Whole,
            (Shape::Ids(mine), Shape::Ids(theirs)) => {
                let entries: Vec<screen::BatchEntry> = (mine.iter().chain(&theirs))
                    .map(|id| (0, Some(id.clone()), None))
                    .collect();
                if screen::batches(&entries, repeats).len() != 1 {
                    return false;
                }
                self.alone = alone_tests(self.alone.take(), alone);
                let mut ids = mine.clone();
                ids.extend(theirs.into_iter().filter(|id| !mine.contains(id)));
                Shape::Ids(ids)
            }
            (Shape::Listed { baseline, cell }, Shape::Ids(_)) => {
                let Some(tests) = alone else {
                    return false;
                };
                Shape::Listed {
                    baseline: then_unlisted(baseline.clone(), tests),
                    cell: cell.clone(),
                }
            }
            (
                Shape::Ids(_),
                Shape::Listed {
                    baseline,
                    cell: list,
                },
            ) => {
                let Some(tests) = self.alone.clone() else {
                    return false;
                };
                self.listed_cell = Some(cell.to_string());
                Shape::Listed {
                    baseline: then_unlisted(baseline, tests),
                    cell: list,
                }
            }
            _ => return false,
        };
        self.shape = shape;
        self.members.push((cell.to_string(), batch.clone()));
        true
    }
}

/// `list`, then each of `tests` it does not hold yet.
fn then_unlisted(mut list: Vec<String>, tests: Vec<String>) -> Vec<String> {
    for t in tests {
        if !list.contains(&t) {
            list.push(t);
        }
    }
    list
}

/// What `batch`'s baseline arm runs, and its members' JUnit ids when each
/// is selected alone by its id.
fn shape_of(batch: &screen::Batch, actives: &[Active]) -> (Shape, Option<Vec<String>>) {
    let rung = |i: usize| &actives[i].ladder[actives[i].rung];
    if rung(batch.members[0]).order.is_some() {
        let (mut baseline, mut cell) = (Vec::new(), Vec::new());
        for o in batch.members.iter().filter_map(|&i| rung(i).order.as_ref()) {
            baseline.extend(o.baseline.iter().cloned());
            cell.extend(o.cell.iter().cloned());
        }
        return (Shape::Listed { baseline, cell }, None);
    }
    if batch.ids.is_empty() {
        return (Shape::Whole, None);
    }
    let alone = (batch.members.iter())
        .map(|&i| {
            (rung(i).level == screen::Level::Alone).then(|| actives[i].out.candidate.test.clone())
        })
        .collect();
    (Shape::Ids(batch.ids.clone()), alone)
}

/// The next session of a round: the first waiting batch, joined by the
/// first waiting batch of each later cell that can share its baseline arm
/// (each cell's batches keep their order).
fn next_group(
    queues: &mut [(String, std::collections::VecDeque<screen::Batch>)],
    actives: &[Active],
    repeats: bool,
) -> Option<Group> {
    let start = queues.iter().position(|(_, q)| !q.is_empty())?;
    let (cell, queue) = &mut queues[start];
    let mut group = Group::of(cell, queue.pop_front()?, actives);
    for (cell, queue) in queues.iter_mut().skip(start + 1) {
        if let Some(batch) = queue.front() {
            if group.join(cell, batch, actives, repeats) {
                queue.pop_front();
            }
        }
    }
    Some(group)
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
            for &(i, _) in &members {
                let a = &mut actives[i];
                let words = &a.ladder[a.rung].words;
                a.out.note = Some(match hint.is_empty() {
                    true => format!("{words}: {why}"),
                    false => format!("{words}: {why} (hint: {hint})"),
                });
                a.done = true;
            }
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
            if !looking.contains(&i) {
                continue;
            }
            let a = &mut actives[i];
            let test = a.out.candidate.test.clone();
            let (c0, b0, p0) = start[m];
            let (kc, nc) = screen::arm(runs, cell, &test);
            let (kb, nb) = screen::arm(runs, "baseline", &test);
            let pairs_here = runs.iter().filter(|r| r.cell == cell).count() as u32;
            a.stage = (
                (c0.0 + kc, c0.1 + nc),
                (b0.0 + kb, b0.1 + nb),
                p0 + pairs_here,
            );
            let at = screen::At {
                pair: pairs_of(a) + 1,
                stage_pairs: a.stage.2,
                planned_taken: a.out.looks.iter().any(|l| l.planned),
                fails_more: a.out.candidate.fails_more(),
            };
            let level = a.ladder[a.rung].level;
            let can_climb = a.rung + 1 < a.ladder.len();
            let (look, why) = screen::look_at(
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
                    looking.retain(|&x| x != i);
                }
                Decision::Differs | Decision::Cleared => {
                    a.done = true;
                    looking.retain(|&x| x != i);
                }
                Decision::Continue => {
                    if let Some(why) = why {
                        a.out.note = Some(why);
                    }
                    if at.pair >= rule.looks {
                        a.done = true;
                        looking.retain(|&x| x != i);
                    }
                }
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
    for &(i, cell) in &members {
        // A candidate's runs: its cell's and the baseline arm it shares.
        let own: Vec<&RunRecord> = (runs.iter())
            .filter(|r| r.cell == cell || r.cell == "baseline")
            .collect();
        let a = &mut actives[i];
        a.out.all_runs += own.len() as u64;
        a.out.executions += own.iter().map(|r| r.tests.len() as u64).sum::<u64>();
        a.out.sessions.push(done.session.id.clone());
    }
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

/// The file or module an ordered selection keeps, as the batches compare it.
fn neighbours_of(
    from: crate::catalog::recipe::IdFrom,
    test: &str,
    dir: &std::path::Path,
) -> String {
    screen::neighbours_id(from, test, dir).unwrap_or_else(|| test.to_string())
}

/// The session of a group: the baseline and the group's cells; every arm
/// runs what the baseline arm runs (the whole command, the ids selected
/// together, or the list in order, each list written to a file in the
/// store) but a shuffle cell replaying its orders, whose own shuffle is
/// off (its list is the order).
fn group_spec(
    settings: &SessionSpec,
    group: &Group,
    (session, batch_no): (&str, u32),
) -> std::result::Result<SessionSpec, (String, String)> {
    use crate::catalog::recipe::ordered::OrderHow;
    let harness = |e: Error| (e.message().to_string(), e.hint().to_string());
    let mut names = vec!["baseline"];
    names.extend(group.members.iter().map(|(c, _)| c.as_str()));
    let cells = settings.clone().only_cells(&names).map_err(harness)?;
    let (baseline, list) = match &group.shape {
        Shape::Whole => return Ok(cells.every_seed(group.every_seed)),
        Shape::Ids(ids) => {
            let argv = match settings.recipe.as_ref() {
                Some(r) => argv::select_many(r, &settings.command, ids, &settings.dir),
                None => Err("no recipe selects tests".to_string()),
            };
            return argv
                .map(|argv| cells.with_command(argv).every_seed(group.every_seed))
                .map_err(|e| (e, String::new()));
        }
        Shape::Listed { baseline, cell } => (baseline, cell),
    };
    let ordered = ordered_of(settings)
        .ok_or_else(|| ("the recipe runs no given order".to_string(), String::new()))?;
    let name = format!("screen-{session}");
    let write = |step: u32, ids: &[String]| {
        let file = (settings.store)
            .write_bisect_order(&name, step, ids)
            .map_err(harness)?;
        (ordered.argv(&settings.command, &file.display().to_string()))
            .map_err(|e| (e, String::new()))
    };
    let mut spec = cells.with_command(write(2 * batch_no + 1, baseline)?);
    if let Some(shuffled) = &group.listed_cell {
        spec = spec.with_cell_command(shuffled, write(2 * batch_no, list)?);
        for (c, prepared) in &mut spec.cells {
            if &c.name == shuffled {
                prepared.shuffle = false;
            }
        }
    }
    if ordered.how == OrderHow::PytestPlugin {
        let dir = settings.store.write_bisect_plugin().map_err(harness)?;
        super::bisect::put_on_pythonpath(&mut spec, &dir);
    }
    Ok(spec)
}

/// Looks a candidate has taken (every rung).
fn pairs_of(a: &Active) -> u32 {
    a.out.looks.len() as u32
}

/// Puts the confirmations into the report: each candidate's row counts its
/// deciding stage's runs, Holm over the candidates decides; every other row
/// of a perturbed cell is a screen row, never a verdict.
pub(super) fn apply(report: &mut report::Report, record: &ScreenRecord, runs: &ScreenRuns) {
    let (confirmed, rule, screen_runs) = (&record.confirmations, &record.rule, record.screen_runs);
    let alpha = 1.0 - rule.confidence;
    let adjusted = crate::stats::holm(&confirmed.iter().map(|c| c.spent_p).collect::<Vec<_>>());
    let mut pairs_screened = 0;
    for cell in report.cells.iter_mut().filter(|c| c.name != "baseline") {
        for row in &mut cell.tests {
            pairs_screened += usize::from(row.vs_baseline.is_some());
            row.stage = Some("screen");
            row.runs = Some(row.n);
            if let Some(v) = row.vs_baseline.as_mut() {
                v.differs = false;
            }
            // The screen's outcome shifts are screened too, never confirmed:
            // shown, not a verdict.
            if let Some(v) = row.shift_vs_baseline.as_mut() {
                v.differs = false;
            }
        }
    }
    let mut rates = Vec::new();
    let mut confirm_runs = 0;
    let mut confirm_executions = 0;
    let mut differing = 0;
    for (c, &adj) in confirmed.iter().zip(&adjusted) {
        confirm_runs += c.all_runs;
        confirm_executions += c.executions;
        let differs = adj <= alpha && c.cell.1 > 0 && c.baseline.1 > 0;
        let verdict = match (differs, c.decision, &c.note) {
            (true, Decision::Differs, _) => format!(
                "differs: confirmed {} on {} runs (stopped at spent p {} ≤ boundary {})",
                c.selection,
                c.stage_runs,
                report::short_p(c.spent_p),
                report::short_p(rule.boundary)
            ),
            (true, _, _) => format!(
                "differs: confirmed {} on {} runs (spent p {} at the cap, Holm over the candidates {})",
                c.selection,
                c.stage_runs,
                report::short_p(c.spent_p),
                report::short_p(adj)
            ),
            (false, Decision::Cleared, _) => format!(
                "no difference: cleared {} on {} runs, the difference bounded below {:.0}%",
                c.selection,
                c.stage_runs,
                rule.clear_below * 100.0
            ),
            (false, _, Some(note)) => format!("not decided: {note}"),
            (false, _, None) => format!(
                "no difference shown {} in {} runs (the cap)",
                c.selection, c.stage_runs
            ),
        };
        let mut verdict = match (c.replayed_seed, c.replayed_every) {
            (Some(_), true) => verdict,
            (Some(seed), false) => format!("{verdict}; each stage's first cell run replayed seed {seed}, which flipped it in the screen, the rest fresh seeds"),
            (None, _) => verdict,
        };
        if let Some(start) = &c.start {
            verdict.push_str(&format!("; {start}"));
        }
        for climb in &c.climbs {
            verdict.push_str(&format!(
                "; climbed from {} to {}: {}",
                climb.from, climb.to, climb.why
            ));
        }
        if differs {
            differing += 1;
            let rate = |(k, n): (u64, u64)| k as f64 / n.max(1) as f64;
            rates.push((rate(c.cell), rate(c.baseline)));
        }
        let Some(cell) = report.cells.iter_mut().find(|x| x.name == c.candidate.cell) else {
            continue;
        };
        let Some(row) = cell.tests.iter_mut().find(|t| t.id == c.candidate.test) else {
            continue;
        };
        let (k, n) = c.cell;
        let p = crate::stats::proportion(k, n, rule.confidence);
        row.k = k;
        row.n = n;
        row.rate = p.rate;
        row.low = p.low;
        row.high = p.high;
        row.stage = Some("confirm");
        row.runs = Some(c.stage_runs);
        row.boundary = Some(rule.boundary);
        row.verdict = Some(verdict);
        row.looks = c.looks.clone();
        row.vs_baseline = Some(VsBaseline {
            fisher_p: c.looks.last().map_or(1.0, |l| l.p),
            adjusted_p: adj,
            differs,
        });
        // The confirmation ran the cell against the baseline only: the
        // screen's comparison with the sham does not speak for these runs.
        row.sham = None;
        row.vs_sham = None;
    }
    // Differing rows first again.
    for cell in report.cells.iter_mut() {
        cell.tests.sort_by(|a, b| {
            let d =
                |r: &report::per_test::TestRow| r.vs_baseline.as_ref().is_some_and(|v| v.differs);
            d(b).cmp(&d(a)).then(b.k.cmp(&a.k)).then(a.id.cmp(&b.id))
        });
    }
    if let Some((_, runs, executions)) = record.confirm_totals {
        confirm_runs = runs;
        confirm_executions = executions;
    }
    let again_runs: u64 = record.rounds.iter().map(|r| r.runs).sum();
    let again_executions: u64 = record.rounds.iter().map(|r| r.executions).sum();
    let screen_executions = runs.executions + again_executions;
    let per_run = if runs.measured == 0 {
        0.0
    } else {
        runs.executions as f64 / runs.measured as f64
    };
    let fixed_runs = screen::fixed_runs_needed(&rates, pairs_screened, rule.confidence);
    let fixed_executions =
        fixed_runs.map(|n| (n as f64 * report.cells.len() as f64 * per_run).round() as u64);
    report.design = Some(DesignSummary {
        kind: "screen",
        screen_runs,
        pairs_screened,
        candidates: confirmed.len().max(record.candidates.len()),
        confirmed: differing,
        rule: *rule,
        runs: (runs.runs + again_runs, confirm_runs),
        executions: (screen_executions, confirm_executions),
        fixed_runs_per_cell: fixed_runs,
        fixed_executions,
        used_share: fixed_executions
            .filter(|f| *f > 0)
            .map(|f| (screen_executions + confirm_executions) as f64 / f as f64),
        confirm_sessions: record.confirm_totals.map_or_else(
            || confirmed.iter().map(|c| c.sessions.len() as u64).sum(),
            |t| t.0,
        ),
        rescreened: (record.rounds.iter())
            .flat_map(|r| r.cells.iter().cloned())
            .fold(Vec::new(), |mut out: Vec<(String, String)>, (cell, why)| {
                if !out.iter().any(|(c, _)| c == &cell) {
                    out.push((cell, why));
                }
                out
            }),
        chosen: record.chosen.clone(),
        pending: record.pending,
        shards: record.shards.clone(),
    });
}
