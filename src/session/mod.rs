//! The session model: what the user asked for, resolved once (flags, then
//! `FLAKELAB_*`, then `flakelab.toml`, then defaults) into one typed
//! [`SessionSpec`], and every derived session as a method on that value —
//! one cell, another command, replaying a record, copies in working
//! directories, two git trees, part of another session. [`engine`] runs a
//! spec: probes, records, runs its plan through the executor, reads back.
//!
//! `run`, `replay`, `--confirm`, the ladder's rungs, `verify`'s halves, the
//! screen design's confirmations and `demo` all start sessions here.

pub mod engine;
mod finish;
mod job;
#[cfg(test)]
mod job_tests;
mod launch;
pub mod per_test;
mod pythonpath;
mod report_path;
pub mod resolve;
pub mod scrub;
mod shared;

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::catalog::recipe::Recipe;
use crate::catalog::Cell;
use crate::error::{Error, Result};
use crate::exec::{launch::ChildLimits, Executor};
use crate::perturb::{HostFacts, Prepared};
use crate::record::{RunRecord, SessionRung};
use crate::redact::Redaction;
use crate::store::Store;

pub use engine::{run_session, run_session_looking, SessionDone};
pub use resolve::{resolve, subject_dir, Intent};

/// Bytes of a run's output kept from its start.
pub const LOG_HEAD: usize = 1 << 20;
/// Bytes of a run's output kept from its end.
pub const LOG_TAIL: usize = 1 << 20;

/// Where a run's JUnit report comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JunitSource {
    /// The recipe's JUnit arguments, with a fresh harness-owned path per run.
    Recipe,
    /// `{junit}` in the command: a fresh harness-owned path per run.
    Harness,
    /// `--junit PATH` (relative to the subject's directory), `{run}` expanded.
    Path(String),
    /// The recipe's `[per_test]`: the runner's own per-test output, in a
    /// harness-owned file or the run's log.
    Runner,
}

/// What makes a session a replay of one recorded run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Replay {
    /// The replayed run's id.
    pub of: Option<String>,
    /// Its seed, given to every replayed run.
    pub seed: Option<u64>,
    /// A seed for the first replicate only (a confirmation starts with the
    /// seed that flipped its candidate; later replicates get fresh seeds).
    pub first_seed: Option<u64>,
}

/// The session's sham cells and which cell each compares with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shams {
    /// Sham cell name → the mechanism it runs with a null parameter.
    pub of: BTreeMap<String, String>,
    /// Cell name → the name of its mechanism's sham cell.
    pub by_cell: BTreeMap<String, String>,
}

/// This process's shard of a session run as N shards, and the session id
/// every shard shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sharding {
    /// Which shard.
    pub shard: crate::context::shard::Shard,
    /// The shared session id.
    pub session_id: String,
}

