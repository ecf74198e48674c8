//! The facts of a session's progress: runs done of the total, failures so
//! far per cell, and the ETA estimated from the durations seen so far.
//! Pure: fed run ends and an elapsed time by [`super::Progress`].

use std::fmt::Write as _;
use std::time::Duration;

/// One cell's runs so far.
#[derive(Debug, Clone, PartialEq)]
struct CellTally {
    name: String,
    total: u64,
    done: u64,
    failed: u64,
    /// The summed wall-clock seconds of its finished runs.
    seconds: f64,
}

/// Counts of a session's runs as they finish.
#[derive(Debug, Clone, PartialEq)]
pub struct Tally {
    cells: Vec<CellTally>,
    jobs: usize,
}

impl Tally {
    /// A tally of `cells` (name, runs planned), `jobs` runs at a time.
    pub fn new(cells: Vec<(String, u64)>, jobs: usize) -> Tally {
        Tally {
            cells: cells
                .into_iter()
                .map(|(name, total)| CellTally {
                    name,
                    total,
                    done: 0,
                    failed: 0,
                    seconds: 0.0,
                })
                .collect(),
            jobs: jobs.max(1),
        }
    }

    /// A run of cell `cell` (its index) finished after `seconds`; `failed`
    /// says whether it failed.
    pub fn finished(&mut self, cell: usize, failed: bool, seconds: f64) {
        if let Some(c) = self.cells.get_mut(cell) {
            c.done += 1;
            c.failed += u64::from(failed);
            c.seconds += seconds.max(0.0);
        }
    }

    /// Runs finished.
    pub fn done(&self) -> u64 {
        self.cells.iter().map(|c| c.done).sum()
    }

    /// Runs planned.
    pub fn total(&self) -> u64 {
        self.cells.iter().map(|c| c.total).sum()
    }

    /// Seconds until the remaining runs end: each cell's remaining runs at
    /// that cell's mean duration so far (a cell with none finished yet at
    /// the mean of all runs so far), summed and shared among the runs that
    /// can go at once (`jobs`, or fewer when fewer remain). `None` before
    /// the first run ends: nothing to estimate from.
    pub fn eta_seconds(&self) -> Option<f64> {
        let done = self.done();
        if done == 0 {
            return None;
        }
        let mean = self.cells.iter().map(|c| c.seconds).sum::<f64>() / done as f64;
        let mut work = 0.0;
        let mut remaining = 0;
        for c in &self.cells {
            let left = c.total.saturating_sub(c.done);
            let each = if c.done > 0 {
                c.seconds / c.done as f64
            } else {
                mean
            };
            work += left as f64 * each;
            remaining += left;
        }
        if remaining == 0 {
            return Some(0.0);
        }
        Some(work / remaining.min(self.jobs as u64) as f64)
    }

    /// `ETA 42s`, or `ETA unknown` before the first run ends.
    pub fn eta_text(&self) -> String {
        match self.eta_seconds() {
            None => "ETA unknown".into(),
            Some(s) if s < 0.5 && self.done() < self.total() => "ETA <1s".into(),
            Some(s) => format!("ETA {}", duration_text(s)),
        }
    }

    /// The failures so far, only of the cells with some, each as failed of
    /// its runs done: `failed: tz-x 3/12, shuffle 1/12`; `no failures`.
    pub fn failures_text(&self) -> String {
        let failing: Vec<String> = (self.cells.iter())
            .filter(|c| c.failed > 0)
            .map(|c| {
                let name = crate::report::text::one_line(&c.name);
                format!("{name} {}/{}", c.failed, c.done)
            })
            .collect();
        if failing.is_empty() {
            "no failures".into()
        } else {
            format!("failed: {}", failing.join(", "))
        }
    }

    /// The bar's message: failures, then the ETA while runs remain.
    pub fn message(&self) -> String {
        if self.done() >= self.total() {
            self.failures_text()
        } else {
            format!("{} · {}", self.failures_text(), self.eta_text())
        }
    }

    /// The plain line (no newline) written when stderr is not a terminal:
    /// `flakelab: 12/40 runs (30%) · failed: tz-x 3/3 · ETA 42s`, and when
    /// every run is done, `… · done in 1m 05s` (`elapsed` since the start).
    pub fn line(&self, elapsed: Duration) -> String {
        let (done, total) = (self.done(), self.total());
        let mut s = format!(
            "flakelab: {done}/{total} runs ({}%) · {}",
            percent(done, total),
            self.failures_text()
        );
        if done >= total {
            let _ = write!(s, " · done in {}", duration_text(elapsed.as_secs_f64()));
        } else {
            let _ = write!(s, " · {}", self.eta_text());
        }
        s
    }

