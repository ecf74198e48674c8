//! Delta debugging (ddmin, Zeller and Hildebrandt) as a step machine: it
//! asks for one subset at a time and is told whether that subset still
//! makes the victim fail. Nothing here runs anything, so a caller can stop
//! between two questions (Ctrl-C, a spent budget) and still read the
//! smallest failing set known so far.
//!
//! Items are indices into the victim's predecessors; every subset asked for
//! keeps them in ascending order, which is their original relative order.

use std::collections::HashMap;

/// What the search needs next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Run the victim after these items (ascending) and say whether it failed.
    Ask(Vec<usize>),
    /// The search is over: a 1-minimal failing set.
    Done(Vec<usize>),
}

/// Which subsets of the current set are being tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The i-th of n chunks alone.
    Chunk(usize),
    /// Everything but the i-th of n chunks.
    Complement(usize),
}

/// One ddmin search over a failing set of items.
#[derive(Debug, Clone)]
pub struct Ddmin {
    current: Vec<usize>,
    granularity: usize,
    phase: Phase,
    asked: Option<(Vec<usize>, Phase)>,
    known: HashMap<Vec<usize>, bool>,
    done: bool,
}

impl Ddmin {
    /// A search over `0..n`, which is known to fail as a whole.
    pub fn new(n: usize) -> Ddmin {
        Ddmin::over((0..n).collect())
    }

    /// A search over `items` (sorted here), known to fail as a whole.
    pub fn over(mut items: Vec<usize>) -> Ddmin {
        items.sort_unstable();
        items.dedup();
        let mut known = HashMap::new();
        known.insert(items.clone(), true);
        Ddmin {
            current: items,
            granularity: 2,
            phase: Phase::Chunk(0),
            asked: None,
            known,
            done: false,
        }
    }

    /// The smallest set known to fail so far (the whole set until a smaller
    /// one failed).
    pub fn current(&self) -> &[usize] {
        &self.current
    }

    /// The next question, or the answer. Asking again before
    /// [`Ddmin::answer`] repeats the question.
    pub fn question(&mut self) -> Next {
        if let Some((q, _)) = &self.asked {
            return Next::Ask(q.clone());
        }
        loop {
            if self.done || self.current.len() <= 1 {
                self.done = true;
                return Next::Done(self.current.clone());
            }
            let n = self.granularity.min(self.current.len());
            let subset = match self.phase {
                Phase::Chunk(i) if i < n => chunk(&self.current, n, i),
                Phase::Chunk(_) if n > 2 => {
                    self.phase = Phase::Complement(0);
                    continue;
                }
                Phase::Complement(i) if i < n => {
                    let drop = chunk(&self.current, n, i);
                    self.current
                        .iter()
                        .copied()
                        .filter(|x| !drop.contains(x))
                        .collect()
                }
                _ => {
                    if n >= self.current.len() {
                        self.done = true;
                    } else {
                        self.granularity = (2 * n).min(self.current.len());
                        self.phase = Phase::Chunk(0);
                    }
                    continue;
                }
            };
            match self.known.get(&subset) {
                Some(&fails) => self.settle(subset, self.phase, fails),
                None => {
                    self.asked = Some((subset.clone(), self.phase));
                    return Next::Ask(subset);
                }
            }
        }
    }

    /// The answer to the last question: whether the victim failed after it.
    /// An answer with no question pending is ignored.
    pub fn answer(&mut self, fails: bool) {
        if let Some((q, phase)) = self.asked.take() {
            self.known.insert(q.clone(), fails);
            self.settle(q, phase, fails);
        }
    }

    fn settle(&mut self, subset: Vec<usize>, phase: Phase, fails: bool) {
        let n = self.granularity.min(self.current.len());
        match (phase, fails) {
            (Phase::Chunk(_), true) => {
                self.current = subset;
                self.granularity = 2;
                self.phase = Phase::Chunk(0);
            }
            (Phase::Complement(_), true) => {
                self.current = subset;
                self.granularity = n.saturating_sub(1).max(2);
                self.phase = Phase::Chunk(0);
            }
            (Phase::Chunk(i), false) => self.phase = Phase::Chunk(i + 1),
            (Phase::Complement(i), false) => self.phase = Phase::Complement(i + 1),
        }
    }
}

