//! Benchmark: memory and time at scale (issue #20, item 5).
//!
//! (a) A store of RUNS small runs (one million by default) in one session,
//! written through `Store::append_run` from the records of a real
//! `flakelab run` (so they follow the current format). Then
//! `flakelab report --format json` on it — the fold, one run at a time,
//! each run line read by the hand-written reader (`store/fast.rs`) —
//! against two references measured in the same run, each in a child
//! process of this bench: the same `flakelab report` with every run line
//! read by serde_json (the reader before the fast path), and the former
//! path, every run read into a `Vec` (`Store::runs_of`) and
//! `report::reference::build`. CPU time (user + system: the host is shared,
//! wall time says little), wall time and maximum resident set size of each
//! (`/usr/bin/time -v`), and their ratios; the three JSON documents must be
//! identical.
//!
//! (b) `flakelab run -n PLANNED -p env=X=1 -- true` (one million planned
//! runs by default) through the fake executor (every run passes at once,
//! so this measures the harness, not a million forks): its resident set
//! sampled from `/proc` while it runs, interrupted with SIGINT after
//! SECONDS; the resident set after the first thousand runs and at the end,
//! and the growth per run between them.
//!
//! Run with `nice -n 19 cargo bench --bench scale` (optionally
//! `-- RUNS PLANNED SECONDS`).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;
use flakelab::record::{RunRecord, SessionRecord};
use flakelab::store::Store;

/// What `/usr/bin/time -v` saw of one command.
struct Measure {
    /// Wall seconds (inflated on a shared host: the CPU time says more).
    wall: f64,
    /// User and system CPU seconds.
    cpu: f64,
    /// Maximum resident set, kB.
    rss_kb: u64,
    /// Its stdout.
    out: Vec<u8>,
}

/// `/usr/bin/time -v`'s figures for `cmd`.
fn measured(cmd: &mut Command) -> Measure {
    let dir = tempfile::tempdir().expect("temp dir");
    let times = dir.path().join("time.txt");
    let program = cmd.get_program().to_owned();
    let args: Vec<_> = cmd.get_args().map(|a| a.to_owned()).collect();
    let start = Instant::now();
    let out = Command::new("/usr/bin/time")
        .arg("-v")
        .arg("-o")
        .arg(&times)
        .arg(program)
        .args(args)
        .stderr(Stdio::null())
        .output()
        .expect("/usr/bin/time runs (apt-get install -y time)");
    let wall = start.elapsed().as_secs_f64();
    let text = std::fs::read_to_string(&times).expect("time's report");
    let field = |name: &str| -> f64 {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("time -v reports {name}"))
    };
    Measure {
        wall,
        cpu: field("User time (seconds): ") + field("System time (seconds): "),
        rss_kb: field("Maximum resident set size (kbytes): ") as u64,
        out: out.stdout,
    }
}

/// Today's former path, in this bench's child process: every run held.
fn reference(store: &Path, session: &str) {
    let store = Store::open(store).expect("store");
    let session = store
        .session(Some(session))
        .expect("read")
        .expect("session");
    let (runs, load) = store.runs_of(&session.id).expect("runs");
    let report = flakelab::report::reference::build(&session, &runs, load);
    let text = flakelab::report::json::render(&report);
    std::io::stdout()
        .write_all(text.as_bytes())
        .expect("stdout");
}

