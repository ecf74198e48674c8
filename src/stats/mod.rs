//! Statistics: failure rates with exact intervals, cell-versus-baseline
//! comparison, and multiple-comparison correction. Pure and synchronous; no
//! I/O.
//!
//! This module owns:
//!
//! - [`proportion`]: `k` failures of `n` runs as a [`Proportion`] with its
//!   exact Clopper–Pearson interval, or, for `k = 0`, the one-sided
//!   zero-failure upper bound (`p < 3/N` at 95%, the "rule of three").
//! - [`fisher_exact`]: two-sided Fisher's exact test of a cell's failure
//!   count against the baseline's, computed in log space so rows of 10,000
//!   runs and more do not overflow.
//! - [`holm`]: Holm–Bonferroni step-down adjustment across all cells of a
//!   session.
//! - [`shift_test`]: whether two outcome distributions (a test's passed,
//!   failed, errored, skipped, … counts in two cells) differ: the exact
//!   2×C test, or the G-test for large tables.
//! - [`format_bound`]: the `rate < 0.139` text for a zero-failure bound,
//!   and [`p_text`]: a p-value in words, never 0.
//!
//! The inverse questions, "how many runs do I need to see a failure of
//! rate `p` with confidence `c`?" and "to tell a rate `p` from none?", are
//! answered by the plan module (`runs_needed`, `runs_to_separate`, which
//! use this one) and deliberately not repeated here: this module is a leaf.

pub mod effect;
pub mod verdict;

use serde::{Deserialize, Serialize};
use statrs::distribution::{Beta, ContinuousCDF};
use statrs::function::gamma::ln_gamma;

/// A binomial proportion with its interval at confidence c.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Proportion {
    /// Failures observed.
    pub k: u64,
    /// Runs observed.
    pub n: u64,
    /// Point estimate `k / n` (0 when `n == 0`).
    pub rate: f64,
    /// Lower end of the interval.
    pub low: f64,
    /// Upper end of the interval.
    pub high: f64,
}

/// `k` failures of `n` runs as a rate with its interval at `confidence`.
///
/// - `rate = k / n` (0 when `n == 0`).
/// - For `0 < k <= n`: the exact two-sided Clopper–Pearson interval at
///   confidence `c`, with `alpha = 1 - c`: `low` is the `alpha/2` quantile of
///   `Beta(k, n - k + 1)`, `high` the `1 - alpha/2` quantile of
///   `Beta(k + 1, n - k)`, and `high = 1` when `k == n`.
/// - For `k = 0`: the one-sided zero-failure bound `low = 0`,
///   `high = 1 - (1 - c)^(1/n)` (about `3/n` at 95%).
/// - For `n = 0`: `rate = 0`, `low = 0`, `high = 1`.
///
/// `confidence` is clamped to `[0, 1]`. The result always satisfies
/// `0 <= low <= rate <= high <= 1`.
///
/// # Panics
///
/// Panics if `k > n` or `confidence` is NaN.
pub fn proportion(k: u64, n: u64, confidence: f64) -> Proportion {
    assert!(k <= n, "proportion: k = {k} failures exceeds n = {n} runs");
    assert!(!confidence.is_nan(), "proportion: confidence is NaN");
    let c = confidence.clamp(0.0, 1.0);
    if n == 0 {
        return Proportion {
            k,
            n,
            rate: 0.0,
            low: 0.0,
            high: 1.0,
        };
    }
    let rate = k as f64 / n as f64;
    let (low, high) = if k == 0 {
        (0.0, zero_failure_bound(n, c))
    } else {
        let alpha = 1.0 - c;
        let low = beta_quantile(alpha / 2.0, k as f64, (n - k + 1) as f64);
        let high = if k == n {
            1.0
        } else {
            beta_quantile(1.0 - alpha / 2.0, (k + 1) as f64, (n - k) as f64)
        };
        (low, high)
    };
    Proportion {
        k,
        n,
        rate,
        // Guard the invariant against the last ulp of the quantile solver.
        low: low.clamp(0.0, rate),
        high: high.clamp(rate, 1.0),
    }
}

/// One-sided upper bound on the rate after `n > 0` runs with no failure:
/// `1 - (1 - c)^(1/n)`, computed as `-expm1(ln(1 - c) / n)` so it keeps its
/// precision for large `n`.
fn zero_failure_bound(n: u64, c: f64) -> f64 {
    -((1.0 - c).ln() / n as f64).exp_m1()
}

