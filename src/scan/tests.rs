//! The scanner's own tests: the planted fixtures (every class once, a
//! near-miss per class) give exactly the planted set; the walk skips
//! vendored, generated and nested-worktree trees; the ledger is checked
//! both ways with paths normalised.

use std::path::{Path, PathBuf};

use super::ledger::{self, Entry, Ledger, LEDGER_SCHEMA};
use super::*;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn opts() -> ScanOptions {
    ScanOptions {
        today: "2026-12-01".parse().unwrap(),
        exclude: Vec::new(),
    }
}

/// (file:line, symbol, class, bucket, perturbation or "-").
fn set(root: &Path) -> Vec<(String, String, String, String, String)> {
    scan(root, &opts())
        .unwrap()
        .findings
        .into_iter()
        .map(|f| {
            (
                format!("{}:{}", f.file, f.line),
                f.symbol,
                f.class.name().to_string(),
                f.bucket,
                f.perturbation.unwrap_or_else(|| "-".into()),
            )
        })
        .collect()
}

fn row(
    site: &str,
    symbol: &str,
    class: &str,
    bucket: &str,
    p: &str,
) -> (String, String, String, String, String) {
    (
        site.into(),
        symbol.into(),
        class.into(),
        bucket.into(),
        p.into(),
    )
}

#[test]
fn python_fixture_reports_exactly_the_planted_set() {
    let f = "tests/test_planted.py";
    assert_eq!(
        set(&fixture("scan-python")),
        vec![
            row(
                &format!("{f}:13"),
                "today_label",
                "clock",
                "calendar-read",
                "tz=Pacific/Kiritimati"
            ),
            row(
                &format!("{f}:21"),
                "test_licence_valid",
                "clock",
                "time-bomb",
                "faketime=@2029-07-01 12:00:00"
            ),
            row(
                &format!("{f}:26"),
                "test_random_pick",
                "random",
                "unseeded-draw",
                "-"
            ),
            row(
                &format!("{f}:31"),
                "test_nothing_fires",
                "sleep",
                "sleep-then-assert",
                "cpu-stress"
            ),
            row(
                &format!("{f}:36"),
                "test_remote_status",
                "network",
                "remote-address",
                "netns"
            ),
            row(
                &format!("{f}:41"),
                "test_env_leak",
                "global-state",
                "env-write",
                "shuffle"
            ),
            row(
                &format!("{f}:47"),
                "test_fixed_port",
                "host-resource",
                "fixed-port",
                "-"
            ),
            row(
                &format!("{f}:52"),
                "test_set_order",
                "order",
                "hash-order",
                "hashseed-random"
            ),
        ]
    );
}

#[test]
fn go_fixture_reports_exactly_the_planted_set() {
    let f = "planted_test.go";
    assert_eq!(
        set(&fixture("scan-go")),
        vec![
            row(
                &format!("{f}:16"),
                "TestClockToday",
                "clock",
                "calendar-read",
                "tz=Pacific/Kiritimati"
            ),
            row(
                &format!("{f}:23"),
                "TestLicence",
                "clock",
                "time-bomb",
                "faketime=@2029-07-01 12:00:00"
            ),
            row(
                &format!("{f}:30"),
                "TestRandomPick",
                "random",
                "unseeded-draw",
                "-"
            ),
            row(
                &format!("{f}:38"),
                "TestSleepThenAssert",
                "sleep",
                "sleep-then-assert",
                "cpu-stress"
            ),
            row(
                &format!("{f}:49"),
                "TestUnboundedPoll",
                "sleep",
                "unbounded-poll",
                "-"
            ),
            row(
                &format!("{f}:54"),
                "TestRemote",
                "network",
                "remote-address",
                "netns"
            ),
            row(
                &format!("{f}:62"),
                "TestEnvLeak",
                "global-state",
                "env-write",
                "shuffle"
            ),
            row(
                &format!("{f}:69"),
                "TestFixedPort",
                "host-resource",
                "fixed-port",
                "-"
            ),
            row(
                &format!("{f}:79"),
                "TestMapOrder",
                "order",
                "map-order",
                "-"
            ),
        ]
    );
}

