//! The JUnit reader against real reports: the shared corpus (when present)
//! and the licensed copy in `tests/fixtures/junit/` (always), checked row by
//! row against their MANIFEST.tsv under the corpus README's reference
//! reading; then specific values on a few files.
//!
//! The shared corpus is not part of this repository: it sits beside it
//! (`../shared/junit-corpus`) where flakelab is developed, or wherever
//! `FLAKELAB_JUNIT_CORPUS` says. Its test runs wherever it is found. A clean
//! clone has no corpus, and the test is skipped there even under
//! `FLAKELAB_TEST_REQUIRE_ALL=1` (the corpus is data beside the repository,
//! not a capability of the host); setting `FLAKELAB_JUNIT_CORPUS` makes it
//! required.

use std::path::{Path, PathBuf};

use flakelab::results::junit::{self, Case, CaseOutcome, JunitError, MAX_DETAIL, MAX_MESSAGE};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/junit-corpus");

/// Names the shared corpus's directory, making its test required.
const CORPUS_VAR: &str = "FLAKELAB_JUNIT_CORPUS";

/// Where the shared corpus is, if it is to be checked: the directory
/// `named` by `FLAKELAB_JUNIT_CORPUS` (which must exist), else `default`
/// when it exists, else nowhere (a clean clone).
fn corpus_dir(named: Option<&str>, default: &Path) -> Result<Option<PathBuf>, String> {
    match named.filter(|n| !n.trim().is_empty()) {
        Some(dir) if Path::new(dir).is_dir() => Ok(Some(PathBuf::from(dir))),
        Some(dir) => Err(format!(
            "{CORPUS_VAR}={dir} names no directory: the shared JUnit corpus is required"
        )),
        None => Ok(default.is_dir().then(|| default.to_path_buf())),
    }
}

#[test]
fn the_corpus_is_checked_where_present_and_required_only_when_named() {
    let here = tempfile::tempdir().unwrap();
    let missing = here.path().join("no-corpus");
    // A clean clone: nothing beside the repository, nothing named.
    assert_eq!(corpus_dir(None, &missing), Ok(None));
    assert_eq!(corpus_dir(Some(""), &missing), Ok(None));
    // Beside the repository: found.
    assert_eq!(
        corpus_dir(None, here.path()),
        Ok(Some(here.path().to_path_buf()))
    );
    // Named: used, and required.
    let named = here.path().display().to_string();
    assert_eq!(
        corpus_dir(Some(&named), &missing),
        Ok(Some(here.path().to_path_buf()))
    );
    let err = corpus_dir(Some(&missing.display().to_string()), here.path()).unwrap_err();
    assert!(err.contains("is required"), "{err}");
}
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/junit");

/// Rows in the shared corpus's MANIFEST.tsv.
const CORPUS_ROWS: usize = 117;

/// One MANIFEST.tsv row: the file and its reference counts (`None` when the
/// file is not well-formed).
struct Row {
    file: String,
    expected: Option<Counts>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Counts {
    testcases: usize,
    passed: usize,
    failed: usize,
    errored: usize,
    skipped: usize,
    flaky_reruns: usize,
}

impl Counts {
    fn of(cases: &[Case]) -> Counts {
        let count = |o: CaseOutcome| cases.iter().filter(|c| c.outcome == o).count();
        Counts {
            testcases: cases.len(),
            passed: count(CaseOutcome::Passed),
            failed: count(CaseOutcome::Failed),
            errored: count(CaseOutcome::Errored),
            skipped: count(CaseOutcome::Skipped),
            flaky_reruns: cases.iter().filter(|c| c.reruns > 0).count(),
        }
    }
}

fn manifest(dir: &Path) -> Vec<Row> {
    let text = std::fs::read_to_string(dir.join("MANIFEST.tsv")).expect("MANIFEST.tsv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split('\t').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("no column {name} in MANIFEST.tsv"))
    };
    let (file, ok) = (col("file"), col("parse_ok"));
    let numbers = [
        "testcases",
        "passed",
        "failed",
        "errored",
        "skipped",
        "flaky_reruns",
    ]
    .map(col);
    lines
        .filter(|l| !l.is_empty())
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(f.len(), header.len(), "bad MANIFEST row: {line}");
            let n = |i: usize| -> usize {
                f[numbers[i]]
                    .parse()
                    .unwrap_or_else(|_| panic!("bad count in {line}"))
            };
            let expected = match f[ok] {
                "yes" => Some(Counts {
                    testcases: n(0),
                    passed: n(1),
                    failed: n(2),
                    errored: n(3),
                    skipped: n(4),
                    flaky_reruns: n(5),
                }),
                "no" => None,
                other => panic!("bad parse_ok {other:?} in {line}"),
            };
            Row {
                file: f[file].to_string(),
                expected,
            }
        })
        .collect()
}