/// The `p` quantile of `Beta(a, b)`, for `a, b > 0`.
fn beta_quantile(p: f64, a: f64, b: f64) -> f64 {
    let beta = Beta::new(a, b).expect("beta shape parameters are positive and finite");
    beta.inverse_cdf(p.clamp(0.0, 1.0))
}

/// Two-sided Fisher's exact test p-value for the 2x2 table
/// `[[a, b], [c, d]] = [[fail_cell, pass_cell], [fail_base, pass_base]]`.
///
/// The p-value is the sum of the hypergeometric probabilities of all tables
/// with the same margins whose probability is at most the observed one's,
/// with a relative tolerance of `1e-7` as R's `fisher.test` uses (so tables
/// tied with the observed one up to rounding count). Probabilities are
/// computed in log space (via `ln_gamma`), so margins of tens of thousands
/// do not overflow; a p-value too small for f64 is [`P_FLOOR`]. Returns
/// 1.0 for degenerate margins (an empty row or column).
pub fn fisher_exact(a: u64, b: u64, c: u64, d: u64) -> f64 {
    let Some(tables) = same_margins(a, b, c, d) else {
        return 1.0;
    };
    let observed = tables.log_weight(a);
    // R: relErr <- 1 + 10^(-7); sum(d[d <= d[x] * relErr]).
    let threshold = observed + (1.0 + 1e-7f64).ln();
    tables.share(|_, l| l <= threshold)
}

/// One-sided Fisher's exact test p-value for the same table as
/// [`fisher_exact`]: the probability, with the margins fixed, of a table
/// at least as extreme in the stated direction — at least `a` failures in
/// the cell row (`cell_fails_more`), or at most `a`. For a hypothesis whose
/// direction was fixed before the data (a screen candidate's confirmation).
/// Returns 1.0 for degenerate margins; at least [`P_FLOOR`].
pub fn fisher_one_sided(a: u64, b: u64, c: u64, d: u64, cell_fails_more: bool) -> f64 {
    let Some(tables) = same_margins(a, b, c, d) else {
        return 1.0;
    };
    tables.share(|x, _| (cell_fails_more && x >= a) || (!cell_fails_more && x <= a))
}

/// The 2x2 tables with the margins of `[[a, b], [c, d]]`: with the margins
/// fixed, a table is determined by its top-left cell x, which ranges over
/// [lo, hi] with weight C(row_cell, x) * C(row_base, col_fail - x) (the
/// common denominator cancels).
struct Margins {
    row_cell: u64,
    row_base: u64,
    col_fail: u64,
    lo: u64,
    /// Each table's log weight, less the largest.
    logs: Vec<f64>,
    max: f64,
}

/// The tables of the same margins as `[[a, b], [c, d]]`; `None` for
/// degenerate margins (an empty row or column).
fn same_margins(a: u64, b: u64, c: u64, d: u64) -> Option<Margins> {
    let (row_cell, row_base, col_fail, col_pass) = (a + b, c + d, a + c, b + d);
    if row_cell == 0 || row_base == 0 || col_fail == 0 || col_pass == 0 {
        return None;
    }
    let lo = col_fail.saturating_sub(row_base);
    let hi = row_cell.min(col_fail);
    let mut m = Margins {
        row_cell,
        row_base,
        col_fail,
        lo,
        logs: Vec::new(),
        max: 0.0,
    };
    let raw: Vec<f64> = (lo..=hi).map(|x| m.raw_log_weight(x)).collect();
    m.max = raw.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    m.logs = raw.iter().map(|l| l - m.max).collect();
    Some(m)
}

impl Margins {
    fn raw_log_weight(&self, x: u64) -> f64 {
        ln_choose(self.row_cell, x) + ln_choose(self.row_base, self.col_fail - x)
    }

    /// Table x's log weight, less the largest.
    fn log_weight(&self, x: u64) -> f64 {
        self.raw_log_weight(x) - self.max
    }

