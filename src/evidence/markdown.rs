//! The evidence block as GitHub-flavoured Markdown, ready to paste into a
//! bug report. Every verdict is a count with its N; nothing is labelled.

use std::fmt::Write as _;

use super::classify::{coverage_text, Finding};
use super::Evidence;
use crate::report::text::{md_block, md_cell_code, md_code, one_line};

fn cell_text(text: &str) -> String {
    one_line(&text.replace('\n', " ")).replace('|', "\\|")
}

fn code(text: &str) -> String {
    md_code(text)
}

fn cell_code(text: &str) -> String {
    md_cell_code(text)
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
}

fn finding(out: &mut String, f: &Finding) {
    let _ = writeln!(
        out,
        "- **{}** — {}  \n  {}",
        f.class.label(),
        cell_text(&f.row.text),
        one_line(&f.because)
    );
}

/// Renders the evidence as Markdown.
pub fn render(e: &Evidence) -> String {
    let mut out = String::new();
    let pct = (e.confidence * 100.0).round();
    let _ = writeln!(out, "### Evidence: flakelab session `{}`\n", e.session);

    match &e.signature {
        Some(_) if e.signatures.len() > 1 => {
            let patterns: Vec<String> = (e.signatures.iter().enumerate())
                .map(|(i, p)| format!("pattern {} {}", i + 1, code(p)))
                .collect();
            let _ = writeln!(
                out,
                "Signatures under investigation: {} (each failure counts for the first it matches; a failure matching none is an other failure: a real failure, never green)",
                patterns.join(", ")
            );
        }
        Some(sig) => {
            let _ = writeln!(out, "Signature under investigation: {}", code(sig));
        }
        None => {
            let _ = writeln!(
                out,
                "Signature under investigation: none given (every failure counts)"
            );
        }
    }
    match &e.recurring_signature {
        Some(s) if s.repeats => {
            let _ = writeln!(
                out,
                "\nFirst recurring failure signature: {} — in {} of {} failing runs, first in run {} ({})",
                code(&s.signature),
                s.runs,
                s.failing_runs,
                code(&s.first_run),
                code(&s.cell)
            );
        }
        Some(s) => {
            let _ = writeln!(
                out,
                "\nFirst failure signature (none repeats): {} — run {} ({}), {} failing run(s) in all",
                code(&s.signature),
                code(&s.first_run),
                code(&s.cell),
                s.failing_runs
            );
        }
        None => {
            let _ = writeln!(out, "\nNo failing run carried a failure signature.");
        }
    }

    let _ = writeln!(out, "\n#### Context\n");
    let _ = writeln!(out, "| | |\n| --- | --- |");
    match &e.repository {
        Some(r) => {
            let _ = writeln!(
                out,
                "| repository | {}{} |",
                cell_code(&r.root),
                r.remote
                    .as_deref()
                    .map(|u| format!(" (remote {})", cell_code(u)))
                    .unwrap_or_else(|| " (no `origin` remote)".into())
            );
            let _ = writeln!(
                out,
                "| commit | {} |",
                match &r.commit {
                    Some(c) if r.dirty =>
                        format!("{} with uncommitted changes to tracked files", cell_code(c)),
                    Some(c) => format!("{} (tracked files unchanged)", cell_code(c)),
                    None => "no commit yet".into(),
                }
            );
            let _ = writeln!(
                out,
                "| branch | {} |",
                r.branch
                    .as_deref()
                    .map(cell_code)
                    .unwrap_or_else(|| "detached HEAD".into())
            );
        }
        None => {
            let _ = writeln!(out, "| repository | not in a git repository |");
        }
    }
    let h = &e.host;
    let _ = writeln!(
        out,
        "| host | {}, kernel {}, {}, {} × {} CPUs, {} memory |",
        cell_text(&h.os),
        cell_text(&h.kernel),
        h.arch,
        cell_text(&h.cpu_model),
        h.cpus,
        gib(h.memory_bytes)
    );
    let runner = match (&e.runner.name, &e.runner.version) {
        (Some(name), Some(v)) => {
            format!(
                "{} — {} ({})",
                cell_code(name),
                cell_code(v),
                e.runner.version_source
            )
        }
        (Some(name), None) => format!(
            "{} — version unknown ({})",
            cell_code(name),
            e.runner.version_source
        ),
        (None, _) => format!(
            "no recipe{}",
            e.runner
                .note
                .as_deref()
                .map(|n| format!(" ({})", cell_text(n)))
                .unwrap_or_default()
        ),
    };
    let _ = writeln!(out, "| runner | {runner} |");
    let _ = writeln!(out, "| flakelab | {} |", e.flakelab_version);
    match &e.window {
        Some(w) => {
            let _ = writeln!(
                out,
                "| window | {} → {} ({:.1} s) |",
                w.first_start, w.last_end, w.seconds
            );
        }
        None => {
            let _ = writeln!(out, "| window | no run was executed |");
        }
    }
    let _ = writeln!(out, "| command | {} |", cell_code(&e.command_line));
    let _ = writeln!(
        out,
        "| plan | {} runs per cell, {} at once, seed {}, {pct}% confidence |",
        e.runs_per_cell, e.jobs, e.seed
    );

    let _ = writeln!(out, "\n#### Cells against the baseline\n");
    let _ = writeln!(
        out,
        "| cell | k of N, {pct}% interval or bound | vs baseline | probe |"
    );
    let _ = writeln!(out, "| --- | --- | --- | --- |");
    for c in &e.cells {
        let probe = if c.applied {
            "applied".to_string()
        } else {
            format!(
                "NOT APPLIED: {}",
                c.reason.as_deref().unwrap_or("no reason recorded")
            )
        };
        let _ = writeln!(
            out,
            "| {}{} | {} | {} | {} |",
            cell_code(&c.name),
            if c.sham_of.is_some() { " (sham)" } else { "" },
            c.count,
            cell_text(&c.versus),
            cell_text(&probe)
        );
    }
    if !e.notes.is_empty() {
        let _ = writeln!(out);
        for n in &e.notes {
            let _ = writeln!(out, "- {}", cell_text(n));
        }
    }

    for (ids, what) in [
        (
            &e.always_failing,
            "failed in every run of every cell, the baseline's too",
        ),
        (&e.always_skipped, "were skipped in every run of every cell"),
    ] {
        if !ids.is_empty() {
            let list: Vec<String> = ids.iter().map(|t| code(t)).collect();
            let _ = writeln!(
                out,
                "\n{} test(s) {what} (listed once, not per cell; they can show no difference): {}",
                ids.len(),
                list.join(", ")
            );
        }
    }
    if !e.tests.is_empty() {
        let _ = writeln!(out, "\n#### Per-test rows that differ or failed\n");
        let _ = writeln!(
            out,
            "| cell | test | k of N | interval | vs baseline | signature |"
        );
        let _ = writeln!(out, "| --- | --- | --- | --- | --- | --- |");
        for t in &e.tests {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                cell_code(&t.cell),
                cell_code(&t.test),
                match &t.split {
                    Some(split) => format!("{} ({})", t.count, cell_text(split)),
                    None => t.count.clone(),
                },
                t.interval,
                cell_text(&t.versus),
                t.signature.as_deref().map(cell_code).unwrap_or_default()
            );
        }
    }

    if let Some(h) = &e.ci_history {
        out.push_str(&crate::report::beside::markdown(h));
    }

    if !e.reproductions.is_empty() {
        let _ = writeln!(out, "\n#### Reproduction\n");
        for r in &e.reproductions {
            let _ = writeln!(out, "{}, run {}:\n", code(&r.cell), code(&r.run));
            let _ = writeln!(out, "{}\n", md_block("sh", [r.line.as_str()]));
            if let Some(note) = &r.note {
                let _ = writeln!(out, "{}\n", one_line(note));
            }
        }
    }

    if let Some(l) = &e.ladder {
        let _ = writeln!(out, "\n#### Ladder `{}`\n", l.id);
        let _ = writeln!(
            out,
            "Cell {} at every rung; reproducing means: {}.\n",
            code(&l.cell),
            one_line(&l.criterion)
        );
        for r in &l.rungs {
            let _ = writeln!(out, "- {}", one_line(r));
        }
        let _ = writeln!(
            out,
            "\n{}",
            match l.reproduced_at {
                Some(r) => format!("First rung that reproduced: {r}."),
                None if l.interrupted => "Interrupted before any rung reproduced.".into(),
                None => "No rung reproduced.".into(),
            }
        );
    }

    for b in &e.bisects {
        let _ = writeln!(
            out,
            "\n#### Polluter bisection `{}` (from run `{}`)\n",
            b.id, b.run
        );
        let _ = writeln!(
            out,
            "{}",
            md_block("text", b.lines.iter().map(String::as_str))
        );
    }

    let c = &e.classification;
    let _ = writeln!(out, "\n#### Classification\n");
    if c.claimed.is_empty() {
        let _ = writeln!(
            out,
            "No class is claimed: no cell or rung differed from the baseline in a way that names one. What was looked at is in the coverage below."
        );
    } else {
        let _ = writeln!(out, "Supported by the evidence:\n");
        for f in &c.claimed {
            finding(&mut out, f);
        }
    }
    if !c.against.is_empty() {
        let _ = writeln!(out, "\nArgued against:\n");
        for f in &c.against {
            finding(&mut out, f);
        }
    }
    if !c.not_determinable.is_empty() {
        let _ = writeln!(out, "\nNot determinable from this evidence:\n");
        for o in &c.not_determinable {
            let _ = writeln!(out, "- **{}** — {}", o.class.label(), one_line(&o.why));
        }
    }
    for u in &c.unmapped {
        let _ = writeln!(out, "\n- {}", cell_text(u));
    }
    for n in &c.notes {
        let _ = writeln!(out, "\n- {}", cell_text(n));
    }

    let _ = writeln!(out, "\n#### Coverage\n");
    let _ = writeln!(out, "| class | looked at |\n| --- | --- |");
    for row in &e.coverage {
        let _ = writeln!(
            out,
            "| {} | {} |",
            row.class.label(),
            cell_text(&coverage_text(&row.coverage))
        );
    }
    out
}
