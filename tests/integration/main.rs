//! Integration tests: the real flakelab binary against small shell subjects.
//! One test binary; this file declares the modules and the [`Lab`] helper.

mod action;
mod bisect;
mod bisect_state;
mod book;
mod calendar;
mod catalog_cli;
mod clock;
mod clock_runtimes;
mod concurrent;
mod config_init;
mod dashboard;
mod demo;
mod durable;
mod evidence;
mod evidence_classes;
mod fake;
mod fuzz_replay;
mod history;
mod honest;
mod hostile;
mod hostile_input;
mod hostile_output;
mod html_report;
mod html_width;
mod junit_corpus;
mod junit_e2e;
mod kernel;
mod ladder;
mod measured;
mod orders;
mod packaging;
mod per_test;
mod progress;
mod proof;
mod quarantine_ledger;
mod reasons;
mod recipes;
mod redaction;
mod retries;
mod run_stats;
mod runner_cargo;
mod runner_ctest;
mod runner_go;
mod runner_go_race;
mod runner_kit;
mod runner_mocha;
mod runner_node;
mod runner_php;
mod runner_playwright;
mod runner_ruby;
mod runs;
mod sandbox;
mod scan;
mod scan_prove;
mod screen;
mod screen_orders;
mod screen_workers;
mod sham;
mod shard;
mod signatures;
mod store;
mod stress;
mod survive;
mod undecided;
mod verify;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
/// The flakelab binary under test.
pub fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_flakelab"))
}

/// A scratch project: a temp directory used as the subject's working
/// directory and store, and a scrubbed environment. Labs run side by side:
/// no test needs the host to itself (planted collisions meet through
/// rendezvous files, load-sensitive subjects count busy threads).
#[must_use]
pub struct Lab {
    /// The lab's directory (removed on drop).
    pub dir: tempfile::TempDir,
}

impl Default for Lab {
    fn default() -> Self {
        Lab::new()
    }
}

