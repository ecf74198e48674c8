//! The terminal table: one row per cell, then notes and the repro line of
//! each differing cell's first failure. Rendered from [`Report`] only.

use std::fmt::Write as _;

use super::beside::CiHistory;
use super::markup::{walk, Markup};
use super::per_test::TestRow;
use super::text::one_line;
use super::{
    applied_text, failure_heading, interval_text, notes, runs_text, shown_failures,
    shown_test_rows, test_count_text, test_counts, test_interval_text, test_versus_text,
    versus_text, Report,
};

/// Renders the report as a plain-text table (the snapshots' form).
#[cfg(test)]
pub fn render(report: &Report) -> String {
    render_colored(report, false)
}

/// [`render`], with the verdict words colored when `color` (a difference
/// red, a cell not applied or a difference its sham leaves unexplained
/// yellow, the reference dim); without color, byte for byte [`render`].
pub fn render_colored(report: &Report, color: bool) -> String {
    let mut table = Table {
        out: String::new(),
        color,
    };
    walk(report, &mut table);
    table.out
}

/// The terminal table's markup: plain text, columns padded to their width.
struct Table {
    out: String,
    color: bool,
}

impl Markup for Table {
    fn code(&self, text: &str) -> String {
        one_line(text).into_owned()
    }

    fn lead(&mut self, term: &str, rest: &str) {
        let _ = writeln!(self.out, "\n{term}{rest}");
    }

    fn item(&mut self, text: &str) {
        let _ = writeln!(self.out, "  {}", one_line(text));
    }

    fn header(&mut self, report: &Report) {
        let out = &mut self.out;
        let pct = (report.confidence * 100.0).round();
        let _ = writeln!(
            out,
            "session {} · seed {} · {} · {pct}% confidence",
            report.session,
            report.seed,
            runs_text(report)
        );
        let _ = writeln!(
            out,
            "command: {}",
            one_line(&crate::repro::join(&report.command))
        );
        if let Some(runner) = &report.runner {
            let _ = writeln!(out, "runner: {} (recipe)", one_line(runner));
        }
        if report.signatures.len() > 1 {
            let _ = writeln!(
                out,
                "counting runs that reproduced a signature (in their output or a failing test's message), each for the first it matched: {}; failures matching none are other failures",
                one_line(&super::patterns_text(report))
            );
        } else if let Some(sig) = &report.signature {
            let _ = writeln!(
                out,
                "counting runs that reproduced the signature (in their output or a failing test's message): {}",
                one_line(sig)
            );
        }
        if let Some(run) = &report.replay_of {
            let _ = writeln!(
                out,
                "replay of run {run}: its command, cell and seed, re-run exactly{}",
                report
                    .replay_bound()
                    .map(|b| format!("; {b}"))
                    .unwrap_or_default()
            );
        }
        let _ = writeln!(out);
    }

    fn cells(&mut self, report: &Report) {
        let (out, color) = (&mut self.out, self.color);
        let pct = (report.confidence * 100.0).round();
        let what = failure_heading(report);
        let header = [
            "cell".to_string(),
            what.to_string(),
            "rate".to_string(),
            format!("{pct}% interval"),
            "vs baseline".to_string(),
            "probe".to_string(),
        ];
        let rows: Vec<[String; 6]> = report
            .cells
            .iter()
            .map(|c| {
                [
                    one_line(&super::shown_name(c)).into_owned(),
                    format!("{} of {}", c.k, c.n),
                    if c.n == 0 {
                        "—".into()
                    } else {
                        format!("{:.1}%", c.rate * 100.0)
                    },
                    interval_text(c),
                    one_line(&versus_text(c)).into_owned(),
                    one_line(&applied_text(
                        c,
                        report.cells.iter().find(|b| b.name == "baseline"),
                    ))
                    .into_owned(),
                ]
            })
            .collect();
        let mut widths = header.clone().map(|h| h.chars().count());
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |cols: &[String; 6], color: bool| {
            let mut s = String::new();
            for (i, (col, w)) in cols.iter().zip(widths).enumerate() {
                let shown = if i >= 4 {
                    painted(col, color)
                } else {
                    col.clone()
                };
                if i == 5 {
                    s.push_str(&shown);
                } else {
                    // Padded by the plain text's width: escapes take no column.
                    let pad = w.saturating_sub(col.chars().count()) + 2;
                    let _ = write!(s, "{shown}{:pad$}", "");
                }
            }
            s.trim_end().to_string()
        };
        let _ = writeln!(out, "{}", line(&header, false));
        for row in &rows {
            let _ = writeln!(out, "{}", line(row, color));
        }
    }

    fn tests(&mut self, report: &Report) {
        render_tests(report, &mut self.out, self.color);
    }

