//! The report as one JSON document, schema `flakelab.report/1` (a contract:
//! fields are only ever added).

use super::Report;

/// Renders the report as pretty-printed JSON.
pub fn render(report: &Report) -> String {
    let mut s = serde_json::to_string_pretty(report).expect("a report always serialises");
    s.push('\n');
    s
}
