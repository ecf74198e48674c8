//! `flakelab bisect`'s record rendered: a heading and the record's lines,
//! or `flakelab.bisect/1` JSON.

use crate::bisect::BisectRecord;

/// The record as text: its id and run, then its lines.
pub fn render_table(record: &BisectRecord) -> String {
    let mut t = format!("flakelab bisect {} (run {})\n", record.id, record.run);
    for l in record.lines() {
        t.push_str(&l);
        t.push('\n');
    }
    t
}

/// The record as JSON, one document and a newline.
pub fn render_json(record: &BisectRecord) -> String {
    let mut t = serde_json::to_string_pretty(record).unwrap_or_default();
    t.push('\n');
    t
}