    fn under(&mut self, report: &Report) {
        let out = &mut self.out;
        let notes = notes(report);
        let repros = shown_failures(report);
        if !notes.is_empty() {
            let _ = writeln!(out);
            for n in notes {
                let _ = writeln!(out, "note: {}", one_line(&n));
            }
        }
        if !repros.is_empty() {
            let _ = writeln!(out);
            for (c, f) in repros {
                let _ = writeln!(
                    out,
                    "first failure in {} (run {}):",
                    one_line(&c.name),
                    one_line(&f.run)
                );
                let _ = writeln!(out, "  {}", one_line(&f.repro));
                for sig in c.signatures.iter().take(3) {
                    let _ = writeln!(out, "  {}× {}", sig.count, one_line(&sig.signature));
                }
                if let Some(note) = &f.repro_note {
                    let _ = writeln!(out, "  note: {}", one_line(note));
                }
                if let Some(log) = &f.log {
                    let _ = writeln!(out, "  log (in the store): {}", one_line(log));
                }
            }
        }
        let others = super::shown_other_failures(report);
        if !others.is_empty() {
            let _ = writeln!(out);
        }
        for (c, f) in others {
            let _ = writeln!(
                out,
                "first other failure in {} (run {}), matching no pattern:",
                one_line(&c.name),
                one_line(&f.run)
            );
            let _ = writeln!(out, "  {}", one_line(&f.repro));
            if let Some(note) = &f.repro_note {
                let _ = writeln!(out, "  note: {}", one_line(note));
            }
            if let Some(log) = &f.log {
                let _ = writeln!(out, "  log (in the store): {}", one_line(log));
            }
        }
    }

    fn design_chosen(&mut self, why: &str) {
        let _ = writeln!(self.out, "\ndesign: {}", one_line(why));
    }

    fn prove(&mut self, lines: &[String]) {
        let _ = writeln!(self.out);
        for line in lines {
            let _ = writeln!(self.out, "{}", one_line(line));
        }
    }

    fn screen(&mut self, design: &crate::screen::DesignSummary, confirmed: &[(&str, &TestRow)]) {
        let _ = writeln!(self.out, "\n{}", super::design_text(design));
        for (cell, row) in confirmed {
            let _ = writeln!(
                self.out,
                "  {}  {}: {}",
                one_line(cell),
                one_line(&row.id),
                one_line(row.verdict.as_deref().unwrap_or(""))
            );
        }
    }

    fn history(&mut self, history: &CiHistory) {
        self.out.push_str(&super::beside::table(history));
    }
}

/// A verdict or probe column's text with its verdict words colored by
/// what they say (`color::Tone`), the rest plain.
fn painted(text: &str, color: bool) -> String {
    use super::color::{paint, Tone};
    let words = [
        ("timeouts differ", Tone::Differs),
        ("differs", Tone::Differs),
        ("NOT APPLIED", Tone::Caution),
        ("undecided", Tone::Caution),
        ("(reference)", Tone::Quiet),
    ];
    let Some((word, tone)) = words.into_iter().find(|(w, _)| text.starts_with(w)) else {
        return text.to_string();
    };
    // A difference its sham does not explain away is a caution, not a finding.
    let tone = match tone {
        Tone::Differs if text.contains("not from its sham") => Tone::Caution,
        tone => tone,
    };
    format!("{}{}", paint(word, tone, color), &text[word.len()..])
}

fn render_tests(report: &Report, out: &mut String, color: bool) {
    let (total, clean, skipped) = test_counts(report);
    if total == 0 {
        return;
    }
    let rows = shown_test_rows(report);
    let _ = writeln!(
        out,
        "\nper-test outcomes ({}), {total} test{}:",
        report.per_test_source(),
        if total == 1 { "" } else { "s" }
    );
    let _ = writeln!(out, "  counting: {}", super::counting_text(report));
    let what = failure_heading(report);
    let header = [
        "cell".to_string(),
        "test".to_string(),
        what.to_string(),
        "interval".to_string(),
        "vs baseline".to_string(),
    ];
    let body: Vec<[String; 5]> = rows
        .iter()
        .map(|(c, t)| {
            [
                one_line(&c.name).into_owned(),
                one_line(&t.id).into_owned(),
                test_count_text(t),
                test_interval_text(t),
                one_line(&test_versus_text(c, t)).into_owned(),
            ]
        })
        .collect();
    let mut widths = header.clone().map(|h| h.chars().count());
    for row in &body {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cols: &[String; 5], color: bool| {
        let mut s = String::from("  ");
        for (i, (col, w)) in cols.iter().zip(widths).enumerate() {
            let shown = if i == 4 {
                painted(col, color)
            } else {
                col.clone()
            };
            let pad = w.saturating_sub(col.chars().count()) + 2;
            let _ = write!(s, "{shown}{:pad$}", "");
        }
        s.trim_end().to_string()
    };
    if !body.is_empty() {
        let _ = writeln!(out, "{}", line(&header, false));
    }
    for (row, (_, t)) in body.iter().zip(&rows) {
        let _ = writeln!(out, "{}", line(row, color));
        if let Some(shift) = super::test_shift_text(t) {
            let _ = writeln!(out, "      {}", one_line(&shift));
        }
        for sig in t.signatures.iter().take(3) {
            let _ = writeln!(out, "      {}× {}", sig.count, one_line(&sig.signature));
        }
        if let Some(bisect) = &t.bisect {
            let _ = writeln!(
                out,
                "      order-dependent: find what ran before it and made it fail: {}",
                one_line(bisect)
            );
        }
        if let Some(split) = t
            .by_pattern
            .as_ref()
            .filter(|s| super::shows_split(report, s))
        {
            let _ = writeln!(out, "      {}", super::split_text(split, t.n));
        }
        if t.passed_on_rerun > 0 {
            let _ = writeln!(out, "      {} of these failures passed on a retry (still counted: the first attempt is the sample; a test that passes only on a retry is not clean)", t.passed_on_rerun);
        }
    }
    if clean > 0 {
        let _ = writeln!(
            out,
            "  {clean} other test(s) passed in every run that ran them, in every cell (per-cell bounds in the JSON report)"
        );
    }
    if skipped > 0 {
        let _ = writeln!(
            out,
            "  {skipped} test(s) were skipped in every run of every cell"
        );
    }
}
