//! `workers=2x|N`: the runner's workers at a factor of its default on this
//! host, or a count (from the recipe). Probe: the runner's own report of
//! workers, where it prints one. No sham: the runner's option is the
//! condition. Classes: load-sensitive synchronisation and host-resource
//! collision (more workers add load and concurrency at once).

use super::{Preparing, Reading, Role, Seen, Sham};
use crate::catalog::class::FlakeClass;
use crate::catalog::values;
use crate::error::{Error, Result};
use crate::perturb::Missing;

pub(super) const NEEDS_RECIPE: bool = true;
pub(super) const ROLE: Role = Role::Concurrency;

pub(super) fn prepare(amount: &str, p: &mut Preparing) -> Result<()> {
    let amount =
        values::parse_workers(amount).map_err(|m| Error::usage(m, "see `flakelab run --help`"))?;
    let recipe = p.recipe;
    match recipe.and_then(|r| r.default_workers(p.host.cpus.len()).map(|d| (r, d))) {
        Some((_, default)) => {
            p.out.workers = Some(match amount {
                values::StressAmount::Factor(f) => ((default as f64) * f).ceil().max(1.0) as usize,
                values::StressAmount::Threads(n) => n as usize,
            })
        }
        None => {
            // A recipe that says why its runner has no workers is the
            // runner's limit, not flakelab's ignorance: naming another
            // runner would not help.
            p.out.missing = Some(
                match recipe.and_then(|r| r.unsupported.get("workers").map(|why| (r, why))) {
                    Some((r, why)) => Missing {
                        message: format!("cannot set workers: {why}"),
                        hint: format!(
                            "leave the workers cell out for this runner (`flakelab recipes show {}`)",
                            r.name
                        ),
                    },
                    None => Missing {
                        message: format!(
                            "cannot set workers: {}",
                            recipe.map_or(
                                "no recipe recognises this command".to_string(),
                                |r| format!(
                                    "the {} recipe knows no workers flag for this runner",
                                    r.name
                                )
                            )
                        ),
                        hint: "name the runner with --runner NAME (`flakelab recipes` lists them)"
                            .into(),
                    },
                },
            )
        }
    }
    Ok(())
}

pub(super) fn sham() -> Option<Sham> {
    None
}

/// More workers are more processes at once: a cell of them speaks to a
/// collision. It adds load too, so it shows no load-sensitivity (CPU
/// stress does) and argues against none.
pub(super) fn examines() -> Vec<FlakeClass> {
    vec![FlakeClass::HostResourceCollision]
}

/// Words in a failure that name a resource separate processes contest, by
/// what it is: a port, a path, a lock.
const CONTESTED: &[(&str, &str)] = &[
    ("address already in use", "a port"),
    ("eaddrinuse", "a port"),
    ("port is already allocated", "a port"),
    ("address in use", "a port"),
    ("file exists", "a path"),
    ("eexist", "a path"),
    ("already exists", "a path"),
    ("directory not empty", "a path"),
    ("text file busy", "a path"),
    ("database is locked", "a lock"),
    ("is locked", "a lock"),
    ("lock held", "a lock"),
    ("acquire lock", "a lock"),
    ("acquire the lock", "a lock"),
    ("resource busy", "a lock"),
    ("ebusy", "a lock"),
    ("ewouldblock", "a lock"),
];

/// The first failure that names a contested resource, with what it is.
pub(super) fn contested(failures: &[String]) -> Option<(&'static str, &str)> {
    failures.iter().find_map(|f| {
        let lower = f.to_ascii_lowercase();
        CONTESTED
            .iter()
            .find(|(words, _)| lower.contains(words))
            .map(|(_, what)| (*what, f.as_str()))
    })
}

pub(super) fn read(seen: &Seen) -> Vec<Reading> {
    let combined = seen.combined;
    if let Some((what, failure)) = contested(seen.failures) {
        return vec![Reading::Claim(
            FlakeClass::HostResourceCollision,
            format!(
                "more workers (separate processes at once) differ, and the failures name {what} they contest: \"{failure}\".{combined}"
            ),
        )];
    }
    match seen.load.clean {
        Some(l) if !seen.load.differs => vec![Reading::Claim(
            FlakeClass::HostResourceCollision,
            format!(
                "more workers (separate processes) differ while added CPU load in `{l}` ran clean: it reproduces only beside another process, so the workers contest something other than CPU time.{combined}"
            ),
        )],
        _ => vec![
            Reading::Open(
                FlakeClass::HostResourceCollision,
                format!(
                    "`{}` differs, but no failure names a contested resource (an address in use, a path, a lock) and {}: a clean -p cpu-stress=2x cell beside it would show that it needs another process, not load",
                    seen.cell,
                    if seen.load.differs {
                        "the CPU-load cell differs too"
                    } else {
                        "no CPU-load cell ran"
                    }
                ),
            ),
            Reading::Open(
                FlakeClass::LoadSensitiveSynchronisation,
                format!(
                    "`{}` differs, but more workers add load and concurrency at once: load-sensitivity is shown by a -p cpu-stress=2x cell, not by workers",
                    seen.cell
                ),
            ),
        ],
    }
}
