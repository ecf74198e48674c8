//! Zones and clocks together: a zone composed with a shifted clock is
//! judged at the instant the child's clock reads, and each cell of the
//! `calendar` matrix is applied and flips the fixture test of its own edge
//! only (tests/fixtures/calendar-edges/edges.sh). Nothing here depends on
//! the day it runs: shifts are chosen from today's date, instants are fixed
//! or found in the zone's rules when the session is planned.

use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};

use super::{cell, copy_fixture, Lab};

/// `flakelab run --format json ARGS` with the harness (and so the
/// baseline) in UTC, whatever this host's zone.
fn run_utc(lab: &Lab, args: &[&str]) -> (i32, serde_json::Value) {
    let out = lab
        .cmd()
        .env("TZ", "UTC")
        .args(["run", "--format", "json"])
        .args(args)
        .output()
        .unwrap();
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}); stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), json)
}

fn offset(tz: &TimeZone, at: Timestamp) -> String {
    let s = tz.to_offset(at).seconds();
    format!(
        "{}{:02}{:02}",
        if s < 0 { '-' } else { '+' },
        s.abs() / 3600,
        (s.abs() % 3600) / 60
    )
}

/// The smallest whole number of days (at least 60) that moves `now` into
/// the other half of Berlin's year, at least 3 days from either change.
fn days_into_the_other_half(now: Timestamp) -> (i64, String) {
    let berlin = TimeZone::get("Europe/Berlin").unwrap();
    let today = offset(&berlin, now);
    for days in 60..400 {
        let at = now + SignedDuration::from_hours(24 * days);
        let around: Vec<String> = (-3..=3)
            .map(|d| offset(&berlin, at + SignedDuration::from_hours(24 * d)))
            .collect();
        if around.iter().all(|o| *o != today) {
            return (days, around[3].clone());
        }
    }
    unreachable!("Berlin changes its offset twice a year")
}

#[test]
fn a_zone_composed_with_a_shifted_clock_is_applied_with_the_offset_of_the_faked_date() {
    let lab = Lab::new();
    let (days, expected) = days_into_the_other_half(Timestamp::now());
    let spec = format!("faketime=+{days}d+tz=Europe/Berlin");
    let check = format!("test \"$(date +%z)\" = {expected}");
    let (code, report) = run_utc(&lab, &["-n", "2", "-p", &spec, "--", "sh", "-c", &check]);
    assert_eq!(code, 0, "{report}");
    let c = cell(&report, &spec);
    assert_eq!(c["applied"], true, "{c}");
    // The subject saw the faked date's offset: every run passed.
    assert_eq!(
        (c["k"].as_u64(), c["n"].as_u64()),
        (Some(0), Some(2)),
        "{c}"
    );
    let probes = c["probes"].to_string();
    assert!(
        probes.contains(&format!(
            "child's UTC offset is {expected}, as Europe/Berlin has at "
        )) && probes.contains("the instant the child's clock reads"),
        "{probes}"
    );
    // At baseline (the real date) the same check fails: the offsets differ.
    assert_eq!(cell(&report, "baseline")["k"].as_u64(), Some(2), "{report}");
}

/// The fixture test each calendar cell must fail, alone.
const EDGES: &[(&str, &str)] = &[
    ("cal-dst-change", "edges::dst_change"),
    ("cal-leap-day", "edges::leap_day"),
    ("cal-new-year", "edges::new_year"),
    ("cal-month-end", "edges::month_end"),
    ("cal-date-ahead-of-utc", "edges::date_ahead_of_utc"),
];

/// The fixture tests that fail on the real date in UTC (the baseline, whose
/// clock is the real one): none but on 28 or 29 February, 30 of any month
/// and 31 December, where the answer is the day's and is not checked.
fn real_date_is_an_edge(at: Timestamp) -> bool {
    let d = at.to_zoned(TimeZone::UTC).date();
    matches!((d.month(), d.day()), (2, 28) | (2, 29) | (12, 31)) || d.day() == 30
}

