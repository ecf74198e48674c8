//! `flakelab bisect` end to end with the real pytest: generated suites with
//! module-level state (deterministic, seeded positions), the ordering
//! plugin against pytest-randomly, the brittle and cleaner fixtures, the
//! budget, Ctrl-C, and the runners that cannot run a given order.
//! Skipped (with a reason) when pytest is missing, unless
//! `FLAKELAB_TEST_REQUIRE_ALL=1`.

use crate::{capable, sh_ok, wait_for_file, Lab, Reaped};

fn pytest_available() -> bool {
    capable(
        "pytest with pytest-randomly (python3 -m pytest)",
        sh_ok("python3 -m pytest --version && python3 -c 'import pytest_randomly'"),
    )
}

/// A deterministic position generator (splitmix64), so each seed plants the
/// polluter at its own place, the same on every machine.
fn splitmix(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut s = seed;
    move |below: u64| {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % below
    }
}

/// `tests/test_suite.py` with `n` trivial tests; `body(i)` overrides test i.
fn write_suite(lab: &Lab, n: usize, body: impl Fn(usize) -> Option<String>) {
    let mut src = String::from("STATE = {'dirty': 0, 'ready': False}\n\n");
    for i in 0..n {
        let b = body(i).unwrap_or_else(|| "    pass".into());
        src.push_str(&format!("def test_{i:04}():\n{b}\n\n"));
    }
    std::fs::create_dir_all(lab.path().join("tests")).unwrap();
    std::fs::write(lab.path().join("tests/test_suite.py"), src).unwrap();
}

fn id(i: usize) -> String {
    format!("tests.test_suite::test_{i:04}")
}

