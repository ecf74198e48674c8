//! Reading what a run's test runner reported: its JUnit XML ([`junit`]),
//! the runners' own report formats (`testreport`), the per-test outcomes
//! of one run taken from them (`outcomes`), and failure signatures
//! ([`signature`]). Pure parsing; nothing here spawns or writes.

pub mod junit;
pub(crate) mod outcomes;
pub mod signature;
pub(crate) mod testreport;
