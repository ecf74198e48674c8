//! flakelab's own clock preload against real runtimes (issue #34): with
//! nothing installed but flakelab, every sleep and timed wait of CPython,
//! OpenJDK, Node and `cargo test` (doc-tests included) behaves under the
//! clock cell and its sham as at the baseline, while a date check in each
//! runtime flips under the shift only. Programs the preload cannot reach
//! (static and Go binaries) are named, 10 runs of 10, however briefly they
//! run; no run leaves a file behind.
//!
//! No assertion rides on timing: the waits' results are values (a timed-out
//! `Event.wait` returns False), and the date check compares the clock with
//! the real one given as an argument, 30 days either way (`+365d` is far
//! outside, the real clock far inside).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::{capable, cell, sh_ok, Lab};

/// The real time now, in epoch seconds.
fn real_epoch() -> String {
    jiff::Timestamp::now().as_second().to_string()
}

fn write_exe(path: &Path, body: &str) {
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

/// `(k, n, not_applied)` of a cell.
fn counts(c: &Value) -> (u64, u64, u64) {
    (
        c["k"].as_u64().unwrap(),
        c["n"].as_u64().unwrap(),
        c["not_applied"].as_u64().unwrap_or(0),
    )
}

/// What each run of `cell` wrote to its `codes-RUN` file.
fn codes_of(lab: &Lab, cell: &str) -> Vec<String> {
    lab.runs()
        .iter()
        .filter(|r| r["cell"] == cell)
        .map(|r| {
            let id = r["id"].as_str().unwrap();
            std::fs::read_to_string(lab.path().join(format!("codes-{id}")))
                .unwrap_or_else(|e| panic!("run {id} wrote no codes ({e}): {r}"))
                .trim()
                .to_string()
        })
        .collect()
}

/// Runs `script REAL` (which writes `codes-$FLAKELAB_RUN_ID`) under the
/// clock cell and its sham, 2 runs a cell, and checks every run: the
/// baseline and the sham pass with every code 0, the shifted cell fails
/// with every code 3 (the date check, after every wait returned).
fn baseline_sham_and_shift(lab: &Lab, runtimes: &[&str]) {
    let tmp = lab.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let out = lab
        .cmd()
        .env("TMPDIR", &tmp)
        .env_remove("FAKETIME_LIB")
        .args([
            "run",
            "--format",
            "json",
            "-n",
            "2",
            "--seed",
            "3",
            "--timeout",
            "100s",
            "-p",
            "faketime=+365d",
            "--",
            "./subject.sh",
            &real_epoch(),
        ])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    // 2 of 2 against 0 of 2 is measured, not yet a verdict: 0 or 1.
    assert!(matches!(out.status.code(), Some(0 | 1)), "{report:#}");
    let passing = vec![
        runtimes
            .iter()
            .map(|r| format!("{r}=0"))
            .collect::<Vec<_>>()
            .join(" ");
        2
    ];
    let shifted = vec![
        runtimes
            .iter()
            .map(|r| format!("{r}=3"))
            .collect::<Vec<_>>()
            .join(" ");
        2
    ];
    assert_eq!(codes_of(lab, "baseline"), passing);
    assert_eq!(codes_of(lab, "faketime=+0"), passing);
    assert_eq!(codes_of(lab, "faketime=+365d"), shifted);
    assert_eq!(counts(cell(&report, "baseline")), (0, 2, 0), "{report:#}");
    assert_eq!(
        counts(cell(&report, "faketime=+0")),
        (0, 2, 0),
        "{report:#}"
    );
    assert_eq!(
        counts(cell(&report, "faketime=+365d")),
        (2, 2, 0),
        "{report:#}"
    );
    for run in lab.runs().iter().filter(|r| r["cell"] != "baseline") {
        // Proof from the subject: its processes announced the preload and
        // nothing bypassed it.
        let check = &run["processes"];
        assert_eq!(check["bypassed"].as_array().map_or(0, Vec::len), 0, "{run}");
        assert!(
            check["tested_by"].as_array().is_some_and(|t| !t.is_empty()),
            "{run}"
        );
    }
    // Nothing left behind in the runs' TMPDIR. (The shared /dev/shm is not
    // looked at here: other tests' clock runs write their records there
    // while this one runs. `clock::clock_cells_and_their_shams_leave_no_file_in_dev_shm_the_tmpdir_or_the_cache` checks it on
    // a private /dev/shm.)
    let left: Vec<PathBuf> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().contains("flakelab-clock"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// The subject: each runtime's program, its exit code recorded.
fn subject(lab: &Lab, lines: &[(&str, &str)]) {
    let mut body = String::from("#!/bin/sh\ncodes=\"\"\n");
    for (name, command) in lines {
        body.push_str(&format!("{command} \"$1\"\ncodes=\"$codes {name}=$?\"\n"));
    }
    body.push_str(
        "echo $codes > \"codes-$FLAKELAB_RUN_ID\"\ncase \" $codes\" in *=[!0]*) exit 1;; esac\n",
    );
    write_exe(&lab.path().join("subject.sh"), &body);
}

const PYTHON: &str = r#"import asyncio, queue, sys, threading, time
time.sleep(0.01)
if threading.Event().wait(0.05) is not False:
    sys.exit(4)
try:
    queue.Queue().get(timeout=0.05)
    sys.exit(4)
except queue.Empty:
    pass
asyncio.run(asyncio.sleep(0.01))
real = int(sys.argv[1])
sys.exit(0 if abs(time.time() - real) < 30 * 86400 else 3)
"#;

const JAVA: &str = r#"public class Waits {
    public static void main(String[] args) throws Exception {
        Thread.sleep(10);
        Object o = new Object();
        synchronized (o) { o.wait(50); }
        long real = Long.parseLong(args[0]);
        long now = java.time.Instant.now().getEpochSecond();
        System.exit(Math.abs(now - real) < 30L * 86400 ? 0 : 3);
    }
}
"#;

const NODE: &str = r#"const real = Number(process.argv[2]);
setTimeout(() => {
  const now = Date.now() / 1000;
  process.exit(Math.abs(now - real) < 30 * 86400 ? 0 : 3);
}, 50);
"#;

#[test]
fn python_java_and_node_wait_as_at_baseline_and_a_date_check_flips() {
    let lab = Lab::new();
    let mut lines: Vec<(&str, &str)> = Vec::new();
    if capable("python3", sh_ok("python3 -c 'import asyncio'")) {
        std::fs::write(lab.path().join("waits.py"), PYTHON).unwrap();
        lines.push(("python", "python3 waits.py"));
    }
    if capable("java and javac", sh_ok("javac -version && java -version")) {
        std::fs::write(lab.path().join("Waits.java"), JAVA).unwrap();
        let built = std::process::Command::new("javac")
            .arg("Waits.java")
            .current_dir(lab.path())
            .status()
            .unwrap();
        assert!(built.success());
        lines.push(("java", "java -Xshare:auto -cp . Waits"));
    }
    if capable("node", sh_ok("node --version")) {
        std::fs::write(lab.path().join("waits.js"), NODE).unwrap();
        lines.push(("node", "node waits.js"));
    }
    if lines.is_empty() {
        return;
    }
    subject(&lab, &lines);
    let names: Vec<&str> = lines.iter().map(|(n, _)| *n).collect();
    baseline_sham_and_shift(&lab, &names);
}

#[test]
fn cargo_test_with_a_doc_test_runs_as_at_baseline_and_a_date_check_flips() {
    if !capable("cargo", sh_ok("cargo --version")) {
        return;
    }
    let lab = Lab::new();
    let krate = lab.path().join("tiny");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    std::fs::write(
        krate.join("Cargo.toml"),
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    )
    .unwrap();
    std::fs::write(
        krate.join("src/lib.rs"),
        r#"//! A crate whose doc-test reads the wall clock.

/// The wall clock, in epoch seconds.
///
/// ```
/// let real: u64 = std::env::var("REAL_EPOCH").unwrap().parse().unwrap();
/// std::thread::sleep(std::time::Duration::from_millis(10));
/// assert!(tiny::now().abs_diff(real) < 30 * 86_400);
/// ```
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[test]
fn a_timed_wait_times_out() {
    let (_tx, rx) = std::sync::mpsc::channel::<()>();
    assert!(rx.recv_timeout(std::time::Duration::from_millis(50)).is_err());
}
"#,
    )
    .unwrap();
    // Built once before the session: each run compiles only its doc-test.
    let target = lab.path().join("target");
    let built = std::process::Command::new("cargo")
        .args(["test", "--offline", "-q", "--no-run"])
        .current_dir(&krate)
        .env("CARGO_TARGET_DIR", &target)
        .status()
        .unwrap();
    assert!(built.success());
    let command = format!(
        "cd tiny && REAL_EPOCH=\"$1\" CARGO_TARGET_DIR={} cargo test --offline -q >/dev/null 2>&1; c=$?; [ $c = 101 ] && c=3",
        target.display()
    );
    subject(
        &lab,
        &[("cargo", &format!("sh -c '{command}; exit $c' sh"))],
    );
    baseline_sham_and_shift(&lab, &["cargo"]);
}

/// A static C program that prints the time and exits at once, in the lab.
fn static_program(lab: &Lab) -> Option<PathBuf> {
    if !capable(
        "gcc -static (libc6-dev)",
        sh_ok("test -f /usr/lib/x86_64-linux-gnu/libc.a || test -f /usr/lib/libc.a || test -f /usr/lib64/libc.a"),
    ) {
        return None;
    }
    let src = lab.path().join("now.c");
    std::fs::write(
        &src,
        "#include <stdio.h>\n#include <time.h>\nint main(void){printf(\"%ld\\n\",(long)time(0));return 0;}\n",
    )
    .unwrap();
    let exe = lab.path().join("now-static");
    let ok = std::process::Command::new("gcc")
        .args(["-static", "-O1", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "gcc -static failed");
    Some(exe.canonicalize().unwrap())
}

/// A Go program that prints the time, built in the lab (Go's build cache
/// keeps later builds quick).
fn go_program(lab: &Lab) -> Option<PathBuf> {
    if !capable("go", sh_ok("go version")) {
        return None;
    }
    let dir = lab.path().join("gonow");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("go.mod"), "module gonow\n\ngo 1.19\n").unwrap();
    std::fs::write(
        dir.join("main.go"),
        "package main\n\nimport (\n\t\"fmt\"\n\t\"time\"\n)\n\nfunc main() { fmt.Println(time.Now().Unix()) }\n",
    )
    .unwrap();
    let exe = lab.path().join("now-go");
    let ok = std::process::Command::new("go")
        .args(["build", "-o"])
        .arg(&exe)
        .current_dir(&dir)
        .env("GOFLAGS", "-mod=mod")
        .env("GOTOOLCHAIN", "local")
        .env("GOWORK", "off")
        .env("CGO_ENABLED", "0")
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "go build failed");
    Some(exe.canonicalize().unwrap())
}

/// 10 runs of `script` under the clock: every one not applied, naming
/// `exe` as the test process that bypassed the preload (`why`).
fn ten_of_ten_not_applied(lab: &Lab, script: &str, exe: &Path, why: &str) {
    let (code, report) = lab.run_json(&[
        "-n",
        "10",
        "--no-sham",
        "--no-baseline",
        "-p",
        "faketime=+365d",
        "--",
        script,
    ]);
    assert_eq!(code, 3, "{report:#}");
    assert_eq!(
        counts(cell(&report, "faketime=+365d")),
        (0, 0, 10),
        "{report:#}"
    );
    let runs = lab.runs();
    assert_eq!(runs.len(), 10);
    for run in runs {
        assert_eq!(run["outcome"], "not_applied", "{run}");
        let reason = run["reason"].as_str().unwrap();
        let named = format!("the process that ran the tests, {}", exe.display());
        assert!(reason.contains(&named), "{reason}");
        let bypass = run["processes"]["bypassed"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["role"] == "test")
            .cloned()
            .unwrap_or_else(|| panic!("no test process bypassed: {run}"));
        assert_eq!(bypass["why"], why, "{run}");
    }
}

#[test]
fn a_script_running_a_static_binary_for_milliseconds_is_not_applied_and_names_it() {
    let lab = Lab::new();
    let Some(exe) = static_program(&lab) else {
        return;
    };
    write_exe(
        &lab.path().join("check.sh"),
        "#!/bin/sh\n./now-static >/dev/null\n",
    );
    ten_of_ten_not_applied(&lab, "./check.sh", &exe, "static");
}

#[test]
fn a_script_that_execs_a_go_binary_is_not_applied_and_names_it() {
    let lab = Lab::new();
    let Some(exe) = go_program(&lab) else {
        return;
    };
    write_exe(
        &lab.path().join("check.sh"),
        "#!/bin/sh\nexec ./now-go >/dev/null\n",
    );
    ten_of_ten_not_applied(&lab, "./check.sh", &exe, "go");
}

#[test]
fn an_absolute_start_runs_on_across_the_processes_of_a_run() {
    let lab = Lab::new();
    // Two `date` processes 1.1 s apart read one clock that runs on from the
    // run's start: the second is at least a second past the first (each
    // process restarting the clock, as libfaketime does, reads the start
    // twice), and both are within the run's length of the start.
    write_exe(
        &lab.path().join("twice.sh"),
        "#!/bin/sh\na=$(date +%s); sleep 1.1; b=$(date +%s)\necho \"$a $b\" > \"times-$FLAKELAB_RUN_ID\"\n",
    );
    let (code, report) = lab.run_json(&[
        "-n",
        "1",
        "--no-sham",
        "--no-baseline",
        "-p",
        "faketime=@2030-01-02 03:04:05+tz=UTC",
        "--",
        "./twice.sh",
    ]);
    assert!(matches!(code, 0 | 1), "{report:#}");
    let start = 1_893_553_445_i64; // 2030-01-02T03:04:05Z
    for run in lab.runs() {
        let id = run["id"].as_str().unwrap();
        let text = std::fs::read_to_string(lab.path().join(format!("times-{id}"))).unwrap();
        let t: Vec<i64> = text
            .split_whitespace()
            .map(|v| v.parse().unwrap())
            .collect();
        let length = run["duration_s"].as_f64().unwrap().ceil() as i64 + 1;
        assert!(t[1] > t[0], "{t:?}");
        assert!(t[0] >= start && t[1] <= start + length, "{t:?} {run}");
    }
}