/// `flakelab ARGS` in the lab, with Python allowed to write bytecode: pytest
/// then caches its assertion rewrite of the generated suite (up to 3,000
/// tests) at the first run instead of redoing it at every run of a search.
/// The cache sits in the lab's `tests/__pycache__` and changes no outcome.
///
/// The runs get a temporary directory of their own (in the lab): files
/// other processes write into a shared one at the same time would show in
/// the state snapshots.
fn flakelab(lab: &Lab, args: &[&str]) -> std::process::Output {
    let tmp = lab.path().join(".tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    lab.cmd()
        .env_remove("PYTHONDONTWRITEBYTECODE")
        .env("TMPDIR", &tmp)
        .args(args)
        .output()
        .unwrap()
}

/// One recorded run of the suite in file order; returns its run id.
fn failing_run(lab: &Lab) -> String {
    let out = flakelab(
        lab,
        &[
            "run",
            "-n",
            "1",
            "--no-sham",
            "--",
            "python3",
            "-m",
            "pytest",
            "tests",
        ],
    );
    let runs = lab.runs();
    let run = runs
        .last()
        .unwrap_or_else(|| panic!("no run: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(
        run["outcome"], "fail",
        "the planted victim fails in file order"
    );
    run["id"].as_str().unwrap().to_string()
}

/// `flakelab bisect ARGS --format json`: the exit code and the result.
fn bisect(lab: &Lab, args: &[&str]) -> (i32, serde_json::Value, String) {
    let mut all = vec!["bisect", "--format", "json"];
    all.extend_from_slice(args);
    let out = flakelab(lab, &all);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON ({e}); stdout: {} stderr: {stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (out.status.code().unwrap_or(-1), json, stderr)
}

fn strings(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// The bound of the issue: 2·log2(3000) + 4 bisection runs.
const BOUND_3000: u64 = 27;

fn one_polluter_in_3000(seed: u64) {
    let lab = Lab::new();
    let mut at = splitmix(seed);
    let victim = 1500 + at(1500) as usize;
    let polluter = at(victim as u64) as usize;
    write_suite(&lab, 3000, |i| {
        (i == polluter)
            .then(|| "    STATE['dirty'] += 1".to_string())
            .or_else(|| (i == victim).then(|| "    assert STATE['dirty'] == 0".into()))
    });
    let run = failing_run(&lab);
    let (code, r, stderr) = bisect(&lab, &[&run, "--no-cleaners", "--confirm", "1"]);
    assert_eq!(code, 1, "{r} {stderr}");
    assert_eq!(r["kind"], "polluted", "{r}");
    assert_eq!(strings(&r["polluters"]), [id(polluter)], "seed {seed}");
    assert_eq!(r["victim"], id(victim));
    let used = r["search_runs"].as_u64().unwrap();
    eprintln!("seed {seed}: polluter {polluter}, victim {victim}: {used} bisection runs");
    assert!(used <= BOUND_3000, "seed {seed}: {used} runs");
    assert_eq!(r["confirmation"]["with"], 1);
    assert_eq!(r["confirmation"]["alone"], 1);
    // Stored through the store, and shown as one line per polluter.
    let stored = flakelab::store::Store::at(&lab.store())
        .bisects_of(r["session"].as_str().unwrap())
        .unwrap();
    assert_eq!(stored.len(), 1);
    assert!(stored[0]
        .lines()
        .contains(&format!("polluter: {}", id(polluter))));
    // The repro line runs just those two tests, and the victim fails.
    let repro = r["repro"].as_str().unwrap();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(repro)
        .env_remove("PYTHONDONTWRITEBYTECODE")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{repro}: {text}");
    assert!(text.contains("1 failed, 1 passed"), "{repro}: {text}");
}

#[test]
fn bisect_names_one_polluter_among_3000_tests_seed_1() {
    if pytest_available() {
        one_polluter_in_3000(1);
    }
}

#[test]
fn bisect_names_one_polluter_among_3000_tests_seed_2() {
    if pytest_available() {
        one_polluter_in_3000(2);
    }
}

#[test]
fn bisect_finds_two_polluters_that_only_fail_the_victim_together() {
    if !pytest_available() {
        return;
    }
    let lab = Lab::new();
    // The polluters sit in different halves of the victim's 60
    // predecessors, so no half alone fails it: ddmin must go on to finer
    // chunks and complements (40 bisection runs here; 60 among 380).
    let (a, b, victim) = (7, 41, 60);
    write_suite(&lab, 64, |i| {
        (i == a || i == b)
            .then(|| "    STATE['dirty'] += 1".to_string())
            .or_else(|| (i == victim).then(|| "    assert STATE['dirty'] < 2".into()))
    });
    let run = failing_run(&lab);
    let (code, r, stderr) = bisect(&lab, &[&run, "--no-cleaners", "--confirm", "1"]);
    assert_eq!(code, 1, "{r} {stderr}");
    assert_eq!(strings(&r["polluters"]), [id(a), id(b)]);
    eprintln!("two polluters among {victim}: {} runs", r["search_runs"]);
}

#[test]
fn a_brittle_tests_state_setter_is_found() {
    if !pytest_available() {
        return;
    }
    let lab = Lab::new();
    // The victim runs before the test that sets up what it needs.
    let (victim, setter) = (3, 9);
    write_suite(&lab, 12, |i| {
        (i == victim)
            .then(|| "    assert STATE['ready']".to_string())
            .or_else(|| (i == setter).then(|| "    STATE['ready'] = True".into()))
    });
    let run = failing_run(&lab);
    let (code, r, stderr) = bisect(&lab, &[&run, "--confirm", "2"]);
    assert_eq!(code, 1, "{r} {stderr}");
    assert_eq!(r["kind"], "brittle", "{r}");
    assert_eq!(strings(&r["setters"]), [id(setter)]);
    assert_eq!(strings(&r["polluters"]), Vec::<String>::new());
    assert_eq!(
        r["confirmation"],
        serde_json::json!({"k": 2, "with": 2, "alone": 2})
    );
    // Every question's session records the runner's version (probed by the
    // first, reused by the rest).
    let sessions = std::fs::read_to_string(lab.store().join("sessions.jsonl")).unwrap();
    let versions: Vec<serde_json::Value> = sessions
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["runner_version"].clone())
        .collect();
    assert!(versions.len() > 2, "{sessions}");
    assert!(
        versions
            .iter()
            .all(|v| v.as_str().is_some_and(|v| v.starts_with("pytest "))),
        "{versions:?}"
    );
    // The evidence of the run's session carries the stored result.
    let out = lab.run(&["evidence", "--format", "markdown"]);
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("#### Polluter bisection"), "{md}");
    assert!(
        md.contains(&format!("state-setter: {}", id(setter))),
        "{md}"
    );
    assert!(md.contains(&format!("victim: {}", id(victim))), "{md}");
    let out = lab.run(&["evidence", "--format", "json"]);
    let e: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(e["bisects"][0]["id"], r["id"], "{e}");
}

#[test]
fn a_cleaner_that_runs_after_the_victim_is_found() {
    if !pytest_available() {
        return;
    }
    let lab = Lab::new();
    let (polluter, victim, cleaner) = (2, 6, 10);
    write_suite(&lab, 14, |i| match i {
        _ if i == polluter => Some("    STATE['dirty'] += 1".into()),
        _ if i == victim => Some("    assert STATE['dirty'] == 0".into()),
        _ if i == cleaner => Some("    STATE['dirty'] = 0".into()),
        _ => None,
    });
    let run = failing_run(&lab);
    let (code, r, stderr) = bisect(&lab, &[&run, "--confirm", "1"]);
    assert_eq!(code, 1, "{r} {stderr}");
    assert_eq!(strings(&r["polluters"]), [id(polluter)]);
    assert_eq!(strings(&r["cleaners"]), [id(cleaner)]);
}

#[test]
fn the_ordering_plugin_runs_the_list_in_order_even_beside_randomly_and_adds_no_signal() {
    if !pytest_available() {
        return;
    }
    let lab = Lab::new();
    write_suite(&lab, 6, |_| None);
    let plugin = flakelab::store::Store::at(&lab.store())
        .write_bisect_plugin()
        .unwrap();
    let list = lab.path().join("order.txt");
    // A node id and a JUnit id, in an order that is not the file's.
    std::fs::write(
        &list,
        format!("tests/test_suite.py::test_0004\n{}\n", id(1)),
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let out = std::process::Command::new("python3")
            .args(["-m", "pytest", "-v", "-p", "flakelab_order"])
            .arg(format!("--flakelab-order={}", list.display()))
            .args(extra)
            .arg("tests")
            .env("PYTHONPATH", &plugin)
            .current_dir(lab.path())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string(),
        )
    };
    for extra in [
        &["-p", "no:randomly"][..],
        &["-p", "randomly", "--randomly-seed=7"][..],
    ] {
        let (code, text) = run(extra);
        assert_eq!(code, Some(0), "{text}");
        let ran: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("PASSED"))
            .map(|l| l.split(' ').next().unwrap())
            .collect();
        assert_eq!(
            ran,
            [
                "tests/test_suite.py::test_0004",
                "tests/test_suite.py::test_0001"
            ],
            "{extra:?}: {text}"
        );
        assert!(text.contains("2 passed, 4 deselected"), "{text}");
        assert!(
            !text.contains("warning"),
            "the plugin adds no warning: {text}"
        );
    }
    // Without the option the plugin changes nothing.
    let out = std::process::Command::new("python3")
        .args([
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "flakelab_order",
            "tests",
        ])
        .env("PYTHONPATH", &plugin)
        .current_dir(lab.path())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("6 passed"));
}

