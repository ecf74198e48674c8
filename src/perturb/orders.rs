//! The `orders` perturbation: systematic test orders instead of random
//! shuffles. [`prepare`] decides how a cell runs them with this runner (its
//! recipe's `[ordered]` mode, else its seeded shuffle, said so); [`cover`]
//! builds the orders from a collected test list. Pure: nothing here runs.
//!
//! The construction (book: statistics, "Systematic orders"): tests are
//! grouped by module (the JUnit id before `::`) in collected order. Within a
//! module of `m` tests, Walecki's decomposition of the complete graph `K_m`
//! into Hamiltonian paths (the zig-zag `0, 1, m−1, 2, m−2, …` and its
//! rotations; a dummy vertex makes an odd `m` even and is then dropped),
//! each path run forwards and backwards, puts every ordered pair of the
//! module's tests next to each other in `w(m)` orders (`m` when `m` is
//! even, `m + 1` when odd; no fewer than `m` can do it, and `m` is reached
//! for every `m` but 3 and 5). The modules themselves are ordered as blocks
//! by the same construction over the `k` modules. Order `i` runs the module
//! blocks in block order `i mod w(k)` and each module's tests in its own
//! order `i mod w(m)`: `max(w(largest module), w(k))` orders in all.

use super::{Missing, Prepared};
use crate::catalog::recipe::ordered::OrderHow;
use crate::catalog::recipe::Recipe;

/// The cell's preparation for `orders` with `recipe`: the recipe's ordered
/// mode when it can run a given list; else its seeded shuffle with a note
/// saying so; else what is missing.
pub fn prepare(recipe: Option<&Recipe>, out: &mut Prepared) {
    let ordered = recipe.and_then(|r| r.ordered.as_ref());
    if ordered.is_some_and(|o| matches!(o.how, OrderHow::PytestPlugin | OrderHow::Listed)) {
        out.orders = true;
        return;
    }
    match recipe {
        Some(r) if r.shuffle.is_some() => {
            out.shuffle = true;
            let why = ordered.map_or("its recipe declares no [ordered] selection", |o| {
                o.note.as_str()
            });
            let fallback = format!(
                "orders: the {} runner can only shuffle by seed ({why}): this cell runs its seeded shuffle, one random order a run, not systematic orders",
                r.name
            );
            out.notes.push(fallback.clone());
            out.orders_fallback = Some(fallback);
        }
        Some(r) => {
            out.missing = Some(Missing {
                message: format!(
                    "cannot run systematic orders: the {} runner runs no given order and has no seeded shuffle",
                    r.name
                ),
                hint: format!("see `flakelab recipes show {}`", r.name),
            })
        }
        None => {
            out.missing = Some(Missing {
                message: "cannot run systematic orders: no recipe recognises this command, so flakelab cannot run a given order".into(),
                hint: "name the runner with --runner NAME (`flakelab recipes` lists them)".into(),
            })
        }
    }
}

/// The module of a test id: what comes before its last `::` (a JUnit
/// classname), else the whole id.
pub fn module_of(id: &str) -> &str {
    id.rsplit_once("::").map_or(id, |(m, _)| m)
}

/// How many orders Walecki's construction takes for `m` items: `m` when
/// even, `m + 1` when odd (1 for 0 or 1 item).
pub fn walecki_len(m: usize) -> usize {
    match m {
        0 | 1 => 1,
        m if m % 2 == 0 => m,
        m => m + 1,
    }
}

/// Orders of `0..m` in which every ordered pair `(a, b)`, `a ≠ b`, is
/// adjacent (`a` right before `b`) at least once: `m` orders (`m + 1` when odd),
/// each path of Walecki's decomposition forwards then backwards.
pub fn walecki(m: usize) -> Vec<Vec<usize>> {
    if m <= 1 {
        return vec![(0..m).collect()];
    }
    let even = m + m % 2;
    let mut out = Vec::with_capacity(even);
    for k in 0..even / 2 {
        // The zig-zag 0, 1, e−1, 2, e−2, … rotated by k; the dummy vertex
        // (index m, when m is odd) is dropped, which only joins its two
        // neighbours.
        let path: Vec<usize> = (0..even)
            .map(|j| {
                let step = if j % 2 == 1 {
                    j.div_ceil(2)
                } else {
                    even - j / 2
                };
                (k + step % even) % even
            })
            .filter(|&v| v < m)
            .collect();
        let mut back = path.clone();
        back.reverse();
        out.push(path);
        out.push(back);
    }
    out
}

/// The systematic orders of `tests` (in collected order): every ordered
/// pair of tests of one module adjacent at least once, every ordered pair
/// of modules adjacent as blocks at least once, modules kept whole.
pub fn cover(tests: &[String]) -> Vec<Vec<String>> {
    let mut modules: Vec<(&str, Vec<&String>)> = Vec::new();
    for t in tests {
        let m = module_of(t);
        match modules.iter_mut().find(|(name, _)| *name == m) {
            Some((_, members)) => {
                if !members.contains(&t) {
                    members.push(t)
                }
            }
            None => modules.push((m, vec![t])),
        }
    }
    let blocks = walecki(modules.len());
    let inner: Vec<Vec<Vec<usize>>> = modules.iter().map(|(_, t)| walecki(t.len())).collect();
    let count = inner.iter().map(Vec::len).chain([blocks.len()]).max();
    let (modules, inner, blocks) = (&modules, &inner, &blocks);
    (0..count.unwrap_or(1))
        .map(|i| {
            let block = &blocks[i % blocks.len()];
            block
                .iter()
                .flat_map(|&b| {
                    let own = &inner[b][i % inner[b].len()];
                    own.iter().map(move |&j| modules[b].1[j].clone())
                })
                .collect()
        })
        .collect()
}

