//! `flakelab run --design screen`: every cell runs the command `--screen`
//! times; each (test, cell) pair whose outcomes differ from the baseline's
//! is confirmed on fresh runs of that test (alone, or with its neighbours
//! when it never fails alone), interleaved with its own baseline runs and
//! stopped by the sequential rule in `crate::screen`. Verdicts rest on the
//! confirmation runs only, with Holm over the candidates.

use crate::catalog::recipe::argv;
use crate::cli::RunArgs;
use crate::error::{Error, Result};
use crate::exec::child::Stop;
use crate::record::{RunRecord, TestOutcome};
use crate::report::{self, VsBaseline};
use crate::screen::{self, Candidate, Confirmation, Decision, DesignSummary, Rule, ScreenRecord};
use crate::session::{self, SessionSpec};
use crate::verdict::{Findings, Verdict};

/// Confirmation runs per candidate (both arms) when `-n` is not given.
pub const DEFAULT_CAP: u32 = 30;

/// What a screened session's report reads from its screen runs: how
/// many, and the test executions they carried; folded one run at a time.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct ScreenRuns {
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

/// Failures and runs of `test` in `cell` among `runs`.
fn arm(runs: &[RunRecord], cell: &str, test: &str) -> (u64, u64) {
    runs.iter()
        .filter(|r| r.cell == cell)
        .filter_map(|r| r.tests.iter().find(|t| t.id == test))
        .fold((0, 0), |(k, n), t| match t.outcome {
            TestOutcome::Pass => (k, n + 1),
            TestOutcome::Fail | TestOutcome::Error => (k + 1, n + 1),
            TestOutcome::Skip => (k, n),
        })
}

fn executions(runs: &[RunRecord]) -> u64 {
    runs.iter().map(|r| r.tests.len() as u64).sum()
}

/// Runs `run --design screen`; returns the exit code.
pub(super) async fn screen_cmd(ctx: &super::Ctx, args: RunArgs) -> Result<i32> {
    if args.screen == 0 {
        return Err(Error::usage(
            "`--screen 0` screens nothing",
            "use --screen 2 or more (3 by default)",
        ));
    }
    if !(args.clear_below > 0.0 && args.clear_below <= 1.0) {
        return Err(Error::usage(
            format!("--clear-below {} is outside (0, 1]", args.clear_below),
            "use a rate such as 0.3",
        ));
    }
    let cap = args.session.runs.unwrap_or(DEFAULT_CAP).max(2);
    let settings = super::run::spec_of(ctx, &args)?.with_runs(args.screen);
    if settings.junit.is_none() {
        return Err(Error::usage(
            "--design screen needs per-test outcomes: no JUnit report for this command",
            "use a runner flakelab recognises (`flakelab recipes`), `{junit}` in the command, or --junit PATH",
        ));
    }
    let stop = super::start_watching()?;
    let Some(done) = session::run_session(&settings, &stop).await? else {
        return Ok(Verdict::Interrupted.exit_code());
    };
    let (runs, load) = done.runs(&settings.store)?;
    let report = report::build(&done.session, &runs, load);
    if done.interrupted {
        super::print_report(&report, args.format, &settings.redaction);
        return Ok(Verdict::Interrupted.exit_code());
    }
    let candidates = report::screen_candidates(&report, &runs);
    let rule = Rule::new(
        candidates.len(),
        (cap / 2).max(1),
        settings.confidence,
        args.clear_below,
    );
    eprintln!(
        "flakelab: screen done: {} candidate (test, cell) pair(s) to confirm, at most {} run(s) each",
        candidates.len(),
        2 * rule.looks
    );
    let mut budget = args.max_runs;
    let ctx = Context {
        settings: &settings,
        screen_session: &done.session.id,
        rule: &rule,
        stop: &stop,
    };
    let mut confirmed = Vec::new();
    for (i, c) in candidates.iter().enumerate() {
        if *stop.borrow() != Stop::Run {
            break;
        }
        // Each candidate's fresh seeds derive from the session seed, so a
        // screened session is reproducible from its seed.
        let seed = crate::plan::run_seed(settings.seed, 1_000_000 + i as u32);
        confirmed.push(confirm(&ctx, c, seed, &mut budget).await?);
    }
    let interrupted = *stop.borrow() != Stop::Run;
    let record = ScreenRecord {
        schema: screen::SCREEN_SCHEMA.into(),
        session: done.session.id.clone(),
        screen_runs: args.screen,
        rule,
        confirmations: confirmed,
    };
    let mut record = record;
    crate::session::scrub::screen(&settings.redaction, &mut record);
    settings.store.append_screen(&record)?;
    let (report, _) = super::report_cmd::shown(&settings.store, &done.session)?;
    super::print_report(&report, args.format, &settings.redaction);
    Ok(Verdict::of(Findings {
        interrupted,
        ..report.findings()
    })
    .exit_code())
}

/// What every confirmation of one screened session shares.
#[derive(Clone, Copy)]
struct Context<'a> {
    settings: &'a SessionSpec,
    screen_session: &'a str,
    rule: &'a Rule,
    stop: &'a tokio::sync::watch::Receiver<Stop>,
}

