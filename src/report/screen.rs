//! The screen design in the report: how many runs the screen read
//! ([`ScreenRuns`]); [`apply`], which puts a screen's confirmations into a
//! session's report (Holm over the candidates, each verdict in words, the
//! design's summary against the fixed design); the design's paragraph, its
//! confirmed rows and its candidates as the outputs show them. (The fixed
//! design's undecided pairs are `undecided.rs`'s.)

use super::{per_test, short_p, Report, VsBaseline};
use crate::screen::{self, Decision, DesignSummary, ScreenRecord};

/// What a screened session's report reads from its screen runs: how
/// many, and the test executions they carried; folded one run at a time.
#[derive(Debug, Default, Clone, Copy)]
pub struct ScreenRuns {
    /// Runs read.
    pub runs: u64,
    /// Test executions (per-test records) in them.
    pub executions: u64,
    /// Runs with per-test data.
    pub measured: u64,
}

impl ScreenRuns {
    /// Adds one run.
    pub fn add(&mut self, r: &crate::store::RunView) {
        self.runs += 1;
        let tests = r.tests_len() as u64;
        self.executions += tests;
        if tests > 0 {
            self.measured += 1;
        }
    }
}

/// The screen design's summary in one paragraph.
pub fn design_text(d: &crate::screen::DesignSummary) -> String {
    let (screen_x, confirm_x) = d.executions;
    let mut text = format!(
        "Screen, then confirm: one full run per cell (at most {}) screened {} (test, cell) pairs and raised {} candidate(s); {} differ after Holm over the candidates, on fresh confirmation runs only (at most {} looks each{}, spent p held to {} = alpha / candidates; cleared below a {:.0}% difference). Test executions: {} in the screen, {} confirming.",
        d.screen_runs,
        d.pairs_screened,
        d.candidates,
        d.confirmed,
        d.rule.looks,
        match d.rule.planned {
            0 => String::new(),
            n => format!(
                ", one-sided; the planned look at {n} pairs spends {:.0}% of alpha{}",
                d.rule.planned_share * 100.0,
                match d.rule.final_share > 0.0 {
                    true => format!(", the last look {:.0}%", d.rule.final_share * 100.0),
                    false => String::new(),
                }
            ),
        },
        short_p(d.rule.boundary),
        d.rule.clear_below * 100.0,
        screen_x,
        confirm_x
    );
    if let Some(line) = cap_text(d.candidates, d.rule.looks, d.runs_needed_each) {
        text.push(' ');
        text.push_str(&line);
    }
    if !d.rescreened.is_empty() {
        let cells: Vec<String> = (d.rescreened.iter())
            .map(|(c, why)| format!("{c} ({why})"))
            .collect();
        let orders = (d.rescreened.iter()).any(|(_, why)| why.starts_with("systematic orders"));
        text.push_str(&format!(
            " Screened again, up to {} runs{}: {}.",
            d.screen_runs,
            if orders {
                " (an orders cell: one run of each of its orders)"
            } else {
                ""
            },
            cells.join(", ")
        ));
    }
    text.push_str(&format!(
        " The confirmations took {} runner invocation(s).",
        d.confirm_sessions
    ));
    if let Some(why) = &d.chosen {
        text.push_str(&format!(" Design: {why}."));
    }
    if d.pending {
        text.push_str(&format!(
            " Confirmation pending: the screen ran alone (--screen-only), and its {} candidate(s) await their shards (`flakelab run --design screen --shard I/N` with its --session-id, each in a copy of this store, then `flakelab merge`); no verdict is drawn yet.",
            d.candidates
        ));
    }
    if let Some(sh) = &d.shards {
        text.push_str(&format!(
            " Confirmed in {} of {} shard(s).",
            sh.present.len(),
            sh.total
        ));
        for m in &sh.missing {
            text.push_str(&format!(" {}.", m.text(sh.total)));
        }
    }
    if let (Some(n), Some(fixed), Some(share)) =
        (d.fixed_runs_per_cell, d.fixed_executions, d.used_share)
    {
        text.push_str(&format!(
            " The fixed design needs {n} runs per cell ({fixed} executions) for the same verdicts: this used {:.0}% of that.",
            share * 100.0
        ));
    }
    text
}

