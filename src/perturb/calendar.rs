//! Calendar instants: a cell's clock value and its zone made into the UTC
//! instant the subject's clock starts at, and the UTC offset a zone has at
//! the instant a child's clock reads.
//!
//! Pure: the zones come in loaded (`perturb::env::load_zone`, from the
//! zoneinfo database the child reads too), the present as an argument. A
//! clock mechanism is only ever given a relative shift or a UTC instant
//! ([`ClockShift::Instant`]): local starts (`@2028-02-29 23:59:58`) are
//! turned into one here with the cell's zone, and `@dst-5s` when the
//! session is planned ([`resolve_cell`]), so the run record and the repro
//! line carry the instant, never "the next change".

use jiff::tz::TimeZone;
use jiff::Timestamp;

use crate::catalog::values::{self, ClockShift};
use crate::catalog::{Cell, Kind};

/// The UTC offset `tz` has at `epoch` (seconds), as `date +%z` prints it
/// (`+0100`); None when the instant is out of range.
pub fn offset_at(tz: &TimeZone, epoch: i64) -> Option<String> {
    let at = Timestamp::from_second(epoch).ok()?;
    Some(super::env::format_offset(tz.to_offset(at).seconds()))
}

/// The instant at which the local date and time `at` happens in `tz`
/// (`zone` names it in errors). A time the zone skips (a spring-forward
/// gap) or repeats (a fall-back hour) is refused: it names no one instant.
pub fn instant_of_local(
    at: jiff::civil::DateTime,
    tz: &TimeZone,
    zone: &str,
) -> Result<Timestamp, String> {
    let ambiguous = tz.to_ambiguous_timestamp(at);
    if ambiguous.is_ambiguous() {
        let what = if matches!(ambiguous.offset(), jiff::tz::AmbiguousOffset::Gap { .. }) {
            "does not exist (the clocks skip it)"
        } else {
            "happens twice (the clocks repeat it)"
        };
        return Err(format!(
            "{} {what} in {zone}: give the UTC instant, e.g. @{}",
            at.strftime("%Y-%m-%d %H:%M:%S"),
            ambiguous
                .compatible()
                .map(values::instant_text)
                .unwrap_or_default()
        ));
    }
    ambiguous
        .unambiguous()
        .map_err(|e| format!("{at} in {zone}: {e}"))
}

/// The next instant after `now` at which `tz`'s UTC offset changes (a
/// daylight-saving change), or None when the zone has none ahead.
pub fn next_offset_change(tz: &TimeZone, now: Timestamp) -> Option<Timestamp> {
    tz.following(now)
        .take(64)
        .map(|t| t.timestamp())
        .find(|&at| {
            let before = at
                .checked_sub(jiff::SignedDuration::from_secs(1))
                .map(|b| tz.to_offset(b));
            before.is_ok_and(|b| b != tz.to_offset(at))
        })
}

/// The instant a clock value starts the child's clock at, given the
/// cell's zone (`zone`: its name and loaded rules; the child's own zone
/// when the cell sets none) and the present: None for a relative shift.
pub fn start_instant(
    shift: &ClockShift,
    zone: Option<(&str, &TimeZone)>,
    now: Timestamp,
) -> Result<Option<Timestamp>, String> {
    match shift {
        ClockShift::Relative { .. } => Ok(None),
        ClockShift::Instant { at } => Ok(Some(*at)),
        ClockShift::Absolute { at } => {
            let (name, tz) = zone.ok_or("a local start needs a zone")?;
            instant_of_local(*at, tz, name).map(Some)
        }
        ClockShift::BeforeDst { seconds } => {
            let (name, tz) = zone.ok_or_else(|| {
                "@dst-… needs a zone in the same cell (tz=ZONE) whose daylight-saving change it is"
                    .to_string()
            })?;
            let change = next_offset_change(tz, now).ok_or_else(|| {
                format!("{name} has no change of its UTC offset ahead: pick a zone with daylight-saving time, such as Europe/Berlin or America/New_York")
            })?;
            change
                .checked_sub(jiff::SignedDuration::from_secs(*seconds))
                .map(Some)
                .map_err(|e| format!("@dst-{seconds}s: {e}"))
        }
    }
}

