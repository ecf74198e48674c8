//! The run loop: starts planned runs in order with at most P at once,
//! watches SIGINT/SIGTERM, and emits an [`Event`] as each run starts and
//! ends. Nothing here prints or writes the store: the caller consumes events.
//!
//! The first signal stops scheduling and stops every running group
//! gracefully (TERM, grace, KILL); a second signal kills them at once.

use std::path::PathBuf;

use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::child::{run_child, ChildLimits, ChildResult, Launch, Stop};
use crate::perturb::stress::{busy_share, cpu_ticks, StressGuard, StressPlan};
use crate::record::ProcessEnd;

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
}

/// What the loop reports.
#[derive(Debug)]
pub enum Event {
    /// A run was started.
    Started {
        /// Its plan index.
        index: usize,
    },
    /// A run ended on its own or by timeout (interrupted runs are not
    /// reported: they did not finish).
    Finished {
        /// Its plan index.
        index: usize,
        /// Wall-clock start.
        started_at: jiff::Timestamp,
        /// How it ended.
        result: ChildResult,
        /// The host's CPU busy share during the run.
        cpu_busy: Option<f64>,
    },
    /// The first stop signal arrived; no more runs start.
    Interrupted,
}

/// How the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScheduleEnd {
    /// Whether a stop signal cut the session short.
    pub interrupted: bool,
}

/// Listens for SIGINT and SIGTERM for the rest of the process's life: the
/// first turns the returned channel to [`Stop::Graceful`], the second to
/// [`Stop::Kill`]. Call once, inside the runtime, before the first child.
pub fn watch_signals() -> std::io::Result<watch::Receiver<Stop>> {
    let (tx, rx) = watch::channel(Stop::Run);
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    tokio::spawn(async move {
        let mut count = 0;
        loop {
            tokio::select! {
                Some(()) = int.recv() => {}
                Some(()) = term.recv() => {}
                else => break,
            }
            count += 1;
            let stop = if count == 1 {
                Stop::Graceful
            } else {
                Stop::Kill
            };
            if tx.send(stop).is_err() {
                break;
            }
        }
    });
    Ok(rx)
}

/// Runs `jobs` in order, at most `parallel` at once, until all are done or
/// `stop` leaves [`Stop::Run`].
pub async fn schedule(
    jobs: Vec<Job>,
    parallel: usize,
    limits: ChildLimits,
    mut stop: watch::Receiver<Stop>,
    mut on_event: impl FnMut(Event),
) -> ScheduleEnd {
    let parallel = parallel.max(1);
    let mut queue = jobs.into_iter().peekable();
    let mut exclusive_running = false;
    let mut running = JoinSet::new();
    let mut task_index = std::collections::HashMap::new();
    let mut interrupted = *stop.borrow() != Stop::Run;
    if interrupted {
        on_event(Event::Interrupted);
    }
    loop {
        while !interrupted && running.len() < parallel && !exclusive_running {
            let Some(next) = queue.peek() else { break };
            if next.stress.is_some() && !running.is_empty() {
                break;
            }
            let Some(job) = queue.next() else { break };
            exclusive_running = job.stress.is_some();
            on_event(Event::Started { index: job.index });
            let rx = stop.clone();
            let index = job.index;
            let handle = running.spawn(async move {
                let guard = job.stress.as_ref().map(StressGuard::start);
                let before = cpu_ticks();
                let started_at = jiff::Timestamp::now();
                let result =
                    run_child(&job.launch, limits, job.log.as_deref(), &job.marker, rx).await;
                let cpu_busy = before.zip(cpu_ticks()).and_then(|(a, b)| busy_share(a, b));
                drop(guard);
                (job.index, started_at, result, cpu_busy)
            });
            task_index.insert(handle.id(), index);
        }
        if running.is_empty() {
            break;
        }
        tokio::select! {
            joined = running.join_next() => {
                match joined {
                    Some(Ok((index, started_at, result, cpu_busy))) => {
                        exclusive_running = false;
                        if result.end != ProcessEnd::Interrupted {
                            on_event(Event::Finished { index, started_at, result, cpu_busy });
                        }
                    }
                    Some(Err(e)) => {
                        // A panicked run task is a harness bug: record it as an
                        // error outcome and keep measuring.
                        exclusive_running = false;
                        if let Some(&index) = task_index.get(&e.id()) {
                            on_event(Event::Finished {
                                cpu_busy: None,
                                index,
                                started_at: jiff::Timestamp::now(),
                                result: ChildResult {
                                    end: ProcessEnd::SpawnFailed {
                                        message: format!("internal error in the run task: {e}"),
                                    },
                                    duration: std::time::Duration::ZERO,
                                    output_bytes: 0,
                                    output_dropped: 0,
                                    stragglers: 0,
                                    warnings: Vec::new(),
                                },
                            });
                        }
                    }
                    None => {}
                }
            }
            changed = stop.changed(), if !interrupted => {
                if changed.is_err() || *stop.borrow() != Stop::Run {
                    interrupted = true;
                    on_event(Event::Interrupted);
                }
            }
        }
    }
    ScheduleEnd { interrupted }
}
