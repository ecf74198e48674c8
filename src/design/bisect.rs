//! Bisect's design: from a failing run (or one recorded first under a
//! seed), derives the session of ordered runs from its record (the same
//! cell without the shuffle, the recipe's `[ordered]` selection), and
//! answers each question of `crate::bisect::ddmin` with one recorded run;
//! returns the stored record. The reasoning is in `crate::bisect`.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;

use tokio::sync::watch;

use crate::bisect::ddmin::{Ddmin, Next};
use crate::bisect::decide::Repeat;
use crate::bisect::{self, state, BisectRecord, Confirmation, Kind, BISECT_SCHEMA};
use crate::catalog::perturbation::Kind as PerturbKind;
use crate::catalog::recipe::argv;
use crate::catalog::recipe::ordered::{OrderHow, Ordered};
use crate::error::{Error, Result};
use crate::exec::child::Stop;
use crate::exec::Executor;
use crate::record::{RunRecord, SessionRecord};
use crate::redact::Redaction;
use crate::session::engine::{new_session_id, now_text};
use crate::session::{self, SessionSpec};
use crate::stats::verdict::Verdict;

/// The failing run a bisection starts from.
pub(crate) enum Failing {
    /// A recorded run and its session's record.
    Recorded(Box<(RunRecord, SessionRecord)>),
    /// One shuffled run of this spec under this seed, recorded first.
    Seeded(Box<SessionSpec>, u64),
}

/// How a bisection searches.
pub(crate) struct Bisect {
    /// The store's root.
    pub root: PathBuf,
    /// The victim (`--test`), else the failing run's failing test.
    pub test: Option<String>,
    /// Runs at most (`--budget`).
    pub budget: Option<u32>,
    /// Runs of each side of the confirmation (`--confirm`).
    pub confirm: u32,
    /// No search for cleaners (`--no-cleaners`).
    pub no_cleaners: bool,
}

/// What a bisection reports as it goes.
pub(crate) enum Progress<'a> {
    /// The shuffled run under `seed` is about to run (`Failing::Seeded`).
    Seeded {
        /// Its seed.
        seed: u64,
    },
    /// The search starts: the victim ran after `before` of the `of` tests
    /// of `run`.
    Start {
        /// The victim.
        victim: &'a str,
        /// Tests before it.
        before: usize,
        /// Tests in the run.
        of: usize,
        /// The failing run's id.
        run: &'a str,
    },
    /// A question was answered: after `runs` runs in all, the victim ran
    /// after `before` tests and showed `seen`.
    Ran {
        /// Runs so far.
        runs: u32,
        /// Tests before the victim.
        before: usize,
        /// What each run showed.
        seen: &'a [Seen],
    },
    /// The victim's outcome in its reference order is intermittent: each
    /// question is repeated (the words say how).
    Repeating {
        /// In words.
        how: String,
    },
    /// The culprit is named (the record's `polluter:` or `state-setter:`
    /// lines say who).
    Named {
        /// The record so far.
        record: &'a BisectRecord,
    },
}

/// A finished (or stopped) bisection.
pub(crate) struct Bisected {
    /// The stored record.
    pub record: BisectRecord,
    /// Why it stopped early, when it did (`interrupted`, the budget).
    pub stopped: Option<&'static str>,
    /// What the ordered runs' session masks.
    pub redaction: Redaction,
}

impl Bisected {
    /// The exit code.
    pub(crate) fn exit_code(&self) -> i32 {
        match self.record.kind {
            Kind::Polluted | Kind::Brittle => Verdict::Differs.exit_code(),
            Kind::NotReproduced | Kind::AlwaysFails => Verdict::Clean.exit_code(),
            Kind::Unsettled if self.stopped == Some("interrupted") => {
                Verdict::Interrupted.exit_code()
            }
            Kind::Unsettled => Verdict::NothingMeasured.exit_code(),
        }
    }
}

/// What one run of the victim showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seen {
    Fail,
    Pass,
    /// The report did not hold the victim, or the run errored.
    Unmeasured,
}

/// The ordered runs of one bisection: every question becomes a session of
/// its own (part of the bisection), counted against the budget. Runs a
/// stopped bisection already made are taken from `memo` first (resume).
struct Steps<'a> {
    spec: SessionSpec,
    ordered: Ordered,
    stop: &'a watch::Receiver<Stop>,
    progress: &'a mut dyn FnMut(Progress<'_>),
    id: String,
    victim: String,
    runs: u32,
    budget: Option<u32>,
    sessions: Vec<String>,
    stopped: Option<&'static str>,
    /// Stored runs of a stopped bisection, by the list of tests they ran.
    memo: HashMap<Vec<String>, VecDeque<RunRecord>>,
    /// Runs taken from `memo`.
    replayed: u32,
    /// Runs in a row that answer "no" (1 unless the victim is intermittent).
    per_question: u32,
}

