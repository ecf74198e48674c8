//! How a cell's processes are started — its probes and its runs alike:
//! the identity variables every run gets, the cell's environment, and the
//! probes run through that same launch path by the executor.

use std::collections::BTreeMap;
use std::time::Duration;

use super::SessionSpec;
use crate::catalog::Cell;
use crate::error::{Error, Result};
use crate::exec::launch::{ChildLimits, Launch};
use crate::exec::result::Stop;
use crate::exec::{ProbeAnswer, ProbeCall};
use crate::perturb::{self, Prepared};
use crate::record::CellRecord;

/// How long a probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);
/// The variable that holds a run's id.
pub(super) const RUN_ID_VAR: &str = "FLAKELAB_RUN_ID";
/// The variable that holds a run's seed.
pub(super) const SEED_VAR: &str = "FLAKELAB_SEED";

/// The variables every run gets, identically named in every cell.
pub(super) fn identity_env(run_id: &str, seed: u64, cell: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("FLAKELAB".to_string(), "1".to_string()),
        (RUN_ID_VAR.to_string(), run_id.to_string()),
        (SEED_VAR.to_string(), seed.to_string()),
        ("FLAKELAB_CELL".to_string(), cell.to_string()),
    ])
}

pub(super) fn launch_for(
    settings: &SessionSpec,
    prepared: &Prepared,
    cell: &str,
    argv: Vec<String>,
    identity: BTreeMap<String, String>,
    extra: &BTreeMap<String, String>,
) -> Launch {
    let mut env_set = identity;
    env_set.extend(prepared.set.iter().map(|(k, v)| (k.clone(), v.clone())));
    env_set.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    launch_with(prepared, cell, argv, settings.dir.clone(), env_set)
}

/// The launch of `argv` in `cwd` in `cell`, with every variable it sets.
/// The executor is told the cell (whose runs share a network namespace) and
/// the preload to clean up after as fields, not through the variables.
pub(super) fn launch_with(
    prepared: &Prepared,
    cell: &str,
    argv: Vec<String>,
    cwd: std::path::PathBuf,
    env_set: BTreeMap<String, String>,
) -> Launch {
    Launch {
        argv,
        cwd,
        env_set,
        env_unset: prepared.unset.clone(),
        isolation: prepared.isolation.clone(),
        netns_cell: prepared.isolation.netns.then(|| cell.to_string()),
        preload_cleanup: prepared.preload_cleanup,
        clock_record: prepared.clock_record,
    }
}

/// Runs every probe of a cell through the cell's launch path.
pub(super) async fn probe_cell(
    settings: &SessionSpec,
    session: &str,
    index: usize,
    cell: &Cell,
    prepared: &Prepared,
    stop: &tokio::sync::watch::Receiver<Stop>,
) -> Result<CellRecord> {
    let mut record = CellRecord {
        name: cell.name.clone(),
        perturbations: cell.recorded(&settings.redaction),
        applied: true,
        reason: None,
        probes: Vec::new(),
        sham_of: settings.shams.of.get(&cell.name).cloned(),
        sham: settings.shams.by_cell.get(&cell.name).cloned(),
        notes: prepared.notes.clone(),
    };
    if let Some(reason) = &prepared.not_applicable {
        record.applied = false;
        record.reason = Some(reason.clone());
        return Ok(record);
    }
    for (i, probe) in prepared.probes.iter().enumerate() {
        let marker = format!("{session}.probe{index}.{i}");
        let launch = launch_for(
            settings,
            prepared,
            &cell.name,
            probe.argv.clone(),
            identity_env(&marker, 0, &cell.name),
            &BTreeMap::new(),
        );
        let log = tempfile::NamedTempFile::new().map_err(|e| {
            Error::harness(
                format!("cannot create a temporary file for a probe: {e}"),
                "check that $TMPDIR is writable",
            )
        })?;
        let limits = ChildLimits {
            timeout: Some(PROBE_TIMEOUT),
            log_head: 64 << 10,
            log_tail: 64 << 10,
            ..settings.limits
        };
        let busy_probe = matches!(probe.expect, perturb::Expect::Stress);
        let call = ProbeCall {
            cell: &cell.name,
            perturbation: &probe.perturbation,
            launch: &launch,
            limits,
            log: log.path(),
            marker: &marker,
            stress: prepared.stress.as_ref().filter(|_| busy_probe),
        };
        let judged = match settings.executor.probe(call, stop.clone()).await {
            ProbeAnswer::Ran { result, measured } => {
                let seen = perturb::probe::Observed {
                    real_now: jiff::Timestamp::now().as_second(),
                    cpu: measured.cpu,
                };
                let output = std::fs::read_to_string(log.path()).unwrap_or_default();
                perturb::probe::judge(probe, &result.end, &output, &seen)
            }
            ProbeAnswer::Decided(answer) => answer,
        };
        match judged {
            Ok(fact) => record.probes.push(fact),
            Err(reason) => {
                record.applied = false;
                record.reason = Some(reason);
                break;
            }
        }
    }
    Ok(record)
}