#[test]
fn js_fixture_reports_exactly_the_planted_set() {
    let f = "tests/planted.test.js";
    assert_eq!(
        set(&fixture("scan-js")),
        vec![
            row(
                &format!("{f}:6"),
                "labels today",
                "clock",
                "calendar-read",
                "tz=Pacific/Kiritimati"
            ),
            row(
                &format!("{f}:11"),
                "licence still valid",
                "clock",
                "time-bomb",
                "faketime=@2029-07-01 12:00:00"
            ),
            row(
                &format!("{f}:16"),
                "random pick",
                "random",
                "unseeded-draw",
                "-"
            ),
            row(
                &format!("{f}:22"),
                "nothing fires",
                "sleep",
                "sleep-then-assert",
                "cpu-stress"
            ),
            row(
                &format!("{f}:27"),
                "calls out",
                "network",
                "remote-address",
                "netns"
            ),
            row(
                &format!("{f}:32"),
                "sets env",
                "global-state",
                "env-write",
                "shuffle"
            ),
            row(
                &format!("{f}:37"),
                "listens",
                "host-resource",
                "fixed-port",
                "-"
            ),
            row(
                &format!("{f}:43"),
                "formats",
                "order",
                "locale-format",
                "locale=POSIX"
            ),
        ]
    );
}

#[test]
fn rust_fixture_reports_exactly_the_planted_set() {
    let f = "tests/planted.rs";
    assert_eq!(
        set(&fixture("scan-rust")),
        vec![
            row(
                &format!("{f}:13"),
                "clock_today",
                "clock",
                "calendar-read",
                "tz=Pacific/Kiritimati"
            ),
            row(
                &format!("{f}:19"),
                "licence_valid",
                "clock",
                "time-bomb",
                "faketime=@2029-07-01 12:00:00"
            ),
            row(
                &format!("{f}:25"),
                "random_pick",
                "random",
                "unseeded-draw",
                "-"
            ),
            row(
                &format!("{f}:31"),
                "sleep_then_assert",
                "sleep",
                "sleep-then-assert",
                "cpu-stress"
            ),
            row(
                &format!("{f}:37"),
                "remote",
                "network",
                "remote-address",
                "netns"
            ),
            row(
                &format!("{f}:43"),
                "env_leak",
                "global-state",
                "env-write",
                "shuffle"
            ),
            row(
                &format!("{f}:49"),
                "fixed_port",
                "host-resource",
                "fixed-port",
                "-"
            ),
            row(&format!("{f}:56"), "hash_order", "order", "hash-order", "-"),
        ]
    );
}