/// One session, fully resolved and validated before its first run.
#[derive(Debug, Clone)]
pub struct SessionSpec {
    /// The subject's command.
    pub command: Vec<String>,
    /// The subject's directory.
    pub dir: PathBuf,
    /// The store.
    pub store: Store,
    /// The cells, each with its launch changes and probes.
    pub cells: Vec<(Cell, Prepared)>,
    /// Runs per cell.
    pub runs: u32,
    /// Runs at once.
    pub jobs: usize,
    /// The session seed.
    pub seed: u64,
    /// Confidence level.
    pub confidence: f64,
    /// The `--signature` patterns, in the order given: a failure counts for
    /// the first it matches; one that matches none is an other failure.
    pub signatures: Vec<regex::Regex>,
    /// Per-run limits.
    pub limits: ChildLimits,
    /// Where per-test outcomes come from.
    pub junit: Option<JunitSource>,
    /// The runner's recipe.
    pub recipe: Option<Recipe>,
    /// Why there is no recipe, or how it was chosen.
    pub runner_note: Option<String>,
    /// Matrix cells left out because the runner cannot take them, with why.
    pub left_out: Vec<(String, String)>,
    /// What this host offers.
    pub facts: HostFacts,
    /// Which variables' values are never recorded.
    pub redaction: Redaction,
    /// Processes started together per planned run (a ladder rung's P; 1
    /// otherwise).
    pub copies: usize,
    /// Each copy's own working copy (the subject's directory inside it),
    /// when each process has its own; empty otherwise.
    pub copy_dirs: Vec<PathBuf>,
    /// The ladder rung this session is, if it is one.
    pub rung: Option<SessionRung>,
    /// Each cell's own directory (`verify`: the before and after trees), by
    /// cell index; empty when every cell runs in `dir`.
    pub cell_dirs: Vec<PathBuf>,
    /// The command a named cell runs instead of `command` (a screen
    /// confirmation's arms, each running its own ordered list).
    pub cell_commands: BTreeMap<String, Vec<String>>,
    /// The commands a named cell's runs take in turn, replicate `r` the
    /// `r mod len`-th (an `orders` cell's systematic orders).
    pub cell_orders: BTreeMap<String, Vec<Vec<String>>>,
    /// The session this one is part of (a confirmation of it).
    pub part_of: Option<String>,
    /// What this session replays, if anything.
    pub replay: Replay,
    /// Starts the runs and probes.
    pub executor: Executor,
    /// The sham controls among the cells.
    pub shams: Shams,
    /// Keep harness-owned JUnit reports after they are read (`--keep-junit`).
    pub keep_junit: bool,
    /// The shard of a sharded session this process runs (`run --shard`).
    pub sharding: Option<Sharding>,
    /// The session's id, when it is given rather than made (a screen run
    /// alone for sharded confirmation, a shard's confirmation sessions).
    pub named: Option<String>,
    /// What an earlier session of the same runner already found (the
    /// screen's confirmations): its cells' probes and the runner's version,
    /// used instead of probing and asking again.
    pub known: Option<Known>,
    /// Why this design ran, when flakelab chose it (`--design auto`).
    pub design_chosen: Option<String>,
    /// A `scan --prove` session: what it proves, in words.
    pub scan_prove: Option<String>,
    /// No progress display: the design that runs the session reports its
    /// own progress (`flakelab bisect`'s questions).
    pub quiet: bool,
    /// Every recipe known here (for a derived command's runner).
    recipes: Vec<Recipe>,
}

/// What one session found that a session derived from it may reuse.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Known {
    /// Each cell's record (its probes, whether it applied), by cell name.
    pub cells: BTreeMap<String, crate::record::CellRecord>,
    /// The runner's version line.
    pub runner_version: Option<String>,
}

impl SessionSpec {
    /// The `--junit` path a derived session keeps (None for the recipe's or
    /// `{junit}` paths, which need none).
    pub fn junit_path(&self) -> Option<&str> {
        match &self.junit {
            Some(JunitSource::Path(p)) => Some(p),
            _ => None,
        }
    }

    /// Whether the runner's `[per_test]` output goes to a file (else it is
    /// read from the run's output).
    pub fn per_test_file(&self) -> bool {
        self.recipe
            .as_ref()
            .and_then(|r| r.per_test.as_ref())
            .is_some_and(|p| p.from == crate::catalog::recipe::per_test::ReadFrom::File)
    }

    /// The index of the cell named `name`.
    pub fn cell_index(&self, name: &str) -> Option<usize> {
        self.cells.iter().position(|(c, _)| c.name == name)
    }

    /// Only the cells named `names` (in this spec's order).
    pub fn only_cells(mut self, names: &[&str]) -> Result<SessionSpec> {
        if let Some(missing) = names.iter().find(|n| self.cell_index(n).is_none()) {
            return Err(Error::harness(
                format!("the session has no cell `{missing}` to derive a session from"),
                "report this as a bug",
            ));
        }
        let keep: Vec<bool> = self
            .cells
            .iter()
            .map(|(c, _)| names.contains(&c.name.as_str()))
            .collect();
        let mut i = 0;
        self.cells.retain(|_| {
            i += 1;
            keep[i - 1]
        });
        if !self.cell_dirs.is_empty() {
            let mut i = 0;
            self.cell_dirs.retain(|_| {
                i += 1;
                keep[i - 1]
            });
        }
        let kept = |n: &String| names.contains(&n.as_str());
        self.shams.of.retain(|sham, _| kept(sham));
        self.shams
            .by_cell
            .retain(|cell, sham| kept(cell) && kept(sham));
        Ok(self)
    }

