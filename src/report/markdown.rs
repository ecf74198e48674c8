//! The report as GitHub-flavoured Markdown, ready to paste into an issue.

use std::fmt::Write as _;

use super::{
    applied_text, failure_heading, interval_text, notes, runs_text, shown_failures, versus_text,
    Report,
};

/// Renders the report as Markdown.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let pct = (report.confidence * 100.0).round();
    let _ = writeln!(out, "### flakelab session `{}`\n", report.session);
    let _ = writeln!(
        out,
        "Command: `{}` · seed {} · {} · {pct}% confidence\n",
        crate::repro::join(&report.command).replace('`', "\\`"),
        report.seed,
        runs_text(report)
    );
    if let Some(sig) = &report.signature {
        let _ = writeln!(out, "Counting only failures matching `{sig}`.\n");
    }
    if let Some(run) = &report.replay_of {
        let _ = writeln!(
            out,
            "Replay of run `{run}`: its command, cell and seed, re-run exactly.\n"
        );
    }
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
            "| `{}` | {} of {} | {} | {} | {} | {} |",
            c.name,
            c.k,
            c.n,
            rate,
            interval_text(c),
            versus_text(c),
            applied_text(c).replace('|', "\\|")
        );
    }
    let notes = notes(report);
    if !notes.is_empty() {
        let _ = writeln!(out);
        for n in notes {
            let _ = writeln!(out, "- {n}");
        }
    }
    for (c, f) in shown_failures(report) {
        let _ = writeln!(out, "\nFirst failure in `{}` (run `{}`):\n", c.name, f.run);
        let _ = writeln!(out, "```sh\n{}\n```", f.repro);
        if let Some(note) = &f.repro_note {
            let _ = writeln!(out, "\n{note}");
        }
    }
    out
}
