//! One walk of a report's sections, rendered through a [`Markup`]: the
//! terminal table (`table`), Markdown (`markdown`) and GitHub's step
//! summary (`github`) each implement it, and [`walk`] alone decides which
//! sections a report has and in what order (as hyperfine's exporters render
//! one model). A new human format is one file implementing [`Markup`].

use super::beside::CiHistory;
use super::per_test::TestRow;
use super::{Confirmation, Report};

/// How one human format writes a report's sections, and the few marks its
/// shared sections are written with (code spans, a lead-in, list items).
/// A section a format leaves out is an empty method.
pub(crate) trait Markup {
    /// `text` as this format quotes code (an id, a run, a command).
    fn code(&self, text: &str) -> String;
    /// A paragraph that leads into a list: its subject `term`, then `rest`.
    fn lead(&mut self, term: &str, rest: &str);
    /// One item of a list.
    fn item(&mut self, text: &str);

    /// The session, its command, seed and run count, and what it counts.
    fn header(&mut self, report: &Report);
    /// One row per cell.
    fn cells(&mut self, report: &Report);
    /// The per-test rows.
    fn tests(&mut self, report: &Report);
    /// Under the tables: the notes and the differing cells' first failures.
    fn under(&mut self, report: &Report);
    /// Why the design was chosen.
    fn design_chosen(&mut self, why: &str);
    /// `scan --prove`'s lines.
    fn prove(&mut self, lines: &[String]);
    /// The screen design's summary and the rows it confirmed.
    fn screen(&mut self, design: &crate::screen::DesignSummary, confirmed: &[(&str, &TestRow)]);
    /// The CI history beside the session.
    fn history(&mut self, history: &CiHistory);

    /// The fixed design's undecided rows (never empty).
    fn undecided(&mut self, rows: &[(&str, &TestRow)]) {
        self.lead(
            "undecided",
            " (a small raw p that the correction does not keep):",
        );
        for (cell, row) in rows {
            let verdict = row.verdict.as_deref().unwrap_or("");
            self.item(&format!("{cell}  {}: {verdict}", row.id));
        }
    }

    /// `--confirm`'s replays of the failing runs (never empty).
    fn confirmations(&mut self, confirmations: &[Confirmation]) {
        self.lead("confirmation", " (each failing run's conditions replayed):");
        for c in confirmations {
            let run = self.code(&c.run);
            self.item(&format!(
                "{run} ({}, seed {}): {}",
                c.cell,
                c.seed,
                c.sentence()
            ));
        }
    }
}

/// Emits `report`'s sections through `markup`, in order, each one only
/// when the report has it.
pub(crate) fn walk(report: &Report, markup: &mut impl Markup) {
    markup.header(report);
    markup.cells(report);
    markup.tests(report);
    markup.under(report);
    if let Some(why) = &report.design_chosen {
        markup.design_chosen(why);
    }
    if let Some(prove) = &report.scan_prove {
        markup.prove(&super::scan::prove_lines(prove));
    }
    let undecided = super::undecided::rows(report);
    if !undecided.is_empty() {
        markup.undecided(&undecided);
    }
    if let Some(d) = &report.design {
        markup.screen(d, &super::confirmed_rows(report));
    }
    if !report.confirmations.is_empty() {
        markup.confirmations(&report.confirmations);
    }
    if let Some(h) = &report.ci_history {
        markup.history(h);
    }
}
