//! Whether flakelab writes color, and the few styles it writes. The choice
//! is made once per process from `--color`, `NO_COLOR`, `CLICOLOR_FORCE`
//! and whether the stream is a terminal ([`enabled`], pure); the app sets
//! it ([`set`]) and the renderers' callers read it ([`stdout`],
//! [`stderr`]). Renderers themselves take a `bool`, so their output is
//! byte-identical without color, whatever the process chose.

use std::sync::OnceLock;

/// `--color`: when to write ANSI color.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Choice {
    /// Color when the stream is a terminal, unless `NO_COLOR` says otherwise
    /// (or `CLICOLOR_FORCE` forces it).
    #[default]
    Auto,
    /// Always color, whatever the stream and the environment.
    Always,
    /// Never color.
    Never,
}

/// Whether to color one stream. An explicit `--color always|never` wins
/// (no-color.org: command-line arguments override `NO_COLOR`); with `auto`,
/// a non-empty `NO_COLOR` disables color, then a `CLICOLOR_FORCE` other
/// than empty or `0` forces it, else color goes only to a terminal.
pub fn enabled(
    choice: Choice,
    no_color: Option<&str>,
    clicolor_force: Option<&str>,
    terminal: bool,
) -> bool {
    match choice {
        Choice::Always => true,
        Choice::Never => false,
        Choice::Auto if no_color.is_some_and(|v| !v.is_empty()) => false,
        Choice::Auto if clicolor_force.is_some_and(|v| !v.is_empty() && v != "0") => true,
        Choice::Auto => terminal,
    }
}

static STDOUT: OnceLock<bool> = OnceLock::new();
static STDERR: OnceLock<bool> = OnceLock::new();

/// Records the process's choice for stdout and stderr (the first call wins).
pub fn set(stdout: bool, stderr: bool) {
    let _ = STDOUT.set(stdout);
    let _ = STDERR.set(stderr);
}

/// Whether stdout is colored (false until [`set`]).
pub fn stdout() -> bool {
    STDOUT.get().copied().unwrap_or(false)
}

/// Whether stderr is colored (false until [`set`]).
pub fn stderr() -> bool {
    STDERR.get().copied().unwrap_or(false)
}

/// What a piece of text says, for its color.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// A difference from the baseline (bold red).
    Differs,
    /// Something to look at that is not a finding: a cell not applied, a
    /// difference its sham does not explain away (bold yellow).
    Caution,
    /// Context: the reference cell (dim).
    Quiet,
}

/// `text` in `tone` when `color`, else `text` unchanged.
pub fn paint(text: &str, tone: Tone, color: bool) -> String {
    if !color || text.is_empty() {
        return text.to_string();
    }
    let code = match tone {
        Tone::Differs => "1;31",
        Tone::Caution => "1;33",
        Tone::Quiet => "2",
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explicit_choice_beats_the_environment() {
        assert!(enabled(Choice::Always, Some("1"), None, false));
        assert!(!enabled(Choice::Never, None, Some("1"), true));
    }

    #[test]
    fn auto_follows_no_color_then_clicolor_force_then_the_terminal() {
        assert!(!enabled(Choice::Auto, Some("1"), None, true));
        assert!(!enabled(Choice::Auto, Some("1"), Some("1"), true));
        // An empty NO_COLOR is no opt-out (no-color.org).
        assert!(enabled(Choice::Auto, Some(""), None, true));
        assert!(enabled(Choice::Auto, None, Some("1"), false));
        assert!(!enabled(Choice::Auto, None, Some("0"), false));
        assert!(!enabled(Choice::Auto, None, Some(""), false));
        assert!(enabled(Choice::Auto, None, None, true));
        assert!(!enabled(Choice::Auto, None, None, false));
    }

    #[test]
    fn paint_wraps_only_when_colored() {
        assert_eq!(paint("differs", Tone::Differs, false), "differs");
        assert_eq!(
            paint("differs", Tone::Differs, true),
            "\x1b[1;31mdiffers\x1b[0m"
        );
        assert_eq!(paint("", Tone::Quiet, true), "");
    }
}