impl Lab {
    /// A fresh lab in a new temporary directory.
    pub fn new() -> Lab {
        Lab {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    /// The lab's directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The default store inside the lab.
    pub fn store(&self) -> PathBuf {
        self.path().join(".flakelab")
    }

    /// A flakelab command in this lab, with an environment free of anything
    /// that would perturb the subject by accident.
    pub fn cmd(&self) -> Command {
        let mut c = Command::new(bin());
        scrub(&mut c);
        c.current_dir(self.path());
        c
    }

    /// `flakelab ARGS` to completion.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().expect("flakelab runs")
    }

    /// The JSON report of `flakelab run --format json ARGS`.
    pub fn run_json(&self, args: &[&str]) -> (i32, serde_json::Value) {
        let mut all = vec!["run", "--format", "json"];
        all.extend_from_slice(args);
        let out = self.run(&all);
        let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "no JSON report ({e}); stdout: {} stderr: {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (out.status.code().unwrap_or(-1), json)
    }

    /// Every run record in the store, as flakelab reads it back (the
    /// compact lines of `runs/<session>.jsonl` decoded), as JSON.
    pub fn runs(&self) -> Vec<serde_json::Value> {
        let (runs, _) = flakelab::store::Store::at(&self.store())
            .load_runs()
            .expect("the store reads");
        runs.iter()
            .map(|r| serde_json::to_value(r).unwrap())
            .collect()
    }
}

/// Every file under `dir`, recursively.
pub fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// `run`'s output, then those of every command that reads its session back:
/// `report` in each format and `evidence` in each, run by `flakelab`.
pub fn with_every_reader(run: Output, flakelab: impl Fn(&[&str]) -> Output) -> Vec<Output> {
    let mut outputs = vec![run];
    for format in ["table", "json", "markdown"] {
        outputs.push(flakelab(&["report", "--format", format]));
    }
    for format in ["markdown", "json"] {
        outputs.push(flakelab(&["evidence", "--format", format]));
    }
    outputs
}

/// Everything flakelab left for a reader, named: the stdout and stderr of
/// each of `outputs` (each of which must have exited 0 or 1), and every
/// file of the `store`.
pub fn everything_written(outputs: &[Output], store: &Path) -> Vec<(String, String)> {
    let mut texts: Vec<(String, String)> = Vec::new();
    for (i, out) in outputs.iter().enumerate() {
        assert!(
            out.status.code().is_some_and(|c| c <= 1),
            "output {i}: {out:?}"
        );
        texts.push((
            format!("stdout {i}"),
            String::from_utf8_lossy(&out.stdout).into(),
        ));
        texts.push((
            format!("stderr {i}"),
            String::from_utf8_lossy(&out.stderr).into(),
        ));
    }
    let written = files(store);
    assert!(written
        .iter()
        .any(|p| p.parent().is_some_and(|d| d.ends_with("runs"))
            && p.extension().is_some_and(|x| x == "jsonl")));
    for path in written {
        let bytes = std::fs::read(&path).unwrap();
        texts.push((
            path.display().to_string(),
            String::from_utf8_lossy(&bytes).into(),
        ));
    }
    texts
}

/// Removes inherited variables that would perturb a subject.
pub fn scrub(c: &mut Command) {
    for (name, _) in std::env::vars_os() {
        let n = name.to_string_lossy();
        if n == "TZ"
            || n.starts_with("LC_")
            || n == "LANG"
            || n == "LANGUAGE"
            || n.starts_with("FAKETIME")
            || n.starts_with("FLAKELAB")
            || n == "LD_PRELOAD"
            // The user's color settings would color the outputs compared here.
            || matches!(n.as_ref(), "NO_COLOR" | "CLICOLOR" | "CLICOLOR_FORCE")
            // CI variables that would shard a session (`run --shard`).
            || matches!(
                n.as_ref(),
                "CI_NODE_INDEX"
                    | "CI_NODE_TOTAL"
                    | "BUILDKITE_PARALLEL_JOB"
                    | "BUILDKITE_PARALLEL_JOB_COUNT"
                    | "JOB_COMPLETION_INDEX"
                    | "GITHUB_RUN_ID"
                    | "CI_PIPELINE_ID"
                    | "BUILDKITE_BUILD_ID"
            )
        {
            c.env_remove(&name);
        }
    }
}

/// The cell named `name` in a JSON report.
pub fn cell<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no cell {name} in {report}"))
}

/// Pids of live processes whose environment holds `NAME=value`.
pub fn processes_with_env(entry: &str) -> Vec<i32> {
    let mut found = Vec::new();
    let me = std::process::id() as i32;
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if env.split(|b| *b == 0).any(|v| v == entry.as_bytes()) {
            // Zombies keep no environment; a readable entry is a live process.
            found.push(pid);
        }
    }
    found
}

/// A unique `NAME=value` marker for one test's subject processes.
pub fn marker(test: &str) -> (String, String) {
    let value = format!("{test}-{}-{}", std::process::id(), rand_suffix());
    ("FLAKELAB_TEST_MARKER".to_string(), value)
}

fn rand_suffix() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u8(0);
    h.finish() % 1_000_000
}

