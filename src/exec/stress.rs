//! CPU stress owned by the harness: busy threads that run for exactly one
//! run's duration (a guard that stops them on drop), in the harness's own
//! session so the kernel's autogroup scheduler puts them beside the test
//! (see `shared/reference/perturbation-facts.md`).
//!
//! What a run really got is measured here too ([`Meter`]): each stress
//! thread's own CPU clock, and the CPU time of the run's reaped processes
//! (`getrusage(RUSAGE_CHILDREN)`). The host's busy share, read from
//! `/proc/stat`, is kept as context only: it is 100% whenever anything else
//! runs, so it proves nothing about the stress.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sched::{sched_setaffinity, CpuSet};
use nix::sys::resource::{getrusage, UsageWho};
use nix::time::{clock_gettime, ClockId};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

use crate::record::{RunCpu, StressCpu};

/// The stress a cell applies to each of its runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StressPlan {
    /// Busy threads.
    pub threads: usize,
    /// CPUs the threads are pinned to (those of a `cpu-pin` in the same
    /// cell, so they compete with the child), or all.
    pub cpus: Option<Vec<usize>>,
    /// CPUs flakelab may use (what unpinned threads share).
    #[serde(default)]
    pub allowed: usize,
}

impl StressPlan {
    /// CPUs the threads run on.
    pub fn usable(&self) -> usize {
        self.cpus.as_ref().map_or(self.allowed, Vec::len).max(1)
    }
}

/// Running busy threads; dropping the guard stops and joins them.
#[derive(Debug)]
pub struct StressGuard {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    /// Each thread's CPU time in nanoseconds, as it last published it.
    cpu_ns: Arc<Vec<AtomicU64>>,
    /// The first thread that could not be put on its CPU, and why.
    error: Arc<Mutex<Option<String>>>,
    usable: usize,
}

/// Iterations of the busy loop between two publications of a thread's CPU
/// clock: tens of microseconds of work, so the clock read costs little and
/// a reading is never more than that much CPU time behind.
const SPIN: u32 = 10_000;

/// Starts one named thread: `std::thread::Builder`'s spawn, or a stand-in
/// in tests (a process limit that root is not held to).
pub(crate) type SpawnThread<'a> =
    &'a dyn Fn(String, Box<dyn FnOnce() + Send>) -> std::io::Result<JoinHandle<()>>;

/// Where the threads wait until every one of them has been started: how
/// many have arrived, and whether to run (`None` while starting).
#[derive(Debug, Default)]
struct Gate {
    state: Mutex<(usize, Option<bool>)>,
    turned: Condvar,
}

impl Gate {
    /// A thread is there; it runs if the gate says so.
    fn arrive(&self) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.0 += 1;
        self.turned.notify_all();
        loop {
            if let Some(run) = state.1 {
                return run;
            }
            state = self.turned.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Waits for `threads` to have arrived, then lets them run or end.
    fn open(&self, threads: usize, run: bool) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while state.0 < threads {
            state = self.turned.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        state.1 = Some(run);
        self.turned.notify_all();
    }
}

impl StressGuard {
    /// Starts the threads and returns once every one of them is running
    /// (or has found it cannot be placed, and ended). When a thread cannot
    /// be started at all (a process limit), none runs, and
    /// [`StressGuard::error`] says why.
    pub fn start(plan: &StressPlan) -> StressGuard {
        Self::start_with(plan, &|name, body| {
            std::thread::Builder::new().name(name).spawn(body)
        })
    }

