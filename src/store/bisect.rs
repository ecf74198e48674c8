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

    /// The bisections that started from a run of `session`, oldest first.
    pub fn bisects_of(&self, session: &str) -> Result<Vec<BisectRecord>> {
        let (found, _) = read_lines(&self.root.join(BISECTS_FILE), |r: &BisectRecord| {
            r.session == session
        })?;
        Ok(found)
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