/// Checks every MANIFEST row of `dir`; returns (files checked, mismatches).
fn conformance(dir: &Path) -> (usize, Vec<String>) {
    let rows = manifest(dir);
    let mut mismatches = Vec::new();
    let mut checked = 0;
    for row in &rows {
        let path = dir.join(&row.file);
        let got = junit::parse_file(&path);
        checked += 1;
        match (&row.expected, got) {
            (Some(want), Ok(parsed)) => {
                let have = Counts::of(&parsed.cases);
                if have != *want {
                    mismatches.push(format!("{}: want {want:?}, got {have:?}", row.file));
                }
            }
            (Some(_), Err(e)) => mismatches.push(format!("{}: want Ok, got error: {e}", row.file)),
            (None, Ok(parsed)) => mismatches.push(format!(
                "{}: not well-formed, but parsed {} cases (root {:?})",
                row.file,
                parsed.cases.len(),
                parsed.root
            )),
            (None, Err(JunitError::Io { message, .. })) => mismatches.push(format!(
                "{}: want a parse error, got I/O error {message}",
                row.file
            )),
            (None, Err(_)) => {}
        }
    }
    (checked, mismatches)
}

fn assert_conforms(dir: &Path, min_files: usize) -> usize {
    let (checked, mismatches) = conformance(dir);
    assert!(
        mismatches.is_empty(),
        "{} of {checked} files in {} disagree with MANIFEST.tsv:\n{}",
        mismatches.len(),
        dir.display(),
        mismatches.join("\n")
    );
    assert!(
        checked >= min_files,
        "only {checked} files checked in {}",
        dir.display()
    );
    checked
}

#[test]
fn shared_corpus_matches_the_reference_reading() {
    let named = std::env::var(CORPUS_VAR).ok();
    let Some(dir) = corpus_dir(named.as_deref(), Path::new(CORPUS)).unwrap() else {
        eprintln!(
            "skipped: the shared JUnit corpus is not beside this repository (../shared/junit-corpus); set {CORPUS_VAR}=DIR to check it"
        );
        return;
    };
    let dir = dir.as_path();
    assert_eq!(manifest(dir).len(), CORPUS_ROWS, "MANIFEST.tsv rows");
    let checked = assert_conforms(dir, CORPUS_ROWS);
    assert_eq!(checked, CORPUS_ROWS);
}

#[test]
fn fixture_copy_matches_the_reference_reading() {
    let dir = Path::new(FIXTURES);
    let rows = manifest(dir).len();
    let checked = assert_conforms(dir, 90);
    assert_eq!(checked, rows);
}

#[test]
fn every_fixture_file_is_in_the_manifest_and_attributed() {
    let dir = Path::new(FIXTURES);
    let listed: Vec<String> = manifest(dir).into_iter().map(|r| r.file).collect();
    let attribution = std::fs::read_to_string(dir.join("ATTRIBUTION.md")).unwrap();
    let mut on_disk = Vec::new();
    for dialect in std::fs::read_dir(dir).unwrap().flatten() {
        if !dialect.path().is_dir() {
            continue;
        }
        for file in std::fs::read_dir(dialect.path()).unwrap().flatten() {
            let rel = format!(
                "{}/{}",
                dialect.file_name().to_string_lossy(),
                file.file_name().to_string_lossy()
            );
            on_disk.push(rel);
        }
    }
    on_disk.sort();
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(on_disk, sorted, "files on disk vs MANIFEST.tsv");
    for file in &listed {
        assert!(
            attribution.contains(&format!("`{file}`")),
            "{file} missing from ATTRIBUTION.md"
        );
    }
}

fn fixture(file: &str) -> Vec<Case> {
    let path: PathBuf = Path::new(FIXTURES).join(file);
    junit::parse_file(&path)
        .unwrap_or_else(|e| panic!("{file}: {e}"))
        .cases
}

fn case<'a>(cases: &'a [Case], name: &str) -> &'a Case {
    cases
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no case {name}"))
}

