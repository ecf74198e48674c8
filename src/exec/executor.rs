//! The one OS seam: everything that starts a subject's run, a probe or a
//! runner's version command goes through an [`Executor`]. [`Executor::Real`]
//! spawns (through [`run_child`]); [`Executor::Fake`] replays a script
//! ([`super::fake`]) so that the decision logic of every subcommand is
//! tested end to end through the real binary without any runner installed.

use std::path::Path;
use std::sync::Arc;

use tokio::sync::watch;

use super::child::{run_child, run_child_watched, ChildLimits, ChildResult, Launch, Stop};
use super::fake::Fake;
use super::schedule::Job;
use super::stress::{busy_share, cpu_ticks, StressGuard, StressPlan};

/// Starts subjects, probes and version queries.
#[derive(Debug, Clone, Default)]
pub enum Executor {
    /// Real processes.
    #[default]
    Real,
    /// A replayed script: nothing is spawned.
    Fake(Arc<Fake>),
}

/// One probe to run for a cell.
#[derive(Debug, Clone, Copy)]
pub struct ProbeCall<'a> {
    /// The cell's name.
    pub cell: &'a str,
    /// The perturbation the probe proves (`kind=value`).
    pub perturbation: &'a str,
    /// How the probe is started (the cell's launch path).
    pub launch: &'a Launch,
    /// Its limits.
    pub limits: ChildLimits,
    /// Where its output goes.
    pub log: &'a Path,
    /// Its `FLAKELAB_RUN_ID`.
    pub marker: &'a str,
    /// Busy threads to run beside it (the cpu-stress probe).
    pub stress: Option<&'a StressPlan>,
}

/// What a probe gave.
#[derive(Debug)]
pub enum ProbeAnswer {
    /// The probe ran: judge its end and its output.
    Ran {
        /// How it ended.
        result: ChildResult,
        /// The host's CPU busy share while it ran.
        cpu_busy: Option<f64>,
    },
    /// The script decided: the fact it proves, or why it was not applied.
    Decided(Result<String, String>),
}

impl Executor {
    /// The executor the command line asks for: the fake when a script is
    /// given (`--fake-executor`), else real processes.
    pub fn from_script(script: Option<&Path>) -> Result<Executor, String> {
        match script {
            None => Ok(Executor::Real),
            Some(path) => Ok(Executor::Fake(Arc::new(Fake::load(path)?))),
        }
    }

    /// Runs one job of a session to its end, with its stress beside it;
    /// returns how it ended and the host's CPU busy share meanwhile.
    pub async fn run(
        &self,
        job: &Job,
        limits: ChildLimits,
        stop: watch::Receiver<Stop>,
    ) -> (ChildResult, Option<f64>) {
        match self {
            Executor::Real => {
                let guard = job.stress.as_ref().map(StressGuard::start);
                let before = cpu_ticks();
                let result = run_child_watched(
                    &job.launch,
                    limits,
                    job.log.as_deref(),
                    &job.marker,
                    job.watch.as_ref(),
                    stop,
                )
                .await;
                let cpu_busy = before.zip(cpu_ticks()).and_then(|(a, b)| busy_share(a, b));
                drop(guard);
                (result, cpu_busy)
            }
            Executor::Fake(fake) => fake.run(job, stop).await,
        }
    }

    /// Runs one probe of a cell.
    pub async fn probe(&self, call: ProbeCall<'_>, stop: watch::Receiver<Stop>) -> ProbeAnswer {
        match self {
            Executor::Real => {
                let guard = call.stress.map(StressGuard::start);
                let before = cpu_ticks();
                let result =
                    run_child(call.launch, call.limits, Some(call.log), call.marker, stop).await;
                let cpu_busy = before.zip(cpu_ticks()).and_then(|(a, b)| busy_share(a, b));
                drop(guard);
                ProbeAnswer::Ran { result, cpu_busy }
            }
            Executor::Fake(fake) => ProbeAnswer::Decided(fake.probe(call.cell, call.perturbation)),
        }
    }

    /// A runner's version line from its version command `argv`, run in `dir`.
    pub fn version(&self, argv: &[String], dir: &Path) -> Option<String> {
        match self {
            Executor::Real => super::query::version_line(argv, dir),
            Executor::Fake(fake) => fake.version(),
        }
    }
}
