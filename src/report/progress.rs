//! A progress bar on stderr while runs execute, hidden when stderr is not a
//! terminal. It observes run events; it never decides anything.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The progress display of one session.
#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
    failed: u64,
}

impl Progress {
    /// A bar for `total` runs (hidden unless stderr is a terminal).
    pub fn new(total: u64) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        if let Ok(style) =
            ProgressStyle::with_template("{bar:30} {pos}/{len} runs · {msg} · {elapsed}")
        {
            bar.set_style(style);
        }
        Progress { bar, failed: 0 }
    }

    /// A run finished; `failed` says whether it failed.
    pub fn finished(&mut self, failed: bool) {
        if failed {
            self.failed += 1;
        }
        self.bar.set_message(format!("{} failed", self.failed));
        self.bar.inc(1);
    }

    /// Note that the session is stopping.
    pub fn interrupted(&self) {
        self.bar.set_message("interrupted: stopping runs");
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
