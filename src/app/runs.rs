//! `flakelab runs`: a stored session's runs streamed to stdout for other
//! tools (`jq`, `sqlite3 .import`, DuckDB, pandas), one run read, rendered
//! (`crate::report::runs`) and written at a time.

use std::io::{BufWriter, ErrorKind, Write};

use crate::cli::{RunsArgs, RunsFormat};
use crate::error::{Error, Result, EXIT_OK};
use crate::redact::Redaction;
use crate::report::runs;
use crate::session::subject_dir;

/// A closed stdout (`| head`) ends the output early without an error;
/// any other write error is one.
fn written(r: std::io::Result<()>) -> Result<bool> {
    match r {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(Error::harness(
            format!("cannot write the runs to stdout: {e}"),
            "check where stdout goes (a full disk?)",
        )),
    }
}

/// Stops the store's walk once stdout is closed (not an error for the user).
const CLOSED: &str = "stdout closed";

pub(super) fn runs_cmd(args: &RunsArgs) -> Result<i32> {
    let (store, _) = super::report_cmd::existing_store(&args.store)?;
    let session = store.session(args.session.as_deref())?.ok_or_else(|| {
        super::report_cmd::no_session("session", args.session.as_deref(), store.root())
    })?;
    let dir = subject_dir(args.store.dir.as_deref())?;
    let redaction =
        Redaction::new(&crate::context::config::redact_names(&dir)?).with_own_environment();
    let mut out = BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    if args.format == RunsFormat::Csv && !written(out.write_all(runs::csv_header().as_bytes()))? {
        return Ok(EXIT_OK);
    }
    let mut text = String::new();
    let walked = store.each_view(&session.id, |run| {
        text.clear();
        match args.format {
            RunsFormat::Jsonl => {
                let line = runs::json_line(run.to_record()).map_err(|e| {
                    Error::harness(format!("cannot encode run {}: {e}", run.id()), "")
                })?;
                text.push_str(&line);
            }
            RunsFormat::Csv => runs::csv_rows(run, &mut text),
        }
        match written(out.write_all(redaction.text(&text).as_bytes()))? {
            true => Ok(()),
            false => Err(Error::harness(CLOSED, "")),
        }
    });
    match walked {
        Ok(stats) => {
            written(out.flush())?;
            if stats.skipped_lines > 0 {
                eprintln!(
                    "flakelab runs: {} unreadable line(s) of the store skipped",
                    stats.skipped_lines
                );
            }
            Ok(EXIT_OK)
        }
        Err(e) if e.message() == CLOSED => Ok(EXIT_OK),
        Err(e) => Err(e),
    }
}