    /// The probability of the tables `keep` (given x and its log weight)
    /// holds, at least [`P_FLOOR`].
    fn share(&self, keep: impl Fn(u64, f64) -> bool) -> f64 {
        let (mut total, mut tail) = (0.0, 0.0);
        for (x, &l) in (self.lo..).zip(&self.logs) {
            let w = l.exp();
            total += w;
            if keep(x, l) {
                tail += w;
            }
        }
        (tail / total).clamp(P_FLOOR, 1.0)
    }
}

/// The smallest p-value flakelab writes. A smaller one (f64 holds it as 0,
/// or not at all: complete separation of 10,000 runs a side is about
/// 1e-6000) is written as this and printed as `p < 1e-300`, so no p-value
/// of 0 is ever written or printed.
pub const P_FLOOR: f64 = 1e-300;

/// Tables of the same margins the exact 2×C test enumerates at most;
/// beyond that, [`shift_test`] uses the G-test.
pub const EXACT_TABLES: u64 = 2_000_000;

/// How [`shift_test`] computed its p-value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShiftMethod {
    /// Fisher–Freeman–Halton: every table of the same margins enumerated.
    Exact,
    /// The likelihood-ratio G-test against chi-square with C − 1 degrees
    /// of freedom (more than [`EXACT_TABLES`] tables).
    GTest,
}

/// Whether two distributions over the same categories differ: the
/// two-sided exact test of the 2×C table `[a, b]` (Fisher–Freeman–Halton,
/// the extension of Fisher's exact test beyond two columns), p-value of at
/// least [`P_FLOOR`].
///
/// With the row and column totals fixed, a table's probability is
/// `prod_j C(col_j, a_j) / C(N, row_a)`; the p-value sums the
/// probabilities of every table no more probable than the observed one
/// (with the relative tolerance `1e-7` of [`fisher_exact`]). Categories
/// empty in both rows are dropped, so with two categories left this is
/// exactly [`fisher_exact`]. When more than [`EXACT_TABLES`] tables share
/// the margins (large counts spread over many categories) the G-test
/// stands in, which is accurate there.
pub fn shift_test(a: &[u64], b: &[u64]) -> (f64, ShiftMethod) {
    assert_eq!(a.len(), b.len(), "shift_test: rows of unequal length");
    let cols: Vec<(u64, u64)> = a
        .iter()
        .zip(b)
        .map(|(&x, &y)| (x, y))
        .filter(|&(x, y)| x + y > 0)
        .collect();
    let (ra, rb): (u64, u64) = cols.iter().fold((0, 0), |(s, t), &(x, y)| (s + x, t + y));
    if cols.len() < 2 || ra == 0 || rb == 0 {
        return (1.0, ShiftMethod::Exact);
    }
    let totals: Vec<u64> = cols.iter().map(|&(x, y)| x + y).collect();
    if tables_with_margins(&totals, ra) > EXACT_TABLES {
        return (g_test(&cols).max(P_FLOOR), ShiftMethod::GTest);
    }
    // ln C(t_j, x) for every x of every column.
    let logs: Vec<Vec<f64>> = totals
        .iter()
        .map(|&t| (0..=t).map(|x| ln_choose(t, x)).collect())
        .collect();
    let observed: f64 = cols
        .iter()
        .zip(&logs)
        .map(|(&(x, _), l)| l[x as usize])
        .sum();
    let threshold = observed + (1.0 + 1e-7f64).ln();
    // Streaming log-sum-exp over every table: both sums relative to `max`.
    let mut acc = Sums {
        max: f64::NEG_INFINITY,
        total: 0.0,
        tail: 0.0,
    };
    let mut room: Vec<u64> = totals.clone();
    // room[j] = what columns j.. can still take.
    for j in (0..room.len().saturating_sub(1)).rev() {
        room[j] += room[j + 1];
    }
    enumerate(&totals, &logs, &room, 0, ra, 0.0, threshold, &mut acc);
    (
        (acc.tail / acc.total).clamp(P_FLOOR, 1.0),
        ShiftMethod::Exact,
    )
}

struct Sums {
    max: f64,
    total: f64,
    tail: f64,
}

impl Sums {
    fn add(&mut self, l: f64, in_tail: bool) {
        if l > self.max {
            let scale = (self.max - l).exp();
            self.total *= scale;
            self.tail *= scale;
            self.max = l;
        }
        let w = (l - self.max).exp();
        self.total += w;
        if in_tail {
            self.tail += w;
        }
    }
}

