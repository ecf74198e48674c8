//! `flakelab check`: the history against the committed baseline, or
//! `--write-baseline`. Exit codes are in `cli::CHECK_AFTER_HELP`.

use std::io::Write as _;

use crate::cli::CheckArgs;
use crate::error::{Error, Result, EXIT_DIFFERS, EXIT_OK};
use crate::history::check::{self, Baseline, Gate, BASELINE_SCHEMA};
use crate::report::history as render;
use crate::store::Store;

pub(super) fn check_cmd(args: &CheckArgs) -> Result<i32> {
    let store = Store::at(&super::ingest::history_store(&args.store.store));
    let (analysis, stats) = super::history::load(&store, &args.analysis)?;
    super::history::warn_skipped(&stats);
    if args.write_baseline {
        let base = check::baseline(&analysis);
        let mut text = serde_json::to_string_pretty(&base).unwrap_or_default();
        text.push('\n');
        std::fs::write(&args.baseline, text).map_err(|e| {
            Error::usage(
                format!("cannot write the baseline {}: {e}", args.baseline.display()),
                "choose a writable path with --baseline",
            )
        })?;
        super::print_text(&format!(
            "wrote {} ({} failing test/context pair(s) from {} report(s)); commit it\n",
            args.baseline.display(),
            base.entries.len(),
            stats.reports
        ));
        return Ok(EXIT_OK);
    }
    if analysis.tests.is_empty() {
        return Err(Error::usage(
            format!(
                "the history in {} is empty: nothing to check",
                store.root().display()
            ),
            "ingest the CI's JUnit reports first (flakelab ingest REPORT...)",
        ));
    }
    let text = std::fs::read_to_string(&args.baseline).map_err(|e| {
        Error::usage(
            format!("cannot read the baseline {}: {e}", args.baseline.display()),
            "create it with `flakelab check --write-baseline` and commit it, or name it with --baseline",
        )
    })?;
    let base: Baseline = serde_json::from_str(&text)
        .ok()
        .filter(|b: &Baseline| b.schema == BASELINE_SCHEMA)
        .ok_or_else(|| {
            Error::usage(
                format!(
                    "{} is not a {BASELINE_SCHEMA} baseline",
                    args.baseline.display()
                ),
                "write it again with `flakelab check --write-baseline`",
            )
        })?;
    let gate = Gate {
        min_runs: args.analysis.min_runs,
        tolerance: args.tolerance,
    };
    let verdicts = check::check(&analysis, &base, &gate);
    let mut out = render::check_text(&verdicts);
    let github = std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true");
    if args.annotations || github {
        out.push_str(&render::check_annotations(&verdicts));
    }
    super::print_text(&out);
    if let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        let summary = render::check_summary(&verdicts);
        let written = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&path)
            .and_then(|mut f| f.write_all(summary.as_bytes()));
        if let Err(e) = written {
            eprintln!(
                "warning: cannot append the step summary to {}: {e}",
                std::path::Path::new(&path).display()
            );
        }
    }
    // The quarantine ledger's expired entries fail the gate too, by owner.
    let expired = super::ledger::expired_lines()?;
    super::print_text(&expired);
    Ok(
        if verdicts.iter().any(|v| v.standing.fails()) || !expired.is_empty() {
            EXIT_DIFFERS
        } else {
            EXIT_OK
        },
    )
}
