//! Working copies for ladder rungs whose processes each need their own:
//! a `git worktree` at the subject's commit per copy (with the uncommitted
//! changes and untracked files carried over, so the copy is the tree the
//! user sees), or a plain copy of the directory when there is no git.
//!
//! The copies live in a temporary directory and are removed when the
//! [`WorkingCopies`] value is dropped (also after Ctrl-C, which flakelab
//! catches), including their `git worktree` registrations. Those a killed
//! flakelab left are removed by its warden, or else by the next flakelab
//! that makes copies (`exec::owned`), and their registrations pruned from
//! the repository it copies.

use crate::exec::owned;

use std::path::{Path, PathBuf};

/// The prefix of the copies' temporary directories.
const COPIES: &str = "flakelab-copies-";

/// Directory names never copied: flakelab's own store.
const NEVER_COPIED: &[&str] = &[".flakelab"];

/// A set of temporary working copies of one subject.
#[derive(Debug)]
pub struct WorkingCopies {
    root: Option<owned::OwnedDir>,
    /// The repository's top level, when the copies are worktrees.
    repo: Option<PathBuf>,
    copies: Vec<PathBuf>,
    subject: Vec<PathBuf>,
    how: String,
}

fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = crate::exec::git::output(dir, args).map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if NEVER_COPIED.iter().any(|n| name == *n) {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dst)?;
        } else if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

impl WorkingCopies {
    /// Makes `count` working copies of the subject directory `dir`.
    pub fn create(dir: &Path, count: usize) -> Result<WorkingCopies, String> {
        let root = owned::OwnedDir::new(COPIES)
            .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
        // A directory holding no tracked file (ignored, or not yet added)
        // would be missing from a worktree: it is copied instead.
        let tracked = git(dir, &["ls-files", "-z", "."]).is_ok_and(|l| !l.is_empty());
        let top = git(dir, &["rev-parse", "--show-toplevel"])
            .ok()
            .filter(|_| tracked)
            .map(|t| PathBuf::from(t.trim()));
        let mut copies = WorkingCopies {
            root: Some(root),
            repo: None,
            copies: Vec::new(),
            subject: Vec::new(),
            how: String::new(),
        };
        match top {
            Some(top) => copies.worktrees(dir, &top, count)?,
            None => {
                for i in 0..count {
                    let copy = copies.root_path().join(format!("copy-{i}"));
                    copy_tree(dir, &copy)
                        .map_err(|e| format!("cannot copy {}: {e}", dir.display()))?;
                    copies.subject.push(copy.clone());
                    copies.copies.push(copy);
                }
                copies.how = format!(
                    "{count} copies of {} (no git repository holds it)",
                    dir.display()
                );
            }
        }
        Ok(copies)
    }

    fn root_path(&self) -> PathBuf {
        self.root
            .as_ref()
            .map(|r| r.path().to_path_buf())
            .unwrap_or_default()
    }

