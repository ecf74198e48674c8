//! `flakelab compact`: the history folded into per (test, context, commit)
//! counts, with the keys of the folded reports kept so a report ingested
//! again still counts once. Every figure `flakelab history` prints is the
//! same before and after.

use crate::cli::CompactArgs;
use crate::error::{Result, EXIT_OK};
use crate::history::{FoldedRecord, FOLDED_SCHEMA};
use crate::store::Store;

pub(super) fn compact_cmd(args: &CompactArgs) -> Result<i32> {
    let store = Store::at(&super::ingest::history_store(&args.store.store));
    if !store.history_path().is_file() {
        super::print_text("compact: no history to compact\n");
        return Ok(EXIT_OK);
    }
    let before = std::fs::metadata(store.history_path()).map_or(0, |m| m.len());
    let (fold, stats) = super::history::fold(&store)?;
    super::history::warn_skipped(&stats);
    let counts = fold.records();
    let folded = FoldedRecord {
        schema: FOLDED_SCHEMA.to_string(),
        keys: fold.keys.clone(),
        infra: fold.infra.clone(),
    };
    store.replace_history(&folded, &counts)?;
    let after = std::fs::metadata(store.history_path()).map_or(0, |m| m.len());
    super::print_text(&format!(
        "compact: {} report(s) folded into {} count line(s); {before} bytes -> {after} bytes\n",
        folded.keys.len(),
        counts.len()
    ));
    Ok(EXIT_OK)
}