#[test]
fn a_shuffled_failure_is_bisected_from_its_test_and_seed() {
    if !pytest_available() {
        return;
    }
    let lab = Lab::new();
    let (polluter, victim) = (4, 15);
    write_suite(&lab, 20, |i| {
        (i == polluter)
            .then(|| "    STATE['dirty'] += 1".to_string())
            .or_else(|| (i == victim).then(|| "    assert STATE['dirty'] == 0".into()))
    });
    // Shuffled runs under a fixed session seed: the polluter runs before
    // the victim in some of them.
    let (_, report) = lab.run_json(&[
        "-n",
        "6",
        "--seed",
        "1",
        "--no-baseline",
        "-p",
        "shuffle",
        "--",
        "python3",
        "-m",
        "pytest",
        "tests",
    ]);
    let failed = lab
        .runs()
        .into_iter()
        .find(|r| r["outcome"] == "fail")
        .unwrap_or_else(|| panic!("no shuffled run failed: {report}"));
    let seed = failed["seed"].as_u64().unwrap().to_string();
    let (code, r, stderr) = bisect(
        &lab,
        &[
            "--test",
            &id(victim),
            "--seed",
            &seed,
            "--confirm",
            "1",
            "--no-cleaners",
            "--",
            "python3",
            "-m",
            "pytest",
            "tests",
        ],
    );
    assert_eq!(code, 1, "{r} {stderr}");
    assert_eq!(strings(&r["polluters"]), [id(polluter)]);
    assert!(
        stderr.contains(&format!("one shuffled run under seed {seed}")),
        "{stderr}"
    );
}