/// How many orders [`cover`] builds for `tests`, without building them:
/// `max(w(largest module), w(modules))`.
pub fn cover_len(tests: &[String]) -> usize {
    let mut sizes: std::collections::BTreeMap<&str, std::collections::BTreeSet<&String>> =
        std::collections::BTreeMap::new();
    for t in tests {
        sizes.entry(module_of(t)).or_default().insert(t);
    }
    (sizes.values().map(|m| walecki_len(m.len())))
        .chain([walecki_len(sizes.len())])
        .max()
        .unwrap_or(1)
}

/// What [`cover`] guarantees for `tests`, in words: the orders, the tests
/// and modules, and the pairs they cover.
pub fn describe(tests: usize, modules: usize, orders: usize) -> String {
    format!(
        "{orders} systematic order(s) of {tests} test(s) in {modules} module(s): every ordered pair of tests of one module runs adjacently, and every ordered pair of modules as adjacent blocks, at least once"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn adjacent_pairs<T: Ord + Clone>(orders: &[Vec<T>]) -> BTreeSet<(T, T)> {
        orders
            .iter()
            .flat_map(|o| o.windows(2).map(|w| (w[0].clone(), w[1].clone())))
            .collect()
    }

    #[test]
    fn walecki_covers_every_ordered_pair_with_m_or_m_plus_one_orders() {
        for m in 0..40 {
            let orders = walecki(m);
            assert_eq!(orders.len(), walecki_len(m), "m = {m}");
            for o in &orders {
                let mut sorted = o.clone();
                sorted.sort();
                assert_eq!(sorted, (0..m).collect::<Vec<_>>(), "m = {m}: {o:?}");
            }
            let pairs = adjacent_pairs(&orders);
            let want = m * m.saturating_sub(1);
            assert_eq!(pairs.len(), want, "m = {m}");
            // Even m: exactly m orders, each pair once (no order wasted).
            if m % 2 == 0 && m > 0 {
                let total: usize = orders.iter().map(|o| o.len() - 1).sum();
                assert_eq!(total, want, "m = {m}");
            }
        }
    }

    fn ids(spec: &[(&str, usize)]) -> Vec<String> {
        spec.iter()
            .flat_map(|(m, n)| (0..*n).map(move |i| format!("{m}::t{i}")))
            .collect()
    }

    #[test]
    fn cover_keeps_modules_whole_and_covers_pairs_within_and_blocks_across() {
        let tests = ids(&[("a", 5), ("b", 8), ("c", 1), ("d", 3)]);
        let orders = cover(&tests);
        // max(w(8), w(5), w(4 modules)) = 8.
        assert_eq!(orders.len(), 8);
        assert_eq!(cover_len(&tests), 8);
        let pairs = adjacent_pairs(&orders);
        for x in &tests {
            for y in &tests {
                if x != y && module_of(x) == module_of(y) {
                    assert!(pairs.contains(&(x.clone(), y.clone())), "{x} {y}");
                }
            }
        }
        let mut block_pairs = BTreeSet::new();
        for o in &orders {
            assert_eq!(o.len(), tests.len());
            let mut seen: Vec<&str> = Vec::new();
            for t in o {
                let m = module_of(t);
                if seen.last() != Some(&m) {
                    assert!(!seen.contains(&m), "module {m} split in {o:?}");
                    seen.push(m);
                }
            }
            block_pairs.extend(seen.windows(2).map(|w| (w[0], w[1])));
        }
        assert_eq!(block_pairs.len(), 4 * 3);
    }

    #[test]
    fn a_runner_that_only_shuffles_by_seed_falls_back_and_says_so() {
        let recipes = crate::catalog::recipe::load(None).unwrap();
        let named = |n: &str| recipes.iter().find(|r| r.name == n);
        let mut pytest = Prepared::default();
        prepare(named("pytest"), &mut pytest);
        assert!(pytest.orders && !pytest.shuffle && pytest.orders_fallback.is_none());
        let mut go = Prepared::default();
        prepare(named("go"), &mut go);
        assert!(!go.orders && go.shuffle, "{go:?}");
        let why = go.orders_fallback.unwrap();
        assert!(why.contains("can only shuffle by seed"), "{why}");
        assert_eq!(go.notes, [why]);
        let mut none = Prepared::default();
        prepare(None, &mut none);
        assert!(none.missing.unwrap().message.contains("no recipe"));
    }

    #[test]
    fn one_test_is_one_order_and_many_modules_need_block_orders() {
        assert_eq!(cover(&ids(&[("a", 1)])), vec![ids(&[("a", 1)])]);
        let singles: Vec<String> = (0..7).map(|i| format!("m{i}::t")).collect();
        let orders = cover(&singles);
        assert_eq!(orders.len(), 8);
        assert_eq!(cover_len(&singles), 8);
        assert_eq!(cover_len(&[]), 1);
        assert_eq!(adjacent_pairs(&orders).len(), 42);
    }
}
