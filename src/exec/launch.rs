//! What the executor starts: a [`Launch`] (the exact argv, its working
//! directory, the environment changes and the setup between fork and exec)
//! and the [`ChildLimits`] it runs under.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::setup::Isolation;

/// The variable that marks every process of a run. Its value (the run's
/// marker) is inherited by every descendant, which is how processes that left
/// the run's process group are found again.
pub const RUN_ID_VAR: &str = "FLAKELAB_RUN_ID";

/// What to start: exact argv (no shell unless argv itself is `sh -c …`), cwd,
/// env changes on top of the inherited environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    /// The program (`argv[0]`, looked up in `PATH` when it has no slash) and
    /// its arguments.
    pub argv: Vec<String>,
    /// The working directory.
    pub cwd: PathBuf,
    /// Variables set on top of the inherited environment. Applied after
    /// `env_unset`, so a name in both is set.
    pub env_set: BTreeMap<String, String>,
    /// Inherited variables removed.
    pub env_unset: Vec<String>,
    /// Set up in the child between fork and exec ([`super::setup`]): a new
    /// network namespace, limits, CPU affinity.
    #[serde(default, skip_serializing_if = "Isolation::is_empty")]
    pub isolation: Isolation,
    /// The cell whose one network namespace the run enters
    /// ([`super::cellns`]) when `isolation` asks for a new one. Without it,
    /// or outside a session's scope, the run gets a namespace of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns_cell: Option<String>,
    /// What the run's preloaded library leaves behind, removed once the run
    /// has been swept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preload_cleanup: Option<PreloadCleanup>,
    /// flakelab's clock preload is in the run: the executor sets the run's
    /// anchor (`FLAKELAB_CLOCK_ANCHOR`, the real time at its start, so every
    /// process of the run agrees on an absolute clock) and its record file
    /// (`FLAKELAB_CLOCK_RECORD`, created empty before the spawn, read back
    /// into [`super::result::ChildResult::clock_record`] and removed after
    /// the sweep).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub clock_record: bool,
}

/// A preloaded library whose leftovers are removed after each run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PreloadCleanup {
    /// libfaketime: the semaphore and shared-memory segment it names after
    /// the first preloaded process (`exec::leftovers`).
    Faketime,
}

/// Limits for one child.
#[derive(Debug, Clone, Copy)]
pub struct ChildLimits {
    /// Time from spawn after which the group gets SIGTERM (None: no limit).
    pub timeout: Option<Duration>,
    /// Time between SIGTERM and SIGKILL, for timeouts and graceful stops.
    pub grace: Duration,
    /// Bytes kept from the start of the output.
    pub log_head: usize,
    /// Bytes kept from the end of the output.
    pub log_tail: usize,
}
