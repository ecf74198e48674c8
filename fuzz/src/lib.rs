//! flakelab's fuzz targets. The target functions live in `targets.rs`, which
//! the crate's own test suite also compiles (`tests/integration/fuzz_replay.rs`)
//! to replay every corpus file when no fuzzer is at hand.

#[path = "targets.rs"]
mod targets;

pub use targets::*;
