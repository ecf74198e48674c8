//! `orders`: systematic test orders through the recipe's ordered mode, built
//! from the collected tests so that every ordered pair of tests in a module
//! (and of modules) runs adjacently at least once (`crate::perturb::orders`
//! builds them). Where the runner runs no given order, the seeded shuffle,
//! said so. No sham: the order is the condition. Classes: order dependence.

use super::{Preparing, Reading, Role, Seen, Sham};
use crate::catalog::class::FlakeClass;
use crate::error::Result;

pub(super) const NEEDS_RECIPE: bool = true;
pub(super) const ROLE: Role = Role::Order;

pub(super) fn prepare(p: &mut Preparing) -> Result<()> {
    crate::perturb::orders::prepare(p.recipe, &mut p.out);
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
            "only the test order changed (a recorded order per run): the outcome follows which test ran before.{}",
            seen.combined
        ),
    )]
}
