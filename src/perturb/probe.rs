//! Probes: what a child started through the cell's launch must report for a
//! perturbation to count as applied, and the judgement of what it reported:
//! the process must succeed, then its output is judged in its kind's file
//! (`perturb::kind`). Pure: the probe's process is run by `exec`.

pub use super::kind::cpu_stress::{
    judge_stress, percent, stress_part_needed, STRESS_MIN_SHARE, STRESS_MIN_WINDOW_S,
};
pub use super::kind::faketime::CLOCK_TOLERANCE_S;
pub use super::kind::netns::loopback_round_trip;
pub use super::kind::{Expect, Observed, Probe};

use crate::record::ProcessEnd;

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
    super::kind::judge(what, &probe.expect, output, seen)
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
    super::kind::excerpt(output)
}

/// What the `__probe` helper reports: the child's side of every probe, run
/// inside the cell's launch path, in its kind's file.
pub mod helper {
    /// `flakelab __probe WHAT ARGS…`: the lines the probe's judge reads.
    pub fn report(what: &str, args: &[String]) -> Result<String, String> {
        crate::perturb::kind::probe_child(what, args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::RunCpu;
    use std::collections::BTreeMap;

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
