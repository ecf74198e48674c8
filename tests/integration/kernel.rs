//! Kernel-level perturbations end to end: faketime, netns, cpu-stress,
//! cpu-pin and rlimit, their probes, their not-applied paths, their repro
//! lines, replay and doctor.

use super::{capable, cell, sh_ok, Lab};

/// libfaketime, for the tests of the clock cells that choose it
/// (`FAKETIME_LIB`); the clock cells need nothing installed.
pub(super) fn libfaketime_available() -> bool {
    capable(
        "libfaketime",
        std::path::Path::new("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1").exists()
            || sh_ok("ls /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1"),
    )
}

fn netns_available() -> bool {
    capable(
        "network namespaces",
        sh_ok(&format!(
            "{} __exec --netns -- true",
            super::bin().display()
        )),
    )
}

/// Runs each cell's first recorded repro line in a plain shell and checks
/// that it ends as the recorded run did.
fn repro_lines_reproduce(lab: &Lab) {
    let mut seen = std::collections::HashSet::new();
    for run in lab.runs() {
        let cell = run["cell"].as_str().unwrap().to_string();
        if !seen.insert(cell.clone()) || run["repro_note"].is_string() {
            continue;
        }
        let status = super::run_repro(&run, &[]);
        let passed = status.status.success();
        let recorded_pass = run["outcome"] == "pass";
        assert_eq!(
            passed, recorded_pass,
            "cell {cell}: {}\n{:?}",
            run["repro"], status
        );
    }
}

#[test]
fn a_year_ahead_clock_fails_an_expiry_check_every_run_and_only_there() {
    let lab = Lab::new();
    let expiry = jiff::Timestamp::now().as_second() + 200 * 86_400;
    let script = format!("test \"$(date +%s)\" -lt {expiry}");
    let (code, report) =
        lab.run_json(&["-n", "8", "-p", "faketime=+365d", "--", "sh", "-c", &script]);
    assert_eq!(code, 1, "{report}");
    let c = cell(&report, "faketime=+365d");
    assert_eq!(
        (c["k"].as_u64(), c["n"].as_u64()),
        (Some(8), Some(8)),
        "{c}"
    );
    // The probe reads the child's clock and the real one a moment apart:
    // the shift it saw is a year within the probe's tolerance, not to the
    // second (a loaded machine crosses a second between the two reads).
    let probe = c["probes"][0].as_str().unwrap();
    let seen: i64 = probe
        .split("child's clock reads ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a clock reading in {probe}"));
    assert!(
        (seen - 31_536_000).abs() <= flakelab::perturb::probe::CLOCK_TOLERANCE_S,
        "{probe}"
    );
    assert_eq!(cell(&report, "baseline")["k"].as_u64(), Some(0));
    repro_lines_reproduce(&lab);
}

#[test]
fn an_absolute_clock_start_is_seen_by_the_child() {
    let lab = Lab::new();
    let (code, report) = lab.run_json(&[
        "-n",
        "2",
        "--no-baseline",
        "-p",
        "faketime=@2030-01-02 03:04:05+tz=UTC",
        "--",
        "sh",
        "-c",
        "test \"$(date +%Y-%m-%d)\" = 2030-01-02",
    ]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["cells"][0]["applied"], true);
    assert_eq!(report["cells"][0]["k"].as_u64(), Some(0));
}

#[test]
fn a_missing_libfaketime_is_a_clear_error_and_nothing_runs() {
    let lab = Lab::new();
    let out = lab
        .cmd()
        .env("FAKETIME_LIB", "/nonexistent/libfaketime.so.1")
        .args([
            "run",
            "-n",
            "2",
            "-p",
            "faketime=+365d",
            "--",
            "touch",
            "ran",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("apt-get install faketime libfaketime"),
        "{err}"
    );
    assert!(!lab.path().join("ran").exists());
    let doctor = lab
        .cmd()
        .env("FAKETIME_LIB", "/nonexistent/libfaketime.so.1")
        .arg("doctor")
        .output()
        .unwrap();
    assert_eq!(doctor.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&doctor.stdout).contains("libfaketime         MISSING"));
}

