//! The report as it was built before it was a fold: every run of the
//! session held at once, each cell filtering them again. Kept as the
//! reference the [`super::Fold`] is tested against (it must give the same
//! report on the same runs) and measured against in `benches/scale.rs`;
//! nothing else calls it.

use super::{cell_cpu, finish_report, per_test, CellReport, FirstFailure, Report};
use crate::record::{Outcome, RunRecord, SessionRecord};
use crate::stats;
use crate::store::LoadStats;

/// Builds the report of `session` from its `runs`, sorted by index, all
/// held at once.
pub fn build(session: &SessionRecord, runs: &[RunRecord], load: LoadStats) -> Report {
    let patterns = session.patterns().len();
    let mut data_runs: Vec<per_test::DataRuns> = Vec::new();
    let cells: Vec<CellReport> = session
        .cells
        .iter()
        .map(|c| {
            let mine = runs.iter().filter(|r| r.cell == c.name);
            let mut cell = CellReport {
                name: c.name.clone(),
                perturbations: c.perturbations.clone(),
                applied: c.applied,
                reason: c.reason.clone(),
                n: 0,
                k: 0,
                passed: 0,
                failed: 0,
                timed_out: 0,
                errored: 0,
                not_applied: 0,
                planned: u64::from(session.plan.runs_per_cell),
                rate: 0.0,
                low: 0.0,
                high: 1.0,
                vs_baseline: None,
                timeouts_vs_baseline: None,
                sham_of: c.sham_of.clone(),
                sham: c.sham.clone(),
                vs_sham: None,
                tests: Vec::new(),
                signatures: Vec::new(),
                runs_with_tests: 0,
                runs_without_tests: 0,
                probes: c.probes.clone(),
                notes: c.notes.clone(),
                not_applied_reason: None,
                cpu: None,
                stragglers: 0,
                first_failure: None,
                first_other_failure: None,
                error_reason: None,
                signaled: 0,
                signal_reason: None,
                by_pattern: super::per_test::PatternSplit::new(patterns),
            };
            for r in mine {
                cell.stragglers += u64::from(r.stragglers);
                // With a signature, a run reproduced it when its output or a
                // test's first attempt matched (as the ladder counts), so
                // every reproduction a test row counts is in its cell's k.
                let matched =
                    crate::record::matched_pattern(r.signature_match, r.signature_pattern)
                        .or_else(|| r.tests.iter().filter_map(|t| t.matched_pattern()).min());
                match r.outcome {
                    Outcome::Pass | Outcome::Fail => {
                        let failed = r.outcome == Outcome::Fail;
                        if failed {
                            cell.failed += 1;
                            if let crate::record::ProcessEnd::Signaled { signal } = r.end {
                                cell.signaled += 1;
                                if cell.signal_reason.is_none() {
                                    let why = r.reason.as_deref().map_or_else(
                                        || format!("killed by signal {signal}"),
                                        |w| super::text::one_line(w).into_owned(),
                                    );
                                    cell.signal_reason = Some(format!("{}: {why}", r.id));
                                }
                            }
                        } else {
                            cell.passed += 1;
                        }
                        let counted = if patterns > 0 {
                            matched.is_some()
                        } else {
                            failed
                        };
                        if let (Some(split), true) = (&mut cell.by_pattern, failed || counted) {
                            split.add(matched);
                        }
                        let first = || FirstFailure {
                            run: r.id.clone(),
                            repro: r.repro.clone(),
                            log: r.log.as_ref().map(|p| p.display().to_string()),
                            repro_note: r.repro_note.clone(),
                        };
                        if counted {
                            cell.k += 1;
                            if cell.first_failure.is_none() {
                                cell.first_failure = Some(first());
                            }
                        } else if failed && patterns > 0 && cell.first_other_failure.is_none() {
                            cell.first_other_failure = Some(first());
                        }
                    }
                    Outcome::Timeout | Outcome::Error => {
                        if r.outcome == Outcome::Timeout {
                            cell.timed_out += 1;
                        } else {
                            cell.errored += 1;
                        }
                        if cell.error_reason.is_none() {
                            cell.error_reason = Some(super::fold::unmeasured(
                                &r.id,
                                r.outcome,
                                r.reason.as_deref(),
                            ));
                        }
                    }
                    Outcome::NotApplied => {
                        cell.not_applied += 1;
                        if c.applied && cell.not_applied_reason.is_none() {
                            cell.not_applied_reason = r.reason.clone();
                        }
                    }
                }
            }
            let ran: Vec<&RunRecord> = runs
                .iter()
                .filter(|r| r.cell == c.name && r.end != crate::record::ProcessEnd::NotStarted)
                .collect();
            cell.cpu = cell_cpu(&ran);
            cell.n = cell.passed + cell.failed;
            if cell.applied && cell.not_applied > 0 && cell.n + cell.timed_out + cell.errored == 0 {
                // Every run found the cell not applied (a missing plugin, a
                // helper that could not set it up): so is the cell.
                cell.applied = false;
                cell.reason = cell.not_applied_reason.take().or_else(|| {
                    runs.iter()
                        .find(|r| r.cell == c.name && r.outcome == Outcome::NotApplied)
                        .and_then(|r| r.reason.clone())
                });
            }
            let counted: Vec<&RunRecord> = runs
                .iter()
                .filter(|r| r.cell == c.name && matches!(r.outcome, Outcome::Pass | Outcome::Fail))
                .collect();
            cell.runs_with_tests = counted.iter().filter(|r| !r.tests.is_empty()).count() as u64;
            cell.runs_without_tests =
                counted.iter().filter(|r| r.tests_missing.is_some()).count() as u64;
            cell.tests = per_test::rows(&counted, session.confidence, patterns);
            let mine: Vec<&RunRecord> = runs.iter().filter(|r| r.cell == c.name).collect();
            let (outcomes, data) = per_test::outcomes(&mine);
            for t in &mut cell.tests {
                t.outcomes = outcomes.get(&t.id).copied().unwrap_or_default();
            }
            data_runs.push(data);
            cell.signatures = per_test::group_signatures(
                counted
                    .iter()
                    .filter(|r| r.outcome == Outcome::Fail)
                    .filter_map(|r| r.failure_signature.as_deref()),
            );
            let p = stats::proportion(cell.k, cell.n, session.confidence);
            cell.rate = p.rate;
            cell.low = p.low;
            cell.high = p.high;
            cell
        })
        .collect();

    let recorded = runs.len() as u64;
    let executed = runs
        .iter()
        .filter(|r| r.outcome != Outcome::NotApplied)
        .count() as u64;
    let mut shards = crate::context::shard::ShardTally::default();
    for r in runs {
        shards.add(session, &crate::store::RunView::of(r));
    }
    let shards = crate::context::shard::summary(session, &shards);
    finish_report(session, cells, data_runs, recorded, executed, load, shards)
}
