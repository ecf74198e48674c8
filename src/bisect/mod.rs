//! `flakelab bisect`'s reasoning, with nothing run here: which test is the
//! victim of a failing run, which tests ran before it (the order the runner
//! really used, read from the run's per-test report), where cleaners may
//! be, what a finished or stopped search says, and the stored result
//! ([`BisectRecord`], `bisects.jsonl`). [`ddmin`] is the search itself;
//! `design::bisect` runs every question it asks as a recorded run.

pub mod ddmin;
pub mod decide;
pub mod files;
pub mod state;

use serde::{Deserialize, Serialize};

use crate::record::RunRecord;

pub use crate::record::schema::BISECT_SCHEMA;

/// The pytest plugin `[ordered] how = "pytest-plugin"` loads, written into
/// the store before the first ordered run.
pub const PYTEST_PLUGIN: &str = include_str!("flakelab_order.py");

/// Stored candidate lists are cut to this many ids (the count is kept).
pub const KEEP_IDS: usize = 50;

/// What the victim turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Passes alone, fails after its polluter(s).
    Polluted,
    /// Fails alone, passes only after its state-setter(s).
    Brittle,
    /// Passed alone and after all its predecessors in their order: the
    /// failure did not come back.
    NotReproduced,
    /// Failed alone, after every other test and in every order where it
    /// was seen to pass (the file order, stored passing runs): not
    /// order-dependent here.
    AlwaysFails,
    /// The search stopped (Ctrl-C, budget) before it named anything.
    Unsettled,
}

impl Kind {
    /// In words, for the report.
    pub fn describe(self) -> &'static str {
        match self {
            Kind::Polluted => "polluted: passes alone, fails after its polluter",
            Kind::Brittle => "brittle: fails alone, passes only after its state-setter",
            Kind::NotReproduced => {
                "not reproduced: it passed alone and after all its predecessors in their order"
            }
            Kind::AlwaysFails => {
                "not order-dependent here: it failed alone, after every other test and in every order tried where it had passed"
            }
            Kind::Unsettled => "unsettled: the search stopped before it named a test",
        }
    }
}

/// The confirmation: the found tests with the victim, and the victim alone,
/// K times each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confirmation {
    /// Runs of each arm.
    pub k: u32,
    /// Runs of the found tests + victim that showed the finding (polluted:
    /// the victim failed; brittle: it passed).
    pub with: u32,
    /// Runs of the victim alone that showed the finding (polluted: passed;
    /// brittle: failed).
    pub alone: u32,
    /// The victim's outcome under its reference order was intermittent:
    /// the finding holds when it showed at least once with the culprits
    /// and K of K alone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub intermittent: bool,
}

impl Confirmation {
    /// K of K in both arms (intermittent: at least once with, K of K alone).
    pub fn holds(&self) -> bool {
        let with = if self.intermittent {
            self.with > 0
        } else {
            self.with == self.k
        };
        self.k > 0 && with && self.alone == self.k
    }
}

