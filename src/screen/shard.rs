//! The screen design over CI shards, pure: which shard confirms which
//! cells' candidates, and how the records of a sharded confirmation stage
//! join into the one record an unsharded session writes.
//!
//! A screened session is sharded in two stages. One job runs the screen
//! (`run --design screen --screen-only`): it records the screen's runs and
//! a *pending* record with no confirmations. Every shard then reads that
//! screen from the store, raises the same candidates (they are a function
//! of the recorded screen runs), and confirms the candidates of the cells
//! [`cells_of`] gives it, writing a *part*. A cell's candidates never split:
//! the confirmation stage packs and stops each cell's candidates on their
//! own outcomes only (the design's `rules::batches`, the sequential rule), so a cell
//! confirmed on its own runs exactly the invocations it runs in the whole
//! stage, and the merged report equals the unsharded one in every count.
//! Parts join on read ([`join`]), so stores merged with `cat` join too.

use serde::{Deserialize, Serialize};

use crate::screen::{Candidate, ScreenRecord};

/// What one shard of a sharded confirmation stage confirmed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenPart {
    /// This shard, 1-based.
    pub index: u32,
    /// Shards of the stage.
    pub total: u32,
    /// The cells whose candidates it confirmed.
    pub cells: Vec<String>,
    /// Each confirmation's position among the screen's candidates.
    pub positions: Vec<u32>,
}

/// A joined record's shards: which parts were present, and what the
/// missing ones leave unconfirmed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenShards {
    /// Shards of the stage.
    pub total: u32,
    /// The shards whose part is present, ascending.
    pub present: Vec<u32>,
    /// The missing shards, each with the cells it was to confirm and
    /// how many candidates those cells hold.
    pub missing: Vec<MissingPart>,
}

/// A shard whose part of the confirmation stage is not in the store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MissingPart {
    /// The shard.
    pub index: u32,
    /// The cells it was to confirm.
    pub cells: Vec<String>,
    /// Their candidates, left unconfirmed.
    pub candidates: u32,
}

impl MissingPart {
    /// One line: `shard 2 of 4 not present: 3 candidate(s) of tz=UTC unconfirmed`.
    pub fn text(&self, total: u32) -> String {
        if self.cells.is_empty() {
            return format!(
                "shard {} of {total} not present (it had no candidate to confirm)",
                self.index
            );
        }
        format!(
            "shard {} of {total} not present: {} candidate(s) of {} unconfirmed",
            self.index,
            self.candidates,
            self.cells.join(", ")
        )
    }
}

/// The cells with candidates, in order of their first candidate, with how
/// many each holds.
fn cell_loads(candidates: &[Candidate]) -> Vec<(String, u32)> {
    let mut loads: Vec<(String, u32)> = Vec::new();
    for c in candidates {
        match loads.iter_mut().find(|(cell, _)| *cell == c.cell) {
            Some((_, n)) => *n += 1,
            None => loads.push((c.cell.clone(), 1)),
        }
    }
    loads
}

/// Which shard (1-based) confirms each cell that holds candidates: the
/// cells by descending candidate count (ties in order of first candidate),
/// each to the shard with the fewest candidates so far (the lowest index
/// among equals). Deterministic, so every shard computes the same split.
pub fn assign(candidates: &[Candidate], total: u32) -> Vec<(String, u32)> {
    let total = total.max(1);
    let mut loads = cell_loads(candidates);
    // Stable: equal counts keep their first-candidate order.
    loads.sort_by_key(|l| std::cmp::Reverse(l.1));
    let mut held = vec![0u32; total as usize];
    let mut out = Vec::new();
    for (cell, n) in loads {
        let (i, _) = (held.iter().enumerate())
            .min_by_key(|(i, h)| (**h, *i))
            .expect("at least one shard");
        held[i] += n;
        out.push((cell, i as u32 + 1));
    }
    out
}

/// The cells shard `index` of `total` confirms, in order of first candidate.
pub fn cells_of(candidates: &[Candidate], index: u32, total: u32) -> Vec<String> {
    let assigned = assign(candidates, total);
    cell_loads(candidates)
        .into_iter()
        .map(|(cell, _)| cell)
        .filter(|cell| assigned.iter().any(|(c, s)| c == cell && *s == index))
        .collect()
}

