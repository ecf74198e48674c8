//! The forest plot as SVG: one row per interval (a cell, or a (test, cell)
//! pair) on one failure-rate axis from 0 to 1, with the baseline's interval
//! shaded behind the rows. Hand-written: the plot is a few dozen rects,
//! lines and texts, and writing them ourselves keeps the exact bounds of the
//! report in the output (each row carries `data-low`/`data-high` as the
//! shortest round-trip decimal of the report's f64, the same digits the JSON
//! report prints), where a plotting crate would round them to pixels.
//! Row labels are monospace, in a column sized to the widest label
//! ([`super::label`]); a label wider than 420 px wraps whole onto more
//! lines, so no name is cut (the svg's `data-label-width` is where the axis
//! starts). Pure: strings in, a string out.

use std::fmt::Write as _;

use super::label;

/// What a plotted row is, for its mark and its legend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    /// The baseline cell (the reference).
    Baseline,
    /// A cell (or test row) that differs from the baseline.
    Differs,
    /// A cell (or test row) that does not differ.
    Same,
    /// A sham cell: the mechanism with a null parameter.
    Sham,
    /// A cell whose perturbation was not applied (not measured as asked).
    NotApplied,
}

impl RowKind {
    /// The class name of the row in the SVG (and its legend word).
    pub fn class(self) -> &'static str {
        match self {
            RowKind::Baseline => "baseline",
            RowKind::Differs => "differs",
            RowKind::Same => "same",
            RowKind::Sham => "sham",
            RowKind::NotApplied => "not-applied",
        }
    }

    fn word(self) -> &'static str {
        match self {
            RowKind::Baseline => "baseline",
            RowKind::Differs => "differs from the baseline",
            RowKind::Same => "no difference shown",
            RowKind::Sham => "sham",
            RowKind::NotApplied => "NOT APPLIED",
        }
    }
}

/// One row of a forest plot.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotRow {
    /// The label on the left (a cell, or `test · cell`).
    pub label: String,
    /// The cell this row belongs to.
    pub cell: String,
    /// The test, for a per-test row.
    pub test: Option<String>,
    /// Failures counted.
    pub k: u64,
    /// Runs counted.
    pub n: u64,
    /// k / n.
    pub rate: f64,
    /// Lower end of the interval.
    pub low: f64,
    /// Upper end of the interval.
    pub high: f64,
    /// The baseline's interval for the same row (per-test rows), drawn as a
    /// thin bar under the row's own.
    pub baseline: Option<(f64, f64, f64)>,
    /// What the row is.
    pub kind: RowKind,
}

/// Escapes text for an XML attribute or element body.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters other than tab and newline are not XML.
            c if (c as u32) < 0x20 && c != '\t' && c != '\n' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// The narrowest and widest the label column gets, in px: a label wider
/// than the widest wraps onto more lines (the plot then stays under 1000 px,
/// inside the page's 1100 px column).
const MIN_LABEL_W: f64 = 160.0;
const MAX_LABEL_W: f64 = 420.0;
/// Space left of a label (4) and between it and the axis (8).
const LABEL_PAD: f64 = 12.0;
const AXIS_W: f64 = 440.0;
const COUNT_W: f64 = 130.0;
const ROW_H: f64 = 22.0;
/// The height each further line of a wrapped label adds to its row.
const LINE_H: f64 = 14.0;

/// Where a plot's parts go: the label column sized to the widest label
/// (each label's lines), the title's lines, and each row's top and height.
struct Layout {
    label_w: f64,
    width: f64,
    title: Vec<String>,
    top: f64,
    rows: Vec<(f64, f64, Vec<String>)>,
    bottom: f64,
}

impl Layout {
    fn new(title: &str, rows: &[PlotRow]) -> Layout {
        let fit = ((MAX_LABEL_W - LABEL_PAD) / label::ADVANCE).floor() as usize;
        let labels: Vec<Vec<String>> = rows
            .iter()
            .map(|r| label::wrap(&label_text(r), fit))
            .collect();
        let widest = labels
            .iter()
            .flatten()
            .map(|l| label::width(l))
            .fold(0.0, f64::max);
        let label_w = (widest + LABEL_PAD).ceil().clamp(MIN_LABEL_W, MAX_LABEL_W);
        let width = label_w + AXIS_W + COUNT_W;
        let title = label::wrap(title, ((width - 8.0) / label::ADVANCE).floor() as usize);
        let top = 28.0 + LINE_H * (title.len() - 1) as f64;
        let mut y = top;
        let mut placed = Vec::with_capacity(rows.len());
        for lines in labels {
            let h = ROW_H + LINE_H * (lines.len() - 1) as f64;
            placed.push((y, h, lines));
            y += h;
        }
        let bottom = if rows.is_empty() { top + ROW_H } else { y };
        Layout {
            label_w,
            width,
            title,
            top,
            rows: placed,
            bottom,
        }
    }