/// `flakelab report --format json` as the binary runs it, with every run
/// line read by serde_json (the reader before the fast path).
fn serde_lines(args: &[String]) -> i32 {
    flakelab::store::read_with_serde_only();
    let mut argv = vec!["flakelab".to_string(), "report".into(), "--format".into()];
    argv.push("json".into());
    argv.extend(args.iter().cloned());
    match flakelab::app::run(flakelab::cli::Cli::parse_from(argv)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}

/// The records of a real two-cell session of two runs, to copy from.
fn template(flakelab: &str, dir: &Path) -> (SessionRecord, Vec<RunRecord>) {
    let script = dir.join("fake.toml");
    std::fs::write(&script, "").expect("script");
    let status = Command::new(flakelab)
        .arg("--fake-executor")
        .arg(&script)
        .args(["run", "-n", "2", "-p", "env=X=1", "--store"])
        .arg(dir.join("template"))
        .arg("-C")
        .arg(dir)
        .args(["--", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("flakelab runs");
    assert!(status.success(), "template session: {status}");
    let store = Store::open(&dir.join("template")).expect("template store");
    let session = store.session(None).expect("read").expect("a session");
    let (runs, _) = store.runs_of(&session.id).expect("runs");
    (session, runs)
}

fn report_bench(flakelab: &str, runs: u32) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut session, examples) = template(flakelab, dir.path());
    // FLAKELAB_SCALE_STORE=DIR keeps the big store there, to profile.
    let root = std::env::var_os("FLAKELAB_SCALE_STORE")
        .map_or_else(|| dir.path().join("big"), std::path::PathBuf::from);
    let store = Store::open(&root).expect("store");
    session.id = "20261201-000000-beef".into();
    session.plan.runs_per_cell = runs / 2;
    // No session-end record is written for this session: its report must
    // not ask for one (the reference path does not read them).
    session.records_end = false;
    store.append_session(&session).expect("session");
    let start = Instant::now();
    for index in 0..(runs / 2 * 2) as usize {
        let mut r = examples[index % examples.len()].clone();
        r.index = index;
        r.replicate = (index / 2) as u32;
        r.session = session.id.clone();
        // The id flakelab gives a run (and leaves out of the line).
        r.id = flakelab::store::compact::run_id(&session.id, index);
        store.append_run(&r).expect("append");
    }
    let bytes =
        std::fs::metadata(store.runs_path(&session.id).expect("runs path")).map_or(0, |m| m.len());
    println!(
        "(a) store of {} runs written in {:.1} s ({} MB of runs)",
        runs / 2 * 2,
        start.elapsed().as_secs_f64(),
        bytes / 1_000_000
    );
    let mut fold = Command::new(flakelab);
    fold.args(["report", "--format", "json", "--store"])
        .arg(&root)
        .arg("-C")
        .arg(dir.path())
        .arg(&session.id);
    let fold = measured(&mut fold);
    let me = std::env::current_exe().expect("own path");
    let mut serde = Command::new(&me);
    serde
        .args(["--serde-lines", "--store"])
        .arg(&root)
        .arg("-C")
        .arg(dir.path())
        .arg(&session.id);
    let serde = measured(&mut serde);
    let mut old = Command::new(&me);
    old.arg("--reference").arg(&root).arg(&session.id);
    let old = measured(&mut old);
    assert!(!fold.out.is_empty(), "flakelab report printed nothing");
    assert_eq!(
        String::from_utf8_lossy(&fold.out),
        String::from_utf8_lossy(&serde.out),
        "the fast and the serde_json run-line readers disagree"
    );
    assert_eq!(
        String::from_utf8_lossy(&fold.out),
        String::from_utf8_lossy(&old.out),
        "the fold and the reference disagree"
    );
    let line = |name: &str, m: &Measure| {
        println!(
            "    {name:<30} {:6.2} s wall, {:6.2} s CPU, {:7.1} MB max RSS",
            m.wall,
            m.cpu,
            m.rss_kb as f64 / 1024.0
        );
    };
    line("flakelab report (fast lines):", &fold);
    line("flakelab report (serde lines):", &serde);
    line("every run held (reference):", &old);
    let ratio = |name: &str, a: &Measure, b: &Measure| {
        println!(
            "    ratio {name:<24} {:6.2} wall, {:6.2} CPU, {:6.3} memory",
            a.wall / b.wall,
            a.cpu / b.cpu,
            a.rss_kb as f64 / b.rss_kb as f64
        );
    };
    ratio("fast / serde lines:", &fold, &serde);
    ratio("fast / reference:", &fold, &old);
    println!(
        "    targets: < 1 s (CPU {:.2} s: {}), < 256 MB ({:.1} MB: {})",
        fold.cpu,
        if fold.cpu < 1.0 { "met" } else { "missed" },
        fold.rss_kb as f64 / 1024.0,
        if fold.rss_kb < 256 * 1024 {
            "met"
        } else {
            "missed"
        }
    );
}

/// VmRSS of `pid` in kB.
fn rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Run lines under `store/runs/` (every session's file).
fn lines(store: &Path) -> u64 {
    let Ok(dir) = std::fs::read_dir(store.join("runs")) else {
        return 0;
    };
    dir.flatten()
        .filter_map(|e| std::fs::read(e.path()).ok())
        .map(|b| {
            b.split(|&c| c == b'\n')
                .filter(|l| l.starts_with(b"{\"schema\":\"flakelab.run/2\""))
                .count() as u64
        })
        .sum()
}

fn session_bench(flakelab: &str, planned: u32, seconds: u64) {
    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("fake.toml");
    std::fs::write(&script, "").expect("script");
    let store = dir.path().join("store");
    let per_cell = planned / 2;
    let mut child = Command::new(flakelab)
        .arg("--fake-executor")
        .arg(&script)
        .args([
            "run",
            "-n",
            &per_cell.to_string(),
            "-p",
            "env=X=1",
            "--store",
        ])
        .arg(&store)
        .arg("-C")
        .arg(dir.path())
        .args(["--", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("flakelab runs");
    let pid = child.id();
    let start = Instant::now();
    let mut early: Option<(u64, u64)> = None;
    let mut last = (0, 0);
    let mut peak = 0;
    while start.elapsed() < Duration::from_secs(seconds) {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        let Some(rss) = rss_kb(pid) else { break };
        let done = lines(&store);
        peak = peak.max(rss);
        if early.is_none() && done >= 1000 {
            early = Some((done, rss));
        }
        last = (done, rss);
        std::thread::sleep(Duration::from_millis(500));
    }
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGINT,
    );
    let status = child.wait().expect("flakelab ends");
    let recorded = lines(&store);
    println!(
        "(b) flakelab run of {} planned runs (fake executor), interrupted after {:.0} s ({status}): {recorded} runs recorded",
        per_cell * 2,
        start.elapsed().as_secs_f64()
    );
    println!(
        "    max RSS sampled: {:.1} MB (target: < 64 MB)",
        peak as f64 / 1024.0
    );
    if let Some((runs0, rss0)) = early {
        let (runs1, rss1) = last;
        println!(
            "    RSS at {runs0} runs: {:.1} MB; at {runs1} runs: {:.1} MB; growth {:.1} bytes per run",
            rss0 as f64 / 1024.0,
            rss1 as f64 / 1024.0,
            (rss1 as f64 - rss0 as f64) * 1024.0 / (runs1.saturating_sub(runs0)).max(1) as f64
        );
    }
}

fn main() {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    if raw.first().map(String::as_str) == Some("--reference") {
        reference(Path::new(&raw[1]), &raw[2]);
        return;
    }
    if raw.first().map(String::as_str) == Some("--serde-lines") {
        std::process::exit(serde_lines(&raw[1..]));
    }
    let args: Vec<&String> = raw.iter().filter(|a| !a.starts_with('-')).collect();
    let runs: u32 = args
        .first()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let planned: u32 = args
        .get(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let seconds: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(30);
    let flakelab = env!("CARGO_BIN_EXE_flakelab");
    report_bench(flakelab, runs);
    session_bench(flakelab, planned, seconds);
}
