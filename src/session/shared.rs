//! What every run of one cell (in one working copy) shares, built at the
//! cell's first run and reused for the others: its recorded perturbations
//! and, when its command holds no value of its own run (no report path, no
//! shuffle seed), the command, the environment it starts with and as
//! recorded (credential-like values redacted), and its repro line with
//! holes for the run's id and seed. A run fills in only those two values.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use super::launch::{identity_env, launch_for, RUN_ID_VAR, SEED_VAR};
use super::SessionSpec;
use crate::exec::inspect::Watch;
use crate::perturb::Prepared;
use crate::record::EnvDelta;
use crate::redact::Redaction;
use crate::repro;

/// Variables with the run's own values (`FLAKELAB_RUN_ID`,
/// `FLAKELAB_SEED`) left to fill in per run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RunVars {
    set: BTreeMap<String, String>,
    /// Whether `FLAKELAB_RUN_ID` holds the run's id: not when the cell
    /// sets it itself, nor when it is recorded redacted.
    id: bool,
    /// The same for `FLAKELAB_SEED` and the run's seed.
    seed: bool,
}

impl RunVars {
    /// `set` with the run's values going in wherever `keeps(name)` says
    /// the variable keeps the value it has in every run's identity.
    pub(super) fn new(set: BTreeMap<String, String>, keeps: impl Fn(&str) -> bool) -> RunVars {
        RunVars {
            id: set.contains_key(RUN_ID_VAR) && keeps(RUN_ID_VAR),
            seed: set.contains_key(SEED_VAR) && keeps(SEED_VAR),
            set,
        }
    }

    /// As recorded: credential-like values redacted, and no run's value
    /// goes where a redacted one stands.
    pub(super) fn redacted(&self, redaction: &Redaction) -> RunVars {
        RunVars {
            set: redaction.env(&self.set),
            id: self.id && !redaction.is_secret(RUN_ID_VAR),
            seed: self.seed && !redaction.is_secret(SEED_VAR),
        }
    }

    /// The variables of the run `id` with `seed`.
    pub(super) fn of_run(&self, id: &str, seed: &str) -> BTreeMap<String, String> {
        let mut set = self.set.clone();
        for (name, value, ours) in [(RUN_ID_VAR, id, self.id), (SEED_VAR, seed, self.seed)] {
            if let Some(v) = set.get_mut(name).filter(|_| ours) {
                value.clone_into(v);
            }
        }
        set
    }

    /// The names whose values are the run's, in the order
    /// [`RunVars::values`] gives them.
    fn holes(&self) -> Vec<&'static str> {
        [(RUN_ID_VAR, self.id), (SEED_VAR, self.seed)]
            .into_iter()
            .filter_map(|(name, ours)| ours.then_some(name))
            .collect()
    }

    /// The run's values for [`RunVars::holes`].
    fn values<'v>(&self, id: &'v str, seed: &'v str) -> Vec<&'v str> {
        [(id, self.id), (seed, self.seed)]
            .into_iter()
            .filter_map(|(value, ours)| ours.then_some(value))
            .collect()
    }
}

/// What every run of a cell whose command holds no value of its own shares.
#[derive(Debug, Clone)]
pub(super) struct Fixed {
    /// The command, as the recipe builds it.
    pub(super) command: Vec<String>,
    /// What to inspect in its processes.
    pub(super) watch: Option<Watch>,
    env: RunVars,
    recorded: RunVars,
    unset: Vec<String>,
    repro: repro::Shape,
}

impl Fixed {
    /// The shared parts of a run of `cell` in `dir` with `command` and the
    /// recipe's variables `extra`.
    pub(super) fn new(
        settings: &SessionSpec,
        prepared: &Prepared,
        cell: &str,
        command: Vec<String>,
        extra: &BTreeMap<String, String>,
        dir: &Path,
    ) -> Fixed {
        // The identity's run values are placeholders: every run puts its own
        // in their place, unless the cell sets the variable itself.
        let launch = launch_for(
            settings,
            prepared,
            cell,
            command.clone(),
            identity_env("", 0, cell),
            extra,
        );
        let env = RunVars::new(launch.env_set, |name| {
            !prepared.set.contains_key(name) && !extra.contains_key(name)
        });
        let recorded = env.redacted(&settings.redaction);
        let delta = EnvDelta {
            set: recorded.set.clone(),
            unset: launch.env_unset,
        };
        let repro = repro::Shape::new(
            dir,
            &delta,
            &prepared.repro_argv(&command),
            &recorded.holes(),
        );
        Fixed {
            watch: prepared.watch(&command),
            command,
            env,
            recorded,
            unset: delta.unset,
            repro,
        }
    }

    /// The variables the run `id` with `seed` starts with.
    pub(super) fn env(&self, id: &str, seed: &str) -> BTreeMap<String, String> {
        self.env.of_run(id, seed)
    }

    /// Its environment delta as recorded.
    pub(super) fn recorded_env(&self, id: &str, seed: &str) -> EnvDelta {
        EnvDelta {
            set: self.recorded.of_run(id, seed),
            unset: self.unset.clone(),
        }
    }

