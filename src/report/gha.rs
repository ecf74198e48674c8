//! GitHub Actions workflow commands: the escaping of their data and
//! properties, and the `::error`/`::warning`/`::notice` annotation line.
//! One module for every command that talks to Actions (`flakelab report
//! --format github`, `flakelab check`). Pure.

/// The level of an annotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// `::error`: shown red, on the file and line when given.
    Error,
    /// `::warning`.
    Warning,
    /// `::notice`.
    Notice,
}

impl Level {
    fn command(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Notice => "notice",
        }
    }
}

/// Escapes a command's data (the message after `::`): `%`, CR and LF.
pub fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a command's property value: as [`escape_data`], and `:` and `,`,
/// which would end the value.
pub fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// One annotation line (without its newline):
/// `::error file=F,line=L,title=T::message`. `line` is left out without a
/// file (Actions ignores it there); an empty title is left out.
pub fn annotation(
    level: Level,
    file: Option<&str>,
    line: Option<u32>,
    title: &str,
    message: &str,
) -> String {
    let mut props = Vec::new();
    if let Some(f) = file {
        props.push(format!("file={}", escape_property(f)));
        if let Some(l) = line {
            props.push(format!("line={l}"));
        }
    }
    if !title.is_empty() {
        props.push(format!("title={}", escape_property(title)));
    }
    let sep = if props.is_empty() { "" } else { " " };
    format!(
        "::{}{sep}{}::{}",
        level.command(),
        props.join(","),
        escape_data(message)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_and_properties_are_escaped() {
        assert_eq!(escape_data("100%\r\nok"), "100%25%0D%0Aok");
        assert_eq!(escape_property("a:b,c%\n"), "a%3Ab%2Cc%25%0A");
    }

    #[test]
    fn annotation_lines() {
        assert_eq!(
            annotation(Level::Error, Some("t/a.py"), Some(7), "x: y", "two\nlines"),
            "::error file=t/a.py,line=7,title=x%3A y::two%0Alines"
        );
        assert_eq!(
            annotation(Level::Warning, None, Some(7), "", "m"),
            "::warning::m"
        );
        assert_eq!(
            annotation(Level::Notice, None, None, "t", "m"),
            "::notice title=t::m"
        );
    }
}
