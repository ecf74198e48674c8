//! Turning a cell into changes to a run's launch, and the probes that prove
//! each change took effect (DESIGN principle 2).
//!
//! [`prepare`] validates every perturbation against this host (an unknown
//! zone or an uninstalled locale is a usage error before anything runs) and
//! returns the environment delta plus one [`Probe`] per perturbation; what
//! each kind changes, how its probe is judged, its sham and the flake
//! classes it speaks to live in its own file under `kind`. The probes are
//! run by `exec` through the same launch path as the cell's runs;
//! [`probe::judge`] reads what the child reported. Nothing here spawns.

pub(crate) mod calendar;
pub mod clock;
pub(crate) mod env;
pub mod faketime;
pub(crate) mod isolate;
pub(crate) mod kind;
pub mod orders;
pub mod probe;
pub(crate) mod proof;
pub(crate) mod sham;

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::catalog::recipe::Recipe;
use crate::catalog::Cell;
use crate::error::{Error, Result};
use crate::exec::launch::PreloadCleanup;

pub use crate::exec::stress::StressPlan;
pub use isolate::Isolation;
pub use probe::{Expect, Probe};

/// A capability this host (or the runner) lacks for a cell, with how to
/// get it: the error of a user who asked for the cell by hand, or the
/// reason a matrix cell is not applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// What is missing.
    pub message: String,
    /// How to fix it.
    pub hint: String,
}

impl Missing {
    /// From an error that carries a hint.
    pub fn from_error(e: &Error) -> Missing {
        Missing {
            message: e.message(),
            hint: e.hint().to_string(),
        }
    }

    /// One line: the message, then the hint.
    pub fn joined(&self) -> String {
        format!("{}; hint: {}", self.message, self.hint)
    }
}

/// What this host offers to perturbations, gathered once per session.
#[derive(Debug, Clone)]
pub struct HostFacts {
    /// flakelab's own executable, used as the probe child.
    pub self_exe: PathBuf,
    /// The zoneinfo database directory.
    pub zoneinfo: PathBuf,
    /// `$FAKETIME_LIB`, when set: the clock cells use libfaketime, this
    /// library, instead of flakelab's own preload.
    pub faketime_override: Option<PathBuf>,
    /// Where flakelab's clock preload is written (`clock::cache_dir`).
    pub cache_dir: Option<PathBuf>,
    /// The harness's own `LD_PRELOAD`, kept in front of the clock preload.
    pub ld_preload: Option<String>,
    /// The harness's own `TZ`, for interpreting absolute clock starts.
    pub tz: Option<String>,
    /// CPUs this process may run on.
    pub cpus: Vec<usize>,
    /// Kinds the subject's runtime cannot honour, with the reason (filled by
    /// runner recipes: e.g. Go reads the clock through the vDSO, so
    /// `faketime` does not reach it). A cell using one is not applied.
    pub unsupported: BTreeMap<String, String>,
}

impl HostFacts {
    /// Reads the facts from this process's environment.
    pub fn detect() -> HostFacts {
        HostFacts {
            self_exe: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("flakelab")),
            zoneinfo: env::zoneinfo_dir(),
            faketime_override: std::env::var_os("FAKETIME_LIB").map(PathBuf::from),
            cache_dir: clock::cache_dir(
                std::env::var_os("XDG_CACHE_HOME"),
                std::env::var_os("HOME"),
            ),
            ld_preload: std::env::var("LD_PRELOAD").ok(),
            tz: std::env::var("TZ").ok(),
            cpus: isolate::allowed_cpus(),
            unsupported: BTreeMap::new(),
        }
    }
}