#[test]
fn a_helper_reaches_the_test_that_calls_it_and_the_coverage_block_counts_every_class() {
    let s = scan(&fixture("scan-python"), &opts()).unwrap();
    let today = &s.findings[0];
    assert_eq!(
        today.tests,
        vec!["tests/test_planted.py::test_today_label".to_string()]
    );
    assert_eq!(today.reach, "static");
    assert_eq!(today.status, "unconfirmed");
    assert!(
        today
            .command
            .starts_with("flakelab run -n 20 -p 'tz=Pacific/Kiritimati' -p 'tz=Pacific/Pago_Pago' -- python3 -m pytest"),
        "{}",
        today.command
    );
    let classes: Vec<_> = s.coverage.iter().map(|c| c.class).collect();
    assert_eq!(classes, Class::ALL.to_vec());
    // Sites the near-misses hold are counted, not reported: the sleeps of
    // the two bounded polls, the frozen clock's read and date.
    let sleep = s.coverage.iter().find(|c| c.class == Class::Sleep).unwrap();
    assert_eq!((sleep.sites, sleep.findings), (3, 1));
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

const PLANTED_SLEEP: &str =
    "import time\n\ndef test_x():\n    time.sleep(0.1)\n    assert not False\n";

#[test]
fn vendored_generated_and_nested_worktree_trees_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "tests/test_a.py", PLANTED_SLEEP);
    write(root, "vendor/lib/test_v.py", PLANTED_SLEEP);
    write(root, "node_modules/x/test_n.py", PLANTED_SLEEP);
    write(
        root,
        "tests/test_gen.py",
        &format!("# Code generated by gen. DO NOT EDIT.\n{PLANTED_SLEEP}"),
    );
    // A nested git worktree: a second checkout holding another branch's copy.
    write(
        root,
        ".claude/worktrees/other/.git",
        "gitdir: /elsewhere/.git/worktrees/other\n",
    );
    write(
        root,
        ".claude/worktrees/other/tests/test_a.py",
        PLANTED_SLEEP,
    );
    let s = scan(root, &opts()).unwrap();
    let files: Vec<_> = s.findings.iter().map(|f| f.file.as_str()).collect();
    assert_eq!(files, vec!["tests/test_a.py"]);
    let skipped: Vec<_> = s
        .skipped
        .iter()
        .map(|k| (k.path.as_str(), k.reason.as_str()))
        .collect();
    assert_eq!(
        skipped,
        vec![
            (
                ".claude/worktrees/other",
                "nested git worktree or repository"
            ),
            ("node_modules", "vendored"),
            ("tests/test_gen.py", "generated"),
            ("vendor", "vendored"),
        ]
    );
}

#[test]
fn a_trailing_comment_never_bounds_or_unbounds_a_loop() {
    let dir = tempfile::tempdir().unwrap();
    let go = "package p\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc ready() bool { return true }\n\n\
func TestBounded(t *testing.T) {\n\tfor i := 0; i < 60; i++ { // SQL Server may still be starting\n\t\tif ready() {\n\t\t\tbreak\n\t\t}\n\t\ttime.Sleep(time.Second)\n\t}\n}\n\n\
func TestUnbounded(t *testing.T) {\n\tfor { // keep going until the deadline\n\t\tif ready() {\n\t\t\tbreak\n\t\t}\n\t\ttime.Sleep(time.Second)\n\t}\n}\n";
    write(dir.path(), "p_test.go", go);
    let s = scan(dir.path(), &opts()).unwrap();
    let got: Vec<_> = s
        .findings
        .iter()
        .map(|f| (f.symbol.as_str(), f.bucket.as_str()))
        .collect();
    assert_eq!(got, vec![("TestUnbounded", "unbounded-poll")]);
}

