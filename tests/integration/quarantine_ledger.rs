//! The quarantine ledger (issue #37 item 5): `quarantine --add` writes an
//! entry with its owner, ticket and expiry; `check` fails on an expired one
//! and names its owner; a hand edit that breaks the file is named; and
//! `quarantine --release` lets an entry leave only once the clean runs since
//! its fix, in the lab (the fake executor) and ingested from CI (JUnit
//! reports through `flakelab ingest`), bound its rate below the target (298
//! clean runs stay, 299 leave, at 1% and 95%), each CI report counted once
//! and a failure from either place keeping it in.

use super::fake::{code, fake, script};
use super::Lab;

const LEDGER: &str = "flakelab-quarantine.toml";

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn an_expired_entry_fails_check_with_its_owner_named() {
    let lab = Lab::new();
    std::fs::write(
        lab.path().join("junit.xml"),
        "<testsuite><testcase classname='pkg.mod' name='test_x'/></testsuite>",
    )
    .unwrap();
    let ingest = lab.run(&["ingest", "junit.xml", "--no-detect", "--commit", "abc"]);
    assert_eq!(code(&ingest), 0, "{}", text(&ingest));
    assert_eq!(code(&lab.run(&["check", "--write-baseline"])), 0);
    let check = lab.run(&["check"]);
    assert_eq!(code(&check), 0, "{}", text(&check));

    let add = lab.run(&[
        "quarantine",
        "--add",
        "pkg.mod::test_x",
        "--owner",
        "alice",
        "--ticket",
        "SHOP-12",
        "--expires",
        "30d",
        "--evidence",
        "failed on main twice",
    ]);
    assert_eq!(code(&add), 0, "{}", text(&add));
    // Not expired yet: the gate passes.
    let check = lab.run(&["check"]);
    assert_eq!(code(&check), 0, "{}", text(&check));

    // Expired (as a hand edit leaves it): the gate fails and names the owner.
    let ledger = lab.path().join(LEDGER);
    let written = std::fs::read_to_string(&ledger).unwrap();
    let added = written
        .lines()
        .find(|l| l.starts_with("added = "))
        .unwrap()
        .to_string();
    let expires = written
        .lines()
        .find(|l| l.starts_with("expires = "))
        .unwrap()
        .to_string();
    std::fs::write(
        &ledger,
        written
            .replace(&added, "added = \"2000-01-01\"")
            .replace(&expires, "expires = \"2000-02-01\""),
    )
    .unwrap();
    let check = lab.run(&["check"]);
    assert_eq!(code(&check), 1, "{}", text(&check));
    assert!(
        text(&check).contains(
            "quarantine expired: pkg.mod::test_x on 2000-02-01 (owner alice, ticket SHOP-12)"
        ),
        "{}",
        text(&check)
    );

    // A broken hand edit is named, not ignored.
    std::fs::write(
        &ledger,
        written.replace("owner = \"alice\"", "owner = \"\""),
    )
    .unwrap();
    let check = lab.run(&["check"]);
    assert_eq!(code(&check), 2, "{}", text(&check));
    assert!(
        text(&check).contains("test `pkg.mod::test_x`: owner is empty"),
        "{}",
        text(&check)
    );
}