/// The zone a cell sets with `tz=ZONE`, if any.
pub fn zone_of(cell: &Cell) -> Option<&str> {
    cell.perturbations.iter().find_map(|k| {
        if let Kind::Tz { zone } = k {
            Some(zone.as_str())
        } else {
            None
        }
    })
}

/// Rewrites a cell's `faketime=@dst-…` into the instant it means now
/// (`faketime=@2027-03-14T06:59:55Z`), with `tz` the cell's zone loaded.
/// Every other value is left as written. Done once, when the session is
/// planned: the record, the repro line and a replay carry the instant.
pub fn resolve_cell(cell: &mut Cell, tz: Option<&TimeZone>, now: Timestamp) -> Result<(), String> {
    let zone = zone_of(cell).map(str::to_string);
    for kind in &mut cell.perturbations {
        let Kind::Faketime { clock } = kind else {
            continue;
        };
        let shift = values::parse_clock_shift(clock)?;
        if !matches!(shift, ClockShift::BeforeDst { .. }) {
            continue;
        }
        let named = zone.as_deref().zip(tz);
        let at = start_instant(&shift, named, now)
            .map_err(|e| format!("faketime={clock}: {e}"))?
            .ok_or("a change of the offset is an instant")?;
        *clock = format!("@{}", values::instant_text(at));
    }
    Ok(())
}