    /// Its repro line.
    pub(super) fn repro(&self, id: &str, seed: &str) -> String {
        self.repro.fill(&self.recorded.values(id, seed))
    }
}

/// What one cell in one working copy shares across its runs.
#[derive(Debug, Clone)]
pub(super) struct Shared {
    /// The cell's perturbations as recorded.
    pub(super) perturbations: Vec<String>,
    /// The command and what follows from it, once a run whose command holds
    /// no value of its own has built them.
    pub(super) fixed: Option<Fixed>,
}

/// The shared parts of a session's runs, by cell and working copy, and its
/// log directory.
#[derive(Debug, Default)]
pub(super) struct Cache {
    cells: HashMap<(usize, usize), Shared>,
    /// The session's log directory, absolute and relative to the store.
    logs: Option<(PathBuf, PathBuf)>,
    /// What was at each pending run's report path of the user's just
    /// before it started (`report_path`), by run index.
    reports: HashMap<usize, Option<super::report_path::Noted>>,
    /// Off: every run builds everything anew (to check the reuse against).
    #[cfg(test)]
    off: bool,
}

impl Cache {
    /// A cache that keeps nothing: every run builds everything anew.
    #[cfg(test)]
    pub(super) fn off() -> Cache {
        Cache {
            off: true,
            ..Cache::default()
        }
    }

    /// What cell `cell` in copy `copy` shares (its recorded perturbations
    /// from `perturbations` at its first run).
    pub(super) fn cell(
        &mut self,
        cell: usize,
        copy: usize,
        perturbations: impl FnOnce() -> Vec<String>,
    ) -> &mut Shared {
        #[cfg(test)]
        if self.off {
            self.cells.clear();
        }
        self.cells.entry((cell, copy)).or_insert_with(|| Shared {
            perturbations: perturbations(),
            fixed: None,
        })
    }

    /// Notes what is at run `index`'s report path of the user's before it starts.
    pub(super) fn note_report(&mut self, index: usize, path: &std::path::Path) {
        self.reports.insert(index, super::report_path::note(path));
    }

    /// What was at run `index`'s report path of the user's before it
    /// started (`None`: nothing, or not such a path); forgotten once asked.
    pub(super) fn report_before(&mut self, index: usize) -> Option<super::report_path::Noted> {
        self.reports.remove(&index).flatten()
    }

    /// The log of run `index` of `session`: its path, and that path
    /// relative to the store.
    pub(super) fn log(
        &mut self,
        store: &crate::store::Store,
        session: &str,
        index: usize,
    ) -> crate::error::Result<(PathBuf, PathBuf)> {
        #[cfg(test)]
        if self.off {
            self.logs = None;
        }
        let (dir, relative) = match &self.logs {
            Some(logs) => logs,
            None => {
                let dir = store.log_dir(session)?;
                let relative = store.relative(&dir);
                self.logs.insert((dir, relative))
            }
        };
        let name = crate::store::Store::log_name(index);
        Ok((dir.join(&name), relative.join(name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity() -> BTreeMap<String, String> {
        identity_env("", 0, "baseline")
    }

    #[test]
    fn each_run_gets_its_own_id_and_seed_from_one_shape() {
        let vars = RunVars::new(identity(), |_| true);
        let first = vars.of_run("s.00000", "17");
        let second = vars.of_run("s.00001", "18");
        assert_eq!(first, identity_env("s.00000", 17, "baseline"));
        assert_eq!(second, identity_env("s.00001", 18, "baseline"));
        assert_ne!(first, second);
        assert_eq!(vars.holes(), [RUN_ID_VAR, SEED_VAR]);
        assert_eq!(vars.values("s.00000", "17"), ["s.00000", "17"]);
    }

    #[test]
    fn a_value_the_cell_sets_is_kept_in_every_run() {
        let mut set = identity();
        set.insert(SEED_VAR.into(), "42".into());
        let vars = RunVars::new(set, |name| name != SEED_VAR);
        let run = vars.of_run("s.00003", "17");
        assert_eq!(run[SEED_VAR], "42");
        assert_eq!(run[RUN_ID_VAR], "s.00003");
        assert_eq!(vars.holes(), [RUN_ID_VAR]);
        assert_eq!(vars.values("s.00003", "17"), ["s.00003"]);
    }

    #[test]
    fn a_redacted_run_value_stays_redacted() {
        let vars = RunVars::new(identity(), |_| true);
        let recorded = vars.redacted(&Redaction::new(&["SEED".to_string()]));
        let run = recorded.of_run("s.00001", "17");
        assert_eq!(run[SEED_VAR], crate::redact::REDACTED);
        assert_eq!(run[RUN_ID_VAR], "s.00001");
        assert_eq!(run["FLAKELAB_CELL"], "baseline");
        // Unredacted, the run's values go in as they are.
        let plain = vars.redacted(&Redaction::default());
        assert_eq!(plain.of_run("s.00001", "17")[SEED_VAR], "17");
    }

    #[test]
    fn no_hole_for_a_variable_that_is_not_set() {
        let vars = RunVars::new(BTreeMap::new(), |_| true);
        assert!(vars.holes().is_empty());
        assert!(vars.of_run("s.00001", "17").is_empty());
    }
}
