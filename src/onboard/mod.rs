//! A newcomer's first commands: `flakelab init` ([`init`]) writes a project's
//! `flakelab.toml` and CI files, `flakelab doctor` (`doctor`) says which
//! perturbations this machine can apply, and `flakelab demo` (`demo`) runs
//! the bundled example suite.

pub(crate) mod demo;
pub(crate) mod doctor;
pub mod init;
