//! Rendering of a ladder ([`LadderRecord`]): the terminal table, with the
//! rung that reproduced and what that shows, and the `flakelab.ladder/1`
//! JSON document. Pure.

use std::fmt::Write as _;

use crate::record::{LadderRecord, RungCount, RungResult, RungStatus};
use crate::stats;

fn status_text(status: RungStatus) -> &'static str {
    match status {
        RungStatus::Clean => "clean",
        RungStatus::Reproduced => "REPRODUCED",
        RungStatus::Skipped => "skipped",
        RungStatus::NotApplied => "NOT APPLIED",
        RungStatus::Unmeasured => "unmeasured",
        RungStatus::NotRun => "not run",
    }
}

/// `k of N` with the interval, or the bound when k is 0.
fn count_words(n: u64, k: u64, low: f64, high: f64) -> String {
    if n == 0 {
        "—".into()
    } else if k == 0 {
        format!("0 of {n} — {}", stats::format_bound(high))
    } else {
        format!("{k} of {n} [{low:.2}, {high:.2}]")
    }
}

fn rung_count(r: &RungResult) -> String {
    match r.status {
        RungStatus::Skipped | RungStatus::NotRun => "—".into(),
        _ => count_words(r.n, r.k, r.low, r.high),
    }
}

fn baseline_words(b: &Option<RungCount>) -> String {
    b.as_ref()
        .map_or("—".into(), |b| count_words(b.n, b.k, b.low, b.high))
}

