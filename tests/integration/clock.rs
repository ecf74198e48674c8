//! The clock perturbation against a real CPython suite that waits: the
//! harness shifts the clock and sets no libfaketime option that changes how
//! time flows, unless a recipe declares its runtime needs one, and then the
//! cell says so.

use super::kernel::libfaketime_available;
use super::{capable, cell, copy_fixture, sh_ok, Lab};

fn pytest_available() -> bool {
    capable(
        "pytest (python3 -m pytest)",
        sh_ok("python3 -m pytest --version"),
    )
}

/// `flakelab run` of the fixture suite, `runs` per cell, beside a
/// `faketime=+365d` cell (and its sham).
fn shifted_a_year(lab: &Lab, runs: &str) -> (i32, serde_json::Value) {
    lab.run_json(&[
        "-n",
        runs,
        "--seed",
        "5",
        "--timeout",
        "120s",
        "-p",
        "faketime=+365d",
        "--",
        "python3",
        "-m",
        "pytest",
        "test_waits.py",
    ])
}

/// The wall clock each run's pytest process read (written by the fixture's
/// conftest), against the time this test started.
fn clock_seen(lab: &Lab, run: &serde_json::Value) -> i64 {
    let id = run["id"].as_str().unwrap();
    let text = std::fs::read_to_string(lab.path().join(format!("clock-{id}.txt")))
        .unwrap_or_else(|e| panic!("run {id} wrote no clock reading: {e}"));
    text.trim().parse().unwrap()
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[test]
fn a_python_suite_that_sleeps_and_waits_passes_under_a_shifted_clock_as_at_baseline() {
    if !pytest_available() {
        return;
    }
    let lab = Lab::new();
    copy_fixture(&lab, "pytest-clock");
    let started = now();
    // Two runs a cell: every run must pass (no rate is asserted).
    let (code, report) = shifted_a_year(&lab, "2");
    assert_eq!(code, 0, "{report}");
    let cells = report["cells"].as_array().unwrap();
    let names: Vec<&str> = cells.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["baseline", "faketime=+365d", "faketime=+0"],
        "{report}"
    );
    for c in cells {
        assert_eq!(c["applied"], true, "{c}");
        assert_eq!(
            (c["k"].as_u64(), c["n"].as_u64()),
            (Some(0), Some(2)),
            "{c}"
        );
        assert_eq!(c["notes"].as_array().map(Vec::len), Some(0), "{c}");
        let tests = c["tests"].as_array().unwrap();
        assert_eq!(tests.len(), 3, "{c}");
        for t in tests {
            assert_eq!(
                (t["k"].as_u64(), t["n"].as_u64()),
                (Some(0), Some(2)),
                "{t}"
            );
        }
    }
    let year = 365 * 86_400;
    for run in lab.runs() {
        let seen = clock_seen(&lab, &run) - started;
        let set = run["env"]["set"].as_object().unwrap();
        // The interpreter that ran the tests read the shifted clock (and its
        // sham, `faketime=+0`, the real one through the same preload).
        let shift = match run["cell"].as_str().unwrap() {
            "baseline" => {
                assert!(seen.abs() < 86_400, "{seen} s: {run}");
                assert!(!set.contains_key("LD_PRELOAD"), "{run}");
                continue;
            }
            "faketime=+365d" => year,
            _ => 0,
        };
        assert!((seen - shift).abs() < 86_400, "{seen} s: {run}");
        // flakelab's own preload: its clock variable, no libfaketime option.
        let options: Vec<&String> = set
            .keys()
            .filter(|k| k.starts_with("FAKETIME") || k.starts_with("FLAKELAB_CLOCK"))
            .collect();
        assert_eq!(options, ["FLAKELAB_CLOCK"], "{run}");
    }
}

