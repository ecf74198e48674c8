//! One home per perturbation kind: each kind's file holds what it prepares
//! (its launch change and its probe), how its probe's output is judged, its
//! sham, and which flake classes a cell of it can show or argue against.
//!
//! This file only delegates: every match over [`Kind`] here names every
//! kind (no wildcard arm), so a new variant of `catalog::Kind` is led by
//! the compiler to each place it must answer. A new kind is its variant and
//! grammar in `catalog/perturbation.rs`, one file here, one arm in each
//! match below, its entries in `perturbations/*.toml` and its page in the
//! book (`book/src/design/architecture.md` keeps the list).

mod cpu_pin;
pub mod cpu_stress;
mod env;
pub(crate) mod faketime;
mod locale;
pub mod netns;
mod orders;
mod race;
mod rlimit;
mod shuffle;
pub(crate) mod tz;
mod workers;

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::{HostFacts, Prepared};
use crate::catalog::class::FlakeClass;
use crate::catalog::recipe::Recipe;
use crate::catalog::values::ClockShift;
use crate::catalog::{Cell, Kind};
use crate::error::Result;
use crate::record::RunCpu;
use crate::redact::Redaction;

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

/// What a probe's output must show (one variant per kind that has a probe;
/// each is judged in its kind's file).
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
    /// ([`cpu_stress::judge_stress`]).
    Stress,
}

/// What the harness observed around a probe.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    /// The real time when the probe ended (seconds since the epoch).
    pub real_now: i64,
    /// The CPU time the probe and its stress threads got, when measured.
    pub cpu: Option<RunCpu>,
}

/// Judges what a probe that exited 0 printed, in its kind's file:
/// `Ok(fact)` when it proves the perturbation applied.
pub(super) fn judge(
    what: &str,
    expect: &Expect,
    output: &str,
    seen: &Observed,
) -> std::result::Result<String, String> {
    match expect {
        Expect::Offset { zone, tz } => tz::judge(what, zone, tz, output, seen.real_now),
        Expect::Locale { locale } => locale::judge(what, locale, output),
        Expect::Env { set, unset, secret } => env::judge(what, set, unset, secret, output),
        Expect::ClockShift { seconds } => faketime::judge_shift(what, *seconds, output, seen),
        Expect::ClockAt { epoch } => faketime::judge_at(what, *epoch, output),
        Expect::NoRoute => netns::judge(what, output),
        Expect::Cpus { count } => cpu_pin::judge(what, *count, output),
        Expect::Rlimit { resource, value } => rlimit::judge(what, resource, *value, output),
        Expect::Stress => cpu_stress::judge(what, seen),
    }
}

/// The child's side of a probe (`flakelab __probe WHAT ARGS…`): the lines
/// its kind's judge reads, or why `what` names no probe.
pub fn probe_child(what: &str, args: &[String]) -> std::result::Result<String, String> {
    match what {
        "env" => Ok(env::child(args)),
        "net" => Ok(netns::child()),
        "affinity" => Ok(cpu_pin::child()),
        "rlimit" => match args {
            [resource] => Ok(rlimit::child(resource)),
            _ => Err("usage: __probe rlimit RESOURCE".into()),
        },
        other => Err(format!("no probe named `{other}`")),
    }
}

/// The first 200 characters of a probe's output, on one line.
pub(super) fn excerpt(output: &str) -> String {
    let t = output.trim();
    if t.is_empty() {
        return "(none)".into();
    }
    let s: String = t.chars().take(200).collect();
    s.replace('\n', " | ")
}

/// A cell being prepared: what every run of it changes so far, and what the
/// kinds read while adding to it.
pub(super) struct Preparing<'a> {
    /// What the cell's runs change so far.
    pub out: Prepared,
    /// The cell.
    pub cell: &'a Cell,
    /// This host.
    pub host: &'a HostFacts,
    /// The runner's recipe, if one recognised the command.
    pub recipe: Option<&'a Recipe>,
    /// Which values are credentials.
    pub redaction: &'a Redaction,
    /// The real time now (a clock start is read against it).
    pub now: jiff::Timestamp,
    /// The clock perturbation's label and shift, finished in
    /// [`faketime::finish`] once the cell's zone is known.
    clock: Option<(String, ClockShift)>,
    /// flakelab's own clock preload, when the clock uses it.
    own_clock: Option<PathBuf>,
}

impl<'a> Preparing<'a> {
    /// An empty preparation of `cell`.
    pub fn new(
        cell: &'a Cell,
        host: &'a HostFacts,
        recipe: Option<&'a Recipe>,
        redaction: &'a Redaction,
    ) -> Self {
        Preparing {
            out: Prepared::default(),
            cell,
            host,
            recipe,
            redaction,
            now: jiff::Timestamp::now(),
            clock: None,
            own_clock: None,
        }
    }

