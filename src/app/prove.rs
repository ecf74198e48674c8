//! `flakelab scan --prove`: wiring only. Runs `design::prove` on the
//! scan's findings, printing each session's line as it starts.

use std::path::Path;

use crate::cli::ScanArgs;
use crate::design::prove::{self, Progress, Prove};
use crate::error::Result;
use crate::scan::ScanReport;

/// Proves `scan`'s findings in place; returns whether a stop signal cut
/// it short.
pub(super) async fn prove(
    ctx: &super::Ctx,
    root: &Path,
    args: &ScanArgs,
    scan: &mut ScanReport,
) -> Result<bool> {
    let how = Prove {
        root: root.to_path_buf(),
        store: args.store.clone(),
        runs: args.runs,
        controls: args.controls,
    };
    let stop = super::start_watching()?;
    let mut progress =
        |p: Progress<'_>| eprintln!("flakelab: {}, {} run(s) per arm", p.what, p.runs);
    prove::prove(&how, scan, &ctx.executor, &stop, &mut progress).await
}
