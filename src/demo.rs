//! The bundled example suite (`flakelab __demo-suite`) and `flakelab demo`.
//!
//! The suite is a tiny test runner built into the binary, so a newcomer needs
//! nothing installed. It plants one failure per flake class next to stable
//! controls, each written the way such bugs are written in real suites:
//!
//! | test | fails when |
//! | --- | --- |
//! | `zone::report_header_is_utc` | the process's zone is not UTC (assumes the host runs in UTC) |
//! | `clock::licence_not_expired` | the clock reads past the fixture's expiry date (set 180 days ahead when the demo is created) |
//! | `net::exchange_rates_route` | no route to a public address (needs the network) |
//! | `net::loopback_echo` | never: a loopback round trip (a control for the network cell) |
//! | `load::worker_meets_deadline` | the worker's wall time exceeds 1.5 times its CPU time (a deadline sized for an idle machine) |
//! | `shared::exclusive_cache_lock` | another run holds the project's cache lock (two runs at once in one directory) |
//! | `math::adds_money`, `text::formats_names` | never: stable controls |

use std::io::Write;
use std::net::UdpSocket;
use std::path::Path;
use std::time::{Duration, Instant};

/// Which planted test each cell of the standard matrix flips.
pub const LEGEND: &str = "\
flakelab demo: what each cell flips in the bundled suite
  tz-*             zone::report_header_is_utc   (assumes the host runs in UTC)
  clock-next-year  clock::licence_not_expired   (a fixture that expires in 180 days)
  no-network       net::exchange_rates_route    (needs a route out; net::loopback_echo keeps passing)
  cpu-stress-2x    load::worker_meets_deadline  (a deadline sized for an idle machine)
  locale-posix     nothing: no planted locale bug, so it reads 0 of N with its bound
  shared::exclusive_cache_lock collides only when two runs share the directory: try `flakelab demo -j 2`";

/// File in the demo project holding the licence expiry date (`YYYY-MM-DD`).
pub const LICENCE_FILE: &str = "licence.txt";

type TestFn = fn(&Path) -> Result<(), String>;

/// The suite's tests, in their fixed order.
pub const TESTS: &[(&str, TestFn)] = &[
    ("math::adds_money", adds_money),
    ("zone::report_header_is_utc", report_header_is_utc),
    ("clock::licence_not_expired", licence_not_expired),
    ("net::exchange_rates_route", exchange_rates_route),
    ("net::loopback_echo", loopback_echo),
    ("load::worker_meets_deadline", worker_meets_deadline),
    ("shared::exclusive_cache_lock", exclusive_cache_lock),
    ("text::formats_names", formats_names),
];

/// Runs the suite (or the tests whose name contains `only`), printing one
/// line per test; returns the process exit code (0 all passed, 1 otherwise).
pub fn run_suite(project: &Path, only: Option<&str>, out: &mut impl Write) -> i32 {
    let mut failed = 0;
    let mut ran = 0;
    for (name, test) in TESTS {
        if only.is_some_and(|o| !name.contains(o)) {
            continue;
        }
        ran += 1;
        match test(project) {
            Ok(()) => {
                let _ = writeln!(out, "ok   {name}");
            }
            Err(message) => {
                failed += 1;
                let _ = writeln!(out, "FAIL {name}: {message}");
            }
        }
    }
    let _ = writeln!(out, "{} passed, {failed} failed", ran - failed);
    if ran == 0 {
        let _ = writeln!(out, "no tests matched");
        return 5;
    }
    i32::from(failed > 0)
}

/// Writes the demo project's fixture files into `dir`.
pub fn create_project(dir: &Path) -> std::io::Result<()> {
    let expiry = jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
        .checked_add(jiff::Span::new().days(180))
        .map_err(std::io::Error::other)?;
    std::fs::write(dir.join(LICENCE_FILE), format!("{expiry}\n"))
}

fn adds_money(_: &Path) -> Result<(), String> {
    let cents: i64 = [1999, 1, 500].iter().sum();
    (cents == 2500)
        .then_some(())
        .ok_or(format!("expected 2500, got {cents}"))
}

fn formats_names(_: &Path) -> Result<(), String> {
    let name = format!("{}, {}", "Lovelace", "Ada");
    (name == "Lovelace, Ada").then_some(()).ok_or(name)
}

