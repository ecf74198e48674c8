//! Probes: what a child started through the cell's launch must report for a
//! perturbation to count as applied, and the judgement of what it reported.
//! Pure: the probe's process is run by `exec`.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};

use crate::record::{ProcessEnd, RunCpu};

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
    /// `date '+%s %z'` prints the child's clock reading and the offset the
    /// zone has at that instant (which may be a faked one).
    Offset {
        /// The zone.
        zone: String,
        /// Its rules, from the zoneinfo database the child reads.
        tz: jiff::tz::TimeZone,
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
    /// The stress threads beside the probe got their share
    /// ([`judge_stress`]).
    Stress,
}

/// How far a faked clock may be from the expected reading: the probe's
/// `date` starts and reads the clock within milliseconds, so 10 s covers a
/// heavily loaded host while being far below the smallest accepted shift
/// (60 s).
pub const CLOCK_TOLERANCE_S: i64 = 10;

/// What the harness observed around a probe.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    /// The real time when the probe ended (seconds since the epoch).
    pub real_now: i64,
    /// The CPU time the probe and its stress threads got, when measured.
    pub cpu: Option<RunCpu>,
}

/// Below this share of a CPU, on average over the window, a busy stress
/// thread was not running at all (not placed, frozen, or throttled by a
/// CPU quota): a loaded 2-CPU host with a load average of 8 still gives each
/// of 4 stressors 16% (measured), eight times more.
pub const STRESS_MIN_SHARE: f64 = 0.02;

/// Windows shorter than this are measured but not judged: over a few
/// scheduler periods a busy thread's share is noise, not the stress. The
/// cell's probe (0.5 s) is always long enough.
pub const STRESS_MIN_WINDOW_S: f64 = 0.25;

/// The least part of the CPU time a run used that its stressors must have
/// had: half of `T / (T + U)`, the part `T` busy threads on `U` CPUs take
/// from a subject that keeps every one of those CPUs busy. Busy threads of
/// one session share its CPU time equally (the child shares flakelab's
/// session), so this part does not depend on how loaded the rest of the host
/// is; it falls below the threshold when the stressors were throttled apart
/// from the subject, or when the subject keeps more than `T + 2U` threads
/// busy, and so swamps the stress with its own.
pub fn stress_part_needed(threads: usize, cpus: usize) -> f64 {
    let (t, u) = (threads as f64, cpus.max(1) as f64);
    t / (2.0 * (t + u))
}

/// Whether the stress threads beside a run (or probe) got their share:
/// `Ok(fact)`, `Ok(None)` when the window was too short to judge, or
/// `Err(reason)`.
pub fn judge_stress(what: &str, cpu: Option<&RunCpu>) -> Result<Option<String>, String> {
    let Some((cpu, stress)) = cpu.and_then(|c| c.stress.as_ref().map(|s| (c, s))) else {
        return Err(format!(
            "{what}: the stress threads' CPU time was not measured"
        ));
    };
    if let Some(why) = &stress.error {
        return Err(format!(
            "{what}: {why}, so the stress did not reach the child's CPUs"
        ));
    }
    if cpu.window_s < STRESS_MIN_WINDOW_S {
        return Ok(None);
    }
    let share = cpu.stress_share().unwrap_or(0.0);
    let threads = stress.threads;
    if share < STRESS_MIN_SHARE {
        return Err(format!(
            "{what}: the {threads} stress thread(s) got {} of a CPU each over {:.2} s, below {}: they did not run (a CPU quota, or frozen)",
            percent(share),
            cpu.window_s,
            percent(STRESS_MIN_SHARE)
        ));
    }
    let needed = stress_part_needed(threads, stress.cpus);
    match cpu.stress_part() {
        Some(part) if part < needed => Err(format!(
            "{what}: the {threads} stress thread(s) got {} of the CPU time the run used ({:.2} s of {:.2} s), below {}: the subject's own busy threads swamped them, or they were throttled apart from it",
            percent(part),
            stress.cpu_s,
            stress.cpu_s + cpu.subject_s.unwrap_or(0.0),
            percent(needed)
        )),
        part => Ok(Some(format!(
            "{what}: {threads} stress thread(s) got {} of a CPU each{}",
            percent(share),
            part.map(|p| format!(", {} of the CPU time the run used", percent(p)))
                .unwrap_or_default()
        ))),
    }
}

