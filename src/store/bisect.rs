//! The store's part of `flakelab bisect`: its results (`bisects.jsonl`,
//! schema [`crate::bisect::BISECT_SCHEMA`]), the ordered-selection plugin it
//! writes once, and each ordered run's list of tests
//! (`bisect/<id>/order-<step>.txt`).

use std::fs;
use std::path::PathBuf;

use super::{append_line, read_lines, Keyed, Store, HINT_WRITE};
use crate::bisect::BisectRecord;
use crate::error::{Error, Result};

/// The bisections' results, one JSON line each.
pub const BISECTS_FILE: &str = "bisects.jsonl";
/// Where bisect's plugin and its ordered runs' lists are kept.
pub const BISECT_DIR: &str = "bisect";

impl Keyed for BisectRecord {
    fn key(&self) -> std::borrow::Cow<'_, str> {
        std::borrow::Cow::Borrowed(&self.id)
    }
}

impl Store {
    /// Appends one bisection's result to `bisects.jsonl` and flushes it.
    pub fn append_bisect(&self, record: &BisectRecord) -> Result<()> {
        append_line(&self.root.join(BISECTS_FILE), record)
    }

    /// The bisections that started from a run of `session`, oldest first;
    /// a stopped one that a later one resumed is left out (the later one
    /// holds its runs).
    pub fn bisects_of(&self, session: &str) -> Result<Vec<BisectRecord>> {
        let (found, _) = read_lines(&self.root.join(BISECTS_FILE), |r: &BisectRecord| {
            r.session == session
        })?;
        let resumed: std::collections::HashSet<String> = found
            .iter()
            .filter_map(|r| r.resumed_from.clone())
            .collect();
        Ok(found
            .into_iter()
            .filter(|r| !resumed.contains(&r.id))
            .collect())
    }

    /// The list of tests an ordered run of a bisection ran, read back from
    /// the file its command names (a word holding the store's `bisect/`
    /// path); `None` when the command names none or it is gone.
    pub fn bisect_order_in(&self, command: &[String]) -> Option<Vec<String>> {
        let dir = self.root.join(BISECT_DIR).display().to_string();
        let file = command
            .iter()
            .find_map(|w| w.find(&dir).map(|at| w[at..].to_string()))?;
        let text = fs::read_to_string(file).ok()?;
        Some(
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(str::to_string)
                .collect(),
        )
    }

    /// Where the ordering plugin writes one state run's snapshots
    /// (`bisect/<id>/state-<step>.jsonl`, any earlier one removed).
    pub fn bisect_state_file(&self, bisect: &str, step: u32) -> Result<PathBuf> {
        let dir = self.root.join(BISECT_DIR).join(bisect);
        fs::create_dir_all(&dir).map_err(|e| Error::store_io(&dir, &e, HINT_WRITE))?;
        let file = dir.join(format!("state-{step:04}.jsonl"));
        let _ = fs::remove_file(&file);
        Ok(file)
    }

    /// What a state run's plugin wrote (empty when it wrote nothing).
    pub fn read_bisect_state(&self, file: &std::path::Path) -> String {
        fs::read_to_string(file).unwrap_or_default()
    }

    /// Writes the pytest plugin of ordered runs; returns the directory to
    /// put on `PYTHONPATH`.
    pub fn write_bisect_plugin(&self) -> Result<PathBuf> {
        let dir = self.root.join(BISECT_DIR).join("plugin");
        let file = dir.join(format!(
            "{}.py",
            crate::catalog::recipe::ordered::PYTEST_PLUGIN_MODULE
        ));
        fs::create_dir_all(&dir).map_err(|e| Error::store_io(&dir, &e, HINT_WRITE))?;
        fs::write(&file, crate::bisect::PYTEST_PLUGIN)
            .map_err(|e| Error::store_io(&file, &e, HINT_WRITE))?;
        Ok(dir)
    }

    /// Writes the list of tests of one ordered run (one id a line); returns
    /// its path.
    pub fn write_bisect_order(&self, bisect: &str, step: u32, ids: &[String]) -> Result<PathBuf> {
        let dir = self.root.join(BISECT_DIR).join(bisect);
        fs::create_dir_all(&dir).map_err(|e| Error::store_io(&dir, &e, HINT_WRITE))?;
        let file = dir.join(format!("order-{step:04}.txt"));
        let mut text = ids.join("\n");
        text.push('\n');
        fs::write(&file, text).map_err(|e| Error::store_io(&file, &e, HINT_WRITE))?;
        Ok(file)
    }
}