#[test]
fn without_network_a_route_fails_every_run_while_loopback_keeps_working() {
    if !netns_available() {
        return;
    }
    let lab = Lab::new();
    let suite = |only: &str| {
        vec![
            super::bin().display().to_string(),
            "__demo-suite".into(),
            "--project".into(),
            lab.path().display().to_string(),
            "--only".into(),
            only.into(),
        ]
    };
    let mut args = vec!["-n", "6", "-p", "netns", "--"];
    let route = suite("net::exchange_rates_route");
    args.extend(route.iter().map(String::as_str));
    let (code, report) = lab.run_json(&args);
    assert_eq!(code, 1, "{report}");
    let c = cell(&report, "netns");
    assert_eq!(
        (c["k"].as_u64(), c["n"].as_u64()),
        (Some(6), Some(6)),
        "{c}"
    );
    assert_eq!(cell(&report, "baseline")["k"].as_u64(), Some(0), "{report}");
    repro_lines_reproduce(&lab);

    let echo = suite("net::loopback_echo");
    let mut args = vec!["-n", "6", "--no-baseline", "-p", "netns", "--"];
    args.extend(echo.iter().map(String::as_str));
    let (code, report) = lab.run_json(&args);
    assert_eq!(code, 0, "{report}");
    assert_eq!(cell(&report, "netns")["k"].as_u64(), Some(0), "{report}");
    assert_eq!(cell(&report, "netns")["n"].as_u64(), Some(6));
}

#[test]
fn a_kernel_that_refuses_namespaces_leaves_the_cell_not_applied() {
    // Inside a user namespace of our own, the namespace limits are ours to
    // set: at 0 the kernel refuses any new namespace, as a locked-down host does.
    let ok = sh_ok("unshare -r true");
    if !capable("unshare -r (to simulate a refusing kernel)", ok) {
        return;
    }
    let lab = Lab::new();
    let script = format!(
        "echo 0 > /proc/sys/user/max_net_namespaces && echo 0 > /proc/sys/user/max_user_namespaces && \
         exec {} run --format json -n 3 -p netns -- touch ran",
        super::bin().display()
    );
    let mut cmd = std::process::Command::new("unshare");
    super::scrub(&mut cmd);
    let out = cmd
        .args(["-r", "sh", "-c", &script])
        .current_dir(lab.path())
        .output()
        .unwrap();
    let report = super::report_from(&out, 3);
    let c = cell(&report, "netns");
    assert_eq!(c["applied"], false);
    assert!(
        c["reason"].as_str().unwrap().contains("the kernel refused"),
        "{c}"
    );
    assert_eq!(c["not_applied"].as_u64(), Some(3));
    assert_eq!(c["n"].as_u64(), Some(0));
    // The baseline ran (3 touches of the same file); the netns cell did not run at all.
    let runs = lab.runs();
    assert!(runs
        .iter()
        .filter(|r| r["cell"] == "netns")
        .all(|r| r["outcome"] == "not_applied"));
}

#[test]
fn cpu_stress_makes_a_deadline_miss_and_records_what_the_stressors_got() {
    // The subject (WHOLE_CPU_DEADLINE) is a Python script.
    if !capable("python3", sh_ok("python3 -c 'import os'")) {
        return;
    }
    let lab = Lab::new();
    // The subject misses its deadline exactly when busy threads run beside
    // it, which it sees in /proc rather than by timing itself (see
    // WHOLE_CPU_DEADLINE), so the count does not depend on the host's load.
    let (_, report) = lab.run_json(&[
        "-n",
        "10",
        "--seed",
        "11",
        "-p",
        "cpu-stress=2x",
        "--",
        "python3",
        "-c",
        super::WHOLE_CPU_DEADLINE,
    ]);
    let stressed = cell(&report, "cpu-stress=2x");
    let base = cell(&report, "baseline");
    assert_eq!(stressed["applied"], true, "{report}");
    assert_eq!(
        (stressed["k"].as_u64(), stressed["n"].as_u64()),
        (Some(10), Some(10)),
        "{report}"
    );
    assert_eq!(
        (base["k"].as_u64(), base["n"].as_u64()),
        (Some(0), Some(10)),
        "{report}"
    );
    assert_eq!(stressed["vs_baseline"]["differs"], true, "{report}");
    for run in lab.runs().iter().filter(|r| r["cell"] == "cpu-stress=2x") {
        // What the stressors themselves got, not the host's busy share.
        let stress = &run["cpu"]["stress"];
        let threads = stress["threads"].as_u64().expect("measured stress");
        assert_eq!(threads, 2 * stress["cpus"].as_u64().unwrap(), "{run}");
        let window = run["cpu"]["window_s"].as_f64().unwrap();
        let share = stress["cpu_s"].as_f64().unwrap() / (threads as f64 * window);
        assert!(share > 0.0 && share <= 1.0 + 1e-6, "{run}");
        assert!(run["cpu"]["subject_s"].as_f64().unwrap() > 0.0, "{run}");
        assert!(run["repro_note"]
            .as_str()
            .unwrap()
            .contains("flakelab replay"));
        let log = std::fs::read_to_string(lab.store().join(run["log"].as_str().unwrap())).unwrap();
        assert!(log.contains("busy threads of flakelab ran beside"), "{log}");
    }
}

