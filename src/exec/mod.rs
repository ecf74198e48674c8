//! Running the subject: one child per run, in its own process group, with
//! capped output capture, timeouts, graceful stops and a sweep for anything
//! the run left behind (DESIGN §8, STYLE practices 10, 11, 13 and 14).
//!
//! Everything that starts a subject, a probe or a runner's version goes
//! through [`Executor`], the one OS seam (real processes, or a replayed
//! script). Nothing in this module prints; problems that do not change a run's end are
//! returned as warnings.

mod caplog;
pub mod cellns;
pub mod child;
mod children;
pub mod clock_record;
pub mod executor;
pub mod fake;
pub mod git;
pub mod inspect;
pub mod job;
pub mod launch;
mod leftovers;
pub mod owned;
mod procfs;
pub mod query;
pub(crate) mod record_files;
pub mod result;
mod roll_map;
pub mod schedule;
pub mod setup;
mod spawn;
pub mod stress;
mod sweep;
pub mod warden;

pub use executor::{Executor, ProbeAnswer, ProbeCall};
pub use query::query;