/// One bisection, as stored in `bisects.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BisectRecord {
    /// Always [`BISECT_SCHEMA`].
    pub schema: String,
    /// `bisect-<time>-<random>`.
    pub id: String,
    /// When it started (UTC).
    pub started_at: String,
    /// The failing run it started from.
    pub run: String,
    /// That run's session (an evidence block of it shows this result).
    pub session: String,
    /// The victim's test id.
    pub victim: String,
    /// Tests in the failing run's report, in the order they ran.
    pub order_len: usize,
    /// Of those, how many ran before the victim.
    pub predecessors: usize,
    /// What the victim is.
    pub kind: Kind,
    /// The polluters found (polluted; several when only together they fail it).
    #[serde(default)]
    pub polluters: Vec<String>,
    /// The state-setters found (brittle).
    #[serde(default)]
    pub setters: Vec<String>,
    /// Cleaners found: run between polluter and victim, the victim passes.
    #[serde(default)]
    pub cleaners: Vec<String>,
    /// Runs until the polluter (or setter) was named: the victim alone, all
    /// its predecessors, then the search.
    pub search_runs: u32,
    /// Every run of the bisection, confirmation and cleaner search included.
    pub runs: u32,
    /// The k of N confirmation, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<Confirmation>,
    /// The command that reproduces the failure with just those tests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repro: Option<String>,
    /// Why it stopped early (Ctrl-C, budget), and how far it got.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// Where a stopped search had narrowed the culprit to (at most
    /// [`KEEP_IDS`] ids; `left_count` has them all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left: Vec<String>,
    /// How many candidates a stopped search had left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_count: Option<usize>,
    /// The sessions its runs belong to, in order.
    pub sessions: Vec<String>,
    /// Where a brittle victim's search started: the order in which it
    /// passed (a stored run's, the file order, or after every other test).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    /// How each question was repeated when the victim's outcome under its
    /// reference order was intermittent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<decide::Repeat>,
    /// What the culprits changed in process-global state (pytest), or the
    /// files they left (other runners).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub state: Vec<state::StateChange>,
    /// Why the state is not named, or how many changes were left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_note: Option<String>,
    /// The stopped bisection this one resumed (its answers were reused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_from: Option<String>,
    /// Runs answered from the stopped bisection's stored runs.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub resumed_runs: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl BisectRecord {
    /// The tests named: polluters, else setters.
    pub fn culprits(&self) -> &[String] {
        if self.polluters.is_empty() {
            &self.setters
        } else {
            &self.polluters
        }
    }

    /// The result in lines: what the victim is, the named tests (one
    /// `polluter: <id>` line each), cleaners, confirmation, repro.
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![
            format!("victim: {}", self.victim),
            format!("kind: {}", self.kind.describe()),
        ];
        if let Some(start) = &self.start {
            out.push(format!("started from: {start}"));
        }
        out.extend(self.setters.iter().map(|p| format!("state-setter: {p}")));
        out.extend(self.polluters.iter().map(|p| format!("polluter: {p}")));
        if self.polluters.len() > 1 {
            out.push(format!(
                "together: the {} polluters fail it only together (without any one of them it passed)",
                self.polluters.len()
            ));
        }
        if self.kind == Kind::Brittle && !self.polluters.is_empty() {
            out.push("the polluters break it even after its state-setter".into());
        }
        out.extend(self.cleaners.iter().map(|p| format!("cleaner: {p}")));
        out.extend(
            self.state
                .iter()
                .map(|c| format!("state: {}", c.line(&self.victim))),
        );
        if let Some(note) = &self.state_note {
            out.push(format!("state: {note}"));
        }
        if let Some(r) = &self.repeat {
            let what = match self.kind {
                Kind::Brittle => "passed",
                _ => "failed",
            };
            out.push(format!("repeated: {}", r.describe(what)));
        }
        if let Some(from) = &self.resumed_from {
            out.push(format!(
                "resumed: from the stopped bisection {from} ({} run(s) answered from the store)",
                self.resumed_runs
            ));
        }
        if let Some(c) = &self.confirmation {
            let (with, alone) = match self.kind {
                Kind::Brittle => ("passed after the state-setter", "failed alone"),
                _ => ("failed after the polluter", "passed alone"),
            };
            out.push(format!(
                "confirmed: {} ({with} {} of {}; {alone} {} of {})",
                if c.holds() { "yes" } else { "no" },
                c.with,
                c.k,
                c.alone,
                c.k
            ));
        }
        if let Some(stopped) = &self.stopped {
            out.push(format!("stopped: {stopped}"));
        }
        if let Some(n) = self.left_count {
            out.push(format!(
                "left: {n} candidate(s){}",
                if self.left.len() < n {
                    " (first ones kept)"
                } else {
                    ""
                }
            ));
            out.extend(self.left.iter().map(|t| format!("  {t}")));
        }
        out.push(format!(
            "runs: {} to name it, {} in all ({} tests ran before the victim)",
            self.search_runs, self.runs, self.predecessors
        ));
        if let Some(r) = &self.repro {
            out.push(format!("repro: {r}"));
        }
        out
    }
}

