//! Rendering what history says (`flakelab history`) and the gate's verdict
//! (`flakelab check`): table, Markdown, GitHub annotations and the step
//! summary. JSON is the analysis serialised.
//!
//! Pure: data in, text out.

use std::fmt::Write as _;

use super::gha::{self, Level};
use super::text::{md_cell, md_cell_code, md_code, one_line};
use crate::history::analyse::{Analysis, Finding, TestHistory};
use crate::history::check::{Standing, Verdict};
use crate::stats::p_text;

fn finding_word(f: Finding) -> &'static str {
    match f {
        Finding::SameCommit => "same-commit disagreement",
        Finding::ContextSplit => "platform or entry-path mismatch",
        Finding::CommitUnknown => "disagreement, commit not recorded",
        Finding::CrossCommit => "cross-commit disagreement",
        Finding::AlwaysFailing => "always failing",
        Finding::AlwaysSkipped => "always skipped",
        Finding::TooFewRuns => "too few runs",
        Finding::Passing => "passing",
    }
}

fn interesting(t: &TestHistory) -> bool {
    t.finding != Finding::Passing
}

fn association_lines(t: &TestHistory) -> Vec<String> {
    t.associations
        .iter()
        .filter(|a| a.significant)
        .map(|a| {
            let mut s = format!(
                "failures concentrate in {}={}: {} of {} there, {} of {} elsewhere (difference {:+.3}; Fisher {}, Holm {}): an association, not a cause",
                a.dimension,
                a.value,
                a.failed_in,
                a.ran_in,
                a.failed_out,
                a.ran_out,
                a.difference,
                p_text(a.p),
                p_text(a.p_holm)
            );
            if !a.inseparable_from.is_empty() {
                let _ = write!(
                    s,
                    "; inseparable from {} (they split the runs the same way)",
                    a.inseparable_from.join(", ")
                );
            }
            s
        })
        .collect()
}

/// The terminal table: one block per test that is not plainly passing,
/// then a count of the passing ones.
pub fn table(a: &Analysis) -> String {
    let mut s = String::new();
    let passing = a.tests.iter().filter(|t| !interesting(t)).count();
    let _ = writeln!(
        s,
        "history: {} tests, {} passing in every run",
        a.tests.len(),
        passing
    );
    for t in a.tests.iter().filter(|t| interesting(t)) {
        let _ = writeln!(s, "\n{}  [{}]", one_line(&t.test), finding_word(t.finding));
        let _ = writeln!(s, "  {}", one_line(&t.statement));
        for c in &t.contexts {
            let _ = write!(
                s,
                "  {:<48} {:>4} of {:<5} [{:.3}, {:.3}]  commits {}  transitions {}",
                one_line(&c.context),
                c.k,
                c.n,
                c.low,
                c.high,
                c.commits,
                c.transitions
            );
            if c.same_commit > 0 {
                let _ = write!(s, "  same-commit {}", c.same_commit);
            }
            if c.skipped > 0 {
                let _ = write!(s, "  skipped {}", c.skipped);
            }
            if let Some(p) = &c.passing_since {
                let _ = write!(
                    s,
                    "  passing since {} ({} runs, {} commits)",
                    one_line(p.commit.as_deref().unwrap_or("?")),
                    p.runs,
                    p.commits
                );
            }
            s.push('\n');
        }
        for line in association_lines(t) {
            let _ = writeln!(s, "  {}", one_line(&line));
        }
    }
    for line in infra_lines(a) {
        let _ = writeln!(s, "\nrunner infrastructure: {}", one_line(&line));
    }
    for w in &a.warnings {
        let _ = writeln!(s, "\nwarning: {}", one_line(w));
    }
    s
}

/// One line per report that carries direct evidence of runner
/// infrastructure trouble: where it ran, and what it shows.
pub fn infra_lines(a: &Analysis) -> Vec<String> {
    a.infrastructure
        .iter()
        .map(|n| {
            format!(
                "{} ({}{}, {}): {}",
                n.path,
                n.run,
                n.commit
                    .as_deref()
                    .map(|c| format!(", commit {c}"))
                    .unwrap_or_default(),
                n.context,
                n.what.join("; ")
            )
        })
        .collect()
}

