//! The report as one self-contained HTML page (`--format html`): inline
//! CSS, inline JavaScript and inline SVG, nothing fetched, so the file reads
//! offline and can be attached to a bug report. It holds the forest plots
//! ([`super::svg`]) of the cells and of the (test, cell) rows that differ,
//! the cells' table, the per-test table (sortable, filterable, each repro
//! line with a copy button), the screen design's looks and the
//! confirmations, and whatever sections a caller adds (the evidence adds its
//! ladder, classification and coverage). The page fits a 1280 px window:
//! code (ids, commands) wraps anywhere it must, a repro line wraps on
//! screen while its text (what the copy button copies) stays the one line,
//! and no element scrolls or clips sideways. Pure: the report in, a string
//! out.

use std::fmt::Write as _;

use super::svg::{self, escape, PlotRow, RowKind};
use super::{CellReport, Report};

/// A section a caller adds below the report's own (already HTML).
#[derive(Debug, Clone)]
pub struct Section {
    /// The section's element id.
    pub id: String,
    /// Its heading.
    pub title: String,
    /// Its body, as HTML the caller escaped.
    pub html: String,
}

fn baseline(report: &Report) -> Option<&CellReport> {
    report.cells.iter().find(|c| c.name == "baseline")
}

fn cell_kind(c: &CellReport) -> RowKind {
    if !c.applied {
        RowKind::NotApplied
    } else if c.name == "baseline" {
        RowKind::Baseline
    } else if c.sham_of.is_some() {
        RowKind::Sham
    } else if c.vs_baseline.as_ref().is_some_and(|v| v.differs) {
        RowKind::Differs
    } else {
        RowKind::Same
    }
}

/// The forest plot's rows for the cells, in the report's order.
pub fn cell_rows(report: &Report) -> Vec<PlotRow> {
    report
        .cells
        .iter()
        .map(|c| PlotRow {
            label: c.name.clone(),
            cell: c.name.clone(),
            test: None,
            k: c.k,
            n: c.n,
            rate: c.rate,
            low: c.low,
            high: c.high,
            baseline: None,
            kind: cell_kind(c),
        })
        .collect()
}

/// The forest plot's rows for the (test, cell) pairs that differ from the
/// baseline, largest effect (rate above the test's baseline rate) first,
/// ties by test then cell.
pub fn test_rows(report: &Report) -> Vec<PlotRow> {
    let base = baseline(report);
    let mut rows: Vec<(f64, PlotRow)> = report
        .cells
        .iter()
        .filter(|c| c.name != "baseline")
        .flat_map(|c| {
            c.tests.iter().filter(|t| t.differs()).map(move |t| {
                let b = base
                    .and_then(|b| b.tests.iter().find(|bt| bt.id == t.id))
                    .map(|bt| (bt.rate, bt.low, bt.high));
                let effect = t.rate - b.map_or(0.0, |b| b.0);
                (
                    effect,
                    PlotRow {
                        label: format!("{} · {}", t.id, c.name),
                        cell: c.name.clone(),
                        test: Some(t.id.clone()),
                        k: t.k,
                        n: t.n,
                        rate: t.rate,
                        low: t.low,
                        high: t.high,
                        baseline: b,
                        kind: if c.applied {
                            RowKind::Differs
                        } else {
                            RowKind::NotApplied
                        },
                    },
                )
            })
        })
        .collect();
    rows.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| a.1.test.cmp(&b.1.test))
            .then_with(|| a.1.cell.cmp(&b.1.cell))
    });
    rows.into_iter().map(|(_, r)| r).collect()
}

/// The forest plot of the cells (`standalone`: as an SVG file).
pub fn cells_plot(report: &Report, standalone: bool) -> String {
    svg::forest(
        "plot-cells",
        &format!("Session {}: failure rate per cell", report.session),
        &cell_rows(report),
        baseline(report).map(|b| (b.rate, b.low, b.high)),
        report.confidence,
        standalone,
    )
}

