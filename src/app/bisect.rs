//! `flakelab bisect`: wiring only. Finds the failing run (or records one
//! under `--seed`), derives the session of ordered runs from its record
//! (the same cell without the shuffle, the recipe's `[ordered]` selection),
//! and answers each question of `crate::bisect::ddmin` with one recorded
//! run. The reasoning is in `crate::bisect`.

use crate::bisect::ddmin::{Ddmin, Next};
use crate::bisect::{self, BisectRecord, Confirmation, Kind, BISECT_SCHEMA};
use crate::catalog::perturbation::Kind as PerturbKind;
use crate::catalog::recipe::argv;
use crate::catalog::recipe::ordered::{OrderHow, Ordered};
use crate::cli::{BisectArgs, LadderFormat};
use crate::config::RunFlags;
use crate::error::{Error, Result};
use crate::exec::child::Stop;
use crate::record::RunRecord;
use crate::session::engine::{new_session_id, now_text};
use crate::session::resolve::{store_root, Intent, Layers};
use crate::session::{self, subject_dir, SessionSpec};
use crate::store::Store;
use crate::verdict::Verdict;

/// What one run of the victim showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    Fail,
    Pass,
    /// The report did not hold the victim, or the run errored.
    Unmeasured,
}

/// The ordered runs of one bisection: every question becomes a session of
/// its own (part of the bisection), counted against the budget.
struct Steps<'a> {
    spec: SessionSpec,
    ordered: Ordered,
    stop: &'a tokio::sync::watch::Receiver<Stop>,
    id: String,
    victim: String,
    runs: u32,
    budget: Option<u32>,
    sessions: Vec<String>,
    stopped: Option<&'static str>,
}

impl Steps<'_> {
    /// Runs the victim after `before` (in that order) `k` times; `None`
    /// when the budget or Ctrl-C stopped it first.
    async fn ask(&mut self, before: &[String], k: u32) -> Result<Option<Vec<Seen>>> {
        if self.stopped.is_some() {
            return Ok(None);
        }
        if self.budget.is_some_and(|b| self.runs + k > b) {
            self.stopped = Some("the budget was spent");
            return Ok(None);
        }
        let mut ids = before.to_vec();
        ids.push(self.victim.clone());
        let step = self.sessions.len() as u32 + 1;
        let file = self.spec.store.write_bisect_order(&self.id, step, &ids)?;
        let argv = self
            .ordered
            .argv(&self.spec.command, &file.display().to_string())
            .map_err(|e| Error::usage(e, "fix the recipe's [ordered] section"))?;
        let spec = self
            .spec
            .clone()
            .with_command(argv)
            .with_runs(k)
            .with_seed(self.spec.seed.wrapping_add(u64::from(step)))
            .part_of(&self.id);
        let done = session::run_session(&spec, self.stop).await?;
        let Some(done) = done else {
            self.stopped = Some("interrupted");
            return Ok(None);
        };
        self.sessions.push(done.session.id.clone());
        // Every question runs the same runner: its version line, probed by
        // the first question's session, is recorded by the rest unasked.
        if self.spec.known.is_none() {
            self.spec.known = Some(session::Known {
                cells: Default::default(),
                runner_version: done.session.runner_version.clone(),
            });
        }
        let (runs, _) = done.runs(&spec.store)?;
        self.runs += runs.len() as u32;
        if done.interrupted || *self.stop.borrow() != Stop::Run {
            self.stopped = Some("interrupted");
            return Ok(None);
        }
        let seen: Vec<Seen> = runs.iter().map(|r| seen(r, &self.victim)).collect();
        eprintln!(
            "flakelab bisect: run {}: the victim after {} test(s): {}",
            self.runs,
            before.len(),
            seen.iter()
                .map(|s| match s {
                    Seen::Fail => "fails",
                    Seen::Pass => "passes",
                    Seen::Unmeasured => "not measured",
                })
                .collect::<Vec<_>>()
                .join(", ")
        );
        Ok(Some(seen))
    }

    /// One run: `None` when stopped.
    async fn once(&mut self, before: &[String]) -> Result<Option<Seen>> {
        Ok(self.ask(before, 1).await?.and_then(|s| s.first().copied()))
    }

    /// ddmin over `candidates` for the smallest set after which (behind
    /// `prefix`) the victim shows `want`; the set, and whether it finished.
    async fn search(
        &mut self,
        prefix: &[String],
        candidates: &[String],
        want: Seen,
    ) -> Result<(Vec<String>, bool)> {
        let mut d = Ddmin::new(candidates.len());
        loop {
            match d.question() {
                Next::Done(set) => return Ok((bisect::pick(candidates, &set), true)),
                Next::Ask(q) => {
                    let mut before = prefix.to_vec();
                    before.extend(bisect::pick(candidates, &q));
                    match self.once(&before).await? {
                        Some(s) => d.answer(s == want),
                        None => return Ok((bisect::pick(candidates, d.current()), false)),
                    }
                }
            }
        }
    }
}