/// A cell made concrete: what every run of the cell changes, and the probes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prepared {
    /// Variables the cell sets.
    pub set: BTreeMap<String, String>,
    /// Variables the cell removes.
    pub unset: Vec<String>,
    /// One probe per perturbation.
    pub probes: Vec<Probe>,
    /// Setup done in each run's process between fork and exec
    /// (`exec::setup`).
    pub isolation: Isolation,
    /// The preloaded library whose leftovers the executor removes after
    /// each run (libfaketime's, in a clock cell that chose it).
    pub preload_cleanup: Option<PreloadCleanup>,
    /// flakelab's clock preload is in the runs: `exec` gives each run its
    /// anchor and record file, and hands the record back.
    pub clock_record: bool,
    /// Busy threads beside each run.
    pub stress: Option<StressPlan>,
    /// The `cpu-stress` perturbation as recorded, for the verdict on each
    /// run's measured stress.
    pub stress_label: Option<String>,
    /// Why the subject's runtime cannot honour this cell, if it cannot.
    pub not_applicable: Option<String>,
    /// A capability this host lacks for the cell (e.g. libfaketime), as the
    /// error a user who asked for the cell by hand gets.
    pub missing: Option<Missing>,
    /// The runner's own shuffle, with each run's seed (from the recipe).
    pub shuffle: bool,
    /// Systematic orders through the recipe's `[ordered]` mode (`orders`):
    /// each run takes its order from the session (`orders::cover`).
    pub orders: bool,
    /// Why an `orders` cell runs the seeded shuffle instead (the runner
    /// runs no given order).
    pub orders_fallback: Option<String>,
    /// The runner's workers (from the recipe).
    pub workers: Option<usize>,
    /// The runner's race detector (from the recipe), with the GOMAXPROCS
    /// values to sweep (empty: the runner's default).
    pub race: Option<Vec<u32>>,
    /// What the cell does beyond its declared conditions, said on the cell
    /// (libfaketime options a recipe asked for).
    pub notes: Vec<String>,
    /// Mechanisms a program the subject runs can bypass: each run's
    /// processes are inspected for them (`proof`).
    pub checks: Vec<proof::Mechanism>,
    /// Which perturbation set each variable, to refuse conflicting ones.
    owners: BTreeMap<String, String>,
}

impl Prepared {
    /// The argv of the repro line: the same setup with standard tools.
    pub fn repro_argv(&self, argv: &[String]) -> Vec<String> {
        let mut out = isolate::repro_prefix(&self.isolation);
        out.extend_from_slice(argv);
        out
    }

    /// What to inspect in the processes of a run of `command` in this cell:
    /// None when the cell has no mechanism a program can bypass.
    pub fn watch(&self, command: &[String]) -> Option<crate::exec::inspect::Watch> {
        // The isolation is set up in the run's own process before its exec:
        // the first program it runs is the command's.
        let execs: Vec<String> = command.first().cloned().into_iter().collect();
        proof::watch(&self.checks, execs)
    }

    /// What the repro line cannot reproduce by itself, if anything.
    pub fn repro_note(&self) -> Option<String> {
        self.stress.as_ref().map(|s| {
            format!(
                "the repro line does not recreate the CPU stress ({} busy thread{} beside the run); use `flakelab replay RUN`",
                s.threads,
                if s.threads == 1 { "" } else { "s" }
            )
        })
    }

    /// Records that perturbation `by` sets (`Some`) or unsets (`None`) `name`;
    /// a different perturbation already owning `name` is a conflict: the
    /// cell could not prove both applied.
    fn claim(&mut self, by: &str, name: &str, value: Option<&str>) -> Result<()> {
        if let Some(owner) = self.owners.get(name).filter(|o| o.as_str() != by) {
            return Err(Error::usage(
                format!("`{owner}` and `{by}` both set {name} in one cell"),
                "put them in separate cells (separate -p options)",
            ));
        }
        self.owners.insert(name.to_string(), by.to_string());
        match value {
            Some(v) => {
                self.unset.retain(|n| n != name);
                self.set.insert(name.to_string(), v.to_string());
            }
            None => {
                self.set.remove(name);
                if !self.unset.iter().any(|n| n == name) {
                    self.unset.push(name.to_string());
                }
            }
        }
        Ok(())
    }
}