/// The report's handover from a session whose baseline ran the victim
/// before the polluter: the shuffled run it names keeps the order it failed
/// in (the store writes a failing run out of table order whole), so the
/// command the report prints finds the polluter.
#[test]
fn the_bisect_a_shuffle_row_names_replays_its_runs_own_order() {
    if !pytest_available() {
        return;
    }
    let lab = Lab::new();
    // The victim comes first in file order; every other test pollutes, so
    // most shuffled orders fail it and its row differs.
    let victim = 0;
    write_suite(&lab, 6, |i| {
        Some(if i == victim {
            "    assert STATE['dirty'] == 0".into()
        } else {
            "    STATE['dirty'] += 1".to_string()
        })
    });
    let (_, report) = lab.run_json(&[
        "-n",
        "6",
        "--seed",
        "1",
        "--no-sham",
        "-p",
        "shuffle",
        "--",
        "python3",
        "-m",
        "pytest",
        "tests",
    ]);
    let cell = crate::cell(&report, "shuffle");
    let row = (cell["tests"].as_array().unwrap().iter())
        .find(|t| t["id"] == id(victim))
        .unwrap_or_else(|| panic!("the victim has no row: {report}"));
    let command = row["bisect"]
        .as_str()
        .unwrap_or_else(|| panic!("no handover: {row}"));
    let words: Vec<&str> = command.split(' ').collect();
    assert_eq!(words[..2], ["flakelab", "bisect"], "{command}");
    let (code, r, stderr) = bisect(
        &lab,
        &[
            words[2],
            "--test",
            &id(victim),
            "--confirm",
            "1",
            "--no-cleaners",
        ],
    );
    assert_eq!(code, 1, "{r} {stderr}");
    // One polluter is enough: the smallest set is one of them. In table
    // order (the baseline's) nothing runs before the victim at all.
    let found = strings(&r["polluters"]);
    assert!(found.len() == 1 && found[0] != id(victim), "{r} {stderr}");
    assert_eq!(r["kind"], "polluted", "{r}");
}

#[test]
fn the_budget_stops_the_search_and_keeps_how_far_it_got() {
    if !pytest_available() {
        return;
    }
    let lab = Lab::new();
    write_suite(&lab, 200, |i| match i {
        77 => Some("    STATE['dirty'] += 1".into()),
        199 => Some("    assert STATE['dirty'] == 0".into()),
        _ => None,
    });
    let run = failing_run(&lab);
    let (code, r, stderr) = bisect(&lab, &[&run, "--budget", "5", "--confirm", "1"]);
    assert_eq!(code, 2, "{r} {stderr}");
    assert_eq!(r["kind"], "unsettled");
    assert_eq!(r["runs"], 5);
    let left = r["left_count"].as_u64().unwrap();
    assert!((1..199).contains(&left), "{r}");
    assert!(
        strings(&r["left"]).contains(&id(77)),
        "the polluter is still a candidate: {r}"
    );
    let stopped = r["stopped"].as_str().unwrap();
    assert!(
        stopped.contains("budget") && stopped.contains(&format!("among {left} of 199")),
        "{stopped}"
    );
}