    /// [`StressGuard::start`] with `spawn` starting each thread.
    pub(crate) fn start_with(plan: &StressPlan, spawn: SpawnThread<'_>) -> StressGuard {
        let stop = Arc::new(AtomicBool::new(false));
        let gate = Arc::new(Gate::default());
        let cpu_ns: Arc<Vec<AtomicU64>> =
            Arc::new((0..plan.threads).map(|_| AtomicU64::new(0)).collect());
        let error = Arc::new(Mutex::new(None));
        let mut threads = Vec::with_capacity(plan.threads);
        let mut refused = None;
        for i in 0..plan.threads {
            let stop = Arc::clone(&stop);
            let gate = Arc::clone(&gate);
            let cpu_ns = Arc::clone(&cpu_ns);
            let error = Arc::clone(&error);
            let cpu = plan.cpus.as_ref().map(|c| c[i % c.len()]);
            let body = move || {
                if let Some(cpu) = cpu {
                    if let Err(why) = pin(cpu) {
                        // A thread that is not where the plan puts it
                        // does not compete with the child: it does
                        // not run, and the measurement says why.
                        let mut first = error.lock().unwrap_or_else(|e| e.into_inner());
                        first.get_or_insert(why);
                        drop(first);
                        gate.arrive();
                        return;
                    }
                }
                if !gate.arrive() {
                    return;
                }
                let mut x: u64 = 0x9E37_79B9;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..SPIN {
                        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    }
                    std::hint::black_box(x);
                    cpu_ns[i].store(own_cpu_ns(), Ordering::Relaxed);
                }
            };
            match spawn(format!("flakelab-stress-{i}"), Box::new(body)) {
                Ok(thread) => threads.push(thread),
                Err(err) => {
                    refused = Some(format!(
                        "stress thread {} of {} cannot start: {err}",
                        i + 1,
                        plan.threads
                    ));
                    break;
                }
            }
        }
        gate.open(threads.len(), refused.is_none());
        if let Some(why) = refused {
            // No partial stress: the threads that started end at once.
            for t in threads.drain(..) {
                let _ = t.join();
            }
            *error.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
        }
        StressGuard {
            stop,
            threads,
            cpu_ns,
            error,
            usable: plan.usable(),
        }
    }

    /// The CPU time the threads have had so far, summed.
    pub fn cpu_time(&self) -> Duration {
        Duration::from_nanos(self.cpu_ns.iter().map(|c| c.load(Ordering::Relaxed)).sum())
    }

    /// Why a thread could not be put on its CPU, if one could not.
    pub fn error(&self) -> Option<String> {
        self.error.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

fn pin(cpu: usize) -> Result<(), String> {
    let mut set = CpuSet::new();
    set.set(cpu)
        .and_then(|()| sched_setaffinity(Pid::from_raw(0), &set))
        .map_err(|e| format!("a stress thread cannot run on CPU {cpu}: {}", e.desc()))
}

/// This thread's CPU time (its own CPU clock), in nanoseconds.
fn own_cpu_ns() -> u64 {
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).map_or(0, |t| {
        u64::try_from(t.tv_sec()).unwrap_or(0) * 1_000_000_000
            + u64::try_from(t.tv_nsec()).unwrap_or(0)
    })
}

impl Drop for StressGuard {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Children and stress threads measured around one child: start it just
/// before the child is started, [`Meter::finish`] it once the child and its
/// leftovers are reaped.
#[derive(Debug)]
pub struct Meter {
    started: Instant,
    children: Option<Duration>,
    stress: Option<Duration>,
    host: Option<(u64, u64)>,
    /// CPUs `/proc/stat` counted at the start (0: unknown).
    host_cpus: usize,
}

/// CPU time of this process's reaped children so far (user + system).
fn children_cpu() -> Option<Duration> {
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).ok()?;
    let time = |t: nix::sys::time::TimeVal| -> Option<Duration> {
        Some(Duration::new(
            u64::try_from(t.tv_sec()).ok()?,
            u32::try_from(t.tv_usec()).ok()? * 1_000,
        ))
    };
    Some(time(usage.user_time())? + time(usage.system_time())?)
}

impl Meter {
    /// Takes the first readings.
    pub fn start(stress: Option<&StressGuard>) -> Meter {
        let (host, host_cpus) = host_reading();
        Meter {
            host,
            host_cpus,
            children: children_cpu(),
            stress: stress.map(StressGuard::cpu_time),
            started: Instant::now(),
        }
    }

