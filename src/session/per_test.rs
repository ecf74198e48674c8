//! Where a session's per-test outcomes come from when the user named no
//! report (no `{junit}`, no `--junit`): the recipe's plugin `[junit]` when
//! its plugin is found (or when the recipe declares no way without it),
//! else the runner's own output through the recipe's `[per_test]`.

use std::path::Path;

use super::JunitSource;
use crate::catalog::recipe::{plugin_probe_argv, Recipe};
use crate::exec::executor::Executor;

/// The source for a session of `command` under `recipe` in `dir`, when the
/// user gave none: `Recipe` (the `[junit]` injection), `Runner` (the
/// `[per_test]` reading), or None when the recipe declares neither.
pub fn default_source(
    recipe: Option<&Recipe>,
    command: &[String],
    dir: &Path,
    executor: &Executor,
) -> Option<JunitSource> {
    let r = recipe?;
    match (&r.junit, &r.per_test) {
        (Some(_), Some(_)) => match plugin_probe_argv(r, command) {
            Some(probe) if !executor.plugin_found(&probe, dir) => Some(JunitSource::Runner),
            _ => Some(JunitSource::Recipe),
        },
        (Some(_), None) => Some(JunitSource::Recipe),
        (None, Some(_)) => Some(JunitSource::Runner),
        (None, None) => None,
    }
}
