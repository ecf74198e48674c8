//! Effect sizes: how much a perturbation changes a failure rate, with a
//! confidence interval, beside every difference a report shows. Pure; no
//! I/O.
//!
//! - When the baseline failed at least once, the **ratio** of the failure
//!   rates (cell / baseline, the amplification the perturbation causes)
//!   with the Katz log interval: `ln(RR) ± z·sqrt(1/a − 1/n₁ + 1/c − 1/n₀)`
//!   (Katz, Baptista, Azen & Pike 1978). When the cell never failed, 0.5 is
//!   added to every cell of the 2×2 table (each count, and 1 to each `n`)
//!   so the logarithm exists, and the low end is 0.
//! - When the baseline never failed the ratio is infinite, so the
//!   **difference** of the rates (cell − baseline) is given instead, with
//!   Newcombe's hybrid score interval (Newcombe 1998, method 10), built
//!   from the two Wilson score intervals: sound at 0 and at N failures of
//!   N, where the Wald interval collapses.
//!
//! `z` is the two-sided normal quantile of the confidence.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Normal};

/// An effect size with its interval at the report's confidence.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Effect {
    /// `ratio` (cell rate / baseline rate) or `difference` (cell rate −
    /// baseline rate, when the baseline never failed).
    pub kind: &'static str,
    /// The point estimate.
    pub estimate: f64,
    /// Lower end of the interval.
    pub low: f64,
    /// Upper end of the interval.
    pub high: f64,
}

/// The effect of a cell's `k` of `n` failures against the baseline's, at
/// `confidence`; `None` when either side has no runs.
pub fn effect(cell: (u64, u64), baseline: (u64, u64), confidence: f64) -> Option<Effect> {
    let ((k1, n1), (k0, n0)) = (cell, baseline);
    if n1 == 0 || n0 == 0 || k1 > n1 || k0 > n0 {
        return None;
    }
    let z = z_of(confidence);
    if k0 == 0 {
        let (low, high) = newcombe(cell, baseline, z);
        return Some(Effect {
            kind: "difference",
            estimate: k1 as f64 / n1 as f64,
            low,
            high,
        });
    }
    let (estimate, low, high) = katz(cell, baseline, z);
    Some(Effect {
        kind: "ratio",
        estimate,
        low,
        high,
    })
}

/// The two-sided normal quantile of `confidence` (1.96 at 95%).
fn z_of(confidence: f64) -> f64 {
    let c = confidence.clamp(0.5, 0.999_999);
    let normal = Normal::new(0.0, 1.0).expect("the standard normal");
    normal.inverse_cdf(1.0 - (1.0 - c) / 2.0)
}

/// The rate ratio and its Katz log interval (0.5 added to every cell of
/// the table when the cell never failed).
fn katz((k1, n1): (u64, u64), (k0, n0): (u64, u64), z: f64) -> (f64, f64, f64) {
    let estimate = (k1 as f64 / n1 as f64) / (k0 as f64 / n0 as f64);
    let add = if k1 == 0 { 0.5 } else { 0.0 };
    let (a, m1) = (k1 as f64 + add, n1 as f64 + 2.0 * add);
    let (c, m0) = (k0 as f64 + add, n0 as f64 + 2.0 * add);
    let ln = ((a / m1) / (c / m0)).ln();
    let se = (1.0 / a - 1.0 / m1 + 1.0 / c - 1.0 / m0).max(0.0).sqrt();
    // A cell that never failed: the ratio can be 0, so its low end is.
    let low = if k1 == 0 { 0.0 } else { (ln - z * se).exp() };
    (estimate, low, (ln + z * se).exp())
}