    /// The same session as one shard of a sharded session (None: whole).
    pub fn sharded(mut self, sharding: Option<Sharding>) -> SessionSpec {
        self.sharding = sharding;
        self
    }

    /// The same session under the id `id` instead of a new one.
    pub fn named(mut self, id: &str) -> SessionSpec {
        self.named = Some(id.to_string());
        self
    }

    /// The same session reusing what `session` found: its cells' probes
    /// and the runner's version (a confirmation of the screen `session`).
    pub fn knowing(mut self, session: &crate::record::SessionRecord) -> SessionSpec {
        self.known = Some(Known {
            cells: (session.cells.iter())
                .map(|c| (c.name.clone(), c.clone()))
                .collect(),
            runner_version: session.runner_version.clone(),
        });
        self
    }

    /// Every replicate of every cell under `seed` (a shuffle candidate's
    /// flipping order, replayed on each of its confirmation runs).
    pub fn every_seed(mut self, seed: Option<u64>) -> SessionSpec {
        self.replay.seed = seed;
        self
    }

    /// The same session with `runs` runs per cell.
    pub fn with_runs(mut self, runs: u32) -> SessionSpec {
        self.runs = runs;
        self
    }

    /// The same session under another seed.
    pub fn with_seed(mut self, seed: u64) -> SessionSpec {
        self.seed = seed;
        self
    }

    /// The same session, `jobs` runs at once.
    pub fn with_jobs(mut self, jobs: usize) -> SessionSpec {
        self.jobs = jobs.max(1);
        self
    }

    /// The same session without its progress display.
    pub fn quiet(mut self) -> SessionSpec {
        self.quiet = true;
        self
    }

    /// Part of the session `id` (a confirmation of it): `flakelab report`
    /// without an id skips it and shows `id` with it.
    pub fn part_of(mut self, id: &str) -> SessionSpec {
        self.part_of = Some(id.to_string());
        self
    }

    /// A `scan --prove` session proving `what` (in words).
    pub fn proving(mut self, what: String) -> SessionSpec {
        self.scan_prove = Some(what);
        self
    }

    /// A ladder rung.
    pub fn with_rung(mut self, rung: SessionRung) -> SessionSpec {
        self.rung = Some(rung);
        self
    }

    /// The first replicate of every cell under `seed` (a screen candidate's
    /// flipping seed); later replicates keep their fresh seeds.
    pub fn first_seed(mut self, seed: Option<u64>) -> SessionSpec {
        self.replay.first_seed = seed;
        self
    }

    /// The same cells running another command of the same runner (the
    /// focused test selected, say): recipe and preparation are kept.
    pub fn with_command(mut self, command: Vec<String>) -> SessionSpec {
        self.command = command;
        self
    }

    /// The same session with cell `name` running `command` instead.
    pub fn with_cell_command(mut self, name: &str, command: Vec<String>) -> SessionSpec {
        self.cell_commands.insert(name.to_string(), command);
        self
    }

    /// The same session with cell `name`'s runs taking `commands` in turn.
    pub fn with_cell_orders(mut self, name: &str, commands: Vec<Vec<String>>) -> SessionSpec {
        self.cell_orders.insert(name.to_string(), commands);
        self
    }

    /// The same cells running another command whose runner is detected
    /// anew (the project's lane): the cells are prepared for that runner.
    pub fn with_own_runner(mut self, command: Vec<String>) -> Result<SessionSpec> {
        let (recipe, note) = resolve::runner(&self.recipes, None, &command)?;
        self.command = command;
        self.recipe = recipe;
        self.runner_note = note;
        self.facts.unsupported = self
            .recipe
            .as_ref()
            .map(|r| r.unsupported.clone())
            .unwrap_or_default();
        let cells: Vec<Cell> = self.cells.iter().map(|(c, _)| c.clone()).collect();
        self.cells = cells
            .into_iter()
            .map(|c| {
                let p = crate::perturb::prepare(
                    &c,
                    &self.facts,
                    self.recipe.as_ref(),
                    &self.redaction,
                )?;
                Ok((c, p))
            })
            .collect::<Result<_>>()?;
        if matches!(
            self.junit,
            None | Some(JunitSource::Recipe | JunitSource::Runner)
        ) {
            self.junit = per_test::default_source(
                self.recipe.as_ref(),
                &self.command,
                &self.dir,
                &self.executor,
            );
        }
        Ok(self)
    }