    fn x_of(&self, rate: f64) -> f64 {
        self.label_w + rate.clamp(0.0, 1.0) * AXIS_W
    }
}

/// A row's label as drawn: the label and its kind's marker.
fn label_text(r: &PlotRow) -> String {
    let marker = match r.kind {
        RowKind::Sham => " (sham)",
        RowKind::NotApplied => " (NOT APPLIED)",
        _ => "",
    };
    format!("{}{marker}", r.label)
}

/// `lines` as a `<text>` at `x`, the first line's baseline at `y`, each
/// further line one [`LINE_H`] under it.
fn text_lines(class: &str, x: f64, y: f64, lines: &[String], attrs: &str) -> String {
    let mut s = format!("<text class=\"{class}\" x=\"{x}\" y=\"{y:.1}\"{attrs}>");
    for (i, l) in lines.iter().enumerate() {
        let dy = if i == 0 { 0.0 } else { LINE_H };
        let _ = write!(s, "<tspan x=\"{x}\" dy=\"{dy}\">{}</tspan>", escape(l));
    }
    s.push_str("</text>");
    s
}

/// The row's words, for its `<title>` and `aria-label`.
pub fn row_words(r: &PlotRow, confidence_pct: f64) -> String {
    let bound = if r.n == 0 {
        "not measured".to_string()
    } else if r.k == 0 {
        format!("rate 0, {confidence_pct}% upper bound {:.3}", r.high)
    } else {
        format!(
            "rate {:.3}, {confidence_pct}% interval {:.3} to {:.3}",
            r.rate, r.low, r.high
        )
    };
    format!(
        "{}: {} of {}, {bound}; {}",
        r.label,
        r.k,
        r.n,
        r.kind.word()
    )
}