#[test]
fn a_long_sleep_and_a_python_unbounded_poll_are_their_own_buckets() {
    let dir = tempfile::tempdir().unwrap();
    let py = "import time\n\ndef ready():\n    return True\n\n\
def test_long():\n    time.sleep(2)\n\n\
def test_wait():\n    while not ready():  # no deadline: the comment must not bound it\n        time.sleep(0.1)\n\n\
def test_yield():\n    time.sleep(0)\n    assert ready()\n";
    write(dir.path(), "test_s.py", py);
    let s = scan(dir.path(), &opts()).unwrap();
    let got: Vec<_> = s
        .findings
        .iter()
        .map(|f| (f.symbol.as_str(), f.bucket.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![("test_long", "long-sleep"), ("test_wait", "unbounded-poll")]
    );
}

fn entry(file: &str, symbol: &str, class: &str, bucket: &str) -> Entry {
    Entry {
        file: file.into(),
        symbol: symbol.into(),
        class: class.into(),
        bucket: bucket.into(),
        reason: "accepted: asserts a negative on purpose".into(),
    }
}

fn key(file: &str, symbol: &str, class: &str, bucket: &str) -> ledger::Key {
    (file.into(), symbol.into(), class.into(), bucket.into())
}

#[test]
fn the_ledger_is_checked_both_ways() {
    let l = Ledger {
        schema: LEDGER_SCHEMA.into(),
        entries: vec![
            entry("tests/a.py", "test_a", "sleep", "sleep-then-assert"),
            entry("tests/gone.py", "test_gone", "sleep", "sleep-then-assert"),
        ],
    };
    let found = vec![
        key("tests/a.py", "test_a", "sleep", "sleep-then-assert"),
        key("tests/b.py", "test_b", "network", "remote-address"),
    ];
    let c = ledger::check(&l, &found);
    assert_eq!(c.accepted, 1);
    assert_eq!(
        c.new,
        vec![key("tests/b.py", "test_b", "network", "remote-address")]
    );
    assert_eq!(
        c.stale,
        vec![key(
            "tests/gone.py",
            "test_gone",
            "sleep",
            "sleep-then-assert"
        )]
    );
    assert!(c.fails());
    // The key is the whole key: the same site in another bucket is new, and
    // its entry stale.
    let other = vec![key("tests/a.py", "test_a", "sleep", "long-sleep")];
    let c = ledger::check(&l, &other);
    assert_eq!((c.accepted, c.new.len(), c.stale.len()), (0, 1, 2));
}

#[test]
fn a_ledger_written_on_windows_matches_the_same_sites() {
    let l = Ledger {
        schema: LEDGER_SCHEMA.into(),
        entries: vec![
            entry(r"tests\unit\a.py", "test_a", "sleep", "sleep-then-assert"),
            entry(r".\tests\b.py", "<module>", "clock", "time-bomb"),
        ],
    };
    let found = vec![
        key("tests/unit/a.py", "test_a", "sleep", "sleep-then-assert"),
        key("tests/b.py", "<module>", "clock", "time-bomb"),
    ];
    let c = ledger::check(&l, &found);
    assert_eq!((c.accepted, c.new.len(), c.stale.len()), (2, 0, 0), "{c:?}");
    assert_eq!(
        walk::normalise(Path::new("tests/unit/a.py")),
        "tests/unit/a.py"
    );
}

#[test]
fn a_ledger_entry_without_a_reason_is_refused_by_name() {
    let text = format!(
        r#"{{"schema": "{LEDGER_SCHEMA}", "entries": [{{"file": "a.py", "symbol": "test_a", "class": "sleep", "bucket": "long-sleep", "reason": " "}}]}}"#
    );
    let e = ledger::parse(&text).unwrap_err();
    assert!(e.contains("entry 1 (a.py: test_a) has no reason"), "{e}");
    assert!(ledger::parse(r#"{"schema": "x", "entries": []}"#)
        .unwrap_err()
        .contains("schema"));
}

#[test]
fn remote_hosts_are_told_from_loopback() {
    use detect::remote_host;
    assert_eq!(
        remote_host("http://93.184.216.34/x"),
        Some("93.184.216.34".into())
    );
    assert_eq!(
        remote_host("https://api.example.org:8443/v1"),
        Some("api.example.org".into())
    );
    assert_eq!(remote_host("203.0.113.9:443"), Some("203.0.113.9".into()));
    for local in [
        "http://localhost:8000/",
        "http://127.0.0.1/x",
        "http://[::1]:80/",
        "127.0.0.1",
        "not a url",
        "0.0.0.0:80",
    ] {
        assert_eq!(remote_host(local), None, "{local}");
    }
}

/// (line, kind, perturbation or "-", beside) of each finding in a tree of
/// `files`.
fn found(files: &[(&str, &str)]) -> Vec<(String, String, String, usize)> {
    let dir = tempfile::tempdir().unwrap();
    for (rel, text) in files {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    (scan(dir.path(), &opts()).unwrap().findings.into_iter())
        .map(|f| {
            (
                format!("{}:{}", f.file, f.line),
                f.kind,
                f.perturbation.unwrap_or_else(|| "-".into()),
                f.beside.len(),
            )
        })
        .collect()
}

#[test]
fn module_dicts_changed_by_item_assignment_or_update_are_global_state_run_beside_their_file() {
    let got = found(&[
        (
            "tests/test_cfg.py",
            "from app.settings import LIMITS\nimport app.settings as settings\nCONFIG = {\"mode\": \"safe\"}\nCACHE = dict(a=1)\n\n\ndef test_reads():\n    assert CONFIG[\"mode\"] == \"safe\"\n\n\ndef test_item():\n    CONFIG[\"mode\"] = \"fast\"\n    assert CONFIG\n\n\ndef test_update():\n    CACHE.update(b=2)\n    assert CACHE\n\n\ndef test_imported():\n    LIMITS[\"n\"] = 1\n    settings.FLAGS.update(x=1)\n    assert LIMITS\n\n\ndef test_restored():\n    ROWS = {}\n    ROWS[\"a\"] = 1\n    assert ROWS\n",
        ),
        ("app/settings.py", "LIMITS = {}\nFLAGS = {}\n"),
    ]);
    let shuffle = |line: u32| {
        (
            format!("tests/test_cfg.py:{line}"),
            "module-container".to_string(),
            "shuffle".to_string(),
            4,
        )
    };
    assert_eq!(got, [shuffle(12), shuffle(17), shuffle(22), shuffle(23)]);
}

#[test]
fn a_helper_writing_a_module_dict_runs_beside_the_files_of_the_tests_it_reaches() {
    let got = found(&[
        (
            "tests/helpers.py",
            "REGISTRY = {}\n\n\ndef register(name):\n    REGISTRY[name] = True\n    return REGISTRY\n",
        ),
        (
            "tests/test_reg.py",
            "from tests.helpers import register\n\n\ndef test_registers():\n    assert register(\"a\")\n\n\ndef test_empty():\n    assert True\n",
        ),
        ("tests/test_other.py", "def test_unrelated():\n    assert True\n"),
    ]);
    // test_reg.py's other test is a candidate; test_other.py's is not.
    assert_eq!(
        got,
        [(
            "tests/helpers.py:5".to_string(),
            "module-container".to_string(),
            "shuffle".to_string(),
            1
        )]
    );
}

#[test]
fn zone_reads_through_the_c_library_and_locale_formatting_are_found_in_each_language() {
    let got = found(&[
        (
            "tests/zone.rs",
            "extern \"C\" { fn localtime_r(t: *const i64, tm: *mut Tm) -> *mut Tm; }\n\n#[test]\nfn local_day() {\n    let mut tm = Tm::default();\n    unsafe { localtime_r(&0, &mut tm) };\n    assert_eq!(tm.tm_mday, 1);\n}\n\n#[test]\nfn libc_day() {\n    let mut tm = Tm::default();\n    unsafe { libc::localtime_r(&0, &mut tm) };\n    unsafe { libc::setlocale(0, b\"\\0\".as_ptr()) };\n    assert_eq!(tm.tm_mday, 1);\n}\n",
        ),
        (
            "tests/test_locale.py",
            "import locale\nimport time\n\n\ndef test_money():\n    locale.setlocale(locale.LC_ALL, \"\")\n    assert time.strftime(\"%x\") != \"\"\n    assert format(1234, \"n\") == \"1,234\"\n    assert time.strftime(\"%Y-%m-%d\")\n",
        ),
        (
            "tests/fmt.test.js",
            "test('fmt', () => {\n  expect(new Intl.NumberFormat().format(1234)).toBe('1,234');\n  expect(new Intl.NumberFormat('en-US').format(1)).toBe('1');\n  expect('a'.localeCompare('b')).toBe(-1);\n  expect(new Date(0).toLocaleDateString()).toBe('1/1/1970');\n});\n",
        ),
    ]);
    let row =
        |at: &str, kind: &str, cell: &str| (at.to_string(), kind.to_string(), cell.to_string(), 0);
    assert_eq!(
        got,
        [
            row("tests/fmt.test.js:2", "locale-format", "locale=POSIX"),
            row("tests/fmt.test.js:4", "locale-format", "locale=POSIX"),
            row(
                "tests/fmt.test.js:5",
                "locale-format",
                "tz=Pacific/Kiritimati"
            ),
            // setlocale(…, "") itself asserts nothing: a site, not a finding.
            row("tests/test_locale.py:7", "locale-format", "locale=POSIX"),
            row("tests/test_locale.py:8", "locale-format", "locale=POSIX"),
            row("tests/zone.rs:6", "calendar-read", "tz=Pacific/Kiritimati"),
            row("tests/zone.rs:13", "calendar-read", "tz=Pacific/Kiritimati"),
            row("tests/zone.rs:14", "locale-format", "locale=POSIX"),
        ]
    );
}

#[test]
fn a_lone_fixed_port_goes_to_the_ladder_and_a_shared_one_runs_with_its_partner() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("tests");
    std::fs::create_dir_all(&t).unwrap();
    std::fs::write(
        t.join("test_p.py"),
        "import socket\n\n\ndef test_a():\n    socket.socket().bind((\"127.0.0.1\", 8765))\n    assert True\n\n\ndef test_b():\n    socket.socket().bind((\"127.0.0.1\", 8765))\n    assert True\n\n\ndef test_c():\n    socket.socket().bind((\"127.0.0.1\", 9000))\n    assert True\n",
    )
    .unwrap();
    let s = scan(dir.path(), &opts()).unwrap();
    let f = &s.findings;
    assert_eq!(f[0].perturbation.as_deref(), Some("workers=2x"));
    assert_eq!(f[0].beside, ["tests/test_p.py::test_b"]);
    assert!(
        f[0].command
            .ends_with("tests/test_p.py::test_a tests/test_p.py::test_b"),
        "{}",
        f[0].command
    );
    assert_eq!(f[2].perturbation, None);
    assert!(f[2]
        .settle
        .as_deref()
        .unwrap()
        .contains("no other test here names 9000"));
    assert_eq!(
        f[2].command,
        "flakelab ladder --from 3 --to 3 --test tests/test_p.py::test_c -- python3 -m pytest -p no:randomly -p no:cacheprovider tests/test_p.py::test_c"
    );
}

#[test]
fn commands_name_their_tests_from_the_project_root_when_a_subdirectory_is_scanned() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pyproject.toml"), "").unwrap();
    let t = dir.path().join("tests/unit");
    std::fs::create_dir_all(&t).unwrap();
    std::fs::write(
        t.join("test_p.py"),
        "import socket\n\n\ndef test_c():\n    socket.socket().bind((\"127.0.0.1\", 9000))\n    assert True\n",
    )
    .unwrap();
    let root = dir.path().canonicalize().unwrap();
    let tests = project_of(&dir.path().join("tests"));
    assert_eq!(
        (tests.root.as_path(), tests.prefix.as_str()),
        (root.as_path(), "tests/")
    );
    let unit = project_of(&t);
    assert_eq!(
        (unit.root.as_path(), unit.prefix.as_str()),
        (root.as_path(), "tests/unit/")
    );
    assert_eq!(project_of(dir.path()).prefix, "");
    // A conftest.py is pytest's, found under its rootdir: no project root.
    std::fs::write(dir.path().join("tests/conftest.py"), "").unwrap();
    assert_eq!(project_of(&t).prefix, "tests/unit/");
    // Nothing marks a tree: it is its own root.
    let bare = tempfile::tempdir().unwrap();
    let alone = project_of(bare.path());
    assert_eq!(alone.root, bare.path().canonicalize().unwrap());
    assert_eq!(alone.prefix, "");
    let s = scan(&dir.path().join("tests"), &opts()).unwrap();
    assert_eq!(s.findings[0].tests, ["unit/test_p.py::test_c"]);
    assert_eq!(
        s.findings[0].command,
        "flakelab ladder --from 3 --to 3 --test tests/unit/test_p.py::test_c -- python3 -m pytest -p no:randomly -p no:cacheprovider tests/unit/test_p.py::test_c"
    );
}
