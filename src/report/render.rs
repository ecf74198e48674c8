//! One report, rendered in the format asked for: the dispatch every live
//! output and `flakelab report` go through.

use crate::cli::Format;
use crate::redact::Redaction;

use super::Report;

/// `report` in `format`, with `redaction`'s credential values masked (the
/// records it is built from are masked already; this is the net). For
/// `--format github`, the step summary and its artifacts are written too
/// ([`super::outputs::github`]); the text is what goes to stdout.
pub(crate) fn render(report: &Report, format: Format, redaction: &Redaction) -> String {
    let text = match format {
        Format::Table => super::table::render_colored(report, super::color::stdout()),
        Format::Json => super::json::render(report),
        Format::Markdown => super::markdown::render(report),
        Format::Html => super::html::render(report),
        Format::Github => super::outputs::github(report, redaction),
    };
    redaction.text(&text).into_owned()
}
