//! The files a culprit left, for runners without a state plugin: flakelab
//! lists the project's files (size, and a digest of the content of those
//! written since the state runs began) after a run of the victim alone and
//! after one of the culprits then the victim, and names
//! what the culprits' run created, deleted or modified as
//! [`StateChange`]s of kind `file` (the same lines the pytest plugin
//! writes). Nothing is run here; reading the tree is all.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

use super::state::StateChange;

/// Folders never listed: version control, build output, dependencies,
/// caches (a run rewrites them whatever the tests do).
const SKIP_DIRS: &[&str] = &[
    ".git",
    ".hg",
    ".flakelab",
    "target",
    "node_modules",
    "__pycache__",
    ".pytest_cache",
    ".venv",
    "venv",
    ".tox",
    ".mypy_cache",
];

/// Files listed at most (a bigger tree is cut, and the note says so).
pub const MAX_FILES: usize = 20_000;
/// Folders deep at most.
const MAX_DEPTH: usize = 64;
/// Files up to this size are told apart by their content, bigger ones by
/// their modification time.
const DIGEST_LIMIT: u64 = 1 << 20;
/// Files modified this long before `since` are digested too (a file
/// system's clock may lag the system's by a tick).
const MARGIN: Duration = Duration::from_secs(2);

/// What one file was: its size and a digest of its content when it was
/// written since the state runs began (a file rewritten with the same
/// content is no change), else its modification time; a link's target.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    size: u64,
    seen: String,
}

/// The project's files at one moment, by path relative to its root.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tree {
    files: BTreeMap<PathBuf, Entry>,
    /// The listing stopped at [`MAX_FILES`].
    pub cut: bool,
}

/// Lists the files under `root` (links not followed), leaving out the
/// [`SKIP_DIRS`] and every path in `skip` (the store); the content of
/// those modified since `since` is digested (the others are told by their
/// modification time: an untouched file reads the same in every listing).
pub fn snapshot(root: &Path, skip: &[PathBuf], since: SystemTime) -> Tree {
    let mut tree = Tree::default();
    let since = since.checked_sub(MARGIN).unwrap_or(since);
    walk(root, root, (skip, since), 0, &mut tree);
    tree
}

fn walk(root: &Path, dir: &Path, how: (&[PathBuf], SystemTime), depth: usize, tree: &mut Tree) {
    let (skip, since) = how;
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = read.filter_map(|e| e.ok()).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        if tree.files.len() >= MAX_FILES {
            tree.cut = true;
            return;
        }
        let path = e.path();
        if skip.iter().any(|s| path.starts_with(s)) {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            let name = e.file_name();
            if depth < MAX_DEPTH && !SKIP_DIRS.iter().any(|d| name == *d) {
                walk(root, &path, how, depth + 1, tree);
            }
            continue;
        }
        let seen = if meta.file_type().is_symlink() {
            std::fs::read_link(&path)
                .map(|t| format!("-> {}", t.display()))
                .unwrap_or_default()
        } else {
            let modified = meta.modified().ok();
            if meta.len() <= DIGEST_LIMIT && modified.is_none_or(|m| m >= since) {
                digest(&path).unwrap_or_default()
            } else {
                format!("{modified:?}")
            }
        };
        let rel = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
        tree.files.insert(
            rel,
            Entry {
                size: meta.len(),
                seen,
            },
        );
    }
}

fn digest(path: &Path) -> Option<String> {
    let mut f = std::fs::File::open(path).ok()?;
    let mut bytes = Vec::new();
    f.by_ref()
        .take(DIGEST_LIMIT + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(format!("{:x}", Sha256::digest(&bytes)))
}

/// What `after` holds that `before` did not: one change per file created,
/// deleted or modified, said of `test` in `role`; `victim_reads` where a
/// failure text names the file.
pub fn findings(
    before: &Tree,
    after: &Tree,
    role: &str,
    test: &str,
    failures: &[&str],
) -> Vec<StateChange> {
    let paths: std::collections::BTreeSet<&PathBuf> =
        before.files.keys().chain(after.files.keys()).collect();
    let mut out = Vec::new();
    for p in paths {
        let (x, y) = (before.files.get(p), after.files.get(p));
        if x == y {
            continue;
        }
        let verb = match (x, y) {
            (None, _) => "creates",
            (_, None) => "deletes",
            _ => "modifies",
        };
        let size = |e: Option<&Entry>| match e {
            None => "absent".to_string(),
            Some(e) => format!("{} bytes", e.size),
        };
        let shown = p.display().to_string();
        let key = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| shown.clone());
        let reads = key.chars().count() >= 3 && failures.iter().any(|f| f.contains(key.as_str()));
        out.push(StateChange {
            role: role.to_string(),
            test: test.to_string(),
            kind: "file".into(),
            target: format!("file '{shown}'"),
            key,
            verb: verb.into(),
            before: size(x),
            after: size(y),
            victim_reads: reads,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn created_deleted_and_modified_files_are_named_and_the_rest_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "scratch/keep.txt", "same");
        write(root, "scratch/gone.txt", "x");
        write(root, "scratch/edit.txt", "abc");
        write(root, "node_modules/dep.js", "1");
        write(root, "store/runs.jsonl", "1");
        let store = root.join("store");
        let since = SystemTime::now();
        let before = snapshot(root, std::slice::from_ref(&store), since);
        // Rewritten with the same content: not a change.
        write(root, "scratch/keep.txt", "same");
        std::fs::remove_file(root.join("scratch/gone.txt")).unwrap();
        write(root, "scratch/edit.txt", "xyz");
        write(root, "scratch/stale.lock", "pid 1");
        write(root, "node_modules/dep.js", "2");
        write(root, "store/runs.jsonl", "2");
        let after = snapshot(root, &[store], since);
        assert!(!after.cut);
        let found = findings(
            &before,
            &after,
            "polluter",
            "t::p",
            &["error: stale.lock exists"],
        );
        let lines: Vec<String> = found.iter().map(|c| c.line("t::v")).collect();
        assert_eq!(
            lines,
            [
                "polluter t::p modifies file 'scratch/edit.txt' (3 bytes -> 3 bytes)",
                "polluter t::p deletes file 'scratch/gone.txt' (1 bytes -> absent)",
                "polluter t::p creates file 'scratch/stale.lock' (absent -> 5 bytes); victim t::v reads it",
            ]
        );
        assert!(found.iter().all(|c| c.kind == "file"));
        assert!(findings(&after, &after, "polluter", "t::p", &[]).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn links_are_listed_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        write(&root, "a.txt", "a");
        let out = dir.path().join("outside");
        write(&out, "big.txt", "b");
        std::os::unix::fs::symlink(&out, root.join("link")).unwrap();
        let tree = snapshot(&root, &[], SystemTime::now());
        let names: Vec<String> = tree.files.keys().map(|p| p.display().to_string()).collect();
        assert_eq!(names, ["a.txt", "link"]);
    }
}
