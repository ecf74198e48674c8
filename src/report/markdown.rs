//! The report as GitHub-flavoured Markdown, ready to paste into an issue.

use std::fmt::Write as _;

use super::beside::CiHistory;
use super::markup::{walk, Markup};
use super::per_test::TestRow;
use super::text::{md_block, md_cell_code, md_code, one_line};
use super::{
    applied_text, failure_heading, interval_text, notes, runs_text, shown_failures,
    shown_test_rows, test_count_text, test_counts, test_interval_text, test_versus_text,
    versus_text, Report,
};

/// Renders the report as Markdown.
pub fn render(report: &Report) -> String {
    let mut markdown = Markdown { out: String::new() };
    walk(report, &mut markdown);
    markdown.out
}

/// Generated text in a table cell or a list item: on one line, pipes
/// escaped.
fn cell(text: &str) -> String {
    one_line(text).replace('|', "\\|")
}

/// Markdown's markup: code in backticks, tables in pipes.
struct Markdown {
    out: String,
}

impl Markup for Markdown {
    fn code(&self, text: &str) -> String {
        md_code(text)
    }

    fn lead(&mut self, term: &str, rest: &str) {
        let mut chars = term.chars();
        let term: String = chars
            .next()
            .map(|c| c.to_uppercase().chain(chars).collect())
            .unwrap_or_default();
        let _ = writeln!(self.out, "\n**{term}**{rest}\n");
    }

    fn item(&mut self, text: &str) {
        let _ = writeln!(self.out, "- {}", one_line(text));
    }

    fn header(&mut self, report: &Report) {
        let out = &mut self.out;
        let pct = (report.confidence * 100.0).round();
        let _ = writeln!(out, "### flakelab session `{}`\n", report.session);
        let _ = writeln!(
            out,
            "Command: {} · seed {} · {} · {pct}% confidence\n",
            md_code(&crate::repro::join(&report.command)),
            report.seed,
            runs_text(report)
        );
        if report.signatures.len() > 1 {
            let patterns: Vec<String> = (report.signatures.iter().enumerate())
                .map(|(i, p)| format!("pattern {} {}", i + 1, md_code(p)))
                .collect();
            let _ = writeln!(
                out,
                "Counting runs that reproduced a signature (in their output or a failing test's message), each for the first it matched: {}; failures matching none are other failures.\n",
                patterns.join(", ")
            );
        } else if let Some(sig) = &report.signature {
            let _ = writeln!(
                out,
                "Counting runs that reproduced the signature {} (in their output or a failing test's message).\n",
                md_code(sig)
            );
        }
        if let Some(run) = &report.replay_of {
            let _ = writeln!(
                out,
                "Replay of run {}: its command, cell and seed, re-run exactly{}.\n",
                md_code(run),
                report
                    .replay_bound()
                    .map(|b| format!("; {b}"))
                    .unwrap_or_default()
            );
        }
    }

    fn cells(&mut self, report: &Report) {
        let out = &mut self.out;
        let pct = (report.confidence * 100.0).round();
        let _ = writeln!(
            out,
            "| cell | {} | rate | {pct}% interval | vs baseline | probe |",
            failure_heading(report)
        );
        let _ = writeln!(out, "| --- | ---: | ---: | --- | --- | --- |");
        for c in &report.cells {
            let rate = if c.n == 0 {
                "—".to_string()
            } else {
                format!("{:.1}%", c.rate * 100.0)
            };
            let _ = writeln!(
                out,
                "| {}{} | {} of {} | {} | {} | {} | {} |",
                md_cell_code(&c.name),
                if c.sham_of.is_some() { " (sham)" } else { "" },
                c.k,
                c.n,
                rate,
                interval_text(c),
                cell(&versus_text(c)),
                cell(&applied_text(
                    c,
                    report.cells.iter().find(|b| b.name == "baseline")
                ))
            );
        }
    }

