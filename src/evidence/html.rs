//! The evidence as one self-contained HTML page (`evidence --format
//! html`): the report's page ([`crate::report::html`]: plots, tables, repro
//! lines) followed by the evidence's own blocks: context, ladder,
//! bisections (with the state their culprits changed), classification and
//! coverage.

use std::fmt::Write as _;

use super::classify::{coverage_text, Finding};
use super::Evidence;
use crate::report::html::{render_with, Section};
use crate::report::svg::escape;
use crate::report::Report;

fn findings(out: &mut String, heading: &str, list: &[Finding]) {
    if list.is_empty() {
        return;
    }
    let _ = write!(out, "<h3>{}</h3><ul>", escape(heading));
    for f in list {
        let _ = write!(
            out,
            "<li><strong>{}</strong> — {}<br>{}</li>",
            escape(f.class.label()),
            escape(&f.row.text),
            escape(&f.because)
        );
    }
    out.push_str("</ul>");
}

/// Renders the evidence, with the report it was built from.
pub fn render(e: &Evidence, report: &Report) -> String {
    let mut context = String::new();
    let _ = write!(
        context,
        "<dl><dt>Command</dt><dd><code>{}</code></dd><dt>Host</dt><dd>{} · kernel {} · {} · {} CPUs</dd><dt>Runner</dt><dd>{} {}</dd><dt>flakelab</dt><dd>{}</dd>",
        escape(&e.command_line),
        escape(&e.host.os),
        escape(&e.host.kernel),
        escape(&e.host.arch),
        e.host.cpus,
        escape(e.runner.name.as_deref().unwrap_or("no recipe")),
        escape(e.runner.version.as_deref().unwrap_or("")),
        escape(&e.flakelab_version)
    );
    if let Some(w) = &e.window {
        let _ = write!(
            context,
            "<dt>Window</dt><dd>{} to {} ({:.1} s)</dd>",
            escape(&w.first_start),
            escape(&w.last_end),
            w.seconds
        );
    }
    if let Some(s) = &e.recurring_signature {
        let _ = write!(
            context,
            "<dt>Recurring signature</dt><dd><code>{}</code> in {} of {} failing runs</dd>",
            escape(&s.signature),
            s.runs,
            s.failing_runs
        );
    }
    context.push_str("</dl>");
    let mut sections = vec![Section {
        id: "context".into(),
        title: "Context".into(),
        html: context,
    }];
    if let Some(l) = &e.ladder {
        let mut html = format!(
            "<p>Ladder <code>{}</code>, cell <code>{}</code> at every rung; reproducing means: {}.</p><ol>",
            escape(&l.id),
            escape(&l.cell),
            escape(&l.criterion)
        );
        for r in &l.rungs {
            let _ = write!(html, "<li>{}</li>", escape(r));
        }
        let _ = write!(
            html,
            "</ol><p><strong>{}</strong></p>",
            match l.reproduced_at {
                Some(r) => format!("First rung that reproduced: {r}."),
                None if l.interrupted => "Interrupted before any rung reproduced.".into(),
                None => "No rung reproduced.".into(),
            }
        );
        sections.push(Section {
            id: "ladder".into(),
            title: "Ladder".into(),
            html,
        });
    }
    if !e.bisects.is_empty() {
        let mut html = String::new();
        for b in &e.bisects {
            let _ = write!(
                html,
                "<h3>Polluter bisection <code>{}</code> (from run <code>{}</code>)</h3><pre>",
                escape(&b.id),
                escape(&b.run)
            );
            for l in &b.lines {
                let _ = writeln!(html, "{}", escape(&crate::report::text::one_line(l)));
            }
            html.push_str("</pre>");
        }
        sections.push(Section {
            id: "bisect".into(),
            title: "Bisections".into(),
            html,
        });
    }
    let c = &e.classification;
    let mut html = String::new();
    if c.claimed.is_empty() {
        html.push_str("<p>No class is claimed: no cell or rung differed from the baseline in a way that names one.</p>");
    }
    findings(&mut html, "Supported by the evidence", &c.claimed);
    findings(&mut html, "Argued against", &c.against);
    if !c.not_determinable.is_empty() {
        html.push_str("<h3>Not determinable from this evidence</h3><ul>");
        for o in &c.not_determinable {
            let _ = write!(
                html,
                "<li><strong>{}</strong> — {}</li>",
                escape(o.class.label()),
                escape(&o.why)
            );
        }
        html.push_str("</ul>");
    }
    for n in c.unmapped.iter().chain(&c.notes) {
        let _ = write!(html, "<p>{}</p>", escape(n));
    }
    sections.push(Section {
        id: "classification".into(),
        title: "Classification".into(),
        html,
    });
    let mut html = String::from(
        "<table id=\"coverage-table\"><caption>Every flake class, and what looked at it</caption><thead><tr><th scope=\"col\">class</th><th scope=\"col\">looked at</th></tr></thead><tbody>",
    );
    for row in &e.coverage {
        let _ = write!(
            html,
            "<tr><th scope=\"row\">{}</th><td>{}</td></tr>",
            escape(row.class.label()),
            escape(&coverage_text(&row.coverage))
        );
    }
    html.push_str("</tbody></table>");
    sections.push(Section {
        id: "coverage".into(),
        title: "Coverage".into(),
        html,
    });
    render_with(report, &sections)
}
