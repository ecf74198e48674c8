//! Short synchronous host queries (`locale -a`, a runner's `--version`):
//! a program whose output describes the host or a tool, not a run. Never
//! used for the subject's runs.

use std::path::Path;
use std::process::{Command, Stdio};

/// Runs `program args…` to completion and returns its stdout when it exits 0.
pub fn query(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs `program args…` to completion; returns whether it exited 0 and its
/// stdout followed by its stderr.
pub fn query_all(program: &str, args: &[&str]) -> std::io::Result<(bool, String)> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok((out.status.success(), text))
}

/// How long a runner's version command may take.
const VERSION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

/// A runner's version line: runs its version command `argv` in `dir` (in
/// flakelab's own environment, never a perturbed one) and returns the first
/// non-empty line it printed (stdout, else stderr). None when it fails,
/// prints nothing, or takes longer than 15 s (it is then killed).
pub fn version_line(argv: &[String], dir: &Path) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_version_is_the_first_line_and_failures_are_none() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            version_line(
                &words(&["sh", "-c", "echo; echo 'runner 1.2.3'; echo more"]),
                dir.path()
            )
            .as_deref(),
            Some("runner 1.2.3")
        );
        assert_eq!(
            version_line(&words(&["sh", "-c", "echo 'on stderr' >&2"]), dir.path()).as_deref(),
            Some("on stderr")
        );
        assert_eq!(
            version_line(&words(&["sh", "-c", "exit 3"]), dir.path()),
            None
        );
        assert_eq!(version_line(&[], dir.path()), None);
    }
}
