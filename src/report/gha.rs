//! GitHub Actions workflow commands: the escaping GitHub's runner applies
//! to a command's data and properties, and `::error …::` annotations.
//!
//! Pure.

/// An annotation's level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// `::error`.
    Error,
    /// `::warning`.
    Warning,
    /// `::notice`.
    Notice,
}

/// A command's data (after `::`): `%`, `\r`, `\n` as `%25`, `%0D`, `%0A`.
pub fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A command's property value: [`escape_data`], and `:` and `,` as `%3A`
/// and `%2C`.
pub fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// One annotation line (no trailing newline):
/// `::error file=F,line=L,title=T::MESSAGE`.
pub fn annotation(
    level: Level,
    file: Option<&str>,
    line: Option<u32>,
    title: &str,
    message: &str,
) -> String {
    let name = match level {
        Level::Error => "error",
        Level::Warning => "warning",
        Level::Notice => "notice",
    };
    let mut props = Vec::new();
    if let Some(f) = file {
        props.push(format!("file={}", escape_property(f)));
        if let Some(l) = line {
            props.push(format!("line={l}"));
        }
    }
    props.push(format!("title={}", escape_property(title)));
    format!("::{name} {}::{}", props.join(","), escape_data(message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_and_annotations() {
        assert_eq!(escape_data("50%\r\nx: y, z"), "50%25%0D%0Ax: y, z");
        assert_eq!(escape_property("a:b,c%\n"), "a%3Ab%2Cc%25%0A");
        assert_eq!(
            annotation(
                Level::Error,
                Some("t/a,b.py"),
                Some(12),
                "flaky: x",
                "line1\nline2"
            ),
            "::error file=t/a%2Cb.py,line=12,title=flaky%3A x::line1%0Aline2"
        );
        assert_eq!(
            annotation(Level::Notice, None, Some(3), "t", "m"),
            "::notice title=t::m"
        );
        assert_eq!(
            annotation(Level::Warning, Some("f"), None, "t", "m"),
            "::warning file=f,title=t::m"
        );
    }
}
