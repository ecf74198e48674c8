//! `tz=ZONE`: `TZ` set to a zone of the zoneinfo database (an unknown zone
//! silently means UTC in libc, so it is refused before anything runs).
//! Probe: the child's UTC offset at the instant its clock reads. Sham: the
//! host's own zone. Classes: clock and zone.

use super::{Expect, Preparing, Reading, Role, Seen, Sham};
use crate::catalog::class::FlakeClass;
use crate::error::Result;
use crate::perturb::{env, HostFacts};

pub(super) const NEEDS_RECIPE: bool = false;
pub(super) const ROLE: Role = Role::Zone;

pub(super) fn prepare(zone: &str, label: String, p: &mut Preparing) -> Result<()> {
    let tz = env::load_zone(zone, &p.host.zoneinfo)?;
    p.out.claim(&label, "TZ", Some(zone))?;
    p.out.probes.push(super::Probe {
        perturbation: label,
        // One clock read: the offset at the instant the child sees.
        argv: vec!["date".into(), "+%s %z".into()],
        expect: Expect::Offset {
            zone: zone.to_string(),
            tz,
        },
    });
    Ok(())
}

/// The zone probe: the offset the child printed against the one `zone`
/// has at the instant the child's clock read (its own, faked or not), so a
/// zone composes with a shifted clock.
pub(super) fn judge(
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
                super::excerpt(output)
            )
        })?;
    let expected = crate::perturb::calendar::offset_at(tz, read)
        .ok_or_else(|| format!("{what}: the child's clock reads {read}, out of range"))?;
    let when = if (read - real_now).abs() <= super::faketime::CLOCK_TOLERANCE_S {
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

/// `TZ` set at all: the sham is the zone the host's processes are in.
pub(super) fn sham(host: &HostFacts) -> Option<Sham> {
    Some(Sham {
        mechanism: "TZ set",
        spec: format!("tz={}", env::host_zone(host)?),
    })
}

pub(super) fn examines() -> Vec<FlakeClass> {
    vec![FlakeClass::ClockAndZone]
}

pub(super) fn read(zone: &str, seen: &Seen) -> Vec<Reading> {
    vec![Reading::Claim(
        FlakeClass::ClockAndZone,
        format!(
            "only the zone ({zone}) changed in this cell, and its runs fail more than the baseline's.{}",
            seen.combined
        ),
    )]
}