    /// `flakelab __probe ARGS…`: a probe run by our own executable.
    fn own_probe(&self, args: &[&str]) -> Vec<String> {
        let mut argv = vec![self.host.self_exe.display().to_string(), "__probe".into()];
        argv.extend(args.iter().map(|a| a.to_string()));
        argv
    }
}

/// Adds what perturbation `kind` (recorded as `label`) changes to the cell.
pub(super) fn prepare(kind: &Kind, label: String, p: &mut Preparing) -> Result<()> {
    match kind {
        Kind::Tz { zone } => tz::prepare(zone, label, p),
        Kind::Locale { locale } => locale::prepare(locale, label, p),
        Kind::Env { set, unset } => env::prepare(set, unset, label, p),
        Kind::Faketime { clock } => faketime::prepare(clock, label, p),
        Kind::Netns => netns::prepare(label, p),
        Kind::CpuStress { amount } => cpu_stress::prepare(amount, label, p),
        Kind::CpuPin { cpus } => cpu_pin::prepare(*cpus, label, p),
        Kind::Shuffle => shuffle::prepare(p),
        Kind::Orders => orders::prepare(p),
        Kind::Workers { amount } => workers::prepare(amount, p),
        Kind::Race { cpu } => race::prepare(cpu, p),
        Kind::Rlimit { resource, value } => rlimit::prepare(resource, *value, label, p),
    }
}

/// What is settled once every perturbation of the cell was added: the
/// stress beside a pinned child, the clock's value and probe.
pub(super) fn finish(mut p: Preparing) -> Result<Prepared> {
    cpu_stress::finish(&mut p.out);
    faketime::finish(&mut p)?;
    Ok(p.out)
}

/// Whether the kind is the runner's own option, so it needs a recipe.
pub fn needs_recipe(kind: &Kind) -> bool {
    match kind {
        Kind::Shuffle => shuffle::NEEDS_RECIPE,
        Kind::Orders => orders::NEEDS_RECIPE,
        Kind::Workers { .. } => workers::NEEDS_RECIPE,
        Kind::Race { .. } => race::NEEDS_RECIPE,
        Kind::Tz { .. } => tz::NEEDS_RECIPE,
        Kind::Locale { .. } => locale::NEEDS_RECIPE,
        Kind::Env { .. } => env::NEEDS_RECIPE,
        Kind::Faketime { .. } => faketime::NEEDS_RECIPE,
        Kind::Netns => netns::NEEDS_RECIPE,
        Kind::CpuStress { .. } => cpu_stress::NEEDS_RECIPE,
        Kind::CpuPin { .. } => cpu_pin::NEEDS_RECIPE,
        Kind::Rlimit { .. } => rlimit::NEEDS_RECIPE,
    }
}

/// A mechanism's sham cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sham {
    /// The mechanism, in words.
    pub mechanism: &'static str,
    /// The sham's cell spec.
    pub spec: String,
}

/// The sham of the mechanism `kind` uses on this host, if it has one.
pub fn sham(kind: &Kind, host: &HostFacts) -> Option<Sham> {
    match kind {
        Kind::Tz { .. } => tz::sham(host),
        Kind::Faketime { .. } => faketime::sham(),
        Kind::Netns => netns::sham(host),
        Kind::CpuPin { .. } => cpu_pin::sham(host),
        Kind::Rlimit { .. } => rlimit::sham(host),
        Kind::CpuStress { .. } => cpu_stress::sham(),
        Kind::Locale { .. } => locale::sham(),
        Kind::Env { .. } => env::sham(),
        Kind::Shuffle => shuffle::sham(),
        Kind::Orders => orders::sham(),
        Kind::Workers { .. } => workers::sham(),
        Kind::Race { .. } => race::sham(),
    }
}

/// The sham of the setup between fork and exec (`netns`, `cpu-pin`,
/// `rlimit`): pinned to every CPU the harness may use, the same setup with
/// a null parameter.
fn setup_sham(host: &HostFacts) -> Option<Sham> {
    Some(Sham {
        mechanism: "the setup before exec",
        spec: format!("cpu-pin={}", host.cpus.len().max(1)),
    })
}

/// The part a kind plays beside other cells in the classification: a clean
/// or differing cell of one role tells another kind's difference apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// It changes the local zone only.
    Zone,
    /// It changes the wall clock.
    Clock,
    /// It changes the CPU time available to the run.
    Load,
    /// It changes the test order.
    Order,
    /// It runs more of the subject at once (separate processes).
    Concurrency,
    /// None of the above.
    Other,
}

