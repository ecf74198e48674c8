//! When the plain progress fallback writes a line: at each 10% of the runs
//! or once a minute, whichever comes first, and never twice for the same
//! count of runs done. Pure: fed the counts and the elapsed time.

use std::time::Duration;

/// The longest wait between two lines while runs keep finishing.
pub const EVERY: Duration = Duration::from_secs(60);

/// The decision state of the plain fallback.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cadence {
    /// The last 10% step written (0 to 10).
    step: u64,
    /// When the last line was written (since the start).
    at: Duration,
    /// Runs done at the last line.
    done: u64,
}

impl Cadence {
    /// Whether a line is due now that `done` of `total` runs are done,
    /// `now` after the start; a due line is taken as written.
    pub fn due(&mut self, done: u64, total: u64, now: Duration) -> bool {
        if done == self.done || total == 0 {
            return false;
        }
        let step = (done * 10 / total).min(10);
        if step > self.step || now.saturating_sub(self.at) >= EVERY {
            *self = Cadence {
                step,
                at: now,
                done,
            };
            return true;
        }
        false
    }

    /// Whether a session that ends with `done` of `total` runs done owes a
    /// last line saying so: it ran some runs and stopped before its plan
    /// (even at the count of its last line, which read as still running).
    pub fn stopped_due(&self, done: u64, total: u64) -> bool {
        done > 0 && done < total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The run counts (1 to `total`) at which lines are written when the
    /// `i`-th run ends at `at(i)`.
    fn lines(total: u64, at: impl Fn(u64) -> Duration) -> Vec<u64> {
        let mut c = Cadence::default();
        (1..=total).filter(|&d| c.due(d, total, at(d))).collect()
    }

    #[test]
    fn a_fast_session_writes_a_line_per_tenth_and_no_more() {
        assert_eq!(
            lines(40, |_| Duration::ZERO),
            [4, 8, 12, 16, 20, 24, 28, 32, 36, 40]
        );
        // Fewer runs than steps: a line per run, never more than ten.
        assert_eq!(lines(3, |_| Duration::ZERO), [1, 2, 3]);
        assert_eq!(lines(1000, |_| Duration::ZERO).len(), 10);
    }

    #[test]
    fn a_slow_session_writes_a_line_a_minute_between_tenths() {
        // 1000 runs of 20 s each, one at a time: a tenth takes 2000 s.
        let got = lines(1000, |d| Duration::from_secs(20 * d));
        assert_eq!(&got[..4], [3, 6, 9, 12]);
        // The tenth still gets its line, and the minute restarts there.
        assert!(got.contains(&100) && got.contains(&103));
        assert!(!got.contains(&101) && !got.contains(&102));
    }

    #[test]
    fn nothing_new_done_writes_nothing() {
        let mut c = Cadence::default();
        assert!(c.due(5, 10, Duration::ZERO));
        assert!(!c.due(5, 10, Duration::from_secs(600)));
        assert!(!Cadence::default().due(0, 10, Duration::from_secs(600)));
    }

    #[test]
    fn a_session_stopped_early_says_so_once_it_ran_something() {
        let mut c = Cadence::default();
        assert!(c.due(4, 40, Duration::ZERO));
        assert!(c.stopped_due(6, 40));
        assert!(c.stopped_due(4, 40));
        assert!(!c.stopped_due(40, 40));
        assert!(!Cadence::default().stopped_due(0, 40));
    }
}
