//! Snapshots of the evidence block (Markdown and JSON) on one hand-built
//! session held by a hand-built ladder; nothing needs redacting.

use super::classify::tests::{collision_ladder, runs_with, session, C};
use super::{build, markdown, render_json, RunnerVersion};
use crate::store::LoadStats;

fn evidence() -> super::Evidence {
    let cells = [
        C("baseline", 0, 8, true),
        C("tz=Pacific/Kiritimati", 8, 8, true),
        C("netns", 0, 8, true),
        C("faketime=+365d", 0, 8, false),
    ];
    let mut s = session(&cells);
    s.repo = Some(crate::record::RepoInfo {
        root: "/src/shop".into(),
        commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
        branch: Some("main".into()),
        dirty: true,
        remote: Some("https://<redacted>@example.com/shop.git".into()),
    });
    let mut runs = runs_with(&s, &cells, |cell, i| {
        if i == 0 {
            format!("AssertionError: first failure in {cell}")
        } else {
            "AssertionError: offset is <n>".into()
        }
    });
    // A repro line recorded before a name was configured still loses its value.
    for r in runs
        .iter_mut()
        .filter(|r| r.cell == "tz=Pacific/Kiritimati")
    {
        r.repro =
            "cd /src/shop && env API_TOKEN=abc123 TZ=Pacific/Kiritimati python3 -m pytest".into();
    }
    let mut ladder = collision_ladder();
    ladder.rungs[2].session = Some(s.id.clone());
    build(
        &s,
        &runs,
        LoadStats::default(),
        Some(&ladder),
        RunnerVersion::Recorded("pytest 9.2.0".into()),
        &crate::redact::Redaction::default(),
    )
}

#[test]
fn evidence_markdown() {
    let text = markdown::render(&evidence());
    assert!(!text.contains("abc123"));
    for word in ["flaky", "stable"] {
        assert!(!text.to_lowercase().contains(word), "{word} in:\n{text}");
    }
    insta::assert_snapshot!(text);
}

#[test]
fn evidence_json() {
    let text = render_json(&evidence());
    assert!(!text.contains("abc123"));
    insta::assert_snapshot!(text);
}