/// The Wilson score interval of `k` of `n`.
fn wilson(k: u64, n: u64, z: f64) -> (f64, f64) {
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let z2 = z * z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = z / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// Newcombe's hybrid score interval for `p₁ − p₀`.
fn newcombe((k1, n1): (u64, u64), (k0, n0): (u64, u64), z: f64) -> (f64, f64) {
    let (p1, p0) = (k1 as f64 / n1 as f64, k0 as f64 / n0 as f64);
    let (l1, u1) = wilson(k1, n1, z);
    let (l0, u0) = wilson(k0, n0, z);
    let d = p1 - p0;
    let low = d - ((p1 - l1).powi(2) + (u0 - p0).powi(2)).sqrt();
    let high = d + ((u1 - p1).powi(2) + (p0 - l0).powi(2)).sqrt();
    (low.max(-1.0), high.min(1.0))
}

/// The effect in a table cell: `rate ×2.30 [1.49, 3.55]` (a ratio) or
/// `rate +1.00 [+0.45, +1.00]` (a difference of rates).
pub fn short(e: &Effect) -> String {
    match e.kind {
        "ratio" => format!(
            "rate ×{} [{}, {}]",
            sig(e.estimate),
            sig(e.low),
            sig(e.high)
        ),
        _ => format!("rate {:+.2} [{:+.2}, {:+.2}]", e.estimate, e.low, e.high),
    }
}

/// What `k` failures of `n` runs bound the rate to, at `confidence`, in
/// words: `rate > 0.368 at 95%` when every run failed (the one-sided
/// Clopper–Pearson bound, `(1 − c)^(1/n)`), `rate < 0.632 at 95%` when
/// none did, else the two-sided interval (`rate in [0.0084, 0.906] at
/// 95%`). Empty when nothing was measured.
pub fn bound_text(k: u64, n: u64, confidence: f64) -> String {
    let pct = (confidence * 100.0).round();
    if n == 0 || k > n {
        return String::new();
    }
    // A one-sided bound at c is the two-sided interval's end at 1 − 2(1 − c).
    let one_sided = crate::stats::proportion(k, n, (2.0 * confidence - 1.0).max(0.0));
    if k == n {
        format!("rate > {:.3} at {pct}%", one_sided.low)
    } else if k == 0 {
        format!(
            "rate < {:.3} at {pct}%",
            crate::stats::proportion(0, n, confidence).high
        )
    } else {
        let p = crate::stats::proportion(k, n, confidence);
        format!("rate in [{:.3}, {:.3}] at {pct}%", p.low, p.high)
    }
}

/// Two significant digits (three below 1), never scientific.
fn sig(x: f64) -> String {
    if !x.is_finite() {
        return "∞".into();
    }
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 5e-4
    }

    #[test]
    fn newcombe_matches_his_published_examples() {
        // Newcombe (1998), Statistics in Medicine 17:873–890, Table II,
        // method 10, the examples whose second proportion is not 0 …
        let z = z_of(0.95);
        for ((k1, n1), (k0, n0), (low, high)) in [
            ((56, 70), (48, 80), (0.0524, 0.3339)),
            ((9, 10), (3, 10), (0.1705, 0.8090)),
            ((6, 7), (2, 7), (0.0582, 0.8062)),
        ] {
            let (l, h) = newcombe((k1, n1), (k0, n0), z);
            assert!(
                close(l, low) && close(h, high),
                "{k1}/{n1} {k0}/{n0}: {l} {h}"
            );
        }
        // … and those whose baseline never failed, where this module uses it.
        for ((k1, n1), (k0, n0), (low, high)) in [
            ((5, 56), (0, 29), (-0.0381, 0.1926)),
            ((10, 10), (0, 20), (0.6791, 1.0)),
        ] {
            let e = effect((k1, n1), (k0, n0), 0.95).unwrap();
            assert_eq!(e.kind, "difference");
            assert!(close(e.low, low) && close(e.high, high), "{e:?}");
        }
    }

    #[test]
    fn katz_matches_the_formula_worked_by_hand() {
        // 20 of 100 against 10 of 100: RR 2, SE(ln RR) = sqrt(0.13) =
        // 0.36056, 2·exp(±1.95996·0.36056) = [0.9865, 4.0546].
        let e = effect((20, 100), (10, 100), 0.95).unwrap();
        assert_eq!(e.kind, "ratio");
        assert!(close(e.estimate, 2.0), "{e:?}");
        assert!(close(e.low, 0.9865) && close(e.high, 4.0546), "{e:?}");
        // Altman, Practical Statistics for Medical Research (1991), §10.11:
        // 46 of 90 against 20 of 90 (RR 2.30): Katz 95% [1.49, 3.55].
        let e = effect((46, 90), (20, 90), 0.95).unwrap();
        assert!(close(e.estimate, 2.3), "{e:?}");
        assert!(
            (e.low - 1.49).abs() < 0.01 && (e.high - 3.55).abs() < 0.01,
            "{e:?}"
        );
    }

    #[test]
    fn a_cell_that_never_failed_gets_the_half_correction() {
        // 0 of 10 against 5 of 10: 0.5/11 over 5.5/11 = 0.0909, SE(ln) =
        // sqrt(1/0.5 − 1/11 + 1/5.5 − 1/11) = 1.4142: high 0.0909·e^2.772.
        let e = effect((0, 10), (5, 10), 0.95).unwrap();
        assert_eq!((e.kind, e.estimate, e.low), ("ratio", 0.0, 0.0));
        assert!(
            close(e.high, 0.0909 * (1.95996 * std::f64::consts::SQRT_2).exp()),
            "{e:?}"
        );
    }

    #[test]
    fn no_runs_no_effect_and_the_interval_holds_the_estimate() {
        assert_eq!(effect((0, 0), (1, 4), 0.95), None);
        assert_eq!(effect((1, 4), (0, 0), 0.95), None);
        for cell in [(0, 6), (3, 6), (6, 6)] {
            for base in [(0, 6), (1, 6), (6, 6)] {
                let e = effect(cell, base, 0.95).unwrap();
                assert!(
                    e.low <= e.estimate && e.estimate <= e.high,
                    "{cell:?} {base:?} {e:?}"
                );
            }
        }
        // More confidence, a wider interval.
        let narrow = effect((6, 6), (0, 6), 0.90).unwrap();
        let wide = effect((6, 6), (0, 6), 0.99).unwrap();
        assert!(wide.low < narrow.low);
    }

    #[test]
    fn a_replays_bound_is_one_sided_at_its_ends() {
        // 3 of 3: 0.05^(1/3) = 0.368; 0 of 3: 1 − 0.05^(1/3) = 0.632.
        assert_eq!(bound_text(3, 3, 0.95), "rate > 0.368 at 95%");
        assert_eq!(bound_text(0, 3, 0.95), "rate < 0.632 at 95%");
        // 1 of 3, Clopper–Pearson [0.0084, 0.906].
        assert_eq!(bound_text(1, 3, 0.95), "rate in [0.008, 0.906] at 95%");
        assert_eq!(bound_text(0, 0, 0.95), "");
    }

    #[test]
    fn the_words_name_the_kind() {
        let e = effect((4, 4), (0, 4), 0.95).unwrap();
        assert_eq!(short(&e), format!("rate +1.00 [{:+.2}, +1.00]", e.low));
        let e = effect((8, 10), (2, 10), 0.95).unwrap();
        assert!(short(&e).starts_with("rate ×4.00 ["), "{}", short(&e));
    }
}
