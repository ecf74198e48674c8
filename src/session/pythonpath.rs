//! A derived session's Python plugin directory: put first on every cell's
//! `PYTHONPATH` (the screen's and bisect's ordered runs load their pytest
//! plugin from the store).

use super::SessionSpec;

impl SessionSpec {
    /// Puts `dir` first on every cell's `PYTHONPATH` (the cell's own value,
    /// else the inherited one, after it).
    pub fn put_on_pythonpath(&mut self, dir: &std::path::Path) {
        let inherited = std::env::var("PYTHONPATH").ok();
        for (_, prepared) in &mut self.cells {
            let prior = prepared
                .set
                .get("PYTHONPATH")
                .cloned()
                .or(inherited.clone());
            let path = match prior.filter(|p| !p.is_empty()) {
                Some(p) => format!("{}:{p}", dir.display()),
                None => dir.display().to_string(),
            };
            prepared.set.insert("PYTHONPATH".into(), path);
        }
    }
}
