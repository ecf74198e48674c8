//! How many runs decide one question of a bisection when the victim's
//! outcome under its reference order is not the same every time. A run
//! that shows the sought outcome answers "yes" at once (it happened); "no"
//! needs as many runs in a row without it as make that unlikely for a set
//! that shows it as often as the reference order did: the smallest `n`
//! with `(1 - p)^n <= 1 - confidence`, `p` the reference's shown/runs.

use serde::{Deserialize, Serialize};

/// At most this many runs per question: beyond, the search would cost more
/// than it can tell.
pub const MAX_PER_QUESTION: u32 = 30;

/// The repetition rule of a bisection whose reference order is intermittent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Repeat {
    /// Runs of the reference order (the failing order, or the passing one
    /// for a brittle test's setter search).
    pub runs: u32,
    /// Of those, how many showed the sought outcome.
    pub shown: u32,
    /// Runs in a row without it that answer "no".
    pub per_question: u32,
    /// The confidence each "no" is decided at.
    pub confidence: f64,
}

impl Repeat {
    /// The rule for a reference order that showed the outcome `shown` of
    /// `runs` times; `None` when it is deterministic (every run, or none).
    pub fn of(shown: u32, runs: u32, confidence: f64) -> Option<Repeat> {
        if shown == 0 || shown >= runs {
            return None;
        }
        Some(Repeat {
            runs,
            shown,
            per_question: runs_to_decide(f64::from(shown) / f64::from(runs), confidence),
            confidence,
        })
    }

    /// In words, for the result and the progress line.
    pub fn describe(&self, what: &str) -> String {
        format!(
            "intermittent: the victim {what} {} of {} runs of its reference order; each question took up to {} run(s), \"no\" only after {} in a row without it ({:.0}% confidence)",
            self.shown,
            self.runs,
            self.per_question,
            self.per_question,
            self.confidence * 100.0
        )
    }
}

/// The smallest `n` with `(1 - p)^n <= 1 - confidence` (1 for `p >= 1`),
/// capped at [`MAX_PER_QUESTION`].
pub fn runs_to_decide(p: f64, confidence: f64) -> u32 {
    if p >= 1.0 {
        return 1;
    }
    if p <= 0.0 {
        return MAX_PER_QUESTION;
    }
    let alpha = (1.0 - confidence).clamp(1e-9, 1.0);
    let n = (alpha.ln() / (1.0 - p).ln()).ceil();
    (n.max(1.0) as u32).min(MAX_PER_QUESTION)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deterministic_order_needs_one_run_per_question() {
        assert_eq!(Repeat::of(3, 3, 0.95), None);
        assert_eq!(Repeat::of(0, 3, 0.95), None);
        assert_eq!(runs_to_decide(1.0, 0.95), 1);
    }

    #[test]
    fn half_the_runs_need_five_in_a_row_at_95_percent() {
        // 0.5^4 = 0.0625 > 0.05 >= 0.5^5.
        assert_eq!(runs_to_decide(0.5, 0.95), 5);
        let r = Repeat::of(2, 3, 0.95).unwrap();
        // (1/3)^2 = 0.111 > 0.05 >= (1/3)^3.
        assert_eq!(r.per_question, 3);
        assert!(
            r.describe("failed").contains("2 of 3 runs"),
            "{}",
            r.describe("failed")
        );
        assert_eq!(runs_to_decide(0.01, 0.99), MAX_PER_QUESTION);
        assert_eq!(runs_to_decide(0.5, 0.99), 7);
    }
}
