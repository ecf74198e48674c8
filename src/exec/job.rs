//! What the executor is handed and what it hands back beside a child's
//! end: one run to start ([`Job`]) and what was measured around it
//! ([`Measured`]). The real executor, the fake and the scheduler share them.

use std::path::PathBuf;

use super::inspect::Watch;
use super::launch::Launch;
use super::stress::StressPlan;
use crate::record::RunCpu;

/// One run to start.
#[derive(Debug, Clone)]
pub struct Job {
    /// The run's index in the plan.
    pub index: usize,
    /// What to start.
    pub launch: Launch,
    /// Where its output goes.
    pub log: Option<PathBuf>,
    /// Its `FLAKELAB_RUN_ID`, used to find escaped descendants.
    pub marker: String,
    /// Busy threads to run beside it. Such a run starts only when no other
    /// run is in flight, and nothing else starts until it ends, so its
    /// stress never reaches another cell's run.
    pub stress: Option<StressPlan>,
    /// Runs of one group start together and no run of another group starts
    /// until the whole group has ended (a ladder rung's P processes). A
    /// group is exclusive by itself, so its stress needs no further care.
    pub group: Option<usize>,
    /// Its cell's name.
    pub cell: String,
    /// Its replicate within the cell.
    pub replicate: u32,
    /// Its seed.
    pub seed: u64,
    /// Where its JUnit report is expected, if anywhere.
    pub junit: Option<PathBuf>,
    /// What to inspect in its processes while it runs (cells whose
    /// mechanism a program can bypass), if anything.
    pub watch: Option<Watch>,
}

/// What the executor measured around one run or probe.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Measured {
    /// The CPU time the child's processes and the stress threads got.
    pub cpu: Option<RunCpu>,
    /// The host's busy share meanwhile: context only, it proves nothing.
    pub host_busy: Option<f64>,
}