#[test]
fn flaky_only_cases_failed_on_their_first_attempt() {
    for (file, name) in [
        ("surefire/flaky-quarkus.xml", "testFlaky"),
        ("surefire/rerun-flaky.xml", "testApp"),
        ("android/marathon-flaky-failure.xml", "testFlakyFailure"),
    ] {
        let cases = fixture(file);
        let c = case(&cases, name);
        assert_eq!(c.outcome, CaseOutcome::Passed, "{file}");
        assert!(
            matches!(c.first_attempt, CaseOutcome::Failed | CaseOutcome::Errored),
            "{file}: first attempt {:?}",
            c.first_attempt
        );
        assert!(c.passed_on_rerun(), "{file}");
        assert!(c.reruns > 0, "{file}");
    }
    let quarkus = fixture("surefire/flaky-quarkus.xml");
    let flaky = case(&quarkus, "testFlaky");
    assert_eq!(flaky.reruns, 4);
    assert_eq!(flaky.first_attempt, CaseOutcome::Failed);
    assert_eq!(
        flaky.message.as_deref(),
        Some("expected: <1> but was: <0>"),
        "message of the first flakyFailure"
    );
    let stable = case(&quarkus, "testStable");
    assert_eq!(stable.first_attempt, CaseOutcome::Passed);
    assert!(!stable.passed_on_rerun());

    let rerun = fixture("surefire/rerun-flaky.xml");
    assert_eq!(rerun[0].reruns, 2);
    assert_eq!(rerun[0].message.as_deref(), Some("obvious fail"));
}

#[test]
fn failed_after_reruns_is_failed_on_both_readings() {
    let cases = fixture("surefire/rerun-always-fail.xml");
    assert_eq!(cases.len(), 1);
    let c = &cases[0];
    assert_eq!(c.outcome, CaseOutcome::Failed);
    assert_eq!(c.first_attempt, CaseOutcome::Failed);
    assert_eq!(c.reruns, 3);
    assert!(!c.passed_on_rerun());
    assert_eq!(c.message.as_deref(), Some("built to fail"));
    let detail = c.detail.as_deref().unwrap();
    assert!(
        detail.starts_with("junit.framework.AssertionFailedError: built to fail"),
        "{detail}"
    );
}

#[test]
fn quick_junit_report_has_every_rerun_kind() {
    let cases = fixture("nextest/quick-junit-basic-report.xml");
    let outcomes: Vec<(&str, CaseOutcome, CaseOutcome, u32)> = cases
        .iter()
        .map(|c| (c.name.as_str(), c.outcome, c.first_attempt, c.reruns))
        .collect();
    use CaseOutcome::*;
    assert_eq!(
        outcomes,
        [
            ("testcase0", Passed, Passed, 0),
            ("testcase1", Failed, Failed, 0),
            ("testcase2", Errored, Errored, 0),
            ("testcase3", Skipped, Skipped, 0),
            ("testcase4", Passed, Failed, 2),
            ("testcase5", Failed, Failed, 2),
            ("testcase6", Passed, Passed, 0),
            ("testcase7", Failed, Failed, 2),
        ]
    );
    let flaky = case(&cases, "testcase4");
    assert!(flaky.passed_on_rerun());
    assert_eq!(
        flaky.message, None,
        "flakyFailure without a message attribute"
    );
    assert_eq!(
        flaky.detail.as_deref(),
        Some("this is a flaky failure description")
    );
    let c1 = case(&cases, "testcase1");
    assert_eq!(c1.message.as_deref(), Some("testcase1-message"));
    assert_eq!(
        c1.detail.as_deref(),
        Some("this is the failure description")
    );
    assert_eq!(c1.time_s, Some(4.242));
    assert_eq!(c1.suite, "testsuite0");
    assert_eq!(c1.id(), "testsuite0::testcase1");
    let c7 = case(&cases, "testcase7");
    assert_eq!(
        c7.message.as_deref(),
        Some("test passed on attempt 4/4 but is configured to fail when flaky")
    );
    assert_eq!(c7.detail, None);
}

#[test]
fn pytest_failure_message_and_detail() {
    let cases = fixture("pytest/pytest-testsuites-name-properties.xml");
    let c = case(&cases, "test_always_fail");
    assert_eq!(c.outcome, CaseOutcome::Failed);
    assert_eq!(c.message.as_deref(), Some("assert False"));
    assert_eq!(
        c.detail.as_deref(),
        Some(
            "def test_always_fail():\n        > assert False\n        E assert False\n\n        \
             tests/test_lib.py:25: AssertionError\n      "
        )
    );
    assert_eq!(c.suite, "pytest");
    assert_eq!(c.classname, "tests.test_lib");
    assert_eq!(c.time_s, Some(0.0));
}

#[test]
fn pytest_parametrised_ids_share_a_family() {
    let cases = fixture("pytest/pytest-testsuites-name-properties.xml");
    let p1 = case(&cases, "test_parameterized[param1]");
    let p2 = case(&cases, "test_parameterized[param2]");
    assert_eq!(p1.id(), "tests.test_lib::test_parameterized[param1]");
    assert_eq!(
        junit::family_id(&p1.id()),
        "tests.test_lib::test_parameterized"
    );
    assert_eq!(junit::family_id(&p1.id()), junit::family_id(&p2.id()));
    let plain = case(&cases, "test_always_pass");
    assert_eq!(junit::family_id(&plain.id()), plain.id());
}

