//! One candidate on its way through the confirmation stage: its ladder of
//! selections, the rung it is on and what is recorded for it.

use super::rules::{self, CellKind, Selection};
use crate::catalog::recipe::IdFrom;
use crate::screen::{Candidate, Confirmation, Decision};

/// Counts at one rung: cell arm, baseline arm, pairs.
pub(super) type StageCounts = ((u64, u64), (u64, u64), u32);

/// One candidate on its way through the confirmation stage.
pub(super) struct Active {
    /// Its selections, narrowest first.
    pub ladder: Vec<Selection>,
    /// The rung it is on.
    pub rung: usize,
    /// Counts at this rung so far: cell arm, baseline arm, pairs.
    pub stage: StageCounts,
    /// The seed every cell run replays (a shuffle candidate).
    pub every_seed: Option<u64>,
    /// Decided, capped or given up.
    pub done: bool,
    /// What is recorded.
    pub out: Confirmation,
}

/// Looks a candidate has taken (every rung).
pub(super) fn pairs_of(a: &Active) -> u32 {
    a.out.looks.len() as u32
}

impl Active {
    /// Candidate `c` of a cell of `kind` at the foot of its ladder (cut from
    /// `order` when it replays the orders that flipped it); `select`: the
    /// recipe's ids and whether it selects tests at all.
    pub fn start(
        c: &Candidate,
        kind: CellKind,
        order: Option<&rules::FlipOrders>,
        (from, select): (IdFrom, bool),
        dir: &std::path::Path,
    ) -> Active {
        let every_seed = c.flip_seed.filter(|_| kind == CellKind::Shuffled);
        // A collision's partners run beside it: its file only when they
        // all share it, else the whole command.
        let file = |t: &str| crate::screen::neighbours_id(from, t, dir);
        let together = (c.partners.iter()).all(|p| file(p).is_some() && file(p) == file(&c.test));
        let ladder = rules::ladder(from, &c.test, dir, select && together, kind, order);
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
                start: rules::start_reason(kind, c.flip_seed, ordered),
                climbs: Vec::new(),
                replayed_every: every_seed.is_some(),
            },
        }
    }
}
