//! `flakelab history`: the store's history read (deduplicated), folded and
//! analysed, then rendered. [`load`] is what `check` and `quarantine` read
//! history through too.

use crate::cli::{AnalysisFlags, Format, HistoryArgs};
use crate::error::{Result, EXIT_OK};
use crate::history::analyse::{self, Analysis, Fold, Options};
use crate::store::history::HistoryStats;
use crate::store::Store;

/// The store's history, folded.
pub(super) fn fold(store: &Store) -> Result<(Fold, HistoryStats)> {
    let folded = store.folded_keys()?;
    let mut fold = Fold::new();
    let stats = store.each_history(&folded, |item| fold.add(item))?;
    // Folded keys stay folded (a later compaction keeps them).
    let mut all: Vec<String> = folded.into_iter().collect();
    all.sort();
    all.extend(std::mem::take(&mut fold.keys));
    fold.keys = all;
    Ok((fold, stats))
}

/// The analysis `flags` ask for.
pub(super) fn load(store: &Store, flags: &AnalysisFlags) -> Result<(Analysis, HistoryStats)> {
    let (fold, stats) = fold(store)?;
    let opts = Options {
        min_runs: flags.min_runs,
        commits: flags.commits.map(|c| c as usize),
        ..Options::default()
    };
    Ok((analyse::analyse(&fold, &opts), stats))
}

/// What the store's CI history says beside `report`'s session (the
/// default analysis), or `None` when the store holds no history.
pub(super) fn beside(
    store: &Store,
    report: &crate::report::Report,
) -> Result<Option<crate::report::beside::CiHistory>> {
    if !store.history_path().is_file() {
        return Ok(None);
    }
    let (fold, stats) = fold(store)?;
    warn_skipped(&stats);
    let analysis = analyse::analyse(&fold, &Options::default());
    let infra = crate::report::history::infra_lines(&analysis);
    Ok(Some(crate::report::beside::pair(&analysis, report, infra)))
}

/// A note on stderr for what the read skipped.
pub(super) fn warn_skipped(stats: &HistoryStats) {
    if stats.truncated_reports > 0 {
        eprintln!(
            "warning: {} report(s) in the history were cut short and are not counted: ingest them again",
            stats.truncated_reports
        );
    }
    if stats.skipped_lines > 0 {
        eprintln!(
            "warning: {} unreadable line(s) in the history were skipped",
            stats.skipped_lines
        );
    }
}

pub(super) fn history_cmd(args: &HistoryArgs) -> Result<i32> {
    let store = Store::at(&super::ingest::history_store(&args.store.store));
    let (analysis, stats) = load(&store, &args.analysis)?;
    warn_skipped(&stats);
    for w in &analysis.warnings {
        eprintln!("warning: {}", crate::report::text::one_line(w));
    }
    let text = match args.format {
        Format::Table => crate::report::history::table(&analysis),
        Format::Markdown => crate::report::history::markdown(&analysis),
        Format::Html | Format::Github => {
            return Err(crate::error::Error::usage(
                format!(
                    "`--format {}` is not available for `flakelab history`",
                    if args.format == Format::Html {
                        "html"
                    } else {
                        "github"
                    }
                ),
                "use --format table, markdown or json",
            ))
        }
        Format::Json => {
            let mut v = serde_json::to_value(&analysis).unwrap_or_default();
            v["read"] = serde_json::to_value(stats).unwrap_or_default();
            let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
            s.push('\n');
            s
        }
    };
    super::print_text(&text);
    Ok(EXIT_OK)
}
