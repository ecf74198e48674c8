//! flakelab: a perturbation lab for test suites.
//!
//! It runs a project's own test command many times under declared
//! perturbations, records every run with a line that reproduces it, and
//! reports k of N per cell with a confidence bound against a baseline.
//!
//! Data flows one way:
//!
//! ```text
//! argv ─► cli ─► app (wiring) ─► session::resolve (flags > FLAKELAB_* > flakelab.toml > defaults)
//!        ─► SessionSpec (catalog cells, recipe, perturb::prepare: validate, probes)
//!        ─► session::engine ─► plan::build (interleaved, seeded)
//!                           ─► exec::Executor (real children in own process groups, or the fake)
//!                           ─► recipe outcome ─► RunRecord ─► store (append-only JSON Lines)
//!        ─► report::build (stats) ─► verdict (one exit policy) ─► table | json | markdown
//!        ─► evidence::build (report + ladder ─► classification, coverage)
//! ```

pub mod app;
pub(crate) mod bisect;
pub mod catalog;
pub mod cli;
pub mod context;
pub(crate) mod design;
pub(crate) mod error;
pub(crate) mod evidence;
pub(crate) mod exec;
pub mod history;
pub(crate) mod ladder;
pub mod onboard;
pub mod perturb;
pub(crate) mod plan;
pub mod record;
pub mod redact;
pub mod report;
pub(crate) mod repro;
pub mod results;
pub(crate) mod scan;
pub(crate) mod screen;
pub(crate) mod session;
pub(crate) mod stats;
pub mod store;