/// Why candidate `c` is undecided, when it is: its confirmation's raw
/// counts differ, yet it neither differs after Holm over the `m`
/// candidates nor was cleared.
fn undecided_of(
    c: &crate::screen::Confirmation,
    rule: &crate::screen::Rule,
) -> Option<super::Undecided> {
    // A candidate stopped before its confirmation measured both arms
    // stands on the screen's counts, which differ by construction.
    let (cell, baseline) = confirmed_or_screen(c);
    let ((kc, nc), (kb, nb)) = (cell, baseline);
    if nc == 0 || nb == 0 || kc * nb == kb * nc {
        return None;
    }
    let stopped_by = match c.note.as_deref() {
        Some("--max-runs reached") => "max_runs",
        Some(_) => "stopped",
        None if (c.looks.len() as u32) < rule.looks => "interrupted",
        None => "cap",
    };
    let rate = |(k, n): (u64, u64)| k as f64 / n as f64;
    Some(super::Undecided {
        stopped_by,
        runs_needed: screen::runs_to_decide(rate(cell), rate(baseline), rule.boundary)
            .map(|n| 2 * n),
    })
}

/// The counts a candidate's verdict stands on: its confirmation's, or the
/// screen's when the confirmation did not measure both arms.
fn confirmed_or_screen(c: &crate::screen::Confirmation) -> ((u64, u64), (u64, u64)) {
    match c.cell.1 > 0 && c.baseline.1 > 0 {
        true => (c.cell, c.baseline),
        false => (c.candidate.screen_cell, c.candidate.screen_baseline),
    }
}

/// An undecided candidate in words: its counts, both p-values, what
/// stopped it and the runs that would settle it.
fn undecided_words(
    c: &crate::screen::Confirmation,
    rule: &crate::screen::Rule,
    adjusted: f64,
    m: usize,
    u: Option<&super::Undecided>,
) -> String {
    let stopped = match (u.map(|u| u.stopped_by), &c.note) {
        (Some("cap"), _) => format!("the cap of {} runs per candidate", 2 * rule.looks),
        (Some("max_runs"), _) => "--max-runs".into(),
        (Some("interrupted"), _) => "the interruption".into(),
        (_, Some(note)) => note.clone(),
        _ => "the design".into(),
    };
    let settle = match (u.and_then(|u| u.runs_needed), u.map(|u| u.stopped_by)) {
        (Some(n), Some("max_runs")) => {
            format!("about {n} confirmation runs per candidate would settle it (raise --max-runs)")
        }
        (Some(n), _) => {
            format!("about {n} confirmation runs per candidate (-n {n}) would settle it")
        }
        (None, _) => "more than 20,000 confirmation runs would be needed to settle it".into(),
    };
    if c.cell.1 == 0 || c.baseline.1 == 0 {
        let ((kc, nc), (kb, nb)) = (c.candidate.screen_cell, c.candidate.screen_baseline);
        return format!(
            "undecided: no confirmation run measured it (the screen saw {kc} of {nc} against {kb} of {nb}); stopped by {stopped}; {settle}"
        );
    }
    format!(
        "undecided: {} of {} against {} of {} {} on {} runs, raw p = {}, adjusted over {m} candidate(s) p = {}; stopped by {stopped}; {settle}",
        c.cell.0,
        c.cell.1,
        c.baseline.0,
        c.baseline.1,
        c.selection,
        c.stage_runs,
        short_p(c.looks.last().map_or(1.0, |l| l.p)),
        short_p(adjusted),
    )
}

/// A collision candidate in words: its partners, what their failures
/// contest, and how its runs are counted. None for one test.
fn collision_words(c: &crate::screen::Candidate) -> Option<String> {
    if c.partners.is_empty() {
        return None;
    }
    Some(format!(
        "a collision: it and {} fail in turn under {}, their failures naming {} they contest; counted together, a run failing when any of them failed (the screen saw {} of {} against {} of {})",
        c.partners.join(", "),
        c.cell,
        c.contests.as_deref().unwrap_or("a resource"),
        c.screen_cell.0,
        c.screen_cell.1,
        c.screen_baseline.0,
        c.screen_baseline.1,
    ))
}

/// When the cap (`looks` pairs per candidate) is below the runs each of
/// `m` candidates needs (`needed`, [`screen::runs_needed_each`]), says so:
/// no candidate the cap stops can be decided, and every such pair whose
/// counts differ is undecided.
pub fn cap_text(m: usize, looks: u32, needed: u64) -> Option<String> {
    let cap = 2 * u64::from(looks);
    (m > 0 && cap < needed).then(|| format!(
        "The cap of {cap} confirmation runs per candidate is below the {needed} each of {m} candidate(s) needs for Holm over them (even a complete separation reaches alpha / {m} no sooner): a candidate the cap stops is undecided; give -n {needed} or more."
    ))
}

