//! The store's part of `flakelab bisect`: where its results
//! (`bisects.jsonl`) and the files its ordered runs need are kept. The
//! record type and its reading are the bisect module's, through
//! [`super::DesignRecord`].

use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use super::{Store, HINT_WRITE};
use crate::error::{Error, Result};

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

    /// The list of tests an ordered run of a bisection ran, read back from
    /// the file its command names (a word holding the store's `bisect/`
    /// path); `None` when the command names none or it is gone. Read
    /// without following a link, as every store read is.
    pub fn bisect_order_in(&self, command: &[String]) -> Option<Vec<String>> {
        let dir = self.root.join(BISECT_DIR).display().to_string();
        let file = command
            .iter()
            .find_map(|w| w.find(&dir).map(|at| w[at..].to_string()))?;
        let text = read_text(Path::new(&file))?;
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
    pub fn read_bisect_state(&self, file: &Path) -> String {
        read_text(file).unwrap_or_default()
    }
}

/// A regular file's text, opened without following a link.
fn read_text(path: &Path) -> Option<String> {
    let mut text = String::new();
    super::open::read(path)
        .ok()?
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}
