//! The screen design's report: how many runs the screen read
//! ([`ScreenRuns`]), and [`apply`], which puts a screen's confirmations
//! into a session's report (Holm over the candidates, each verdict in
//! words, the design's summary against the fixed design).

use super::{Report, VsBaseline};
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
        let verdict = match (differs, c.decision, &c.note) {
            (true, Decision::Differs, _) => format!(
                "differs: confirmed {} on {} runs (stopped at spent p {} ≤ boundary {})",
                c.selection,
                c.stage_runs,
                super::short_p(c.spent_p),
                super::short_p(rule.boundary)
            ),
            (true, _, _) => format!(
                "differs: confirmed {} on {} runs (spent p {} at the cap, Holm over the candidates {})",
                c.selection,
                c.stage_runs,
                super::short_p(c.spent_p),
                super::short_p(adj)
            ),
            (false, Decision::Cleared, _) => format!(
                "no difference: cleared {} on {} runs, the difference bounded below {:.0}%",
                c.selection,
                c.stage_runs,
                rule.clear_below * 100.0
            ),
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
        row.boundary = Some(rule.boundary);
        row.verdict = Some(verdict);
        row.looks = c.looks.clone();
        row.vs_baseline = Some(VsBaseline {
            fisher_p: c.looks.last().map_or(1.0, |l| l.p),
            adjusted_p: adj,
            differs,
        });
        // The confirmation ran the cell against the baseline only: the
        // screen's comparison with the sham does not speak for these runs.
        row.sham = None;
        row.vs_sham = None;
    }
    // Differing rows first again.
    for cell in report.cells.iter_mut() {
        cell.tests.sort_by(|a, b| {
            let d =
                |r: &super::per_test::TestRow| r.vs_baseline.as_ref().is_some_and(|v| v.differs);
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
