//! The store's part of `flakelab bisect`: where its results
//! (`bisects.jsonl`) and the files its ordered runs need are kept. The
//! record type and its reading are the bisect module's, through
//! [`super::DesignRecord`].

use std::path::{Path, PathBuf};

use super::Store;
use crate::error::Result;

/// The bisections' results, one JSON line each.
pub const BISECTS_FILE: &str = "bisects.jsonl";
/// Where bisect's plugin and its ordered runs' lists are kept.
pub const BISECT_DIR: &str = "bisect";

impl Store {
    /// Writes the pytest plugin of ordered runs (`module`.py holding
    /// `source`); returns the directory to put on `PYTHONPATH`.
    pub fn write_order_plugin(&self, module: &str, source: &str) -> Result<PathBuf> {
        let dir = Path::new(BISECT_DIR).join("plugin");
        let file = self.write_support_file(&dir, &format!("{module}.py"), source)?;
        Ok(file.parent().map(Path::to_path_buf).unwrap_or_default())
    }

    /// Writes the list of tests of one ordered run (one id a line); returns
    /// its path.
    pub fn write_bisect_order(&self, bisect: &str, step: u32, ids: &[String]) -> Result<PathBuf> {
        let mut text = ids.join("\n");
        text.push('\n');
        self.write_support_file(
            &Path::new(BISECT_DIR).join(bisect),
            &format!("order-{step:04}.txt"),
            &text,
        )
    }
}