/// The rows a screen design confirmed (stage `confirm`), by cell.
pub fn confirmed_rows(report: &Report) -> Vec<(&str, &per_test::TestRow)> {
    report
        .cells
        .iter()
        .flat_map(|c| {
            c.tests
                .iter()
                .filter(|t| t.stage == Some("confirm"))
                .map(move |t| (c.name.as_str(), t))
        })
        .collect()
}

/// Puts the confirmations into the report: each candidate's row counts its
/// deciding stage's runs, Holm over the candidates decides; every other row
/// of a perturbed cell is a screen row, never a verdict.
pub fn apply(report: &mut Report, record: &ScreenRecord, runs: &ScreenRuns) {
    let (confirmed, rule, screen_runs) = (&record.confirmations, &record.rule, record.screen_runs);
    let alpha = 1.0 - rule.confidence;
    let adjusted = crate::stats::holm(&confirmed.iter().map(|c| c.spent_p).collect::<Vec<_>>());
    let mut pairs_screened = 0;
    for cell in report.cells.iter_mut().filter(|c| c.name != "baseline") {
        for row in &mut cell.tests {
            pairs_screened += usize::from(row.vs_baseline.is_some());
            row.stage = Some("screen");
            row.runs = Some(row.n);
            if let Some(v) = row.vs_baseline.as_mut() {
                v.differs = false;
            }
            // The screen's outcome shifts are screened too, never confirmed:
            // shown, not a verdict.
            if let Some(v) = row.shift_vs_baseline.as_mut() {
                v.differs = false;
            }
        }
    }
    let mut rates = Vec::new();
    let mut confirm_runs = 0;
    let mut confirm_executions = 0;
    let mut differing = 0;
    for (c, &adj) in confirmed.iter().zip(&adjusted) {
        confirm_runs += c.all_runs;
        confirm_executions += c.executions;
        let differs = adj <= alpha && c.cell.1 > 0 && c.baseline.1 > 0;
        let undecided = (!differs && c.decision != Decision::Cleared)
            .then(|| undecided_of(c, rule))
            .flatten();
        let verdict = match (differs, c.decision, &c.note) {
            (true, Decision::Differs, _) => format!(
                "differs: confirmed {} on {} runs (stopped at spent p {} ≤ boundary {})",
                c.selection,
                c.stage_runs,
                short_p(c.spent_p),
                short_p(rule.boundary)
            ),
            (true, _, _) => format!(
                "differs: confirmed {} on {} runs (spent p {} at the cap, Holm over the candidates {})",
                c.selection,
                c.stage_runs,
                short_p(c.spent_p),
                short_p(adj)
            ),
            (false, Decision::Cleared, _) => format!(
                "no difference: cleared {} on {} runs, the difference bounded below {:.0}%",
                c.selection,
                c.stage_runs,
                rule.clear_below * 100.0
            ),
            (false, _, _) if undecided.is_some() => {
                undecided_words(c, rule, adj, confirmed.len(), undecided.as_ref())
            }
            (false, _, Some(note)) => format!("not decided: {note}"),
            (false, _, None) => format!(
                "no difference shown {} in {} runs (the cap)",
                c.selection, c.stage_runs
            ),
        };
        let mut verdict = match (c.replayed_seed, c.replayed_every) {
            (Some(_), true) => verdict,
            (Some(seed), false) => format!("{verdict}; each stage's first cell run replayed seed {seed}, which flipped it in the screen, the rest fresh seeds"),
            (None, _) => verdict,
        };
        if let Some(start) = &c.start {
            verdict.push_str(&format!("; {start}"));
        }
        if let Some(words) = collision_words(&c.candidate) {
            verdict.push_str(&format!("; {words}"));
        }
        for climb in &c.climbs {
            verdict.push_str(&format!(
                "; climbed from {} to {}: {}",
                climb.from, climb.to, climb.why
            ));
        }
        if differs {
            differing += 1;
            let rate = |(k, n): (u64, u64)| k as f64 / n.max(1) as f64;
            rates.push((rate(c.cell), rate(c.baseline)));
        }
        let Some(cell) = report.cells.iter_mut().find(|x| x.name == c.candidate.cell) else {
            continue;
        };
        let Some(row) = cell.tests.iter_mut().find(|t| t.id == c.candidate.test) else {
            continue;
        };
        let (k, n) = c.cell;
        let p = crate::stats::proportion(k, n, rule.confidence);
        row.k = k;
        row.n = n;
        row.rate = p.rate;
        row.low = p.low;
        row.high = p.high;
        row.stage = Some("confirm");
        row.runs = Some(c.stage_runs);
        // A candidate first flipped in a later screen round (the reversed
        // order, a systematic order) starts its bisect from that run.
        if row.first_failure.is_none() {
            row.first_failure = c.candidate.flip_run.clone();
        }
        row.boundary = Some(rule.boundary);
        row.verdict = Some(verdict);
        row.looks = c.looks.clone();
        row.partners = c.candidate.partners.clone();
        row.vs_baseline = Some(VsBaseline {
            fisher_p: c.looks.last().map_or(1.0, |l| l.p),
            adjusted_p: adj,
            differs,
            effect: crate::stats::effect::effect(c.cell, c.baseline, rule.confidence),
            undecided,
        });
        // The confirmation ran the cell against the baseline only: the
        // screen's comparison with the sham does not speak for these runs.
        row.sham = None;
        row.vs_sham = None;
        // A collision's partners are counted in its row, not their own.
        for partner in &c.candidate.partners {
            if let Some(row) = cell.tests.iter_mut().find(|t| &t.id == partner) {
                row.verdict = Some(format!(
                    "a partner in the collision confirmed as {}: counted in its row ({})",
                    c.candidate.test,
                    if differs {
                        "differs"
                    } else {
                        "not shown to differ"
                    }
                ));
            }
        }
    }
    // Differing rows first again.
    for cell in report.cells.iter_mut() {
        cell.tests.sort_by(|a, b| {
            let d = |r: &per_test::TestRow| r.vs_baseline.as_ref().is_some_and(|v| v.differs);
            d(b).cmp(&d(a)).then(b.k.cmp(&a.k)).then(a.id.cmp(&b.id))
        });
    }
    if let Some((_, runs, executions)) = record.confirm_totals {
        confirm_runs = runs;
        confirm_executions = executions;
    }
    let again_runs: u64 = record.rounds.iter().map(|r| r.runs).sum();
    let again_executions: u64 = record.rounds.iter().map(|r| r.executions).sum();
    let screen_executions = runs.executions + again_executions;
    let per_run = if runs.measured == 0 {
        0.0
    } else {
        runs.executions as f64 / runs.measured as f64
    };
    let fixed_runs = screen::fixed_runs_needed(&rates, pairs_screened, rule.confidence);
    let fixed_executions =
        fixed_runs.map(|n| (n as f64 * report.cells.len() as f64 * per_run).round() as u64);
    report.design = Some(DesignSummary {
        kind: "screen",
        screen_runs,
        pairs_screened,
        candidates: confirmed.len().max(record.candidates.len()),
        confirmed: differing,
        rule: *rule,
        runs_needed_each: screen::runs_needed_each(rule.boundary),
        runs: (runs.runs + again_runs, confirm_runs),
        executions: (screen_executions, confirm_executions),
        fixed_runs_per_cell: fixed_runs,
        fixed_executions,
        used_share: fixed_executions
            .filter(|f| *f > 0)
            .map(|f| (screen_executions + confirm_executions) as f64 / f as f64),
        confirm_sessions: record.confirm_totals.map_or_else(
            || confirmed.iter().map(|c| c.sessions.len() as u64).sum(),
            |t| t.0,
        ),
        rescreened: (record.rounds.iter())
            .flat_map(|r| r.cells.iter().cloned())
            .fold(Vec::new(), |mut out: Vec<(String, String)>, (cell, why)| {
                if !out.iter().any(|(c, _)| c == &cell) {
                    out.push((cell, why));
                }
                out
            }),
        chosen: record.chosen.clone(),
        pending: record.pending,
        shards: record.shards.clone(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_below_what_the_candidates_need_is_said_and_one_at_it_is_not() {
        let needed = screen::runs_needed_each(0.05 / 9.0);
        assert_eq!(needed, 10);
        let line = cap_text(9, 4, needed).unwrap();
        assert!(
            line.starts_with("The cap of 8 confirmation runs per candidate is below the 10 each of 9 candidate(s) needs"),
            "{line}"
        );
        assert!(line.ends_with("give -n 10 or more."), "{line}");
        assert_eq!(cap_text(9, 5, needed), None);
        assert_eq!(cap_text(0, 1, needed), None);
    }
}
