//! The session's context: the host (via sysinfo) and the subject's git
//! repository, as plain records (`crate::record`). Read once per session;
//! never perturbed.

use std::path::Path;

use sysinfo::{CpuRefreshKind, MemoryRefreshKind, RefreshKind, System};

use crate::record::{HostInfo, RepoInfo};

/// Reads the host's identity: OS, kernel, architecture, CPU model and count,
/// and total memory. Refreshes only the CPU list and memory, so it is fast.
pub fn host_info() -> HostInfo {
    let sys = System::new_with_specifics(
        RefreshKind::nothing()
            .with_cpu(CpuRefreshKind::nothing())
            .with_memory(MemoryRefreshKind::nothing().with_ram()),
    );
    let os = match (System::name(), System::os_version()) {
        (Some(name), Some(version)) => format!("{name} {version}"),
        (Some(name), None) => name,
        (None, Some(version)) => version,
        (None, None) => std::env::consts::OS.to_string(),
    };
    let cpus = match sys.cpus().len() {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    HostInfo {
        hostname: System::host_name().unwrap_or_default(),
        os,
        kernel: System::kernel_version().unwrap_or_default(),
        arch: std::env::consts::ARCH.to_string(),
        cpu_model: sys
            .cpus()
            .first()
            .map(|cpu| cpu.brand().trim().to_string())
            .unwrap_or_default(),
        cpus,
        memory_bytes: sys.total_memory(),
    }
}

/// Describes the git repository holding `dir`, by running the `git` binary.
/// Returns None when `dir` is not inside a repository or git is missing.
pub fn repo_info(dir: &Path) -> Option<RepoInfo> {
    if !may_be_in_repo(dir, std::env::var_os("GIT_DIR").is_some()) {
        return None;
    }
    let root = git(dir, &["rev-parse", "--show-toplevel"])?;
    // The four questions are independent: asked at once, the session waits
    // for the slowest (usually `status`), not for their sum.
    std::thread::scope(|scope| {
        let commit = scope.spawn(|| git(dir, &["rev-parse", "--verify", "-q", "HEAD"]));
        let branch = scope.spawn(|| git(dir, &["symbolic-ref", "--short", "-q", "HEAD"]));
        let dirty = scope.spawn(|| {
            git_output(dir, &["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|out| !out.trim().is_empty())
        });
        // A remote URL may carry `user:token@`: never record that part.
        let remote =
            git(dir, &["remote", "get-url", "origin"]).map(|u| crate::redact::Redaction::url(&u));
        Some(RepoInfo {
            root,
            commit: commit.join().ok().flatten(),
            branch: branch.join().ok().flatten(),
            dirty: dirty.join().unwrap_or(false),
            remote,
        })
    })
}

/// Whether git could find a repository holding `dir`: with `GIT_DIR` set
/// (`git_dir_set`) it may be anywhere; otherwise some ancestor of `dir`
/// (itself included) has a `.git` entry (a directory, or a file for a
/// worktree or submodule). False means git would not find one either, and
/// starting it is skipped: outside a repository that was one process per
/// session for nothing.
fn may_be_in_repo(dir: &Path, git_dir_set: bool) -> bool {
    git_dir_set
        || dir
            .ancestors()
            .any(|a| std::fs::symlink_metadata(a.join(".git")).is_ok())
}

/// Runs `git -C dir args…` and returns its trimmed stdout when it succeeded
/// with non-empty output.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = git_output(dir, args)?;
    let out = out.trim();
    (!out.is_empty()).then(|| out.to_string())
}

/// Runs `git -C dir args…` and returns its raw stdout when it exited 0.
fn git_output(dir: &Path, args: &[&str]) -> Option<String> {
    let output = crate::exec::git::output(dir, args).ok()?;
    if !output.status.success() {
        return None;
    }
    String::from_utf8(output.stdout).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    fn run_git(dir: &Path, args: &[&str]) {
        let status = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args([
                "-c",
                "user.email=test@example.com",
                "-c",
                "user.name=Test",
                "-c",
                "commit.gpgsign=false",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("git runs");
        assert!(status.success(), "git {args:?} failed");
    }

    #[test]
    fn repo_info_reads_commit_branch_and_dirty() {
        let dir = tempfile::tempdir().unwrap();
        run_git(dir.path(), &["init", "-q"]);

        let fresh = repo_info(dir.path()).expect("a fresh repository is a repository");
        assert_eq!(fresh.commit, None);
        assert!(!fresh.dirty);

        std::fs::write(dir.path().join("a.txt"), "one\n").unwrap();
        run_git(dir.path(), &["add", "a.txt"]);
        run_git(dir.path(), &["commit", "-q", "-m", "first"]);

        let info = repo_info(dir.path()).expect("repository");
        let commit = info.commit.expect("commit");
        assert_eq!(commit.len(), 40);
        assert!(commit.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(info.branch.as_deref(), Some("main"));
        assert!(!info.dirty);
        assert_eq!(info.remote, None);
        assert_eq!(
            Path::new(&info.root).canonicalize().unwrap(),
            dir.path().canonicalize().unwrap()
        );

        std::fs::write(dir.path().join("a.txt"), "two\n").unwrap();
        assert!(repo_info(dir.path()).unwrap().dirty);

        run_git(dir.path(), &["checkout", "-q", "--detach"]);
        assert_eq!(repo_info(dir.path()).unwrap().branch, None);
    }

    #[test]
    fn repo_info_is_none_outside_a_repository() {
        let dir = tempfile::tempdir().unwrap();
        // Keep git from finding a repository above the temp dir.
        let inner = dir.path().join("not-a-repo");
        std::fs::create_dir(&inner).unwrap();
        if Command::new("git")
            .arg("-C")
            .arg(&inner)
            .args(["rev-parse", "--show-toplevel"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
        {
            // The temp dir sits inside some repository; nothing to check here.
            return;
        }
        assert_eq!(repo_info(&inner), None);
    }

    #[test]
    fn a_repository_is_looked_for_only_where_git_could_find_one() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("a").join("b");
        std::fs::create_dir_all(&inner).unwrap();
        let outside = !dir.path().ancestors().any(|a| a.join(".git").exists());
        if outside {
            assert!(!may_be_in_repo(&inner, false));
        }
        assert!(may_be_in_repo(&inner, true), "GIT_DIR may point anywhere");
        // A `.git` directory above, or a worktree's `.git` file.
        std::fs::create_dir(dir.path().join("a").join(".git")).unwrap();
        assert!(may_be_in_repo(&inner, false));
        std::fs::remove_dir(dir.path().join("a").join(".git")).unwrap();
        std::fs::write(inner.join(".git"), "gitdir: /elsewhere\n").unwrap();
        assert!(may_be_in_repo(&inner, false));
    }

    #[test]
    fn host_info_is_plausible() {
        let host = host_info();
        assert!(host.cpus >= 1);
        assert!(host.memory_bytes > 0);
        assert!(!host.arch.is_empty());
        assert!(!host.os.is_empty());
    }
}