/// The i-th of `n` near-equal consecutive chunks of `items`.
fn chunk(items: &[usize], n: usize, i: usize) -> Vec<usize> {
    let len = items.len();
    let start = len * i / n;
    let end = len * (i + 1) / n;
    items[start..end].to_vec()
}

/// Runs a search to its end against `fails` (a test double or a cached
/// oracle); returns the set and how many questions it asked.
#[cfg(test)]
pub fn solve(n: usize, mut fails: impl FnMut(&[usize]) -> bool) -> (Vec<usize>, usize) {
    let mut d = Ddmin::new(n);
    let mut asked = 0;
    loop {
        match d.question() {
            Next::Ask(q) => {
                asked += 1;
                let f = fails(&q);
                d.answer(f);
            }
            Next::Done(set) => return (set, asked),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn log2_ceil(n: usize) -> usize {
        (usize::BITS - (n.max(1) - 1).leading_zeros()) as usize
    }

    #[test]
    fn one_polluter_among_3000_in_at_most_two_questions_per_halving() {
        for p in [0, 1, 1499, 1500, 2998, 2999, 1234] {
            let (set, asked) = solve(3000, |s| s.contains(&p));
            assert_eq!(set, vec![p]);
            assert!(asked <= 2 * log2_ceil(3000), "{p}: {asked} questions");
        }
    }

    #[test]
    fn two_polluters_that_only_fail_together_are_both_found() {
        let (set, asked) = solve(3000, |s| s.contains(&10) && s.contains(&2900));
        assert_eq!(set, vec![10, 2900]);
        assert!(asked < 80, "{asked}");
        let (set, _) = solve(8, |s| s.contains(&3) && s.contains(&4));
        assert_eq!(set, vec![3, 4]);
    }

    #[test]
    fn subsets_keep_the_original_order_and_questions_are_not_repeated() {
        let mut seen = std::collections::HashSet::new();
        let (set, _) = solve(100, |s| {
            assert!(s.windows(2).all(|w| w[0] < w[1]), "{s:?}");
            assert!(seen.insert(s.to_vec()), "asked twice: {s:?}");
            s.contains(&42) && s.contains(&7) && s.contains(&99)
        });
        assert_eq!(set, vec![7, 42, 99]);
    }

    #[test]
    fn a_stopped_search_keeps_the_smallest_failing_set_so_far() {
        let mut d = Ddmin::new(1000);
        for _ in 0..3 {
            let Next::Ask(q) = d.question() else { panic!() };
            d.answer(q.contains(&600));
        }
        assert!(d.current().contains(&600));
        assert!(d.current().len() <= 250, "{}", d.current().len());
        // Asking again without an answer repeats the question.
        assert_eq!(d.question(), d.question());
    }

    #[test]
    fn one_item_or_none_needs_no_question() {
        assert_eq!(solve(1, |_| panic!("asked")), (vec![0], 0));
        assert_eq!(solve(0, |_| panic!("asked")), (vec![], 0));
    }

    proptest! {
        #[test]
        fn any_single_polluter_is_found_within_the_bound(n in 2usize..5000, seed in any::<u64>()) {
            let p = (seed % n as u64) as usize;
            let (set, asked) = solve(n, |s| s.contains(&p));
            prop_assert_eq!(set, vec![p]);
            prop_assert!(asked <= 2 * log2_ceil(n));
        }

        #[test]
        fn any_conjunction_of_polluters_is_found_exactly(
            n in 2usize..400,
            picks in proptest::collection::btree_set(any::<u16>(), 1..4),
        ) {
            let want: Vec<usize> = picks.iter().map(|p| *p as usize % n).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
            let (set, _) = solve(n, |s| want.iter().all(|w| s.contains(w)));
            prop_assert_eq!(set, want);
        }
    }
}
