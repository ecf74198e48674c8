//! The plan: which run of which cell happens in which order. Pure: the same
//! cells, runs per cell and seed always give the same interleaved order.
//!
//! Order is randomised in blocks: replicate `r` of every cell runs inside
//! block `r`, in a seeded random order within the block. Host drift (load,
//! heat, another job) therefore falls on every cell alike (DESIGN
//! principle 3), and an interrupted session has roughly equal N per cell.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// One planned run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSpec {
    /// Position in the interleaved order (0-based).
    pub index: usize,
    /// Index into the plan's cell list.
    pub cell: usize,
    /// Replicate within the cell (0-based).
    pub replicate: u32,
    /// Seed for this run, derived from the session seed and the replicate,
    /// so replicate `r` gets the same seed in every cell.
    pub seed: u64,
}

/// The interleaved schedule of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// The schedule seed.
    pub seed: u64,
    /// Runs per cell.
    pub runs_per_cell: u32,
    /// Cell names, in the order given (baseline first when present).
    pub cells: Vec<String>,
    /// Every run, in execution order.
    pub runs: Vec<RunSpec>,
}

/// Builds the interleaved plan for `cells` with `n` runs each.
pub fn build(cells: &[String], n: u32, seed: u64) -> Plan {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut runs = Vec::with_capacity(cells.len() * n as usize);
    let mut block: Vec<usize> = (0..cells.len()).collect();
    for replicate in 0..n {
        block.shuffle(&mut rng);
        for &cell in &block {
            runs.push(RunSpec {
                index: runs.len(),
                cell,
                replicate,
                seed: run_seed(seed, replicate),
            });
        }
    }
    Plan {
        seed,
        runs_per_cell: n,
        cells: cells.to_vec(),
        runs,
    }
}

/// Derives the seed of replicate `replicate` from the session seed
/// (SplitMix64 of the pair, so neighbouring replicates get unrelated seeds).
pub fn run_seed(session_seed: u64, replicate: u32) -> u64 {
    let mut z = session_seed
        .wrapping_add(u64::from(replicate).wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) % 1_000_000_000
}

/// The number of runs needed to observe at least one failure of a test
/// that fails with probability `rate`, with confidence `confidence`:
/// `ceil(ln(1 - c) / ln(1 - p))`.
pub fn runs_needed(rate: f64, confidence: f64) -> u64 {
    ((1.0 - confidence).ln() / (1.0 - rate).ln()).ceil() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn names(k: usize) -> Vec<String> {
        (0..k).map(|i| format!("c{i}")).collect()
    }

    #[test]
    fn same_seed_same_order_other_seed_other_order() {
        let a = build(&names(4), 10, 42);
        let b = build(&names(4), 10, 42);
        let c = build(&names(4), 10, 43);
        assert_eq!(a, b);
        assert_ne!(
            a.runs.iter().map(|r| r.cell).collect::<Vec<_>>(),
            c.runs.iter().map(|r| r.cell).collect::<Vec<_>>()
        );
    }

    #[test]
    fn blocks_hold_each_cell_once() {
        let plan = build(&names(3), 5, 7);
        for (r, block) in plan.runs.chunks(3).enumerate() {
            let mut cells: Vec<usize> = block.iter().map(|s| s.cell).collect();
            cells.sort();
            assert_eq!(cells, vec![0, 1, 2]);
            assert!(block.iter().all(|s| s.replicate == r as u32));
        }
    }

    #[test]
    fn runs_needed_matches_published_values() {
        assert_eq!(runs_needed(0.01, 0.95), 299);
        assert_eq!(runs_needed(0.05, 0.95), 59);
        assert_eq!(runs_needed(0.10, 0.99), 44);
    }

    proptest! {
        #[test]
        fn every_cell_replicate_pair_appears_once(k in 1usize..6, n in 0u32..30, seed in any::<u64>()) {
            let plan = build(&names(k), n, seed);
            prop_assert_eq!(plan.runs.len(), k * n as usize);
            let mut seen = std::collections::HashSet::new();
            for (i, r) in plan.runs.iter().enumerate() {
                prop_assert_eq!(r.index, i);
                prop_assert!(seen.insert((r.cell, r.replicate)));
                prop_assert_eq!(r.seed, run_seed(seed, r.replicate));
            }
        }
    }
}
