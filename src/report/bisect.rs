//! `flakelab bisect`'s record rendered: a heading and the record's lines,
//! or `flakelab.bisect/1` JSON.

use crate::bisect::BisectRecord;

/// The record as text: its id and run, then its lines, each kept on one
/// line whatever the test ids and state values hold.
pub fn render_table(record: &BisectRecord) -> String {
    let mut t = format!("flakelab bisect {} (run {})\n", record.id, record.run);
    for l in record.lines() {
        t.push_str(&super::text::one_line(&l));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bisect::state::StateChange;

    #[test]
    fn a_state_value_with_a_line_break_stays_on_its_line() {
        let mut record: BisectRecord = serde_json::from_value(serde_json::json!({
            "schema": "flakelab.bisect/1", "id": "bisect-1", "started_at": "", "run": "s.1",
            "session": "s", "victim": "t::v", "order_len": 2, "predecessors": 1,
            "kind": "polluted", "polluters": ["t::p"], "search_runs": 2, "runs": 3,
            "sessions": []
        }))
        .unwrap();
        record.state.push(StateChange {
            role: "polluter".into(),
            test: "t::p".into(),
            kind: "env".into(),
            target: "os.environ['X']".into(),
            key: "X".into(),
            verb: "sets".into(),
            before: "None".into(),
            after: "'a\n::error::forged'".into(),
            victim_reads: false,
        });
        let text = render_table(&record);
        assert!(
            text.contains(
                "state: polluter t::p sets os.environ['X'] (None -> 'a\\n::error::forged')"
            ),
            "{text}"
        );
        assert!(!text.lines().any(|l| l.starts_with("::error")), "{text}");
    }
}