/// Validates a cell against this host and prepares its launch changes and
/// probes, each perturbation in its kind's file (`kind`). Two perturbations
/// that touch the same variable are refused.
pub fn prepare(
    cell: &Cell,
    host: &HostFacts,
    recipe: Option<&Recipe>,
    redaction: &crate::redact::Redaction,
) -> Result<Prepared> {
    let mut p = kind::Preparing::new(cell, host, recipe, redaction);
    for k in &cell.perturbations {
        let label = k.recorded(redaction);
        if let Some(reason) = host.unsupported.get(k.name()) {
            p.out.not_applicable = Some(format!("{label} is not applicable: {reason}"));
        }
        kind::prepare(k, label, &mut p)?;
    }
    kind::finish(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    #[test]
    fn each_perturbation_has_a_probe_and_conflicts_are_refused() {
        let catalog = Catalog::load(None).unwrap();
        let cell = catalog.cell("env=A=1+tz=Asia/Kathmandu+env=-HOME").unwrap();
        let prepared = prepare(&cell, &HostFacts::detect(), None, &Default::default()).unwrap();
        assert_eq!(prepared.set.get("TZ").unwrap(), "Asia/Kathmandu");
        assert_eq!(prepared.unset, ["HOME"]);
        assert_eq!(prepared.probes.len(), 3);
        let clash = catalog
            .cell("env=TZ=Europe/Paris+tz=Asia/Kathmandu")
            .unwrap();
        let err = prepare(&clash, &HostFacts::detect(), None, &Default::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("both set TZ"), "{err}");
    }

    #[test]
    fn the_stress_note_counts_its_threads_in_words() {
        let catalog = Catalog::load(None).unwrap();
        let note = |spec: &str| {
            prepare(
                &catalog.cell(spec).unwrap(),
                &HostFacts::detect(),
                None,
                &Default::default(),
            )
            .unwrap()
            .repro_note()
            .unwrap()
        };
        assert!(
            note("cpu-stress=1").contains("(1 busy thread beside"),
            "{}",
            note("cpu-stress=1")
        );
        assert!(note("cpu-stress=3").contains("(3 busy threads beside"));
    }

    #[test]
    fn a_missing_libfaketime_is_reported_not_raised() {
        let catalog = Catalog::load(None).unwrap();
        let mut host = HostFacts::detect();
        host.faketime_override = Some("/nonexistent/libfaketime.so.1".into());
        let prepared = prepare(
            &catalog.cell("faketime=+365d").unwrap(),
            &host,
            None,
            &Default::default(),
        )
        .unwrap();
        assert!(prepared
            .missing
            .unwrap()
            .hint
            .contains("apt-get install faketime"));
        assert!(prepared.probes.is_empty());
    }

    #[test]
    fn faketime_sets_only_the_shift_unless_the_recipe_needs_more_and_then_says_so() {
        let catalog = Catalog::load(None).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("libfaketime.so.1");
        std::fs::write(&lib, b"").unwrap();
        let mut host = HostFacts::detect();
        host.faketime_override = Some(lib.clone());
        host.ld_preload = Some("/opt/asan.so".into());
        let cell = catalog.cell("faketime=+365d").unwrap();
        let plain = prepare(&cell, &host, None, &Default::default()).unwrap();
        let names: Vec<&str> = plain.set.keys().map(String::as_str).collect();
        assert_eq!(names, ["FAKETIME", "LD_PRELOAD"]);
        assert_eq!(
            plain.set["LD_PRELOAD"],
            format!("/opt/asan.so:{}", lib.display())
        );
        assert_eq!(plain.notes.len(), 1);
        assert!(
            plain.notes[0].contains("shifted by libfaketime"),
            "{:?}",
            plain.notes
        );
        assert!(!plain.clock_record);
        let mut jvm = crate::catalog::recipe::load(None)
            .unwrap()
            .into_iter()
            .find(|r| r.name == "pytest")
            .unwrap();
        jvm.faketime = Some(crate::catalog::recipe::FaketimeNeeds {
            env: BTreeMap::from([("FAKETIME_DONT_FAKE_MONOTONIC".into(), "1".into())]),
            why: "measured to hang without it".into(),
        });
        let needs = prepare(&cell, &host, Some(&jvm), &Default::default()).unwrap();
        assert_eq!(needs.set["FAKETIME_DONT_FAKE_MONOTONIC"], "1");
        assert_eq!(
            needs.notes[0],
            "faketime=+365d: the pytest recipe sets FAKETIME_DONT_FAKE_MONOTONIC=1 for its runtime (measured to hang without it); this changes how the subject's time flows beyond the shift"
        );
    }

    #[test]
    fn a_clock_start_reaches_the_mechanism_as_a_utc_instant_and_the_zone_is_judged_there() {
        let catalog = Catalog::load(None).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("libfaketime.so.1");
        std::fs::write(&lib, b"").unwrap();
        let mut host = HostFacts::detect();
        host.faketime_override = Some(lib);
        host.tz = Some("Asia/Tokyo".into());
        let leap = prepare(
            &catalog.cell("cal-leap-day").unwrap(),
            &host,
            None,
            &Default::default(),
        )
        .unwrap();
        // 29 February 2028, 23:59:58 in Berlin, whatever the host's zone.
        assert_eq!(leap.set["FAKETIME"], "@1835477998");
        assert_eq!(leap.set["FAKETIME_FMT"], "%s");
        assert_eq!(leap.set["TZ"], "Europe/Berlin");
        assert_eq!(leap.probes[0].argv, ["date", "+%s %z"]);
        assert!(
            matches!(&leap.probes[0].expect, Expect::Offset { zone, .. } if zone == "Europe/Berlin")
        );
        assert_eq!(
            leap.probes[1].expect,
            Expect::ClockAt {
                epoch: 1_835_477_998
            }
        );
        // Without a tz= the start is local to the host's zone.
        let tokyo = prepare(
            &catalog.cell("faketime=@2028-02-29 23:59:58").unwrap(),
            &host,
            None,
            &Default::default(),
        )
        .unwrap();
        assert_eq!(tokyo.set["FAKETIME"], "@1835449198");
        // A relative shift stays a shift.
        let shift = prepare(
            &catalog.cell("faketime=+200d+tz=Europe/Berlin").unwrap(),
            &host,
            None,
            &Default::default(),
        )
        .unwrap();
        assert_eq!(shift.set["FAKETIME"], "+17280000");
        assert!(!shift.set.contains_key("FAKETIME_FMT"));
        // A local time the zone repeats names no one instant.
        let err = prepare(
            &catalog
                .cell("tz=Europe/Berlin+faketime=@2027-10-31 02:30:00")
                .unwrap(),
            &host,
            None,
            &Default::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("happens twice"), "{err}");
    }

    #[test]
    fn the_clock_uses_flakelabs_own_preload_with_the_instant_the_probe_expects() {
        let catalog = Catalog::load(None).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut host = HostFacts::detect();
        host.faketime_override = None;
        host.cache_dir = Some(dir.path().join("flakelab"));
        host.ld_preload = Some("/opt/asan.so".into());
        let plain = prepare(
            &catalog.cell("faketime=-30d").unwrap(),
            &host,
            None,
            &Default::default(),
        )
        .unwrap();
        let names: Vec<&str> = plain.set.keys().map(String::as_str).collect();
        assert_eq!(names, [clock::CLOCK_VAR, "LD_PRELOAD"]);
        assert_eq!(plain.set[clock::CLOCK_VAR], "-2592000");
        let lib = clock::install(host.cache_dir.as_deref()).unwrap();
        assert_eq!(
            plain.set["LD_PRELOAD"],
            format!("/opt/asan.so:{}", lib.display())
        );
        assert!(plain.clock_record);
        assert_eq!(plain.preload_cleanup, None);
        assert!(plain.notes.is_empty());
        assert_eq!(plain.checks.len(), 1);
        // An absolute start is the zone's wall time, as epoch seconds.
        let at = prepare(
            &catalog
                .cell("faketime=@2028-02-29 23:59:58+tz=Asia/Tokyo")
                .unwrap(),
            &host,
            None,
            &Default::default(),
        )
        .unwrap();
        assert_eq!(at.set[clock::CLOCK_VAR], "@1835449198");
        let probe = at
            .probes
            .iter()
            .find(|p| p.argv[0] == "date" && p.argv[1] == "+%s");
        assert_eq!(
            probe.unwrap().expect,
            Expect::ClockAt {
                epoch: 1_835_449_198
            }
        );
        // The sham: the same preload, no shift.
        let sham = prepare(
            &catalog.cell("faketime=+0").unwrap(),
            &host,
            None,
            &Default::default(),
        )
        .unwrap();
        assert_eq!(sham.set[clock::CLOCK_VAR], "+0");
        assert_eq!(sham.set["LD_PRELOAD"], plain.set["LD_PRELOAD"]);
        // No cache directory: the user's error names the fix.
        host.cache_dir = None;
        let missing = prepare(
            &catalog.cell("faketime=+365d").unwrap(),
            &host,
            None,
            &Default::default(),
        )
        .unwrap()
        .missing
        .unwrap();
        assert!(missing.hint.contains("XDG_CACHE_HOME"), "{missing:?}");
    }

    #[test]
    fn an_unknown_zone_is_refused_before_anything_runs() {
        let catalog = Catalog::load(None).unwrap();
        let cell = catalog.cell("tz=Mars/Olympus_Mons").unwrap();
        let err = prepare(&cell, &HostFacts::detect(), None, &Default::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unknown time zone `Mars/Olympus_Mons`"),
            "{err}"
        );
        assert!(err.contains("hint:"), "{err}");
    }
}
