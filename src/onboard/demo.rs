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
//! | `load::worker_meets_deadline` | busy threads run beside it in its harness for its whole run (a deadline that assumes a CPU to itself; run by hand, its wall time exceeds 1.5 times its CPU time) |
//! | `shared::exclusive_cache_lock` | another run holds the project's cache lock (two runs at once in one directory) |
//! | `state::invoice_in_dollars` | it runs after `state::sets_euro_default`, which leaves a process-wide currency set (order dependence) |
//! | `export::writes_daily_report` | `export::writes_weekly_report` runs beside it on another worker: both write the project's `report.csv` |
//! | `math::adds_money`, `text::formats_names` | never: stable controls |
//!
//! Like a real runner it takes a shuffle seed (`--seed N`, or `--shuffle`
//! for a fresh one) and a worker count (`-n N`, `--workers N`), and prints
//! both (`seed: N`, `workers: N (threads)`) the way pytest-randomly and
//! pytest-xdist do, so the `flakelab-demo` recipe reads them back as proof.
//! Without a seed the tests run in their declared order, where the victim
//! comes before its polluter; a seed shuffles them (Fisher–Yates over
//! SplitMix64, so a seed gives one order on every machine).
//!
//! Workers are threads. The tests are dealt in rounds of N, one per worker,
//! started together; a test may meet the others of its round at a
//! [`Ctx::rendezvous`] (a barrier: the runner meets it on behalf of a test
//! that returned without), so what two concurrent tests do to each other is
//! decided by the barrier, never by timing. With one worker a rendezvous
//! returns at once.

use std::fmt::Write as _;
use std::io::Write;
use std::net::UdpSocket;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Which planted test each cell of the standard matrix flips.
pub const LEGEND: &str = "\
flakelab demo: what each cell flips in the bundled suite
  tz-*             zone::report_header_is_utc   (assumes the host runs in UTC)
  clock-next-year  clock::licence_not_expired   (a fixture that expires in 180 days)
  no-network       net::exchange_rates_route    (needs a route out; net::loopback_echo keeps passing)
  cpu-stress-2x    load::worker_meets_deadline  (a deadline that assumes a CPU to itself)
  shuffled-order   state::invoice_in_dollars    (in the runs whose seed puts state::sets_euro_default first: 9 of the default seed's first 10)
  workers-2x       export::writes_daily_report  (export::writes_weekly_report overwrites report.csv from the other worker)
  locale-posix     nothing: no planted locale bug, so it reads 0 of N with its bound
  shared::exclusive_cache_lock collides only when two runs share the directory: try `flakelab demo -j 2`";

/// File in the demo project holding the licence expiry date (`YYYY-MM-DD`).
pub const LICENCE_FILE: &str = "licence.txt";

/// The scratch file both export tests write (in the project directory).
pub const REPORT_FILE: &str = "report.csv";

/// The rendezvous a test may meet at most this many times.
const STEPS: u32 = 2;

/// The suite's process-wide settings, which a test can change for every
/// test after it (one per run of the suite: in `flakelab __demo-suite`,
/// one per process).
#[derive(Debug, Default)]
pub struct Globals {
    /// The default currency is EUR (set by `state::sets_euro_default`, which
    /// never restores it).
    euro_default: AtomicBool,
}

/// What a test gets: the project directory, the suite's globals and its
/// round's rendezvous.
pub struct Ctx<'a> {
    project: &'a Path,
    globals: &'a Globals,
    round: Option<&'a Barrier>,
    met: std::cell::Cell<u32>,
}

impl<'a> Ctx<'a> {
    fn new(project: &'a Path, globals: &'a Globals, round: Option<&'a Barrier>) -> Self {
        Ctx {
            project,
            globals,
            round,
            met: std::cell::Cell::new(0),
        }
    }

    /// Waits until every other test of this round has reached the same
    /// rendezvous (or returned). At once with one worker.
    pub fn rendezvous(&self) {
        assert!(
            self.met.get() < STEPS,
            "a test meets at most {STEPS} rendezvous"
        );
        self.met.set(self.met.get() + 1);
        if let Some(b) = self.round {
            b.wait();
        }
    }

    /// Meets the rendezvous the test did not (so that its round moves on).
    fn finish(&self) {
        while self.met.get() < STEPS {
            self.rendezvous();
        }
    }
}

type TestFn = fn(&Ctx) -> Result<(), String>;

