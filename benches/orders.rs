//! Benchmark: orders needed to expose every planted order dependence of
//! `tests/fixtures/orders-project` (#36), the systematic orders of the
//! `orders` perturbation against random shuffles, as a ratio in one run.
//!
//! The fixture's dependences are written down here as a model (which
//! earlier tests make each planted test fail); the model is first checked
//! against real pytest runs of the same orders through flakelab's ordering
//! plugin (every systematic order and `CHECKED` random ones: the failures
//! pytest reports must be the ones the model predicts), then used for the
//! expectation over many random shuffles. A random shuffle is drawn as
//! pytest-randomly draws one: the modules in a random order, then each
//! module's tests.
//!
//! Run with `cargo bench --bench orders` (optionally `-- TRIALS`); without
//! python3 and pytest the model alone runs, and says so.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use flakelab::perturb::orders::{cover, module_of};

/// Random orders checked against real pytest runs.
const CHECKED: usize = 12;

/// The fixture's tests in collected (file) order.
fn collected() -> Vec<String> {
    let mut out = Vec::new();
    let mut add = |module: &str, names: &[&str]| {
        out.extend(names.iter().map(|n| format!("tests.{module}::{n}")));
    };
    add(
        "test_brittle",
        &[
            "test_a_sets_ready",
            "test_b_brittle_needs_ready",
            "test_c_control",
        ],
    );
    add(
        "test_cleaned",
        &[
            "test_victim_cleaned",
            "test_polluter_dirty",
            "test_cleaner_0",
            "test_cleaner_1",
            "test_cleaner_2",
            "test_cleaner_3",
        ],
    );
    add("test_cwd", &["test_reads_project_file", "test_changes_cwd"]);
    add(
        "test_dict",
        &["test_mode_is_prod", "test_switches_to_debug"],
    );
    add("test_env_victim", &["test_invoice_in_dollars"]);
    add(
        "test_file",
        &["test_basetemp_is_empty", "test_leaves_a_file"],
    );
    add("test_zz_env_polluter", &["test_sets_euro"]);
    out
}

