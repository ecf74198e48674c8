//! `flakelab demo` end to end: every cell of the standard matrix runs on the
//! bundled suite, and each flips its planted test, read per test from the
//! suite's JUnit report. The load plant looks for busy threads beside it
//! rather than timing itself, so the host's load cannot fail the baseline.

use super::{cell, Lab};

/// k of N of one test in one cell (0 of N when the test never failed there).
fn test_k(report: &serde_json::Value, cell_name: &str, id: &str) -> (u64, u64) {
    let c = cell(report, cell_name);
    let n = c["n"].as_u64().unwrap();
    let k = c["tests"]
        .as_array()
        .unwrap_or_else(|| panic!("no per-test rows in {cell_name}: {c}"))
        .iter()
        .find(|t| t["id"] == id)
        .map_or(0, |t| t["k"].as_u64().unwrap());
    (k, n)
}

#[test]
fn demo_runs_every_cell_and_each_flips_its_planted_test() {
    let lab = Lab::new();
    // Two runs a cell: the default seed's first shuffle run puts the
    // polluter first, its second does not (src/onboard/demo.rs holds this).
    let out = lab.run(&["demo", "-n", "2", "--format", "json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["runner"], "flakelab-demo", "{report}");
    assert_eq!(report["seed"].as_u64(), Some(821), "the demo's fixed seed");
    for c in report["cells"].as_array().unwrap() {
        assert_eq!(c["applied"], true, "every cell applies: {c}");
        assert_eq!(c["n"].as_u64(), Some(2), "{c}");
    }
    let planted = [
        ("tz-kiritimati", "zone::report_header_is_utc", 2),
        ("tz-pago-pago", "zone::report_header_is_utc", 2),
        ("tz-kathmandu", "zone::report_header_is_utc", 2),
        ("clock-next-year", "clock::licence_not_expired", 2),
        ("no-network", "net::exchange_rates_route", 2),
        ("shuffled-order", "state::invoice_in_dollars", 1),
        ("workers-2x", "export::writes_daily_report", 2),
        ("cpu-stress-2x", "load::worker_meets_deadline", 2),
    ];
    for (cell_name, id, k) in planted {
        assert_eq!(test_k(&report, cell_name, id), (k, 2), "{cell_name} {id}");
        assert_eq!(test_k(&report, "baseline", id), (0, 2), "baseline {id}");
    }
    // What does not move: the control beside the network plant, the
    // weekly export (it wins the shared file), the polluter itself.
    for (cell_name, id) in [
        ("no-network", "net::loopback_echo"),
        ("workers-2x", "export::writes_weekly_report"),
        ("shuffled-order", "state::sets_euro_default"),
        ("workers-2x", "state::invoice_in_dollars"),
        ("cpu-stress=0", "load::worker_meets_deadline"),
    ] {
        assert_eq!(test_k(&report, cell_name, id), (0, 2), "{cell_name} {id}");
    }
    // Applied (above) is the proof from the suite's own output: each
    // shuffle run printed the seed it was given, each workers run its two
    // threads (the recipe's seed_regex and proof_regex).
    for line in [
        "shuffled-order   state::invoice_in_dollars",
        "workers-2x       export::writes_daily_report",
    ] {
        assert!(stderr.contains(line), "the legend names `{line}`: {stderr}");
    }
}

#[test]
fn the_suite_prints_the_seed_and_workers_it_was_given() {
    let lab = Lab::new();
    let suite = |args: &[&str]| {
        let mut c = lab.cmd();
        c.args(["__demo-suite", "--project"])
            .arg(lab.path())
            .args(args);
        let out = c.output().unwrap();
        (out.status.code(), String::from_utf8(out.stdout).unwrap())
    };
    let (code, text) = suite(&["--only", "export::", "--workers", "2"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.starts_with("workers: 2 (threads)\n"), "{text}");
    assert!(
        text.contains("FAIL export::writes_daily_report: report.csv holds"),
        "{text}"
    );
    let (code, text) = suite(&["--only", "export::", "-n", "1"]);
    assert_eq!(code, Some(0), "{text}");
    let (_, text) = suite(&["--only", "state::", "--seed", "42"]);
    assert!(text.starts_with("seed: 42\n"), "{text}");
    let (_, text) = suite(&["--only", "math::", "--shuffle"]);
    assert!(text.starts_with("seed: "), "{text}");
    let (code, _) = suite(&["--seed", "1", "--shuffle"]);
    assert_eq!(code, Some(2), "a seed and --shuffle conflict");
}

/// The demo's runner runs a given order (`--order FILE`): the bisect its
/// report hands over for the order victim names the polluter.
#[test]
fn the_demos_bisect_hint_names_the_polluter() {
    let lab = Lab::new();
    let out = lab.run(&["demo", "-n", "2", "--format", "json", "--keep"]);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let kept = stderr
        .lines()
        .find_map(|l| l.strip_prefix("flakelab demo: kept "))
        .and_then(|l| l.split(" (store").next())
        .unwrap_or_else(|| panic!("{stderr}"))
        .to_string();
    let _cleanup = KeptDir(std::path::PathBuf::from(&kept));
    let row = cell(&report, "systematic-orders")["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "state::invoice_in_dollars")
        .cloned()
        .unwrap_or_else(|| panic!("{report}"));
    let run = row["first_failure"].as_str().unwrap();
    let found = lab
        .cmd()
        .current_dir(&kept)
        .args([
            "bisect",
            "--format",
            "json",
            "--no-cleaners",
            "--confirm",
            "1",
            run,
            "--test",
            "state::invoice_in_dollars",
        ])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&found.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&found.stderr)));
    assert_eq!(json["kind"], "polluted", "{json}");
    assert_eq!(
        json["polluters"],
        serde_json::json!(["state::sets_euro_default"]),
        "{json}"
    );
}

/// Removes the demo's kept directory.
struct KeptDir(std::path::PathBuf);

impl Drop for KeptDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn report_after_a_plain_demo_points_at_keep_and_a_kept_demo_says_how_to_report() {
    let lab = Lab::new();
    let out = lab.run(&["demo", "-n", "1"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let out = lab.run(&["report"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no store at"), "{err}");
    assert!(err.contains("`flakelab demo --keep`"), "{err}");
    let out = lab.run(&["demo", "-n", "1", "--keep"]);
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err
        .lines()
        .find(|l| l.starts_with("flakelab demo: kept "))
        .unwrap_or_else(|| panic!("{err}"));
    let kept = line["flakelab demo: kept ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .to_string();
    assert!(
        line.contains(&format!("`flakelab report -C {kept}`")),
        "{line}"
    );
    let out = lab.run(&["report", "-C", &kept, "--format", "json"]);
    let removed = std::fs::remove_dir_all(&kept);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["cells"][0]["name"], "baseline", "{report}");
    removed.unwrap();
}