/// The suite's tests, in their declared order (the victim of the order
/// dependence before its polluter; the export pair first, so any two or
/// more workers run it in one round).
pub const TESTS: &[(&str, TestFn)] = &[
    ("export::writes_daily_report", writes_daily_report),
    ("export::writes_weekly_report", writes_weekly_report),
    ("math::adds_money", adds_money),
    ("zone::report_header_is_utc", report_header_is_utc),
    ("clock::licence_not_expired", licence_not_expired),
    ("net::exchange_rates_route", exchange_rates_route),
    ("net::loopback_echo", loopback_echo),
    ("load::worker_meets_deadline", worker_meets_deadline),
    ("state::invoice_in_dollars", invoice_in_dollars),
    ("shared::exclusive_cache_lock", exclusive_cache_lock),
    ("state::sets_euro_default", sets_euro_default),
    ("text::formats_names", formats_names),
];

/// How the suite runs: which tests, in which order, on how many workers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options<'a> {
    /// Exactly these tests, in this order (`--order FILE`).
    pub listed: Option<&'a [String]>,
    /// Only the tests whose name contains this text.
    pub only: Option<&'a str>,
    /// Shuffle with this seed (printed as `seed: N`).
    pub seed: Option<u64>,
    /// Worker threads (printed as `workers: N (threads)` when given).
    pub workers: Option<usize>,
    /// Also write a JUnit report of the run here.
    pub junit: Option<&'a Path>,
}

/// The order the suite runs its tests in: the declared order, or the
/// seed's shuffle (Fisher–Yates driven by SplitMix64).
pub fn order(seed: Option<u64>) -> Vec<usize> {
    let mut order: Vec<usize> = (0..TESTS.len()).collect();
    if let Some(seed) = seed {
        let mut state = seed;
        for i in (1..order.len()).rev() {
            let j = (splitmix64(&mut state) % (i as u64 + 1)) as usize;
            order.swap(i, j);
        }
    }
    order
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Runs the suite, printing its seed and workers when given, then one line
/// per test; returns the process exit code (0 all passed, 1 otherwise, 5
/// when no test matched).
pub fn run_suite(project: &Path, opts: &Options, out: &mut impl Write) -> i32 {
    if let Some(seed) = opts.seed {
        let _ = writeln!(out, "seed: {seed}");
    }
    if let Some(n) = opts.workers {
        let _ = writeln!(out, "workers: {n} (threads)");
    }
    let order = match opts.listed {
        Some(names) => (names.iter())
            .filter_map(|n| TESTS.iter().position(|(name, _)| name == n))
            .collect(),
        None => order(opts.seed),
    };
    let chosen: Vec<usize> = order
        .into_iter()
        .filter(|&i| opts.only.is_none_or(|o| TESTS[i].0.contains(o)))
        .collect();
    let workers = opts.workers.unwrap_or(1).max(1);
    let mut failed = 0;
    let globals = Globals::default();
    let mut results = Vec::new();
    for round in chosen.chunks(workers) {
        for (i, result) in run_round(project, &globals, round) {
            let name = TESTS[i].0;
            results.push((name, result.clone()));
            match result {
                Ok(()) => {
                    let _ = writeln!(out, "ok   {name}");
                }
                Err(message) => {
                    failed += 1;
                    let _ = writeln!(out, "FAIL {name}: {message}");
                }
            }
        }
    }
    let _ = writeln!(out, "{} passed, {failed} failed", chosen.len() - failed);
    if let Some(path) = opts.junit {
        if let Err(e) = std::fs::write(path, junit(&results)) {
            let _ = writeln!(out, "cannot write the JUnit report {}: {e}", path.display());
            return 3;
        }
    }
    if chosen.is_empty() {
        let _ = writeln!(out, "no tests matched");
        return 5;
    }
    i32::from(failed > 0)
}

/// The run's JUnit report: one `<testcase>` per test, its classname the
/// test's module (`state::invoice_in_dollars` is `state` and
/// `invoice_in_dollars`), a `<failure>` with the message when it failed.
pub fn junit(results: &[(&str, Result<(), String>)]) -> String {
    let failures = results.iter().filter(|(_, r)| r.is_err()).count();
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n<testsuite name=\"flakelab-demo\" tests=\"{}\" failures=\"{failures}\">\n",
        results.len()
    );
    for (name, result) in results {
        let (class, case) = name.split_once("::").unwrap_or(("demo", name));
        let _ = write!(
            xml,
            "<testcase classname=\"{}\" name=\"{}\"",
            escape(class),
            escape(case)
        );
        match result {
            Ok(()) => xml.push_str("/>\n"),
            Err(m) => {
                let _ = writeln!(xml, "><failure message=\"{}\"/></testcase>", escape(m));
            }
        }
    }
    xml.push_str("</testsuite>\n</testsuites>\n");
    xml
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t') => {}
            c => out.push(c),
        }
    }
    out
}

