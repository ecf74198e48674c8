//! Running git for what a session records about the subject's repository
//! and for the working copies a topology makes: questions and set-up around
//! the runs, never a run. In flakelab's own environment, stdin closed.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// `git -C dir args…` run to its end, its stdout and stderr captured.
pub fn output(dir: &Path, args: &[&str]) -> std::io::Result<Output> {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
}

/// `git -C dir args…` with `input` on its stdin, run to its end, its stdout
/// and stderr captured.
pub fn output_with_input(dir: &Path, args: &[&str], input: &[u8]) -> std::io::Result<Output> {
    let mut child = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input)?;
    }
    child.wait_with_output()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_and_input_reach_git() {
        let dir = tempfile::tempdir().unwrap();
        let Ok(out) = output(dir.path(), &["init", "-q"]) else {
            return; // no git here
        };
        assert!(out.status.success(), "{out:?}");
        let out = output_with_input(dir.path(), &["hash-object", "--stdin"], b"hello\n").unwrap();
        assert!(out.status.success(), "{out:?}");
        // The id git gives the blob "hello\n".
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
        let out = output(dir.path(), &["no-such-command"]).unwrap();
        assert!(!out.status.success());
        assert!(!out.stderr.is_empty(), "stderr is captured");
    }
}