impl crate::store::Keyed for BisectRecord {
    fn key(&self) -> std::borrow::Cow<'_, str> {
        std::borrow::Cow::Borrowed(&self.id)
    }
}

impl crate::store::DesignRecord for BisectRecord {
    const FILE: &'static str = crate::store::BISECTS_FILE;
    fn session(&self) -> &str {
        &self.session
    }
}

/// Bisect's records in the store.
impl crate::store::Store {
    /// Appends one bisection's result to `bisects.jsonl` and flushes it.
    pub fn append_bisect(&self, record: &BisectRecord) -> crate::error::Result<()> {
        self.append_record(record)
    }

    /// The bisections that started from a run of `session`, oldest first;
    /// a stopped one that a later one resumed is left out (the later one
    /// holds its runs).
    pub fn bisects_of(&self, session: &str) -> crate::error::Result<Vec<BisectRecord>> {
        let found: Vec<BisectRecord> = self.records_of(session)?;
        let resumed: std::collections::HashSet<String> = found
            .iter()
            .filter_map(|r| r.resumed_from.clone())
            .collect();
        Ok(found
            .into_iter()
            .filter(|r| !resumed.contains(&r.id))
            .collect())
    }

    /// Writes the pytest plugin of ordered runs; returns the directory to
    /// put on `PYTHONPATH`.
    pub fn write_bisect_plugin(&self) -> crate::error::Result<std::path::PathBuf> {
        self.write_order_plugin(
            crate::catalog::recipe::ordered::PYTEST_PLUGIN_MODULE,
            PYTEST_PLUGIN,
        )
    }
}

/// The recipe's ordered selection, or why bisect cannot run a given order
/// with this runner (and what it allows instead).
pub fn can_order(
    recipe: Option<&crate::catalog::recipe::Recipe>,
) -> Result<&crate::catalog::recipe::ordered::Ordered, String> {
    use crate::catalog::recipe::ordered::OrderHow;
    let Some(recipe) = recipe else {
        return Err(
            "bisect needs a runner recipe to run tests in a given order; the command has none"
                .into(),
        );
    };
    match &recipe.ordered {
        Some(o) if matches!(o.how, OrderHow::PytestPlugin | OrderHow::Listed) => Ok(o),
        Some(o) => Err(format!(
            "the {} runner cannot run a given order of tests: {}",
            recipe.name, o.note
        )),
        None => Err(format!(
            "the {} recipe declares no [ordered] selection: bisect cannot run a given order",
            recipe.name
        )),
    }
}

/// The tests of `run` in the order its report lists them (the order the
/// runner used: a JUnit report lists test cases as they ran), each once.
pub fn order_of(run: &RunRecord) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    run.tests
        .iter()
        .filter(|t| seen.insert(t.id.as_str()))
        .map(|t| t.id.clone())
        .collect()
}

/// The victim: `--test` (matched as the ladder matches it) or the one test
/// that failed in the run. `Err` says why it cannot be chosen.
pub fn victim_of(run: &RunRecord, test: Option<&str>) -> Result<String, String> {
    if run.tests.is_empty() {
        return Err(format!(
            "run {} has no per-test outcomes: bisect reads the order from its report",
            run.id
        ));
    }
    if let Some(t) = test {
        return crate::ladder::focused(&run.tests, t)
            .map(|r| r.id.clone())
            .ok_or_else(|| format!("run {} has no test `{t}` in its report", run.id));
    }
    let failed: Vec<&str> = run
        .tests
        .iter()
        .filter(|t| t.failed())
        .map(|t| t.id.as_str())
        .collect();
    match failed.as_slice() {
        [one] => Ok(one.to_string()),
        [] => Err(format!("no test failed in run {}", run.id)),
        many => Err(format!(
            "{} tests failed in run {} ({}, ...): give the victim with --test",
            many.len(),
            run.id,
            many[..many.len().min(3)].join(", ")
        )),
    }
}