#[test]
fn release_takes_299_clean_runs_since_the_fix_for_1_percent_at_95() {
    let lab = Lab::new();
    let s = script(
        &lab,
        "[[run]]\njunit = \"<testsuite><testcase classname='pkg.mod' name='test_x'/></testsuite>\"\n",
    );
    let add = lab.run(&[
        "quarantine",
        "--add",
        "pkg.mod::test_x",
        "--owner",
        "alice",
        "--ticket",
        "SHOP-12",
        "--expires",
        "30d",
        "--evidence",
        "failed on main twice",
    ]);
    assert_eq!(code(&add), 0, "{}", text(&add));
    let runs = |n: &str| {
        let out = fake(
            &lab,
            &s,
            &[
                "run",
                "--no-sham",
                "-n",
                n,
                "--",
                "subject",
                "--junit={junit}",
            ],
        );
        assert_eq!(code(&out), 0, "{}", text(&out));
    };
    let release = || {
        let out = lab.run(&["quarantine", "--release"]);
        assert_eq!(code(&out), 0, "{}", text(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    runs("298");
    let said = release();
    assert!(said.starts_with("stays:"), "{said}");
    assert!(
        said.contains("0 of 298 runs since") && said.contains("(clean: 298 lab, 0 CI)"),
        "{said}"
    );
    assert!(said.contains("1 more clean runs"), "{said}");
    runs("1");
    let said = release();
    assert!(
        said.starts_with("may leave: pkg.mod::test_x (owner alice)"),
        "{said}"
    );
    assert!(
        said.contains("0 of 299 runs since") && said.contains("(clean: 299 lab, 0 CI)"),
        "{said}"
    );
}

/// Quarantines `pkg.mod::test_x` (added today, so CI reports ingested from
/// now on count toward its release).
fn quarantine_x(lab: &Lab) {
    let add = lab.run(&[
        "quarantine",
        "--add",
        "pkg.mod::test_x",
        "--owner",
        "alice",
        "--ticket",
        "SHOP-12",
        "--expires",
        "30d",
        "--evidence",
        "failed on main twice",
    ]);
    assert_eq!(code(&add), 0, "{}", text(&add));
}

/// Writes `file`: a JUnit report with `passes` passing executions of
/// `pkg.mod::test_x` (as `-count=N` leaves them) and `failures` failing
/// ones; ingests it on `commit` and returns what ingest printed.
fn ingest(lab: &Lab, file: &str, commit: &str, passes: usize, failures: usize) -> String {
    let mut xml = String::from("<testsuite>");
    for _ in 0..passes {
        xml.push_str("<testcase classname='pkg.mod' name='test_x'/>");
    }
    for _ in 0..failures {
        xml.push_str(
            "<testcase classname='pkg.mod' name='test_x'><failure message='boom'/></testcase>",
        );
    }
    xml.push_str("</testsuite>");
    std::fs::write(lab.path().join(file), xml).unwrap();
    let out = lab.run(&["ingest", file, "--no-detect", "--commit", commit]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    String::from_utf8(out.stdout).unwrap()
}

fn release(lab: &Lab) -> String {
    let out = lab.run(&["quarantine", "--release"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn clean_ci_runs_ingested_since_the_fix_count_with_the_labs_each_report_once() {
    let lab = Lab::new();
    quarantine_x(&lab);
    ingest(&lab, "a.xml", "c1", 150, 0);
    ingest(&lab, "b.xml", "c2", 148, 0);
    // The same report ingested again is the same execution: not counted twice.
    let again = ingest(&lab, "a.xml", "c1", 150, 0);
    assert!(again.contains("1 already recorded"), "{again}");
    let said = release(&lab);
    assert!(said.starts_with("stays:"), "{said}");
    assert!(
        said.contains("0 of 298 runs since") && said.contains("(clean: 0 lab, 298 CI)"),
        "{said}"
    );
    assert!(said.contains("1 more clean runs"), "{said}");

    // One clean run in the lab makes 299.
    let s = script(
        &lab,
        "[[run]]\njunit = \"<testsuite><testcase classname='pkg.mod' name='test_x'/></testsuite>\"\n",
    );
    let run = fake(
        &lab,
        &s,
        &[
            "run",
            "--no-sham",
            "-n",
            "1",
            "--",
            "subject",
            "--junit={junit}",
        ],
    );
    assert_eq!(code(&run), 0, "{}", text(&run));
    let said = release(&lab);
    assert!(
        said.starts_with("may leave: pkg.mod::test_x (owner alice)"),
        "{said}"
    );
    assert!(
        said.contains("0 of 299 runs since") && said.contains("(clean: 1 lab, 298 CI)"),
        "{said}"
    );
}

#[test]
fn a_ci_failure_after_the_fix_keeps_the_entry_in() {
    let lab = Lab::new();
    quarantine_x(&lab);
    ingest(&lab, "clean.xml", "c1", 299, 0);
    let said = release(&lab);
    assert!(said.starts_with("may leave:"), "{said}");
    assert!(said.contains("(clean: 0 lab, 299 CI)"), "{said}");
    // A later CI report where it failed once (and passed twice).
    ingest(&lab, "late.xml", "c2", 2, 1);
    let said = release(&lab);
    assert!(said.starts_with("stays:"), "{said}");
    assert!(
        said.contains("1 of 302 runs since")
            && said.contains("(clean: 0 lab, 301 CI; failed: 0 lab, 1 CI)"),
        "{said}"
    );
    assert!(
        said.contains("a failure since the fix needs its own fix"),
        "{said}"
    );
}

#[test]
fn the_ledgers_entries_are_in_the_runners_quarantine_lists() {
    let lab = Lab::new();
    std::fs::write(
        lab.path().join("junit.xml"),
        "<testsuite><testcase classname='tests.test_a' name='test_ok'/></testsuite>",
    )
    .unwrap();
    let ingest = lab.run(&["ingest", "junit.xml", "--no-detect", "--commit", "abc"]);
    assert_eq!(code(&ingest), 0, "{}", text(&ingest));
    let list = lab.run(&["quarantine", "--format", "pytest"]);
    assert_eq!(code(&list), 0, "{}", text(&list));
    assert_eq!(
        String::from_utf8_lossy(&list.stdout),
        "",
        "nothing proven yet"
    );
    let add = lab.run(&[
        "quarantine",
        "--add",
        "tests.test_a::test_slow",
        "--owner",
        "bob",
        "--ticket",
        "T-9",
        "--expires",
        "7d",
        "--evidence",
        "times out on the ARM runners",
    ]);
    assert_eq!(code(&add), 0, "{}", text(&add));
    let list = lab.run(&["quarantine", "--format", "pytest"]);
    assert_eq!(code(&list), 0, "{}", text(&list));
    assert!(
        String::from_utf8_lossy(&list.stdout).contains("tests/test_a.py::test_slow"),
        "{}",
        text(&list)
    );
    let yaml = lab.run(&["quarantine", "--format", "yaml"]);
    assert!(
        String::from_utf8_lossy(&yaml.stdout).contains("(ledger: owner bob, ticket T-9"),
        "{}",
        text(&yaml)
    );
}

#[test]
fn ci_runs_compact_folded_have_no_day_and_are_said_not_counted() {
    let lab = Lab::new();
    quarantine_x(&lab);
    ingest(&lab, "clean.xml", "c1", 299, 0);
    assert!(release(&lab).starts_with("may leave:"));
    let compact = lab.run(&["compact"]);
    assert_eq!(code(&compact), 0, "{}", text(&compact));
    let out = lab.run(&["quarantine", "--release"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.starts_with("stays:"), "{said}");
    assert!(said.contains("(clean: 0 lab, 0 CI)"), "{said}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("pkg.mod::test_x: 299 CI observation(s) carry no ingest day"),
        "{err}"
    );
}
