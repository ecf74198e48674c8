//! Plot labels measured and wrapped, never cut. The forest plot writes its
//! labels in a monospace face, so a label's width is its column count times
//! one advance; a label wider than the plot's label column is wrapped onto
//! more lines (after a separator where one is near) instead of being
//! shortened. The estimate errs wide: a character outside ASCII counts two
//! columns. Pure.

/// The plot's label size, in px.
pub(crate) const FONT_PX: f64 = 12.0;

/// The advance of one column at [`FONT_PX`]: 0.6 em in the common monospace
/// faces (DejaVu Sans Mono, Liberation Mono, Menlo, Courier), rounded up.
pub(crate) const ADVANCE: f64 = 7.4;

/// The font stack the labels are written in.
pub(crate) const MONOSPACE: &str = "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace";

/// The columns `c` takes: one for ASCII, two for anything else (a wide
/// script's character takes two; a narrow one is over-counted, never under).
fn columns(c: char) -> usize {
    if c.is_ascii() {
        1
    } else {
        2
    }
}

/// The columns `text` takes.
pub(crate) fn text_columns(text: &str) -> usize {
    text.chars().map(columns).sum()
}

/// The estimated width of `text` in px at [`FONT_PX`].
pub(crate) fn width(text: &str) -> f64 {
    text_columns(text) as f64 * ADVANCE
}

/// Whether a line may end after `c`.
fn breaks_after(c: char) -> bool {
    matches!(
        c,
        ' ' | '/'
            | '\\'
            | '.'
            | ':'
            | '_'
            | '-'
            | ','
            | ';'
            | '['
            | ']'
            | '('
            | ')'
            | '·'
            | '='
            | '+'
            | '>'
            | '#'
            | '@'
            | '|'
    )
}

/// `text` in lines of at most `max` columns (at least 2), which joined give
/// `text` back exactly. A line ends after the last separator when that
/// keeps at least a third of the line, else where the columns run out.
pub(crate) fn wrap(text: &str, max: usize) -> Vec<String> {
    let max = max.max(2);
    let mut lines = Vec::new();
    let mut line: Vec<char> = Vec::new();
    let mut cols = 0;
    for c in text.chars() {
        if cols + columns(c) > max && !line.is_empty() {
            let cut = line
                .iter()
                .rposition(|&x| breaks_after(x))
                .map(|i| i + 1)
                .filter(|&i| text_columns(&line[..i].iter().collect::<String>()) * 3 >= max)
                .unwrap_or(line.len());
            let rest = line.split_off(cut);
            lines.push(line.into_iter().collect());
            line = rest;
            cols = line.iter().copied().map(columns).sum();
        }
        line.push(c);
        cols += columns(c);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line.into_iter().collect());
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_label_is_one_line() {
        assert_eq!(wrap("tests/a.py::test_x", 40), ["tests/a.py::test_x"]);
        assert_eq!(wrap("", 40), [""]);
    }

    #[test]
    fn a_long_label_wraps_after_a_separator_and_loses_nothing() {
        let id = "tests/integration/test_scheduler_with_a_very_long_module_name.py::TestNightlyWindow::test_the_job_runs_once_per_day_in_every_zone[Pacific/Kiritimati-23:59] · tz=Pacific/Kiritimati";
        for max in [2, 7, 20, 40, 52, 80] {
            let lines = wrap(id, max);
            assert_eq!(lines.concat(), id, "max {max}");
            for l in &lines {
                assert!(text_columns(l) <= max, "{l:?} is wider than {max}");
            }
        }
        let lines = wrap(id, 52);
        assert!(lines.len() > 1);
        // Each line ends after a separator, not mid-word, where one is near.
        for l in &lines[..lines.len() - 1] {
            assert!(breaks_after(l.chars().last().unwrap()), "{lines:?}");
        }
        assert_eq!(
            lines[0],
            "tests/integration/test_scheduler_with_a_very_long_"
        );
    }

    #[test]
    fn a_label_without_separators_is_cut_where_the_columns_run_out() {
        assert_eq!(wrap("abcdefgh", 3), ["abc", "def", "gh"]);
    }

    #[test]
    fn wide_characters_count_two_columns() {
        assert_eq!(text_columns("日本a"), 5);
        assert_eq!(wrap("日本語", 4), ["日本", "語"]);
        assert!((width("ab") - 2.0 * ADVANCE).abs() < 1e-9);
    }
}
