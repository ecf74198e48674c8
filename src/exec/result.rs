//! How the session asks running children to stop ([`Stop`]) and how one
//! child ended ([`ChildResult`]): what the executor, the fake and their
//! callers across the crate exchange.

use std::time::Duration;

use super::inspect::SeenProcess;
use crate::record::ProcessEnd;

/// How the session asks running children to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Keep going.
    Run,
    /// SIGTERM to the group, wait the grace period, then SIGKILL.
    Graceful,
    /// SIGKILL to the group now (also cuts a grace period short).
    Kill,
}

/// How one child ended and what it left behind.
#[derive(Debug, Clone)]
pub struct ChildResult {
    /// How the process ended.
    pub end: ProcessEnd,
    /// From just before spawn to the end of the group leader (monotonic).
    pub duration: Duration,
    /// Bytes the child wrote to stdout and stderr together.
    pub output_bytes: u64,
    /// Bytes left out of the log by the head/tail cap
    /// (`output_bytes - log_head - log_tail`, at least 0).
    pub output_dropped: u64,
    /// Distinct processes of the run found alive after the leader ended
    /// (group members and escaped descendants); all were killed.
    pub stragglers: u32,
    /// Problems that did not change the end (log not writable, pipe held
    /// open, a sweep that gave up, …).
    pub warnings: Vec<String>,
    /// The programs the run's processes ran, when the run was watched
    /// ([`run_child_watched`](super::child::run_child_watched)).
    pub processes: Option<Vec<SeenProcess>>,
    /// What flakelab's clock preload recorded in the run's processes
    /// ([`super::launch::Launch::clock_record`]); None when the launch asked
    /// for no record or it could not be made.
    pub clock_record: Option<String>,
}

impl ChildResult {
    /// A result for a child that never ran.
    pub(super) fn not_run(end: ProcessEnd, warnings: Vec<String>) -> Self {
        ChildResult {
            end,
            duration: Duration::ZERO,
            output_bytes: 0,
            output_dropped: 0,
            stragglers: 0,
            warnings,
            processes: None,
            clock_record: None,
        }
    }
}

/// The one-line reason of an end that is neither an exit nor a spawn
/// failure (a spawn failure carries its own message): a timeout with its
/// limit (`timed out after 60s (--timeout)`), a death by a signal with the
/// signal's name (`killed by SIGSEGV (signal 11)`).
pub fn end_reason(end: &ProcessEnd, timeout: Option<Duration>) -> Option<String> {
    match end {
        ProcessEnd::TimedOut { .. } => Some(match timeout {
            Some(limit) => format!("timed out after {} (--timeout)", limit_text(limit)),
            None => "timed out (--timeout)".into(),
        }),
        ProcessEnd::Signaled { signal } => {
            let name = nix::sys::signal::Signal::try_from(*signal)
                .map(|s| s.as_str().to_string())
                .unwrap_or_else(|_| format!("signal {signal}"));
            Some(if name.starts_with("SIG") {
                format!("killed by {name} (signal {signal})")
            } else {
                format!("killed by {name}")
            })
        }
        _ => None,
    }
}

/// A limit as `--timeout` takes it: `90s`, `1500ms`.
fn limit_text(limit: Duration) -> String {
    if limit.subsec_nanos() == 0 {
        format!("{}s", limit.as_secs())
    } else {
        format!("{}ms", limit.as_millis())
    }
}

/// Adds `warning` unless it is there already.
pub(super) fn warn_once(warnings: &mut Vec<String>, warning: String) {
    if !warnings.contains(&warning) {
        warnings.push(warning);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_name_their_limit_and_signals_their_name() {
        let timed_out = ProcessEnd::TimedOut { signal: 15 };
        let r = |end: &ProcessEnd, t: Option<u64>| end_reason(end, t.map(Duration::from_millis));
        assert_eq!(
            r(&timed_out, Some(60_000)).as_deref(),
            Some("timed out after 60s (--timeout)")
        );
        assert_eq!(
            r(&timed_out, Some(1_500)).as_deref(),
            Some("timed out after 1500ms (--timeout)")
        );
        assert_eq!(
            r(&timed_out, None).as_deref(),
            Some("timed out (--timeout)")
        );
        let segv = ProcessEnd::Signaled { signal: 11 };
        assert_eq!(
            r(&segv, None).as_deref(),
            Some("killed by SIGSEGV (signal 11)")
        );
        let odd = ProcessEnd::Signaled { signal: 99 };
        assert_eq!(r(&odd, None).as_deref(), Some("killed by signal 99"));
        assert_eq!(r(&ProcessEnd::Exited { code: 1 }, None), None);
    }
}