    /// `copies` processes started together per planned run, each in its own
    /// directory of `dirs` when given (a ladder rung).
    pub fn in_copies(mut self, copies: usize, dirs: Vec<PathBuf>) -> SessionSpec {
        self.copies = copies.max(1);
        self.jobs = self.copies;
        self.copy_dirs = dirs;
        self
    }

    /// Every cell twice, once per tree (`label:cell`, run in that tree's
    /// directory), interleaved in one session (`verify`).
    pub fn on_trees(mut self, trees: &[(&str, PathBuf)]) -> SessionSpec {
        let mut cells = Vec::new();
        let mut dirs = Vec::new();
        for (label, dir) in trees {
            for (cell, prepared) in &self.cells {
                cells.push((
                    Cell {
                        name: format!("{label}:{}", cell.name),
                        perturbations: cell.perturbations.clone(),
                    },
                    prepared.clone(),
                ));
                dirs.push(dir.clone());
            }
        }
        self.cells = cells;
        self.cell_dirs = dirs;
        self
    }

    /// A replay of `run` (a run of this session's cells), `times` times,
    /// alone, in the run's own directory when it still exists: its cell,
    /// its seed on every replicate.
    pub fn replaying(self, run: &RunRecord, times: u32) -> Result<SessionSpec> {
        let fallback = self.dir.clone();
        // A spec rebuilt from the record has the run's cell alone, named by
        // its perturbations.
        let cell = match (self.cell_index(&run.cell), self.cells.as_slice()) {
            (None, [(only, _)]) => only.name.clone(),
            _ => run.cell.clone(),
        };
        let mut spec = self.only_cells(&[cell.as_str()])?;
        spec.runs = times;
        spec.jobs = 1;
        spec.copies = 1;
        spec.copy_dirs = Vec::new();
        spec.cell_dirs = Vec::new();
        spec.dir = if run.cwd.is_dir() {
            run.cwd.clone()
        } else {
            fallback
        };
        spec.replay = Replay {
            of: Some(run.id.clone()),
            seed: Some(run.seed),
            first_seed: None,
        };
        Ok(spec)
    }
}

impl SessionSpec {
    /// Every run under `run`'s seed, recorded as a replay of it, keeping
    /// this session's topology (a ladder rung re-run as a whole).
    pub fn under_seed_of(mut self, run: &RunRecord) -> SessionSpec {
        self.replay = Replay {
            of: Some(run.id.clone()),
            seed: Some(run.seed),
            first_seed: None,
        };
        self
    }
}

#[cfg(test)]
mod tests {
    use super::resolve::{Intent, Layers};
    use super::*;

    fn spec(dir: &std::path::Path, cells: &[&str], layers: &Layers) -> SessionSpec {
        let intent = Intent {
            command: vec!["pytest".into(), "tests".into()],
            dir: Some(dir.to_path_buf()),
            cells: cells.iter().map(|c| c.to_string()).collect(),
            seed: Some(1),
            ..Intent::default()
        };
        resolve(intent, layers, &Executor::Real).unwrap()
    }

    fn names(s: &SessionSpec) -> Vec<&str> {
        s.cells.iter().map(|(c, _)| c.name.as_str()).collect()
    }