/// The victim's outcome in one run.
fn seen(run: &RunRecord, victim: &str) -> Seen {
    match crate::ladder::focused(&run.tests, victim) {
        Some(t) if t.failed() => Seen::Fail,
        Some(t) if t.outcome == crate::record::TestOutcome::Pass => Seen::Pass,
        _ => Seen::Unmeasured,
    }
}

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
    let (run, recorded) = match (&args.run, args.seed) {
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
        (Some(id), None) => find_run(&Store::open(&root)?, &root, id)?,
        (None, Some(seed)) => {
            if args.command.is_empty() || args.test.is_none() {
                return Err(Error::usage(
                    "--seed needs the victim (--test ID) and the test command after `--`",
                    "e.g. `flakelab bisect --test tests/test_a.py::test_v --seed 1234 -- pytest tests`",
                ));
            }
            match record_seeded(ctx, &args, &dir, seed, &stop).await? {
                Some(found) => found,
                None => return Ok(Verdict::Interrupted.exit_code()),
            }
        }
    };
    let victim =
        bisect::victim_of(&run, args.test.as_deref()).map_err(|e| Error::usage(e, VICTIM_HINT))?;
    let order = bisect::order_of(&run);
    let before = bisect::predecessors(&order, &victim).to_vec();
    // The ordered runs: the failing run's cell without its shuffle.
    let mut unshuffled = run.clone();
    unshuffled
        .perturbations
        .retain(|p| !matches!(PerturbKind::parse(p), Ok(Some(PerturbKind::Shuffle))));
    let mut spec = session::resolve::recorded(&recorded, &unshuffled, &root, &ctx.executor)?;
    let ordered = ordered_of(&spec)?;
    if ordered.how == OrderHow::PytestPlugin {
        let plugin_dir = spec.store.write_bisect_plugin()?;
        put_on_pythonpath(&mut spec, &plugin_dir);
    }
    let id = format!("bisect-{}", new_session_id());
    eprintln!(
        "flakelab bisect: {victim} ran after {} of the {} test(s) of run {}",
        before.len(),
        order.len(),
        run.id
    );
    let mut steps = Steps {
        spec,
        ordered,
        stop: &stop,
        id: id.clone(),
        victim: victim.clone(),
        runs: 0,
        budget: args.budget,
        sessions: Vec::new(),
        stopped: None,
    };
    let mut record = BisectRecord {
        schema: BISECT_SCHEMA.into(),
        id,
        started_at: now_text(),
        run: run.id.clone(),
        session: run.session.clone(),
        victim: victim.clone(),
        order_len: order.len(),
        predecessors: before.len(),
        kind: Kind::Unsettled,
        polluters: Vec::new(),
        setters: Vec::new(),
        cleaners: Vec::new(),
        search_runs: 0,
        runs: 0,
        confirmation: None,
        repro: None,
        stopped: None,
        left: Vec::new(),
        left_count: None,
        sessions: Vec::new(),
    };
    bisect_steps(&mut steps, &mut record, &order, &before, &args).await?;
    record.runs = steps.runs;
    record.sessions = std::mem::take(&mut steps.sessions);
    if let Some(why) = steps.stopped {
        let left = record.left_count.unwrap_or(0);
        record.stopped = Some(match record.kind {
            Kind::Unsettled => bisect::how_far(why, steps.runs, left, before.len(), "culprit"),
            _ => format!(
                "{why} after {} run(s), once the culprit was named",
                steps.runs
            ),
        });
    }
    if matches!(record.kind, Kind::Polluted | Kind::Brittle) {
        record.repro = Some(repro(&steps.spec, &record));
    }
    steps.spec.store.append_bisect(&record)?;
    let text = match args.format {
        LadderFormat::Json => {
            let mut t = serde_json::to_string_pretty(&record).unwrap_or_default();
            t.push('\n');
            t
        }
        LadderFormat::Table => {
            let mut t = format!("flakelab bisect {} (run {})\n", record.id, record.run);
            for l in record.lines() {
                t.push_str(&l);
                t.push('\n');
            }
            t
        }
    };
    super::print_text(&steps.spec.redaction.text(&text));
    Ok(match record.kind {
        Kind::Polluted | Kind::Brittle => Verdict::Differs.exit_code(),
        Kind::NotReproduced | Kind::AlwaysFails => Verdict::Clean.exit_code(),
        Kind::Unsettled if steps.stopped == Some("interrupted") => Verdict::Interrupted.exit_code(),
        Kind::Unsettled => Verdict::NothingMeasured.exit_code(),
    })
}