#[test]
fn cpu_pin_and_rlimit_are_visible_to_the_child() {
    let lab = Lab::new();
    let (code, report) = lab.run_json(&[
        "-n",
        "3",
        "--no-baseline",
        "-p",
        "cpu-pin=1",
        "-p",
        "rlimit=nofile:64",
        "-p",
        "cpu-pin=1+rlimit=nofile:64",
        "--",
        "sh",
        "-c",
        "test \"$(nproc)\" = 1 && test \"$(ulimit -n)\" = 64",
    ]);
    assert_eq!(code, 0, "{report}");
    let both = cell(&report, "cpu-pin=1+rlimit=nofile:64");
    assert_eq!(
        (both["k"].as_u64(), both["n"].as_u64()),
        (Some(0), Some(3)),
        "{both}"
    );
    assert_eq!(both["probes"].as_array().unwrap().len(), 2);
    assert_eq!(
        cell(&report, "rlimit=nofile:64")["k"].as_u64(),
        Some(3),
        "nproc is not 1 there"
    );
    if super::sh_ok("test \"$(nproc)\" -ge 2") {
        assert_eq!(
            cell(&report, "cpu-pin=1")["k"].as_u64(),
            Some(3),
            "ulimit is not 64 there"
        );
    }
    repro_lines_reproduce(&lab);
}

#[test]
fn the_exec_helper_hands_the_subject_the_baselines_signal_state() {
    // The helper is a Rust program, whose runtime ignores SIGPIPE; an
    // ignored signal survives exec, and `yes | head` then behaves otherwise
    // than at the baseline. The subject fails when SIGPIPE is ignored in it.
    let lab = Lab::new();
    let (code, report) = lab.run_json(&[
        "-n",
        "2",
        "-p",
        "cpu-pin=1",
        "-p",
        "rlimit=nofile:256",
        "--",
        "sh",
        "-c",
        "ign=$(sed -n 's/^SigIgn:[[:space:]]*//p' /proc/self/status); test $(( 0x$ign & 0x1000 )) -eq 0",
    ]);
    assert_eq!(code, 0, "{report}");
    for c in report["cells"].as_array().unwrap() {
        assert_eq!(
            (c["k"].as_u64(), c["n"].as_u64()),
            (Some(0), Some(2)),
            "{c}"
        );
    }
    // The isolation is set up in the run's own process between fork and
    // exec (no helper binary): the recorded argv is the subject's.
    assert!(
        lab.runs().iter().all(|r| r["argv"][0] == "sh"),
        "no helper in the argv"
    );
}

#[test]
fn everything_composes_in_one_cell() {
    if !netns_available() {
        return;
    }
    let lab = Lab::new();
    let (code, report) = lab.run_json(&[
        "-n",
        "2",
        "--no-baseline",
        "-p",
        "tz=Asia/Kathmandu+faketime=+1y+netns+rlimit=nofile:64",
        "--",
        "sh",
        "-c",
        "test \"$(date +%z)\" = +0545 && test \"$(ulimit -n)\" = 64",
    ]);
    assert_eq!(code, 0, "{report}");
    let c = &report["cells"][0];
    assert_eq!(c["applied"], true, "{c}");
    assert_eq!(c["probes"].as_array().unwrap().len(), 4, "{c}");
    assert_eq!(c["k"].as_u64(), Some(0));
    repro_lines_reproduce(&lab);
}

