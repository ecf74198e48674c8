//! Collisions as candidates: under a concurrency cell (workers) two tests
//! that contest one resource fail in turn — whichever binds the port, takes
//! the path or the lock second fails — so each test's own count is split
//! between them and neither may reach a verdict. The screen's candidates
//! of such a cell whose failures there name the same kind of contested
//! resource (a port, a path, a lock) become one candidate with its
//! partners, counted as one: a run fails when any of them failed in it.

use std::collections::BTreeMap;

use crate::record::RunRecord;
use crate::screen::Candidate;

/// What the failures of `test` in `cell` among `runs` name that separate
/// processes contest (the first failure that names one).
fn contests(runs: &[RunRecord], cell: &str, test: &str) -> Option<&'static str> {
    (runs.iter().filter(|r| r.cell == cell))
        .flat_map(|r| r.tests.iter().filter(|t| t.id == test && t.failed()))
        .find_map(|t| {
            let text = [t.message.as_deref(), t.signature.as_deref()];
            text.into_iter()
                .flatten()
                .find_map(crate::perturb::kind::contested)
        })
}

/// Folds the candidates of each concurrency cell (`concurrent`) that fail
/// more there than at baseline and whose failures there name the same kind
/// of contested resource into one candidate with its partners: its test
/// the one the screen saw fail most (then by id), its counts the group's
/// (`super::rules::arm`), its flip the first screen run in which any of
/// them failed. It takes the place of its first member; a kind named by
/// one test alone leaves that test's candidate as it was, and so does a
/// group whose counts, taken together, do not differ.
pub(crate) fn fold_collisions(
    runs: &[RunRecord],
    candidates: Vec<Candidate>,
    concurrent: &dyn Fn(&str) -> bool,
) -> Vec<Candidate> {
    // (cell, resource) → positions of its members.
    let mut groups: BTreeMap<(String, &'static str), Vec<usize>> = BTreeMap::new();
    for (i, c) in candidates.iter().enumerate() {
        if !concurrent(&c.cell) || !c.fails_more() || !c.partners.is_empty() {
            continue;
        }
        if let Some(what) = contests(runs, &c.cell, &c.test) {
            groups.entry((c.cell.clone(), what)).or_default().push(i);
        }
    }
    let mut folded: BTreeMap<usize, Candidate> = BTreeMap::new();
    let mut gone: Vec<usize> = Vec::new();
    for ((cell, what), members) in groups.into_iter().filter(|(_, m)| m.len() > 1) {
        let mut tests: Vec<&Candidate> = members.iter().map(|&i| &candidates[i]).collect();
        tests.sort_by(|a, b| {
            (b.screen_cell.0)
                .cmp(&a.screen_cell.0)
                .then(a.test.cmp(&b.test))
        });
        let ids: Vec<&str> = tests.iter().map(|c| c.test.as_str()).collect();
        let screen_cell = super::rules::arm(runs, &cell, &ids);
        let screen_baseline = super::rules::arm(runs, "baseline", &ids);
        let ((k, n), (bk, bn)) = (screen_cell, screen_baseline);
        if n == 0 || bn == 0 || k * bn <= bk * n {
            continue;
        }
        let flip = runs.iter().find(|r| {
            r.cell == cell && (r.tests.iter()).any(|t| ids.contains(&t.id.as_str()) && t.failed())
        });
        folded.insert(
            members[0],
            Candidate {
                cell: cell.clone(),
                test: ids[0].to_string(),
                screen_cell,
                screen_baseline,
                flip_seed: flip.map(|r| r.seed),
                flip_run: flip.map(|r| r.id.clone()),
                partners: ids[1..].iter().map(|s| s.to_string()).collect(),
                contests: Some(what.to_string()),
            },
        );
        gone.extend(&members[1..]);
    }
    (candidates.into_iter().enumerate())
        .filter(|(i, _)| !gone.contains(i))
        .map(|(i, c)| folded.remove(&i).unwrap_or(c))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{fixture, TestOutcome, TestRecord};

    fn test(id: &str, fails: Option<&str>) -> TestRecord {
        TestRecord {
            id: id.into(),
            family: None,
            outcome: match fails {
                Some(_) => TestOutcome::Fail,
                None => TestOutcome::Pass,
            },
            passed_on_rerun: false,
            retries: 0,
            signature: None,
            message: fails.map(String::from),
            signature_match: None,
            signature_pattern: None,
        }
    }

    /// A run of `cell` with `seed` whose failing tests say `message`.
    fn run(cell: &str, seed: u64, failing: &[(&str, &str)]) -> RunRecord {
        let mut r = fixture::run("s", seed as usize, cell);
        r.id = format!("{cell}-{seed}");
        r.seed = seed;
        r.tests = ["t::a", "t::b", "t::brittle", "t::ok"]
            .iter()
            .map(|id| {
                let fails = failing.iter().find(|(t, _)| t == id).map(|(_, m)| *m);
                test(id, fails)
            })
            .collect();
        r
    }

    const PORT: &str = "OSError: [Errno 98] Address already in use";

    #[test]
    fn tests_failing_in_turn_on_one_port_under_workers_are_one_candidate() {
        let runs = vec![
            run("baseline", 1, &[]),
            run("baseline", 2, &[]),
            run(
                "workers=2",
                3,
                &[("t::a", PORT), ("t::brittle", "expected 3")],
            ),
            run("workers=2", 4, &[("t::b", PORT)]),
            run("tz=UTC", 5, &[("t::b", "Address already in use")]),
        ];
        let cells = ["baseline", "workers=2", "tz=UTC"].map(String::from);
        let found = super::super::rules::candidates(&runs, &cells);
        assert_eq!(found.len(), 4, "{found:?}");
        let folded = fold_collisions(&runs, found, &|c| c == "workers=2");
        let tests: Vec<(&str, &str, Vec<String>)> = (folded.iter())
            .map(|c| (c.cell.as_str(), c.test.as_str(), c.partners.clone()))
            .collect();
        // One collision (a with its partner b, 2 of 2 together), the
        // brittle test on its own, and tz's b untouched: tz is no
        // concurrency cell.
        assert_eq!(
            tests,
            [
                ("workers=2", "t::a", vec!["t::b".to_string()]),
                ("workers=2", "t::brittle", vec![]),
                ("tz=UTC", "t::b", vec![]),
            ]
        );
        let c = &folded[0];
        assert_eq!((c.screen_cell, c.screen_baseline), ((2, 2), (0, 2)));
        assert_eq!(c.contests.as_deref(), Some("a port"));
        assert_eq!(
            (c.flip_seed, c.flip_run.as_deref()),
            (Some(3), Some("workers=2-3"))
        );
        assert_eq!(c.tests(), ["t::a", "t::b"]);
    }

    #[test]
    fn one_test_naming_a_port_or_two_naming_different_kinds_stay_apart() {
        let runs = vec![
            run("baseline", 1, &[]),
            run("workers=2", 3, &[("t::a", PORT)]),
            run("workers=2", 4, &[("t::b", "database is locked")]),
        ];
        let cells = ["baseline", "workers=2"].map(String::from);
        let found = super::super::rules::candidates(&runs, &cells);
        let folded = fold_collisions(&runs, found.clone(), &|_| true);
        assert_eq!(folded, found);
    }
}
