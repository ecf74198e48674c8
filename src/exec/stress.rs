//! CPU stress owned by the harness: busy threads that run for exactly one
//! run's duration (a guard that stops them on drop), in the harness's own
//! session so the kernel's autogroup scheduler puts them beside the test
//! (see `shared/reference/perturbation-facts.md`). Also the host CPU busy
//! share, read from `/proc/stat` around each run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;

use nix::sched::{sched_setaffinity, CpuSet};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

/// The stress a cell applies to each of its runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StressPlan {
    /// Busy threads.
    pub threads: usize,
    /// CPUs the threads are pinned to (those of a `cpu-pin` in the same
    /// cell, so they compete with the child), or all.
    pub cpus: Option<Vec<usize>>,
}

/// Running busy threads; dropping the guard stops and joins them.
#[derive(Debug)]
pub struct StressGuard {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl StressGuard {
    /// Starts the threads and returns once every one of them is running.
    pub fn start(plan: &StressPlan) -> StressGuard {
        let stop = Arc::new(AtomicBool::new(false));
        let ready = Arc::new(Barrier::new(plan.threads + 1));
        let threads = (0..plan.threads)
            .map(|i| {
                let stop = Arc::clone(&stop);
                let ready = Arc::clone(&ready);
                let cpu = plan.cpus.as_ref().map(|c| c[i % c.len()]);
                std::thread::Builder::new()
                    .name(format!("flakelab-stress-{i}"))
                    .spawn(move || {
                        if let Some(cpu) = cpu {
                            let mut set = CpuSet::new();
                            if set.set(cpu).is_ok() {
                                let _ = sched_setaffinity(Pid::from_raw(0), &set);
                            }
                        }
                        ready.wait();
                        let mut x: u64 = 0x9E37_79B9;
                        while !stop.load(Ordering::Relaxed) {
                            for _ in 0..10_000 {
                                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                            }
                            std::hint::black_box(x);
                        }
                    })
                    .expect("spawn a stress thread")
            })
            .collect();
        ready.wait();
        StressGuard { stop, threads }
    }
}

impl Drop for StressGuard {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Aggregate CPU time counters of the host: `(busy, total)` in clock ticks.
pub fn cpu_ticks() -> Option<(u64, u64)> {
    parse_cpu_ticks(&std::fs::read_to_string("/proc/stat").ok()?)
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
    fn parses_proc_stat() {
        let stat = "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4 5\n";
        assert_eq!(parse_cpu_ticks(stat), Some((150, 1000)));
        assert_eq!(busy_share((150, 1000), (250, 1100)), Some(1.0));
        assert_eq!(busy_share((150, 1000), (150, 1000)), None);
        assert_eq!(busy_share((150, 1000), (151, 1002)), None);
    }

    #[test]
    fn guard_starts_and_stops_its_threads() {
        let plan = StressPlan {
            threads: 2,
            cpus: Some(vec![0]),
        };
        let me = std::process::id();
        let count = || {
            std::fs::read_dir(format!("/proc/{me}/task"))
                .unwrap()
                .flatten()
                .filter(|t| {
                    std::fs::read_to_string(t.path().join("comm"))
                        .is_ok_and(|c| c.starts_with("flakelab-stres"))
                })
                .count()
        };
        let before = count();
        let guard = StressGuard::start(&plan);
        assert!(count() >= before + 2);
        drop(guard);
        // Joined: the threads are gone (no other unit test starts stress).
        assert_eq!(count(), before);
    }
}
