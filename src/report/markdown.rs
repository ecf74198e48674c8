//! The report as GitHub-flavoured Markdown, ready to paste into an issue.

use std::fmt::Write as _;

use super::{
    applied_text, failure_heading, interval_text, notes, runs_text, shown_failures,
    shown_test_rows, test_count_text, test_counts, test_interval_text, test_versus_text,
    versus_text, Report,
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
        let _ = writeln!(
            out,
            "Counting runs that reproduced the signature `{sig}` (in their output or a failing test's message).\n"
        );
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
            "| `{}`{} | {} of {} | {} | {} | {} | {} |",
            c.name,
            if c.sham_of.is_some() { " (sham)" } else { "" },
            c.k,
            c.n,
            rate,
            interval_text(c),
            versus_text(c),
            applied_text(c, report.cells.iter().find(|b| b.name == "baseline")).replace('|', "\\|")
        );
    }
    let (total, clean, skipped) = test_counts(report);
    let rows = shown_test_rows(report);
    if total > 0 {
        let _ = writeln!(
            out,
            "\nPer-test outcomes ({}), {total} tests: {}.\n",
            report.per_test_source(),
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
                    .map(|s| {
                        format!(
                            "`{}` ({}×)",
                            s.signature.replace('`', "'").replace('|', "\\|"),
                            s.count
                        )
                    })
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "| `{}` | `{}` | {} | {} | {} | {} |",
                    c.name,
                    t.id,
                    test_count_text(t),
                    test_interval_text(t),
                    match super::test_shift_text(t) {
                        Some(shift) => format!("{}; {shift}", test_versus_text(c, t)),
                        None => test_versus_text(c, t),
                    },
                    sig
                );
            }
            for (c, t) in &rows {
                if let Some(bisect) = &t.bisect {
                    let _ = writeln!(
                        out,
                        "\n`{}` in `{}` is order-dependent: `{bisect}` finds what ran before it and made it fail.",
                        t.id, c.name
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
    if let Some(prove) = &report.scan_prove {
        let lines = super::scan::prove_lines(prove);
        let _ = writeln!(out, "\n**{}**\n", lines[0]);
        for line in &lines[1..] {
            let _ = writeln!(out, "- {}", line.trim_start().replace('|', "\\|"));
        }
    }
    if let Some(d) = &report.design {
        let _ = writeln!(
            out,
            "\n**Screen, then confirm.** {}\n",
            super::design_text(d)
        );
        for (cell, row) in super::confirmed_rows(report) {
            let _ = writeln!(
                out,
                "- `{cell}` · `{}`: {}",
                row.id,
                row.verdict.as_deref().unwrap_or("")
            );
        }
    }
    if !report.confirmations.is_empty() {
        let _ = writeln!(
            out,
            "\n**Confirmation** (each failing run's conditions replayed):\n"
        );
        for c in &report.confirmations {
            let _ = writeln!(
                out,
                "- `{}` ({}, seed {}): {}",
                c.run,
                c.cell,
                c.seed,
                c.sentence()
            );
        }
    }
    if let Some(h) = &report.ci_history {
        out.push_str(&super::beside::markdown(h));
    }
    out
}
