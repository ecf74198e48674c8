//! Test builders for records: the one place a test gets a whole run record
//! without spelling every field (tests set what they are about).

use std::path::PathBuf;

use super::{Outcome, ProcessEnd, RunRecord, RUN_SCHEMA_V1};

/// A run of `session` at `index` in `cell` that passed (exited 0), with
/// nothing else recorded: no perturbation, replicate 0, seed 1.
pub(crate) fn run(session: &str, index: usize, cell: &str) -> RunRecord {
    let mut r: RunRecord = serde_json::from_value(serde_json::json!({
        "schema": RUN_SCHEMA_V1, "id": "", "session": "", "index": 0, "cell": "",
        "perturbations": [], "replicate": 0, "seed": 1, "started_at": "", "duration_s": 0.0,
        "outcome": "pass", "end": {"how": "exited", "code": 0}, "exit_code": 0, "signal": null,
        "signature_match": null, "reason": null, "log": null, "output_bytes": 0,
        "output_dropped": 0, "argv": [], "cwd": "/", "env": {"set": {}, "unset": []},
        "repro": "", "stragglers": 0, "warnings": []
    }))
    .expect("a whole run record");
    r.id = format!("{session}.{index:05}");
    r.session = session.to_string();
    r.index = index;
    r.cell = cell.to_string();
    r
}

/// `r` as a run that failed: exited 1.
pub(crate) fn failed(mut r: RunRecord) -> RunRecord {
    r.outcome = Outcome::Fail;
    r.end = ProcessEnd::Exited { code: 1 };
    r.exit_code = Some(1);
    r
}

/// `r` run in `cwd`.
pub(crate) fn in_dir(mut r: RunRecord, cwd: &str) -> RunRecord {
    r.cwd = PathBuf::from(cwd);
    r
}
