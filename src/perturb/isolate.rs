//! A cell's isolation (netns, rlimit, cpu-pin) as words: the repro line's
//! standard tools, and the `__exec` helper — a single-threaded copy of our
//! own binary that applies the isolation and `exec`s a command, used by
//! `doctor` and by hand. A cell's runs do not go through the helper: the
//! run's own process sets the isolation up between fork and exec
//! (`exec::setup`).

use std::os::unix::process::CommandExt as _;

use nix::sched::{sched_getaffinity, CpuSet};
use nix::unistd::Pid;

pub use crate::exec::setup::{cpu_list, Isolation, SETUP_FAILED};

/// The exit code of the helper when it could not set a perturbation up; the
/// line it prints starts with [`SETUP_FAILED`].
pub const SETUP_EXIT: i32 = 125;

/// The same setup with standard tools, for the repro line: `unshare -rn`
/// with loopback brought up by `ip`, `taskset`, `prlimit`.
pub fn repro_prefix(iso: &Isolation) -> Vec<String> {
    let mut words = Vec::new();
    if iso.netns {
        words.extend(
            [
                "unshare",
                "-rn",
                "sh",
                "-c",
                "ip link set lo up && exec \"$@\"",
                "sh",
            ]
            .map(String::from),
        );
    }
    if let Some(cpus) = &iso.cpus {
        words.extend(["taskset".to_string(), "-c".to_string(), cpu_list(cpus)]);
    }
    if !iso.rlimits.is_empty() {
        words.push("prlimit".into());
        for (res, v) in &iso.rlimits {
            words.push(format!("--{res}={v}:{v}"));
        }
    }
    words
}

/// The CPUs this process may run on.
pub fn allowed_cpus() -> Vec<usize> {
    match sched_getaffinity(Pid::from_raw(0)) {
        Ok(set) => (0..CpuSet::count())
            .filter(|&i| set.is_set(i).unwrap_or(false))
            .collect(),
        Err(_) => (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect(),
    }
}

/// Reads one limit of this process: `(soft, hard)`.
pub fn current_rlimit(name: &str) -> Option<(u64, u64)> {
    nix::sys::resource::getrlimit(crate::exec::setup::resource(name)?).ok()
}

/// The helper's body: applies `iso` to this process (the same setup and
/// read-back as a cell's runs get between fork and exec), then execs
/// `command`. Returns only on failure, with the reason.
pub fn enter(iso: &Isolation, command: &[String]) -> String {
    if let Err(why) = crate::exec::setup::apply_here(iso) {
        return why;
    }
    let Some((program, args)) = command.split_first() else {
        return "no command after `--`".into();
    };
    // std's exec, not a bare execvp: like every spawn of a baseline run it
    // restores SIGPIPE (which the Rust runtime of this helper ignores, and
    // an ignored signal survives exec) and clears the signal mask, so the
    // subject starts with the baseline's signal state.
    let e = std::process::Command::new(program).args(args).exec();
    format!("cannot start `{program}`: {e}")
}

/// The `__exec` helper's body: parses its own arguments (rlimits as
/// `RES:VALUE`, a comma-separated CPU list), applies netns, limits and
/// pinning to this process, then execs `command`. Returns only when it
/// failed, with the line the run's classification looks for
/// ([`SETUP_FAILED`]); the caller prints it and exits [`SETUP_EXIT`].
pub fn helper(netns: bool, rlimits: &[String], cpus: Option<&str>, command: &[String]) -> String {
    let mut iso = Isolation {
        netns,
        ..Default::default()
    };
    let mut failure = None;
    for spec in rlimits {
        match crate::catalog::values::parse_rlimit(spec) {
            Ok(limit) => iso.rlimits.push(limit),
            Err(e) => failure = Some(e),
        }
    }
    if let Some(list) = cpus {
        match list
            .split(',')
            .map(str::parse)
            .collect::<Result<Vec<usize>, _>>()
        {
            Ok(cpus) => iso.cpus = Some(cpus),
            Err(e) => failure = Some(format!("bad CPU list `{list}`: {e}")),
        }
    }
    let why = match failure {
        Some(why) => why,
        None => enter(&iso, command),
    };
    format!("{SETUP_FAILED} {why}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repro_words() {
        let iso = Isolation {
            netns: true,
            rlimits: vec![("nofile".into(), 64)],
            cpus: Some(vec![0]),
        };
        let repro = repro_prefix(&iso);
        assert_eq!(&repro[..2], ["unshare", "-rn"]);
        assert!(repro.contains(&"taskset".to_string()));
        assert_eq!(repro.last().unwrap(), "--nofile=64:64");
    }

    #[test]
    fn this_process_has_cpus_and_limits() {
        assert!(!allowed_cpus().is_empty());
        let (soft, hard) = current_rlimit("nofile").unwrap();
        assert!(soft <= hard);
    }
}