#[test]
fn codeception_class_attribute_is_the_classname() {
    let cases = fixture("phpunit/codeception-class-attr.xml");
    assert_eq!(cases.len(), 3);
    assert_eq!(
        cases[0].classname,
        r"CodeceptionAcceptance\Bets\GuestBrowsingBetViewPageCest"
    );
    assert_eq!(
        cases[0].id(),
        r"CodeceptionAcceptance\Bets\GuestBrowsingBetViewPageCest::assertBetViewPage"
    );
    assert_eq!(cases[1].outcome, CaseOutcome::Failed);
    assert_eq!(
        cases[1].message, None,
        "failure without a message attribute"
    );
    assert!(cases[1]
        .detail
        .as_deref()
        .unwrap()
        .starts_with("GuestBrowsingProphetBetsPageCest: Navigate and\n"));
}

#[test]
fn cyrillic_names_are_decoded() {
    let cases = fixture("misc/behave-cyrillic.xml");
    assert_eq!(cases.len(), 1);
    assert_eq!(
        cases[0].name,
        "Проверка доступности эндпоинта получения сессий"
    );
    assert_eq!(
        cases[0].classname,
        "sessions.sessions_api.Доступность эндпоинта получения списка сессий"
    );
}

#[test]
fn raw_newlines_in_attributes_become_spaces_and_references_stay() {
    // Raw newlines in a value are normalised to spaces...
    let cases = fixture("surefire/failing-junit4.xml");
    let c = case(&cases, "defaultTestValueIs_Value");
    assert_eq!(
        c.message.as_deref(),
        Some(" Expected: \"wrong\"      got: \"value\" ")
    );
    // ...but `&#xD;&#xA;` references are real characters (BOM file).
    let cases = fixture("dotnet/junit-testlogger-bom.xml");
    let c = case(&cases, "TestData(2,\"A\")");
    assert_eq!(
        c.message.as_deref(),
        Some("  failing for second case\r\n  Expected: not equal to 2\r\n  But was:  2\r\n")
    );
    assert_eq!(c.time_s, Some(0.0205739));
    assert_eq!(
        junit::family_id(&c.id()),
        "JUnit.Xml.TestLogger.NetFull.Tests.ParametrizedTestCases::TestData"
    );
}

#[test]
fn times_are_tolerant() {
    let commas = fixture("misc/time-with-commas.xml");
    assert_eq!(commas[0].time_s, Some(10.0));
    let dot = fixture("gtest/trunk-time-trailing-dot.xml");
    assert_eq!(dot[0].time_s, Some(0.0));
    let none = fixture("misc/nette-tester.xml");
    assert!(none.iter().all(|c| c.time_s.is_none()));
}

#[test]
fn detail_is_capped() {
    // The corpus file has 30 bodies of 5-10 KB; it is not in the fixtures
    // (no licence), so a generated report is checked always.
    let karma = Path::new(CORPUS).join("karma/multiple-failures-per-case.xml");
    if karma.exists() {
        let cases = junit::parse_file(&karma).unwrap().cases;
        assert_eq!(cases.len(), 16);
        for c in &cases {
            if let Some(d) = &c.detail {
                assert!(d.len() <= MAX_DETAIL, "{} bytes", d.len());
            }
        }
    }
    let body = "x".repeat(3 * MAX_DETAIL);
    let message = "m".repeat(2 * MAX_MESSAGE);
    let xml = format!(
        "<testsuite><testcase name=\"t\"><failure message=\"{message}\">{body}</failure>\
         </testcase></testsuite>"
    );
    let cases = junit::parse(xml.as_bytes()).unwrap().cases;
    let detail = cases[0].detail.as_deref().unwrap();
    assert!(detail.starts_with(&body[..MAX_DETAIL]));
    assert!(detail[MAX_DETAIL..].contains(&format!("{} more bytes dropped", 2 * MAX_DETAIL)));
    assert_eq!(cases[0].message.as_deref().unwrap().len(), MAX_MESSAGE);
}

#[test]
fn malformed_reports_say_why() {
    let dir = Path::new(FIXTURES).join("malformed");
    let err = |f: &str| junit::parse_file(&dir.join(f)).unwrap_err();
    assert_eq!(err("empty-0-bytes.xml"), JunitError::Empty);
    assert!(matches!(
        err("truncated-pytest.xml"),
        JunitError::Malformed { .. }
    ));
    let msg = err("utf16-bad-encoding-label.xml").to_string();
    assert!(msg.contains("UTF-16 LE"), "{msg}");
    let msg = err("lt-in-attribute.xml").to_string();
    assert!(msg.contains('<'), "{msg}");
    let missing = junit::parse_file(&dir.join("no-such-file.xml")).unwrap_err();
    assert!(
        matches!(&missing, JunitError::Io { path, .. } if path.ends_with("no-such-file.xml")),
        "{missing:?}"
    );
}
