//! Packing the confirmations into runner invocations: each cell's
//! undecided candidates into batches that do not interfere, and batches of
//! several cells into one session ([`Group`]) that shares a baseline arm;
//! the session such a group runs.

use std::collections::VecDeque;

use super::active::Active;
use super::facts::ordered_of;
use super::rules;
use crate::catalog::recipe::{argv, IdFrom};
use crate::error::Error;
use crate::screen;
use crate::session::SessionSpec;

/// The invocations `cell`'s undecided candidates are packed into:
/// selections by the runner's ids (or the whole command), ordered
/// selections of one file each, and whole-prefix ones apart; only the
/// first two kinds share an invocation (`rules::batches`).
pub(super) fn pack(
    cell: &str,
    actives: &[Active],
    (from, repeats): (IdFrom, bool),
    dir: &std::path::Path,
) -> VecDeque<rules::Batch> {
    let mut groups: [Vec<rules::BatchEntry>; 3] = Default::default();
    for (i, a) in actives.iter().enumerate() {
        if a.done || a.out.candidate.cell != cell {
            continue;
        }
        let rung = &a.ladder[a.rung];
        match rung.level {
            rules::Level::OrderedFile => {
                let file = neighbours_of(from, &a.out.candidate.test, dir);
                groups[1].push((i, Some(file), None));
            }
            rules::Level::OrderedPrefix => {
                groups[2].push((i, Some(a.out.candidate.test.clone()), None))
            }
            _ => groups[0].push((i, rung.id.clone(), a.every_seed)),
        }
    }
    (rules::batches(&groups[0], repeats).into_iter())
        .chain(rules::batches(&groups[1], true))
        .chain(rules::batches(&groups[2], false))
        .collect()
}

/// What the baseline arm of an invocation runs, and every cell arm but a
/// shuffle cell replaying its orders.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Shape {
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
pub(super) struct Group {
    /// Each cell's batch.
    pub members: Vec<(String, rules::Batch)>,
    /// What the baseline arm runs.
    pub shape: Shape,
    /// The cell whose arm runs `Shape::Listed`'s cell list.
    pub listed_cell: Option<String>,
    /// The JUnit ids of every `Shape::Ids` member, when each is selected
    /// alone (so the ids can join a list): `None` once one is not.
    pub alone: Option<Vec<String>>,
    /// The seed every cell run replays (a group of one batch).
    pub every_seed: Option<u64>,
}

impl Group {
    /// A group of one batch.
    fn of(cell: &str, batch: rules::Batch, actives: &[Active]) -> Group {
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
        batch: &rules::Batch,
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
                let entries: Vec<rules::BatchEntry> = (mine.iter().chain(&theirs))
                    .map(|id| (0, Some(id.clone()), None))
                    .collect();
                if rules::batches(&entries, repeats).len() != 1 {
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
fn shape_of(batch: &rules::Batch, actives: &[Active]) -> (Shape, Option<Vec<String>>) {
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
            (rung(i).level == rules::Level::Alone).then(|| actives[i].out.candidate.test.clone())
        })
        .collect();
    (Shape::Ids(batch.ids.clone()), alone)
}

/// The next session of a round: the first waiting batch, joined by the
/// first waiting batch of each later cell that can share its baseline arm
/// (each cell's batches keep their order).
pub(super) fn next_group(
    queues: &mut [(String, VecDeque<rules::Batch>)],
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

/// The file or module an ordered selection keeps, as the batches compare it.
fn neighbours_of(from: IdFrom, test: &str, dir: &std::path::Path) -> String {
    screen::neighbours_id(from, test, dir).unwrap_or_else(|| test.to_string())
}

/// The session of a group: the baseline and the group's cells; every arm
/// runs what the baseline arm runs (the whole command, the ids selected
/// together, or the list in order, each list written to a file in the
/// store) but a shuffle cell replaying its orders, whose own shuffle is
/// off (its list is the order).
pub(super) fn group_spec(
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
        spec.put_on_pythonpath(&dir);
    }
    Ok(spec)
}
