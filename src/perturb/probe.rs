//! Probes: what a child started through the cell's launch must report for a
//! perturbation to count as applied, and the judgement of what it reported.
//! Pure: the probe's process is run by `exec`.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};

use crate::record::ProcessEnd;

/// One probe: a command run through the cell's launch, and what it must show.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// The perturbation it proves, in `kind=value` form.
    pub perturbation: String,
    /// The probe's argv.
    pub argv: Vec<String>,
    /// What its output must show.
    pub expect: Expect,
}

/// What a probe's output must show.
#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    /// `date +%z` prints the zone's current offset.
    Offset {
        /// The zone.
        zone: String,
        /// Its offset now, `+HHMM`.
        offset: String,
    },
    /// `locale` accepts the locale (no "Cannot set" complaint) and reports it.
    Locale {
        /// The locale.
        locale: String,
    },
    /// `flakelab __probe env` sees these values and absences.
    Env {
        /// Variables that must have these values.
        set: BTreeMap<String, String>,
        /// Variables that must be absent.
        unset: Vec<String>,
        /// Names among `set` whose values are never printed (credentials).
        secret: Vec<String>,
    },
    /// `date +%s` reads the real time shifted by this many seconds.
    ClockShift {
        /// The shift.
        seconds: i64,
    },
    /// `date +%s` reads this time (an absolute start).
    ClockAt {
        /// Seconds since the epoch.
        epoch: i64,
    },
    /// `flakelab __probe net`: no route out, loopback works.
    NoRoute,
    /// `flakelab __probe affinity` reports this many CPUs.
    Cpus {
        /// CPUs in the child's affinity mask.
        count: usize,
    },
    /// `flakelab __probe rlimit RES` reports this soft and hard limit.
    Rlimit {
        /// Resource name.
        resource: String,
        /// The limit.
        value: u64,
    },
    /// The host's CPU busy share while the probe ran was at least this.
    Busy {
        /// Minimum share (0–1).
        min_share: f64,
    },
}

/// How far a faked clock may be from the expected reading: the probe's
/// `date` starts and reads the clock within milliseconds, so 10 s covers a
/// heavily loaded host while being far below the smallest accepted shift
/// (60 s).
pub const CLOCK_TOLERANCE_S: i64 = 10;

/// What the harness observed around a probe.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Observed {
    /// The real time when the probe ended (seconds since the epoch).
    pub real_now: i64,
    /// The host's CPU busy share during the probe, when measured.
    pub busy: Option<f64>,
}

