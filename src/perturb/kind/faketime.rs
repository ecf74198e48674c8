//! `faketime=+365d|@…`: the wall clock shifted or started at an instant
//! (monotonic clocks and sleeps untouched): flakelab's own preload
//! (`perturb::clock`), or libfaketime when `FAKETIME_LIB` or a recipe
//! chooses it (`perturb::faketime`). Probe: `date +%s` reads the shifted
//! clock; each run's processes are checked for a bypass (`perturb::proof`).
//! Sham: `faketime=+0`, the preload with no shift. Classes: clock and zone,
//! and an expiring date when the clock moves forward.

use super::{Expect, Observed, Preparing, Reading, Role, Seen, Sham};
use crate::catalog::class::FlakeClass;
use crate::catalog::values::{self, parse_clock_shift, ClockShift};
use crate::catalog::Cell;
use crate::error::{Error, Result};
use crate::exec::launch::PreloadCleanup;
use crate::perturb::{calendar, clock, env, faketime, proof, HostFacts, Missing};

pub(super) const NEEDS_RECIPE: bool = false;
pub(super) const ROLE: Role = Role::Clock;

/// How far a faked clock may be from the expected reading: the probe's
/// `date` starts and reads the clock within milliseconds, so 10 s covers a
/// heavily loaded host while being far below the smallest accepted shift
/// (60 s).
pub const CLOCK_TOLERANCE_S: i64 = 10;

pub(super) fn prepare(text: &str, label: String, p: &mut Preparing) -> Result<()> {
    let shift = values::parse_clock_shift(text)
        .map_err(|m| Error::usage(m, "see `flakelab run --help`"))?;
    // The mechanism is given a relative shift or a UTC instant.
    let shift = match start_zone(p.cell, p.host).and_then(|zone| {
        calendar::start_instant(&shift, zone.as_ref().map(|(n, tz)| (n.as_str(), tz)), p.now)
            .map_err(|m| {
                Error::usage(
                    format!("`{label}`: {m}"),
                    "give a time that exists once in the zone, or a UTC instant @YYYY-MM-DDTHH:MM:SSZ",
                )
            })
    })? {
        Some(at) => ClockShift::Instant { at },
        None => shift,
    };
    let needs = p.recipe.and_then(|r| r.faketime.as_ref().map(|f| (r, f)));
    if p.host.faketime_override.is_none() && needs.is_none() {
        // flakelab's own preload; its clock variable is set in `finish`,
        // once the cell's zone is known.
        match clock::install(p.host.cache_dir.as_deref()) {
            Ok(lib) => {
                let env = clock::child_env(&lib, "", p.host.ld_preload.as_deref());
                p.out.claim(&label, &env[0].0, Some(&env[0].1))?;
                p.out.clock_record = true;
                p.own_clock = Some(lib);
                p.clock = Some((label, shift));
            }
            Err(e) => p.out.missing = Some(Missing::from_error(&e)),
        }
        return Ok(());
    }
    // libfaketime, chosen by FAKETIME_LIB or by a recipe that declares its
    // options.
    match faketime::locate(p.host.faketime_override.as_deref()) {
        Ok(lib) => {
            let preload = p.host.ld_preload.as_deref();
            let options = needs.into_iter().flat_map(|(_, f)| &f.env);
            for (k, v) in faketime::child_env(&lib, &shift.faketime_value(), preload, options) {
                p.out.claim(&label, &k, Some(&v))?;
            }
            if let ClockShift::Instant { .. } = shift {
                let (k, v) = values::FAKETIME_FMT_EPOCH;
                p.out.claim(&label, k, Some(v))?;
            }
            if let Some((r, f)) = needs {
                let set: Vec<String> = f.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
                p.out.notes.push(format!(
                    "{label}: the {} recipe sets {} for its runtime ({}); this changes how the subject's time flows beyond the shift",
                    r.name,
                    set.join(" "),
                    f.why.trim()
                ));
            }
            p.out.notes.push(format!(
                "{label}: the clock is shifted by libfaketime ({}), not flakelab's own preload",
                lib.display()
            ));
            p.out.preload_cleanup = Some(PreloadCleanup::Faketime);
            p.out.checks.push(proof::Mechanism::Preload {
                perturbation: label.clone(),
                lib,
                var: "FAKETIME",
                value: p
                    .out
                    .set
                    .get("FAKETIME")
                    .cloned()
                    .unwrap_or_else(|| shift.faketime_value()),
            });
            p.clock = Some((label, shift));
        }
        Err(e) => p.out.missing = Some(Missing::from_error(&e)),
    }
    Ok(())
}

/// The clock's probe, and flakelab's own preload's value: the instant (or
/// shift) the probe expects.
pub(super) fn finish(p: &mut Preparing) -> Result<()> {
    let Some((label, shift)) = p.clock.take() else {
        return Ok(());
    };
    let expect = match shift {
        ClockShift::Relative { seconds } => Expect::ClockShift { seconds },
        ClockShift::Instant { at } => Expect::ClockAt {
            epoch: at.as_second(),
        },
        other => {
            return Err(Error::harness(
                format!("`{label}`: {other:?} was not made an instant"),
                "report this as a bug",
            ))
        }
    };
    if let Some(lib) = p.own_clock.take() {
        // The preload reads epoch seconds: an absolute start is the
        // instant the probe expects.
        let value = match &expect {
            Expect::ClockAt { epoch } => clock::value(None, Some(*epoch)),
            Expect::ClockShift { seconds } => clock::value(Some(*seconds), None),
            _ => clock::value(Some(0), None),
        };
        p.out.claim(&label, clock::CLOCK_VAR, Some(&value))?;
        p.out.checks.push(proof::Mechanism::Preload {
            perturbation: label.clone(),
            lib,
            var: clock::CLOCK_VAR,
            value,
        });
    }
    p.out.probes.push(super::Probe {
        perturbation: label,
        argv: vec!["date".into(), "+%s".into()],
        expect,
    });
    Ok(())
}

