//! What a session runs in, read once and never perturbed: the project's
//! `flakelab.toml` ([`config`]), the host and its git repository (`host`),
//! working copies for ladder rungs (`workspace`), the CI shard this
//! process is ([`shard`]) and whether a stored session is still running
//! (`liveness`).

pub mod config;
pub(crate) mod host;
pub(crate) mod liveness;
pub mod shard;
pub(crate) mod workspace;