/// Judges a probe's result: `Ok(fact)` when it proves the perturbation
/// applied, `Err(reason)` when it does not.
pub fn judge(
    probe: &Probe,
    end: &ProcessEnd,
    output: &str,
    seen: Observed,
) -> Result<String, String> {
    let what = &probe.perturbation;
    match end {
        ProcessEnd::Exited { code: 0 } => {}
        other => {
            return Err(format!(
                "{what}: probe `{}` did not succeed ({}); output: {}",
                probe.argv.join(" "),
                describe_end(other),
                excerpt(output)
            ))
        }
    }
    match &probe.expect {
        Expect::Offset { zone, offset } => {
            let seen = output.trim();
            if seen == offset {
                Ok(format!(
                    "{what}: child's UTC offset is {seen}, as {zone} has now"
                ))
            } else {
                Err(format!(
                    "{what}: child's UTC offset is {seen}, expected {offset} for {zone}: the zone did not reach the child"
                ))
            }
        }
        Expect::Locale { locale } => {
            if let Some(line) = output.lines().find(|l| l.contains("Cannot set")) {
                return Err(format!("{what}: the C library refused it: {}", line.trim()));
            }
            let reported = output
                .lines()
                .find_map(|l| l.strip_prefix("LC_ALL="))
                .map(|v| v.trim_matches('"'));
            match reported {
                Some(v) if v == locale => {
                    Ok(format!("{what}: child's C library accepts LC_ALL={v}"))
                }
                other => Err(format!(
                    "{what}: child reports LC_ALL={}, expected {locale}",
                    other.unwrap_or("(nothing)")
                )),
            }
        }
        Expect::Env { set, unset, secret } => {
            let mut seen: BTreeMap<&str, Option<&str>> = BTreeMap::new();
            for line in output.lines() {
                if let Some(rest) = line.strip_prefix("set ") {
                    if let Some((k, v)) = rest.split_once('=') {
                        seen.insert(k, Some(v));
                    }
                } else if let Some(k) = line.strip_prefix("unset ") {
                    seen.insert(k.trim(), None);
                }
            }
            for (k, v) in set {
                match seen.get(k.as_str()) {
                    Some(Some(got)) if got == v => {}
                    Some(Some(_)) if secret.contains(k) => {
                        return Err(format!(
                            "{what}: child sees {k} with another value than the one set (values redacted)"
                        ))
                    }
                    Some(Some(got)) => {
                        return Err(format!("{what}: child sees {k}={got}, expected {v}"))
                    }
                    _ => return Err(format!("{what}: child does not see {k}")),
                }
            }
            for k in unset {
                if let Some(Some(_)) = seen.get(k.as_str()) {
                    return Err(format!("{what}: child still sees {k}"));
                }
                if !seen.contains_key(k.as_str()) {
                    return Err(format!("{what}: probe did not report {k}"));
                }
            }
            Ok(format!("{what}: child sees the variables as set"))
        }
        Expect::ClockShift { seconds } => {
            let read = read_epoch(what, output)?;
            let expected = seen.real_now + seconds;
            if (read - expected).abs() <= CLOCK_TOLERANCE_S {
                Ok(format!("{what}: child's clock reads {} s from the real clock", read - seen.real_now))
            } else {
                Err(format!(
                    "{what}: child's clock reads {} s from the real clock, expected {seconds} s: libfaketime did not take effect",
                    read - seen.real_now
                ))
            }
        }
        Expect::ClockAt { epoch } => {
            let read = read_epoch(what, output)?;
            if (read - epoch).abs() <= CLOCK_TOLERANCE_S {
                Ok(format!("{what}: child's clock reads {read} (epoch seconds)"))
            } else {
                Err(format!(
                    "{what}: child's clock reads {read}, expected {epoch}: libfaketime did not take effect"
                ))
            }
        }
        Expect::NoRoute => {
            let route = output.lines().find_map(|l| l.strip_prefix("route: ")).unwrap_or("(not reported)");
            let lo = output.lines().find_map(|l| l.strip_prefix("loopback: ")).unwrap_or("(not reported)");
            if !route.starts_with("unreachable") {
                Err(format!("{what}: the child still has a route out ({route})"))
            } else if lo != "ok" {
                Err(format!("{what}: loopback does not work in the namespace ({lo})"))
            } else {
                Ok(format!("{what}: no route to 192.0.2.1 ({route}); loopback round trip ok"))
            }
        }
        Expect::Cpus { count } => {
            let n: Option<usize> = output
                .lines()
                .find_map(|l| l.strip_prefix("cpus: "))
                .and_then(|v| v.split_whitespace().next()?.parse().ok());
            match n {
                Some(n) if n == *count => Ok(format!("{what}: child's affinity mask has {n} CPU(s)")),
                other => Err(format!(
                    "{what}: child's affinity mask has {} CPU(s), expected {count}",
                    other.map_or("?".into(), |n| n.to_string())
                )),
            }
        }
        Expect::Rlimit { resource, value } => {
            let line = output.lines().find_map(|l| l.strip_prefix(&format!("{resource} ")));
            let mut nums = line.unwrap_or("").split_whitespace();
            let soft = nums.next().unwrap_or("?");
            let hard = nums.next().unwrap_or("?");
            if soft == value.to_string() && hard == value.to_string() {
                Ok(format!("{what}: child's {resource} limit is {soft} (soft and hard)"))
            } else {
                Err(format!("{what}: child's {resource} limit is {soft}/{hard}, expected {value}"))
            }
        }
        Expect::Busy { min_share } => match seen.busy {
            Some(b) if b >= *min_share => Ok(format!(
                "{what}: host CPU {:.0}% busy during the probe",
                b * 100.0
            )),
            Some(b) => Err(format!(
                "{what}: host CPU only {:.0}% busy during the probe, expected at least {:.0}%: the stress did not take (a CPU quota?)",
                b * 100.0,
                min_share * 100.0
            )),
            None => Err(format!("{what}: the host's CPU load could not be measured (/proc/stat)")),
        },
    }
}

