//! Running the subject: one child per run, in its own process group, with
//! capped output capture, timeouts, graceful stops and a sweep for anything
//! the run left behind (DESIGN §8, STYLE practices 10, 11, 13 and 14).
//!
//! Nothing in this module prints; problems that do not change a run's end are
//! returned as warnings.

pub mod child;
pub mod query;
pub mod schedule;

pub use query::query;

pub use child::{become_subreaper, run_child, ChildLimits, ChildResult, Launch, Stop};
