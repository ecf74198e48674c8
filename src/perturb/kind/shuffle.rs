//! `shuffle`: the runner's own shuffle with a recorded seed per run (from
//! the recipe). Probe: the seed the runner prints is the one passed (read
//! from each run's output, `session`). No sham: the runner's option is the
//! condition. Classes: order dependence.

use super::{Preparing, Reading, Role, Seen, Sham};
use crate::catalog::class::FlakeClass;
use crate::error::Result;
use crate::perturb::Missing;

pub(super) const NEEDS_RECIPE: bool = true;
pub(super) const ROLE: Role = Role::Order;

pub(super) fn prepare(p: &mut Preparing) -> Result<()> {
    match p.recipe {
        Some(r) if r.shuffle.is_some() => p.out.shuffle = true,
        Some(r) => {
            p.out.missing = Some(Missing {
                message: format!(
                    "cannot shuffle: the {} recipe knows no seeded shuffle for this runner{}",
                    r.name,
                    r.unsupported
                        .get("shuffle")
                        .map(|why| format!(" ({why})"))
                        .unwrap_or_default(),
                ),
                hint: format!("see `flakelab recipes show {}`", r.name),
            })
        }
        None => {
            p.out.missing = Some(Missing {
                message: "cannot shuffle: no recipe recognises this command, so flakelab does not know the runner's shuffle flag".into(),
                hint: "name the runner with --runner NAME (`flakelab recipes` lists them)".into(),
            })
        }
    }
    Ok(())
}

pub(super) fn sham() -> Option<Sham> {
    None
}

pub(super) fn examines() -> Vec<FlakeClass> {
    vec![FlakeClass::OrderDependence]
}

pub(super) fn read(seen: &Seen) -> Vec<Reading> {
    vec![Reading::Claim(
        FlakeClass::OrderDependence,
        format!(
            "only the test order changed (a recorded seed per run): the outcome follows which test ran before.{}",
            seen.combined
        ),
    )]
}
