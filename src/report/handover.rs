//! Where a finding continues: a test whose difference rests on a shuffle
//! cell is order-dependent, and `flakelab bisect` finds what ran before it
//! and made it fail. This module names that command on each such row,
//! from the row's first failing run (whose report holds the order the
//! runner used); renderers show it, the JSON carries it as `bisect`.
//! A ladder hands over the same way ([`ladder_bisect`]) when the rung that
//! reproduced shows order: its cell shuffles, or the test failed beside
//! its neighbours in one process after passing alone.

use super::Report;
use crate::record::{LadderRecord, RungStatus};

/// Whether a cell's perturbations change the test order (a shuffle, or
/// systematic orders).
fn shuffles(perturbations: &[String]) -> bool {
    perturbations
        .iter()
        .any(|p| p == "shuffle" || p.starts_with("shuffle=") || p == "orders")
}

/// `flakelab bisect RUN --test ID`, quoted for a POSIX shell.
pub fn bisect_command(run: &str, test: &str) -> String {
    crate::repro::join(&[
        "flakelab".to_string(),
        "bisect".to_string(),
        run.to_string(),
        "--test".to_string(),
        test.to_string(),
    ])
}

/// `flakelab bisect RUN [--test ID]` for a ladder whose reproduction shows
/// order, from its first reproducing run; `None` otherwise. Order is shown
/// when the ladder's cell shuffles, or when the rung that reproduced ran
/// one process with the test's neighbours (`neighbours`) and the test ran
/// alone at a lower rung without reproducing. A rung of several processes
/// points at a shared host resource, not at what ran before the test.
pub fn ladder_bisect(ladder: &LadderRecord) -> Option<String> {
    let at = ladder.reproduced_at?;
    let rung = ladder.rungs.iter().find(|r| r.rung == at)?;
    let (run, _) = rung.first_reproduction.as_ref()?;
    if rung.processes > 1 {
        return None;
    }
    let shuffled = ladder.cell.split('+').any(|p| shuffles(&[p.to_string()]));
    let clean_alone = (ladder.rungs.iter())
        .any(|r| r.rung < at && r.name == "alone" && r.status == RungStatus::Clean);
    let beside_neighbours = rung.name == "neighbours" && clean_alone;
    if !(shuffled || beside_neighbours) {
        return None;
    }
    Some(match &ladder.test {
        Some(test) => bisect_command(run, test),
        None => crate::repro::join(&["flakelab".into(), "bisect".into(), run.to_string()]),
    })
}

/// Sets `bisect` on every row of a shuffle cell that differs from the
/// baseline and has a failing run to start from.
pub fn mark(report: &mut Report) {
    for cell in report.cells.iter_mut() {
        if !shuffles(&cell.perturbations) || cell.sham_of.is_some() {
            continue;
        }
        for row in cell.tests.iter_mut() {
            if !row.differs() {
                continue;
            }
            if let Some(run) = &row.first_failure {
                row.bisect = Some(bisect_command(run, &row.id));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_id_with_shell_characters_is_quoted() {
        assert_eq!(
            bisect_command("s1.4", "tests/test_a.py::test_x[a b]"),
            "flakelab bisect s1.4 --test 'tests/test_a.py::test_x[a b]'"
        );
    }

    #[test]
    fn a_differing_row_of_a_shuffle_cell_names_its_bisect_and_no_other_row_does() {
        let mut report = crate::report::snapshots_test::report();
        mark(&mut report);
        let marked = |r: &Report| -> Vec<(String, String)> {
            (r.cells.iter())
                .flat_map(|c| c.tests.iter().map(move |t| (c, t)))
                .filter_map(|(c, t)| t.bisect.clone().map(|b| (c.name.clone(), b)))
                .collect()
        };
        // No cell shuffles: nothing is handed over.
        assert_eq!(marked(&report), vec![]);
        let cell = (report.cells.iter_mut())
            .find(|c| c.name == "tz=Asia/Kathmandu")
            .unwrap();
        cell.perturbations = vec!["shuffle".into()];
        let differing: Vec<(String, String)> = (cell.tests.iter())
            .filter(|t| t.differs())
            .map(|t| (t.id.clone(), t.first_failure.clone().unwrap()))
            .collect();
        assert!(!differing.is_empty());
        mark(&mut report);
        let want: Vec<(String, String)> = differing
            .iter()
            .map(|(id, run)| ("tz=Asia/Kathmandu".to_string(), bisect_command(run, id)))
            .collect();
        assert_eq!(marked(&report), want);
        let table = crate::report::table::render(&report);
        assert!(
            table.contains(&format!(
                "order-dependent: find what ran before it and made it fail: {}",
                want[0].1
            )),
            "{table}"
        );
    }

    #[test]
    fn only_a_shuffle_cell_hands_over() {
        assert!(shuffles(&["shuffle".into()]));
        assert!(shuffles(&["tz=UTC".into(), "shuffle=7".into()]));
        assert!(!shuffles(&["tz=UTC".into()]));
        assert!(!shuffles(&["shuffled-env=1".into()]));
        assert!(shuffles(&["orders".into()]));
    }
}