fn read_epoch(what: &str, output: &str) -> Result<i64, String> {
    output.trim().parse().map_err(|_| {
        format!(
            "{what}: `date +%s` printed {:?}, not a time",
            excerpt(output)
        )
    })
}

/// A short human description of how a process ended.
pub fn describe_end(end: &ProcessEnd) -> String {
    match end {
        ProcessEnd::Exited { code } => format!("exit code {code}"),
        ProcessEnd::Signaled { signal } => format!("killed by signal {signal}"),
        ProcessEnd::TimedOut { signal } => format!("timed out, stopped with signal {signal}"),
        ProcessEnd::Interrupted => "interrupted".into(),
        ProcessEnd::SpawnFailed { message } => format!("could not start: {message}"),
        ProcessEnd::NotStarted => "not started".into(),
    }
}

fn excerpt(output: &str) -> String {
    let t = output.trim();
    if t.is_empty() {
        return "(none)".into();
    }
    let s: String = t.chars().take(200).collect();
    s.replace('\n', " | ")
}

/// What the `__probe` helper reports, as the lines a probe's [`judge`]
/// reads: the child's side of every probe, run inside the cell's launch path.
pub mod helper {
    /// `set NAME=VALUE` or `unset NAME` for each variable.
    pub fn env(names: &[String]) -> String {
        names
            .iter()
            .map(|name| match std::env::var_os(name) {
                Some(v) => format!("set {name}={}\n", v.to_string_lossy()),
                None => format!("unset {name}\n"),
            })
            .collect()
    }

    /// `route: …` (a UDP connect to 192.0.2.1, which sends nothing) and
    /// `loopback: …` (a TCP round trip over 127.0.0.1).
    pub fn net() -> String {
        let route = std::net::UdpSocket::bind("0.0.0.0:0").and_then(|s| s.connect("192.0.2.1:9"));
        let route = match route {
            Ok(()) => "route: reachable".to_string(),
            Err(e) if e.raw_os_error() == Some(nix::libc::ENETUNREACH) => {
                format!("route: unreachable ({e})")
            }
            Err(e) => format!("route: error ({e})"),
        };
        let loopback = match super::loopback_round_trip() {
            Ok(()) => "loopback: ok".to_string(),
            Err(e) => format!("loopback: failed: {e}"),
        };
        format!("{route}\n{loopback}\n")
    }

    /// `cpus: N (list)` from the affinity mask.
    pub fn affinity() -> String {
        let cpus = crate::perturb::isolate::allowed_cpus();
        format!(
            "cpus: {} ({})\n",
            cpus.len(),
            crate::perturb::isolate::cpu_list(&cpus)
        )
    }

    /// `RES soft hard` for one resource limit.
    pub fn rlimit(resource: &str) -> String {
        match crate::perturb::isolate::current_rlimit(resource) {
            Some((soft, hard)) => format!("{resource} {soft} {hard}\n"),
            None => format!("{resource} unknown\n"),
        }
    }
}