#[test]
fn ctrl_c_keeps_what_was_learned() {
    if !pytest_available() {
        return;
    }
    let lab = Lab::new();
    let count = lab.path().join("count");
    let ready = lab.path().join("ready");
    // The victim's fourth run (the search's second question) says so and
    // waits to be interrupted.
    let wait = format!(
        "    import os, time\n    c = int(open({c:?}).read()) + 1 if os.path.exists({c:?}) else 1\n    open({c:?}, 'w').write(str(c))\n    if c == 4:\n        open({r:?}, 'w').close()\n        time.sleep(60)\n    assert STATE['dirty'] == 0",
        c = count.display().to_string(),
        r = ready.display().to_string()
    );
    write_suite(&lab, 40, |i| match i {
        5 => Some("    STATE['dirty'] += 1".into()),
        39 => Some(wait.clone()),
        _ => None,
    });
    let run = failing_run(&lab);
    std::fs::remove_file(&count).unwrap();
    let child = lab
        .cmd()
        .args(["bisect", "--format", "json", "--confirm", "1", &run])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Reaped(child);
    wait_for_file(&ready);
    assert!(sh_ok(&format!("kill -INT {}", child.id())));
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.0.stdout.take().unwrap(), &mut stdout).unwrap();
    let status = child.0.wait().unwrap();
    let r: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(status.code(), Some(130), "{r}");
    assert_eq!(r["kind"], "unsettled");
    // Alone, all 39 predecessors, the first half (it failed): three runs
    // finished, then Ctrl-C during the second question's run, which is not
    // counted.
    let stopped = r["stopped"].as_str().unwrap();
    assert!(
        stopped.starts_with("interrupted after 3 run(s)"),
        "{stopped}"
    );
    assert!(stopped.contains("among 19 of 39"), "{stopped}");
    let stored = flakelab::store::Store::at(&lab.store())
        .bisects_of(r["session"].as_str().unwrap())
        .unwrap();
    assert_eq!(stored[0].left_count, Some(19));
    assert!(stored[0].left.contains(&id(5)));
    // Run again, it resumes: the three stored answers are not asked again
    // (the victim's counter shows the runs), and the polluter is named.
    let before = std::fs::read_to_string(&count).unwrap();
    let (code, again, stderr) = bisect(&lab, &[&run, "--confirm", "1", "--no-cleaners"]);
    assert_eq!(code, 1, "{again} {stderr}");
    assert_eq!(strings(&again["polluters"]), [id(5)]);
    assert_eq!(again["resumed_from"], r["id"], "{again}");
    assert_eq!(again["resumed_runs"], 3, "{again}");
    let after: u64 = std::fs::read_to_string(&count).unwrap().parse().unwrap();
    let fresh = after - before.parse::<u64>().unwrap();
    assert_eq!(
        u64::from(again["runs"].as_u64().unwrap() as u32),
        fresh + 3,
        "every run but the three stored ones ran the victim: {again}"
    );
    assert!(stderr.contains("victim failed 1/1"), "{stderr}");
    assert!(!stderr.contains("baseline"), "{stderr}");
    let stored = flakelab::store::Store::at(&lab.store())
        .bisects_of(r["session"].as_str().unwrap())
        .unwrap();
    assert_eq!(
        stored.len(),
        1,
        "the resumed bisection replaces the stopped one"
    );
}

