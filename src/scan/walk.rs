//! Which files a scan reads: source files of the parsed languages under
//! the root, never vendored, generated or build trees, nor a nested git
//! worktree or repository (a second checkout whose findings would name
//! another branch's copy of a file).

use std::path::{Path, PathBuf};

use super::syntax::Lang;

/// Directories never scanned, by name, and why.
const SKIP_DIRS: &[(&str, &str)] = &[
    (".git", "git metadata"),
    ("node_modules", "vendored"),
    ("vendor", "vendored"),
    ("third_party", "vendored"),
    (".venv", "vendored"),
    ("venv", "vendored"),
    ("site-packages", "vendored"),
    ("target", "build output"),
    ("dist", "build output"),
    ("build", "build output"),
    ("__pycache__", "build output"),
    (".flakelab", "flakelab store"),
    (".tox", "vendored"),
];

/// A tree skipped as a whole, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Skipped {
    /// The path relative to the root, with `/`.
    pub path: String,
    /// Why: vendored, build output, generated, nested worktree, excluded.
    pub reason: String,
}

/// The files to scan, and what was skipped.
#[derive(Debug, Default)]
pub struct Walk {
    /// (relative path with `/`, absolute path, language), sorted by path.
    pub files: Vec<(String, PathBuf, Lang)>,
    /// Skipped trees and files.
    pub skipped: Vec<Skipped>,
}

/// A path relative to the root, with `/` whatever the host's separator.
pub fn normalise(rel: &Path) -> String {
    let parts: Vec<String> = rel
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    parts.join("/")
}

/// Walks `root`, skipping `exclude` (paths relative to the root).
pub fn walk(root: &Path, exclude: &[String]) -> std::io::Result<Walk> {
    let mut out = Walk::default();
    let exclude: Vec<String> = exclude
        .iter()
        .map(|e| {
            super::ledger::normalise_key(e)
                .trim_end_matches('/')
                .to_string()
        })
        .collect();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&dir)?.filter_map(|e| e.ok()).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let path = e.path();
            let rel = normalise(path.strip_prefix(root).unwrap_or(&path));
            let name = e.file_name().to_string_lossy().into_owned();
            let Ok(kind) = e.file_type() else { continue };
            if exclude
                .iter()
                .any(|x| rel == *x || rel.starts_with(&format!("{x}/")))
            {
                out.skipped.push(Skipped {
                    path: rel,
                    reason: "excluded (--exclude)".into(),
                });
                continue;
            }
            if kind.is_dir() {
                if let Some((_, why)) = SKIP_DIRS.iter().find(|(n, _)| *n == name) {
                    if name != ".git" {
                        out.skipped.push(Skipped {
                            path: rel,
                            reason: (*why).into(),
                        });
                    }
                    continue;
                }
                if path.join(".git").exists() {
                    out.skipped.push(Skipped {
                        path: rel,
                        reason: "nested git worktree or repository".into(),
                    });
                    continue;
                }
                stack.push(path);
            } else if kind.is_file() {
                let Some(lang) = Lang::of(&name) else {
                    continue;
                };
                if name.ends_with(".min.js") || name.ends_with(".d.ts") || generated(&path) {
                    out.skipped.push(Skipped {
                        path: rel,
                        reason: "generated".into(),
                    });
                    continue;
                }
                out.files.push((rel, path, lang));
            }
        }
    }
    out.files.sort();
    out.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// Whether a file says it is generated in its first lines.
fn generated(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    text.lines().take(5).any(|l| {
        (l.contains("Code generated") && l.contains("DO NOT EDIT")) || l.contains("@generated")
    })
}

/// Whether a file holds tests by its runner's naming (Rust: any file, as
/// tests live beside the code).
pub fn is_test_file(rel: &str, lang: Lang) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    match lang {
        Lang::Python => {
            (name.starts_with("test_") || name.ends_with("_test.py") || name == "conftest.py")
                && name.ends_with(".py")
        }
        Lang::Go => name.ends_with("_test.go"),
        Lang::JavaScript | Lang::TypeScript => {
            name.contains(".test.") || name.contains(".spec.") || rel.contains("__tests__/")
        }
        Lang::Rust => true,
    }
}