#[test]
fn replay_reruns_one_recorded_run_exactly() {
    let lab = Lab::new();
    let (_, report) = lab.run_json(&[
        "-n",
        "2",
        "-p",
        "tz=Pacific/Kiritimati",
        "--",
        "sh",
        "-c",
        "test \"$(date +%z)\" = +0000 && test -n \"$FLAKELAB_SEED\"",
    ]);
    let run = cell(&report, "tz=Pacific/Kiritimati")["first_failure"]["run"]
        .as_str()
        .unwrap()
        .to_string();
    let seed = lab
        .runs()
        .into_iter()
        .find(|r| r["id"] == run.as_str())
        .unwrap()["seed"]
        .clone();
    let out = lab.run(&["replay", &run, "--times", "3", "--format", "json"]);
    let replay = super::report_from(&out, 1);
    assert_eq!(replay["replay_of"], run.as_str());
    assert_eq!(replay["cells"].as_array().unwrap().len(), 1);
    assert_eq!(replay["cells"][0]["k"].as_u64(), Some(3));
    let replayed: Vec<_> = lab
        .runs()
        .into_iter()
        .filter(|r| r["session"] == replay["session"])
        .collect();
    assert_eq!(replayed.len(), 3);
    assert!(replayed.iter().all(|r| r["seed"] == seed));
    let missing = lab.run(&["replay", "nope"]);
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn doctor_reports_each_capability() {
    let out = Lab::new().run(&["doctor"]);
    let text = String::from_utf8(out.stdout).unwrap();
    for name in [
        "zoneinfo",
        "locales",
        "clock preload",
        "libfaketime",
        "user namespaces",
        "network namespaces",
        "affinity",
        "cgroups",
    ] {
        assert!(text.contains(name), "{name}: {text}");
    }
}

#[test]
fn netns_works_for_an_ordinary_user_through_a_user_namespace() {
    // As root, run flakelab as `nobody` (uid 65534): the helper then needs a
    // user namespace to get a network namespace, and must keep the uid.
    if !nix::unistd::geteuid().is_root() {
        // Not root: every other netns test already takes this path.
        return;
    }
    if !capable("setpriv (util-linux)", sh_ok("command -v setpriv")) {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let lab = Lab::new();
    let home = lab.path().join("nobody");
    std::fs::create_dir(&home).unwrap();
    let bin = home.join("flakelab");
    std::fs::copy(super::bin(), &bin).unwrap();
    for p in [lab.path(), &home, &bin] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    nix::unistd::chown(&home, Some(65534.into()), Some(65534.into())).unwrap();
    let usable = sh_ok(&format!(
        "setpriv --reuid=65534 --regid=65534 --clear-groups {} --version",
        bin.display()
    ));
    let userns = usable
        && sh_ok(&format!(
            "setpriv --reuid=65534 --regid=65534 --clear-groups {} __exec --netns -- true",
            bin.display()
        ));
    if !capable("unprivileged user namespaces", userns) {
        return;
    }
    let mut cmd = std::process::Command::new("setpriv");
    super::scrub(&mut cmd);
    let out = cmd
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&bin)
        .args([
            "run",
            "--format",
            "json",
            "-n",
            "2",
            "--no-baseline",
            "-p",
            "netns",
            "-C",
        ])
        .arg(&home)
        .args(["--", "sh", "-c", "test \"$(id -u)\" = 65534"])
        .env("HOME", &home)
        .output()
        .unwrap();
    let report = super::report_from(&out, 0);
    let c = cell(&report, "netns");
    assert_eq!(c["applied"], true, "{c}");
    assert_eq!(
        (c["k"].as_u64(), c["n"].as_u64()),
        (Some(0), Some(2)),
        "{c}"
    );
}