    fn worktrees(&mut self, dir: &Path, top: &Path, count: usize) -> Result<(), String> {
        let dir = dir.canonicalize().map_err(|e| e.to_string())?;
        let top = top.canonicalize().map_err(|e| e.to_string())?;
        let rel = dir
            .strip_prefix(&top)
            .unwrap_or(Path::new(""))
            .to_path_buf();
        let head = git(&top, &["rev-parse", "HEAD"])?.trim().to_string();
        let diff = crate::exec::git::output(&top, &["diff", "HEAD", "--binary"])
            .map_err(|e| format!("cannot run git: {e}"))?
            .stdout;
        let untracked = git(&top, &["ls-files", "--others", "--exclude-standard", "-z"])?;
        let untracked: Vec<&str> = untracked
            .split('\0')
            .filter(|f| !f.is_empty())
            .filter(|f| {
                !NEVER_COPIED
                    .iter()
                    .any(|n| Path::new(f).components().any(|c| c.as_os_str() == *n))
            })
            .collect();
        self.repo = Some(top.clone());
        // Registrations of copies a killed flakelab left (swept above).
        let _ = git(&top, &["worktree", "prune"]);
        for i in 0..count {
            let copy = self.root_path().join(format!("copy-{i}"));
            let copy_text = copy.display().to_string();
            git(
                &top,
                &["worktree", "add", "--quiet", "--detach", &copy_text, &head],
            )?;
            self.copies.push(copy.clone());
            if !diff.is_empty() {
                let out = crate::exec::git::output_with_input(
                    &copy,
                    &["apply", "--binary", "--whitespace=nowarn", "-"],
                    &diff,
                )
                .map_err(|e| format!("cannot run git apply: {e}"))?;
                if !out.status.success() {
                    return Err(format!(
                        "cannot carry the uncommitted changes into a worktree: {}",
                        String::from_utf8_lossy(&out.stderr).trim()
                    ));
                }
            }
            for file in &untracked {
                let (src, dst) = (top.join(file), copy.join(file));
                if let Some(parent) = dst.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
                }
                std::fs::copy(&src, &dst)
                    .map_err(|e| format!("cannot copy untracked {file}: {e}"))?;
            }
            self.subject.push(if rel.as_os_str().is_empty() {
                copy
            } else {
                copy.join(&rel)
            });
        }
        let short = &head[..head.len().min(12)];
        let dirty = if diff.is_empty() && untracked.is_empty() {
            ""
        } else {
            " plus the uncommitted changes and untracked files"
        };
        self.how = format!("{count} git worktrees at {short}{dirty}");
        Ok(())
    }

    /// One git worktree of the repository holding `dir` per revision in
    /// `revs`, each checked out exactly at that commit (no uncommitted
    /// changes carried over). Returns the copies and the full commit ids.
    pub fn at_revisions(dir: &Path, revs: &[&str]) -> Result<(WorkingCopies, Vec<String>), String> {
        let top = git(dir, &["rev-parse", "--show-toplevel"])
            .map(|t| PathBuf::from(t.trim()))
            .map_err(|_| format!("{} is not in a git repository", dir.display()))?;
        let top = top.canonicalize().map_err(|e| e.to_string())?;
        let dir = dir.canonicalize().map_err(|e| e.to_string())?;
        let rel = dir
            .strip_prefix(&top)
            .unwrap_or(Path::new(""))
            .to_path_buf();
        let mut commits = Vec::new();
        let _ = git(&top, &["worktree", "prune"]);
        for rev in revs {
            let spec = format!("{rev}^{{commit}}");
            let commit = git(&top, &["rev-parse", "--verify", "--quiet", &spec])
                .map_err(|_| format!("`{rev}` names no commit in {}", top.display()))?;
            commits.push(commit.trim().to_string());
        }
        let root = owned::OwnedDir::new(COPIES)
            .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
        let mut copies = WorkingCopies {
            root: Some(root),
            repo: Some(top.clone()),
            copies: Vec::new(),
            subject: Vec::new(),
            how: String::new(),
        };
        for (i, commit) in commits.iter().enumerate() {
            let copy = copies.root_path().join(format!("rev-{i}"));
            let copy_text = copy.display().to_string();
            git(
                &top,
                &["worktree", "add", "--quiet", "--detach", &copy_text, commit],
            )?;
            copies.copies.push(copy.clone());
            copies.subject.push(if rel.as_os_str().is_empty() {
                copy
            } else {
                copy.join(&rel)
            });
        }
        copies.how = format!("{} git worktrees", commits.len());
        Ok((copies, commits))
    }

    /// The subject's directory inside each copy.
    pub fn subject_dirs(&self) -> &[PathBuf] {
        &self.subject
    }

    /// How the copies were made, for the report.
    pub fn describe(&self) -> &str {
        &self.how
    }

    fn cleanup(&mut self) {
        if let Some(top) = &self.repo {
            for copy in &self.copies {
                let _ = git(
                    top,
                    &["worktree", "remove", "--force", &copy.display().to_string()],
                );
            }
        }
        self.copies.clear();
        if let Some(root) = self.root.take() {
            let _ = root.close();
        }
        if let Some(top) = self.repo.take() {
            let _ = git(&top, &["worktree", "prune"]);
        }
    }
}

impl Drop for WorkingCopies {
    fn drop(&mut self) {
        self.cleanup();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn sh(dir: &Path, script: &str) {
        let ok = Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
            .status()
            .unwrap()
            .success();
        assert!(ok, "{script}");
    }

    #[test]
    fn worktrees_carry_the_tree_the_user_sees_and_vanish_afterwards() {
        let repo = tempfile::tempdir().unwrap();
        let r = repo.path();
        sh(
            r,
            "git init -q && mkdir sub && echo one > sub/a && echo kept > b && \
             git add . && git commit -qm init && echo two > sub/a && echo new > sub/c && \
             mkdir .flakelab && echo store > .flakelab/runs.jsonl",
        );
        let copies = WorkingCopies::create(&r.join("sub"), 2).unwrap();
        let dirs = copies.subject_dirs().to_vec();
        assert_eq!(dirs.len(), 2);
        for d in &dirs {
            assert!(d.ends_with("sub"), "{}", d.display());
            assert_eq!(std::fs::read_to_string(d.join("a")).unwrap(), "two\n");
            assert_eq!(std::fs::read_to_string(d.join("c")).unwrap(), "new\n");
            assert!(!d.join("../.flakelab").exists());
        }
        assert!(
            copies.describe().contains("uncommitted"),
            "{}",
            copies.describe()
        );
        drop(copies);
        for d in &dirs {
            assert!(!d.exists());
        }
        let list = git(r, &["worktree", "list"]).unwrap();
        assert_eq!(list.lines().count(), 1, "{list}");
    }

    #[test]
    fn without_git_the_directory_is_copied_without_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join(".flakelab")).unwrap();
        std::fs::write(d.join("x"), "x").unwrap();
        let copies = WorkingCopies::create(d, 1).unwrap();
        let c = copies.subject_dirs()[0].clone();
        assert_eq!(std::fs::read_to_string(c.join("x")).unwrap(), "x");
        assert!(!c.join(".flakelab").exists());
        drop(copies);
        assert!(!c.exists());
    }

    #[test]
    fn an_untracked_directory_inside_a_repository_is_copied() {
        let repo = tempfile::tempdir().unwrap();
        let r = repo.path();
        sh(r, "git init -q && echo a > a && git add a && git commit -qm init && mkdir -p t/p && echo x > t/p/x");
        let copies = WorkingCopies::create(&r.join("t/p"), 1).unwrap();
        let c = &copies.subject_dirs()[0];
        assert_eq!(std::fs::read_to_string(c.join("x")).unwrap(), "x\n");
        assert!(
            copies.describe().contains("no git"),
            "{}",
            copies.describe()
        );
    }
}