/// Confirms one candidate: alone first (when the recipe can select it),
/// then with its neighbours if it never fails alone.
async fn confirm(
    ctx: &Context<'_>,
    c: &Candidate,
    seed: u64,
    budget: &mut Option<u64>,
) -> Result<Confirmation> {
    let Context {
        settings,
        screen_session,
        rule,
        stop,
    } = *ctx;
    let recipe = settings.recipe.as_ref();
    let select = recipe.and_then(|r| r.select.as_ref());
    let from = select.and_then(|s| s.id_from).unwrap_or_default();
    let mut stages: Vec<(&'static str, Vec<String>, String)> = Vec::new();
    if let (Some(r), Some(_)) = (recipe, select) {
        if let Some(id) = screen::runner_id(from, &c.test, &settings.dir) {
            if let Ok(argv) = argv::select(r, &settings.command, &id, &settings.dir) {
                stages.push(("alone", argv, format!("alone ({id})")));
            }
        }
        if let Some(id) = screen::neighbours_id(from, &c.test, &settings.dir) {
            if let Ok(argv) = argv::select(r, &settings.command, &id, &settings.dir) {
                stages.push(("neighbours", argv, format!("with its neighbours ({id})")));
            }
        }
    }
    if !stages.iter().any(|s| s.0 == "neighbours") {
        stages.push((
            "neighbours",
            settings.command.clone(),
            "with its neighbours (the whole command)".into(),
        ));
    }
    let mut out = Confirmation {
        candidate: c.clone(),
        looks: Vec::new(),
        selection: String::new(),
        cell: (0, 0),
        baseline: (0, 0),
        stage_runs: 0,
        all_runs: 0,
        executions: 0,
        decision: Decision::Continue,
        spent_p: 1.0,
        note: None,
        replayed_seed: None,
        sessions: Vec::new(),
    };
    let mut pair = 0u32;
    let stage_count = stages.len();
    for (i, (stage, argv, words)) in stages.into_iter().enumerate() {
        if pair >= rule.looks {
            break;
        }
        let stage_settings = match settings.clone().only_cells(&["baseline", c.cell.as_str()]) {
            Ok(spec) => {
                let shuffled = spec
                    .cell_index(&c.cell)
                    .is_some_and(|i| spec.cells[i].1.shuffle);
                spec.with_command(argv)
                    .with_runs(rule.looks - pair)
                    .with_seed(seed + i as u64)
                    .first_seed(if shuffled { c.flip_seed } else { None })
                    .part_of(screen_session)
            }
            Err(e) => {
                out.note = Some(format!("{words}: {} (hint: {})", e.message(), e.hint()));
                continue;
            }
        };
        out.replayed_seed = out.replayed_seed.or(stage_settings.replay.first_seed);
        let may_climb = stage == "alone" && i + 1 < stage_count && c.screen_cell.0 > 0;
        let mut stage_pairs = 0u32;
        let mut decision = Decision::Continue;
        let mut looks = Vec::new();
        let mut used = 0u64;
        let mut exhausted = false;
        let mut on_block = |runs: &[RunRecord]| -> bool {
            pair += 1;
            stage_pairs += 1;
            used = runs.len() as u64;
            let look = screen::decide(
                rule,
                pair,
                stage_pairs,
                stage,
                arm(runs, &c.cell, &c.test),
                arm(runs, "baseline", &c.test),
                may_climb,
            );
            decision = look.decision;
            looks.push(look);
            if let Some(left) = budget.as_ref() {
                if used >= *left {
                    exhausted = true;
                    return true;
                }
            }
            decision != Decision::Continue || pair >= rule.looks
        };
        let done = session::run_session_looking(&stage_settings, stop, Some(&mut on_block)).await?;
        if let Some(left) = budget.as_mut() {
            *left = left.saturating_sub(used);
        }
        let Some(done) = done else { break };
        let (runs, _) = done.runs(&stage_settings.store)?;
        out.spent_p = looks.iter().map(|l| l.spent_p).fold(out.spent_p, f64::min);
        out.looks.extend(looks);
        out.all_runs += runs.len() as u64;
        out.sessions.push(done.session.id.clone());
        out.executions += executions(&runs);
        out.selection = words;
        out.cell = arm(&runs, &c.cell, &c.test);
        out.baseline = arm(&runs, "baseline", &c.test);
        out.stage_runs = runs.len() as u64;
        out.decision = decision;
        if exhausted {
            out.note = Some("--max-runs reached".into());
            *budget = Some(0);
            break;
        }
        if decision != Decision::Climb || done.interrupted {
            break;
        }
    }
    Ok(out)
}

/// Puts the confirmations into the report: each candidate's row counts its
/// deciding stage's runs, Holm over the candidates decides; every other row
/// of a perturbed cell is a screen row, never a verdict.
pub(super) fn apply(report: &mut report::Report, record: &ScreenRecord, runs: &ScreenRuns) {
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
                report::short_p(c.spent_p),
                report::short_p(rule.boundary)
            ),
            (true, _, _) => format!(
                "differs: confirmed {} on {} runs (spent p {} at the cap, Holm over the candidates {})",
                c.selection,
                c.stage_runs,
                report::short_p(c.spent_p),
                report::short_p(adj)
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
        let verdict = match c.replayed_seed {
            Some(seed) => format!("{verdict}; each stage's first cell run replayed seed {seed}, which flipped it in the screen, the rest fresh seeds"),
            None => verdict,
        };
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
                |r: &report::per_test::TestRow| r.vs_baseline.as_ref().is_some_and(|v| v.differs);
            d(b).cmp(&d(a)).then(b.k.cmp(&a.k)).then(a.id.cmp(&b.id))
        });
    }
    let screen_executions = runs.executions;
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
        candidates: confirmed.len(),
        confirmed: differing,
        rule: *rule,
        runs: (runs.runs, confirm_runs),
        executions: (screen_executions, confirm_executions),
        fixed_runs_per_cell: fixed_runs,
        fixed_executions,
        used_share: fixed_executions
            .filter(|f| *f > 0)
            .map(|f| (screen_executions + confirm_executions) as f64 / f as f64),
    });
}