/// The tests that ran before `victim` in `order`, in that order.
pub fn predecessors<'a>(order: &'a [String], victim: &str) -> &'a [String] {
    let at = order.iter().position(|t| t == victim).unwrap_or(0);
    &order[..at]
}

/// Where a cleaner may be: every test but the polluters and the victim,
/// and but those that ran between the last polluter and the victim in the
/// failing run (they were there, and the victim still failed).
pub fn cleaner_candidates(order: &[String], victim: &str, polluters: &[String]) -> Vec<String> {
    let at = |t: &str| order.iter().position(|o| o == t);
    let v = at(victim).unwrap_or(order.len());
    let last = polluters.iter().filter_map(|p| at(p)).max().unwrap_or(v);
    order
        .iter()
        .enumerate()
        .filter(|(i, t)| *t != victim && !polluters.contains(t) && !(last < *i && *i < v))
        .map(|(_, t)| t.clone())
        .collect()
}

/// A brittle victim's setters with `others` (polluters, or a subset being
/// tried) as they ran before it in the failing run (`before`): setters
/// that ran there keep their place, the others go first.
pub fn placed(setters: &[String], others: &[String], before: &[String]) -> Vec<String> {
    let at = |t: &String| before.iter().position(|b| b == t);
    let mut front: Vec<String> = setters
        .iter()
        .filter(|s| at(s).is_none())
        .cloned()
        .collect();
    let mut rest: Vec<(usize, String)> = setters
        .iter()
        .chain(others)
        .filter_map(|t| at(t).map(|i| (i, t.clone())))
        .collect();
    rest.sort();
    rest.dedup();
    front.extend(others.iter().filter(|t| at(t).is_none()).cloned());
    front.extend(rest.into_iter().map(|(_, t)| t));
    front
}

/// The ids at `picks` (indices into `items`).
pub fn pick(items: &[String], picks: &[usize]) -> Vec<String> {
    picks
        .iter()
        .filter_map(|&i| items.get(i).cloned())
        .collect()
}

