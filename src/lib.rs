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
pub mod bisect;
pub mod catalog;
pub mod cli;
pub mod config;
pub mod demo;
pub mod design;
pub mod doctor;
pub mod effect;
pub mod error;
pub mod evidence;
pub mod exec;
pub mod history;
pub mod host;
pub mod init;
pub mod junit;
pub mod ladder;
pub mod liveness;
pub mod outcomes;
pub mod perturb;
pub mod plan;
pub mod record;
pub mod redact;
pub mod report;
pub mod repro;
pub mod scan;
pub mod screen;
pub mod session;
pub mod shard;
pub mod signature;
pub mod stats;
pub mod store;
pub mod testreport;
pub mod verdict;
pub mod workspace;
