//! The flake classes: the causes a flaky test's evidence can speak to,
//! named once for the perturbation kinds (which classes a cell of a kind
//! can show or argue against, `perturb::kind`) and for the evidence block
//! (`evidence::classify`).

use serde::Serialize;

/// The flake classes the evidence can speak to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FlakeClass {
    /// The outcome follows the wall clock or the local zone.
    ClockAndZone,
    /// A fixed date in the test or its data that the clock has (or will) pass.
    ExpiringDate,
    /// The outcome follows test order, or state a test never set itself.
    OrderDependence,
    /// A real network or an external provider owns the failure.
    RealNetwork,
    /// A sleep or poll stands in for readiness, and load stretches it.
    LoadSensitiveSynchronisation,
    /// Separate processes contest one port, path, lock or other host resource.
    HostResourceCollision,
    /// Two threads touch one memory location without ordering, at least one
    /// writing: the runner's race detector reports it.
    DataRace,
    /// A random choice with no recorded seed decides the outcome.
    UnseededRandomness,
    /// The outcome follows the locale (formatting, collation, parsing).
    Locale,
    /// Teardown returns before children, servers or callbacks are quiet.
    IncompleteLifecycle,
    /// The outcome follows the platform or the way in (OS, arch, runtime,
    /// entry path): one context fails where the others pass, on one commit.
    /// Only CI history (`flakelab ingest`) speaks to it.
    PlatformOrEntryPath,
    /// The runner, not a test: a report unreadable, errors outside any
    /// test case. Only direct evidence in ingested reports speaks to it.
    RunnerInfrastructure,
}

impl FlakeClass {
    /// Every class, in the order the evidence lists them.
    pub const ALL: [FlakeClass; 12] = [
        FlakeClass::ClockAndZone,
        FlakeClass::ExpiringDate,
        FlakeClass::OrderDependence,
        FlakeClass::RealNetwork,
        FlakeClass::LoadSensitiveSynchronisation,
        FlakeClass::HostResourceCollision,
        FlakeClass::DataRace,
        FlakeClass::UnseededRandomness,
        FlakeClass::Locale,
        FlakeClass::IncompleteLifecycle,
        FlakeClass::PlatformOrEntryPath,
        FlakeClass::RunnerInfrastructure,
    ];

    /// Whether only CI history (not a lab cell) examines the class.
    pub fn history_only(self) -> bool {
        matches!(
            self,
            FlakeClass::PlatformOrEntryPath | FlakeClass::RunnerInfrastructure
        )
    }

    /// The class in words.
    pub fn label(self) -> &'static str {
        match self {
            FlakeClass::ClockAndZone => "clock and zone",
            FlakeClass::ExpiringDate => "expiring date",
            FlakeClass::OrderDependence => "order dependence / process-global contamination",
            FlakeClass::RealNetwork => "real network / external provider",
            FlakeClass::LoadSensitiveSynchronisation => "load-sensitive synchronisation",
            FlakeClass::HostResourceCollision => "host-resource collision",
            FlakeClass::DataRace => "data race",
            FlakeClass::UnseededRandomness => "unseeded randomness",
            FlakeClass::Locale => "locale",
            FlakeClass::IncompleteLifecycle => "incomplete lifecycle",
            FlakeClass::PlatformOrEntryPath => "platform or entry-path mismatch",
            FlakeClass::RunnerInfrastructure => "runner infrastructure",
        }
    }

    /// A cell (or a ladder) that would examine the class, for a coverage
    /// line that says how to test it.
    pub fn how_to_test(self) -> &'static str {
        match self {
            FlakeClass::ClockAndZone => "-p tz=Pacific/Kiritimati",
            FlakeClass::ExpiringDate => {
                "-p faketime=+365d (a clock past the date, beside the baseline before it)"
            }
            FlakeClass::OrderDependence => "-p shuffle, or a ladder (rung 2)",
            FlakeClass::RealNetwork => "-p netns",
            FlakeClass::LoadSensitiveSynchronisation => "-p cpu-stress=2x",
            FlakeClass::HostResourceCollision => "a ladder (rungs 3 and 5), or -p workers=2x",
            FlakeClass::DataRace => {
                "-p race (the runner's race detector: go test -race, a ThreadSanitizer build)"
            }
            FlakeClass::UnseededRandomness => "a baseline cell",
            FlakeClass::Locale => "-p locale=C.UTF-8 or another installed locale",
            FlakeClass::IncompleteLifecycle => "a ladder (rung 2)",
            FlakeClass::PlatformOrEntryPath | FlakeClass::RunnerInfrastructure => {
                "`flakelab ingest` of CI's JUnit reports into this store"
            }
        }
    }
}