/// How far a stopped search got, in words.
pub fn how_far(why: &str, runs: u32, left: usize, from: usize, what: &str) -> String {
    format!("{why} after {runs} run(s): the {what} is among {left} of {from} test(s)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{TestOutcome, TestRecord};

    fn run(tests: &[(&str, bool)]) -> RunRecord {
        let mut r = crate::record::fixture::failed(crate::record::fixture::run("s", 1, "shuffle"));
        r.perturbations = vec!["shuffle".into()];
        (r.replicate, r.seed) = (1, 7);
        r.tests = tests
            .iter()
            .map(|(id, failed)| TestRecord {
                id: id.to_string(),
                family: None,
                outcome: if *failed {
                    TestOutcome::Fail
                } else {
                    TestOutcome::Pass
                },
                passed_on_rerun: false,
                retries: 0,
                signature: None,
                message: None,
                signature_match: None,
                signature_pattern: None,
            })
            .collect();
        r
    }

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn only_a_runner_that_can_run_a_given_order_is_bisected() {
        let recipes = crate::catalog::recipe::load(None).unwrap();
        let named = |n: &str| recipes.iter().find(|r| r.name == n);
        assert!(can_order(named("pytest")).is_ok());
        let go = can_order(named("go")).unwrap_err();
        assert!(go.contains("source order"), "{go}");
        let rspec = can_order(named("rspec")).unwrap_err();
        assert!(rspec.contains("--bisect"), "{rspec}");
        assert!(can_order(None).unwrap_err().contains("recipe"));
        // A runner that reads the list itself (`how = "listed"`) is bisected.
        let mut listed = named("pytest").unwrap().clone();
        if let Some(o) = listed.ordered.as_mut() {
            o.how = crate::catalog::recipe::ordered::OrderHow::Listed;
        }
        assert!(can_order(Some(&listed)).is_ok());
        // Every recipe says what its runner allows.
        for r in &recipes {
            assert!(r.ordered.is_some(), "{} has no [ordered]", r.name);
        }
    }

    #[test]
    fn the_victim_is_the_one_failure_or_the_named_test() {
        let r = run(&[("t::a", false), ("t::v", true), ("t::b", false)]);
        assert_eq!(victim_of(&r, None).unwrap(), "t::v");
        assert_eq!(victim_of(&r, Some("t::b")).unwrap(), "t::b");
        assert!(victim_of(&r, Some("t::zz"))
            .unwrap_err()
            .contains("no test `t::zz`"));
        let two = run(&[("t::a", true), ("t::v", true)]);
        assert!(victim_of(&two, None).unwrap_err().contains("--test"));
        assert!(victim_of(&run(&[]), None)
            .unwrap_err()
            .contains("no per-test"));
    }

    #[test]
    fn predecessors_keep_the_reported_order() {
        let r = run(&[
            ("t::c", false),
            ("t::a", false),
            ("t::v", true),
            ("t::b", false),
            ("t::a", false),
        ]);
        let order = order_of(&r);
        assert_eq!(order, ids(&["t::c", "t::a", "t::v", "t::b"]));
        assert_eq!(
            predecessors(&order, "t::v"),
            ids(&["t::c", "t::a"]).as_slice()
        );
    }

    #[test]
    fn cleaners_are_not_looked_for_where_the_victim_still_failed() {
        let order = ids(&["a", "p", "x", "y", "v", "c", "d"]);
        assert_eq!(
            cleaner_candidates(&order, "v", &ids(&["p"])),
            ids(&["a", "c", "d"])
        );
    }

    #[test]
    fn setters_keep_their_place_in_the_failing_order_or_go_first() {
        let before = ids(&["a", "s", "b", "x"]);
        assert_eq!(
            placed(&ids(&["s"]), &ids(&["b", "a"]), &before),
            ids(&["a", "s", "b"])
        );
        // A setter that ran after the victim (or elsewhere) goes first.
        assert_eq!(
            placed(&ids(&["z"]), &ids(&["b", "a"]), &before),
            ids(&["z", "a", "b"])
        );
        assert_eq!(placed(&ids(&["z"]), &[], &before), ids(&["z"]));
    }

    #[test]
    fn the_result_names_each_polluter_on_its_own_line() {
        let rec = BisectRecord {
            schema: BISECT_SCHEMA.into(),
            id: "bisect-1".into(),
            started_at: String::new(),
            run: "s.00001".into(),
            session: "s".into(),
            victim: "t::v".into(),
            order_len: 10,
            predecessors: 8,
            kind: Kind::Polluted,
            polluters: ids(&["t::p"]),
            setters: vec![],
            cleaners: ids(&["t::c"]),
            search_runs: 5,
            runs: 12,
            confirmation: Some(Confirmation {
                k: 3,
                with: 3,
                alone: 3,
                intermittent: false,
            }),
            repro: Some("pytest t.py::p t.py::v".into()),
            stopped: None,
            left: vec![],
            left_count: None,
            sessions: vec![],
            start: None,
            repeat: None,
            state: vec![],
            state_note: None,
            resumed_from: None,
            resumed_runs: 0,
        };
        let lines = rec.lines();
        assert!(lines.contains(&"polluter: t::p".to_string()), "{lines:?}");
        assert!(lines.contains(&"cleaner: t::c".to_string()));
        assert!(lines
            .iter()
            .any(|l| l.starts_with("confirmed: yes (failed after the polluter 3 of 3")));
        let back: BisectRecord =
            serde_json::from_str(&serde_json::to_string(&rec).unwrap()).unwrap();
        assert_eq!(back, rec);
    }
}