#[test]
fn the_libfaketime_options_flakelab_used_to_set_make_time_sleep_fail_and_the_cell_says_so() {
    if !libfaketime_available() || !pytest_available() {
        return;
    }
    let lab = Lab::new();
    copy_fixture(&lab, "pytest-clock");
    // The embedded pytest recipe, declaring the two options every faketime
    // cell set before: a recipe is the one place that may set them.
    let recipe = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes/pytest.toml"),
    )
    .unwrap();
    let dir = lab.path().join(".flakelab/recipes");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("pytest.toml"),
        format!(
            "{recipe}\n[faketime]\nenv = {{ FAKETIME_DONT_FAKE_MONOTONIC = \"1\", FAKETIME_DONT_RESET = \"1\" }}\nwhy = \"the options every faketime cell set before\"\n"
        ),
    )
    .unwrap();
    // 5 runs a cell: 5 of 5 against 0 of 5 is p = 0.0079, below 0.05 after
    // Holm across the shifted cell and its sham.
    let (code, report) = shifted_a_year(&lab, "5");
    assert_eq!(code, 1, "{report}");
    let c = cell(&report, "faketime=+365d");
    assert_eq!(
        (c["k"].as_u64(), c["n"].as_u64()),
        (Some(5), Some(5)),
        "{c}"
    );
    assert_eq!(c["vs_baseline"]["differs"], true, "{c}");
    let note = c["notes"][0].as_str().unwrap();
    assert!(
        note.contains(
            "the pytest recipe sets FAKETIME_DONT_FAKE_MONOTONIC=1 FAKETIME_DONT_RESET=1"
        ),
        "{note}"
    );
    // Only time.sleep fails, and with the error libfaketime 0.9.10 gives it.
    let tests = c["tests"].as_array().unwrap();
    for t in tests {
        let sleeps = t["id"] == "test_waits::test_time_sleep_returns_and_monotonic_time_advances";
        let k = if sleeps { 5 } else { 0 };
        assert_eq!(
            (t["k"].as_u64(), t["n"].as_u64()),
            (Some(k), Some(5)),
            "{t}"
        );
        if sleeps {
            let sig = t["signatures"][0]["signature"].as_str().unwrap();
            assert!(sig.contains("OSError: [Errno"), "{sig}");
            assert!(sig.contains("Invalid argument"), "{sig}");
        }
    }
    assert_eq!(cell(&report, "baseline")["k"].as_u64(), Some(0));
    // The preload with those options fails it with the clock unshifted too:
    // its sham says the mechanism, not the shift, made the difference.
    assert_eq!(c["sham"], "faketime=+0", "{c}");
    assert_eq!(c["vs_sham"]["differs"], false, "{c}");
    let sham = cell(&report, "faketime=+0");
    assert_eq!(
        (sham["k"].as_u64(), sham["n"].as_u64()),
        (Some(5), Some(5)),
        "{sham}"
    );
    for run in lab.runs().iter().filter(|r| r["cell"] != "baseline") {
        assert_eq!(
            run["env"]["set"]["FAKETIME_DONT_FAKE_MONOTONIC"], "1",
            "{run}"
        );
    }
    // The table says it too.
    let out = lab.run(&["report"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("note: faketime=+365d: the pytest recipe sets"),
        "{table}"
    );
}

