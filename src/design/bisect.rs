//! Bisect's design: from a failing run (or one recorded first under a
//! seed), derives the session of ordered runs from its record (the same
//! cell without the shuffle, the recipe's `[ordered]` selection), and
//! answers each question of `crate::bisect::ddmin` with one recorded run;
//! returns the stored record. The reasoning is in `crate::bisect`.

use std::path::PathBuf;

use tokio::sync::watch;

use crate::bisect::ddmin::{Ddmin, Next};
use crate::bisect::{self, BisectRecord, Confirmation, Kind, BISECT_SCHEMA};
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
    /// The culprit is named (the record's third line says who).
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
/// its own (part of the bisection), counted against the budget.
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

/// Bisects from `failing`: the search, its confirmation and cleaners, the
/// stored record; `None` when stopped before a failing run was recorded.
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
    // The ordered runs: the failing run's cell without its shuffle.
    let mut unshuffled = run.clone();
    unshuffled
        .perturbations
        .retain(|p| !matches!(PerturbKind::parse(p), Ok(Some(PerturbKind::Shuffle))));
    let mut spec = session::resolve::recorded(&recorded, &unshuffled, root, executor)?;
    let ordered = ordered_of(&spec)?;
    if ordered.how == OrderHow::PytestPlugin {
        let plugin_dir = spec.store.write_bisect_plugin()?;
        spec.put_on_pythonpath(&plugin_dir);
    }
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
    bisect_steps(&mut steps, &mut record, &order, &before, how).await?;
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
    Ok(Some(Bisected {
        record,
        stopped: steps.stopped,
        redaction: steps.spec.redaction.clone(),
    }))
}

const VICTIM_HINT: &str = "name the victim with --test ID (as `flakelab report` lists it)";

/// The search, classification, confirmation and cleaners, filling `record`.
async fn bisect_steps(
    steps: &mut Steps<'_>,
    record: &mut BisectRecord,
    order: &[String],
    before: &[String],
    how: &Bisect,
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
    (steps.progress)(Progress::Named { record });
    // k of K: the finding with the victim, and the victim alone.
    let other = if want == Seen::Fail {
        Seen::Pass
    } else {
        Seen::Fail
    };
    if let Some(with) = steps.ask(&found, how.confirm).await? {
        if let Some(alone) = steps.ask(&[], how.confirm).await? {
            record.confirmation = Some(Confirmation {
                k: how.confirm,
                with: with.iter().filter(|s| **s == want).count() as u32,
                alone: alone.iter().filter(|s| **s == other).count() as u32,
            });
        }
    }
    if record.kind == Kind::Polluted && !how.no_cleaners {
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
pub(crate) fn ordered_of(spec: &SessionSpec) -> Result<Ordered> {
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
        // runs answer in turn: alone it passes, after a and b it fails,
        // after a (ddmin's first half) it fails, twice with a it fails,
        // twice alone it passes.
        let script = format!(
            "version = \"pytest 9.2.0\"\n\
             [[run]]\ncell = \"shuffle\"\nexit = 1\noutput = \"Using --randomly-seed={{seed}}\"\njunit = \"{fail}\"\n\
             [[run]]\nargv = \"flakelab-order\"\ntimes = 1\njunit = \"{pass}\"\n\
             [[run]]\nargv = \"flakelab-order\"\ntimes = 4\nexit = 1\njunit = \"{fail}\"\n\
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
        assert_eq!((record.search_runs, record.runs), (3, 7));
        let c = record.confirmation.as_ref().expect("confirmed");
        assert_eq!((c.k, c.with, c.alone), (2, 2, 2));
        assert!(record.cleaners.is_empty());
        assert!(record
            .repro
            .as_deref()
            .is_some_and(|r| r.contains("test_v")));
        assert_eq!(record.sessions.len(), 5);
        assert_eq!(done.stopped, None);
        assert_eq!(done.exit_code(), 1);
        assert_eq!(seen[0], "seed 7");
        assert_eq!(seen[1], "2 of 3");
        assert_eq!(seen[2], "run 1: [Pass]");
        assert_eq!(seen[5], "polluter: tests.test_s::test_a");
        assert_eq!(seen.last().unwrap(), "run 7: [Pass, Pass]");
        let stored = crate::store::Store::at(&how.root)
            .bisects_of(&record.session)
            .unwrap();
        assert_eq!(stored, std::slice::from_ref(record));
    }
}
