//! The session's context: the host (via sysinfo) and the subject's git
//! repository. Read once per session; never perturbed.

use std::path::Path;
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};
use sysinfo::{CpuRefreshKind, MemoryRefreshKind, RefreshKind, System};

/// The machine a session ran on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    /// Host name.
    pub hostname: String,
    /// OS name and version, e.g. "Debian GNU/Linux 12".
    pub os: String,
    /// Kernel version.
    pub kernel: String,
    /// CPU architecture, e.g. "x86_64".
    pub arch: String,
    /// CPU model name.
    pub cpu_model: String,
    /// Logical CPUs online.
    pub cpus: usize,
    /// Total memory in bytes.
    pub memory_bytes: u64,
}

/// The git repository that holds the subject's working directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepoInfo {
    /// Repository top-level directory.
    pub root: String,
    /// HEAD commit (full hash), None in a repository with no commits.
    pub commit: Option<String>,
    /// Current branch, None when detached.
    pub branch: Option<String>,
    /// Whether tracked files had uncommitted changes.
    pub dirty: bool,
    /// URL of the `origin` remote, if any (credentials redacted).
    pub remote: Option<String>,
}

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
    let root = git(dir, &["rev-parse", "--show-toplevel"])?;
    let commit = git(dir, &["rev-parse", "--verify", "-q", "HEAD"]);
    let branch = git(dir, &["symbolic-ref", "--short", "-q", "HEAD"]);
    let dirty = git_output(dir, &["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|out| !out.trim().is_empty());
    // A remote URL may carry `user:token@`: never record that part.
    let remote = git(dir, &["remote", "get-url", "origin"]).map(|u| crate::repro::redact_url(&u));
    Some(RepoInfo {
        root,
        commit,
        branch,
        dirty,
        remote,
    })
}

/// How long a runner's version command may take.
const VERSION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

/// The runner's version line: runs the recipe's `version` command for
/// `command` in `dir` (in flakelab's own environment, never a perturbed one)
/// and returns the first non-empty line it printed (stdout, else stderr).
/// None when the recipe declares no version command, or it fails, prints
/// nothing, or takes longer than 15 s (it is then killed).
pub fn runner_version(
    recipe: &crate::catalog::recipe::Recipe,
    command: &[String],
    dir: &Path,
) -> Option<String> {
    let argv = crate::catalog::recipe::version_argv(recipe, command)?;
    let (program, args) = argv.split_first()?;
    let out = tempfile::tempfile().ok()?;
    let err = tempfile::tempfile().ok()?;
    let mut child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(out.try_clone().ok()?)
        .stderr(err.try_clone().ok()?)
        .spawn()
        .ok()?;
    let deadline = std::time::Instant::now() + VERSION_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    if !status.success() {
        return None;
    }
    let first_line = |mut f: std::fs::File| -> Option<String> {
        use std::io::{Read, Seek};
        f.rewind().ok()?;
        let mut text = String::new();
        f.take(64 << 10).read_to_string(&mut text).ok()?;
        text.lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(|l| l.chars().take(200).collect())
    };
    first_line(out).or_else(|| first_line(err))
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
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    String::from_utf8(output.stdout).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_runner_version_is_its_first_line_and_failures_are_none() {
        let mut recipe = crate::catalog::recipe::load(None)
            .unwrap()
            .into_iter()
            .find(|r| r.name == "pytest")
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        recipe.version = Some(vec![
            "sh".into(),
            "-c".into(),
            "echo; echo 'runner 1.2.3'; echo more".into(),
        ]);
        assert_eq!(
            runner_version(&recipe, &["pytest".into()], dir.path()).as_deref(),
            Some("runner 1.2.3")
        );
        recipe.version = Some(vec!["sh".into(), "-c".into(), "exit 3".into()]);
        assert_eq!(
            runner_version(&recipe, &["pytest".into()], dir.path()),
            None
        );
        recipe.version = None;
        assert_eq!(
            runner_version(&recipe, &["pytest".into()], dir.path()),
            None
        );
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