    /// The plain line of a session that ends before its plan does (an
    /// interruption, or a sequential design that stopped early).
    pub fn stopped_line(&self) -> String {
        let (done, total) = (self.done(), self.total());
        format!(
            "flakelab: stopped at {done}/{total} runs ({}%) · {}",
            percent(done, total),
            self.failures_text()
        )
    }
}

/// `done` of `total` in whole percent, rounded down (100 only when all are done).
pub fn percent(done: u64, total: u64) -> u64 {
    (done * 100).checked_div(total).unwrap_or(100)
}

/// Seconds as `42s`, `3m 05s` or `1h 02m` (rounded to the shown unit).
pub fn duration_text(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        _ => {
            let m = (s + 30) / 60;
            format!("{}h {:02}m", m / 60, m % 60)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(jobs: usize) -> Tally {
        Tally::new(vec![("baseline".into(), 10), ("tz-x".into(), 10)], jobs)
    }

    #[test]
    fn the_eta_is_unknown_before_the_first_run_ends() {
        let t = tally(1);
        assert_eq!(t.eta_seconds(), None);
        assert_eq!(
            t.line(Duration::ZERO),
            "flakelab: 0/20 runs (0%) · no failures · ETA unknown"
        );
    }

    #[test]
    fn the_eta_weighs_each_cell_by_its_own_mean_and_shares_the_jobs() {
        let mut t = tally(2);
        // baseline runs take 1 s, tz-x runs 3 s.
        t.finished(0, false, 1.0);
        t.finished(0, false, 1.0);
        t.finished(1, true, 3.0);
        // 8 × 1 s + 9 × 3 s = 35 s of work, two at a time.
        assert_eq!(t.eta_seconds(), Some(17.5));
        assert_eq!(
            t.line(Duration::from_secs(4)),
            "flakelab: 3/20 runs (15%) · failed: tz-x 1/1 · ETA 18s"
        );
    }

    #[test]
    fn a_cell_with_no_run_finished_is_estimated_at_the_mean_of_all() {
        let mut t = tally(1);
        t.finished(0, false, 2.0);
        t.finished(0, false, 4.0);
        // baseline: 8 × 3 s; tz-x: 10 × 3 s (the mean so far).
        assert_eq!(t.eta_seconds(), Some(54.0));
    }

    #[test]
    fn fewer_runs_left_than_jobs_share_fewer_lanes() {
        let mut t = Tally::new(vec![("baseline".into(), 3)], 8);
        t.finished(0, false, 10.0);
        // Two runs left of 10 s each, at most two at once: 10 s, not 2.5 s.
        assert_eq!(t.eta_seconds(), Some(10.0));
    }

    #[test]
    fn the_last_line_says_how_long_it_took_and_lists_only_failing_cells() {
        let mut t = Tally::new(vec![("baseline".into(), 2), ("shuffle".into(), 2)], 1);
        for i in 0..4 {
            t.finished(i / 2, i == 3, 0.1);
        }
        assert_eq!(
            t.line(Duration::from_secs(65)),
            "flakelab: 4/4 runs (100%) · failed: shuffle 1/2 · done in 1m 05s"
        );
        assert_eq!(t.message(), "failed: shuffle 1/2");
        assert_eq!(
            t.stopped_line(),
            "flakelab: stopped at 4/4 runs (100%) · failed: shuffle 1/2"
        );
    }

    #[test]
    fn an_eta_under_half_a_second_is_not_zero_while_runs_remain() {
        let mut t = tally(4);
        t.finished(0, false, 0.001);
        assert_eq!(t.eta_text(), "ETA <1s");
        assert_eq!(t.message(), "no failures · ETA <1s");
    }

    #[test]
    fn durations_read_in_the_largest_useful_unit() {
        assert_eq!(duration_text(0.4), "0s");
        assert_eq!(duration_text(59.4), "59s");
        assert_eq!(duration_text(59.6), "1m 00s");
        assert_eq!(duration_text(3599.0), "59m 59s");
        assert_eq!(duration_text(3600.0), "1h 00m");
        assert_eq!(duration_text(7290.0), "2h 02m");
        assert_eq!(percent(39, 40), 97);
        assert_eq!(percent(0, 0), 100);
    }
}
