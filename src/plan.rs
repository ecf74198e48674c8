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

/// The interleaved schedule of a session: a pure function of its cells,
/// runs per cell, seed and replay overrides, read lazily through
/// [`Plan::iter`] so that a session of a million planned runs holds one
/// block (one entry per cell) in memory, not a million run specs.
///
/// Stored in the session record as these fields only; a record written
/// before the plan was lazy also carries a `runs` list, which reading
/// ignores (the same fields give the same runs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// The schedule seed.
    pub seed: u64,
    /// Runs per cell.
    pub runs_per_cell: u32,
    /// Cell names, in the order given (baseline first when present).
    pub cells: Vec<String>,
    /// A replay's seed, given to every run instead of the derived one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every_seed: Option<u64>,
    /// A replay's seed for replicate 0 only (it wins over `every_seed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_seed: Option<u64>,
}

/// Builds the interleaved plan for `cells` with `n` runs each.
pub fn build(cells: &[String], n: u32, seed: u64) -> Plan {
    Plan {
        seed,
        runs_per_cell: n,
        cells: cells.to_vec(),
        every_seed: None,
        first_seed: None,
    }
}

impl Plan {
    /// Runs planned in all (cells × runs per cell).
    pub fn len(&self) -> usize {
        self.cells.len() * self.runs_per_cell as usize
    }

    /// Whether nothing is planned.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every run, in execution order, computed as it is read.
    pub fn iter(&self) -> PlanIter<'_> {
        PlanIter {
            plan: self,
            rng: ChaCha8Rng::seed_from_u64(self.seed),
            block: (0..self.cells.len()).collect(),
            replicate: 0,
            at: 0,
            index: 0,
        }
    }

    /// The runs of replicate block `replicate`, in execution order.
    pub fn block(&self, replicate: u32) -> impl Iterator<Item = RunSpec> + Clone + '_ {
        let k = self.cells.len();
        self.iter().skip(replicate as usize * k).take(k)
    }

    fn seed_of(&self, replicate: u32) -> u64 {
        match (self.first_seed, self.every_seed) {
            (Some(first), _) if replicate == 0 => first,
            (_, Some(every)) => every,
            _ => run_seed(self.seed, replicate),
        }
    }
}

/// The runs of a [`Plan`] in execution order: one block's order (one entry
/// per cell) and the schedule's random state, whatever the plan's length.
#[derive(Debug, Clone)]
pub struct PlanIter<'a> {
    plan: &'a Plan,
    rng: ChaCha8Rng,
    block: Vec<usize>,
    replicate: u32,
    at: usize,
    index: usize,
}

impl Iterator for PlanIter<'_> {
    type Item = RunSpec;

    fn next(&mut self) -> Option<RunSpec> {
        if self.block.is_empty() || self.replicate >= self.plan.runs_per_cell {
            return None;
        }
        if self.at == 0 {
            self.block.shuffle(&mut self.rng);
        }
        let spec = RunSpec {
            index: self.index,
            cell: self.block[self.at],
            replicate: self.replicate,
            seed: self.plan.seed_of(self.replicate),
        };
        self.index += 1;
        self.at += 1;
        if self.at == self.block.len() {
            self.at = 0;
            self.replicate += 1;
        }
        Some(spec)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.plan.len() - self.index.min(self.plan.len());
        (left, Some(left))
    }
}

impl ExactSizeIterator for PlanIter<'_> {}

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

    /// The plan as it was built before it was lazy: every run materialised
    /// up front. The lazy order must equal it.
    fn materialised(cells: &[String], n: u32, seed: u64) -> Vec<RunSpec> {
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
        runs
    }

    fn runs(plan: &Plan) -> Vec<RunSpec> {
        plan.iter().collect()
    }

    #[test]
    fn same_seed_same_order_other_seed_other_order() {
        let a = build(&names(4), 10, 42);
        let b = build(&names(4), 10, 42);
        let c = build(&names(4), 10, 43);
        assert_eq!(runs(&a), runs(&b));
        assert_ne!(
            a.iter().map(|r| r.cell).collect::<Vec<_>>(),
            c.iter().map(|r| r.cell).collect::<Vec<_>>()
        );
    }

    #[test]
    fn blocks_hold_each_cell_once() {
        let plan = build(&names(3), 5, 7);
        for (r, block) in runs(&plan).chunks(3).enumerate() {
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
            prop_assert_eq!(plan.iter().len(), k * n as usize);
            prop_assert_eq!(plan.len(), k * n as usize);
            let mut seen = std::collections::HashSet::new();
            for (i, r) in plan.iter().enumerate() {
                prop_assert_eq!(r.index, i);
                prop_assert!(seen.insert((r.cell, r.replicate)));
                prop_assert_eq!(r.seed, run_seed(seed, r.replicate));
            }
        }

        #[test]
        fn lazy_order_is_the_materialised_order(k in 0usize..9, n in 0u32..60, seed in any::<u64>()) {
            let plan = build(&names(k), n, seed);
            prop_assert_eq!(runs(&plan), materialised(&names(k), n, seed));
            for r in 0..n {
                let block: Vec<RunSpec> = plan.block(r).collect();
                let old: Vec<RunSpec> = materialised(&names(k), n, seed)
                    .into_iter()
                    .filter(|s| s.replicate == r)
                    .collect();
                prop_assert_eq!(block, old);
            }
        }
    }

    #[test]
    fn lazy_order_matches_on_large_plans() {
        for (k, n, seed) in [(1, 5000, 0), (8, 2000, 42), (33, 300, u64::MAX)] {
            assert_eq!(
                runs(&build(&names(k), n, seed)),
                materialised(&names(k), n, seed)
            );
        }
    }

    #[test]
    fn replay_seeds_override_in_order() {
        let mut plan = build(&names(2), 3, 9);
        plan.every_seed = Some(5);
        plan.first_seed = Some(7);
        let seeds: Vec<(u32, u64)> = plan.iter().map(|r| (r.replicate, r.seed)).collect();
        assert_eq!(seeds, vec![(0, 7), (0, 7), (1, 5), (1, 5), (2, 5), (2, 5)]);
    }

    #[test]
    fn a_plan_stored_with_its_runs_list_reads() {
        let old = r#"{"seed":1,"runs_per_cell":2,"cells":["baseline"],"runs":[{"index":0,"cell":0,"replicate":0,"seed":3},{"index":1,"cell":0,"replicate":1,"seed":4}]}"#;
        let plan: Plan = serde_json::from_str(old).unwrap();
        assert_eq!(plan, build(&["baseline".into()], 2, 1));
        assert_eq!(
            serde_json::to_string(&plan).unwrap(),
            r#"{"seed":1,"runs_per_cell":2,"cells":["baseline"]}"#
        );
    }
}
