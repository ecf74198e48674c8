//! Turning a cell into changes to a run's launch, and the probes that prove
//! each change took effect (DESIGN principle 2).
//!
//! [`prepare`] validates every perturbation against this host (an unknown
//! zone or an uninstalled locale is a usage error before anything runs) and
//! returns the environment delta plus one [`Probe`] per perturbation. The
//! probes are run by `exec` through the same launch path as the cell's runs;
//! [`probe::judge`] reads what the child reported. Nothing here spawns.

pub mod env;
pub mod probe;

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::catalog::{Cell, Kind};
use crate::error::Result;

pub use probe::{Expect, Probe};

/// What this host offers to perturbations, gathered once per session.
#[derive(Debug, Clone)]
pub struct HostFacts {
    /// flakelab's own executable, used as the probe child.
    pub self_exe: PathBuf,
    /// The zoneinfo database directory.
    pub zoneinfo: PathBuf,
}

impl HostFacts {
    /// Reads the facts from this process's environment.
    pub fn detect() -> HostFacts {
        HostFacts {
            self_exe: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("flakelab")),
            zoneinfo: env::zoneinfo_dir(),
        }
    }
}

/// A cell made concrete: what every run of the cell changes, and the probes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prepared {
    /// Variables the cell sets.
    pub set: BTreeMap<String, String>,
    /// Variables the cell removes.
    pub unset: Vec<String>,
    /// One probe per perturbation.
    pub probes: Vec<Probe>,
}

impl Prepared {
    fn set_var(&mut self, name: &str, value: &str) {
        self.unset.retain(|n| n != name);
        self.set.insert(name.to_string(), value.to_string());
    }

    fn unset_var(&mut self, name: &str) {
        self.set.remove(name);
        if !self.unset.iter().any(|n| n == name) {
            self.unset.push(name.to_string());
        }
    }
}

/// Validates a cell against this host and prepares its launch changes and
/// probes. Perturbations apply in order; a later one wins on the same
/// variable.
pub fn prepare(cell: &Cell, host: &HostFacts) -> Result<Prepared> {
    let mut out = Prepared::default();
    for kind in &cell.perturbations {
        let label = kind.to_string();
        match kind {
            Kind::Tz { zone } => {
                let offset = env::check_zone(zone, &host.zoneinfo)?;
                out.set_var("TZ", zone);
                out.probes.push(Probe {
                    perturbation: label,
                    argv: vec!["date".into(), "+%z".into()],
                    expect: Expect::Offset {
                        zone: zone.clone(),
                        offset,
                    },
                });
            }
            Kind::Locale { locale } => {
                env::check_locale(locale)?;
                out.set_var("LC_ALL", locale);
                out.set_var("LANG", locale);
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
                    out.set_var(k, v);
                }
                for k in unset {
                    out.unset_var(k);
                }
                let mut argv = vec![
                    host.self_exe.display().to_string(),
                    "__probe".into(),
                    "env".into(),
                ];
                argv.extend(set.keys().cloned());
                argv.extend(unset.iter().cloned());
                out.probes.push(Probe {
                    perturbation: label,
                    argv,
                    expect: Expect::Env {
                        set: set.clone(),
                        unset: unset.clone(),
                    },
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    #[test]
    fn later_perturbations_win_and_each_has_a_probe() {
        let catalog = Catalog::load(None).unwrap();
        let cell = catalog
            .cell("env=TZ=Europe/Paris+tz=Asia/Kathmandu+env=-HOME")
            .unwrap();
        let prepared = prepare(&cell, &HostFacts::detect()).unwrap();
        assert_eq!(prepared.set.get("TZ").unwrap(), "Asia/Kathmandu");
        assert_eq!(prepared.unset, ["HOME"]);
        assert_eq!(prepared.probes.len(), 3);
    }

    #[test]
    fn an_unknown_zone_is_refused_before_anything_runs() {
        let catalog = Catalog::load(None).unwrap();
        let cell = catalog.cell("tz=Mars/Olympus_Mons").unwrap();
        let err = prepare(&cell, &HostFacts::detect())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unknown time zone `Mars/Olympus_Mons`"),
            "{err}"
        );
        assert!(err.contains("hint:"), "{err}");
    }
}
