//! The run loop: starts planned runs in order with at most P at once,
//! watches SIGINT/SIGTERM/SIGHUP, and emits an [`Event`] as each run starts and
//! ends. Nothing here prints or writes the store: the caller consumes events.
//!
//! The first signal stops scheduling and stops every running group
//! gracefully (TERM, grace, KILL); a second signal kills them at once.

use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::executor::Executor;
use super::job::{Job, Measured};
use super::launch::ChildLimits;
use super::result::{ChildResult, Stop};
use crate::record::ProcessEnd;

/// What the loop reports.
#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "one event per run, handed straight to the caller: boxing buys nothing"
)]
pub enum Event {
    /// A run was started.
    Started {
        /// Its plan index.
        #[cfg_attr(
            not(test),
            expect(
                dead_code,
                reason = "the session engine needs no index to count a start"
            )
        )]
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
        /// What the run and its stress got.
        measured: Measured,
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

/// Listens for SIGINT, SIGTERM and SIGHUP (a closed terminal) for the rest
/// of the process's life: the
/// first turns the returned channel to [`Stop::Graceful`], the second to
/// [`Stop::Kill`]. Call once, inside the runtime, before the first child.
pub fn watch_signals() -> std::io::Result<watch::Receiver<Stop>> {
    let (tx, rx) = watch::channel(Stop::Run);
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    tokio::spawn(async move {
        let mut count = 0;
        loop {
            tokio::select! {
                Some(()) = int.recv() => {}
                Some(()) = term.recv() => {}
                Some(()) = hup.recv() => {}
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
/// `stop` leaves [`Stop::Run`]. Jobs are taken from `jobs` as they start
/// (one ahead), so a lazy iterator keeps only the runs in flight.
///
/// When a run ends, the next ones start before its [`Event::Finished`] is
/// handed over, and the job after them is taken from `jobs` once it has
/// been: what the caller does with a finished run (its record, the store)
/// and the planning of the next job happen while the next subject runs,
/// not between two runs. Not for a run with a report file ([`Job::junit`]):
/// the next run may write its report to the same path, and building a job
/// removes a stale report at its path, so such a run is handed over, and
/// the next job built, before the next run starts.
pub async fn schedule(
    executor: &Executor,
    jobs: impl IntoIterator<Item = Job>,
    parallel: usize,
    limits: ChildLimits,
    mut stop: watch::Receiver<Stop>,
    mut on_event: impl FnMut(Event),
) -> ScheduleEnd {
    let mut slots = Slots {
        queue: jobs.into_iter().peekable(),
        parallel: parallel.max(1),
        exclusive_running: false,
        running_group: None,
        running: JoinSet::new(),
        task_index: std::collections::HashMap::new(),
    };
    let mut interrupted = *stop.borrow() != Stop::Run;
    if interrupted {
        on_event(Event::Interrupted);
    }
    loop {
        if !interrupted {
            slots.start_ready(executor, limits, &stop, &mut on_event);
        }
        if slots.running.is_empty() {
            break;
        }
        let finished = tokio::select! {
            joined = slots.running.join_next_with_id() => slots.ended(joined),
            changed = stop.changed(), if !interrupted => {
                if changed.is_err() || *stop.borrow() != Stop::Run {
                    interrupted = true;
                    on_event(Event::Interrupted);
                }
                None
            }
        };
        let Some((finished, reported)) = finished else {
            continue;
        };
        if reported {
            on_event(finished);
            continue;
        }
        if !interrupted && *stop.borrow() == Stop::Run {
            // The next runs start first; one yield lets their tasks spawn
            // their subjects (a run's task spawns before its first wait).
            if slots.start_ready(executor, limits, &stop, &mut on_event) {
                tokio::task::yield_now().await;
            }
        }
        on_event(finished);
        if !interrupted {
            // Plans the job after them while they run.
            slots.queue.peek();
        }
    }
    ScheduleEnd { interrupted }
}

/// What one task of the run loop returns: the run's index, when it started,
/// how it ended, what it and its stress got, and whether it has a report
/// file.
type Ran = (usize, jiff::Timestamp, ChildResult, Measured, bool);

/// The run loop's state: the jobs not yet started and the runs in flight.
struct Slots<I: Iterator<Item = Job>> {
    queue: std::iter::Peekable<I>,
    parallel: usize,
    exclusive_running: bool,
    running_group: Option<usize>,
    running: JoinSet<Ran>,
    task_index: std::collections::HashMap<tokio::task::Id, usize>,
}

impl<I: Iterator<Item = Job>> Slots<I> {
    /// Starts the jobs that may start now: up to `parallel`, a group only
    /// beside its own members, a stress job alone. Returns whether any
    /// started.
    fn start_ready(
        &mut self,
        executor: &Executor,
        limits: ChildLimits,
        stop: &watch::Receiver<Stop>,
        on_event: &mut impl FnMut(Event),
    ) -> bool {
        let mut started = false;
        while self.running.len() < self.parallel && !self.exclusive_running {
            let Some(next) = self.queue.peek() else { break };
            if !self.running.is_empty() && (next.group.is_some() || self.running_group.is_some()) {
                if next.group != self.running_group {
                    break;
                }
            } else if next.stress.is_some() && !self.running.is_empty() {
                break;
            }
            let Some(job) = self.queue.next() else { break };
            self.exclusive_running = job.stress.is_some() && job.group.is_none();
            self.running_group = job.group;
            on_event(Event::Started { index: job.index });
            let rx = stop.clone();
            let index = job.index;
            let executor = executor.clone();
            let handle = self.running.spawn(async move {
                let started_at = jiff::Timestamp::now();
                let (result, measured) = executor.run(&job, limits, rx).await;
                (job.index, started_at, result, measured, job.junit.is_some())
            });
            self.task_index.insert(handle.id(), index);
            started = true;
        }
        started
    }

    /// The event for a run task that ended (none for an interrupted run),
    /// and whether the run has a report file.
    fn ended(
        &mut self,
        joined: Option<Result<(tokio::task::Id, Ran), tokio::task::JoinError>>,
    ) -> Option<(Event, bool)> {
        match joined? {
            Ok((id, (index, started_at, result, measured, reported))) => {
                self.task_index.remove(&id);
                self.exclusive_running = false;
                let ran = result.end != ProcessEnd::Interrupted;
                let finished = Event::Finished {
                    index,
                    started_at,
                    result,
                    measured,
                };
                ran.then_some((finished, reported))
            }
            Err(e) => {
                // A panicked run task is a harness bug: record it as an
                // error outcome and keep measuring.
                self.exclusive_running = false;
                let index = self.task_index.remove(&e.id())?;
                let finished = Event::Finished {
                    measured: Measured::default(),
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
                        processes: None,
                        clock_record: None,
                    },
                };
                Some((finished, false))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use super::*;
    use crate::exec::launch::Launch;

    /// A job that writes `<name>.start`, waits (up to 20 s) for every file
    /// in `wait_for`, then writes `<name>.end`; it fails when a wait runs out.
    fn job(
        dir: &std::path::Path,
        index: usize,
        group: usize,
        name: &str,
        wait_for: &[&str],
    ) -> Job {
        let waits: String = wait_for
            .iter()
            .map(|f| format!("i=0; while [ ! -e {f} ]; do i=$((i+1)); [ $i -gt 2000 ] && exit 1; sleep 0.01; done; "))
            .collect();
        let script = format!("touch {name}.start; {waits}touch {name}.end");
        Job {
            index,
            launch: Launch {
                argv: vec!["sh".into(), "-c".into(), script],
                cwd: dir.to_path_buf(),
                env_set: BTreeMap::new(),
                env_unset: Vec::new(),
                isolation: Default::default(),
                netns_cell: None,
                preload_cleanup: None,
                clock_record: false,
            },
            log: None,
            marker: format!("schedule-test-{index}"),
            stress: None,
            group: Some(group),
            cell: "c".into(),
            replicate: 0,
            seed: 0,
            junit: None,
            watch: None,
        }
    }

    /// Limits no test run here comes near.
    fn limits() -> ChildLimits {
        ChildLimits {
            timeout: Some(Duration::from_secs(60)),
            grace: Duration::from_secs(1),
            log_head: 1024,
            log_tail: 1024,
        }
    }

    /// The order of `Started` and `Finished` for three one-at-a-time runs
    /// of `true`, with or without a report file.
    async fn order_of_events(report: Option<&std::path::Path>) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        let jobs: Vec<Job> = (0..3)
            .map(|i| {
                let mut job = job(dir.path(), i, 0, &format!("r{i}"), &[]);
                job.launch.argv = vec!["true".into()];
                job.group = None;
                // Markers of its own: a sweep ends the processes that carry
                // its run's marker, and tests run at once in one process.
                job.marker = format!("schedule-order-{}-{i}", report.is_some());
                job.junit = report.map(std::path::Path::to_path_buf);
                job
            })
            .collect();
        let (_tx, rx) = watch::channel(Stop::Run);
        let limits = limits();
        let mut events = Vec::new();
        schedule(&Executor::Real, jobs, 1, limits, rx, |e| match e {
            Event::Started { index } => events.push(format!("start {index}")),
            Event::Finished { index, .. } => events.push(format!("end {index}")),
            Event::Interrupted => events.push("interrupted".into()),
        })
        .await;
        events
    }

    #[tokio::test]
    async fn the_next_run_starts_before_the_last_is_handed_over_unless_it_has_a_report() {
        // The next subject runs while the last run is recorded.
        assert_eq!(
            order_of_events(None).await,
            ["start 0", "start 1", "end 0", "start 2", "end 1", "end 2"]
        );
        // A report file may be written again by the next run, at the same
        // path: the last run is handed over (its report read) first.
        let report = std::path::Path::new("/nonexistent/junit.xml");
        assert_eq!(
            order_of_events(Some(report)).await,
            ["start 0", "end 0", "start 1", "end 1", "start 2", "end 2"]
        );
    }

    #[tokio::test]
    async fn a_group_starts_together_and_the_next_waits_for_all_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // a0 and a1 each wait for the other to start: they can only both
        // pass when they run at once. b0 and b1 need both of group a ended.
        let jobs = vec![
            job(d, 0, 0, "a0", &["a1.start"]),
            job(d, 1, 0, "a1", &["a0.start"]),
            job(d, 2, 1, "b0", &[]),
            job(d, 3, 1, "b1", &[]),
        ];
        let (_tx, rx) = watch::channel(Stop::Run);
        let limits = limits();
        let mut events = Vec::new();
        let mut ended = Vec::new();
        schedule(&Executor::Real, jobs, 4, limits, rx, |e| match e {
            Event::Started { index } => {
                // When a b job starts, both a jobs must have ended.
                if index >= 2 {
                    events.push((
                        index,
                        d.join("a0.end").exists() && d.join("a1.end").exists(),
                    ));
                }
            }
            Event::Finished { index, result, .. } => ended.push((index, result.end)),
            Event::Interrupted => {}
        })
        .await;
        ended.sort_by_key(|(i, _)| *i);
        for (i, end) in &ended {
            assert_eq!(*end, ProcessEnd::Exited { code: 0 }, "job {i}");
        }
        assert_eq!(ended.len(), 4);
        assert_eq!(events, [(2, true), (3, true)]);
    }
}
