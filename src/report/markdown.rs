//! The report as GitHub-flavoured Markdown, ready to paste into an issue.

use std::fmt::Write as _;

use super::{applied_text, interval_text, notes, versus_text, Report};

/// Renders the report as Markdown.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let pct = (report.confidence * 100.0).round();
    let _ = writeln!(out, "### flakelab session `{}`\n", report.session);
    let _ = writeln!(
        out,
        "Command: `{}` · seed {} · {} of {} runs · {pct}% confidence\n",
        shell_words::join(&report.command).replace('`', "\\`"),
        report.seed,
        report.recorded,
        report.planned
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
        "| cell | failed | rate | {pct}% interval | vs baseline | probe |"
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
    for c in &report.cells {
        let differs = c.vs_baseline.as_ref().is_some_and(|v| v.differs);
        if let (true, Some(f)) = (differs, &c.first_failure) {
            let _ = writeln!(out, "\nFirst failure in `{}` (run `{}`):\n", c.name, f.run);
            let _ = writeln!(out, "```sh\n{}\n```", f.repro);
        }
    }
    out
}