/// [`resolve_cell`] on each cell, each with its zone loaded from
/// `zoneinfo` (the database the child reads).
pub fn resolve_cells(
    cells: &mut [Cell],
    zoneinfo: &std::path::Path,
    now: Timestamp,
) -> crate::error::Result<()> {
    for cell in cells {
        let tz = zone_of(cell)
            .map(|zone| super::env::load_zone(zone, zoneinfo))
            .transpose()?;
        resolve_cell(cell, tz.as_ref(), now).map_err(|m| {
            crate::error::Error::usage(
                format!("cell `{}`: {m}", cell.name),
                "`flakelab run --help` lists the faketime forms",
            )
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(name: &str) -> TimeZone {
        TimeZone::get(name).unwrap()
    }

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn epoch(text: &str) -> i64 {
        at(text).as_second()
    }

    #[test]
    fn the_offset_is_the_one_the_zone_has_at_the_instant() {
        let berlin = zone("Europe/Berlin");
        assert_eq!(
            offset_at(&berlin, epoch("2027-12-15T12:00:00Z")).unwrap(),
            "+0100"
        );
        assert_eq!(
            offset_at(&berlin, epoch("2027-07-15T12:00:00Z")).unwrap(),
            "+0200"
        );
        // The southern hemisphere: summer time in January, not in July.
        let sydney = zone("Australia/Sydney");
        assert_eq!(
            offset_at(&sydney, epoch("2027-01-15T12:00:00Z")).unwrap(),
            "+1100"
        );
        assert_eq!(
            offset_at(&sydney, epoch("2027-07-15T12:00:00Z")).unwrap(),
            "+1000"
        );
        // Half an hour of daylight saving, and a quarter-hour offset.
        let lord_howe = zone("Australia/Lord_Howe");
        assert_eq!(
            offset_at(&lord_howe, epoch("2027-01-15T12:00:00Z")).unwrap(),
            "+1100"
        );
        assert_eq!(
            offset_at(&lord_howe, epoch("2027-07-15T12:00:00Z")).unwrap(),
            "+1030"
        );
        assert_eq!(
            offset_at(&zone("America/New_York"), epoch("2027-01-15T12:00:00Z")).unwrap(),
            "-0500"
        );
        // One second either side of Berlin's spring change.
        assert_eq!(
            offset_at(&berlin, epoch("2027-03-28T00:59:59Z")).unwrap(),
            "+0100"
        );
        assert_eq!(
            offset_at(&berlin, epoch("2027-03-28T01:00:00Z")).unwrap(),
            "+0200"
        );
    }

    #[test]
    fn a_local_start_becomes_the_instant_it_names_in_the_zone() {
        let local = |s: &str| -> jiff::civil::DateTime { s.parse().unwrap() };
        let berlin = zone("Europe/Berlin");
        assert_eq!(
            instant_of_local(local("2028-02-29 23:59:58"), &berlin, "Europe/Berlin").unwrap(),
            at("2028-02-29T22:59:58Z")
        );
        let kiritimati = zone("Pacific/Kiritimati");
        assert_eq!(
            instant_of_local(
                local("2027-06-15 00:00:05"),
                &kiritimati,
                "Pacific/Kiritimati"
            )
            .unwrap(),
            at("2027-06-14T10:00:05Z")
        );
        // Skipped and repeated local times name no one instant.
        let gap =
            instant_of_local(local("2027-03-28 02:30:00"), &berlin, "Europe/Berlin").unwrap_err();
        assert!(gap.contains("does not exist"), "{gap}");
        let fold =
            instant_of_local(local("2027-10-31 02:30:00"), &berlin, "Europe/Berlin").unwrap_err();
        assert!(fold.contains("happens twice"), "{fold}");
        assert!(fold.contains("@2027-10-31T00:30:00Z"), "{fold}");
    }

    #[test]
    fn the_next_change_is_found_after_the_present_in_either_direction() {
        let ny = zone("America/New_York");
        assert_eq!(
            next_offset_change(&ny, at("2027-01-01T00:00:00Z")),
            Some(at("2027-03-14T07:00:00Z"))
        );
        assert_eq!(
            next_offset_change(&ny, at("2027-06-01T00:00:00Z")),
            Some(at("2027-11-07T06:00:00Z"))
        );
        assert_eq!(
            next_offset_change(&zone("Australia/Sydney"), at("2027-01-01T00:00:00Z")),
            Some(at("2027-04-03T16:00:00Z"))
        );
        assert_eq!(
            next_offset_change(&zone("Asia/Tokyo"), at("2027-01-01T00:00:00Z")),
            None
        );
    }

    #[test]
    fn a_cell_before_the_next_change_is_resolved_to_its_instant() {
        let catalog = crate::catalog::Catalog::load(None).unwrap();
        let mut cell = catalog
            .cell("tz=America/New_York+faketime=@dst-5s")
            .unwrap();
        let ny = zone("America/New_York");
        resolve_cell(&mut cell, Some(&ny), at("2027-06-01T00:00:00Z")).unwrap();
        assert_eq!(
            cell.canonical(),
            ["tz=America/New_York", "faketime=@2027-11-07T05:59:55Z"]
        );
        assert_eq!(cell.name, "tz=America/New_York+faketime=@dst-5s");
        // Resolved once: a second pass changes nothing.
        let again = cell.clone();
        resolve_cell(&mut cell, Some(&ny), at("2030-01-01T00:00:00Z")).unwrap();
        assert_eq!(cell, again);
        // A zone without daylight saving has no change to stand before.
        let mut tokyo = catalog.cell("tz=Asia/Tokyo+faketime=@dst-5s").unwrap();
        let err = resolve_cell(
            &mut tokyo,
            Some(&zone("Asia/Tokyo")),
            at("2027-06-01T00:00:00Z"),
        )
        .unwrap_err();
        assert!(err.contains("Asia/Tokyo has no change"), "{err}");
        // Other values stay as written.
        let mut plain = catalog
            .cell("tz=Europe/Berlin+faketime=@2028-02-29 23:59:58")
            .unwrap();
        let before = plain.clone();
        resolve_cell(&mut plain, Some(&zone("Europe/Berlin")), Timestamp::now()).unwrap();
        assert_eq!(plain, before);
    }

    #[test]
    fn start_instants_of_each_form() {
        let berlin = zone("Europe/Berlin");
        let now = at("2027-01-01T00:00:00Z");
        let named = Some(("Europe/Berlin", &berlin));
        let shift = |s: &str| values::parse_clock_shift(s).unwrap();
        assert_eq!(start_instant(&shift("+365d"), named, now), Ok(None));
        assert_eq!(
            start_instant(&shift("@2028-02-29T22:59:58Z"), None, now),
            Ok(Some(at("2028-02-29T22:59:58Z")))
        );
        assert_eq!(
            start_instant(&shift("@2027-12-31 23:59:58"), named, now),
            Ok(Some(at("2027-12-31T22:59:58Z")))
        );
        assert_eq!(
            start_instant(&shift("@dst-5s"), named, now),
            Ok(Some(at("2027-03-28T00:59:55Z")))
        );
        assert!(start_instant(&shift("@dst-5s"), None, now)
            .unwrap_err()
            .contains("needs a zone"));
    }
}
