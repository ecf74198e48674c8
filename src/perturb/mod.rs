//! Turning a cell into changes to a run's launch, and the probes that prove
//! each change took effect (DESIGN principle 2).
//!
//! [`prepare`] validates every perturbation against this host (an unknown
//! zone or an uninstalled locale is a usage error before anything runs) and
//! returns the environment delta plus one [`Probe`] per perturbation. The
//! probes are run by `exec` through the same launch path as the cell's runs;
//! [`probe::judge`] reads what the child reported. Nothing here spawns.

pub(crate) mod calendar;
pub mod clock;
pub(crate) mod env;
pub mod faketime;
pub(crate) mod isolate;
pub mod probe;
pub(crate) mod proof;
pub(crate) mod sham;

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::catalog::recipe::Recipe;
use crate::catalog::values::{self, ClockShift};
use crate::catalog::{Cell, Kind};
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
/// probes. Two perturbations that touch the same variable are refused.
pub fn prepare(
    cell: &Cell,
    host: &HostFacts,
    recipe: Option<&Recipe>,
    redaction: &crate::redact::Redaction,
) -> Result<Prepared> {
    let mut out = Prepared::default();
    let exe = host.self_exe.display().to_string();
    let own_probe = |args: &[&str]| -> Vec<String> {
        let mut argv = vec![exe.clone(), "__probe".to_string()];
        argv.extend(args.iter().map(|a| a.to_string()));
        argv
    };
    let mut clock: Option<(String, ClockShift)> = None;
    let now = jiff::Timestamp::now();
    let mut own_clock: Option<PathBuf> = None;
    for kind in &cell.perturbations {
        let label = kind.recorded(redaction);
        if let Some(reason) = host.unsupported.get(kind.name()) {
            out.not_applicable = Some(format!("{label} is not applicable: {reason}"));
        }
        match kind {
            Kind::Tz { zone } => {
                let tz = env::load_zone(zone, &host.zoneinfo)?;
                out.claim(&label, "TZ", Some(zone))?;
                out.probes.push(Probe {
                    perturbation: label,
                    // One clock read: the offset at the instant the child sees.
                    argv: vec!["date".into(), "+%s %z".into()],
                    expect: Expect::Offset {
                        zone: zone.clone(),
                        tz,
                    },
                });
            }
            Kind::Locale { locale } => {
                env::check_locale(locale)?;
                out.claim(&label, "LC_ALL", Some(locale))?;
                out.claim(&label, "LANG", Some(locale))?;
                out.probes.push(Probe {
                    perturbation: label,
                    argv: vec!["locale".into()],
                    expect: Expect::Locale {
                        locale: locale.clone(),
                    },
                });
            }
            Kind::Env { set, unset } => {
                for (k, v) in set {
                    out.claim(&label, k, Some(v))?;
                }
                for k in unset {
                    out.claim(&label, k, None)?;
                }
                let names: Vec<&str> = set.keys().chain(unset).map(String::as_str).collect();
                let mut args = vec!["env"];
                args.extend(names);
                out.probes.push(Probe {
                    perturbation: label,
                    argv: own_probe(&args),
                    expect: Expect::Env {
                        set: set.clone(),
                        unset: unset.clone(),
                        secret: set
                            .keys()
                            .filter(|k| redaction.is_secret(k))
                            .cloned()
                            .collect(),
                    },
                });
            }
            Kind::Faketime { clock: text } => {
                let shift = values::parse_clock_shift(text)
                    .map_err(|m| Error::usage(m, "see `flakelab run --help`"))?;
                // The mechanism is given a relative shift or a UTC instant.
                let shift = match start_zone(cell, host)
                    .and_then(|zone| {
                        calendar::start_instant(&shift, zone.as_ref().map(|(n, tz)| (n.as_str(), tz)), now)
                            .map_err(|m| Error::usage(format!("`{label}`: {m}"), "give a time that exists once in the zone, or a UTC instant @YYYY-MM-DDTHH:MM:SSZ"))
                    })? {
                    Some(at) => ClockShift::Instant { at },
                    None => shift,
                };
                let needs = recipe.and_then(|r| r.faketime.as_ref().map(|f| (r, f)));
                if host.faketime_override.is_none() && needs.is_none() {
                    // flakelab's own preload; its clock variable is set
                    // below, once the cell's zone is known.
                    match clock::install(host.cache_dir.as_deref()) {
                        Ok(lib) => {
                            let env = clock::child_env(&lib, "", host.ld_preload.as_deref());
                            out.claim(&label, &env[0].0, Some(&env[0].1))?;
                            out.clock_record = true;
                            own_clock = Some(lib);
                            clock = Some((label, shift));
                        }
                        Err(e) => out.missing = Some(Missing::from_error(&e)),
                    }
                    continue;
                }
                // libfaketime, chosen by FAKETIME_LIB or by a recipe that
                // declares its options.
                match faketime::locate(host.faketime_override.as_deref()) {
                    Ok(lib) => {
                        let preload = host.ld_preload.as_deref();
                        let options = needs.into_iter().flat_map(|(_, f)| &f.env);
                        for (k, v) in
                            faketime::child_env(&lib, &shift.faketime_value(), preload, options)
                        {
                            out.claim(&label, &k, Some(&v))?;
                        }
                        if let ClockShift::Instant { .. } = shift {
                            let (k, v) = values::FAKETIME_FMT_EPOCH;
                            out.claim(&label, k, Some(v))?;
                        }
                        if let Some((r, f)) = needs {
                            let set: Vec<String> =
                                f.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
                            out.notes.push(format!(
                                "{label}: the {} recipe sets {} for its runtime ({}); this changes how the subject's time flows beyond the shift",
                                r.name,
                                set.join(" "),
                                f.why.trim()
                            ));
                        }
                        out.notes.push(format!(
                            "{label}: the clock is shifted by libfaketime ({}), not flakelab's own preload",
                            lib.display()
                        ));
                        out.preload_cleanup = Some(PreloadCleanup::Faketime);
                        out.checks.push(proof::Mechanism::Preload {
                            perturbation: label.clone(),
                            lib,
                            var: "FAKETIME",
                            value: out
                                .set
                                .get("FAKETIME")
                                .cloned()
                                .unwrap_or_else(|| shift.faketime_value()),
                        });
                        clock = Some((label, shift));
                    }
                    Err(e) => out.missing = Some(Missing::from_error(&e)),
                }
            }
            Kind::Netns => {
                out.isolation.netns = true;
                out.probes.push(Probe {
                    perturbation: label,
                    argv: own_probe(&["net"]),
                    expect: Expect::NoRoute,
                });
            }
            Kind::CpuPin { cpus } => {
                let k = *cpus as usize;
                if k > host.cpus.len() {
                    return Err(Error::usage(
                        format!(
                            "`{label}` asks for {k} CPUs but this process may use {}",
                            host.cpus.len()
                        ),
                        format!("use cpu-pin=1 … cpu-pin={}", host.cpus.len()),
                    ));
                }
                out.isolation.cpus = Some(host.cpus[..k].to_vec());
                out.probes.push(Probe {
                    perturbation: label,
                    argv: own_probe(&["affinity"]),
                    expect: Expect::Cpus { count: k },
                });
            }
            Kind::Rlimit { resource, value } => {
                out.isolation.rlimits.retain(|(r, _)| r != resource);
                out.isolation.rlimits.push((resource.clone(), *value));
                out.probes.push(Probe {
                    perturbation: label,
                    argv: own_probe(&["rlimit", resource]),
                    expect: Expect::Rlimit {
                        resource: resource.clone(),
                        value: *value,
                    },
                });
            }
            Kind::Shuffle => match recipe {
                Some(r) if r.shuffle.is_some() => out.shuffle = true,
                Some(r) => {
                    out.missing = Some(Missing {
                        message: format!(
                            "cannot shuffle: the {} recipe knows no seeded shuffle for this runner{}",
                            r.name,
                            r.unsupported.get("shuffle").map(|why| format!(" ({why})")).unwrap_or_default(),
                        ),
                        hint: format!("see `flakelab recipes show {}`", r.name),
                    })
                }
                None => {
                    out.missing = Some(Missing {
                        message: "cannot shuffle: no recipe recognises this command, so flakelab does not know the runner's shuffle flag".into(),
                        hint: "name the runner with --runner NAME (`flakelab recipes` lists them)".into(),
                    })
                }
            },
            Kind::Workers { amount } => {
                let amount = values::parse_workers(amount).map_err(|m| Error::usage(m, "see `flakelab run --help`"))?;
                match recipe.and_then(|r| r.default_workers(host.cpus.len()).map(|d| (r, d))) {
                    Some((_, default)) => {
                        out.workers = Some(match amount {
                            values::StressAmount::Factor(f) => ((default as f64) * f).ceil().max(1.0) as usize,
                            values::StressAmount::Threads(n) => n as usize,
                        })
                    }
                    None => {
                        // A recipe that says why its runner has no workers
                        // is the runner's limit, not flakelab's ignorance:
                        // naming another runner would not help.
                        out.missing = Some(match recipe.and_then(|r| r.unsupported.get("workers").map(|why| (r, why))) {
                            Some((r, why)) => Missing {
                                message: format!("cannot set workers: {why}"),
                                hint: format!("leave the workers cell out for this runner (`flakelab recipes show {}`)", r.name),
                            },
                            None => Missing {
                                message: format!(
                                    "cannot set workers: {}",
                                    recipe.map_or("no recipe recognises this command".to_string(), |r| format!(
                                        "the {} recipe knows no workers flag for this runner",
                                        r.name
                                    ))
                                ),
                                hint: "name the runner with --runner NAME (`flakelab recipes` lists them)".into(),
                            },
                        })
                    }
                }
            }
            Kind::Race { cpu } => match recipe.and_then(|r| r.race.as_ref().map(|race| (r, race))) {
                Some((r, race)) if !cpu.is_empty() && race.cpu.is_none() => {
                    out.missing = Some(Missing {
                        message: format!(
                            "cannot sweep GOMAXPROCS: the {} recipe's race detector has no cpu option",
                            r.name
                        ),
                        hint: format!("use `race` alone (see `flakelab recipes show {}`)", r.name),
                    })
                }
                Some(_) => out.race = Some(cpu.clone()),
                None => {
                    out.missing = Some(Missing {
                        message: format!(
                            "cannot run the race detector: {}",
                            recipe.map_or("no recipe recognises this command".to_string(), |r| format!(
                                "the {} recipe knows no race-detector build for this runner",
                                r.name
                            ))
                        ),
                        hint: "name the runner with --runner NAME (`flakelab recipes` lists them; go and cargo-test have one)".into(),
                    })
                }
            },
            Kind::CpuStress { amount } => {
                let amount = values::parse_stress(amount)
                    .map_err(|m| Error::usage(m, "see `flakelab run --help`"))?;
                let threads = amount.threads(host.cpus.len());
                out.stress = Some(StressPlan {
                    threads,
                    cpus: None,
                    allowed: host.cpus.len(),
                });
                // No busy thread (the sham): nothing to measure; the run is
                // still scheduled alone.
                if threads > 0 {
                    out.stress_label = Some(label.clone());
                    out.probes.push(Probe {
                        perturbation: label,
                        argv: vec!["sleep".into(), "0.5".into()],
                        expect: Expect::Stress,
                    });
                }
            }
        }
    }
    // Stress competes with a pinned child only on the child's CPUs.
    if let (Some(stress), Some(cpus)) = (&mut out.stress, &out.isolation.cpus) {
        stress.cpus = Some(cpus.clone());
    }
    if let Some((label, shift)) = clock {
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
        if let Some(lib) = own_clock {
            // The preload reads epoch seconds: an absolute start is the
            // instant the probe expects.
            let value = match &expect {
                Expect::ClockAt { epoch } => clock::value(None, Some(*epoch)),
                Expect::ClockShift { seconds } => clock::value(Some(*seconds), None),
                _ => clock::value(Some(0), None),
            };
            out.claim(&label, clock::CLOCK_VAR, Some(&value))?;
            out.checks.push(proof::Mechanism::Preload {
                perturbation: label.clone(),
                lib,
                var: clock::CLOCK_VAR,
                value,
            });
        }
        out.probes.push(Probe {
            perturbation: label,
            argv: vec!["date".into(), "+%s".into()],
            expect,
        });
    }
    Ok(out)
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
    Ok(sham::host_zone(host).and_then(|zone| {
        env::load_zone(&zone, &host.zoneinfo)
            .ok()
            .map(|tz| (zone, tz))
    }))
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