    #[test]
    fn layers_are_explicit_and_a_derived_session_keeps_what_was_resolved() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("flakelab.toml"),
            "[run]\ntimeout = \"7s\"\nruns = 4\n",
        )
        .unwrap();
        // The file's layer alone (the process's variables are not read here).
        let file = Layers {
            env: None,
            file: crate::context::config::load(dir.path()).unwrap(),
            matrix: true,
        };
        let layered = spec(dir.path(), &["tz=UTC"], &file);
        assert_eq!(layered.runs, 4);
        assert_eq!(
            layered.limits.timeout,
            Some(std::time::Duration::from_secs(7))
        );
        assert_eq!(
            layered.recipe.as_ref().map(|r| r.name.as_str()),
            Some("pytest")
        );
        let exact = spec(dir.path(), &["tz=UTC"], &Layers::none());
        assert_eq!((exact.runs, exact.limits.timeout), (20, None));
        // A derived session never resolves again: the file's timeout stays.
        let derived = layered
            .clone()
            .only_cells(&["tz=UTC"])
            .unwrap()
            .with_runs(2)
            .with_command(vec!["pytest".into(), "tests/test_a.py::test_b".into()])
            .part_of("s1");
        assert_eq!(names(&derived), ["tz=UTC"]);
        assert_eq!(
            derived.limits.timeout,
            Some(std::time::Duration::from_secs(7))
        );
        assert_eq!((derived.runs, derived.part_of.as_deref()), (2, Some("s1")));
        assert!(spec(dir.path(), &[], &Layers::none())
            .only_cells(&["nope"])
            .is_err());
    }

    #[test]
    fn trees_double_the_cells_and_only_cells_keeps_their_directories() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let s = spec(dir.path(), &["tz=UTC"], &Layers::none())
            .on_trees(&[("before", a.clone()), ("after", b.clone())]);
        assert_eq!(
            names(&s),
            [
                "before:baseline",
                "before:tz=UTC",
                "after:baseline",
                "after:tz=UTC"
            ]
        );
        assert_eq!(s.cell_dirs, [a.clone(), a.clone(), b.clone(), b.clone()]);
        let one = s.only_cells(&["after:tz=UTC", "before:baseline"]).unwrap();
        assert_eq!(names(&one), ["before:baseline", "after:tz=UTC"]);
        assert_eq!(one.cell_dirs, [a, b]);
    }

    #[test]
    fn a_replay_is_one_cell_alone_under_the_runs_seed() {
        let dir = tempfile::tempdir().unwrap();
        let s = spec(dir.path(), &["tz=UTC", "env=A=1"], &Layers::none()).in_copies(3, Vec::new());
        assert_eq!((s.copies, s.jobs), (3, 3));
        let mut run =
            crate::record::fixture::failed(crate::record::fixture::run("s", 4, "env=A=1"));
        run = crate::record::fixture::in_dir(run, "/nonexistent");
        run.perturbations = vec!["env=A=1".into()];
        (run.replicate, run.seed) = (1, 77);
        let r = s.clone().replaying(&run, 5).unwrap();
        assert_eq!(names(&r), ["env=A=1"]);
        assert_eq!((r.runs, r.jobs, r.copies), (5, 1, 1));
        assert_eq!(r.replay.of.as_deref(), Some("s.00004"));
        assert_eq!(r.replay.seed, Some(77));
        // Its directory is gone: the subject's own stands in.
        assert_eq!(r.dir, s.dir);
        // A spec rebuilt from the record holds the one cell, by another name.
        run.cell = "clock-ahead".into();
        let only = spec(dir.path(), &["env=A=1"], &Layers::none())
            .only_cells(&["env=A=1"])
            .unwrap();
        assert_eq!(names(&only.replaying(&run, 1).unwrap()), ["env=A=1"]);
    }

    #[test]
    fn a_lane_gets_its_own_runner_and_its_cells_are_prepared_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let s = spec(dir.path(), &["tz=UTC"], &Layers::none());
        assert_eq!(s.junit, Some(JunitSource::Recipe));
        let lane = s
            .with_own_runner(vec!["sh".into(), "-c".into(), "true".into()])
            .unwrap();
        assert_eq!(lane.recipe, None);
        assert_eq!(lane.junit, None, "no recipe, so no recipe report");
        assert_eq!(names(&lane), ["baseline", "tz=UTC"]);
    }
}