fn failing_tests(c: &serde_json::Value) -> Vec<String> {
    c["tests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["k"].as_u64() != Some(0))
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn every_calendar_cell_is_applied_and_flips_the_test_of_its_own_edge_only() {
    let lab = Lab::new();
    copy_fixture(&lab, "calendar-edges");
    let started = Timestamp::now();
    let (_, report) = run_utc(
        &lab,
        &[
            "-n", "1", "--matrix", "calendar", "--", "sh", "edges.sh", "{junit}",
        ],
    );
    let ended = Timestamp::now();
    let names: Vec<&str> = report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "baseline",
            "cal-dst-change",
            "cal-leap-day",
            "cal-new-year",
            "cal-month-end",
            "cal-date-ahead-of-utc",
            "tz=UTC"
        ],
        "{report}"
    );
    for (name, test) in EDGES {
        let c = cell(&report, name);
        assert_eq!(c["applied"], true, "{c}");
        // The zone at the faked instant and the clock reading, both proven.
        let probes = c["probes"].as_array().unwrap();
        assert_eq!(probes.len(), 2, "{c}");
        assert!(
            probes[0]
                .as_str()
                .unwrap()
                .contains("the instant the child's clock reads"),
            "{c}"
        );
        assert!(
            probes[1].as_str().unwrap().contains("child's clock reads"),
            "{c}"
        );
        assert_eq!(c["tests"].as_array().unwrap().len(), 5, "{c}");
        assert_eq!(failing_tests(c), [test.to_string()], "{name}: {c}");
    }
    // The sham (TZ set to the harness's own zone) flips nothing.
    assert_eq!(failing_tests(cell(&report, "tz=UTC")), Vec::<String>::new());
    if real_date_is_an_edge(started) || real_date_is_an_edge(ended) {
        eprintln!("the baseline is not checked: today is a calendar edge in UTC");
    } else {
        assert_eq!(
            failing_tests(cell(&report, "baseline")),
            Vec::<String>::new(),
            "{report}"
        );
    }
    // The daylight-saving cell was planned to an instant, which the record
    // and its repro line carry: 5 s before New York's next change.
    let c = cell(&report, "cal-dst-change");
    let clock = c["perturbations"][1].as_str().unwrap();
    let at: Timestamp = clock
        .strip_prefix("faketime=@")
        .unwrap_or_else(|| panic!("{clock}"))
        .parse()
        .unwrap_or_else(|e| panic!("{clock}: {e}"));
    let ny = TimeZone::get("America/New_York").unwrap();
    let change = at + SignedDuration::from_secs(5);
    assert_ne!(
        ny.to_offset(change - SignedDuration::from_secs(1)),
        ny.to_offset(change),
        "{clock}"
    );
    assert!(at > started - SignedDuration::from_secs(5), "{clock}");
    let run = lab
        .runs()
        .into_iter()
        .find(|r| r["cell"] == "cal-dst-change")
        .unwrap();
    let repro = run["repro"].as_str().unwrap();
    assert!(
        repro.contains(&format!("FLAKELAB_CLOCK=@{}", at.as_second())) && !repro.contains("@dst"),
        "{repro}"
    );
    // Run by hand, the line fails the same test: the edge is in the line.
    let by_hand = std::process::Command::new("sh")
        .args(["-c", repro])
        .output()
        .unwrap();
    assert_eq!(by_hand.status.code(), Some(1), "{repro}");
    let junit = repro.rsplit(' ').next().unwrap();
    let xml = std::fs::read_to_string(junit).unwrap();
    assert!(
        xml.contains("name=\"dst_change\"><failure") && xml.matches("<failure").count() == 1,
        "{xml}"
    );
}

#[test]
fn the_catalog_lists_the_calendar_matrix_and_its_cells() {
    let lab = Lab::new();
    let out = lab.run(&["perturbations"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("  calendar: calendar edges, each a zone and a clock start"),
        "{text}"
    );
    assert!(
        text.contains("cal-leap-day           tz=Europe/Berlin+faketime=@2028-02-29 23:59:58"),
        "{text}"
    );
    let out = lab.run(&["perturbations", "show", "calendar"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "  cal-date-ahead-of-utc tz=Pacific/Kiritimati + faketime=@2027-06-15 00:00:05"
        ),
        "{text}"
    );
}