/// The Markdown document.
pub fn markdown(a: &Analysis) -> String {
    let mut s = String::from("## History from CI\n\n");
    let passing = a.tests.iter().filter(|t| !interesting(t)).count();
    let _ = writeln!(
        s,
        "{} tests; {} passed in every run.\n",
        a.tests.len(),
        passing
    );
    for t in a.tests.iter().filter(|t| interesting(t)) {
        let _ = writeln!(
            s,
            "### {} — {}\n",
            md_code(&t.test),
            finding_word(t.finding)
        );
        let _ = writeln!(s, "{}\n", one_line(&t.statement));
        s.push_str(
            "| context | failed | runs | interval | commits | transitions | same-commit |\n",
        );
        s.push_str("|---|---:|---:|---|---:|---:|---:|\n");
        for c in &t.contexts {
            let _ = writeln!(
                s,
                "| {} | {} | {} | [{:.3}, {:.3}] | {} | {} | {} |",
                md_cell(&c.context),
                c.k,
                c.n,
                c.low,
                c.high,
                c.commits,
                c.transitions,
                c.same_commit
            );
        }
        s.push('\n');
        for line in association_lines(t) {
            let _ = writeln!(s, "- {}", one_line(&line));
        }
        if t.associations.iter().any(|a| a.significant) {
            s.push('\n');
        }
    }
    let infra = infra_lines(a);
    if !infra.is_empty() {
        s.push_str("### Runner infrastructure\n\n");
        for line in infra {
            let _ = writeln!(s, "- {}", one_line(&line));
        }
        s.push('\n');
    }
    for w in &a.warnings {
        let _ = writeln!(s, "> **Warning:** {}\n", one_line(w));
    }
    s
}

fn standing_word(s: Standing) -> &'static str {
    match s {
        Standing::NewlyProven => "newly proven nondeterministic",
        Standing::Worse => "measurably worse",
        Standing::Better => "better",
        Standing::NewFailures => "new failures",
    }
}

/// The gate's verdict as text.
pub fn check_text(verdicts: &[Verdict]) -> String {
    let failing = verdicts.iter().filter(|v| v.standing.fails()).count();
    let mut s = if failing == 0 {
        String::from("check: passed (nothing newly proven nondeterministic or measurably worse)\n")
    } else {
        format!("check: FAILED: {failing} test/context pair(s) newly proven nondeterministic or measurably worse\n")
    };
    for v in verdicts {
        let mark = if v.standing.fails() { "FAIL" } else { "note" };
        let _ = writeln!(
            s,
            "  {mark}  {}: {}",
            one_line(&v.test),
            one_line(&v.message)
        );
    }
    s
}

/// One annotation per verdict: errors for failing ones, notices for notes.
pub fn check_annotations(verdicts: &[Verdict]) -> String {
    let mut s = String::new();
    for v in verdicts {
        let level = if v.standing.fails() {
            Level::Error
        } else {
            Level::Notice
        };
        let title = format!("flakelab: {} {}", v.test, standing_word(v.standing));
        s.push_str(&gha::annotation(
            level,
            v.file.as_deref(),
            v.line,
            &title,
            &v.message,
        ));
        s.push('\n');
    }
    s
}

/// The step summary (Markdown).
pub fn check_summary(verdicts: &[Verdict]) -> String {
    let failing = verdicts.iter().filter(|v| v.standing.fails()).count();
    let mut s = String::from("## flakelab check\n\n");
    if failing == 0 {
        s.push_str("Passed: nothing newly proven nondeterministic or measurably worse.\n");
    } else {
        let _ = writeln!(
            s,
            "**Failed**: {failing} test/context pair(s) newly proven nondeterministic or measurably worse."
        );
    }
    if !verdicts.is_empty() {
        s.push_str("\n| test | context | standing | evidence |\n|---|---|---|---|\n");
        for v in verdicts {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                md_cell_code(&v.test),
                md_cell(&v.context),
                standing_word(v.standing),
                one_line(&v.message).replace('|', "\\|")
            );
        }
    }
    s
}
