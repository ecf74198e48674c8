//! `flakelab merge STORE... [--into DIR]`: stores (directories, or `.tar` /
//! `.tar.gz` archives of one, as CI artifacts come) merged into one
//! (`crate::context::shard::merge`), and what the merge did printed.

use std::path::PathBuf;

use crate::cli::MergeArgs;
use crate::context::shard;
use crate::error::{Result, EXIT_OK};
use crate::store::foreign::Limits;

pub(super) fn merge_cmd(args: &MergeArgs) -> Result<i32> {
    let into = match &args.into {
        Some(d) => d.clone(),
        None => PathBuf::from(crate::store::DEFAULT_ROOT),
    };
    let limits = Limits {
        bytes: args.unpack_limit,
        entries: args.unpack_entries,
    };
    let merged = shard::merge::merge(&args.stores, &into, limits)?;
    println!(
        "merged {} store(s) into {}: {} session(s) ({} new or joined), {} run(s) ({} new)",
        merged.inputs,
        into.display(),
        merged.sessions.len(),
        merged.new_sessions,
        merged.runs,
        merged.new_runs
    );
    for s in &merged.sessions {
        let Some(set) = &s.shards else { continue };
        let present: Vec<String> = set.present.iter().map(|p| p.index.to_string()).collect();
        println!(
            "session {}: {} of {} shards present ({})",
            s.id,
            set.present.len(),
            set.total,
            present.join(", ")
        );
        for index in (1..=set.total).filter(|i| set.present.iter().all(|p| p.index != *i)) {
            let missing = shard::MissingShard {
                index,
                planned_runs: shard::planned_runs(
                    index,
                    set.total,
                    s.plan.runs_per_cell,
                    s.plan.cells.len(),
                ),
            };
            println!("  {}", shard::missing_text(&missing, set.total));
        }
    }
    if !merged.existed && merged.sessions.is_empty() {
        eprintln!("flakelab: the stores held no session");
    }
    Ok(EXIT_OK)
}