/// A forest plot of `rows`, titled `title`; `baseline` is the baseline
/// cell's (rate, low, high), shaded across the plot. `standalone` adds the
/// XML namespace an SVG file needs (an SVG inline in HTML has none).
pub fn forest(
    id: &str,
    title: &str,
    rows: &[PlotRow],
    baseline: Option<(f64, f64, f64)>,
    confidence: f64,
    standalone: bool,
) -> String {
    let pct = (confidence * 100.0).round();
    let at = Layout::new(title, rows);
    let (width, label_w, top, bottom) = (at.width, at.label_w, at.top, at.bottom);
    let height = bottom + 34.0;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg{} id=\"{id}\" class=\"forest\" role=\"group\" aria-labelledby=\"{id}-title\" viewBox=\"0 0 {width} {height}\" width=\"{width}\" height=\"{height}\" data-label-width=\"{label_w}\" data-axis-width=\"{AXIS_W}\" font-family=\"system-ui, sans-serif\" font-size=\"12\">",
        if standalone {
            " xmlns=\"http://www.w3.org/2000/svg\""
        } else {
            ""
        }
    );
    let _ = write!(s, "<title id=\"{id}-title\">{}</title>", escape(title));
    if standalone {
        s.push_str("<style>.differs line.ci,.differs circle{stroke:#b91c1c;fill:#b91c1c}.same line.ci,.same circle,.baseline line.ci,.baseline circle{stroke:#1f2937;fill:#1f2937}.sham line.ci,.sham circle{stroke:#6b7280;fill:#fff}.not-applied line.ci{stroke:#d97706;stroke-dasharray:4 3}.not-applied circle{fill:#d97706;stroke:#d97706}</style>");
    }
    // The baseline band and the axis.
    if let Some((_, lo, hi)) = baseline {
        let _ = write!(
            s,
            "<rect class=\"baseline-band\" x=\"{:.2}\" y=\"{}\" width=\"{:.2}\" height=\"{}\" fill=\"#dbeafe\" aria-hidden=\"true\"/>",
            at.x_of(lo),
            top - 4.0,
            (at.x_of(hi) - at.x_of(lo)).max(1.0),
            bottom - top + 4.0
        );
    }
    let _ = write!(
        s,
        "<g class=\"axis\" aria-hidden=\"true\"><line x1=\"{label_w}\" y1=\"{bottom}\" x2=\"{}\" y2=\"{bottom}\" stroke=\"#374151\"/>",
        label_w + AXIS_W
    );
    for i in 0..=4 {
        let t = f64::from(i) / 4.0;
        let x = at.x_of(t);
        let _ = write!(
            s,
            "<line x1=\"{x}\" y1=\"{top}\" x2=\"{x}\" y2=\"{bottom}\" stroke=\"#e5e7eb\"/><text x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{t}</text>",
            bottom + 14.0
        );
    }
    let _ = write!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">failure rate, {pct}% Clopper–Pearson interval (shaded: baseline)</text></g>",
        label_w + AXIS_W / 2.0,
        bottom + 28.0
    );
    s.push_str(&text_lines(
        "plot-title",
        4.0,
        16.0,
        &at.title,
        " font-weight=\"bold\" aria-hidden=\"true\"",
    ));
    let _ = write!(
        s,
        "<g role=\"list\" aria-label=\"{}\">",
        escape(&format!("{} rows", rows.len()))
    );
    let label_attrs = format!(
        " font-family=\"{}\" font-size=\"{}\" aria-hidden=\"true\"",
        label::MONOSPACE,
        label::FONT_PX
    );
    for (r, (row_top, row_h, lines)) in rows.iter().zip(&at.rows) {
        let y = row_top + row_h / 2.0;
        let words = row_words(r, pct);
        let _ = write!(
            s,
            "<g class=\"row {}\" role=\"listitem\" aria-label=\"{}\" data-cell=\"{}\"{} data-k=\"{}\" data-n=\"{}\" data-rate=\"{}\" data-low=\"{}\" data-high=\"{}\"><title>{}</title>",
            r.kind.class(),
            escape(&words),
            escape(&r.cell),
            r.test
                .as_deref()
                .map(|t| format!(" data-test=\"{}\"", escape(t)))
                .unwrap_or_default(),
            r.k,
            r.n,
            r.rate,
            r.low,
            r.high,
            escape(&words)
        );
        // The label's lines centred on the row.
        let first = y + 4.0 - LINE_H * (lines.len() - 1) as f64 / 2.0;
        s.push_str(&text_lines("label", 4.0, first, lines, &label_attrs));
        if let Some((brate, blo, bhi)) = r.baseline {
            let _ = write!(
                s,
                "<g class=\"test-baseline\" aria-hidden=\"true\"><line x1=\"{:.2}\" y1=\"{:.1}\" x2=\"{:.2}\" y2=\"{:.1}\" stroke=\"#60a5fa\" stroke-width=\"3\"/><circle cx=\"{:.2}\" cy=\"{:.1}\" r=\"2.5\" fill=\"#2563eb\"/></g>",
                at.x_of(blo),
                y + 6.0,
                at.x_of(bhi),
                y + 6.0,
                at.x_of(brate),
                y + 6.0
            );
        }
        if r.n > 0 {
            let (lo, hi) = (at.x_of(r.low), at.x_of(r.high));
            let _ = write!(
                s,
                "<line class=\"ci\" x1=\"{lo:.2}\" y1=\"{y:.1}\" x2=\"{hi:.2}\" y2=\"{y:.1}\" stroke-width=\"2\"/><line class=\"ci\" x1=\"{lo:.2}\" y1=\"{:.1}\" x2=\"{lo:.2}\" y2=\"{:.1}\"/><line class=\"ci\" x1=\"{hi:.2}\" y1=\"{:.1}\" x2=\"{hi:.2}\" y2=\"{:.1}\"/>",
                y - 4.0,
                y + 4.0,
                y - 4.0,
                y + 4.0
            );
            let mark = if r.kind == RowKind::Baseline {
                format!(
                    "<rect x=\"{:.2}\" y=\"{:.1}\" width=\"8\" height=\"8\"/>",
                    at.x_of(r.rate) - 4.0,
                    y - 4.0
                )
            } else {
                format!(
                    "<circle cx=\"{:.2}\" cy=\"{y:.1}\" r=\"4\"/>",
                    at.x_of(r.rate)
                )
            };
            s.push_str(&mark);
        } else {
            let _ = write!(
                s,
                "<text x=\"{}\" y=\"{:.1}\" fill=\"#92400e\" aria-hidden=\"true\">{}</text>",
                label_w + 6.0,
                y + 4.0,
                if r.kind == RowKind::NotApplied {
                    "not applied: no run measured"
                } else {
                    "no run measured"
                }
            );
        }
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{:.1}\" aria-hidden=\"true\">{} of {}</text></g>",
            label_w + AXIS_W + 8.0,
            y + 4.0,
            r.k,
            r.n
        );
    }
    s.push_str("</g></svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kind: RowKind, label: &str) -> PlotRow {
        PlotRow {
            label: label.into(),
            cell: label.into(),
            test: None,
            k: 3,
            n: 10,
            rate: 0.3,
            low: 0.06673951117773447,
            high: 0.6524528500599972,
            baseline: None,
            kind,
        }
    }

    #[test]
    fn rows_carry_their_exact_bounds_and_kind() {
        let svg = forest(
            "p",
            "cells <&>",
            &[
                row(RowKind::Baseline, "baseline"),
                row(RowKind::Sham, "tz=UTC"),
            ],
            Some((0.3, 0.06673951117773447, 0.6524528500599972)),
            0.95,
            true,
        );
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.contains("data-low=\"0.06673951117773447\""), "{svg}");
        assert!(svg.contains("data-high=\"0.6524528500599972\""));
        assert!(svg.contains("class=\"row sham\""));
        assert!(svg.contains("(sham)"));
        assert!(svg.contains("<title id=\"p-title\">cells &lt;&amp;&gt;</title>"));
        assert_eq!(svg.matches("role=\"listitem\"").count(), 2);
    }

    #[test]
    fn escape_handles_markup_and_controls() {
        assert_eq!(
            escape("a<b>&\"'\u{1}"),
            "a&lt;b&gt;&amp;&quot;&#39;\u{fffd}"
        );
    }

    #[test]
    fn the_label_column_fits_the_widest_label_and_a_longer_one_wraps_whole() {
        let narrow = forest("p", "t", &[row(RowKind::Same, "tz=UTC")], None, 0.95, false);
        assert!(
            narrow.contains(&format!("data-label-width=\"{MIN_LABEL_W}\"")),
            "{narrow}"
        );
        let mid = "tests/test_a.py::test_b · tz=Pacific/Kiritimati";
        let svg = forest("p", "t", &[row(RowKind::Sham, mid)], None, 0.95, false);
        let want = (label::width(&format!("{mid} (sham)")) + LABEL_PAD).ceil();
        assert!(want > MIN_LABEL_W && want < MAX_LABEL_W);
        assert!(
            svg.contains(&format!("data-label-width=\"{want}\"")),
            "{svg}"
        );
        // The axis starts right of the label column.
        assert!(svg.contains(&format!("<line x1=\"{want}\" ")), "{svg}");

        let long = format!(
            "tests/{}::test_{} · tz=Pacific/Kiritimati",
            "a".repeat(90),
            "b".repeat(70)
        );
        let svg = forest(
            "p",
            "t",
            &[row(RowKind::NotApplied, &long)],
            None,
            0.95,
            false,
        );
        // The column grows to its widest (less than one column short of it).
        let at = svg.find("data-label-width=\"").unwrap() + 18;
        let column: f64 = svg[at..at + svg[at..].find('"').unwrap()].parse().unwrap();
        assert!(
            column <= MAX_LABEL_W && column > MAX_LABEL_W - label::ADVANCE,
            "{svg}"
        );
        let at = svg.find("<text class=\"label\"").unwrap();
        let text = &svg[at..at + svg[at..].find("</text>").unwrap()];
        let lines: Vec<&str> = text
            .split("<tspan")
            .skip(1)
            .map(|t| &t[t.find('>').unwrap() + 1..t.find("</tspan>").unwrap()])
            .collect();
        assert!(lines.len() >= 3, "{text}");
        assert_eq!(lines.concat(), format!("{long} (NOT APPLIED)"));
        for l in &lines {
            assert!(label::width(l) + LABEL_PAD <= column, "{l}");
        }
        // The width is the label column, the axis and the counts.
        assert!(svg.contains(&format!("width=\"{}\"", column + AXIS_W + COUNT_W)));
    }
}
