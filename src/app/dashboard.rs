//! `flakelab history --dashboard`: the history analysed over each commit
//! window of `report::dashboard::WINDOWS`, with the quarantine ledger, as
//! one evergreen document (`report::dashboard` builds and renders it).

use std::path::Path;

use crate::cli::{Format, HistoryArgs};
use crate::error::{Error, Result, EXIT_OK};
use crate::history::analyse::{self, Options};
use crate::history::ledger::LEDGER_FILE;
use crate::report::dashboard::{self, WINDOWS};
use crate::store::Store;

pub(super) fn dashboard_cmd(args: &HistoryArgs) -> Result<i32> {
    if args.analysis.commits.is_some() {
        return Err(Error::usage(
            "--dashboard shows its own commit windows (10, 50, all): --commits does not apply",
            "drop --commits",
        ));
    }
    let store = Store::at(&super::ingest::history_store(&args.store.store));
    let (fold, stats) = super::history::fold(&store)?;
    super::history::warn_skipped(&stats);
    let windows: Vec<_> = WINDOWS
        .iter()
        .map(|w| {
            let opts = Options {
                min_runs: args.analysis.min_runs,
                commits: *w,
                ..Options::default()
            };
            analyse::analyse(&fold, &opts)
        })
        .collect();
    let ledger = super::ledger::entries(Path::new(LEDGER_FILE))?;
    let today = jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date();
    let board = dashboard::build(&windows, &fold, &ledger, today);
    let text = match args.format {
        Format::Markdown | Format::Table => dashboard::markdown(&board),
        Format::Json => dashboard::json(&board),
        Format::Html | Format::Github => {
            return Err(Error::usage(
                "--dashboard is Markdown (`--format markdown`) or JSON (`--format json`)",
                "e.g. `flakelab history --format markdown --dashboard`",
            ))
        }
    };
    super::print_text(&text);
    Ok(EXIT_OK)
}