/// The pids a subject wrote, one per line.
fn pids_in(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_faketime_run_leaves_nothing_of_libfaketime_in_dev_shm() {
    if !libfaketime_available() || !std::path::Path::new("/dev/shm").is_dir() {
        return;
    }
    let lab = Lab::new();
    let pids = lab.path().join("pids");
    // dash ends through _exit, which skips libfaketime's own cleanup: shown
    // here outside flakelab, so the assertion below can fail.
    let script = format!("echo $$ >> {}; exit 0", pids.display());
    let lib = ["/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists());
    if let Some(lib) = lib {
        let status = std::process::Command::new("sh")
            .args(["-c", &script])
            .env("LD_PRELOAD", lib)
            .env("FAKETIME", "+365d")
            .status()
            .unwrap();
        assert!(status.success());
        let pid = pids_in(&pids).pop().unwrap();
        let segment = std::path::PathBuf::from(format!("/dev/shm/faketime_shm_{pid}"));
        let left = segment.exists();
        let _ = std::fs::remove_file(&segment);
        let _ = std::fs::remove_file(format!("/dev/shm/sem.faketime_sem_{pid}"));
        assert!(
            left,
            "libfaketime left no segment here: this test proves nothing"
        );
        std::fs::remove_file(&pids).unwrap();
    }
    // The suite starts thousands of processes, and pids wrap (32768 here):
    // a pair an earlier process left under a pid a run gets again is older
    // than the session, and not the session's (tmpfs stamps files with the
    // coarse clock, a tick behind).
    let session_started = std::time::SystemTime::now() - std::time::Duration::from_millis(20);
    // libfaketime, chosen by FAKETIME_LIB (the clock cells' default is
    // flakelab's own preload, which makes no file at all).
    let libfaketime = [
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/faketime/libfaketime.so.1",
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).exists())
    .unwrap_or("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1");
    let out = lab
        .cmd()
        .env("FAKETIME_LIB", libfaketime)
        .args([
            "run",
            "--format",
            "json",
            "-n",
            "4",
            "--seed",
            "1",
            "-p",
            "faketime=+365d",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .output()
        .unwrap();
    let code = out.status.code().unwrap_or(-1);
    let json = String::from_utf8_lossy(&out.stdout);
    assert_eq!(code, 0, "{json}");
    let ran = pids_in(&pids);
    // Baseline, the cell and its sham: four runs each.
    assert_eq!(ran.len(), 12, "{ran:?}");
    for pid in ran {
        for file in [
            format!("/dev/shm/faketime_shm_{pid}"),
            format!("/dev/shm/sem.faketime_sem_{pid}"),
        ] {
            let made = std::fs::symlink_metadata(&file).and_then(|m| m.modified());
            assert!(
                !made.is_ok_and(|t| t >= session_started),
                "{file} was left behind"
            );
        }
    }
}

/// Every file and directory under `dir` (recursively), relative to it.
fn tree(dir: &std::path::Path) -> Vec<String> {
    fn walk(root: &std::path::Path, dir: &std::path::Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            out.push(path.strip_prefix(root).unwrap().display().to_string());
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                walk(root, &path, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn clock_cells_and_their_shams_leave_no_file_in_dev_shm_the_tmpdir_or_the_cache() {
    // A /dev/shm of the session's own (a mount namespace), so that a file
    // another process of this machine makes there meanwhile is not counted.
    if !capable(
        "a private /dev/shm (unshare -rm, mount -t tmpfs)",
        sh_ok("unshare -rm sh -c 'mount -t tmpfs none /dev/shm'"),
    ) {
        return;
    }
    let lab = Lab::new();
    let tmp = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let shm_listing = lab.path().join("shm-listing");
    // Inside the namespace: an empty /dev/shm, flakelab, then what is left.
    let wrapper = format!(
        "mount -t tmpfs none /dev/shm || exit 97; \"$0\" \"$@\"; code=$?; ls -A /dev/shm > {}; exit $code",
        shm_listing.display()
    );
    // The subject reads the wall clock, forks, and execs a dynamic program.
    let subject = "date +%s > /dev/null; (date > /dev/null); exec /bin/true";
    let before = tree(lab.path());
    for clock in [
        "faketime=+365d",
        "faketime=-30d",
        "faketime=@2028-02-29 23:59:58",
    ] {
        let mut cmd = std::process::Command::new("unshare");
        super::scrub(&mut cmd);
        let out = cmd
            .current_dir(lab.path())
            .env("TMPDIR", tmp.path())
            .env("XDG_CACHE_HOME", cache.path())
            .env_remove("FAKETIME_LIB")
            .args(["-rm", "sh", "-c", &wrapper])
            .arg(super::bin())
            .args(["run", "--format", "json", "-n", "3", "--seed", "1"])
            .args(["-p", clock, "--", "sh", "-c", subject])
            .output()
            .unwrap();
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{clock}: no report ({e}): {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        assert_eq!(out.status.code(), Some(0), "{clock}: {report}");
        let cells = report["cells"].as_array().unwrap();
        // The baseline, the clock cell and its sham ran, all applied.
        assert_eq!(cells.len(), 3, "{report}");
        for c in cells {
            assert_eq!(
                (c["applied"].as_bool(), c["n"].as_u64()),
                (Some(true), Some(3)),
                "{c}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(&shm_listing).unwrap(),
            "",
            "{clock}: left in /dev/shm"
        );
        std::fs::remove_file(&shm_listing).unwrap();
        assert_eq!(
            tree(tmp.path()),
            Vec::<String>::new(),
            "{clock}: left in TMPDIR"
        );
        let cached = tree(cache.path());
        assert_eq!(cached.len(), 2, "{clock}: the cache holds {cached:?}");
        assert_eq!(cached[0], "flakelab", "{cached:?}");
        assert!(
            cached[1].starts_with("flakelab/clock-") && cached[1].ends_with(".so"),
            "{cached:?}"
        );
        // In the lab: the store, and nothing else.
        let left: Vec<String> = tree(lab.path())
            .into_iter()
            .filter(|p| p != ".flakelab" && !p.starts_with(".flakelab/") && !before.contains(p))
            .collect();
        assert_eq!(
            left,
            Vec::<String>::new(),
            "{clock}: left in the working directory"
        );
    }
    // The listing sees what a run leaves: a subject that makes a file there.
    let mut cmd = std::process::Command::new("unshare");
    super::scrub(&mut cmd);
    let out = cmd
        .current_dir(lab.path())
        .env("TMPDIR", tmp.path())
        .env("XDG_CACHE_HOME", cache.path())
        .args(["-rm", "sh", "-c", &wrapper])
        .arg(super::bin())
        .args([
            "run",
            "-n",
            "1",
            "--",
            "touch",
            "/dev/shm/left-by-the-subject",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(&shm_listing).unwrap(),
        "left-by-the-subject\n"
    );
}

/// Starts a clock session whose first clock run announces its record file
/// (`rec`: the subject's pid and the path) and blocks; returns flakelab's
/// process, the subject's pid and the record's path, once announced.
fn blocked_clock_run(
    lab: &Lab,
    tmp: &std::path::Path,
    warden: bool,
) -> (std::process::Child, i32, std::path::PathBuf) {
    let subject = r#"[ -n "$FLAKELAB_CLOCK_RECORD" ] || exit 0
echo "$$ $FLAKELAB_CLOCK_RECORD" > rec.tmp && mv rec.tmp rec
exec sleep 1000"#;
    let mut cmd = lab.cmd();
    cmd.env("TMPDIR", tmp)
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("FAKETIME_LIB")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if !warden {
        cmd.env("FLAKELAB_TEST_NO_WARDEN", "1");
    }
    let child = cmd
        .args(["run", "-n", "1", "-j", "1", "--seed", "1"])
        .args(["-p", "faketime=+365d", "--", "sh", "-c", subject])
        .spawn()
        .unwrap();
    let rec = lab.path().join("rec");
    super::wait_for_file(&rec);
    let text = std::fs::read_to_string(&rec).unwrap();
    let (pid, path) = text.trim().split_once(' ').unwrap();
    let path = std::path::PathBuf::from(path);
    assert!(path.is_file(), "{}", path.display());
    (child, pid.parse().unwrap(), path)
}

/// Waits (bounded) until `done` holds.
fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "{what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_killed_flakelab_leaves_no_clock_record_and_without_its_warden_the_next_clock_run_sweeps_it() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let gone = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        })
    };
    // With its warden: the warden ends the run and removes the record.
    let lab = Lab::new();
    let tmp = tempfile::tempdir().unwrap();
    let (mut child, pid, path) = blocked_clock_run(&lab, tmp.path(), true);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    eventually("the warden ends the run", || gone(pid));
    eventually("the warden removes the record file", || !path.exists());

    // Without one (the test-only switch): the record stays, unlocked...
    let lab = Lab::new();
    let (mut child, pid, path) = blocked_clock_run(&lab, tmp.path(), false);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    eventually("the subject ends", || gone(pid));
    assert!(path.is_file(), "without a warden the record file stays");
    // ...until the next clock run of any flakelab sweeps it.
    let next = lab
        .cmd()
        .env("TMPDIR", tmp.path())
        .env_remove("XDG_RUNTIME_DIR")
        .args(["run", "-n", "1", "-p", "faketime=+1d", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(next.status.code(), Some(0), "{next:?}");
    assert!(!path.exists(), "{} was not swept", path.display());
}
