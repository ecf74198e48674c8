//! The flags of `flakelab runs`, kept beside `cli.rs` so its own list
//! stays short.

use clap::{Args, ValueEnum};

use super::StoreArgs;

/// `flakelab runs`.
#[derive(Debug, Clone, Args)]
pub struct RunsArgs {
    /// Session id or unique prefix [default: the latest].
    pub session: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = RunsFormat::Jsonl)]
    pub format: RunsFormat,
    /// Where the store is.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `flakelab runs --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RunsFormat {
    /// One whole run record per line (`flakelab.run/1`, JSON Lines).
    Jsonl,
    /// One row per (run, test) with a header line (RFC 4180 quoting); a
    /// run without per-test data is one row with the test columns empty.
    Csv,
}

pub(super) const RUNS_AFTER_HELP: &str = "\
Streams: one run is read, printed and dropped at a time, so a session of a
million runs needs no more memory than one.

JSON Lines: each run whole, as `flakelab.run/1` (the store keeps it in the
compact `flakelab.run/2` form; this prints it expanded: argv, environment,
repro line, every test).

CSV columns: session, run, index, cell, replicate, seed, started_at,
duration_s, run_outcome, exit_code, test, family, test_outcome
(pass, fail, error, skip), passed_on_rerun, retries, signature_match,
message.

The report's per-test k of N in a cell counts rows whose run_outcome is
pass or fail: N those whose test_outcome is pass, fail or error, k those
whose test_outcome is fail or error (with --signature, only those whose
signature_match is true). For example, with SQLite:

  flakelab runs --format csv > runs.csv
  sqlite3 -csv :memory: '.import runs.csv runs' \\
    \"SELECT cell, test, SUM(test_outcome IN ('fail','error')) AS k, COUNT(*) AS n
     FROM runs WHERE run_outcome IN ('pass','fail')
       AND test_outcome IN ('pass','fail','error')
     GROUP BY cell, test ORDER BY k DESC LIMIT 5\"";
