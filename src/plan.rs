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

/// Runs past which [`runs_to_separate`] gives up.
pub const MAX_SEPARATING_RUNS: u64 = 100_000;

/// The runs per side that would show a difference between a side failing
/// at `rate` and a side that never fails: the smallest N for which
/// Fisher's two-sided test on `round(rate × N)` of N against 0 of N is
/// below `alpha`, and at least [`runs_needed`]`(rate, 1 − alpha)` (the
/// clean side must also bound its rate below `rate`, as `flakelab plan`
/// counts). `None` when no N up to [`MAX_SEPARATING_RUNS`] does, or `rate`
/// is 0.
pub fn runs_to_separate(rate: f64, alpha: f64) -> Option<u64> {
    if !(rate > 0.0 && rate <= 1.0 && alpha > 0.0 && alpha < 1.0) {
        return None;
    }
    let shown = |n: u64| {
        let k = ((rate * n as f64).round() as u64).min(n);
        k > 0 && crate::stats::fisher_exact(k, n - k, 0, n) < alpha
    };
    // Double until it is shown, then halve the bracket down to its first N.
    let mut high = 1;
    while !shown(high) {
        high *= 2;
        if high > MAX_SEPARATING_RUNS {
            return None;
        }
    }
    let mut low = high / 2;
    while high - low > 1 {
        let mid = (low + high) / 2;
        if shown(mid) {
            high = mid;
        } else {
            low = mid;
        }
    }
    let plan = if rate < 1.0 {
        runs_needed(rate, 1.0 - alpha)
    } else {
        1
    };
    Some(high.max(plan))
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

    #[test]
    fn runs_to_separate_are_the_first_n_fisher_shows() {
        // 4 of 4 against 0 of 4: p = 2 / C(8, 4) = 0.029; 3 of 3: 0.1.
        assert_eq!(runs_to_separate(1.0, 0.05), Some(4));
        // Half the runs failing: 5 of 9 (4.5 rounded up) against 0 of 9 is
        // p = 2 × C(9, 5) / C(18, 5) = 0.029; 4 of 8 is 0.077.
        assert_eq!(runs_to_separate(0.5, 0.05), Some(9));
        for (rate, n) in [
            (1.0, 4),
            (0.5, 9),
            (0.2, runs_to_separate(0.2, 0.05).unwrap()),
        ] {
            let k = (rate * n as f64).round() as u64;
            assert!(
                crate::stats::fisher_exact(k, n - k, 0, n) < 0.05,
                "{rate} {n}"
            );
        }
        // One run in five failing: 5 of 23 against 0 of 23 (p = 0.049),
        // past the 14 runs `flakelab plan --rate 0.2` asks for.
        assert_eq!(runs_to_separate(0.2, 0.05), Some(23));
        // A rare failure needs at least what `flakelab plan` says.
        assert!(runs_to_separate(0.01, 0.05).unwrap() >= runs_needed(0.01, 0.95));
        assert_eq!(runs_to_separate(0.0, 0.05), None);
        assert_eq!(runs_to_separate(1e-9, 0.05), None);
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
