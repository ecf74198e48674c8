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

pub(super) fn examines() -> Vec<FlakeClass> {
    vec![
        FlakeClass::LoadSensitiveSynchronisation,
        FlakeClass::HostResourceCollision,
    ]
}

pub(super) fn read(seen: &Seen) -> Vec<Reading> {
    match seen.load.clean {
        Some(l) if !seen.load.differs => vec![Reading::Claim(
            FlakeClass::HostResourceCollision,
            format!(
                "more workers (separate processes) differ while added CPU load in `{l}` ran clean: the workers contest something other than CPU time.{}",
                seen.combined
            ),
        )],
        _ => vec![
            Reading::Claim(
                FlakeClass::LoadSensitiveSynchronisation,
                format!("more workers add load and concurrency at once.{}", seen.combined),
            ),
            Reading::Open(
                FlakeClass::HostResourceCollision,
                format!(
                    "`{}` differs, but {}: a clean -p cpu-stress=2x cell beside it would point to a contested host resource rather than load",
                    seen.cell,
                    if seen.load.differs {
                        "the CPU-load cell differs too"
                    } else {
                        "no CPU-load cell ran"
                    }
                ),
            ),
        ],
    }
}
