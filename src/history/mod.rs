//! History from CI: JUnit reports that CI left behind, read as observations
//! with their execution context and provenance, and what those observations
//! say per test (same-commit disagreement, rates per context, associations),
//! the `check` gate against a baseline and quarantine lists.
//!
//! This module owns the pure logic over the history file's records
//! (their shapes are in `crate::record::history`); the store (its `history` module) is the only writer of the file
//! and the report module's `history` the only renderer. Nothing here does I/O
//! beyond what a caller hands in ([`ingest`] reads the reports it is named).

pub(crate) mod analyse;
pub(crate) mod check;
pub mod context;
pub(crate) mod identity;
pub mod ingest;
pub mod ledger;
pub mod quarantine;
pub(crate) mod release;

pub use crate::record::history::*;