/// The tests the model says fail in `order`.
fn model(order: &[String]) -> BTreeSet<String> {
    let at = |name: &str| order.iter().position(|t| t.ends_with(&format!("::{name}")));
    let before = |a: &str, b: &str| matches!((at(a), at(b)), (Some(x), Some(y)) if x < y);
    let mut failed = BTreeSet::new();
    let mut fail = |id: &str| {
        failed.insert(order.iter().find(|t| t.ends_with(id)).unwrap().clone());
    };
    // Polluter before victim (no cleaner in these).
    for (polluter, victim) in [
        ("test_changes_cwd", "test_reads_project_file"),
        ("test_switches_to_debug", "test_mode_is_prod"),
        ("test_sets_euro", "test_invoice_in_dollars"),
        ("test_leaves_a_file", "test_basetemp_is_empty"),
    ] {
        if before(polluter, victim) {
            fail(victim);
        }
    }
    // Brittle: fails unless its state-setter ran before it.
    if !before("test_a_sets_ready", "test_b_brittle_needs_ready") {
        fail("test_b_brittle_needs_ready");
    }
    // The cleaned victim: fails when, of the polluter and the cleaners,
    // the last to run before it is the polluter.
    let v = at("test_victim_cleaned").unwrap();
    let last = order[..v]
        .iter()
        .rev()
        .find(|t| t.contains("test_polluter_dirty") || t.contains("test_cleaner_"));
    if last.is_some_and(|t| t.contains("test_polluter_dirty")) {
        fail("test_victim_cleaned");
    }
    failed
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn shuffle<T>(items: &mut [T], state: &mut u64) {
    for i in (1..items.len()).rev() {
        let j = (splitmix(state) % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

/// A random order as pytest-randomly draws one: modules, then tests.
fn random_order(tests: &[String], state: &mut u64) -> Vec<String> {
    let mut modules: Vec<&str> = Vec::new();
    for t in tests {
        if !modules.contains(&module_of(t)) {
            modules.push(module_of(t));
        }
    }
    shuffle(&mut modules, state);
    let mut out = Vec::new();
    for m in modules {
        let mut own: Vec<String> = tests
            .iter()
            .filter(|t| module_of(t) == m)
            .cloned()
            .collect();
        shuffle(&mut own, state);
        out.extend(own);
    }
    out
}

/// How many of `orders`, taken in turn, expose every planted test (None:
/// they never do).
fn needed(orders: impl Iterator<Item = Vec<String>>, planted: &BTreeSet<String>) -> Option<usize> {
    let mut seen = BTreeSet::new();
    for (i, o) in orders.enumerate() {
        seen.extend(model(&o));
        if planted.is_subset(&seen) {
            return Some(i + 1);
        }
    }
    None
}

/// The failures real pytest reports for `order`, run through flakelab's
/// ordering plugin in a copy of the fixture.
fn pytest_failures(project: &Path, plugin: &Path, order: &[String], n: usize) -> BTreeSet<String> {
    let list = project.join(format!("order-{n}.txt"));
    std::fs::write(&list, order.join("\n")).unwrap();
    let junit = project.join(format!("junit-{n}.xml"));
    let status = Command::new("python3")
        .args([
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "flakelab_order",
        ])
        .arg(format!("--flakelab-order={}", list.display()))
        .arg(format!("--junitxml={}", junit.display()))
        .arg("tests")
        .current_dir(project)
        .env("PYTHONPATH", plugin)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("pytest runs");
    assert!(
        matches!(status.status.code(), Some(0 | 1)),
        "pytest: {}",
        String::from_utf8_lossy(&status.stdout)
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    let attr = |tag: &str, name: &str| -> String {
        let key = format!(" {name}=\"");
        let at = tag.find(&key).map(|i| i + key.len()).unwrap();
        tag[at..].split('"').next().unwrap().to_string()
    };
    xml.split("<testcase")
        .skip(1)
        .filter(|tag| {
            let end = tag.find("</testcase>").unwrap_or(tag.len());
            tag[..end].contains("<failure")
        })
        .map(|tag| format!("{}::{}", attr(tag, "classname"), attr(tag, "name")))
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn main() {
    let trials: usize = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .find_map(|a| a.parse().ok())
        .unwrap_or(20_000);
    let tests = collected();
    let baseline = model(&tests);
    assert!(
        baseline.is_empty(),
        "the file order fails nothing: {baseline:?}"
    );
    let planted: BTreeSet<String> = [
        "test_brittle::test_b_brittle_needs_ready",
        "test_cleaned::test_victim_cleaned",
        "test_cwd::test_reads_project_file",
        "test_dict::test_mode_is_prod",
        "test_env_victim::test_invoice_in_dollars",
        "test_file::test_basetemp_is_empty",
    ]
    .iter()
    .map(|t| format!("tests.{t}"))
    .collect();
    let systematic = cover(&tests);

    // The model against real pytest, where it is installed.
    let pytest = Command::new("python3")
        .args(["-m", "pytest", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if pytest {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        copy_dir(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/orders-project"),
            &project,
        );
        let plugin = dir.path().join("plugin");
        std::fs::create_dir_all(&plugin).unwrap();
        std::fs::write(
            plugin.join("flakelab_order.py"),
            include_str!("../src/bisect/flakelab_order.py"),
        )
        .unwrap();
        let mut state = 7;
        let sample: Vec<Vec<String>> = (systematic.iter().cloned())
            .chain((0..CHECKED).map(|_| random_order(&tests, &mut state)))
            .collect();
        for (n, order) in sample.iter().enumerate() {
            let real = pytest_failures(&project, &plugin, order, n);
            assert_eq!(real, model(order), "order {n}: {order:?}");
        }
        println!(
            "model checked against real pytest: {} orders ({} systematic, {CHECKED} random), every failure as predicted",
            sample.len(),
            systematic.len()
        );
    } else {
        println!("python3 -m pytest is not available: the model is not checked against real runs");
    }

    let sys_needed = needed(systematic.iter().cloned(), &planted)
        .expect("the systematic orders expose every planted test");
    // The same construction from other file orders (the fixture's tests
    // placed otherwise in their files, the files otherwise named): what
    // the guarantee bounds, not one placement's luck.
    let mut state = 11;
    let placed: Vec<usize> = (0..trials.min(2_000))
        .map(|_| {
            let collected = random_order(&tests, &mut state);
            needed(cover(&collected).into_iter(), &planted).expect("covered")
        })
        .collect();
    let placed_mean = placed.iter().sum::<usize>() as f64 / placed.len() as f64;
    let placed_max = *placed.iter().max().unwrap();
    let mut state = 1;
    let mut counts: Vec<usize> = (0..trials)
        .map(|_| {
            needed(
                std::iter::repeat_with(|| random_order(&tests, &mut state)),
                &planted,
            )
            .unwrap()
        })
        .collect();
    counts.sort_unstable();
    let mean = counts.iter().sum::<usize>() as f64 / trials as f64;
    let p95 = counts[(trials * 95 / 100).min(trials - 1)];
    // Per planted test: the share of random orders that expose it.
    let mut state = 3;
    let sample: Vec<Vec<String>> = (0..trials)
        .map(|_| random_order(&tests, &mut state))
        .collect();
    println!(
        "fixture: {} tests in 7 modules, {} planted order dependences",
        tests.len(),
        planted.len()
    );
    for p in &planted {
        let share = sample.iter().filter(|o| model(o).contains(p)).count() as f64 / trials as f64;
        println!("  {p}: fails in {:.1}% of random orders", share * 100.0);
    }
    println!(
        "systematic orders: {} in all; every planted test exposed after {sys_needed}",
        systematic.len()
    );
    println!(
        "random shuffles ({trials} trials): every planted test exposed after {mean:.1} orders on average, {p95} at the 95th percentile"
    );
    println!(
        "systematic orders from {} other file orders: every planted test exposed after {placed_mean:.1} on average, {placed_max} at most",
        placed.len()
    );
    println!(
        "ratio: random / systematic = {:.2} on average (this file order: {:.2}); random's 95th percentile / systematic's worst = {:.2}",
        mean / placed_mean,
        mean / sys_needed as f64,
        p95 as f64 / placed_max as f64
    );
}