    fn tests(&mut self, report: &Report) {
        let out = &mut self.out;
        let (total, clean, skipped) = test_counts(report);
        let rows = shown_test_rows(report);
        if total > 0 {
            let _ = writeln!(
                out,
                "\nPer-test outcomes ({}), {total} test{}: {}.\n",
                report.per_test_source(),
                if total == 1 { "" } else { "s" },
                super::counting_text(report)
            );
            if !rows.is_empty() {
                let _ = writeln!(
                    out,
                    "| cell | test | {} | interval | vs baseline | signature |",
                    failure_heading(report)
                );
                let _ = writeln!(out, "| --- | --- | ---: | --- | --- | --- |");
                for (c, t) in &rows {
                    let sig = t
                        .signatures
                        .first()
                        .map(|s| format!("{} ({}×)", md_cell_code(&s.signature), s.count))
                        .unwrap_or_default();
                    let _ = writeln!(
                        out,
                        "| {} | {} | {} | {} | {} | {} |",
                        md_cell_code(&c.name),
                        md_cell_code(&t.id),
                        cell(&match t
                            .by_pattern
                            .as_ref()
                            .filter(|s| super::shows_split(report, s))
                        {
                            Some(split) => format!(
                                "{} ({})",
                                test_count_text(t),
                                super::split_text(split, t.n)
                            ),
                            None => test_count_text(t),
                        }),
                        test_interval_text(t),
                        cell(&match super::test_shift_text(t) {
                            Some(shift) => format!("{}; {shift}", test_versus_text(c, t)),
                            None => test_versus_text(c, t),
                        }),
                        sig
                    );
                }
                for (c, t) in &rows {
                    if let Some(bisect) = &t.bisect {
                        let _ = writeln!(
                            out,
                            "\n{} in {} is order-dependent: {} finds what ran before it and made it fail.",
                            md_code(&t.id),
                            md_code(&c.name),
                            md_code(bisect)
                        );
                    }
                }
            }
            if clean > 0 {
                let _ = writeln!(
                    out,
                    "\n{clean} other test(s) passed in every run that ran them, in every cell."
                );
            }
            if skipped > 0 {
                let _ = writeln!(
                    out,
                    "\n{skipped} test(s) were skipped in every run of every cell."
                );
            }
        }
    }

    fn under(&mut self, report: &Report) {
        let out = &mut self.out;
        let notes = notes(report);
        if !notes.is_empty() {
            let _ = writeln!(out);
            for n in notes {
                let _ = writeln!(out, "- {}", one_line(&n));
            }
        }
        let firsts = shown_failures(report)
            .into_iter()
            .map(|(c, f)| (c, f, "First failure"));
        let others = (super::shown_other_failures(report).into_iter())
            .map(|(c, f)| (c, f, "First other failure (matching no pattern)"));
        for (c, f, what) in firsts.chain(others) {
            let _ = writeln!(
                out,
                "\n{what} in {} (run {}):\n",
                md_code(&c.name),
                md_code(&f.run)
            );
            let _ = writeln!(out, "{}", md_block("sh", [f.repro.as_str()]));
            if let Some(note) = &f.repro_note {
                let _ = writeln!(out, "\n{}", one_line(note));
            }
        }
    }

    /// Not in Markdown.
    fn design_chosen(&mut self, _why: &str) {}

    fn prove(&mut self, lines: &[String]) {
        let _ = writeln!(self.out, "\n**{}**\n", one_line(&lines[0]));
        for line in &lines[1..] {
            let _ = writeln!(self.out, "- {}", cell(line.trim_start()));
        }
    }

    /// Not in Markdown.
    fn undecided(&mut self, _rows: &[(&str, &TestRow)]) {}

    fn screen(&mut self, design: &crate::screen::DesignSummary, confirmed: &[(&str, &TestRow)]) {
        let _ = writeln!(
            self.out,
            "\n**Screen, then confirm.** {}\n",
            super::design_text(design)
        );
        for (cell, row) in confirmed {
            let _ = writeln!(
                self.out,
                "- {} · {}: {}",
                md_code(cell),
                md_code(&row.id),
                one_line(row.verdict.as_deref().unwrap_or(""))
            );
        }
    }

    fn history(&mut self, history: &CiHistory) {
        self.out.push_str(&super::beside::markdown(history));
    }
}
