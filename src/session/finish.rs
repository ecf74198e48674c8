//! A finished run's record: how its child ended, read with the recipe's
//! facts (`catalog::recipe::outcome`), whether its stress threads got their
//! share, its per-test outcomes from its JUnit report, and its failure
//! signature.

use crate::catalog::recipe::outcome;
use crate::exec::result::ChildResult;
use crate::perturb::{self, Prepared};
use crate::record::{Outcome, ProcessEnd, RunRecord};

use super::report_path::Noted;

use super::SessionSpec;

/// Fills a planned record from how its child ended, with the session's
/// credential values masked in the record, in its log (rewritten now that
/// the run has ended) and in its harness-owned report.
pub(super) fn finish_record(
    record: &mut RunRecord,
    started_at: jiff::Timestamp,
    result: ChildResult,
    settings: &SessionSpec,
    prepared: &Prepared,
    report_before: Option<Noted>,
) {
    classify(
        record,
        started_at,
        result,
        settings,
        prepared,
        report_before,
    );
    super::scrub::run(&settings.redaction, record);
    drop_report(record, settings);
}

/// Deletes the run's JUnit report when flakelab had the runner write it
/// into the store, unless `--keep-junit`: nothing reads it again (the
/// record holds what it said, and `replay` runs anew).
fn drop_report(record: &RunRecord, settings: &SessionSpec) {
    let harness_owned = matches!(
        settings.junit,
        Some(super::JunitSource::Harness | super::JunitSource::Recipe | super::JunitSource::Runner)
    );
    if let (Some(path), true, false) = (&record.junit, harness_owned, settings.keep_junit) {
        if path.starts_with(settings.store.root()) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The masked text of a run's log (empty when it printed nothing). A log
/// that cannot be masked is removed rather than kept with a credential in it.
fn masked_log(record: &mut RunRecord, settings: &SessionSpec) -> Vec<u8> {
    let Some(log) = record.log.as_ref().map(|l| settings.store.root().join(l)) else {
        return Vec::new();
    };
    match super::scrub::log_file(&settings.redaction, &log) {
        Ok(bytes) => bytes,
        Err(why) => {
            if settings.redaction.masks_values() && std::fs::remove_file(&log).is_ok() {
                record.log = None;
                record.warnings.push(format!("{why}; the log was removed"));
            }
            Vec::new()
        }
    }
}

fn classify(
    record: &mut RunRecord,
    started_at: jiff::Timestamp,
    result: ChildResult,
    settings: &SessionSpec,
    prepared: &Prepared,
    report_before: Option<Noted>,
) {
    record.started_at = started_at
        .round(jiff::Unit::Millisecond)
        .map(|t| t.to_string())
        .unwrap_or_default();
    record.duration_s = result.duration.as_secs_f64();
    record.output_bytes = result.output_bytes;
    record.output_dropped = result.output_dropped;
    if result.output_bytes == 0 {
        // Nothing was printed, so no log file was created.
        record.log = None;
    }
    record.stragglers = result.stragglers;
    record.warnings = result.warnings;
    record.outcome = match &result.end {
        ProcessEnd::Exited { code: 0 } => Outcome::Pass,
        ProcessEnd::Exited { .. } | ProcessEnd::Signaled { .. } => Outcome::Fail,
        ProcessEnd::TimedOut { .. } => Outcome::Timeout,
        ProcessEnd::SpawnFailed { .. } | ProcessEnd::Interrupted | ProcessEnd::NotStarted => {
            Outcome::Error
        }
    };
    match &result.end {
        ProcessEnd::Exited { code } => record.exit_code = Some(*code),
        ProcessEnd::Signaled { signal } | ProcessEnd::TimedOut { signal } => {
            record.signal = Some(*signal)
        }
        ProcessEnd::SpawnFailed { message } => record.reason = Some(message.clone()),
        _ => {}
    }
    if let Some(reason) = crate::exec::result::end_reason(&result.end, settings.limits.timeout) {
        // A timeout with its limit, a death by a signal with its name.
        record.reason = Some(reason);
    }
    record.end = result.end;
    if let ProcessEnd::SpawnFailed { message } = &record.end {
        if message.starts_with(perturb::isolate::SETUP_FAILED) {
            // The run's process could not be set up for the cell (or did
            // not read back what the cell declares): nothing of the
            // subject ran.
            record.outcome = Outcome::NotApplied;
            return;
        }
    }
    // Masked before anything is read from it: a signature normalised from
    // a credential would no longer match its value.
    let text = if record.log.is_some()
        && (settings.redaction.masks_values()
            || matches!(record.outcome, Outcome::Pass | Outcome::Fail))
    {
        masked_log(record, settings)
    } else {
        Vec::new()
    };
    // Proof from the subject's own processes: a test process that bypassed
    // the cell's mechanism measured nothing of it (`perturb::proof`).
    // The clock preload's own record first (it names a short-lived static
    // program before it runs), then the /proc watch.
    let self_exe = &settings.facts.self_exe;
    let from_record = result
        .clock_record
        .as_deref()
        .and_then(|text| perturb::proof::judge_record(&prepared.checks, text, self_exe));
    let watched = result
        .processes
        .as_deref()
        .map(|seen| perturb::proof::judge(&prepared.checks, seen, self_exe));
    let judged = match (from_record, watched) {
        (Some(a), Some(b)) => Some(perturb::proof::merge(a, b)),
        (a, b) => a.or(b),
    };
    let bypassed = judged.and_then(|judged| {
        record.processes = Some(judged.check);
        record.warnings.extend(judged.warnings);
        judged.not_applied
    });
    if record.outcome == Outcome::Timeout {
        if let Some(reason) = bypassed {
            record.outcome = Outcome::NotApplied;
            record.reason = Some(reason);
            return;
        }
    }
    if !matches!(record.outcome, Outcome::Pass | Outcome::Fail) {
        read_tests(record, settings, &text, report_before);
        return;
    }
    let text = String::from_utf8_lossy(&text);
    if let Some(reason) = bypassed {
        record.outcome = Outcome::NotApplied;
        record.reason = Some(reason);
        return;
    }
    if let Some(recipe) = &settings.recipe {
        let asked = outcome::Asked {
            shuffle: prepared.shuffle,
            seed: record.seed,
            workers: prepared.workers,
            race: prepared.race.is_some(),
        };
        if let Some(reason) = outcome::prerequisite_missing(recipe, asked, &text) {
            // The plugin the cell needs is missing: nothing of it was measured.
            record.outcome = Outcome::NotApplied;
            record.reason = Some(reason);
            return;
        }
        if let Some(reason) = outcome::runner_error(recipe, record.exit_code, &text) {
            // A usage error or an empty run measured nothing: never a pass or a fail.
            record.outcome = Outcome::Error;
            record.reason = Some(reason);
            return;
        }
        if recipe.workers.is_some() {
            record.workers = prepared.workers;
        }
        if let Some(reason) = outcome::not_applied(recipe, asked, &text) {
            record.outcome = Outcome::NotApplied;
            record.reason = Some(reason);
            return;
        }
    }
    if let Some(label) = &prepared.stress_label {
        // The copy of a group that carried the stress was measured; a run
        // whose stressors did not get their share is no stressed run.
        if record.cpu.as_ref().is_some_and(|c| c.stress.is_some()) {
            if let Err(reason) = perturb::probe::judge_stress(label, record.cpu.as_ref()) {
                record.outcome = Outcome::NotApplied;
                record.reason = Some(reason);
                return;
            }
        }
    }
    let empty = read_tests(record, settings, text.as_bytes(), report_before);
    if let (Some(recipe), Some(shown), Some(0)) = (&settings.recipe, empty, record.exit_code) {
        // An exit 0 whose report lists no test measured nothing (mocha's
        // xunit reporter prints no summary when --grep matches nothing).
        record.outcome = Outcome::Error;
        record.reason = Some(format!(
            "{} ran no tests (exit 0): {shown} holds no test case",
            recipe.name
        ));
        return;
    }
    if record.outcome != Outcome::Fail {
        return;
    }
    if !settings.signatures.is_empty() {
        // The run reproduced a signature when its output or a failing
        // test's message did: the per-test rows count within these runs. It
        // counts for the first pattern (in the order given) that any of
        // them matched.
        let pattern = crate::results::signature::first_match(&settings.signatures, &text)
            .into_iter()
            .chain(record.tests.iter().filter_map(|t| t.matched_pattern()))
            .min();
        record.signature_match = Some(pattern.is_some());
        record.signature_pattern = pattern.map(|i| i as u32);
    }
    record.failure_signature = record
        .tests
        .iter()
        .find(|t| t.failed())
        .and_then(|t| t.signature.clone())
        .or_else(|| crate::results::signature::from_log(&text));
}

/// Reads the run's per-test outcomes into the record; `Some` names the
/// report when it was read and held no test case. `report_before`: what was
/// at a report path of the user's before the run (never read as its report).
fn read_tests(
    record: &mut RunRecord,
    settings: &SessionSpec,
    log: &[u8],
    report_before: Option<Noted>,
) -> Option<String> {
    if !matches!(
        record.outcome,
        Outcome::Pass | Outcome::Fail | Outcome::Timeout
    ) {
        return None;
    }
    // The runner's own per-test output (`[per_test]`), when the session
    // reads that rather than a JUnit report.
    let per_test = (settings.junit == Some(super::JunitSource::Runner))
        .then(|| settings.recipe.as_ref().and_then(|r| r.per_test.as_ref()))
        .flatten();
    let (parsed, shown) = match (per_test, record.junit.clone()) {
        (Some(p), None) => {
            if record.output_dropped > 0 {
                record.warnings.push(format!(
                    "the run's output lost {} bytes in its middle: the per-test rows read from it may miss tests",
                    record.output_dropped
                ));
            }
            let parsed = crate::results::testreport::parse(p.format, log, &record.cwd);
            (
                parsed.map_err(|e| e.to_string()),
                "the run's output".to_string(),
            )
        }
        (per_test, Some(path)) => {
            let in_store = path.starts_with(settings.store.root());
            if !in_store {
                if let Some(why) = super::report_path::not_the_runs(&path, report_before) {
                    record.tests_missing = Some(why);
                    return None;
                }
            }
            let masked = match super::scrub::junit_file(&settings.redaction, &path, in_store) {
                Ok(masked) => masked,
                Err(why) => {
                    // A report that keeps a credential is not left in the store
                    // (one outside it is the user's, never deleted).
                    if in_store {
                        let _ = std::fs::remove_file(&path);
                    }
                    record.tests_missing = Some(why);
                    return None;
                }
            };
            let parsed = match (per_test, masked) {
                (Some(p), Some(bytes)) => {
                    crate::results::testreport::parse(p.format, &bytes, &record.cwd)
                        .map_err(|e| e.to_string())
                }
                (Some(p), None) => match std::fs::read(&path) {
                    Ok(bytes) => crate::results::testreport::parse(p.format, &bytes, &record.cwd)
                        .map_err(|e| e.to_string()),
                    Err(e) => Err(format!("cannot read the report {}: {e}", path.display())),
                },
                (None, Some(bytes)) => {
                    crate::results::junit::parse(bytes.as_slice()).map_err(|e| e.to_string())
                }
                (None, None) => crate::results::junit::parse_file(&path).map_err(|e| e.to_string()),
            };
            (parsed, format!("the report {}", path.display()))
        }
        (None, None) => return None,
    };
    match parsed {
        Ok(parsed) => {
            record.tests = crate::results::outcomes::records(&parsed, &settings.signatures);
            // A runner that says it retried while its report holds no retry
            // hid first attempts: never silently.
            if let Some(r) = settings.recipe.as_ref().and_then(|r| r.retries.as_ref()) {
                let recorded: u64 = record.tests.iter().map(|t| u64::from(t.retries)).sum();
                if let Some(w) = r.unseen(&String::from_utf8_lossy(log), recorded) {
                    record.warnings.push(w);
                }
            }
            if record.tests.is_empty() {
                record.tests_missing = Some(format!("{shown} holds no test case"));
                // A report file the runner wrote with no test case in it
                // measured nothing; output without the format's lines (libtest
                // under `-q` prints dots) only gives no per-test data.
                return record.junit.is_some().then_some(shown);
            }
            None
        }
        Err(e) => {
            record.tests_missing = Some(e);
            None
        }
    }
}