/// Every first row `x` with `x_j <= totals[j]` summing to `left` over the
/// columns from `j` on.
#[expect(clippy::too_many_arguments, reason = "one recursive walk")]
fn enumerate(
    totals: &[u64],
    logs: &[Vec<f64>],
    room: &[u64],
    j: usize,
    left: u64,
    so_far: f64,
    threshold: f64,
    acc: &mut Sums,
) {
    if j + 1 == totals.len() {
        if left <= totals[j] {
            let l = so_far + logs[j][left as usize];
            acc.add(l, l <= threshold);
        }
        return;
    }
    let after = room[j + 1];
    let low = left.saturating_sub(after);
    let high = left.min(totals[j]);
    for x in low..=high {
        enumerate(
            totals,
            logs,
            room,
            j + 1,
            left - x,
            so_far + logs[j][x as usize],
            threshold,
            acc,
        );
    }
}

/// How many first rows summing to `row` fit under the column totals,
/// counted up to just past [`EXACT_TABLES`].
fn tables_with_margins(totals: &[u64], row: u64) -> u64 {
    let cap = EXACT_TABLES + 1;
    let row = row as usize;
    let mut ways = vec![0u64; row + 1];
    ways[0] = 1;
    for &t in totals {
        // next[s] = sum of ways[s - x] for x in 0..=t: a sliding window.
        let mut next = vec![0u64; row + 1];
        let mut window = 0u64;
        for s in 0..=row {
            window = window.saturating_add(ways[s]);
            if s > t as usize {
                window = window.saturating_sub(ways[s - t as usize - 1]);
            }
            next[s] = window.min(cap);
        }
        ways = next;
    }
    ways[row].min(cap)
}

/// The G-test of the 2×C table `cols` (each `(a_j, b_j)`): `G = 2 sum O
/// ln(O / E)` against chi-square with C − 1 degrees of freedom.
fn g_test(cols: &[(u64, u64)]) -> f64 {
    use statrs::distribution::ChiSquared;
    let (ra, rb) = cols
        .iter()
        .fold((0.0, 0.0), |(s, t), &(x, y)| (s + x as f64, t + y as f64));
    let n = ra + rb;
    let mut g = 0.0;
    for &(x, y) in cols {
        let t = (x + y) as f64;
        for (o, row) in [(x as f64, ra), (y as f64, rb)] {
            if o > 0.0 {
                g += o * (o / (row * t / n)).ln();
            }
        }
    }
    let df = (cols.len() - 1) as f64;
    ChiSquared::new(df)
        .map(|c| c.sf(2.0 * g))
        .unwrap_or(1.0)
        .clamp(0.0, 1.0)
}

/// `ln C(n, k)` for `k <= n`.
fn ln_choose(n: u64, k: u64) -> f64 {
    if k == 0 || k == n {
        return 0.0;
    }
    ln_gamma(n as f64 + 1.0) - ln_gamma(k as f64 + 1.0) - ln_gamma((n - k) as f64 + 1.0)
}

/// Holm–Bonferroni step-down adjusted p-values, in the same order as the
/// input.
///
/// With the `m` p-values sorted ascending as `p(1) <= ... <= p(m)`, the
/// adjusted value of `p(i)` is `min(1, max_{j <= i} (m - j + 1) * p(j))`,
/// so the adjustment is monotone in the raw p-value and never exceeds 1
/// (R's `p.adjust(p, "holm")`). NaN entries stay NaN and do not count
/// towards `m`, as in R.
pub fn holm(pvalues: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..pvalues.len())
        .filter(|&i| !pvalues[i].is_nan())
        .collect();
    order.sort_by(|&i, &j| pvalues[i].total_cmp(&pvalues[j]));
    let m = order.len();
    let mut adjusted = vec![f64::NAN; pvalues.len()];
    let mut running = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        let scaled = ((m - rank) as f64 * pvalues[i]).min(1.0);
        running = running.max(scaled);
        adjusted[i] = running;
    }
    adjusted
}

/// Formats an upper bound on a failure rate (typically the `high` of a
/// zero-failure [`Proportion`]) as `"rate < 0.139"`, rounded to 3
/// significant digits: a bound on a rate is written as a rate, never like a
/// p-value.
///
/// Bounds below `1e-4` use scientific notation (`"rate < 1.23e-5"`); a
/// bound of 0 prints as `"rate < 0"`, and non-finite input prints as-is.
pub fn format_bound(high: f64) -> String {
    format!("rate < {}", three_significant(high))
}

