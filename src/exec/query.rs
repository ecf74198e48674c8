//! Short synchronous host queries (`locale -a`): a program whose output
//! describes the host, not a run. Never used for the subject.

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