/// The zone a clock start in `cell` is local to: the cell's `tz=`, else
/// the zone the host's processes are in (which the child inherits), with
/// its rules; None when neither can be read (then only UTC instants and
/// shifts can be given).
fn start_zone(cell: &Cell, host: &HostFacts) -> Result<Option<(String, jiff::tz::TimeZone)>> {
    if let Some(zone) = calendar::zone_of(cell) {
        return Ok(Some((
            zone.to_string(),
            env::load_zone(zone, &host.zoneinfo)?,
        )));
    }
    Ok(env::host_zone(host).and_then(|zone| {
        env::load_zone(&zone, &host.zoneinfo)
            .ok()
            .map(|tz| (zone, tz))
    }))
}

/// `date +%s` reads the real time shifted by `seconds`.
pub(super) fn judge_shift(
    what: &str,
    seconds: i64,
    output: &str,
    seen: &Observed,
) -> Result<String, String> {
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

/// `date +%s` reads `epoch` (an absolute start).
pub(super) fn judge_at(what: &str, epoch: i64, output: &str) -> Result<String, String> {
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

fn read_epoch(what: &str, output: &str) -> Result<i64, String> {
    output.trim().parse().map_err(|_| {
        format!(
            "{what}: `date +%s` printed {:?}, not a time",
            super::excerpt(output)
        )
    })
}

pub(super) fn sham() -> Option<Sham> {
    Some(Sham {
        mechanism: "the clock preload",
        spec: "faketime=+0".to_string(),
    })
}

/// Whether a faketime value moves the clock later than the session start.
pub(crate) fn forward(clock: &str, start: Option<jiff::Timestamp>) -> bool {
    match parse_clock_shift(clock) {
        Ok(ClockShift::Relative { seconds }) => seconds > 0,
        Ok(ClockShift::Absolute { at }) => start.is_some_and(|s| {
            at > s
                .to_zoned(jiff::tz::TimeZone::UTC)
                .datetime()
                .saturating_add(jiff::SignedDuration::from_hours(14))
        }),
        Ok(ClockShift::Instant { at }) => start.is_some_and(|s| at > s),
        // Resolved to an instant when planned; never recorded unresolved.
        Ok(ClockShift::BeforeDst { .. }) | Err(_) => false,
    }
}

pub(super) fn examines(clock: &str, start: Option<jiff::Timestamp>) -> Vec<FlakeClass> {
    if forward(clock, start) {
        vec![FlakeClass::ClockAndZone, FlakeClass::ExpiringDate]
    } else {
        vec![FlakeClass::ClockAndZone]
    }
}

/// The instant a clock value puts the child at (a shift from the session
/// start), when it can be told.
fn instant(clock: &str, start: Option<jiff::Timestamp>) -> Option<jiff::Timestamp> {
    match parse_clock_shift(clock).ok()? {
        ClockShift::Relative { seconds } => start?
            .checked_add(jiff::SignedDuration::from_secs(seconds))
            .ok(),
        ClockShift::Instant { at } => Some(at),
        ClockShift::Absolute { at } => at
            .to_zoned(jiff::tz::TimeZone::UTC)
            .ok()
            .map(|z| z.timestamp()),
        ClockShift::BeforeDst { .. } => None,
    }
}

/// A differing clock cell: an expiring date when the clock moved forward
/// fails past an instant while a clock before it passes (the baseline at
/// the present, or a clean clock cell short of it), and no zone cell
/// differs; otherwise the clock (and zone) reading.
pub(super) fn read(clock: &str, seen: &Seen) -> Vec<Reading> {
    let combined = seen.combined;
    if !(forward(clock, seen.start) && seen.baseline_clean && !seen.zone.differs) {
        return vec![Reading::Claim(
            FlakeClass::ClockAndZone,
            format!(
                "only the wall clock ({clock}) moved in this cell, and its runs fail more than the baseline's.{combined}"
            ),
        )];
    }
    let at = instant(clock, seen.start);
    let past = at.map_or_else(
        || format!("with the clock at {clock}"),
        |at| format!("with the clock at {} ({clock})", values::instant_text(at)),
    );
    // The latest clean clock short of this one brackets the instant.
    let before = seen
        .clean_clocks
        .iter()
        .filter_map(|(name, c)| Some((name, instant(c, seen.start)?)))
        .filter(|(_, t)| at.is_some_and(|at| *t < at) && seen.start.is_none_or(|s| *t > s))
        .max_by_key(|(_, t)| *t);
    let passes = match before {
        Some((name, t)) => format!(
            "passes before it (`{name}`, the clock at {}, and the baseline at the present ran clean)",
            values::instant_text(t)
        ),
        None => "passes before it (the baseline, at the present, ran clean)".to_string(),
    };
    let zone = seen
        .zone
        .clean
        .map(|z| format!(" The zone cell `{z}` ran clean: the failure follows the date itself, not the local-time reading."))
        .unwrap_or_default();
    vec![Reading::Claim(
        FlakeClass::ExpiringDate,
        format!(
            "it fails {past} and {passes}: a date the test or its data holds has passed.{zone}{combined}"
        ),
    )]
}