/// A p-value in words: `p=0.032`, `p=1.5e-11`, and `p < 1e-300` at
/// [`P_FLOOR`] or below (never `p=0`).
pub fn p_text(p: f64) -> String {
    if p <= P_FLOOR {
        "p < 1e-300".to_string()
    } else if p >= 0.001 {
        format!("p={p:.3}")
    } else {
        format!("p={p:.1e}")
    }
}

/// `x` with 3 significant digits.
fn three_significant(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    if x == 0.0 {
        return "0".to_string();
    }
    if x.abs() < 1e-4 {
        return format!("{x:.2e}");
    }
    let magnitude = x.abs().log10().floor() as i32;
    let decimals = |mag: i32| usize::try_from(2 - mag).unwrap_or(0);
    let text = format!("{:.*}", decimals(magnitude), x);
    // Rounding can carry into the next power of ten (0.09996 -> 0.1000):
    // redo with one decimal fewer so there are still 3 significant digits.
    let rounded: f64 = text.parse().unwrap_or(x);
    if rounded.abs() >= 10f64.powi(magnitude + 1) {
        format!("{:.*}", decimals(magnitude + 1), x)
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn close(actual: f64, expected: f64, tol: f64) -> bool {
        (actual - expected).abs() <= tol
    }

    macro_rules! assert_close {
        ($actual:expr, $expected:expr, $tol:expr) => {{
            let (a, e) = ($actual, $expected);
            assert!(close(a, e, $tol), "{a} is not within {} of {e}", $tol);
        }};
    }

    // Reference intervals: R `binom.test(k, n)$conf.int`, reproduced with
    // SciPy 1.17.1 `scipy.stats.binomtest(k, n).proportion_ci(method="exact")`.
    #[test]
    fn clopper_pearson_3_of_20() {
        // R: 0.03207094 0.37892683
        let p = proportion(3, 20, 0.95);
        assert_close!(p.rate, 0.15, 1e-15);
        assert_close!(p.low, 0.032_070_937_185_544_77, 1e-9);
        assert_close!(p.high, 0.378_926_826_545_295_64, 1e-9);
    }

    #[test]
    fn clopper_pearson_20_of_20() {
        // R: 0.8315665 1.0000000 (low = 0.025^(1/20))
        let p = proportion(20, 20, 0.95);
        assert_close!(p.low, 0.831_566_529_016_914_5, 1e-9);
        assert_eq!(p.high, 1.0);
        assert_eq!(p.rate, 1.0);
    }

    #[test]
    fn clopper_pearson_10_of_20() {
        // R: 0.2719578 0.7280422
        let p = proportion(10, 20, 0.95);
        assert_close!(p.low, 0.271_957_849_560_791_33, 1e-9);
        assert_close!(p.high, 0.728_042_150_439_208_6, 1e-9);
    }

    #[test]
    fn clopper_pearson_other_published_values() {
        // SciPy binomtest(...).proportion_ci(method="exact"), 95%.
        let cases = [
            (1, 1000, 2.531_748_749_167_463_4e-5, 0.005_558_924_279_849_9),
            (7, 50, 0.058_191_700_339_973_44, 0.267_396_002_497_008_46),
            (499, 500, 0.988_907_523_100_997_3, 0.999_949_365_665_992_5),
        ];
        for (k, n, low, high) in cases {
            let p = proportion(k, n, 0.95);
            assert!(close(p.low, low, 1e-9), "{k}/{n}: low {}", p.low);
            assert!(close(p.high, high, 1e-9), "{k}/{n}: high {}", p.high);
        }
    }

    #[test]
    fn zero_failures_use_one_sided_bound() {
        // 1 - 0.05^(1/20) = 0.13910834066826516 (rule of three: ~3/20).
        let p = proportion(0, 20, 0.95);
        assert_eq!((p.k, p.n, p.rate, p.low), (0, 20, 0.0, 0.0));
        assert_close!(p.high, 0.139_108_340_668_265_16, 1e-12);
        assert_eq!(format_bound(p.high), "rate < 0.139");
        // 1 - 0.01^(1/300) at 99%.
        assert_close!(
            proportion(0, 300, 0.99).high,
            0.015_233_347_889_841_875,
            1e-12
        );
    }

    #[test]
    fn no_runs_means_no_information() {
        let p = proportion(0, 0, 0.95);
        assert_eq!(
            p,
            Proportion {
                k: 0,
                n: 0,
                rate: 0.0,
                low: 0.0,
                high: 1.0
            }
        );
    }

    #[test]
    #[should_panic(expected = "exceeds")]
    fn more_failures_than_runs_panics() {
        proportion(3, 2, 0.95);
    }

    #[test]
    fn proportion_round_trips_through_json() {
        let p = proportion(3, 20, 0.95);
        let text = serde_json::to_string(&p).unwrap();
        let back: Proportion = serde_json::from_str(&text).unwrap();
        assert_eq!(p, back);
    }

    // Reference p-values: R `fisher.test(matrix(..., 2, byrow = TRUE))`,
    // reproduced with SciPy 1.17.1 `scipy.stats.fisher_exact(table)`.
    #[test]
    fn fisher_tea_tasting() {
        // Fisher's lady tasting tea, R: p-value = 0.4857 (= 34/70).
        assert_close!(fisher_exact(3, 1, 1, 3), 0.485_714_285_714_285_65, 1e-12);
    }

    #[test]
    fn fisher_complete_separation() {
        // R / SciPy: 1.4508889103849688e-11 (= 2 / C(40, 20)).
        let p = fisher_exact(20, 0, 0, 20);
        assert!(close(p, 1.450_888_910_384_968_8e-11, 1e-20), "{p}");
    }

    #[test]
    fn fisher_one_sided_sums_one_tail() {
        // R: fisher.test(matrix(c(3,1,1,3), 2), alternative = "greater")
        // gives 0.2429 (= 17/70); "less" 0.9857 (= 69/70).
        assert_close!(fisher_one_sided(3, 1, 1, 3, true), 17.0 / 70.0, 1e-12);
        assert_close!(fisher_one_sided(3, 1, 1, 3, false), 69.0 / 70.0, 1e-12);
        // Complete separation, either way round: 1 / C(10, 5), half the
        // two-sided p.
        assert_close!(fisher_one_sided(5, 0, 0, 5, true), 1.0 / 252.0, 1e-15);
        assert_close!(fisher_one_sided(0, 5, 5, 0, false), 1.0 / 252.0, 1e-15);
        assert_close!(
            2.0 * fisher_one_sided(5, 0, 0, 5, true),
            fisher_exact(5, 0, 0, 5),
            1e-15
        );
        // The other direction from the one observed is no evidence.
        assert_eq!(fisher_one_sided(5, 0, 0, 5, false), 1.0);
        assert_eq!(fisher_one_sided(0, 5, 0, 5, true), 1.0);
    }

    #[test]
    fn fisher_degenerate_margins() {
        assert_eq!(fisher_exact(0, 20, 0, 20), 1.0);
        assert_eq!(fisher_exact(20, 0, 20, 0), 1.0);
        assert_eq!(fisher_exact(0, 0, 3, 17), 1.0);
        assert_eq!(fisher_exact(0, 0, 0, 0), 1.0);
    }

    #[test]
    fn fisher_asymmetric_tables() {
        // SciPy fisher_exact values.
        let cases = [
            ([7, 13, 1, 19], 0.043_596_043_596_043_59),
            ([12, 88, 3, 197], 1.990_424_534_017_884e-4),
            ([1, 9, 11, 3], 0.002_759_456_185_220_083_6),
            ([30, 9970, 10, 9990], 0.002_199_528_342_472_308_4),
        ];
        for ([a, b, c, d], expected) in cases {
            let p = fisher_exact(a, b, c, d);
            assert!(
                (p - expected).abs() <= 1e-9 * expected,
                "[[{a},{b}],[{c},{d}]]: {p} vs {expected}"
            );
        }
    }

    #[test]
    fn fisher_large_rows_do_not_overflow() {
        let p = fisher_exact(5000, 5000, 5000, 5000);
        assert_close!(p, 1.0, 1e-9);
        let p = fisher_exact(10_000, 0, 0, 10_000);
        assert_eq!(p, P_FLOOR, "too small for f64: floored");
    }

    #[test]
    fn holm_textbook_example() {
        // R: p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm") = 0.03 0.06 0.06 0.02
        let adjusted = holm(&[0.01, 0.04, 0.03, 0.005]);
        let expected = [0.03, 0.06, 0.06, 0.02];
        assert_eq!(adjusted.len(), expected.len());
        for (a, e) in adjusted.iter().zip(expected) {
            assert_close!(*a, e, 1e-12);
        }
    }

    #[test]
    fn holm_clamps_and_skips_nan() {
        // R: p.adjust(c(0.5, 0.9, 0.01), "holm") = 1.00 1.00 0.03
        assert_eq!(holm(&[0.5, 0.9, 0.01]), vec![1.0, 1.0, 0.03]);
        // R: p.adjust(c(0.02, NA, 0.01), "holm") = 0.02 NA 0.02
        let adjusted = holm(&[0.02, f64::NAN, 0.01]);
        assert_eq!(adjusted[0], 0.02);
        assert!(adjusted[1].is_nan());
        assert_eq!(adjusted[2], 0.02);
        assert!(holm(&[]).is_empty());
    }

    #[test]
    fn format_bound_uses_three_significant_digits() {
        assert_eq!(format_bound(0.139_108_340_668_265_16), "rate < 0.139");
        assert_eq!(format_bound(0.005_558_924_279_849_9), "rate < 0.00556");
        assert_eq!(format_bound(0.099_96), "rate < 0.100");
        assert_eq!(format_bound(1.0), "rate < 1.00");
        assert_eq!(format_bound(0.000_299_5), "rate < 0.000300");
        assert_eq!(format_bound(2.995_732e-5), "rate < 3.00e-5");
        assert_eq!(format_bound(0.0), "rate < 0");
    }

    #[test]
    fn p_values_are_never_printed_as_zero() {
        assert_eq!(p_text(0.0321), "p=0.032");
        assert_eq!(p_text(1.45e-11), "p=1.5e-11");
        assert_eq!(p_text(P_FLOOR), "p < 1e-300");
        assert_eq!(p_text(0.0), "p < 1e-300");
        assert_eq!(fisher_exact(10_000, 0, 0, 10_000), P_FLOOR);
        assert_eq!(p_text(fisher_exact(10_000, 0, 0, 10_000)), "p < 1e-300");
        let (p, _) = shift_test(&[10_000, 0, 0], &[0, 5_000, 5_000]);
        assert_eq!(p, P_FLOOR);
    }

    #[test]
    fn the_shift_test_with_two_categories_is_fishers() {
        for (a, b, c, d) in [
            (3, 1, 1, 3),
            (7, 13, 1, 19),
            (12, 88, 3, 197),
            (20, 0, 0, 20),
            (0, 5, 0, 5),
        ] {
            let (p, method) = shift_test(&[a, b, 0], &[c, d, 0]);
            assert_eq!(method, ShiftMethod::Exact);
            assert_close!(p, fisher_exact(a, b, c, d), 1e-12);
        }
    }

    // Reference p-values: a brute-force enumeration of every table of the
    // margins in exact rational arithmetic (Python `fractions`, the same
    // definition as R's `fisher.test` on an r×c table).
    #[test]
    fn the_shift_test_on_three_categories() {
        // Always failed at baseline, always skipped in the cell (3 runs each):
        // 2 / C(6, 3) = 0.1, like a 3-of-3 flip.
        let (p, _) = shift_test(&[0, 3, 0], &[0, 0, 3]);
        assert_close!(p, 0.1, 1e-12);
        // 10 passed at baseline; 5 passed, 3 errored, 2 skipped in the cell:
        // p = 21/646.
        let (p, _) = shift_test(&[10, 0, 0], &[5, 3, 2]);
        assert_close!(p, 21.0 / 646.0, 1e-12);
        // [[1, 2, 3], [3, 2, 1]]: p = 59/77.
        let (p, _) = shift_test(&[1, 2, 3], &[3, 2, 1]);
        assert_close!(p, 59.0 / 77.0, 1e-9);
        // [[40, 5, 5], [30, 12, 8]]: p = 0.0787923053905471.
        let (p, _) = shift_test(&[40, 5, 5], &[30, 12, 8]);
        assert_close!(p, 0.078_792_305_390_547_14, 1e-9);
        // Nothing to compare.
        assert_eq!(shift_test(&[4, 0], &[6, 0]).0, 1.0);
        assert_eq!(shift_test(&[0, 0], &[6, 1]).0, 1.0);
    }

    #[test]
    fn large_spread_tables_use_the_g_test_and_agree_with_the_exact_one_nearby() {
        // Six categories of a thousand runs a side: some 1e10 tables.
        // G = 15.21 on 5 degrees of freedom: p = 0.0095.
        let (p, method) = shift_test(&[900, 50, 30, 20, 10, 10], &[850, 80, 40, 30, 20, 10]);
        assert_eq!(method, ShiftMethod::GTest);
        assert!(p > 0.009 && p < 0.010, "{p}");
        // Just under the limit the exact test runs and is close to the G-test.
        let (exact, method) = shift_test(&[40, 5, 5], &[30, 12, 8]);
        assert_eq!(method, ShiftMethod::Exact);
        let g = g_test(&[(40, 30), (5, 12), (5, 8)]);
        assert!((exact - g).abs() < 0.05, "{exact} vs {g}");
    }

    proptest! {
        #[test]
        fn interval_contains_rate((n, k) in (0u64..=500).prop_flat_map(|n| (Just(n), 0..=n))) {
            let p = proportion(k, n, 0.95);
            prop_assert!(0.0 <= p.low, "{:?}", p);
            prop_assert!(p.low <= p.rate, "{:?}", p);
            prop_assert!(p.rate <= p.high, "{:?}", p);
            prop_assert!(p.high <= 1.0, "{:?}", p);
            if n > 0 {
                prop_assert_eq!(p.rate, k as f64 / n as f64);
            }
        }

        #[test]
        fn interval_shrinks_with_more_runs((n, k) in (1u64..=500).prop_flat_map(|n| (Just(n), 0..=n))) {
            let small = proportion(k, n, 0.95);
            let large = proportion(4 * k, 4 * n, 0.95);
            prop_assert_eq!(small.rate, large.rate);
            prop_assert!(
                large.high - large.low < small.high - small.low,
                "{:?} vs {:?}", small, large
            );
        }

        #[test]
        fn fisher_is_a_probability_and_symmetric(
            a in 0u64..60, b in 0u64..60, c in 0u64..60, d in 0u64..60,
        ) {
            let p = fisher_exact(a, b, c, d);
            prop_assert!((0.0..=1.0).contains(&p));
            // Swapping rows, or columns, gives the same test.
            prop_assert!((p - fisher_exact(c, d, a, b)).abs() <= 1e-12);
            prop_assert!((p - fisher_exact(b, a, d, c)).abs() <= 1e-12);
        }

        #[test]
        fn the_shift_test_is_a_probability_and_symmetric(
            a in proptest::collection::vec(0u64..12, 4),
            b in proptest::collection::vec(0u64..12, 4),
        ) {
            let (p, method) = shift_test(&a, &b);
            prop_assert_eq!(method, ShiftMethod::Exact);
            prop_assert!((P_FLOOR..=1.0).contains(&p), "{}", p);
            // Swapping the rows, or reordering the categories, gives the same test.
            prop_assert!((p - shift_test(&b, &a).0).abs() <= 1e-9);
            let (ra, rb): (Vec<u64>, Vec<u64>) = (a.iter().rev().copied().collect(), b.iter().rev().copied().collect());
            prop_assert!((p - shift_test(&ra, &rb).0).abs() <= 1e-9);
            // Two categories: Fisher's exact test.
            prop_assert!((shift_test(&a[..2], &b[..2]).0 - fisher_exact(a[0], a[1], b[0], b[1])).abs() <= 1e-9);
        }

        #[test]
        fn holm_is_bounded_and_order_preserving(ps in proptest::collection::vec(0.0f64..=1.0, 0..20)) {
            let adjusted = holm(&ps);
            prop_assert_eq!(adjusted.len(), ps.len());
            for (i, (&p, &q)) in ps.iter().zip(&adjusted).enumerate() {
                prop_assert!(p <= q && q <= 1.0);
                for (&p2, &q2) in ps.iter().zip(&adjusted).skip(i + 1) {
                    if p < p2 {
                        prop_assert!(q <= q2);
                    }
                }
            }
        }
    }
}