/// What a failure names that separate processes contest (`a port`,
/// `a path`, `a lock`), if it names one.
pub fn contested(failure: &str) -> Option<&'static str> {
    workers::contested(&[failure.to_string()]).map(|(what, _)| what)
}

/// The kind's role beside other cells.
pub fn role(kind: &Kind) -> Role {
    match kind {
        Kind::Tz { .. } => tz::ROLE,
        Kind::Faketime { .. } => faketime::ROLE,
        Kind::CpuStress { .. } => cpu_stress::ROLE,
        Kind::CpuPin { .. } => cpu_pin::ROLE,
        Kind::Shuffle => shuffle::ROLE,
        Kind::Orders => orders::ROLE,
        Kind::Workers { .. } => workers::ROLE,
        Kind::Locale { .. } => locale::ROLE,
        Kind::Env { .. } => env::ROLE,
        Kind::Netns => netns::ROLE,
        Kind::Race { .. } => race::ROLE,
        Kind::Rlimit { .. } => rlimit::ROLE,
    }
}

/// What the cells beside one cell showed, for the roles it is told apart
/// by.
#[derive(Debug, Clone, Copy, Default)]
pub struct Beside<'a> {
    /// A cell of the role that ran clean with the power to differ.
    pub clean: Option<&'a str>,
    /// A cell of the role differs from the baseline.
    pub differs: bool,
}

/// What the classification knows when it reads a differing cell.
#[derive(Debug, Clone, Copy)]
pub struct Seen<'a> {
    /// The cell's name.
    pub cell: &'a str,
    /// When the session started (a clock start is judged against it).
    pub start: Option<jiff::Timestamp>,
    /// A sentence added when the cell combines several perturbations.
    pub combined: &'a str,
    /// The baseline was measured and none of its runs failed.
    pub baseline_clean: bool,
    /// The zone cells beside it.
    pub zone: Beside<'a>,
    /// The CPU-load cells beside it.
    pub load: Beside<'a>,
    /// The clock cells that ran clean with the power to differ: each
    /// one's name and its `faketime` value.
    pub clean_clocks: &'a [(String, String)],
    /// The signatures of the cell's failures (its runs' and its differing
    /// test's), most frequent first.
    pub failures: &'a [String],
    /// The cell's row in words.
    pub row: &'a str,
}

/// What one kind of a differing cell says about a class.
#[derive(Debug, Clone, PartialEq)]
pub enum Reading {
    /// The cell's row supports the class, because …
    Claim(FlakeClass, String),
    /// The class stays open, because …
    Open(FlakeClass, String),
}

/// The classes a cell of `kind` examines: what its coverage counts, and
/// what it argues against when it ran clean with the power to differ.
pub fn examines(kind: &Kind, start: Option<jiff::Timestamp>) -> Vec<FlakeClass> {
    match kind {
        Kind::Tz { .. } => tz::examines(),
        Kind::Faketime { clock } => faketime::examines(clock, start),
        Kind::Locale { .. } => locale::examines(),
        Kind::Env { set, .. } => env::examines(set),
        Kind::Netns => netns::examines(),
        Kind::CpuStress { .. } => cpu_stress::examines(),
        Kind::CpuPin { .. } => cpu_pin::examines(),
        Kind::Workers { .. } => workers::examines(),
        Kind::Shuffle => shuffle::examines(),
        Kind::Orders => orders::examines(),
        Kind::Rlimit { .. } => rlimit::examines(),
        Kind::Race { .. } => race::examines(),
    }
}

/// What a cell that differs from the baseline says through `kind`: empty
/// when the kind names no class (then the cell is unmapped).
pub fn read(kind: &Kind, seen: &Seen) -> Vec<Reading> {
    match kind {
        Kind::Tz { zone } => tz::read(zone, seen),
        Kind::Faketime { clock } => faketime::read(clock, seen),
        Kind::Locale { locale } => locale::read(locale, seen),
        Kind::Env { set, .. } => env::read(set, seen),
        Kind::Netns => netns::read(seen),
        Kind::CpuStress { .. } => cpu_stress::read(seen),
        Kind::CpuPin { .. } => cpu_pin::read(seen),
        Kind::Workers { .. } => workers::read(seen),
        Kind::Shuffle => shuffle::read(seen),
        Kind::Orders => orders::read(seen),
        Kind::Race { .. } => race::read(seen),
        Kind::Rlimit { resource, value } => rlimit::read(resource, *value, seen),
    }
}
