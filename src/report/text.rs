//! Values from records (test ids, failure messages, signatures, cell
//! names, contexts) as text a consumer reads back as that value and
//! nothing more: on one line for a terminal or a log (so a value never
//! starts a line, hence never a GitHub workflow command such as `::error`
//! or `::stop-commands`), and in Markdown as a code span or a table cell
//! that no backtick or pipe inside it can end. Workflow commands
//! themselves escape through [`super::gha`].
//!
//! Pure. A value without control characters, backticks or pipes comes
//! out as it went in.

use std::borrow::Cow;

/// A line break or other control character, shown as an escape.
fn hidden(c: char) -> bool {
    c.is_control() || c == '\u{2028}' || c == '\u{2029}'
}

/// `s` on one line: control characters (`\n`, `\r`, `\t`, escape, NUL,
/// U+0085) and the Unicode line and paragraph separators shown as
/// visible escapes (`\n`, `\r`, `\t`, `\u{1b}`), so the value can neither
/// start a new line nor move a terminal's cursor.
pub(crate) fn one_line(s: &str) -> Cow<'_, str> {
    if !s.contains(hidden) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if hidden(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `s` as one Markdown code span (on one line, per [`one_line`]) that
/// survives any backticks inside it: fenced by one backtick more than the
/// longest run inside, padded with a space on each side when CommonMark
/// would otherwise merge a backtick with the fence or strip a space of
/// the value.
pub(crate) fn md_code(s: &str) -> String {
    let text = one_line(s);
    let fence = "`".repeat(longest_run(&text) + 1);
    let spaced = text.starts_with(' ') && text.ends_with(' ') && text.contains(|c| c != ' ');
    if text.starts_with('`') || text.ends_with('`') || spaced {
        format!("{fence} {text} {fence}")
    } else {
        format!("{fence}{text}{fence}")
    }
}

/// `s` as text in a Markdown table cell: on one line, `|` escaped (GFM
/// splits cells before it reads code spans, so a pipe is escaped inside
/// them too) and a backtick escaped so it opens no code span.
pub(crate) fn md_cell(s: &str) -> String {
    pipes(&one_line(s).replace('`', "\\`"))
}

/// `s` as a code span in a Markdown table cell: [`md_code`] with `|`
/// escaped (GitHub takes `\|` in a cell as `|`, inside a code span too).
pub(crate) fn md_cell_code(s: &str) -> String {
    pipes(&md_code(s))
}

/// `lines` as a fenced Markdown code block in language `lang`, each on one
/// line (per [`one_line`]), fenced by more backticks than any run inside.
pub(crate) fn md_block<'a>(lang: &str, lines: impl IntoIterator<Item = &'a str>) -> String {
    let lines: Vec<Cow<'_, str>> = lines.into_iter().map(one_line).collect();
    let longest = lines.iter().map(|l| longest_run(l)).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let mut out = format!("{fence}{lang}\n");
    for line in &lines {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(&fence);
    out
}

fn longest_run(text: &str) -> usize {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

fn pipes(s: &str) -> String {
    s.replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A code span's content as CommonMark reads it: the fence stripped,
    /// then one space from each side when both are spaces and the content
    /// is not all spaces.
    fn read_code(span: &str) -> String {
        if span == "``" {
            // The empty value: no code span can hold it.
            return String::new();
        }
        let fence = span.chars().take_while(|&c| c == '`').count();
        assert!(span.len() >= 2 * fence, "{span:?}");
        assert!(span.ends_with(&"`".repeat(fence)), "{span:?}");
        let inner = &span[fence..span.len() - fence];
        // The closing fence is a run of exactly `fence` backticks.
        assert!(!inner.ends_with('`'), "{span:?}");
        assert!(!inner.starts_with('`'), "{span:?}");
        // No run of `fence` backticks inside closes it early.
        assert!(!inner.contains(&"`".repeat(fence)), "{span:?}");
        let strip = inner.len() >= 2
            && inner.starts_with(' ')
            && inner.ends_with(' ')
            && inner.contains(|c| c != ' ');
        if strip {
            inner[1..inner.len() - 1].to_string()
        } else {
            inner.to_string()
        }
    }

    const HOSTILE: &[&str] = &[
        "a\n::error ::forged",
        "::stop-commands::tok",
        "b`![x](http://e)`",
        "c|d",
        "\r\n::warning file=x::y",
        "x\u{2028}::error ::y",
        "x\u{85}::error ::y",
        "\u{1b}[31mred",
        "``",
        "` a `",
        " spaced ",
        "#{x} 'q' \"dq\"",
    ];

    #[test]
    fn ordinary_values_come_out_as_they_went_in() {
        for s in ["tests/test_a.py::test_b[x]", "pkg.TestName", "env=TZ=UTC"] {
            assert!(matches!(one_line(s), Cow::Borrowed(_)));
            assert_eq!(md_code(s), format!("`{s}`"));
            assert_eq!(md_cell(s), s);
            assert_eq!(md_cell_code(s), format!("`{s}`"));
        }
        assert_eq!(md_cell_code("a|b"), "`a\\|b`");
    }

    #[test]
    fn hostile_values_stay_on_their_line() {
        assert_eq!(one_line("a\n::error ::forged"), "a\\n::error ::forged");
        assert_eq!(
            one_line("a\r\tb\u{1b}c\u{2028}"),
            "a\\r\\tb\\u{1b}c\\u{2028}"
        );
        assert_eq!(md_code("b`x`"), "`` b`x` ``");
        assert_eq!(md_code("a``b"), "```a``b```");
        assert_eq!(md_cell("c|d`e"), "c\\|d\\`e");
        assert_eq!(md_block("sh", ["a\nb"]), "```sh\na\\nb\n```");
        assert_eq!(md_block("sh", ["x```y"]), "````sh\nx```y\n````");
        assert_eq!(md_block("text", ["a", "b"]), "```text\na\nb\n```");
        for s in HOSTILE {
            for out in [
                one_line(s).into_owned(),
                md_code(s),
                md_cell(s),
                md_cell_code(s),
            ] {
                assert!(!out.contains(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}']));
                assert!(!out.starts_with("::") || s.starts_with("::"), "{out}");
            }
            assert_eq!(read_code(&md_code(s)), one_line(s));
        }
    }

    proptest! {
        #[test]
        fn any_value_stays_on_one_line_and_reads_back(s in any::<String>()) {
            for out in [one_line(&s).into_owned(), md_code(&s), md_cell(&s), md_cell_code(&s)] {
                let breaks = ['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}'];
                prop_assert!(!out.contains(breaks), "{:?}", out);
                prop_assert!(!out.contains(char::is_control));
            }
            prop_assert_eq!(read_code(&md_code(&s)), one_line(&s).into_owned());
        }

        #[test]
        fn hostile_alphabet_reads_back(s in "[a` |:\n\r#{}'\"]{0,24}") {
            prop_assert_eq!(read_code(&md_code(&s)), one_line(&s).into_owned());
            let cell = md_cell(&s);
            // Every pipe in a cell is escaped.
            prop_assert!(!cell.replace("\\|", "").contains('|'));
            let code = md_cell_code(&s);
            prop_assert!(!code.replace("\\|", "").contains('|'));
        }
    }
}
