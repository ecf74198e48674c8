//! Reading `/proc`: the stat line of every process, and whether a
//! process's environment holds a run's marker. Used by the sweep, the
//! inspection and the warden.

use std::io;

/// Every process in `/proc` but `me`, with its stat; those that vanish or
/// cannot be read while the directory is walked are skipped.
pub(super) fn proc_stats(me: i32) -> io::Result<impl Iterator<Item = (i32, ProcStat)>> {
    Ok(std::fs::read_dir("/proc")?
        .flatten()
        .filter_map(move |dirent| {
            let pid = dirent.file_name().to_str()?.parse::<i32>().ok()?;
            if pid == me {
                return None;
            }
            let stat = parse_stat(&std::fs::read(format!("/proc/{pid}/stat")).ok()?)?;
            Some((pid, stat))
        }))
}

/// The fields of `/proc/PID/stat` the sweep and the inspection need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ProcStat {
    /// State letter (`R`, `S`, `D`, `Z`, …).
    pub(super) state: u8,
    /// Parent pid.
    pub(super) ppid: i32,
    /// Process group id.
    pub(super) pgrp: i32,
    /// Start time after boot, in clock ticks (tells a recycled pid apart).
    pub(super) start: u64,
}

impl ProcStat {
    /// Not a zombie or dead.
    pub(super) fn alive(&self) -> bool {
        !matches!(self.state, b'Z' | b'X' | b'x')
    }
}

/// Parses `/proc/PID/stat`: `pid (comm) state ppid pgrp … starttime …`. The
/// command name may hold spaces, parentheses and non-UTF-8 bytes, so fields
/// are counted from the last `)`. The start time (field 22) is 0 when a
/// short line lacks it.
pub(super) fn parse_stat(raw: &[u8]) -> Option<ProcStat> {
    let close = raw.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(raw.get(close + 1..)?).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.as_bytes();
    let [state] = state else { return None };
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    // Fields 6 to 21 come before the start time.
    let start = fields.nth(16).and_then(|f| f.parse().ok()).unwrap_or(0);
    Some(ProcStat {
        state: *state,
        ppid,
        pgrp,
        start,
    })
}

/// Whether a NUL-separated environment block (`/proc/PID/environ`) has
/// exactly `entry` (`NAME=value`) as one of its entries.
pub(super) fn environ_has(environ: &[u8], entry: &[u8]) -> bool {
    environ.split(|&b| b == 0).any(|e| e == entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_parses_odd_command_names() {
        let raw = b"1234 (a) (b c) S 1 1234 1234 0 -1 4194560 100 0";
        assert_eq!(
            parse_stat(raw),
            Some(ProcStat {
                state: b'S',
                ppid: 1,
                pgrp: 1234,
                start: 0,
            })
        );
        let full = b"9 (sh) R 8 9 9 34816 9 4194304 112 0 0 0 0 0 0 0 20 0 1 0 8812345 2527232 223";
        assert_eq!(parse_stat(full).map(|s| s.start), Some(8_812_345));
        let mut raw = b"77 (\xff\xfe".to_vec();
        raw.extend_from_slice(b") Z 5 70 70 0");
        let stat = parse_stat(&raw).unwrap();
        assert_eq!((stat.state, stat.ppid, stat.pgrp), (b'Z', 5, 70));
        assert!(!stat.alive());
    }

    #[test]
    fn stat_rejects_garbage() {
        assert_eq!(parse_stat(b""), None);
        assert_eq!(parse_stat(b"12 (x)"), None);
        assert_eq!(parse_stat(b"12 (x) S one 3"), None);
        assert_eq!(parse_stat(b"12 (x) SS 1 3"), None);
    }

    #[test]
    fn environ_matches_whole_entries_only() {
        let env = b"A=1\0FLAKELAB_RUN_ID=run-12\0B=2\0";
        assert!(environ_has(env, b"FLAKELAB_RUN_ID=run-12"));
        assert!(!environ_has(env, b"FLAKELAB_RUN_ID=run-1"));
        assert!(!environ_has(env, b"FLAKELAB_RUN_ID=run-123"));
        assert!(environ_has(b"FLAKELAB_RUN_ID=x", b"FLAKELAB_RUN_ID=x"));
        assert!(!environ_has(b"XFLAKELAB_RUN_ID=x\0", b"FLAKELAB_RUN_ID=x"));
        assert!(!environ_has(b"", b"FLAKELAB_RUN_ID=x"));
    }
}