/// Runs one round: one test alone, or each on its own thread, all started
/// together and sharing the round's rendezvous.
fn run_round(
    project: &Path,
    globals: &Globals,
    round: &[usize],
) -> Vec<(usize, Result<(), String>)> {
    if let [i] = round {
        let ctx = Ctx::new(project, globals, None);
        return vec![(*i, TESTS[*i].1(&ctx))];
    }
    let barrier = Barrier::new(round.len());
    std::thread::scope(|s| {
        let handles: Vec<_> = round
            .iter()
            .map(|&i| {
                let barrier = &barrier;
                s.spawn(move || {
                    let ctx = Ctx::new(project, globals, Some(barrier));
                    let result = TESTS[i].1(&ctx);
                    ctx.finish();
                    result
                })
            })
            .collect();
        round
            .iter()
            .zip(handles)
            .map(|(&i, h)| {
                (
                    i,
                    h.join().unwrap_or_else(|_| Err("the test panicked".into())),
                )
            })
            .collect()
    })
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

fn sets_euro_default(ctx: &Ctx) -> Result<(), String> {
    // Meets its round first: a victim running beside it on another worker
    // reads the currency before this sets it (decided, not raced).
    ctx.rendezvous();
    ctx.globals.euro_default.store(true, Ordering::SeqCst);
    Ok(())
}

fn invoice_in_dollars(ctx: &Ctx) -> Result<(), String> {
    if ctx.globals.euro_default.load(Ordering::SeqCst) {
        Err("the invoice shows EUR, not USD: an earlier test (state::sets_euro_default) left the default currency set".into())
    } else {
        Ok(())
    }
}

fn write_and_read_report(ctx: &Ctx, rows: &str, first: bool) -> Result<(), String> {
    let path = ctx.project.join(REPORT_FILE);
    let write =
        || std::fs::write(&path, rows).map_err(|e| format!("write {}: {e}", path.display()));
    // The daily export writes before the first rendezvous, the weekly one
    // between the two: beside each other, the weekly rows always win.
    if first {
        write()?;
        ctx.rendezvous();
    } else {
        ctx.rendezvous();
        write()?;
    }
    ctx.rendezvous();
    let read =
        std::fs::read_to_string(&path).map_err(|e| format!("read {}: {e}", path.display()))?;
    if read == rows {
        Ok(())
    } else {
        Err(format!(
            "{REPORT_FILE} holds {:?}, not the rows just written ({rows:?}): another worker wrote the same file",
            read.trim_end()
        ))
    }
}

fn writes_daily_report(ctx: &Ctx) -> Result<(), String> {
    write_and_read_report(ctx, "day,total\n2026-01-01,12\n", true)
}

fn writes_weekly_report(ctx: &Ctx) -> Result<(), String> {
    write_and_read_report(ctx, "week,total\n2026-W01,84\n", false)
}

fn adds_money(_: &Ctx) -> Result<(), String> {
    let cents: i64 = [1999, 1, 500].iter().sum();
    (cents == 2500)
        .then_some(())
        .ok_or(format!("expected 2500, got {cents}"))
}

fn formats_names(_: &Ctx) -> Result<(), String> {
    let name = format!("{}, {}", "Lovelace", "Ada");
    (name == "Lovelace, Ada").then_some(()).ok_or(name)
}

fn report_header_is_utc(_: &Ctx) -> Result<(), String> {
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

fn licence_not_expired(ctx: &Ctx) -> Result<(), String> {
    let project = ctx.project;
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

fn exchange_rates_route(_: &Ctx) -> Result<(), String> {
    // A UDP connect() sends no packet: it only asks the kernel for a route.
    let socket = UdpSocket::bind("0.0.0.0:0").map_err(|e| format!("bind: {e}"))?;
    socket
        .connect("198.51.100.7:443")
        .map_err(|e| format!("cannot reach the rates service: {e}"))
}

fn loopback_echo(_: &Ctx) -> Result<(), String> {
    crate::perturb::probe::loopback_round_trip()
}

fn worker_meets_deadline(_: &Ctx) -> Result<(), String> {
    // The deadline assumes the worker has a CPU to itself. Timing itself
    // would make any busy host miss it at baseline too, so under a harness
    // the test looks instead for what takes the CPU from it: threads of its
    // harness (the nearest `flakelab` process above it) that stay runnable
    // in every one of 20 looks 10 ms apart. `cpu-stress` runs exactly such
    // threads inside the harness for the whole run; at baseline the harness
    // only waits for its child. Without a harness above it (the suite run
    // by hand) it times a worker: wall time over 1.5 times its CPU time.
    match harness_pid() {
        Some(harness) => {
            let mut busy = runnable_threads(harness);
            for _ in 0..19 {
                std::thread::sleep(Duration::from_millis(10));
                let now = runnable_threads(harness);
                busy.retain(|tid| now.contains(tid));
            }
            if busy.is_empty() {
                Ok(())
            } else {
                Err(format!(
                    "deadline missed: {} busy thread(s) of the harness ran beside the worker",
                    busy.len()
                ))
            }
        }
        None => timed_worker(),
    }
}

/// The fields of `/proc/PID/stat` (or a task's) after the command name.
fn stat_fields(path: &str) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(path).ok()?;
    let (_, rest) = text.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// The nearest ancestor whose command is `flakelab`, if any.
fn harness_pid() -> Option<u32> {
    let mut pid = std::os::unix::process::parent_id();
    while pid > 1 {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
        if comm.trim() == "flakelab" {
            return Some(pid);
        }
        pid = stat_fields(&format!("/proc/{pid}/stat"))?
            .get(1)?
            .parse()
            .ok()?;
    }
    None
}

/// The thread ids of `pid` that are runnable (state `R`) right now.
fn runnable_threads(pid: u32) -> Vec<String> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .map(|t| t.file_name().to_string_lossy().into_owned())
        .filter(|tid| {
            stat_fields(&format!("/proc/{pid}/task/{tid}/stat"))
                .is_some_and(|f| f.first().is_some_and(|s| s == "R"))
        })
        .collect()
}

/// 50 ms of one thread's CPU time against a deadline of 1.5 times that.
fn timed_worker() -> Result<(), String> {
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

fn exclusive_cache_lock(ctx: &Ctx) -> Result<(), String> {
    let project = ctx.project;
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

    fn run(dir: &Path, opts: &Options) -> (i32, String) {
        let mut out = Vec::new();
        let code = run_suite(dir, opts, &mut out);
        (code, String::from_utf8(out).unwrap())
    }

    fn failed(text: &str) -> Vec<&str> {
        text.lines()
            .filter_map(|l| l.strip_prefix("FAIL "))
            .filter_map(|l| l.split_once(": ").map(|(name, _)| name))
            .collect()
    }

    fn ctx<'a>(dir: &'a Path, globals: &'a Globals) -> Ctx<'a> {
        Ctx::new(dir, globals, None)
    }

    fn index(name: &str) -> usize {
        TESTS.iter().position(|(n, _)| *n == name).unwrap()
    }

    fn polluter_first(seed: Option<u64>) -> bool {
        let order = order(seed);
        let at = |name| order.iter().position(|&i| i == index(name)).unwrap();
        at("state::sets_euro_default") < at("state::invoice_in_dollars")
    }

    #[test]
    fn controls_pass_and_only_filters() {
        let dir = tempfile::tempdir().unwrap();
        create_project(dir.path()).unwrap();
        let only = |o| Options {
            only: Some(o),
            ..Options::default()
        };
        let (code, text) = run(dir.path(), &only("math::"));
        assert_eq!(code, 0, "{text}");
        assert!(text.contains("ok   math::adds_money"), "{text}");
        assert!(text.contains("1 passed, 0 failed"), "{text}");
        assert!(
            !text.contains("seed:") && !text.contains("workers:"),
            "{text}"
        );
        assert_eq!(run(dir.path(), &only("nothing")).0, 5);
    }

    #[test]
    fn expired_licence_fails() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(LICENCE_FILE), "2001-01-01\n").unwrap();
        let err = licence_not_expired(&ctx(dir.path(), &Globals::default())).unwrap_err();
        assert!(err.contains("expired on 2001-01-01"), "{err}");
        create_project(dir.path()).unwrap();
        assert!(licence_not_expired(&ctx(dir.path(), &Globals::default())).is_ok());
    }

    #[test]
    fn held_lock_fails() {
        let dir = tempfile::tempdir().unwrap();
        let holder = std::fs::File::create(dir.path().join(".cache.lock")).unwrap();
        holder.lock().unwrap();
        assert!(exclusive_cache_lock(&ctx(dir.path(), &Globals::default()))
            .unwrap_err()
            .contains("held by another run"));
        holder.unlock().unwrap();
    }

    #[test]
    fn the_declared_order_runs_the_victim_before_its_polluter() {
        assert!(!polluter_first(None));
        assert_eq!(order(None), (0..TESTS.len()).collect::<Vec<_>>());
    }

    #[test]
    fn a_seed_gives_one_order_and_seeds_give_both() {
        assert_eq!(order(Some(7)), order(Some(7)));
        let mut sorted = order(Some(7));
        sorted.sort_unstable();
        assert_eq!(sorted, (0..TESTS.len()).collect::<Vec<_>>());
        let firsts = (0..40).filter(|&s| polluter_first(Some(s))).count();
        assert!((5..35).contains(&firsts), "{firsts} of 40 seeds");
    }

    /// The demo's result is the same everywhere: with its default seed, the
    /// shuffle cell's first run flips the victim and its second does not
    /// (so `flakelab demo -n 2` already shows both orders).
    #[test]
    fn the_default_seed_shows_both_orders_in_the_first_two_runs() {
        let seed = |r| Some(crate::plan::run_seed(crate::cli::DEMO_SEED, r));
        assert!(polluter_first(seed(0)));
        assert!(!polluter_first(seed(1)));
        // The legend's figure.
        let flips = (0..10).filter(|&r| polluter_first(seed(r))).count();
        assert_eq!(flips, 9, "{flips} of the demo's 10 runs");
        assert!(LEGEND.contains("9 of the default seed's first 10"));
    }

    #[test]
    fn a_seeded_run_prints_its_seed_and_flips_the_victim_only_when_the_polluter_ran_first() {
        let dir = tempfile::tempdir().unwrap();
        create_project(dir.path()).unwrap();
        let only = Some("state::");
        for seed in 0..8u64 {
            let (code, text) = run(
                dir.path(),
                &Options {
                    listed: None,
                    only,
                    seed: Some(seed),
                    workers: None,
                    junit: None,
                },
            );
            assert!(text.starts_with(&format!("seed: {seed}\n")), "{text}");
            let flipped = text.contains("FAIL state::invoice_in_dollars");
            assert_eq!(flipped, polluter_first(Some(seed)), "seed {seed}: {text}");
            assert_eq!(code, i32::from(flipped));
        }
    }

    #[test]
    fn two_workers_collide_on_the_report_file_and_one_never_does() {
        let dir = tempfile::tempdir().unwrap();
        create_project(dir.path()).unwrap();
        let only = Some("export::");
        let (code, text) = run(
            dir.path(),
            &Options {
                listed: None,
                only,
                ..Options::default()
            },
        );
        assert_eq!(code, 0, "{text}");
        for n in [2, 3, 4] {
            let (code, text) = run(
                dir.path(),
                &Options {
                    listed: None,
                    only,
                    seed: None,
                    workers: Some(n),
                    junit: None,
                },
            );
            assert!(
                text.starts_with(&format!("workers: {n} (threads)\n")),
                "{text}"
            );
            assert_eq!(code, 1, "{text}");
            assert_eq!(failed(&text), ["export::writes_daily_report"], "{text}");
            assert!(
                text.contains("another worker wrote the same file"),
                "{text}"
            );
        }
    }

    #[test]
    fn the_junit_report_names_every_test_and_its_failure() {
        let dir = tempfile::tempdir().unwrap();
        create_project(dir.path()).unwrap();
        let path = dir.path().join("junit.xml");
        let (code, _) = run(
            dir.path(),
            &Options {
                listed: None,
                only: Some("export::"),
                workers: Some(2),
                junit: Some(&path),
                ..Options::default()
            },
        );
        assert_eq!(code, 1);
        let xml = std::fs::read_to_string(&path).unwrap();
        let parsed = crate::results::junit::parse(xml.as_bytes()).unwrap();
        let ids: Vec<(String, bool)> = parsed
            .cases
            .iter()
            .map(|c| {
                (
                    c.id(),
                    c.outcome == crate::results::junit::CaseOutcome::Failed,
                )
            })
            .collect();
        assert_eq!(
            ids,
            [
                ("export::writes_daily_report".to_string(), true),
                ("export::writes_weekly_report".to_string(), false)
            ]
        );
        assert!(xml.contains("&quot;week,total"), "{xml}");
    }

    /// Beside its polluter on another worker, the victim still reads the
    /// currency first: workers flip the export pair and nothing else
    /// among the deterministic tests.
    #[test]
    fn workers_do_not_race_the_order_dependent_pair() {
        let dir = tempfile::tempdir().unwrap();
        create_project(dir.path()).unwrap();
        for n in 1..=TESTS.len() {
            let (_, text) = run(
                dir.path(),
                &Options {
                    listed: None,
                    only: Some("state::"),
                    seed: None,
                    workers: Some(n),
                    junit: None,
                },
            );
            assert!(!text.contains("FAIL"), "{n} workers: {text}");
        }
    }
}
