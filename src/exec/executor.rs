//! The one OS seam: everything that starts a subject's run, a probe or a
//! runner's version command goes through an [`Executor`]. [`Executor::Real`]
//! spawns (through [`run_child`]); [`Executor::Fake`] replays a script
//! ([`super::fake`]) so that the decision logic of every subcommand is
//! tested end to end through the real binary without any runner installed.

use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::watch;

use super::child::{run_child, run_child_watched};
use super::fake::Fake;
use super::job::{Job, Measured};
use super::launch::{ChildLimits, Launch};
use super::result::{ChildResult, Stop};
use super::stress::{Meter, StressGuard, StressPlan};

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
        /// What it and its stress got.
        measured: Measured,
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
    /// returns how it ended and what it and its stress got.
    pub async fn run(
        &self,
        job: &Job,
        limits: ChildLimits,
        stop: watch::Receiver<Stop>,
    ) -> (ChildResult, Measured) {
        match self {
            Executor::Real => {
                measured(job.stress.as_ref(), || {
                    run_child_watched(
                        &job.launch,
                        limits,
                        job.log.as_deref(),
                        &job.marker,
                        job.watch.as_ref(),
                        stop,
                    )
                })
                .await
            }
            Executor::Fake(fake) => fake.run(job, stop).await,
        }
    }

    /// Runs one probe of a cell.
    pub async fn probe(&self, call: ProbeCall<'_>, stop: watch::Receiver<Stop>) -> ProbeAnswer {
        match self {
            Executor::Real => {
                let (result, measured) = measured(call.stress, || {
                    run_child(call.launch, call.limits, Some(call.log), call.marker, stop)
                })
                .await;
                ProbeAnswer::Ran { result, measured }
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

    /// Whether a recipe's plugin probe `argv`, run in `dir`, printed a line
    /// and exited 0: the plugin its `[junit]` needs is installed.
    pub fn plugin_found(&self, argv: &[String], dir: &Path) -> bool {
        match self {
            Executor::Real => super::query::version_line(argv, dir).is_some(),
            Executor::Fake(fake) => fake.plugins(),
        }
    }
}

/// Children of flakelab in flight, and how many were ever started: a run
/// whose window saw no other start and began with none in flight had its
/// processes to itself, so the children's CPU time is its own.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
static STARTED: AtomicU64 = AtomicU64::new(0);

/// Runs `child` with `stress` beside it, measured: the stress threads' own
/// CPU clocks, and `getrusage(RUSAGE_CHILDREN)` for the child's processes
/// when it ran alone.
async fn measured<F>(
    stress: Option<&StressPlan>,
    child: impl FnOnce() -> F,
) -> (ChildResult, Measured)
where
    F: std::future::Future<Output = ChildResult>,
{
    let guard = stress.map(StressGuard::start);
    let others = IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
    let ticket = STARTED.fetch_add(1, Ordering::SeqCst) + 1;
    let meter = Meter::start(guard.as_ref());
    let result = child().await;
    let alone = others == 0 && STARTED.load(Ordering::SeqCst) == ticket;
    let (cpu, host_busy) = meter.finish(stress.zip(guard.as_ref()), alone);
    IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    drop(guard);
    (
        result,
        Measured {
            cpu: Some(cpu),
            host_busy,
        },
    )
}