/// `31%`, `0.4%`.
pub fn percent(share: f64) -> String {
    let p = share * 100.0;
    if p > 0.0 && p < 1.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
    }
}

/// Judges a probe's result: `Ok(fact)` when it proves the perturbation
/// applied, `Err(reason)` when it does not.
pub fn judge(
    probe: &Probe,
    end: &ProcessEnd,
    output: &str,
    seen: &Observed,
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
        Expect::Offset { zone, tz } => judge_offset(what, zone, tz, output, seen.real_now),
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
                Ok(format!(
                    "{what}: child's clock reads {} s from the real clock",
                    read - seen.real_now
                ))
            } else {
                Err(format!(
                    "{what}: child's clock reads {} s from the real clock, expected {seconds} s: the clock preload did not take effect",
                    read - seen.real_now
                ))
            }
        }
        Expect::ClockAt { epoch } => {
            let read = read_epoch(what, output)?;
            if (read - epoch).abs() <= CLOCK_TOLERANCE_S {
                Ok(format!(
                    "{what}: child's clock reads {read} (epoch seconds)"
                ))
            } else {
                Err(format!(
                    "{what}: child's clock reads {read}, expected {epoch}: the clock preload did not take effect"
                ))
            }
        }
        Expect::NoRoute => {
            let route = output
                .lines()
                .find_map(|l| l.strip_prefix("route: "))
                .unwrap_or("(not reported)");
            let lo = output
                .lines()
                .find_map(|l| l.strip_prefix("loopback: "))
                .unwrap_or("(not reported)");
            if !route.starts_with("unreachable") {
                Err(format!("{what}: the child still has a route out ({route})"))
            } else if lo != "ok" {
                Err(format!(
                    "{what}: loopback does not work in the namespace ({lo})"
                ))
            } else {
                Ok(format!(
                    "{what}: no route to 192.0.2.1 ({route}); loopback round trip ok"
                ))
            }
        }
        Expect::Cpus { count } => {
            let n: Option<usize> = output
                .lines()
                .find_map(|l| l.strip_prefix("cpus: "))
                .and_then(|v| v.split_whitespace().next()?.parse().ok());
            match n {
                Some(n) if n == *count => {
                    Ok(format!("{what}: child's affinity mask has {n} CPU(s)"))
                }
                other => Err(format!(
                    "{what}: child's affinity mask has {} CPU(s), expected {count}",
                    other.map_or("?".into(), |n| n.to_string())
                )),
            }
        }
        Expect::Rlimit { resource, value } => {
            let line = output
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{resource} ")));
            let mut nums = line.unwrap_or("").split_whitespace();
            let soft = nums.next().unwrap_or("?");
            let hard = nums.next().unwrap_or("?");
            if soft == value.to_string() && hard == value.to_string() {
                Ok(format!(
                    "{what}: child's {resource} limit is {soft} (soft and hard)"
                ))
            } else {
                Err(format!(
                    "{what}: child's {resource} limit is {soft}/{hard}, expected {value}"
                ))
            }
        }
        Expect::Stress => match judge_stress(what, seen.cpu.as_ref())? {
            Some(fact) => Ok(fact),
            None => Err(format!(
                "{what}: the probe ended before its stress could be measured"
            )),
        },
    }
}