#[test]
fn a_runner_that_cannot_run_an_order_is_refused_before_anything_runs() {
    let lab = Lab::new();
    let out = lab.run(&[
        "bisect", "--test", "TestX", "--seed", "1", "--", "go", "test", "./...",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot run a given order") && err.contains("source order"),
        "{err}"
    );
    assert!(lab.runs().is_empty());
    let none = lab.run(&["bisect"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("--seed"));
}

/// Writes `files` (path, text) under the lab.
fn write_files(lab: &Lab, files: &[(&str, &str)]) {
    for (path, text) in files {
        let at = lab.path().join(path);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, text).unwrap();
    }
}

/// A recorded run of `args` (a pytest command line); returns its run id
/// and whether it failed.
fn recorded(lab: &Lab, args: &[&str]) -> (String, String) {
    let mut all = vec![
        "run",
        "-n",
        "1",
        "--no-sham",
        "--",
        "python3",
        "-m",
        "pytest",
    ];
    all.extend_from_slice(args);
    let out = flakelab(lab, &all);
    let runs = lab.runs();
    let run = runs
        .last()
        .unwrap_or_else(|| panic!("no run: {}", String::from_utf8_lossy(&out.stderr)));
    (
        run["id"].as_str().unwrap().to_string(),
        run["outcome"].as_str().unwrap().to_string(),
    )
}

fn state_lines(r: &serde_json::Value) -> Vec<String> {
    r["state"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| {
                    format!(
                        "{} {} {} {} ({} -> {}){}",
                        c["role"].as_str().unwrap(),
                        c["test"].as_str().unwrap(),
                        c["verb"].as_str().unwrap(),
                        c["target"].as_str().unwrap(),
                        c["before"].as_str().unwrap(),
                        c["after"].as_str().unwrap(),
                        if c["victim_reads"] == true {
                            " reads"
                        } else {
                            ""
                        }
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

const APP: &str = "STATE = {'ready': False, 'dirty': 0}\nCACHE = {}\nFLAG = {}\n";

#[test]
fn a_brittle_test_broken_by_a_pair_is_bisected_from_a_passing_order_to_setter_and_pair() {
    if !pytest_available() {
        return;
    }
    let lab = Lab::new();
    write_files(
        &lab,
        &[
            ("tests/__init__.py", ""),
            ("tests/app.py", APP),
            (
                "tests/test_a.py",
                "from tests import app\n\ndef test_setter():\n    app.STATE['ready'] = True\n\ndef test_get_item():\n    assert app.STATE['ready'] and app.STATE['dirty'] < 2\n",
            ),
            (
                "tests/test_b.py",
                "from tests import app\n\ndef test_p1():\n    app.STATE['dirty'] += 1\n\ndef test_p2():\n    app.STATE['dirty'] += 1\n\ndef test_plain():\n    pass\n",
            ),
        ],
    );
    // In file order the victim passes (setter first, the pair after it);
    // with test_b.py first the pair runs before it and it fails, after
    // every other test as well.
    let (passing, outcome) = recorded(&lab, &["tests"]);
    assert_eq!(outcome, "pass");
    let (failing, outcome) = recorded(&lab, &["tests/test_b.py", "tests/test_a.py"]);
    assert_eq!(outcome, "fail");
    let victim = "tests.test_a::test_get_item";
    let (code, r, stderr) = bisect(&lab, &[&failing, "--test", victim, "--confirm", "1"]);
    assert_eq!(code, 1, "{r} {stderr}");
    assert_eq!(r["kind"], "brittle", "{r}");
    assert_eq!(strings(&r["setters"]), ["tests.test_a::test_setter"]);
    assert_eq!(
        strings(&r["polluters"]),
        ["tests.test_b::test_p1", "tests.test_b::test_p2"],
        "the pair, as a pair"
    );
    assert_eq!(
        r["start"],
        format!("the order of run {passing}, where it passed"),
        "{r}"
    );
    // The named state: the setter and each of the pair mutate app.STATE,
    // which the victim's failure shows it reads.
    let state = state_lines(&r);
    // (The state run keeps the failing order: the pair, then the setter.)
    assert!(
        state.contains(&"state-setter tests.test_a::test_setter mutates tests.app.STATE ({'dirty': 2, 'ready': False} -> {'dirty': 2, 'ready': True}) reads".to_string()),
        "{state:?}"
    );
    assert!(
        state
            .iter()
            .any(|l| l.starts_with("polluter tests.test_b::test_p2 mutates tests.app.STATE (")),
        "{state:?}"
    );
    // The repro runs the pair and the setter in their failing order, then
    // the victim: it fails.
    let repro = r["repro"].as_str().unwrap();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(repro)
        .env_remove("PYTHONDONTWRITEBYTECODE")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1 failed, 3 passed"), "{repro}: {text}");
    let at = |t: &str| {
        repro
            .find(t)
            .unwrap_or_else(|| panic!("{t} not in {repro}"))
    };
    assert!(
        at("test_p1") < at("test_p2")
            && at("test_p2") < at("test_setter")
            && at("test_setter") < at("test_get_item"),
        "{repro}"
    );
    // Shown in the evidence (Markdown and HTML) of the failing run's session.
    let session = r["session"].as_str().unwrap();
    let md = String::from_utf8_lossy(
        &lab.run(&["evidence", session, "--format", "markdown"])
            .stdout,
    )
    .to_string();
    assert!(md.contains("together: the 2 polluters"), "{md}");
    assert!(
        md.contains("state: state-setter tests.test_a::test_setter mutates tests.app.STATE"),
        "{md}"
    );
    let html = String::from_utf8_lossy(&lab.run(&["evidence", session, "--format", "html"]).stdout)
        .to_string();
    assert!(html.contains("Bisections"), "{html}");
    assert!(
        html.contains("mutates tests.app.STATE ({&#39;dirty&#39;: 2, &#39;ready&#39;: False}"),
        "values are escaped in HTML"
    );
}

#[test]
fn each_polluter_and_the_state_it_planted_are_named() {
    if !pytest_available() {
        return;
    }
    let lab = Lab::new();
    write_files(
        &lab,
        &[
            ("tests/__init__.py", ""),
            ("tests/app.py", APP),
            (
                // Each run starts without the file a polluter leaves.
                "conftest.py",
                "import os\n\ndef pytest_configure(config):\n    p = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'leftover.lock')\n    if os.path.exists(p):\n        os.remove(p)\n",
            ),
            (
                "tests/test_state.py",
                "import os\nfrom tests import app\nROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))\n\n\
def test_env_polluter():\n    os.environ['APP_CURRENCY'] = 'EUR'\n    os.environ['APP_TOKEN'] = 'hunter2'\n    os.environ['APP_NOTE'] = 'a\\n::error::forged'\n\n\
def test_dict_polluter():\n    app.CACHE['user'] = 'mallory'\n\n\
def test_file_polluter():\n    with open(os.path.join(ROOT, 'leftover.lock'), 'w') as f:\n        f.write('x')\n\n\
def test_cwd_polluter():\n    os.chdir(os.path.join(ROOT, 'tests'))\n\n\
def test_env_victim():\n    assert os.environ.get('APP_CURRENCY', 'USD') == 'USD'\n\n\
def test_dict_victim():\n    assert 'user' not in app.CACHE\n\n\
def test_file_victim():\n    assert not os.path.exists(os.path.join(ROOT, 'leftover.lock'))\n\n\
def test_cwd_victim():\n    assert os.path.isdir('tests')\n",
            ),
        ],
    );
    let (failing, outcome) = recorded(&lab, &["tests"]);
    assert_eq!(outcome, "fail");
    let t = |name: &str| format!("tests.test_state::test_{name}");
    let cases: [(&str, &str, &str); 4] = [
        (
            "env",
            "sets os.environ['APP_CURRENCY'] (None -> 'EUR')",
            " reads",
        ),
        (
            "dict",
            "mutates tests.app.CACHE ({} -> {'user': 'mallory'})",
            " reads",
        ),
        (
            "file",
            "creates file 'leftover.lock' (absent -> 1 bytes)",
            " reads",
        ),
        ("cwd", "changes the working directory (", ""),
    ];
    for (name, change, reads) in cases {
        let (code, r, stderr) = bisect(
            &lab,
            &[
                &failing,
                "--test",
                &t(&format!("{name}_victim")),
                "--confirm",
                "1",
                "--no-cleaners",
            ],
        );
        assert_eq!(code, 1, "{name}: {r} {stderr}");
        assert_eq!(r["kind"], "polluted", "{name}: {r}");
        assert_eq!(
            strings(&r["polluters"]),
            [t(&format!("{name}_polluter"))],
            "{name}"
        );
        let state = state_lines(&r);
        let want = format!("polluter {} {change}", t(&format!("{name}_polluter")));
        assert!(
            state
                .iter()
                .any(|l| l.starts_with(&want) && (reads.is_empty() || l.ends_with(reads))),
            "{name}: want {want:?}{reads} in {state:?}"
        );
        if name != "env" {
            assert_eq!(state.len(), 1, "{name}: only the planted change: {state:?}");
        }
        if name == "env" {
            // Values are user data: a credential-named variable's value is
            // never shown, a line break in one never starts a line.
            assert_eq!(state.len(), 3, "{state:?}");
            assert!(
                state.contains(&format!(
                    "polluter {} sets os.environ['APP_TOKEN'] (None -> <redacted>)",
                    t("env_polluter")
                )),
                "{state:?}"
            );
            assert!(!r.to_string().contains("hunter2"), "{r}");
            let session = r["session"].as_str().unwrap();
            for format in ["markdown", "html"] {
                let out = lab.run(&["evidence", session, "--format", format]);
                let text = String::from_utf8_lossy(&out.stdout);
                assert!(text.contains("APP_NOTE"), "{text}");
                assert!(!text.contains("hunter2"), "{text}");
                assert!(
                    !text.lines().any(|l| l.trim_start().starts_with("::error")),
                    "{text}"
                );
            }
            // The result's lines (the table, the evidence) say it in the
            // issue's words.
            let stored = flakelab::store::Store::at(&lab.store())
                .bisects_of(r["session"].as_str().unwrap())
                .unwrap();
            let lines = stored.last().unwrap().lines();
            assert!(
                lines.contains(&"state: polluter tests.test_state::test_env_polluter sets os.environ['APP_CURRENCY'] (None -> 'EUR'); victim tests.test_state::test_env_victim reads it".to_string()),
                "{lines:?}"
            );
        }
        if name == "cwd" {
            assert!(state[0].contains("/tests')"), "{state:?}");
            assert!(
                !state[0].ends_with(" reads"),
                "nothing shows the victim reads the cwd"
            );
        }
    }
}

#[test]
fn an_intermittent_victim_is_bisected_with_each_answer_decided() {
    if !pytest_available() {
        return;
    }
    let lab = Lab::new();
    let counter = lab.path().join("turns");
    let victim = format!(
        "import os\nfrom tests import app\n\n\
def test_flag_polluter():\n    app.FLAG['on'] = True\n\n\
def test_neutral():\n    pass\n\n\
def test_flaky_victim():\n    if app.FLAG.get('on'):\n        n = int(open({c:?}).read()) if os.path.exists({c:?}) else 0\n        open({c:?}, 'w').write(str(n + 1))\n        assert n % 2 == 1, 'FLAG on, an even turn'\n",
        c = counter.display().to_string()
    );
    write_files(
        &lab,
        &[
            ("tests/__init__.py", ""),
            ("tests/app.py", APP),
            ("tests/test_flag.py", &victim),
        ],
    );
    // Turn 0 fails; after its polluter the victim then passes and fails in
    // turn: 1 of 2 runs of its order fail, so each "no" takes 5 runs in a
    // row at 95%.
    let (failing, outcome) = recorded(&lab, &["tests"]);
    assert_eq!(outcome, "fail");
    let (code, r, stderr) = bisect(&lab, &[&failing, "--confirm", "2", "--no-cleaners"]);
    assert_eq!(code, 1, "{r} {stderr}");
    assert_eq!(
        strings(&r["polluters"]),
        ["tests.test_flag::test_flag_polluter"]
    );
    assert_eq!(r["repeat"]["shown"], 1, "{r}");
    assert_eq!(r["repeat"]["runs"], 2, "{r}");
    assert_eq!(r["repeat"]["per_question"], 5, "{r}");
    assert!(
        stderr.contains("flakelab bisect: intermittent: the victim failed 1 of 2 runs of its reference order; each question took up to 5 run(s)"),
        "{stderr}"
    );
    assert_eq!(r["confirmation"]["intermittent"], true, "{r}");
    assert_eq!(r["confirmation"]["alone"], 2, "{r}");
    let state = state_lines(&r);
    assert!(
        state.contains(&"polluter tests.test_flag::test_flag_polluter mutates tests.app.FLAG ({} -> {'on': True}) reads".to_string()),
        "{state:?}"
    );
}
