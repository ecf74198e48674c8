//! The terminal table: one row per cell, then notes and the repro line of
//! each differing cell's first failure. Rendered from [`Report`] only.

use std::fmt::Write as _;

use super::{
    applied_text, failure_heading, interval_text, notes, runs_text, shown_failures, versus_text,
    Report,
};

/// Renders the report as a plain-text table.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let pct = (report.confidence * 100.0).round();
    let _ = writeln!(
        out,
        "session {} · seed {} · {} · {pct}% confidence",
        report.session,
        report.seed,
        runs_text(report)
    );
    let _ = writeln!(out, "command: {}", crate::repro::join(&report.command));
    if let Some(sig) = &report.signature {
        let _ = writeln!(out, "counting only failures matching: {sig}");
    }
    if let Some(run) = &report.replay_of {
        let _ = writeln!(
            out,
            "replay of run {run}: its command, cell and seed, re-run exactly"
        );
    }
    let _ = writeln!(out);
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
                c.name.clone(),
                format!("{} of {}", c.k, c.n),
                if c.n == 0 {
                    "—".into()
                } else {
                    format!("{:.1}%", c.rate * 100.0)
                },
                interval_text(c),
                versus_text(c),
                applied_text(c),
            ]
        })
        .collect();
    let mut widths = header.clone().map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cols: &[String; 6]| {
        let mut s = String::new();
        for (i, (col, w)) in cols.iter().zip(widths).enumerate() {
            if i == 5 {
                s.push_str(col);
            } else {
                let _ = write!(s, "{col:<w$}  ");
            }
        }
        s.trim_end().to_string()
    };
    let _ = writeln!(out, "{}", line(&header));
    for row in &rows {
        let _ = writeln!(out, "{}", line(row));
    }
    let notes = notes(report);
    let repros = shown_failures(report);
    if !notes.is_empty() {
        let _ = writeln!(out);
        for n in notes {
            let _ = writeln!(out, "note: {n}");
        }
    }
    if !repros.is_empty() {
        let _ = writeln!(out);
        for (c, f) in repros {
            let _ = writeln!(out, "first failure in {} (run {}):", c.name, f.run);
            let _ = writeln!(out, "  {}", f.repro);
            if let Some(note) = &f.repro_note {
                let _ = writeln!(out, "  note: {note}");
            }
            if let Some(log) = &f.log {
                let _ = writeln!(out, "  log (in the store): {log}");
            }
        }
    }
    out
}