/// A TCP round trip over 127.0.0.1 (the netns probe's loopback check; the demo suite's loopback test).
pub fn loopback_round_trip() -> Result<(), String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let server = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut s, _) = listener.accept()?;
        let mut buf = [0u8; 4];
        s.read_exact(&mut buf)?;
        s.write_all(&buf)
    });
    let mut client = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    client.write_all(b"ping").map_err(|e| e.to_string())?;
    let mut back = [0u8; 4];
    client.read_exact(&mut back).map_err(|e| e.to_string())?;
    server
        .join()
        .map_err(|_| "server thread panicked".to_string())?
        .map_err(|e| e.to_string())?;
    (&back == b"ping")
        .then_some(())
        .ok_or("echo mismatch".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge_(p: &Probe, end: &ProcessEnd, out: &str) -> Result<String, String> {
        judge(
            p,
            end,
            out,
            Observed {
                real_now: 1_000_000,
                busy: Some(0.9),
            },
        )
    }

    fn probe(expect: Expect) -> Probe {
        Probe {
            perturbation: "x".into(),
            argv: vec![],
            expect,
        }
    }

    #[test]
    fn clock_probe_catches_an_unshifted_clock() {
        let p = probe(Expect::ClockShift { seconds: 86_400 });
        assert!(judge_(&p, &ok(), "1086401\n").is_ok());
        assert!(judge_(&p, &ok(), "1000001\n")
            .unwrap_err()
            .contains("did not take effect"));
        assert!(judge_(&p, &ok(), "garbage").is_err());
        let at = probe(Expect::ClockAt { epoch: 5_000 });
        assert!(judge_(&at, &ok(), "5003").is_ok());
        assert!(judge_(&at, &ok(), "1000000").is_err());
    }

    #[test]
    fn network_probe_needs_no_route_and_a_working_loopback() {
        let p = probe(Expect::NoRoute);
        assert!(judge_(
            &p,
            &ok(),
            "route: unreachable (os error 101)\nloopback: ok\n"
        )
        .is_ok());
        assert!(judge_(&p, &ok(), "route: reachable\nloopback: ok\n")
            .unwrap_err()
            .contains("route out"));
        assert!(judge_(&p, &ok(), "route: unreachable\nloopback: failed: refused\n").is_err());
    }

    #[test]
    fn affinity_rlimit_and_load_probes() {
        assert!(judge_(&probe(Expect::Cpus { count: 1 }), &ok(), "cpus: 1 (0)\n").is_ok());
        assert!(judge_(&probe(Expect::Cpus { count: 1 }), &ok(), "cpus: 2 (0,1)\n").is_err());
        let r = probe(Expect::Rlimit {
            resource: "nofile".into(),
            value: 64,
        });
        assert!(judge_(&r, &ok(), "nofile 64 64\n").is_ok());
        assert!(judge_(&r, &ok(), "nofile 64 1024\n").is_err());
        assert!(judge_(&probe(Expect::Busy { min_share: 0.5 }), &ok(), "").is_ok());
        let idle = judge(
            &probe(Expect::Busy { min_share: 0.5 }),
            &ok(),
            "",
            Observed {
                real_now: 0,
                busy: Some(0.1),
            },
        );
        assert!(idle.unwrap_err().contains("CPU quota"));
    }

    fn ok() -> ProcessEnd {
        ProcessEnd::Exited { code: 0 }
    }

    fn tz_probe() -> Probe {
        Probe {
            perturbation: "tz=Asia/Kathmandu".into(),
            argv: vec!["date".into(), "+%z".into()],
            expect: Expect::Offset {
                zone: "Asia/Kathmandu".into(),
                offset: "+0545".into(),
            },
        }
    }

    #[test]
    fn offset_probe_catches_a_zone_that_fell_back_to_utc() {
        assert!(judge_(&tz_probe(), &ok(), "+0545\n").is_ok());
        let err = judge_(&tz_probe(), &ok(), "+0000\n").unwrap_err();
        assert!(err.contains("did not reach the child"), "{err}");
        assert!(judge_(&tz_probe(), &ProcessEnd::Exited { code: 1 }, "").is_err());
    }

    #[test]
    fn locale_probe_catches_the_libc_refusal() {
        let p = Probe {
            perturbation: "locale=de_DE.UTF-8".into(),
            argv: vec!["locale".into()],
            expect: Expect::Locale {
                locale: "de_DE.UTF-8".into(),
            },
        };
        let refused = "locale: Cannot set LC_ALL to default locale: No such file or directory\nLC_ALL=de_DE.UTF-8\n";
        assert!(judge_(&p, &ok(), refused).unwrap_err().contains("refused"));
        assert!(judge_(&p, &ok(), "LANG=de_DE.UTF-8\nLC_ALL=de_DE.UTF-8\n").is_ok());
    }

    #[test]
    fn env_probe_checks_values_and_absences() {
        let p = Probe {
            perturbation: "env=A=1+env=-B".into(),
            argv: vec![],
            expect: Expect::Env {
                set: BTreeMap::from([("A".into(), "1".into())]),
                unset: vec!["B".into()],
                secret: Vec::new(),
            },
        };
        assert!(judge_(&p, &ok(), "set A=1\nunset B\n").is_ok());
        assert!(judge_(&p, &ok(), "set A=2\nunset B\n")
            .unwrap_err()
            .contains("A=2"));
        assert!(judge_(&p, &ok(), "set A=1\nset B=x\n")
            .unwrap_err()
            .contains("still sees B"));
    }
}
