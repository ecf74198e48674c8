//! Probes: what a child started through the cell's launch must report for a
//! perturbation to count as applied, and the judgement of what it reported.
//! Pure: the probe's process is run by `exec`.

use std::collections::BTreeMap;

use crate::record::ProcessEnd;

/// One probe: a command run through the cell's launch, and what it must show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The perturbation it proves, in `kind=value` form.
    pub perturbation: String,
    /// The probe's argv.
    pub argv: Vec<String>,
    /// What its output must show.
    pub expect: Expect,
}

/// What a probe's output must show.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    },
}

/// Judges a probe's result: `Ok(fact)` when it proves the perturbation
/// applied, `Err(reason)` when it does not.
pub fn judge(probe: &Probe, end: &ProcessEnd, output: &str) -> Result<String, String> {
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
        Expect::Env { set, unset } => {
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
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(judge(&tz_probe(), &ok(), "+0545\n").is_ok());
        let err = judge(&tz_probe(), &ok(), "+0000\n").unwrap_err();
        assert!(err.contains("did not reach the child"), "{err}");
        assert!(judge(&tz_probe(), &ProcessEnd::Exited { code: 1 }, "").is_err());
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
        assert!(judge(&p, &ok(), refused).unwrap_err().contains("refused"));
        assert!(judge(&p, &ok(), "LANG=de_DE.UTF-8\nLC_ALL=de_DE.UTF-8\n").is_ok());
    }

    #[test]
    fn env_probe_checks_values_and_absences() {
        let p = Probe {
            perturbation: "env=A=1+env=-B".into(),
            argv: vec![],
            expect: Expect::Env {
                set: BTreeMap::from([("A".into(), "1".into())]),
                unset: vec!["B".into()],
            },
        };
        assert!(judge(&p, &ok(), "set A=1\nunset B\n").is_ok());
        assert!(judge(&p, &ok(), "set A=2\nunset B\n")
            .unwrap_err()
            .contains("A=2"));
        assert!(judge(&p, &ok(), "set A=1\nset B=x\n")
            .unwrap_err()
            .contains("still sees B"));
    }
}