const VICTIM_HINT: &str = "name the victim with --test ID (as `flakelab report` lists it)";

/// The search, classification, confirmation and cleaners, filling `record`.
async fn bisect_steps(
    steps: &mut Steps<'_>,
    record: &mut BisectRecord,
    order: &[String],
    before: &[String],
    args: &BisectArgs,
) -> Result<()> {
    let Some(alone) = steps.once(&[]).await? else {
        return Ok(());
    };
    let (want, candidates) = match alone {
        Seen::Unmeasured => {
            return Err(Error::usage(
                format!(
                    "the ordered run of {} alone did not report it (see the run's log: `flakelab report {}`)",
                    steps.victim,
                    steps.sessions.last().map(String::as_str).unwrap_or("")
                ),
                "check that the runner collects it under the same id; give --test with the id the report uses",
            ))
        }
        // Polluted: the culprit ran before it.
        Seen::Pass => (Seen::Fail, before.to_vec()),
        // Brittle: the state-setter is any other test.
        Seen::Fail => (
            Seen::Pass,
            order.iter().filter(|t| **t != steps.victim).cloned().collect(),
        ),
    };
    let Some(all) = steps.once(&candidates).await? else {
        return Ok(());
    };
    if all != want {
        record.kind = if want == Seen::Fail {
            Kind::NotReproduced
        } else {
            Kind::AlwaysFails
        };
        record.search_runs = steps.runs;
        return Ok(());
    }
    let (found, finished) = steps.search(&[], &candidates, want).await?;
    record.search_runs = steps.runs;
    if !finished {
        record.left_count = Some(found.len());
        record.left = found.into_iter().take(bisect::KEEP_IDS).collect();
        return Ok(());
    }
    if want == Seen::Fail {
        record.kind = Kind::Polluted;
        record.polluters = found.clone();
    } else {
        record.kind = Kind::Brittle;
        record.setters = found.clone();
    }
    eprintln!("flakelab bisect: {}", record.lines()[2]);
    // k of K: the finding with the victim, and the victim alone.
    let other = if want == Seen::Fail {
        Seen::Pass
    } else {
        Seen::Fail
    };
    if let Some(with) = steps.ask(&found, args.confirm).await? {
        if let Some(alone) = steps.ask(&[], args.confirm).await? {
            record.confirmation = Some(Confirmation {
                k: args.confirm,
                with: with.iter().filter(|s| **s == want).count() as u32,
                alone: alone.iter().filter(|s| **s == other).count() as u32,
            });
        }
    }
    if record.kind == Kind::Polluted && !args.no_cleaners {
        let candidates = bisect::cleaner_candidates(order, &steps.victim, &found);
        if !candidates.is_empty() {
            let mut between = found.clone();
            between.extend(candidates.iter().cloned());
            if steps.once(&between).await? == Some(Seen::Pass) {
                let (cleaners, done) = steps.search(&found, &candidates, Seen::Pass).await?;
                if done {
                    record.cleaners = cleaners;
                }
            }
        }
    }
    Ok(())
}