const STYLE: &str = r#"
:root{color-scheme:light;font-family:system-ui,-apple-system,"Segoe UI",sans-serif;color:#111827;background:#fff}
body{max-width:1100px;margin:0 auto;padding:1rem 1.5rem;line-height:1.4}
h1{font-size:1.4rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #e5e7eb}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.85rem}
code,pre{overflow-wrap:anywhere}
pre{background:#f3f4f6;padding:.5rem;white-space:pre-wrap;word-break:normal}
table{border-collapse:collapse;width:100%;font-size:.85rem}
caption{text-align:left;font-weight:600;padding:.3rem 0}
th,td{border:1px solid #e5e7eb;padding:.25rem .4rem;vertical-align:top;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}
th button{all:unset;cursor:pointer;font-weight:600}
th button:focus-visible,button:focus-visible,input:focus-visible{outline:2px solid #2563eb;outline-offset:2px}
th[aria-sort=ascending] button::after{content:" ▲"}th[aria-sort=descending] button::after{content:" ▼"}
tr.differs td:first-child{border-left:4px solid #b91c1c}
.tag{display:inline-block;border-radius:3px;padding:0 .3rem;font-size:.75rem;font-weight:600}
.tag.differs{background:#fee2e2;color:#991b1b}.tag.sham{background:#e5e7eb}.tag.not-applied{background:#fef3c7;color:#92400e}
.controls{display:flex;flex-wrap:wrap;gap:1rem;align-items:center;margin:.5rem 0}
.forest{max-width:100%;height:auto}
.forest .differs line.ci,.forest .differs circle{stroke:#b91c1c;fill:#b91c1c}
.forest .same line.ci,.forest .same circle,.forest .baseline line.ci,.forest .baseline rect{stroke:#1f2937;fill:#1f2937}
.forest .sham line.ci{stroke:#6b7280}.forest .sham circle{stroke:#6b7280;fill:#fff;stroke-width:2}
.forest .not-applied line.ci{stroke:#d97706;stroke-dasharray:4 3}.forest .not-applied circle{fill:#d97706}
.legend{font-size:.8rem;color:#374151}
.repro{display:flex;gap:.4rem;align-items:flex-start}.repro pre{flex:1;margin:0;min-width:0}
#tests-table th[scope=row]{min-width:12rem}#tests-table th[scope=row] code{display:block;max-width:22rem}#tests-table td:nth-child(2){min-width:7rem}
td .repro{min-width:17rem;max-width:30rem}
.sr-only{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
@media print{.controls,button.copy{display:none}body{max-width:none;padding:0}tr{break-inside:avoid}tr[hidden]{display:table-row}h2{break-after:avoid}.forest{break-inside:avoid}}
"#;

const SCRIPT: &str = r#"
(function(){
  function key(td){var v=td.getAttribute('data-sort');if(v===null)v=td.textContent;var f=parseFloat(v);return isNaN(f)||String(f)!==String(Number(v))?{s:v.toLowerCase()}:{n:f};}
  function cmp(a,b){if('n' in a&&'n' in b)return a.n-b.n;var x=('s' in a?a.s:String(a.n)),y=('s' in b?b.s:String(b.n));return x<y?-1:x>y?1:0;}
  document.querySelectorAll('table.sortable').forEach(function(table){
    var ths=table.tHead.rows[0].cells;
    Array.prototype.forEach.call(ths,function(th,i){
      var b=th.querySelector('button');if(!b)return;
      b.addEventListener('click',function(){
        var dir=th.getAttribute('aria-sort')==='ascending'?'descending':'ascending';
        Array.prototype.forEach.call(ths,function(o){o.removeAttribute('aria-sort');});
        th.setAttribute('aria-sort',dir);
        var body=table.tBodies[0],rows=Array.prototype.slice.call(body.rows);
        rows.sort(function(r,s){var c=cmp(key(r.cells[i]),key(s.cells[i]));return dir==='ascending'?c:-c;});
        rows.forEach(function(r){body.appendChild(r);});
        var st=document.getElementById(table.id+'-status');if(st)st.textContent='sorted by '+th.textContent.trim()+', '+dir;
      });
    });
  });
  document.querySelectorAll('[data-filter-for]').forEach(function(input){
    var table=document.getElementById(input.getAttribute('data-filter-for'));
    var only=document.getElementById(input.id+'-differs');
    var out=document.getElementById(input.id+'-count');
    function apply(){
      var q=input.value.toLowerCase(),shown=0;
      Array.prototype.forEach.call(table.tBodies[0].rows,function(r){
        var ok=r.textContent.toLowerCase().indexOf(q)>=0&&(!only||!only.checked||r.classList.contains('differs'));
        r.hidden=!ok;if(ok)shown++;
      });
      if(out)out.textContent=shown+' of '+table.tBodies[0].rows.length+' rows shown';
    }
    input.addEventListener('input',apply);if(only)only.addEventListener('change',apply);apply();
  });
  document.querySelectorAll('button.copy').forEach(function(b){
    b.addEventListener('click',function(){
      var text=document.getElementById(b.getAttribute('data-copy')).textContent;
      function done(){b.textContent='copied';b.setAttribute('data-copied','true');}
      function fallback(){var t=document.createElement('textarea');t.value=text;document.body.appendChild(t);t.select();try{document.execCommand('copy');}catch(e){}document.body.removeChild(t);done();}
      if(navigator.clipboard&&navigator.clipboard.writeText){navigator.clipboard.writeText(text).then(done,fallback);}else{fallback();}
    });
  });
})();
"#;

fn tag(kind: RowKind) -> &'static str {
    match kind {
        RowKind::Differs => " <span class=\"tag differs\">differs</span>",
        RowKind::Sham => " <span class=\"tag sham\">sham</span>",
        RowKind::NotApplied => " <span class=\"tag not-applied\">not applied</span>",
        _ => "",
    }
}

fn repro_block(id: &str, line: &str) -> String {
    format!(
        "<div class=\"repro\"><pre id=\"{id}\">{}</pre><button type=\"button\" class=\"copy\" data-copy=\"{id}\" aria-label=\"Copy the repro line\">copy</button></div>",
        escape(line)
    )
}

fn th(label: &str) -> String {
    format!("<th scope=\"col\"><button type=\"button\">{label}</button></th>")
}

fn header(out: &mut String, report: &Report) {
    let pct = (report.confidence * 100.0).round();
    let _ = write!(
        out,
        "<header><h1>flakelab session <code>{}</code></h1><p>Command <code>{}</code> · seed {} · {} · {pct}% confidence · started {}</p>",
        escape(&report.session),
        escape(&crate::repro::join(&report.command)),
        report.seed,
        escape(&super::runs_text(report)),
        escape(&report.started_at)
    );
    if report.signatures.len() > 1 {
        let patterns: Vec<String> = (report.signatures.iter().enumerate())
            .map(|(i, p)| format!("pattern {} <code>{}</code>", i + 1, escape(p)))
            .collect();
        let _ = write!(
            out,
            "<p>Counting runs that reproduced a signature, each for the first it matched: {}; failures matching none are other failures.</p>",
            patterns.join(", ")
        );
    } else if let Some(sig) = &report.signature {
        let _ = write!(
            out,
            "<p>Counting runs that reproduced the signature <code>{}</code>.</p>",
            escape(sig)
        );
    }
    if let Some(run) = &report.replay_of {
        let _ = write!(out, "<p>Replay of run <code>{}</code>.</p>", escape(run));
    }
    out.push_str("</header>");
}

fn cells_section(out: &mut String, report: &Report) {
    let pct = (report.confidence * 100.0).round();
    out.push_str("<section id=\"cells\" aria-labelledby=\"cells-h\"><h2 id=\"cells-h\">Cells against the baseline</h2>");
    out.push_str(&cells_plot(report, false));
    out.push_str("<p class=\"legend\">Each row: the cell's failure rate (dot; the baseline a square) and its Clopper–Pearson interval; the shaded band is the baseline's interval. Red: differs from the baseline (Holm-adjusted); hollow grey: a sham (the mechanism with a null parameter); dashed amber: NOT APPLIED, so not measured as asked.</p>");
    let _ = write!(
        out,
        "<table id=\"cells-table\" class=\"sortable\"><caption>Cells, {} of them</caption><thead><tr>{}{}{}{}{}{}</tr></thead><tbody>",
        report.cells.len(),
        th("cell"),
        th(super::failure_heading(report)),
        th("rate"),
        th(&format!("{pct}% interval")),
        th("vs baseline"),
        th("probe")
    );
    let base = baseline(report);
    for c in &report.cells {
        let kind = cell_kind(c);
        let _ = write!(
            out,
            "<tr class=\"{}\" data-cell=\"{}\"><th scope=\"row\" data-sort=\"{}\"><code>{}</code>{}</th><td class=\"num\" data-sort=\"{}\">{} of {}</td><td class=\"num\" data-sort=\"{}\">{}</td><td data-sort=\"{}\">{}</td><td>{}</td><td>{}</td></tr>",
            kind.class(),
            escape(&c.name),
            escape(&c.name),
            escape(&c.name),
            tag(kind),
            c.k,
            c.k,
            c.n,
            c.rate,
            if c.n == 0 { "—".to_string() } else { format!("{:.1}%", c.rate * 100.0) },
            c.high,
            escape(&super::interval_text(c)),
            escape(&super::versus_text(c)),
            escape(&super::applied_text(c, base))
        );
    }
    out.push_str("</tbody></table></section>");
}

fn tests_section(out: &mut String, report: &Report) {
    let (total, clean, skipped) = super::test_counts(report);
    if total == 0 {
        return;
    }
    let plotted = test_rows(report);
    let _ = write!(
        out,
        "<section id=\"tests\" aria-labelledby=\"tests-h\"><h2 id=\"tests-h\">Tests</h2><p>Per-test outcomes ({}), {total} tests: {}.</p>",
        escape(report.per_test_source()),
        escape(&super::counting_text(report))
    );
    if !plotted.is_empty() {
        out.push_str(&svg::forest(
            "plot-tests",
            &format!(
                "Tests that differ from the baseline: {} (test, cell) rows, largest effect first",
                plotted.len()
            ),
            &plotted,
            None,
            report.confidence,
            false,
        ));
        out.push_str("<p class=\"legend\">Each row: the test's failure rate in the cell with its interval; the thin blue bar under it is the same test at baseline.</p>");
    }
    let rows = super::shown_test_rows(report);
    if !rows.is_empty() {
        let _ = write!(
            out,
            "<div class=\"controls\"><label for=\"filter\">Filter rows</label><input type=\"search\" id=\"filter\" data-filter-for=\"tests-table\" placeholder=\"test, cell or signature\"><label><input type=\"checkbox\" id=\"filter-differs\"> only rows that differ</label><output id=\"filter-count\" aria-live=\"polite\"></output></div><p id=\"tests-table-status\" class=\"sr-only\" aria-live=\"polite\"></p><table id=\"tests-table\" class=\"sortable\"><caption>Tests that differ from the baseline or failed, per cell ({} rows)</caption><thead><tr>{}{}{}{}{}{}{}<th scope=\"col\">repro</th></tr></thead><tbody>",
            rows.len(),
            th("test"),
            th("cell"),
            th(super::failure_heading(report)),
            th("rate"),
            th("interval"),
            th("vs baseline"),
            th("signature"),
        );
        for (i, (c, t)) in rows.iter().enumerate() {
            let sig = t
                .signatures
                .first()
                .map(|s| format!("<code>{}</code> ({}×)", escape(&s.signature), s.count))
                .unwrap_or_default();
            let versus = match super::test_shift_text(t) {
                Some(shift) => format!("{}; {shift}", super::test_versus_text(c, t)),
                None => super::test_versus_text(c, t),
            };
            let repro = match (&t.first_failure, &c.first_failure) {
                (Some(run), Some(f)) if &f.run == run => {
                    repro_block(&format!("repro-t{i}"), &f.repro)
                }
                (Some(run), _) => repro_block(
                    &format!("repro-t{i}"),
                    &format!("flakelab replay {run} --times 10"),
                ),
                (None, _) => String::new(),
            };
            let _ = write!(
                out,
                "<tr class=\"{}\" data-test=\"{}\" data-cell=\"{}\"><th scope=\"row\" data-sort=\"{}\"><code>{}</code></th><td data-sort=\"{}\"><code>{}</code></td><td class=\"num\" data-sort=\"{}\">{}</td><td class=\"num\" data-sort=\"{}\">{}</td><td data-sort=\"{}\">{}</td><td>{}</td><td>{sig}</td><td>{repro}</td></tr>",
                if t.differs() { "differs" } else { "same" },
                escape(&t.id),
                escape(&c.name),
                escape(&t.id),
                escape(&t.id),
                escape(&c.name),
                escape(&c.name),
                t.k,
                escape(&super::test_count_text(t)),
                t.rate,
                if t.n == 0 { "—".to_string() } else { format!("{:.1}%", t.rate * 100.0) },
                t.high,
                escape(&super::test_interval_text(t)),
                escape(&versus),
            );
        }
        out.push_str("</tbody></table>");
    }
    if clean > 0 {
        let _ = write!(
            out,
            "<p>{clean} other test(s) passed in every run that ran them, in every cell.</p>"
        );
    }
    if skipped > 0 {
        let _ = write!(
            out,
            "<p>{skipped} test(s) were skipped in every run of every cell.</p>"
        );
    }
    out.push_str("</section>");
}

fn design_section(out: &mut String, report: &Report) {
    let Some(d) = &report.design else { return };
    let _ = write!(
        out,
        "<section id=\"design\" aria-labelledby=\"design-h\"><h2 id=\"design-h\">Screen, then confirm</h2><p>{}</p>",
        escape(&super::design_text(d))
    );
    for (cell, row) in super::confirmed_rows(report) {
        let _ = write!(
            out,
            "<table class=\"looks\"><caption><code>{}</code> · <code>{}</code>: {}</caption><thead><tr><th scope=\"col\">pair</th><th scope=\"col\">stage</th><th scope=\"col\">cell k/n</th><th scope=\"col\">baseline k/n</th><th scope=\"col\">p</th><th scope=\"col\">spent p</th><th scope=\"col\">decision</th></tr></thead><tbody>",
            escape(cell),
            escape(&row.id),
            escape(row.verdict.as_deref().unwrap_or(""))
        );
        for l in &row.looks {
            let _ = write!(
                out,
                "<tr><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{} of {}</td><td class=\"num\">{} of {}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                l.pair,
                escape(&l.stage),
                l.cell.0,
                l.cell.1,
                l.baseline.0,
                l.baseline.1,
                escape(&crate::stats::p_text(l.p)),
                escape(&crate::stats::p_text(l.spent_p)),
                escape(&format!("{:?}", l.decision).to_lowercase())
            );
        }
        out.push_str("</tbody></table>");
    }
    out.push_str("</section>");
}

fn failures_section(out: &mut String, report: &Report) {
    let failures = super::shown_failures(report);
    let notes = super::notes(report);
    if failures.is_empty() && notes.is_empty() && report.confirmations.is_empty() {
        return;
    }
    out.push_str("<section id=\"repro\" aria-labelledby=\"repro-h\"><h2 id=\"repro-h\">Reproduction and notes</h2>");
    for (i, (c, f)) in failures.iter().enumerate() {
        let _ = write!(
            out,
            "<h3>First failure in <code>{}</code> (run <code>{}</code>)</h3>{}",
            escape(&c.name),
            escape(&f.run),
            repro_block(&format!("repro-c{i}"), &f.repro)
        );
        if let Some(note) = &f.repro_note {
            let _ = write!(out, "<p>{}</p>", escape(note));
        }
    }
    if !report.confirmations.is_empty() {
        out.push_str("<h3>Confirmation</h3><ul>");
        for c in &report.confirmations {
            let _ = write!(
                out,
                "<li><code>{}</code> ({}, seed {}): {}</li>",
                escape(&c.run),
                escape(&c.cell),
                c.seed,
                escape(&c.sentence())
            );
        }
        out.push_str("</ul>");
    }
    if !notes.is_empty() {
        out.push_str("<ul>");
        for n in notes {
            let _ = write!(out, "<li>{}</li>", escape(&n));
        }
        out.push_str("</ul>");
    }
    out.push_str("</section>");
}

/// Renders the report as a page.
pub fn render(report: &Report) -> String {
    render_with(report, &[])
}

/// Renders the report as a page, with `extra` sections after its own.
pub fn render_with(report: &Report, extra: &[Section]) -> String {
    let mut out = String::with_capacity(16 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\"><title>flakelab session {}</title><style>{STYLE}</style></head><body><main>",
        escape(&report.session)
    );
    header(&mut out, report);
    cells_section(&mut out, report);
    tests_section(&mut out, report);
    design_section(&mut out, report);
    failures_section(&mut out, report);
    for s in extra {
        let _ = write!(
            out,
            "<section id=\"{}\" aria-labelledby=\"{}-h\"><h2 id=\"{}-h\">{}</h2>{}</section>",
            escape(&s.id),
            escape(&s.id),
            escape(&s.id),
            escape(&s.title),
            s.html
        );
    }
    let _ = writeln!(
        out,
        "<footer><p class=\"legend\">flakelab {} · schema {}</p></footer></main><script>{SCRIPT}</script></body></html>",
        env!("CARGO_PKG_VERSION"),
        super::REPORT_SCHEMA
    );
    out
}
