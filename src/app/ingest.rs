//! `flakelab ingest REPORT...`: the context flags and the detected
//! context, then `history::ingest` records the reports; prints what it did.

use std::path::PathBuf;

use crate::cli::{ContextFlags, IngestArgs};
use crate::error::{Error, Result, EXIT_OK, EXIT_USAGE};
use crate::history::context::{self, Overrides};
use crate::history::ingest::ingest_reports;
use crate::redact::Redaction;
use crate::report::text::one_line;
use crate::store::Store;

pub(super) fn history_store(dir: &Option<PathBuf>) -> PathBuf {
    dir.clone()
        .unwrap_or_else(|| PathBuf::from(crate::store::DEFAULT_ROOT))
}

pub(super) fn overrides(f: &ContextFlags) -> Result<Overrides> {
    let extra = f
        .context
        .iter()
        .map(|s| context::parse_pair(s))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| Error::usage(e, "see `flakelab ingest --help`"))?;
    Ok(Overrides {
        no_detect: f.no_detect,
        branch: f.branch.clone(),
        commit: f.commit.clone(),
        os: f.os.clone(),
        arch: f.arch.clone(),
        runtime: f.runtime.clone(),
        runtime_version: f.runtime_version.clone(),
        runner: f.runner.clone(),
        matrix: f.matrix.clone(),
        extra,
        provider: f.provider.clone(),
        run: f.run_id.clone(),
        job: f.job.clone(),
        attempt: f.attempt.clone(),
        run_url: f
            .run_url
            .as_deref()
            .map(context::run_url)
            .transpose()
            .map_err(|e| {
                Error::usage(
                    format!("--run-url {e}"),
                    "give the CI run's page, e.g. --run-url https://github.com/OWNER/REPO/actions/runs/ID, or leave it out",
                )
            })?,
    })
}

pub(super) fn ingest_cmd(args: &IngestArgs) -> Result<i32> {
    let flags = overrides(&args.context)?;
    let env = |k: &str| std::env::var(k).ok();
    let mut recorded =
        context::detect(&env, (std::env::consts::OS, std::env::consts::ARCH), &flags);
    // The day its observations start to count toward a release.
    recorded.provenance.ingested = Some(
        jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string(),
    );
    let store = Store::open(&history_store(&args.store.store))?;
    // Masked as a run's records are: the project's extra names, and the
    // credentials in flakelab's own environment wherever they appear.
    let dir = std::env::current_dir()
        .map_err(|e| Error::store(".", e, "run flakelab from a directory that exists"))?;
    let redaction =
        Redaction::new(&crate::context::config::redact_names(&dir)?).with_own_environment();
    let summary = ingest_reports(&store, &args.reports, &recorded, &redaction)?;
    let line = format!(
        "ingested {} report(s), {} observation(s), context {}{}; {} already recorded (the same execution)",
        summary.recorded,
        summary.observations,
        crate::history::context_name(&recorded.context),
        recorded
            .commit
            .as_deref()
            .map(|c| format!(", commit {c}"))
            .unwrap_or_default(),
        summary.duplicates
    );
    super::print_text(&format!("{}\n", one_line(&line)));
    if recorded.commit.is_none() && summary.recorded > 0 {
        eprintln!(
            "warning: no commit recorded for these reports: a test that passed in one and failed in another cannot be placed on one commit, so history never counts it as proven nondeterministic and `check` never fails on it; give the commit with --commit SHA (read by itself in CI)"
        );
    }
    for u in &summary.unreadable {
        eprintln!("warning: {}", one_line(u));
    }
    for w in &summary.indistinct_legs {
        eprintln!("warning: {}", one_line(w));
    }
    if summary.unreadable.is_empty() {
        Ok(EXIT_OK)
    } else {
        eprintln!(
            "hint: {} report(s) could not be read: none of their tests is counted (each is recorded as runner-infrastructure evidence); fix or regenerate them and ingest again (the others are recorded; ingesting them again changes nothing)",
            summary.unreadable.len()
        );
        Ok(EXIT_USAGE)
    }
}