/// The recipe's ordered selection, or why bisect cannot run an order.
fn ordered_of(spec: &SessionSpec) -> Result<Ordered> {
    bisect::can_order(spec.recipe.as_ref()).cloned().map_err(|e| {
        let hint = match &spec.recipe {
            Some(r) => format!("`flakelab recipes show {}` says what it allows", r.name),
            None => "run the command with a recipe flakelab knows (`flakelab recipes`), or --runner NAME".into(),
        };
        Error::usage(e, hint)
    })
}

/// The command that runs just the culprits and the victim, in their order:
/// the recipe's `[select]` with every id, else the ordered run itself.
fn repro(spec: &SessionSpec, record: &BisectRecord) -> String {
    let mut ids: Vec<String> = match record.kind {
        Kind::Brittle => Vec::new(),
        _ => record.culprits().to_vec(),
    };
    ids.push(record.victim.clone());
    if let Some(recipe) = &spec.recipe {
        let from = recipe
            .select
            .as_ref()
            .and_then(|s| s.id_from)
            .unwrap_or_default();
        let runner: Option<Vec<String>> = ids
            .iter()
            .map(|t| crate::screen::runner_id(from, t, &spec.dir))
            .collect();
        if let Some(runner) = runner {
            if let Ok(mut argv) = argv::select(recipe, &spec.command, &runner[0], &spec.dir) {
                if let Some(at) = argv.iter().rposition(|w| *w == runner[0]) {
                    argv.splice(at + 1..at + 1, runner[1..].iter().cloned());
                    let mut line = format!(
                        "cd {} && ",
                        crate::repro::join(&[spec.dir.display().to_string()])
                    );
                    line.push_str(&crate::repro::join(&argv));
                    return line;
                }
            }
        }
    }
    format!(
        "flakelab bisect {} --test {} (no [select] to write a shorter line)",
        record.run,
        crate::repro::join(std::slice::from_ref(&record.victim))
    )
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

/// `--seed N -- CMD`: one shuffled run of the command under seed N,
/// recorded; `None` when interrupted.
async fn record_seeded(
    ctx: &super::Ctx,
    args: &BisectArgs,
    dir: &std::path::Path,
    seed: u64,
    stop: &tokio::sync::watch::Receiver<Stop>,
) -> Result<Option<(RunRecord, crate::record::SessionRecord)>> {
    let intent = Intent {
        command: args.command.clone(),
        dir: args.store.dir.clone(),
        store: args.store.store.clone(),
        cells: vec!["shuffle".into()],
        no_baseline: true,
        seed: Some(seed),
        signature: None,
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
    let spec = session::resolve(intent, &layers, &ctx.executor)?
        .with_runs(1)
        .first_seed(Some(seed));
    // A runner that cannot run a given order is refused before anything runs.
    ordered_of(&spec)?;
    eprintln!("flakelab bisect: one shuffled run under seed {seed} first");
    let Some(done) = session::run_session(&spec, stop).await? else {
        return Ok(None);
    };
    let (mut runs, _) = done.runs(&spec.store)?;
    let run = runs.pop().ok_or_else(|| {
        Error::usage(
            "the shuffled run did not run",
            "check the command with `flakelab run -p shuffle -n 1 -- CMD`",
        )
    })?;
    Ok(Some((run, done.session)))
}
/// Puts `dir` (where the pytest ordering plugin is) first on every cell's
/// `PYTHONPATH`, before the cell's own or the inherited one.
pub(super) fn put_on_pythonpath(spec: &mut SessionSpec, dir: &std::path::Path) {
    let inherited = std::env::var("PYTHONPATH").ok();
    for (_, prepared) in &mut spec.cells {
        let prior = prepared
            .set
            .get("PYTHONPATH")
            .cloned()
            .or(inherited.clone());
        let path = match prior.filter(|p| !p.is_empty()) {
            Some(p) => format!("{}:{p}", dir.display()),
            None => dir.display().to_string(),
        };
        prepared.set.insert("PYTHONPATH".into(), path);
    }
}