    /// Takes the second readings: what the run got, and the host's busy
    /// share meanwhile. `alone` says no other child of flakelab was running
    /// or reaped in the window, so the children's CPU time is this run's.
    pub fn finish(
        self,
        stress: Option<(&StressPlan, &StressGuard)>,
        alone: bool,
    ) -> (RunCpu, Option<f64>) {
        let window = self.started.elapsed();
        let subject = (self.children.zip(children_cpu()))
            .filter(|_| alone)
            .map(|(a, b)| b.saturating_sub(a).as_secs_f64());
        let stress = stress.map(|(plan, guard)| StressCpu {
            threads: plan.threads,
            cpus: guard.usable,
            cpu_s: guard
                .cpu_time()
                .saturating_sub(self.stress.unwrap_or_default())
                .as_secs_f64(),
            error: guard.error(),
        });
        // A window too short to reach MIN_TICKS on any host gives no share
        // whatever /proc/stat says: it is not read again (most runs of a
        // fast subject; a read of /proc/stat costs the kernel all its lines).
        let host = self
            .host
            .filter(|_| may_reach_min_ticks(window, self.host_cpus))
            .and_then(|a| busy_share(a, cpu_ticks()?));
        (
            RunCpu {
                window_s: window.as_secs_f64(),
                subject_s: subject,
                stress,
            },
            host,
        )
    }
}

/// Aggregate CPU time counters of the host: `(busy, total)` in clock ticks.
pub fn cpu_ticks() -> Option<(u64, u64)> {
    parse_cpu_ticks(&read_proc_stat()?)
}

/// How old a reading of `/proc/stat` may be and still open a run's window:
/// one clock tick (USER_HZ is 100), the resolution of the counters
/// themselves, so a reused reading differs from a fresh one by at most the
/// one tick per CPU that any reading may be off by.
const READING_FRESH: Duration = Duration::from_millis(10);

/// The host's (busy, total) ticks and CPU count, from the last reading
/// when it is under [`READING_FRESH`] old (back-to-back short runs read
/// `/proc/stat` about once a tick, not once a run), else read now.
fn host_reading() -> (Option<(u64, u64)>, usize) {
    /// When a reading was taken, its (busy, total) ticks and CPU count.
    type Reading = (Instant, Option<(u64, u64)>, usize);
    static LAST: Mutex<Option<Reading>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((at, ticks, cpus)) = *last {
        if at.elapsed() < READING_FRESH {
            return (ticks, cpus);
        }
    }
    let stat = read_proc_stat();
    let ticks = stat.as_deref().and_then(parse_cpu_ticks);
    let cpus = stat.as_deref().map_or(0, count_cpus);
    *last = Some((Instant::now(), ticks, cpus));
    (ticks, cpus)
}

/// `/proc/stat`, read into a buffer large enough for most hosts at once
/// (one `read` and the one that returns end-of-file, not a doubling series
/// of small reads after a `stat` that says 0 bytes).
fn read_proc_stat() -> Option<String> {
    use std::io::Read as _;
    let mut text = String::with_capacity(16 * 1024);
    std::fs::File::open("/proc/stat")
        .ok()?
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

fn parse_cpu_ticks(stat: &str) -> Option<(u64, u64)> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    if v.len() < 5 {
        return None;
    }
    // user nice system idle iowait irq softirq steal (guest is inside user).
    let total: u64 = v.iter().take(8).sum();
    let idle = v[3] + v[4];
    Some((total - idle, total))
}

/// The CPUs `/proc/stat` counts (its `cpuN` lines).
fn count_cpus(stat: &str) -> usize {
    stat.lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count()
}

/// Whether `cpus` CPUs can count [`MIN_TICKS`] ticks (USER_HZ, 100 a
/// second each) in `window`: each CPU counts at most one tick more than its
/// share of the window (two, for slack); 0 CPUs (unknown) always may.
fn may_reach_min_ticks(window: Duration, cpus: usize) -> bool {
    if cpus == 0 {
        return true;
    }
    let per_cpu = window.as_secs_f64() * 100.0 + 2.0;
    per_cpu * cpus as f64 >= MIN_TICKS as f64
}

/// Fewest clock ticks (summed over CPUs) for a share worth recording:
/// below this the share is 0 or 1 by rounding, not by load.
pub const MIN_TICKS: u64 = 10;

/// The busy share between two readings, or None when too few ticks passed
/// to tell (runs shorter than a few tens of milliseconds).
pub fn busy_share(before: (u64, u64), after: (u64, u64)) -> Option<f64> {
    let total = after.1.checked_sub(before.1)?;
    let busy = after.0.checked_sub(before.0)?;
    (total >= MIN_TICKS).then(|| busy as f64 / total as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_window_on_few_cpus_cannot_reach_the_tick_floor() {
        // 2 CPUs: at most 2 x (0.1 + 2) ticks in a millisecond.
        assert!(!may_reach_min_ticks(Duration::from_millis(1), 2));
        assert!(may_reach_min_ticks(Duration::from_millis(40), 2));
        // 8 CPUs may count 10 ticks in any window (boundaries).
        assert!(may_reach_min_ticks(Duration::from_millis(1), 8));
        assert!(may_reach_min_ticks(Duration::ZERO, 0));
    }

    #[test]
    fn parses_proc_stat() {
        let stat = "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4 5\n";
        assert_eq!(parse_cpu_ticks(stat), Some((150, 1000)));
        assert_eq!(count_cpus(stat), 1);
        assert_eq!(count_cpus("cpu  1 2 3 4 5\ncpu0 1\ncpu1 1\nctxt 5\n"), 2);
        assert_eq!(busy_share((150, 1000), (250, 1100)), Some(1.0));
        assert_eq!(busy_share((150, 1000), (150, 1000)), None);
        assert_eq!(busy_share((150, 1000), (151, 1002)), None);
    }

    /// This process's stress threads alive now.
    fn stress_threads() -> usize {
        let me = std::process::id();
        std::fs::read_dir(format!("/proc/{me}/task"))
            .unwrap()
            .flatten()
            .filter(|t| {
                std::fs::read_to_string(t.path().join("comm"))
                    .is_ok_and(|c| c.starts_with("flakelab-stres"))
            })
            .count()
    }

    #[test]
    fn guard_starts_and_stops_its_threads() {
        let _one = STRESS_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        let plan = StressPlan {
            threads: 2,
            cpus: Some(vec![0]),
            allowed: 1,
        };
        let count = stress_threads;
        let before = count();
        let guard = StressGuard::start(&plan);
        assert!(count() >= before + 2);
        drop(guard);
        // Joined: the threads are gone (the other unit tests that start
        // stress hold STRESS_TESTS too).
        assert_eq!(count(), before);
    }

    #[test]
    fn a_stress_thread_that_cannot_start_ends_the_others_and_says_why() {
        let _one = STRESS_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        let plan = StressPlan {
            threads: 4,
            cpus: None,
            allowed: 1,
        };
        let count = stress_threads;
        let before = count();
        // A process limit that refuses the third thread (root is not held
        // to RLIMIT_NPROC, so the refusal is injected).
        let tried = std::sync::atomic::AtomicUsize::new(0);
        let spawn = |name: String, body: Box<dyn FnOnce() + Send>| {
            if tried.fetch_add(1, Ordering::SeqCst) == 2 {
                return Err(std::io::Error::from_raw_os_error(
                    nix::errno::Errno::EAGAIN as i32,
                ));
            }
            std::thread::Builder::new().name(name).spawn(body)
        };
        let guard = StressGuard::start_with(&plan, &spawn);
        assert_eq!(tried.load(Ordering::SeqCst), 3);
        assert!(guard.threads.is_empty());
        assert_eq!(count(), before);
        assert_eq!(guard.cpu_time(), Duration::ZERO);
        assert_eq!(
            guard.error().as_deref(),
            Some(
                "stress thread 3 of 4 cannot start: Resource temporarily unavailable (os error 11)"
            )
        );
        let (cpu, _) = Meter::start(Some(&guard)).finish(Some((&plan, &guard)), true);
        let stress = cpu.stress.unwrap();
        assert_eq!(stress.cpu_s, 0.0);
        assert_eq!(stress.error, guard.error());
    }

    /// Unit tests that start stress threads run one at a time, so that
    /// thread counts and CPU clocks are this test's own.
    static STRESS_TESTS: Mutex<()> = Mutex::new(());

    /// Waits until `guard` has had `at_least` of CPU time: readiness by the
    /// measured value itself, with a safety limit far beyond any load.
    fn until_cpu(guard: &StressGuard, at_least: Duration) {
        let limit = Instant::now() + Duration::from_secs(120);
        while guard.cpu_time() < at_least {
            assert!(
                Instant::now() < limit,
                "the stress never got {at_least:?} of CPU"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_stress_threads_cpu_time_grows_and_never_exceeds_its_wall_time() {
        let _one = STRESS_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        let plan = StressPlan {
            threads: 2,
            cpus: None,
            allowed: 2,
        };
        let guard = StressGuard::start(&plan);
        let meter = Meter::start(Some(&guard));
        until_cpu(&guard, Duration::from_millis(60));
        let (cpu, host) = meter.finish(Some((&plan, &guard)), true);
        drop(guard);
        let stress = cpu.stress.clone().unwrap();
        assert_eq!((stress.threads, stress.cpus, stress.error), (2, 2, None));
        // A thread's CPU clock cannot run faster than the wall clock, on any
        // host, however loaded: each thread's share is at most one CPU.
        assert!(stress.cpu_s > 0.0);
        let share = cpu.stress_share().unwrap();
        assert!(share > 0.0 && share <= 1.0 + 1e-6, "{cpu:?}");
        assert!(host.is_none_or(|h| (0.0..=1.0).contains(&h)));
    }

    #[test]
    fn a_stress_thread_that_cannot_be_placed_does_not_run_and_says_why() {
        let _one = STRESS_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        // The last CPU a mask can name: no host here has it online.
        let nowhere = CpuSet::count() - 1;
        let stranded = StressPlan {
            threads: 1,
            cpus: Some(vec![nowhere]),
            allowed: 1,
        };
        let working = StressPlan {
            threads: 1,
            cpus: None,
            allowed: 1,
        };
        let bad = StressGuard::start(&stranded);
        let good = StressGuard::start(&working);
        let meter = Meter::start(Some(&bad));
        // Relative ordering, not a time: by the time the placed thread has
        // had 50 ms of CPU, the stranded one has had none at all.
        until_cpu(&good, Duration::from_millis(50));
        let (cpu, _) = meter.finish(Some((&stranded, &bad)), true);
        let stress = cpu.stress.unwrap();
        assert_eq!(stress.cpu_s, 0.0);
        assert_eq!(bad.cpu_time(), Duration::ZERO);
        let why = stress.error.unwrap();
        assert!(
            why.contains(&format!("cannot run on CPU {nowhere}")),
            "{why}"
        );
    }

    #[test]
    fn a_childs_cpu_time_is_measured_only_when_it_ran_alone() {
        let meter = Meter::start(None);
        let status = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"])
            .status()
            .unwrap();
        assert!(status.success());
        let busy = meter.finish(None, true).0;
        // Its own fixed work is in it, whatever else this process reaped
        // meanwhile (unit tests run side by side; the ordering of a busy
        // and an idle subject is tested through the binary, alone).
        assert!(busy.subject_s.unwrap() > 0.05, "{busy:?}");
        assert!(busy.stress.is_none());
        // Not alone: another child's time could be in it, so none is given.
        assert_eq!(Meter::start(None).finish(None, false).0.subject_s, None);
    }
}