fn report_header_is_utc(_: &Path) -> Result<(), String> {
    let now = jiff::Zoned::now();
    let offset = now.offset();
    if offset.seconds() == 0 {
        Ok(())
    } else {
        Err(format!(
            "report header shows {} but the fixture expects +00:00 (TZ={})",
            offset,
            std::env::var("TZ").unwrap_or_default()
        ))
    }
}

fn licence_not_expired(project: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(project.join(LICENCE_FILE))
        .map_err(|e| format!("cannot read the licence fixture: {e}"))?;
    let expiry: jiff::civil::Date = text
        .trim()
        .parse()
        .map_err(|e| format!("bad licence date {text:?}: {e}"))?;
    let now = std::time::SystemTime::now();
    let today = jiff::Timestamp::try_from(now)
        .map_err(|e| e.to_string())?
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date();
    if today <= expiry {
        Ok(())
    } else {
        Err(format!("licence expired on {expiry} (today is {today})"))
    }
}

fn exchange_rates_route(_: &Path) -> Result<(), String> {
    // A UDP connect() sends no packet: it only asks the kernel for a route.
    let socket = UdpSocket::bind("0.0.0.0:0").map_err(|e| format!("bind: {e}"))?;
    socket
        .connect("198.51.100.7:443")
        .map_err(|e| format!("cannot reach the rates service: {e}"))
}

fn loopback_echo(_: &Path) -> Result<(), String> {
    crate::perturb::probe::loopback_round_trip()
}

fn worker_meets_deadline(_: &Path) -> Result<(), String> {
    // The deadline is 1.5 times the CPU time the work needs: ample on an
    // idle machine, missed when busy threads take more than a third of the CPU.
    // The work is 50 ms of this thread's CPU time (whatever the build or the
    // machine), long enough for the scheduler to share the CPU out fairly.
    let worker = std::thread::spawn(|| {
        let start = Instant::now();
        let cpu0 = thread_cpu_time();
        let mut x: u64 = 1;
        while thread_cpu_time().saturating_sub(cpu0) < Duration::from_millis(50) {
            for i in 0..100_000u64 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
            }
            std::hint::black_box(x);
        }
        (start.elapsed(), thread_cpu_time().saturating_sub(cpu0))
    });
    let (wall, cpu) = worker.join().map_err(|_| "worker panicked".to_string())?;
    if wall.as_secs_f64() <= cpu.as_secs_f64() * 1.5 + 0.005 {
        Ok(())
    } else {
        Err(format!(
            "worker took {:.1} ms but needed {:.1} ms of CPU: deadline missed",
            wall.as_secs_f64() * 1e3,
            cpu.as_secs_f64() * 1e3
        ))
    }
}

fn thread_cpu_time() -> Duration {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(Duration::from)
        .unwrap_or_default()
}

fn exclusive_cache_lock(project: &Path) -> Result<(), String> {
    let path = project.join(".cache.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| format!("open {}: {e}", path.display()))?;
    match file.try_lock() {
        Ok(()) => {
            // Rebuild the cache while holding the lock.
            std::thread::sleep(Duration::from_millis(30));
            Ok(())
        }
        Err(_) => Err(format!(
            "cache lock {} is held by another run",
            path.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_pass_and_only_filters() {
        let dir = tempfile::tempdir().unwrap();
        create_project(dir.path()).unwrap();
        let mut out = Vec::new();
        assert_eq!(run_suite(dir.path(), Some("math::"), &mut out), 0);
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("ok   math::adds_money"), "{text}");
        assert!(text.contains("1 passed, 0 failed"), "{text}");
        let mut out = Vec::new();
        assert_eq!(run_suite(dir.path(), Some("nothing"), &mut out), 5);
    }

    #[test]
    fn expired_licence_fails() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(LICENCE_FILE), "2001-01-01\n").unwrap();
        let err = licence_not_expired(dir.path()).unwrap_err();
        assert!(err.contains("expired on 2001-01-01"), "{err}");
        create_project(dir.path()).unwrap();
        assert!(licence_not_expired(dir.path()).is_ok());
    }

    #[test]
    fn held_lock_fails() {
        let dir = tempfile::tempdir().unwrap();
        let holder = std::fs::File::create(dir.path().join(".cache.lock")).unwrap();
        holder.lock().unwrap();
        assert!(exclusive_cache_lock(dir.path())
            .unwrap_err()
            .contains("held by another run"));
        holder.unlock().unwrap();
    }
}