/// The zone probe: the offset the child printed against the one `zone`
/// has at the instant the child's clock read (its own, faked or not), so a
/// zone composes with a shifted clock.
fn judge_offset(
    what: &str,
    zone: &str,
    tz: &jiff::tz::TimeZone,
    output: &str,
    real_now: i64,
) -> Result<String, String> {
    let (read, seen) = output
        .trim()
        .split_once(' ')
        .and_then(|(s, z)| Some((s.parse::<i64>().ok()?, z)))
        .ok_or_else(|| {
            format!(
                "{what}: `date '+%s %z'` printed {:?}, not a time and an offset",
                excerpt(output)
            )
        })?;
    let expected = super::calendar::offset_at(tz, read)
        .ok_or_else(|| format!("{what}: the child's clock reads {read}, out of range"))?;
    let when = if (read - real_now).abs() <= CLOCK_TOLERANCE_S {
        "now".to_string()
    } else {
        format!(
            "at {}, the instant the child's clock reads",
            jiff::Timestamp::from_second(read)
                .map(crate::catalog::values::instant_text)
                .unwrap_or_else(|_| read.to_string())
        )
    };
    if seen == expected {
        Ok(format!(
            "{what}: child's UTC offset is {seen}, as {zone} has {when}"
        ))
    } else {
        Err(format!(
            "{what}: child's UTC offset is {seen}, expected {expected} for {zone} {when}: the zone did not reach the child"
        ))
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
            &Observed {
                real_now: 1_000_000,
                cpu: None,
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
    fn affinity_and_rlimit_probes() {
        assert!(judge_(&probe(Expect::Cpus { count: 1 }), &ok(), "cpus: 1 (0)\n").is_ok());
        assert!(judge_(&probe(Expect::Cpus { count: 1 }), &ok(), "cpus: 2 (0,1)\n").is_err());
        let r = probe(Expect::Rlimit {
            resource: "nofile".into(),
            value: 64,
        });
        assert!(judge_(&r, &ok(), "nofile 64 64\n").is_ok());
        assert!(judge_(&r, &ok(), "nofile 64 1024\n").is_err());
    }

    /// `threads` stressors on `cpus` CPUs that got `cpu_s` in `window_s`,
    /// beside a subject that got `subject_s`.
    fn measured(threads: usize, cpus: usize, cpu_s: f64, window_s: f64, subject_s: f64) -> RunCpu {
        RunCpu {
            window_s,
            subject_s: Some(subject_s),
            stress: Some(crate::record::StressCpu {
                threads,
                cpus,
                cpu_s,
                error: None,
            }),
        }
    }

    #[test]
    fn stress_is_applied_only_when_the_stressors_got_their_share() {
        let judged = |c: RunCpu| judge_stress("cpu-stress=2x", Some(&c));
        // 4 threads on 2 CPUs of a host loaded by others: 16% of a CPU each
        // (as measured at load 8), beside an idle subject.
        let fact = judged(measured(4, 2, 0.64, 1.0, 0.01)).unwrap().unwrap();
        assert_eq!(
            fact,
            "cpu-stress=2x: 4 stress thread(s) got 16% of a CPU each, 98% of the CPU time the run used"
        );
        // Beside a subject that keeps both CPUs busy: 4 / (4 + 2) of the
        // run's CPU time; the threshold is half of that.
        assert_eq!(stress_part_needed(4, 2), 1.0 / 3.0);
        assert!(judged(measured(4, 2, 1.2, 1.0, 0.6)).is_ok());
        // A subject with 12 busy threads swamps 4 stressors: 25% < 33%.
        let swamped = judged(measured(4, 2, 0.5, 1.0, 1.5)).unwrap_err();
        assert!(
            swamped.contains("got 25% of the CPU time the run used"),
            "{swamped}"
        );
        assert!(swamped.contains("below 33%"), "{swamped}");
        // Stressors that barely ran, whatever the subject did.
        let starved = judged(measured(4, 2, 0.04, 1.0, 0.0)).unwrap_err();
        assert!(starved.contains("got 1% of a CPU each"), "{starved}");
        assert!(starved.contains("did not run"), "{starved}");
        // A thread that could not be placed.
        let mut stranded = measured(1, 1, 0.0, 1.0, 0.0);
        stranded.stress.as_mut().unwrap().error =
            Some("a stress thread cannot run on CPU 3: EINVAL".into());
        assert!(judged(stranded)
            .unwrap_err()
            .contains("cannot run on CPU 3"));
        // Too short to judge: recorded, not decided.
        assert_eq!(judged(measured(4, 2, 0.0, 0.1, 0.0)), Ok(None));
        // Not measured at all is never applied.
        assert!(judge_stress("x", None).is_err());
        // The probe needs a verdict: too short is a failure there.
        let p = probe(Expect::Stress);
        let seen = |c: RunCpu| Observed {
            real_now: 0,
            cpu: Some(c),
        };
        assert!(judge(&p, &ok(), "", &seen(measured(2, 2, 0.6, 0.5, 0.0))).is_ok());
        assert!(judge(&p, &ok(), "", &seen(measured(2, 2, 0.0, 0.1, 0.0)))
            .unwrap_err()
            .contains("ended before"));
    }

    #[test]
    fn a_stress_that_could_not_start_is_not_applied_and_says_why() {
        use crate::exec::stress::{Meter, StressGuard, StressPlan};
        let plan = StressPlan {
            threads: 64,
            cpus: None,
            allowed: 2,
        };
        // The process limit refuses the first thread (injected: root is
        // not held to RLIMIT_NPROC).
        let refuse = |_: String, _: Box<dyn FnOnce() + Send>| {
            Err(std::io::Error::from_raw_os_error(
                nix::errno::Errno::EAGAIN as i32,
            ))
        };
        let guard = StressGuard::start_with(&plan, &refuse);
        let (cpu, _) = Meter::start(Some(&guard)).finish(Some((&plan, &guard)), true);
        assert_eq!(
            judge_stress("cpu-stress=64x", Some(&cpu)),
            Err("cpu-stress=64x: stress thread 1 of 64 cannot start: Resource temporarily unavailable (os error 11), so the stress did not reach the child's CPUs".to_string())
        );
    }

    fn ok() -> ProcessEnd {
        ProcessEnd::Exited { code: 0 }
    }

    fn tz_probe(zone: &str) -> Probe {
        Probe {
            perturbation: format!("tz={zone}"),
            argv: vec!["date".into(), "+%s %z".into()],
            expect: Expect::Offset {
                zone: zone.into(),
                tz: jiff::tz::TimeZone::get(zone).unwrap(),
            },
        }
    }

    #[test]
    fn offset_probe_catches_a_zone_that_fell_back_to_utc() {
        // The test's real clock is in 1970, when Tokyo had +0900 too.
        let p = tz_probe("Asia/Tokyo");
        assert_eq!(
            judge_(&p, &ok(), "1000003 +0900\n").unwrap(),
            "tz=Asia/Tokyo: child's UTC offset is +0900, as Asia/Tokyo has now"
        );
        let err = judge_(&p, &ok(), "1000003 +0000\n").unwrap_err();
        assert!(err.contains("did not reach the child"), "{err}");
        assert!(judge_(&p, &ProcessEnd::Exited { code: 1 }, "").is_err());
        assert!(judge_(&p, &ok(), "+0900\n")
            .unwrap_err()
            .contains("not a time and an offset"));
    }

    #[test]
    fn the_offset_is_judged_at_the_instant_the_childs_clock_reads() {
        // The real clock (`real_now` = 1_000_000) is in January 1970: Berlin
        // has +0100. A child whose clock reads July 2027 sees +0200.
        let p = tz_probe("Europe/Berlin");
        let july = "2027-07-15T12:00:00Z".parse::<jiff::Timestamp>().unwrap();
        let out = format!("{} +0200\n", july.as_second());
        assert_eq!(
            judge_(&p, &ok(), &out).unwrap(),
            "tz=Europe/Berlin: child's UTC offset is +0200, as Europe/Berlin has at 2027-07-15T12:00:00Z, the instant the child's clock reads"
        );
        let winter = format!("{} +0100\n", july.as_second());
        let err = judge_(&p, &ok(), &winter).unwrap_err();
        assert_eq!(
            err,
            "tz=Europe/Berlin: child's UTC offset is +0100, expected +0200 for Europe/Berlin at 2027-07-15T12:00:00Z, the instant the child's clock reads: the zone did not reach the child"
        );
        assert!(judge_(&p, &ok(), "1000000 +0100\n").is_ok());
        assert!(judge_(&p, &ok(), "1000000 +0200\n")
            .unwrap_err()
            .contains("expected +0100 for Europe/Berlin now"));
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