/// Waits until `path` exists (readiness by the subject's own signal), polling;
/// panics after a generous safety limit.
pub fn wait_for_file(path: &Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !path.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// A load-sensitive subject whose outcome does not depend on the host's
/// speed (run it as `python3 -c WHOLE_CPU_DEADLINE`): a worker whose deadline
/// assumes it has a CPU to itself, and so fails whenever busy threads run
/// beside it. It does not time itself (a busy CI host would make any
/// deadline miss at baseline too): it counts the threads of its flakelab
/// ancestor that stay runnable (state R in `/proc/PID/task/TID/stat`) in
/// every one of 20 looks 10 ms apart. flakelab's `cpu-stress` runs exactly
/// such threads inside its own process for the run's whole duration; at
/// baseline flakelab only waits for its child, and none of its threads
/// stays runnable across the looks. (The looks also make the run long enough
/// for flakelab to measure the host's CPU share, `cpu_busy`.)
pub const WHOLE_CPU_DEADLINE: &str = r#"import os, sys, time

def after_comm(pid, tid=None):
    path = f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat"
    with open(path) as f:
        return f.read().rsplit(")", 1)[1].split()

def flakelab_ancestor():
    pid = os.getppid()
    while pid > 1:
        with open(f"/proc/{pid}/comm") as f:
            if f.read().strip() == "flakelab":
                return pid
        pid = int(after_comm(pid)[1])
    sys.exit("no flakelab process above this one")

def runnable(pid):
    found = set()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            if after_comm(pid, tid)[0] == "R":
                found.add(tid)
        except (FileNotFoundError, ProcessLookupError):
            pass
    return found

harness = flakelab_ancestor()
busy = runnable(harness)
for _ in range(19):
    time.sleep(0.01)
    busy &= runnable(harness)
if busy:
    sys.exit(f"deadline missed: {len(busy)} busy threads of flakelab ran beside the worker")
"#;

/// Whether a capability-dependent test may run: when `available` is false it
/// is skipped with a printed reason, unless `FLAKELAB_TEST_REQUIRE_ALL=1`
/// (set by `.ci/run`), where a missing capability fails the test.
pub fn capable(what: &str, available: bool) -> bool {
    if available {
        return true;
    }
    if std::env::var("FLAKELAB_TEST_REQUIRE_ALL").as_deref() == Ok("1") {
        panic!("{what} is required (FLAKELAB_TEST_REQUIRE_ALL=1) but not available here");
    }
    eprintln!("skipped: {what} is not available here");
    false
}

/// Whether a shell command succeeds.
pub fn sh_ok(script: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs a record's `repro` line in a plain shell, with a scrubbed
/// environment plus `extra` variables; returns what it did.
pub fn run_repro(run: &serde_json::Value, extra: &[(&str, &str)]) -> Output {
    let mut sh = Command::new("sh");
    scrub(&mut sh);
    sh.envs(extra.iter().copied())
        .arg("-c")
        .arg(run["repro"].as_str().expect("a repro line"))
        .output()
        .expect("sh runs")
}

/// Copies the fixture project `tests/fixtures/<name>` into the lab (files
/// and folders, without build output, dependencies or its `.gitignore`).
pub fn copy_fixture(lab: &Lab, name: &str) {
    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap().flatten() {
            let file = entry.file_name();
            if ["target", "Cargo.lock", "node_modules", ".gitignore"]
                .iter()
                .any(|skip| file == *skip)
            {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                copy_dir(&entry.path(), &to.join(&file));
            } else {
                std::fs::copy(entry.path(), to.join(&file)).unwrap();
            }
        }
    }
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    copy_dir(&from, lab.path());
}

/// Asserts a flakelab process exited with `code` (showing its stderr when
/// not) and returns the JSON report it printed.
pub fn report_from(out: &Output, code: i32) -> serde_json::Value {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// A run record's argv as strings.
pub fn run_argv(run: &serde_json::Value) -> Vec<String> {
    run["argv"]
        .as_array()
        .expect("an argv array")
        .iter()
        .map(|a| a.as_str().expect("a string").to_string())
        .collect()
}

/// Runs a shell script that uses git in `dir`, with a fixed identity and no
/// user configuration; panics when it fails.
pub fn git(dir: &Path, script: &str) {
    let ok = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "lab")
        .env("GIT_AUTHOR_EMAIL", "lab@example.invalid")
        .env("GIT_COMMITTER_NAME", "lab")
        .env("GIT_COMMITTER_EMAIL", "lab@example.invalid")
        .status()
        .unwrap()
        .success();
    assert!(ok, "{script}");
}

/// A child process a test started, killed (SIGKILL) and reaped when dropped,
/// so a test that panics before its own kill leaves nothing running (a
/// flakelab harness killed so ends its runs through its warden).
pub struct Reaped(pub std::process::Child);

impl std::ops::Deref for Reaped {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        &self.0
    }
}

impl std::ops::DerefMut for Reaped {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.0
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
