//! The progress of a session on stderr while its runs execute: a bar when
//! stderr is a terminal, else a plain line at each 10% of the runs or once
//! a minute ([`cadence`]), each saying runs done of the total, the failures
//! so far per cell and an ETA from the durations seen so far ([`tally`]).
//! It observes run ends; it never decides anything.

pub mod cadence;
pub mod tally;

use std::io::IsTerminal as _;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use cadence::Cadence;
use tally::Tally;

/// How progress is shown.
#[derive(Debug)]
enum View {
    /// A live bar (stderr is a terminal).
    Bar(ProgressBar),
    /// Plain lines (stderr is a file or a pipe).
    Lines(Cadence),
    /// Nothing (no run to show).
    Hidden,
}

/// The progress display of one session.
#[derive(Debug)]
pub struct Progress {
    tally: Tally,
    view: View,
    started: Instant,
    stopped: bool,
}

impl Progress {
    /// The progress of `cells` (name, runs planned), `jobs` at a time: a
    /// bar when stderr is a terminal, plain lines otherwise, colored as the
    /// process chose ([`crate::report::color::stderr`]).
    pub fn new(cells: Vec<(String, u64)>, jobs: usize) -> Progress {
        let tally = Tally::new(cells, jobs);
        let view = if tally.total() == 0 {
            View::Hidden
        } else if std::io::stderr().is_terminal() {
            View::Bar(bar(tally.total(), crate::report::color::stderr()))
        } else {
            View::Lines(Cadence::default())
        };
        if let View::Bar(b) = &view {
            b.set_message(tally.message());
        }
        Progress {
            tally,
            view,
            started: Instant::now(),
            stopped: false,
        }
    }

    /// A run of cell `cell` (its index among the cells given to
    /// [`Progress::new`]) finished after `seconds`; `failed` says whether it failed.
    pub fn finished(&mut self, cell: usize, failed: bool, seconds: f64) {
        self.tally.finished(cell, failed, seconds);
        let now = self.started.elapsed();
        match &mut self.view {
            View::Bar(b) => {
                b.set_position(self.tally.done());
                b.set_message(self.tally.message());
            }
            View::Lines(c) => {
                if c.due(self.tally.done(), self.tally.total(), now) {
                    write_line(&self.tally.line(now));
                }
            }
            View::Hidden => {}
        }
    }

    /// Note that the session is stopping (said once).
    pub fn interrupted(&mut self) {
        if std::mem::replace(&mut self.stopped, true) {
            return;
        }
        match &self.view {
            View::Bar(b) => b.set_message("interrupted: stopping runs"),
            View::Lines(_) => write_line(&format!(
                "flakelab: interrupted at {}/{} runs: stopping the runs in flight",
                self.tally.done(),
                self.tally.total()
            )),
            View::Hidden => {}
        }
    }

    /// Ends the display: removes the bar; in plain lines, says where a
    /// session that ended before its plan stopped.
    pub fn finish(&mut self) {
        match &self.view {
            View::Bar(b) => b.finish_and_clear(),
            View::Lines(c) => {
                if c.stopped_due(self.tally.done(), self.tally.total()) {
                    write_line(&self.tally.stopped_line());
                }
            }
            View::Hidden => {}
        }
        self.view = View::Hidden;
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let View::Bar(b) = &self.view {
            b.finish_and_clear();
        }
    }
}

/// A bar of `total` runs (its bar colored when `color`).
fn bar(total: u64, color: bool) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    let template = if color {
        "{bar:30.cyan/blue} {pos}/{len} runs · {msg} · {elapsed}"
    } else {
        "{bar:30} {pos}/{len} runs · {msg} · {elapsed}"
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    // The elapsed time moves between run ends too.
    bar.enable_steady_tick(Duration::from_secs(1));
    bar
}

/// Writes one whole line to stderr in a single write (a line of another
/// writer never lands inside it); a closed stderr is not worth stopping
/// the session for. Unit tests print through the harness's capture.
fn write_line(line: &str) {
    let whole = format!("{}\n", crate::report::text::one_line(line));
    #[cfg(not(test))]
    {
        use std::io::Write as _;
        let _ = std::io::stderr().lock().write_all(whole.as_bytes());
    }
    #[cfg(test)]
    eprint!("{whole}");
}