impl Steps<'_> {
    /// Runs the list `ids` (`*`: the file order) `k` times, with `extra`
    /// arguments (a state run; never taken from the memo); `None` when the
    /// budget or Ctrl-C stopped it first.
    async fn runs(
        &mut self,
        ids: Vec<String>,
        k: u32,
        extra: &[String],
    ) -> Result<Option<Vec<RunRecord>>> {
        if self.stopped.is_some() {
            return Ok(None);
        }
        let mut got = Vec::new();
        if extra.is_empty() {
            if let Some(q) = self.memo.get_mut(&ids) {
                while got.len() < k as usize {
                    match q.pop_front() {
                        Some(r) => got.push(r),
                        None => break,
                    }
                }
            }
            self.replayed += got.len() as u32;
            self.runs += got.len() as u32;
        }
        let left = k - got.len() as u32;
        if left == 0 {
            return Ok(Some(got));
        }
        if self.budget.is_some_and(|b| self.runs + left > b) {
            self.stopped = Some("the budget was spent");
            return Ok(None);
        }
        let step = self.sessions.len() as u32 + 1;
        let file = self.spec.store.write_bisect_order(&self.id, step, &ids)?;
        let mut argv = self
            .ordered
            .argv(&self.spec.command, &file.display().to_string())
            .map_err(|e| Error::usage(e, "fix the recipe's [ordered] section"))?;
        argv.extend(extra.iter().cloned());
        let spec = self
            .spec
            .clone()
            .with_command(argv)
            .with_runs(left)
            .with_seed(self.spec.seed.wrapping_add(u64::from(step)))
            .part_of(&self.id)
            .quiet();
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
        got.extend(runs);
        Ok(Some(got))
    }

    /// Runs the victim after `before` (in that order) `k` times; `None`
    /// when the budget or Ctrl-C stopped it first.
    async fn ask(&mut self, before: &[String], k: u32) -> Result<Option<Vec<Seen>>> {
        let mut ids = before.to_vec();
        ids.push(self.victim.clone());
        let Some(runs) = self.runs(ids, k, &[]).await? else {
            return Ok(None);
        };
        let seen: Vec<Seen> = runs.iter().map(|r| seen(r, &self.victim)).collect();
        (self.progress)(Progress::Ran {
            runs: self.runs,
            before: before.len(),
            seen: &seen,
        });
        Ok(Some(seen))
    }

    /// One run: `None` when stopped.
    async fn once(&mut self, before: &[String]) -> Result<Option<Seen>> {
        Ok(self.ask(before, 1).await?.and_then(|s| s.first().copied()))
    }

    /// Whether the victim shows `want` after `before`: yes at the first
    /// run that shows it, no after `per_question` runs in a row that do
    /// not; `None` when stopped.
    async fn decide(&mut self, before: &[String], want: Seen) -> Result<Option<bool>> {
        for _ in 0..self.per_question.max(1) {
            match self.once(before).await? {
                None => return Ok(None),
                Some(s) if s == want => return Ok(Some(true)),
                Some(_) => {}
            }
        }
        Ok(Some(false))
    }

    /// ddmin over `candidates` for the smallest set after which (arranged
    /// by `build`) the victim shows `want`; the set, and whether it finished.
    async fn search(
        &mut self,
        build: &dyn Fn(&[String]) -> Vec<String>,
        candidates: &[String],
        want: Seen,
    ) -> Result<(Vec<String>, bool)> {
        let mut d = Ddmin::new(candidates.len());
        loop {
            match d.question() {
                Next::Done(set) => return Ok((bisect::pick(candidates, &set), true)),
                Next::Ask(q) => {
                    let before = build(&bisect::pick(candidates, &q));
                    match self.decide(&before, want).await? {
                        Some(yes) => d.answer(yes),
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

/// What the victim showed in one question's runs, for the progress line:
/// `victim failed 1/1`, `victim passed 3/3`, with any unmeasured runs.
pub(crate) fn victim_outcome(seen: &[Seen]) -> String {
    let measured = seen.len() as u32 - count(seen, Seen::Unmeasured);
    let failed = count(seen, Seen::Fail);
    let mut text = if failed > 0 {
        format!("victim failed {failed}/{measured}")
    } else {
        format!("victim passed {measured}/{measured}")
    };
    let unmeasured = count(seen, Seen::Unmeasured);
    if unmeasured > 0 {
        text.push_str(&format!(" ({unmeasured} run(s) did not measure it)"));
    }
    text
}

fn count(seen: &[Seen], what: Seen) -> u32 {
    seen.iter().filter(|s| **s == what).count() as u32
}

/// Bisects from `failing`: the search, its confirmation and cleaners, the
/// state the culprits changed, the stored record; `None` when stopped
/// before a failing run was recorded. A stopped bisection of the same run
/// and victim is resumed: its stored runs answer its questions again.
pub(crate) async fn bisect(
    failing: Failing,
    how: &Bisect,
    executor: &Executor,
    stop: &watch::Receiver<Stop>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Option<Bisected>> {
    let (run, recorded) = match failing {
        Failing::Recorded(found) => *found,
        Failing::Seeded(spec, seed) => match record_seeded(&spec, seed, stop, progress).await? {
            Some(found) => found,
            None => return Ok(None),
        },
    };
    let root = &how.root;
    let victim =
        bisect::victim_of(&run, how.test.as_deref()).map_err(|e| Error::usage(e, VICTIM_HINT))?;
    let order = bisect::order_of(&run);
    let before = bisect::predecessors(&order, &victim).to_vec();
    // The ordered runs: the failing run's cell without its shuffle (or
    // its systematic orders).
    let mut unshuffled = run.clone();
    unshuffled.perturbations.retain(|p| {
        !matches!(
            PerturbKind::parse(p),
            Ok(Some(PerturbKind::Shuffle | PerturbKind::Orders))
        )
    });
    let mut spec = session::resolve::recorded(&recorded, &unshuffled, root, executor)?;
    let ordered = ordered_of(&spec)?;
    if ordered.how == OrderHow::PytestPlugin {
        let plugin_dir = spec.store.write_bisect_plugin()?;
        spec.put_on_pythonpath(&plugin_dir);
    }
    let resumed = (spec.store.bisects_of(&run.session)?.into_iter().rev()).find(|r| {
        r.run == run.id && r.victim == victim && r.kind == Kind::Unsettled && r.stopped.is_some()
    });
    let memo = match &resumed {
        Some(old) => memo_of(&spec, old)?,
        None => HashMap::new(),
    };
    let id = format!("bisect-{}", new_session_id());
    progress(Progress::Start {
        victim: &victim,
        before: before.len(),
        of: order.len(),
        run: &run.id,
    });
    let mut steps = Steps {
        spec,
        ordered,
        stop,
        progress,
        id: id.clone(),
        victim: victim.clone(),
        runs: 0,
        budget: how.budget,
        sessions: resumed
            .as_ref()
            .map(|r| r.sessions.clone())
            .unwrap_or_default(),
        stopped: None,
        memo,
        replayed: 0,
        per_question: 1,
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
        start: None,
        repeat: None,
        state: Vec::new(),
        state_note: None,
        resumed_from: resumed.as_ref().map(|r| r.id.clone()),
        resumed_runs: 0,
    };
    let search = Search {
        order: &order,
        before: &before,
        how,
        run: &run,
    };
    bisect_steps(&mut steps, &mut record, &search).await?;
    if matches!(record.kind, Kind::Polluted | Kind::Brittle) && steps.stopped.is_none() {
        name_state(&mut steps, &mut record, &run, &before).await?;
    }
    record.runs = steps.runs;
    record.resumed_runs = steps.replayed;
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
        record.repro = Some(repro(&steps.spec, &record, &before));
    }
    steps.spec.store.append_bisect(&record)?;
    Ok(Some(Bisected {
        record,
        stopped: steps.stopped,
        redaction: steps.spec.redaction.clone(),
    }))
}

const VICTIM_HINT: &str = "name the victim with --test ID (as `flakelab report` lists it)";

/// The stored runs of a stopped bisection, by the list of tests each ran
/// (read back from its order file); runs that did not measure the victim
/// are left to be run again.
fn memo_of(
    spec: &SessionSpec,
    old: &BisectRecord,
) -> Result<HashMap<Vec<String>, VecDeque<RunRecord>>> {
    let mut memo: HashMap<Vec<String>, VecDeque<RunRecord>> = HashMap::new();
    for s in &old.sessions {
        let Some(session) = spec.store.session(Some(s))? else {
            continue;
        };
        let Some(ids) = spec.store.bisect_order_in(&session.command) else {
            continue;
        };
        let (runs, _) = spec.store.runs_of(s)?;
        let file_order = ids == ["*"];
        let measured = runs
            .into_iter()
            .filter(|r| file_order || seen(r, &old.victim) != Seen::Unmeasured);
        memo.entry(ids).or_default().extend(measured);
    }
    Ok(memo)
}

/// Orders of stored runs in which the victim passed (its predecessors
/// there), the failing run's session first, then the newest others; at
/// most three, each with where it comes from.
fn passing_orders(
    spec: &SessionSpec,
    failing: &RunRecord,
    victim: &str,
) -> Result<Vec<(String, Vec<String>)>> {
    let mut same = Vec::new();
    let mut other = Vec::new();
    let mut runs = spec.store.runs_iter(None)?;
    for r in runs.by_ref() {
        if seen(&r, victim) != Seen::Pass {
            continue;
        }
        let order = bisect::order_of(&r);
        let before = bisect::predecessors(&order, victim).to_vec();
        if before.is_empty() {
            continue;
        }
        let found = (
            format!("the order of run {}, where it passed", r.id),
            before,
        );
        if r.session == failing.session {
            same.push(found);
        } else {
            other.push(found);
        }
    }
    runs.finish()?;
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for found in same.into_iter().rev().chain(other.into_iter().rev()) {
        if out.len() == 3 {
            break;
        }
        if !out.iter().any(|(_, o)| *o == found.1) {
            out.push(found);
        }
    }
    Ok(out)
}

/// What the search works from.
struct Search<'a> {
    /// The failing run's order.
    order: &'a [String],
    /// The victim's predecessors in it.
    before: &'a [String],
    how: &'a Bisect,
    /// The failing run.
    run: &'a RunRecord,
}

/// The search, classification, confirmation and cleaners, filling `record`.
async fn bisect_steps(
    steps: &mut Steps<'_>,
    record: &mut BisectRecord,
    search: &Search<'_>,
) -> Result<()> {
    let Some(alone) = steps.once(&[]).await? else {
        return Ok(());
    };
    match alone {
        Seen::Unmeasured => Err(Error::usage(
            format!(
                "the ordered run of {} alone did not report it (see the run's log: `flakelab report {}`)",
                steps.victim,
                steps.sessions.last().map(String::as_str).unwrap_or("")
            ),
            "check that the runner collects it under the same id; give --test with the id the report uses",
        )),
        // Polluted: the culprit ran before it.
        Seen::Pass => polluted(steps, record, search).await,
        // Brittle: it needs a state-setter; a pair may break it again.
        Seen::Fail => brittle(steps, record, search).await,
    }
}

/// A victim that passed alone: its failing order must fail it again, then
/// ddmin finds the polluting set, confirms it and looks for cleaners.
async fn polluted(
    steps: &mut Steps<'_>,
    record: &mut BisectRecord,
    search: &Search<'_>,
) -> Result<()> {
    let k = search.how.confirm;
    let Some(full) = steps.ask(search.before, k).await? else {
        return Ok(());
    };
    let fails = count(&full, Seen::Fail);
    if fails == 0 {
        record.kind = Kind::NotReproduced;
        record.search_runs = steps.runs;
        return Ok(());
    }
    if let Some(r) = Repeat::of(fails, k, steps.spec.confidence) {
        (steps.progress)(Progress::Repeating {
            how: r.describe("failed"),
        });
        steps.per_question = r.per_question;
        record.repeat = Some(r);
        // "Passes alone" is an answer like any other: decided the same way.
        let more = steps.per_question.saturating_sub(1);
        if more > 0 {
            let Some(alone) = steps.ask(&[], more).await? else {
                return Ok(());
            };
            let failed = count(&alone, Seen::Fail);
            if failed > 0 {
                record.search_runs = steps.runs;
                record.stopped = Some(format!(
                    "the victim also failed alone ({failed} of {} runs): its failure does not need an order, so no polluter can be named",
                    more + 1
                ));
                return Ok(());
            }
        }
    }
    let (found, finished) = steps
        .search(&|s: &[String]| s.to_vec(), search.before, Seen::Fail)
        .await?;
    record.search_runs = steps.runs;
    if !finished {
        record.left_count = Some(found.len());
        record.left = found.into_iter().take(bisect::KEEP_IDS).collect();
        return Ok(());
    }
    record.kind = Kind::Polluted;
    record.polluters = found.clone();
    (steps.progress)(Progress::Named { record });
    confirm(steps, record, &found, Seen::Fail, k).await?;
    if !search.how.no_cleaners {
        let candidates = bisect::cleaner_candidates(search.order, &steps.victim, &found);
        if !candidates.is_empty() {
            let mut between = found.clone();
            between.extend(candidates.iter().cloned());
            if steps.decide(&between, Seen::Pass).await? == Some(true) {
                let build = |s: &[String]| {
                    let mut b = found.clone();
                    b.extend(s.iter().cloned());
                    b
                };
                let (cleaners, done) = steps.search(&build, &candidates, Seen::Pass).await?;
                if done {
                    record.cleaners = cleaners;
                }
            }
        }
    }
    Ok(())
}

/// A victim that failed alone: an order where it passes (a stored run's,
/// the file order, every other test) is searched for its state-setter(s);
/// then the failing run's predecessors, the setters kept in place, for the
/// set that breaks it again.
async fn brittle(
    steps: &mut Steps<'_>,
    record: &mut BisectRecord,
    search: &Search<'_>,
) -> Result<()> {
    let k = search.how.confirm;
    let victim = steps.victim.clone();
    let mut candidates: Vec<(String, Option<Vec<String>>)> =
        passing_orders(&steps.spec, search.run, &victim)?
            .into_iter()
            .map(|(d, o)| (d, Some(o)))
            .collect();
    if steps.ordered.how == OrderHow::PytestPlugin {
        candidates.push(("the file order".into(), None));
    }
    candidates.push((
        "every other test, in the failing run's order".into(),
        Some(
            (search.order.iter())
                .filter(|t| **t != victim)
                .cloned()
                .collect(),
        ),
    ));
    let mut reference = None;
    for (what, before) in candidates {
        let before = match before {
            Some(b) => b,
            None => {
                let Some(runs) = steps.runs(vec!["*".into()], 1, &[]).await? else {
                    return Ok(());
                };
                let Some(r) = runs.first() else { continue };
                let shown = [seen(r, &victim)];
                let order = bisect::order_of(r);
                let before = bisect::predecessors(&order, &victim).to_vec();
                (steps.progress)(Progress::Ran {
                    runs: steps.runs,
                    before: before.len(),
                    seen: &shown,
                });
                if shown[0] != Seen::Pass {
                    continue;
                }
                before
            }
        };
        if before.is_empty() {
            continue;
        }
        let Some(shown) = steps.ask(&before, k).await? else {
            return Ok(());
        };
        let passes = count(&shown, Seen::Pass);
        if passes > 0 {
            reference = Some((what, before, passes));
            break;
        }
    }
    let Some((what, reference, passes)) = reference else {
        record.kind = Kind::AlwaysFails;
        record.search_runs = steps.runs;
        return Ok(());
    };
    record.start = Some(what);
    if let Some(r) = Repeat::of(passes, k, steps.spec.confidence) {
        (steps.progress)(Progress::Repeating {
            how: r.describe("passed"),
        });
        steps.per_question = r.per_question;
        record.repeat = Some(r);
    }
    let (setters, finished) = steps
        .search(&|s: &[String]| s.to_vec(), &reference, Seen::Pass)
        .await?;
    record.search_runs = steps.runs;
    if !finished {
        record.left_count = Some(setters.len());
        record.left = setters.into_iter().take(bisect::KEEP_IDS).collect();
        return Ok(());
    }
    record.kind = Kind::Brittle;
    record.setters = setters.clone();
    (steps.progress)(Progress::Named { record });
    let rest: Vec<String> = (search.before.iter())
        .filter(|t| !setters.contains(t))
        .cloned()
        .collect();
    let build = |s: &[String]| bisect::placed(&setters, s, search.before);
    if !rest.is_empty() && steps.decide(&build(&rest), Seen::Fail).await? == Some(true) {
        let (polluters, done) = steps.search(&build, &rest, Seen::Fail).await?;
        if done {
            record.polluters = polluters;
        }
    }
    confirm(steps, record, &setters, Seen::Pass, k).await
}

/// k of K: the found tests then the victim show `want`, and the victim
/// alone shows the other outcome.
async fn confirm(
    steps: &mut Steps<'_>,
    record: &mut BisectRecord,
    found: &[String],
    want: Seen,
    k: u32,
) -> Result<()> {
    let other = if want == Seen::Fail {
        Seen::Pass
    } else {
        Seen::Fail
    };
    if let Some(with) = steps.ask(found, k).await? {
        if let Some(alone) = steps.ask(&[], k).await? {
            record.confirmation = Some(Confirmation {
                k,
                with: count(&with, want),
                alone: count(&alone, other),
                intermittent: record.repeat.is_some(),
            });
        }
    }
    Ok(())
}

/// The state the culprits changed: one run of the culprits then the
/// victim under the plugin's `--flakelab-state` (and one with the cleaners
/// between), compared with the victim's failure texts. Other runners:
/// the files the culprits left ([`name_files`]).
async fn name_state(
    steps: &mut Steps<'_>,
    record: &mut BisectRecord,
    run: &RunRecord,
    failing_before: &[String],
) -> Result<()> {
    if steps.ordered.how != OrderHow::PytestPlugin {
        return name_files(steps, record, run).await;
    }
    type Roles = Vec<(&'static str, Vec<String>)>;
    let mut plans: Vec<(Vec<String>, Roles)> = Vec::new();
    match record.kind {
        Kind::Brittle => {
            let before = bisect::placed(&record.setters, &record.polluters, failing_before);
            plans.push((
                before,
                vec![
                    ("state-setter", record.setters.clone()),
                    ("polluter", record.polluters.clone()),
                ],
            ));
            if record.polluters.is_empty() {
                // The victim alone: its failure text, to show what it reads.
                plans.push((Vec::new(), Vec::new()));
            }
        }
        _ => {
            plans.push((
                record.polluters.clone(),
                vec![("polluter", record.polluters.clone())],
            ));
            if !record.cleaners.is_empty() {
                let mut before = record.polluters.clone();
                before.extend(record.cleaners.iter().cloned());
                plans.push((before, vec![("cleaner", record.cleaners.clone())]));
            }
        }
    }
    let mut failures: Vec<String> = crate::ladder::focused(&run.tests, &steps.victim)
        .and_then(|t| t.message.clone())
        .into_iter()
        .collect();
    let mut snaps = Vec::new();
    for (before, roles) in plans {
        let step = steps.sessions.len() as u32 + 1;
        let file = steps.spec.store.bisect_state_file(&steps.id, step)?;
        let mut ids = before;
        ids.push(steps.victim.clone());
        let extra = [format!("--flakelab-state={}", file.display())];
        if steps.runs(ids, 1, &extra).await?.is_none() {
            break;
        }
        let text = steps.spec.store.read_bisect_state(&file);
        if text.trim().is_empty() {
            continue;
        }
        let snap = state::parse(&text, &steps.victim);
        failures.extend(snap.failure.clone());
        snaps.push((snap, roles));
    }
    let texts: Vec<&str> = failures.iter().map(String::as_str).collect();
    let mut found = Vec::new();
    for (snap, roles) in &snaps {
        let roles: Vec<(&str, &[String])> = roles.iter().map(|(r, t)| (*r, t.as_slice())).collect();
        found.extend(state::findings(snap, &roles, &texts, &steps.spec.redaction));
    }
    if snaps.is_empty() {
        if steps.stopped.is_none() {
            record.state_note =
                Some("not named: the state run's plugin wrote no snapshot (see its log)".into());
        }
        return Ok(());
    }
    if found.is_empty() {
        record.state_note = Some(
            "the culprits changed none of the process-global state the plugin snapshots (environment, working directory, modules' and classes' attributes, files, ...): it may live elsewhere (a database, a service, a file outside the project and the temporary directory)".into(),
        );
    } else if found.len() > state::KEEP_CHANGES {
        record.state_note = Some(format!(
            "{} more change(s) left out",
            found.len() - state::KEEP_CHANGES
        ));
        found.truncate(state::KEEP_CHANGES);
    }
    record.state = found;
    Ok(())
}

/// The files the culprits left, for a runner without the state plugin:
/// the project's files after a run of the victim alone, then after one of
/// the culprits (a brittle victim: its state-setters) and the victim.
async fn name_files(
    steps: &mut Steps<'_>,
    record: &mut BisectRecord,
    run: &RunRecord,
) -> Result<()> {
    let (role, culprits) = match record.kind {
        Kind::Brittle => ("state-setter", record.setters.clone()),
        _ => ("polluter", record.polluters.clone()),
    };
    let dir = steps.spec.dir.clone();
    let skip = [steps.spec.store.root().to_path_buf()];
    // Each snapshot needs a run of its own, not a stored answer.
    steps.memo.clear();
    let since = std::time::SystemTime::now();
    let victim = steps.victim.clone();
    if steps.runs(vec![victim.clone()], 1, &[]).await?.is_none() {
        return Ok(());
    }
    let alone = bisect::files::snapshot(&dir, &skip, since);
    let mut ids = culprits.clone();
    ids.push(victim.clone());
    let Some(runs) = steps.runs(ids, 1, &[]).await? else {
        return Ok(());
    };
    let after = bisect::files::snapshot(&dir, &skip, since);
    let failures: Vec<String> = std::iter::once(run)
        .chain(runs.iter())
        .filter_map(|r| crate::ladder::focused(&r.tests, &victim))
        .filter_map(|t| t.message.clone())
        .collect();
    let texts: Vec<&str> = failures.iter().map(String::as_str).collect();
    let mut found = bisect::files::findings(&alone, &after, role, &culprits.join(" + "), &texts);
    if found.is_empty() {
        record.state_note = Some(format!(
            "the culprits left no file under the project that the victim alone does not leave (flakelab compares the project's files after each run; state inside the test process is named for pytest only){}",
            if alone.cut || after.cut { "; only the first files of a big project were compared" } else { "" }
        ));
    } else if found.len() > state::KEEP_CHANGES {
        record.state_note = Some(format!(
            "{} more change(s) left out",
            found.len() - state::KEEP_CHANGES
        ));
        found.truncate(state::KEEP_CHANGES);
    }
    record.state = found;
    Ok(())
}

/// The recipe's ordered selection, or why bisect cannot run an order.
pub(crate) fn ordered_of(spec: &SessionSpec) -> Result<Ordered> {
    bisect::can_order(spec.recipe.as_ref()).cloned().map_err(|e| {
        let hint = match &spec.recipe {
            Some(r) => format!("`flakelab recipes show {}` says what it allows", r.name),
            None => "run the command with a recipe flakelab knows (`flakelab recipes`), or --runner NAME".into(),
        };
        Error::usage(e, hint)
    })
}

/// The command that runs just the culprits and the victim, in their order
/// (a brittle victim: its state-setter(s), the polluters that break it
/// again in place): the recipe's `[select]` with every id, else the
/// ordered run itself.
fn repro(spec: &SessionSpec, record: &BisectRecord, before: &[String]) -> String {
    let mut ids: Vec<String> = match record.kind {
        Kind::Brittle => bisect::placed(&record.setters, &record.polluters, before),
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

/// `--seed N -- CMD`: one shuffled run of `spec` under seed N, recorded;
/// `None` when interrupted.
async fn record_seeded(
    spec: &SessionSpec,
    seed: u64,
    stop: &watch::Receiver<Stop>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Option<(RunRecord, SessionRecord)>> {
    // A runner that cannot run a given order is refused before anything runs.
    ordered_of(spec)?;
    progress(Progress::Seeded { seed });
    let Some(done) = session::run_session(spec, stop).await? else {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design::testing;

    /// A JUnit report of tests a and b passing and the victim v as given.
    fn junit(v_fails: bool) -> String {
        let v = if v_fails {
            "<testcase classname='tests.test_s' name='test_v'><failure message='boom'/></testcase>"
        } else {
            "<testcase classname='tests.test_s' name='test_v'/>"
        };
        format!(
            "<testsuite name='s' tests='3'><testcase classname='tests.test_s' name='test_a'/><testcase classname='tests.test_s' name='test_b'/>{v}</testsuite>"
        )
    }

    #[test]
    fn a_seeded_run_is_bisected_to_its_polluter_and_confirmed() {
        let dir = tempfile::tempdir().unwrap();
        // The shuffled run fails the victim after a and b; then the ordered
        // runs answer in turn: alone it passes, twice after a and b it
        // fails (deterministic: one run per question), after a (ddmin's
        // first half) it fails, twice with a it fails, twice alone it
        // passes; then one state run (the fake writes no snapshot).
        let script = format!(
            "version = \"pytest 9.2.0\"\n\
             [[run]]\ncell = \"shuffle\"\nexit = 1\noutput = \"Using --randomly-seed={{seed}}\"\njunit = \"{fail}\"\n\
             [[run]]\nargv = \"flakelab-order\"\ntimes = 1\njunit = \"{pass}\"\n\
             [[run]]\nargv = \"flakelab-order\"\ntimes = 5\nexit = 1\njunit = \"{fail}\"\n\
             [[run]]\nargv = \"flakelab-order\"\njunit = \"{pass}\"\n",
            fail = junit(true),
            pass = junit(false),
        );
        let executor = testing::fake(dir.path(), &script);
        let spec = testing::spec(dir.path(), &executor, &["pytest", "tests"], &["shuffle"], 1)
            .only_cells(&["shuffle"])
            .unwrap()
            .with_jobs(1)
            .first_seed(Some(7));
        let how = Bisect {
            root: spec.store.root().to_path_buf(),
            test: None,
            budget: None,
            confirm: 2,
            no_cleaners: false,
        };
        let mut seen = Vec::new();
        let done = testing::run(|stop| {
            let (how, executor, seen) = (&how, &executor, &mut seen);
            async move {
                let mut progress = |p: Progress<'_>| {
                    seen.push(match p {
                        Progress::Seeded { seed } => format!("seed {seed}"),
                        Progress::Start { before, of, .. } => format!("{before} of {of}"),
                        Progress::Ran { runs, seen, .. } => format!("run {runs}: {seen:?}"),
                        Progress::Named { record } => record.lines()[2].clone(),
                        Progress::Repeating { how } => how,
                    })
                };
                let failing = Failing::Seeded(Box::new(spec), 7);
                bisect(failing, how, executor, &stop, &mut progress).await
            }
        })
        .unwrap()
        .expect("the shuffled run ran");
        let record = &done.record;
        assert_eq!(record.victim, "tests.test_s::test_v", "{:?}", record);
        assert_eq!(record.kind, Kind::Polluted);
        assert_eq!(record.polluters, ["tests.test_s::test_a"]);
        assert_eq!((record.order_len, record.predecessors), (3, 2));
        assert_eq!((record.search_runs, record.runs), (4, 9));
        assert_eq!(record.repeat, None);
        assert!(record
            .state_note
            .as_deref()
            .is_some_and(|n| n.contains("no snapshot")));
        let c = record.confirmation.as_ref().expect("confirmed");
        assert_eq!((c.k, c.with, c.alone), (2, 2, 2));
        assert!(record.cleaners.is_empty());
        assert!(record
            .repro
            .as_deref()
            .is_some_and(|r| r.contains("test_v")));
        assert_eq!(record.sessions.len(), 6);
        assert_eq!(done.stopped, None);
        assert_eq!(done.exit_code(), 1);
        assert_eq!(seen[0], "seed 7");
        assert_eq!(seen[1], "2 of 3");
        assert_eq!(seen[2], "run 1: [Pass]");
        assert_eq!(seen[3], "run 3: [Fail, Fail]");
        assert_eq!(seen[5], "polluter: tests.test_s::test_a");
        assert_eq!(seen.last().unwrap(), "run 8: [Pass, Pass]");
        let stored = crate::store::Store::at(&how.root)
            .bisects_of(&record.session)
            .unwrap();
        assert_eq!(stored, std::slice::from_ref(record));
    }
    /// A JUnit report of `order` passing but the victim `v` as given.
    fn report(order: &[&str], v_fails: bool) -> String {
        let mut x = String::from("<testsuite name='s'>");
        for t in order {
            if *t == "v" && v_fails {
                x.push_str("<testcase classname='tests.test_s' name='test_v'><failure message='boom'/></testcase>");
            } else {
                x.push_str(&format!(
                    "<testcase classname='tests.test_s' name='test_{t}'/>"
                ));
            }
        }
        x.push_str("</testsuite>");
        x
    }

    fn id(t: &str) -> String {
        format!("tests.test_s::test_{t}")
    }

    /// A fake script: the shuffled run in `failing` order fails the victim,
    /// then the ordered runs answer in turn as `answers` says (`(times,
    /// victim fails, report order)`).
    fn script(failing: &[&str], answers: &[(u32, bool, &[&str])]) -> String {
        let mut s = format!(
            "version = \"pytest 9.2.0\"\n[[run]]\ncell = \"shuffle\"\nexit = 1\noutput = \"Using --randomly-seed={{seed}}\"\njunit = \"{}\"\n",
            report(failing, true)
        );
        for (times, fails, order) in answers {
            s.push_str(&format!(
                "[[run]]\nargv = \"flakelab-order\"\ntimes = {times}\nexit = {}\njunit = \"{}\"\n",
                u8::from(*fails),
                report(order, *fails)
            ));
        }
        s
    }

    /// Bisects the seeded shuffled run of `dir`'s fake script.
    fn bisect_in(
        dir: &std::path::Path,
        executor: &Executor,
        confirm: u32,
        budget: Option<u32>,
    ) -> Bisected {
        let spec = testing::spec(dir, executor, &["pytest", "tests"], &["shuffle"], 1)
            .only_cells(&["shuffle"])
            .unwrap()
            .with_jobs(1)
            .first_seed(Some(7));
        let how = Bisect {
            root: spec.store.root().to_path_buf(),
            test: Some(id("v")),
            budget,
            confirm,
            no_cleaners: false,
        };
        testing::run(|stop| {
            let (how, executor) = (&how, executor);
            async move {
                let mut progress = |_: Progress<'_>| {};
                let failing = Failing::Seeded(Box::new(spec), 7);
                bisect(failing, how, executor, &stop, &mut progress).await
            }
        })
        .unwrap()
        .expect("the shuffled run ran")
    }

    #[test]
    fn the_progress_line_names_the_victims_outcome() {
        use Seen::*;
        assert_eq!(victim_outcome(&[Fail]), "victim failed 1/1");
        assert_eq!(victim_outcome(&[Pass, Pass]), "victim passed 2/2");
        assert_eq!(
            victim_outcome(&[Fail, Pass, Unmeasured]),
            "victim failed 1/2 (1 run(s) did not measure it)"
        );
    }

    #[test]
    fn an_intermittent_victim_repeats_each_no_until_decided_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let abv: &[&str] = &["a", "b", "v"];
        // Alone it passes; after a and b it fails 2 of 3; alone twice more
        // it passes (3 in a row decide "passes alone" at 95%: (1/3)^3 <
        // 0.05); after a it fails at once; the confirmation: with a 2 of
        // 3, alone passes 3 of 3.
        let answers: &[(u32, bool, &[&str])] = &[
            (1, false, abv),
            (1, true, abv),
            (1, false, abv),
            (1, true, abv),
            (2, false, abv),
            (1, true, abv),
            (1, true, abv),
            (1, false, abv),
            (1, true, abv),
            (3, false, abv),
        ];
        let executor = testing::fake(dir.path(), &script(abv, answers));
        let done = bisect_in(dir.path(), &executor, 3, None);
        let r = &done.record;
        assert_eq!(r.kind, Kind::Polluted, "{r:?}");
        assert_eq!(r.polluters, [id("a")]);
        let repeat = r.repeat.as_ref().expect("intermittent");
        assert_eq!((repeat.shown, repeat.runs, repeat.per_question), (2, 3, 3));
        assert_eq!(r.search_runs, 7);
        let c = r.confirmation.as_ref().unwrap();
        assert_eq!((c.with, c.alone, c.intermittent), (2, 3, true));
        assert!(c.holds());
        let lines = r.lines();
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("repeated: intermittent: the victim failed 2 of 3 runs")),
            "{lines:?}"
        );
        assert!(
            lines.iter().any(|l| l.starts_with("confirmed: yes")),
            "{lines:?}"
        );
    }

    #[test]
    fn a_brittle_victim_broken_by_a_pair_starts_from_the_file_order_and_names_both() {
        let dir = tempfile::tempdir().unwrap();
        let sabv: &[&str] = &["s", "a", "b", "v"];
        let file: &[&str] = &["s", "v", "a", "b"];
        // Alone it fails; in the file order (s, v, a, b) it passes, and
        // after s alone too; after s, a, b it fails; after s, a and after
        // s, b it passes: a and b break it only together. Confirmation:
        // after s it passes, alone it fails.
        let answers: &[(u32, bool, &[&str])] = &[
            (1, true, sabv),
            (1, false, file),
            (1, false, sabv),
            (1, true, sabv),
            (3, false, sabv),
            (1, true, sabv),
        ];
        // The repro names pytest paths: the test file must be there.
        std::fs::create_dir_all(dir.path().join("tests")).unwrap();
        std::fs::write(dir.path().join("tests/test_s.py"), "").unwrap();
        let executor = testing::fake(dir.path(), &script(sabv, answers));
        let done = bisect_in(dir.path(), &executor, 1, None);
        let r = &done.record;
        assert_eq!(r.kind, Kind::Brittle, "{r:?}");
        assert_eq!(r.setters, [id("s")]);
        assert_eq!(r.polluters, [id("a"), id("b")]);
        assert_eq!(r.start.as_deref(), Some("the file order"));
        assert_eq!(r.search_runs, 3);
        let c = r.confirmation.as_ref().unwrap();
        assert_eq!((c.with, c.alone), (1, 1));
        // The repro runs the setter, the pair in place, then the victim.
        let repro = r.repro.as_deref().unwrap();
        let at = |t: &str| {
            repro
                .find(&format!("test_{t}"))
                .unwrap_or_else(|| panic!("{t} not in {repro}"))
        };
        assert!(
            at("s") < at("a") && at("a") < at("b") && at("b") < at("v"),
            "{repro}"
        );
        let lines = r.lines();
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("together: the 2 polluters")),
            "{lines:?}"
        );
        assert_eq!(done.exit_code(), 1);
    }

    #[test]
    fn a_stopped_bisection_resumes_from_its_stored_runs() {
        let dir = tempfile::tempdir().unwrap();
        let abv: &[&str] = &["a", "b", "v"];
        // Alone it passes, after a and b it fails; the budget stops it
        // there. Resumed, those two answers come from the store; after a
        // it fails, the confirmation holds.
        let answers: &[(u32, bool, &[&str])] = &[
            (1, false, abv),
            (1, true, abv),
            (1, true, abv),
            (1, true, abv),
            (1, false, abv),
        ];
        let executor = testing::fake(dir.path(), &script(abv, answers));
        let first = bisect_in(dir.path(), &executor, 1, Some(2));
        assert_eq!(first.record.kind, Kind::Unsettled);
        assert_eq!(first.record.runs, 2);
        // The resumed bisection starts from the stored failing run.
        let root = testing::spec(dir.path(), &executor, &["pytest", "tests"], &["shuffle"], 1)
            .store
            .root()
            .to_path_buf();
        let store = crate::store::Store::at(&root);
        let runs = store.runs_of(&first.record.session).unwrap().0;
        let sessions = store.session(Some(&first.record.session)).unwrap().unwrap();
        let how = Bisect {
            root: store.root().to_path_buf(),
            test: Some(id("v")),
            budget: None,
            confirm: 1,
            no_cleaners: false,
        };
        let failing = Failing::Recorded(Box::new((runs[0].clone(), sessions)));
        let second = testing::run(|stop| {
            let (how, executor) = (&how, &executor);
            async move {
                let mut progress = |_: Progress<'_>| {};
                bisect(failing, how, executor, &stop, &mut progress).await
            }
        })
        .unwrap()
        .unwrap();
        let r = &second.record;
        assert_eq!(r.kind, Kind::Polluted, "{r:?}");
        assert_eq!(r.polluters, [id("a")]);
        assert_eq!(r.resumed_from.as_deref(), Some(first.record.id.as_str()));
        assert_eq!(r.resumed_runs, 2);
        // 2 from the store, after a, the confirmation's 2, the state run.
        assert_eq!(r.runs, 6);
        let stored = store.bisects_of(&r.session).unwrap();
        assert_eq!(stored.len(), 1, "the resumed one replaces the stopped one");
        assert_eq!(stored[0].id, r.id);
    }
}