/// The one record of a session from every record `screens.jsonl` holds
/// for it, in file order: the last whole record when there is one (an
/// unsharded session, or a screen confirmed later on one machine);
/// otherwise the last pending record joined with its parts (identical
/// copies counted once), confirmations in candidate order, totals summed,
/// missing shards named. None when there is neither.
pub fn join(records: Vec<ScreenRecord>) -> Option<ScreenRecord> {
    if let Some(whole) = (records.iter())
        .rev()
        .find(|r| !r.pending && r.part.is_none())
    {
        return Some(whole.clone());
    }
    let mut base = records.iter().rev().find(|r| r.pending)?.clone();
    let mut parts: Vec<&ScreenRecord> = Vec::new();
    for r in records.iter().filter(|r| r.part.is_some()) {
        if !parts.iter().any(|p| p.part == r.part) {
            parts.push(r);
        }
    }
    let total = parts
        .iter()
        .filter_map(|p| p.part.as_ref())
        .map(|p| p.total)
        .max();
    let Some(total) = total else {
        return Some(base);
    };
    let mut numbered: Vec<(u32, crate::screen::Confirmation)> = Vec::new();
    let mut totals = (0u64, 0u64, 0u64);
    let mut present = Vec::new();
    let mut covered: Vec<String> = Vec::new();
    for p in &parts {
        let part = p.part.as_ref().expect("a part");
        if present.contains(&part.index) {
            // Two different parts of one shard: the first one read counts.
            continue;
        }
        present.push(part.index);
        covered.extend(part.cells.iter().cloned());
        for (pos, c) in part.positions.iter().zip(&p.confirmations) {
            numbered.push((*pos, c.clone()));
        }
        if let Some(t) = p.confirm_totals {
            totals = (totals.0 + t.0, totals.1 + t.1, totals.2 + t.2);
        }
    }
    present.sort_unstable();
    numbered.sort_by_key(|(pos, _)| *pos);
    let candidates: Vec<Candidate> = base.candidates.clone();
    let missing = (1..=total)
        .filter(|i| !present.contains(i))
        .map(|index| {
            let cells: Vec<String> = cells_of(&candidates, index, total);
            let n = candidates
                .iter()
                .filter(|c| cells.contains(&c.cell))
                .count() as u32;
            MissingPart {
                index,
                cells,
                candidates: n,
            }
        })
        .collect();
    base.confirmations = numbered.into_iter().map(|(_, c)| c).collect();
    base.confirm_totals = Some(totals);
    base.pending = false;
    base.shards = Some(ScreenShards {
        total,
        present,
        missing,
    });
    Some(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(cell: &str, test: &str) -> Candidate {
        Candidate {
            cell: cell.into(),
            test: test.into(),
            screen_cell: (1, 1),
            screen_baseline: (0, 1),
            flip_seed: None,
            flip_run: None,
            partners: Vec::new(),
            contests: None,
        }
    }

    #[test]
    fn cells_go_whole_to_the_least_loaded_shard() {
        let c = [
            cand("tz", "a"),
            cand("env", "a"),
            cand("tz", "b"),
            cand("shuffle", "a"),
            cand("tz", "c"),
            cand("env", "b"),
        ];
        // tz 3, env 2, shuffle 1: tz → 1, env → 2, shuffle → 2 (1 holds 3).
        assert_eq!(
            assign(&c, 2),
            vec![("tz".into(), 1), ("env".into(), 2), ("shuffle".into(), 2)]
        );
        assert_eq!(cells_of(&c, 1, 2), vec!["tz".to_string()]);
        assert_eq!(
            cells_of(&c, 2, 2),
            vec!["env".to_string(), "shuffle".into()]
        );
        // More shards than cells: the rest confirm nothing.
        assert_eq!(cells_of(&c, 4, 4), Vec::<String>::new());
        // Every cell is confirmed by exactly one shard.
        for total in 1..6 {
            let mut all: Vec<String> = (1..=total).flat_map(|i| cells_of(&c, i, total)).collect();
            all.sort();
            assert_eq!(all, vec!["env", "shuffle", "tz"], "{total} shards");
        }
    }

    #[test]
    fn the_missing_part_names_what_it_leaves_unconfirmed() {
        let m = MissingPart {
            index: 3,
            cells: vec!["tz=UTC".into(), "env=A=1".into()],
            candidates: 4,
        };
        assert_eq!(
            m.text(4),
            "shard 3 of 4 not present: 4 candidate(s) of tz=UTC, env=A=1 unconfirmed"
        );
        let idle = MissingPart {
            index: 4,
            cells: vec![],
            candidates: 0,
        };
        assert_eq!(
            idle.text(4),
            "shard 4 of 4 not present (it had no candidate to confirm)"
        );
    }
}