/// Renders the ladder as a table with the verdict and the notes.
pub fn render_table(ladder: &LadderRecord) -> String {
    let mut out = String::new();
    let pct = (ladder.confidence * 100.0).round();
    let _ = writeln!(
        out,
        "ladder {} · {} run(s) per cell per rung · {pct}% confidence",
        ladder.id, ladder.runs_per_rung
    );
    let _ = writeln!(out, "command: {}", crate::repro::join(&ladder.command));
    match &ladder.lane {
        Some(lane) => {
            let _ = writeln!(out, "lane: {}", crate::repro::join(lane));
        }
        None => {
            let _ = writeln!(out, "lane: none declared in flakelab.toml");
        }
    }
    let _ = writeln!(out, "reproducing means: {}", ladder.criterion);
    let with_baseline = ladder.rungs.iter().any(|r| r.baseline.is_some());
    let _ = writeln!(
        out,
        "cell at every rung: {}{}",
        ladder.cell,
        if with_baseline {
            " (interleaved with the baseline)"
        } else {
            ""
        }
    );
    let _ = writeln!(out);
    let mut rows = vec![vec![
        "rung".to_string(),
        "topology".to_string(),
        "procs".to_string(),
        "status".to_string(),
        ladder.cell.clone(),
    ]];
    if with_baseline {
        rows[0].push("baseline".into());
    }
    for r in &ladder.rungs {
        let mut row = vec![
            format!("{} {}", r.rung, r.name),
            r.topology.clone(),
            if r.processes == 0 {
                "—".into()
            } else {
                r.processes.to_string()
            },
            status_text(r.status).to_string(),
            rung_count(r),
        ];
        if with_baseline {
            row.push(baseline_words(&r.baseline));
        }
        rows.push(row);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for row in &rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    let _ = writeln!(out);
    match ladder
        .reproduced_at
        .and_then(|at| ladder.rungs.iter().find(|r| r.rung == at))
    {
        Some(r) => {
            let _ = writeln!(
                out,
                "Reproduced at rung {} ({}): {}.",
                r.rung, r.name, r.shows
            );
            if let Some((id, repro)) = &r.first_reproduction {
                let _ = writeln!(out, "first reproducing run {id}:\n  {repro}");
                if let Some(note) = crate::ladder::reproduction_note(ladder, r) {
                    let _ = writeln!(out, "  note: {note}");
                }
                if let Some(bisect) = super::handover::ladder_bisect(ladder) {
                    let _ = writeln!(
                        out,
                        "find which test that ran before it makes it fail:\n  {bisect}"
                    );
                }
            }
            if let Some(c) = &r.confirmation {
                let what = match c.verdict.as_str() {
                    "deterministic" => "the recorded conditions determine the failure at this rung (a deterministic oracle)",
                    "timing" => "the recorded conditions do not determine it: timing or state outside them is involved",
                    _ => "nothing was measured",
                };
                let _ = writeln!(
                    out,
                    "confirmation: reproduced {} of {} again under its cell and seed: {what}",
                    c.k, c.n
                );
            }
        }
        None if ladder.interrupted => {
            let _ = writeln!(out, "Interrupted before any rung reproduced.");
        }
        None => {
            let tried: Vec<String> = ladder
                .rungs
                .iter()
                .filter(|r| r.status == RungStatus::Clean)
                .map(|r| format!("rung {} {}", r.rung, stats::format_bound(r.high)))
                .collect();
            if tried.is_empty() {
                let _ = writeln!(out, "No rung measured anything: see the notes.");
            } else {
                let _ = writeln!(
                    out,
                    "No rung reproduced. The reproduction rate at each rung tried is bounded: {}.",
                    tried.join(", ")
                );
            }
        }
    }
    let mut notes: Vec<String> = Vec::new();
    let mut last: Option<(RungStatus, &str, u8, u8)> = None;
    let flush = |notes: &mut Vec<String>, last: Option<(RungStatus, &str, u8, u8)>| {
        if let Some((status, why, from, to)) = last {
            let rungs = if from == to {
                format!("rung {from}")
            } else {
                format!("rungs {from}–{to}")
            };
            let label = match status {
                RungStatus::Clean | RungStatus::Reproduced => String::new(),
                s => format!(" {}", status_text(s)),
            };
            notes.push(format!("{rungs}{label}: {why}"));
        }
    };
    for r in &ladder.rungs {
        let Some(why) = r.reason.as_deref() else {
            continue;
        };
        match &mut last {
            Some((s, w, _, to)) if *s == r.status && *w == why && *to + 1 == r.rung => *to = r.rung,
            _ => {
                flush(&mut notes, last.take());
                last = Some((r.status, why, r.rung, r.rung));
            }
        }
    }
    flush(&mut notes, last);
    if !notes.is_empty() {
        let _ = writeln!(out, "\nnotes:");
        for n in notes {
            let _ = writeln!(out, "  {n}");
        }
    }
    let sessions: Vec<String> = ladder
        .rungs
        .iter()
        .filter_map(|r| r.session.as_ref().map(|s| format!("rung {}: {s}", r.rung)))
        .collect();
    if !sessions.is_empty() {
        let _ = writeln!(
            out,
            "sessions (`flakelab report ID`): {}",
            sessions.join(", ")
        );
    }
    out
}

/// Renders the ladder as one JSON document (schema `flakelab.ladder/1`),
/// with `bisect` (the command that continues an order finding, or null).
pub fn render_json(ladder: &LadderRecord) -> String {
    let rendered = serde_json::to_value(ladder).and_then(|mut value| {
        if let Some(object) = value.as_object_mut() {
            let bisect = super::handover::ladder_bisect(ladder);
            object.insert("bisect".into(), serde_json::json!(bisect));
        }
        serde_json::to_string_pretty(&value)
    });
    let mut text = rendered.unwrap_or_else(|e| {
        format!("{{\"schema\":\"flakelab.ladder/1\",\"error\":\"cannot render: {e}\"}}")
    });
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rung(n: u8, status: RungStatus, k: u64) -> RungResult {
        RungResult {
            rung: n,
            name: format!("r{n}"),
            topology: format!("topology {n}"),
            shows: format!("what {n} shows"),
            status,
            processes: 1,
            n: if matches!(status, RungStatus::Skipped | RungStatus::NotRun) {
                0
            } else {
                5
            },
            k,
            low: 0.0,
            high: 0.451,
            baseline: None,
            reason: (status == RungStatus::Skipped).then(|| "no --test given".into()),
            session: None,
            argv: vec![],
            first_reproduction: (k > 0).then(|| ("s.00001".into(), "cd /x && pytest".into())),
            confirmation: None,
        }
    }

    fn ladder(rungs: Vec<RungResult>, at: Option<u8>) -> LadderRecord {
        LadderRecord {
            schema: crate::record::LADDER_SCHEMA.into(),
            id: "ladder-x".into(),
            started_at: String::new(),
            command: vec!["pytest".into()],
            cwd: "/x".into(),
            lane: None,
            test: None,
            signature: None,
            criterion: "any failing run".into(),
            cell: "baseline".into(),
            runs_per_rung: 5,
            confidence: 0.95,
            rungs,
            reproduced_at: at,
            interrupted: false,
        }
    }

    #[test]
    fn the_table_names_the_rung_and_what_it_shows() {
        let l = ladder(
            vec![
                rung(1, RungStatus::Skipped, 0),
                rung(2, RungStatus::Reproduced, 3),
                rung(3, RungStatus::NotRun, 0),
            ],
            Some(2),
        );
        let text = render_table(&l);
        assert!(
            text.contains("Reproduced at rung 2 (r2): what 2 shows."),
            "{text}"
        );
        assert!(text.contains("rung 1 skipped: no --test given"), "{text}");
        assert!(text.contains("cd /x && pytest"), "{text}");
        assert!(!text.to_lowercase().contains("stable"), "{text}");
    }

    #[test]
    fn a_finding_at_a_parallel_rung_says_it_reproduced_beside_other_processes() {
        let mut parallel = rung(3, RungStatus::Reproduced, 2);
        parallel.processes = 4;
        let l = ladder(
            vec![
                rung(1, RungStatus::Clean, 0),
                rung(2, RungStatus::Clean, 0),
                parallel.clone(),
            ],
            Some(3),
        );
        let text = render_table(&l);
        assert!(text.contains("reproduced beside other processes"), "{text}");
        assert!(
            text.contains("one of 4 processes started together at rung 3"),
            "{text}"
        );
        assert!(
            text.contains("run alone it did not reproduce (rungs 1, 2)"),
            "{text}"
        );
        // Climbed from rung 3: nothing says how it does alone.
        let text = render_table(&ladder(vec![parallel], Some(3)));
        assert!(
            text.contains("whether it also fails alone is not known"),
            "{text}"
        );
        // One process: the line is the whole run, no note.
        let l = ladder(vec![rung(2, RungStatus::Reproduced, 3)], Some(2));
        assert!(!render_table(&l).contains("beside other processes"));
    }

    #[test]
    fn a_clean_ladder_states_each_bound_never_stability() {
        let l = ladder(vec![rung(2, RungStatus::Clean, 0)], None);
        let text = render_table(&l);
        assert!(text.contains("0 of 5 — rate < 0.451"), "{text}");
        assert!(text.contains("rung 2 rate < 0.451"), "{text}");
        let json: serde_json::Value = serde_json::from_str(&render_json(&l)).unwrap();
        assert_eq!(json["schema"], "flakelab.ladder/1");
        assert_eq!(json["rungs"][0]["status"], "clean");
        assert_eq!(json["rungs"][0]["n"], 5);
        assert!(json["reproduced_at"].is_null());
    }

    #[test]
    fn an_order_finding_hands_over_to_bisect_and_a_host_collision_does_not() {
        let named = |n: u8, name: &str, status: RungStatus, k: u64| RungResult {
            name: name.into(),
            ..rung(n, status, k)
        };
        let want = "flakelab bisect s.00001 --test 't.py::test_x[a b]'";
        // Fails beside its neighbours in one process, passed alone.
        let mut l = ladder(
            vec![
                named(1, "alone", RungStatus::Clean, 0),
                named(2, "neighbours", RungStatus::Reproduced, 3),
            ],
            Some(2),
        );
        l.test = Some("t.py::test_x[a b]".into());
        let text = render_table(&l);
        assert!(
            text.contains(&format!(
                "find which test that ran before it makes it fail:\n  {want}"
            )),
            "{text}"
        );
        let json: serde_json::Value = serde_json::from_str(&render_json(&l)).unwrap();
        assert_eq!(json["bisect"], want);
        // Climbed from rung 2: nothing says it passes alone, so no claim of order.
        l.rungs.remove(0);
        assert_eq!(crate::report::handover::ladder_bisect(&l), None);
        // ...unless the cell shuffles; without --test, bisect finds the victim.
        l.cell = "tz=UTC+shuffle".into();
        l.test = None;
        assert_eq!(
            crate::report::handover::ladder_bisect(&l).as_deref(),
            Some("flakelab bisect s.00001")
        );
        // Several processes at once: a host resource, not order.
        let mut parallel = named(3, "processes", RungStatus::Reproduced, 2);
        parallel.processes = 4;
        let l = ladder(
            vec![named(1, "alone", RungStatus::Clean, 0), parallel],
            Some(3),
        );
        assert_eq!(crate::report::handover::ladder_bisect(&l), None);
        let json: serde_json::Value = serde_json::from_str(&render_json(&l)).unwrap();
        assert!(json["bisect"].is_null(), "{json}");
        assert!(!render_table(&l).contains("flakelab bisect"));
    }
}
