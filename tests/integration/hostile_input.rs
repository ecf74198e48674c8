//! Hostile input stays input (issue #33): a path, a store or an archive
//! from a user, a config file or CI never makes flakelab delete a file it
//! did not write, nor read one through a link. Every attack is tried on
//! stand-ins made here, never on a real system file.

use std::path::Path;

use super::{files, Lab};

const REPORT: &str =
    r#"<testsuite name="s" tests="1"><testcase classname="c" name="written"/></testsuite>"#;

/// `flakelab run --format json -n 2 ARGS -- sh -c SCRIPT` in `lab`, with
/// `env` set; returns the exit code, stderr and the run records.
fn run(
    lab: &Lab,
    env: &[(&str, &str)],
    args: &[&str],
    script: &str,
) -> (i32, String, Vec<serde_json::Value>) {
    let mut cmd = lab.cmd();
    cmd.envs(env.iter().copied())
        .args(["run", "--format", "json", "-n", "2"])
        .args(args)
        .args(["--", "sh", "-c", script]);
    let out = cmd.output().unwrap();
    let code = out.status.code().unwrap_or(-1);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let runs = if lab.store().exists() {
        lab.runs()
    } else {
        Vec::new()
    };
    (code, stderr, runs)
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Each way of naming the report path: the flag, the variable, the file.
enum Layer {
    Flag,
    Variable,
    File,
}

impl Layer {
    /// `flakelab run` in `lab` with the report path `path` given this way.
    fn run(&self, lab: &Lab, path: &str, script: &str) -> (i32, String, Vec<serde_json::Value>) {
        match self {
            Layer::Flag => run(lab, &[], &["--junit", path], script),
            Layer::Variable => run(lab, &[("FLAKELAB_JUNIT", path)], &[], script),
            Layer::File => {
                write(
                    &lab.path().join("flakelab.toml"),
                    &format!("[run]\njunit = {}\n", toml_string(path)),
                );
                run(lab, &[], &[], script)
            }
        }
    }
}

fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

#[test]
fn a_file_at_a_report_path_of_the_users_is_never_deleted_through_any_layer() {
    for layer in [Layer::Flag, Layer::Variable, Layer::File] {
        let lab = Lab::new();
        let victim = lab.path().join("victim.txt");
        write(&victim, "precious");
        // The subject writes no report: what is there is not the run's.
        let (code, stderr, runs) = layer.run(&lab, "victim.txt", "exit 0");
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(runs.len(), 2);
        for r in &runs {
            let why = r["tests_missing"].as_str().unwrap_or_default();
            assert!(why.contains("the run wrote no report"), "{r}");
            assert_eq!(r["tests"].as_array().map_or(0, Vec::len), 0, "{r}");
        }
    }
}

#[test]
fn a_report_the_run_writes_over_a_users_file_is_read_as_its_own() {
    let lab = Lab::new();
    let report = lab.path().join("reports/junit.xml");
    write(&report, "old");
    // Written beside, then moved over: a new file each run, so no test
    // rides on the filesystem's timestamp granularity.
    let script =
        format!("printf '%s' '{REPORT}' > reports/new && mv reports/new reports/junit.xml");
    let (code, stderr, runs) = run(&lab, &[], &["--junit", "reports/junit.xml"], &script);
    assert_eq!(code, 0, "{stderr}");
    for r in &runs {
        assert_eq!(r["tests_missing"], serde_json::Value::Null, "{r}");
        assert_eq!(r["tests"][0]["id"], "c::written", "{r}");
    }
}

#[test]
fn an_etc_like_target_outside_the_project_is_never_deleted_and_refused_from_the_file() {
    let outside = tempfile::tempdir().unwrap();
    let passwd = outside.path().join("etc/passwd");
    write(&passwd, "root:x:0:0");
    let absolute = passwd.to_str().unwrap();
    // By flag or variable the user names it: flakelab still deletes nothing.
    for layer in [Layer::Flag, Layer::Variable] {
        let lab = Lab::new();
        let (code, stderr, _) = layer.run(&lab, absolute, "exit 0");
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(std::fs::read_to_string(&passwd).unwrap(), "root:x:0:0");
    }
    // From flakelab.toml (a cloned repository's), a path outside the
    // project is refused before anything runs: absolute, `..`, or a link.
    let lab = Lab::new();
    let relative = format!("../../../../../../../..{absolute}");
    std::os::unix::fs::symlink(outside.path().join("etc"), lab.path().join("reports")).unwrap();
    for path in [absolute, relative.as_str(), "reports/passwd"] {
        let (code, stderr, runs) = Layer::File.run(&lab, path, "exit 0");
        assert_eq!(code, 2, "{path}: {stderr}");
        assert!(stderr.contains("[run] junit"), "{stderr}");
        assert!(stderr.contains("--junit PATH"), "{stderr}");
        assert!(runs.is_empty(), "{path}: nothing ran");
        assert_eq!(std::fs::read_to_string(&passwd).unwrap(), "root:x:0:0");
    }
}

#[test]
fn a_report_path_that_is_a_link_or_a_fifo_is_never_read() {
    let lab = Lab::new();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("environ");
    write(&secret, "TOKEN=s3cr3t-4711");
    std::os::unix::fs::symlink(&secret, lab.path().join("link.xml")).unwrap();
    let (code, stderr, runs) = run(&lab, &[], &["--junit", "link.xml"], "exit 0");
    assert_eq!(code, 0, "{stderr}");
    for r in &runs {
        let why = r["tests_missing"].as_str().unwrap_or_default();
        assert!(why.contains("symbolic link"), "{r}");
    }
    for file in files(&lab.store()) {
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("s3cr3t-4711"),
            "{} holds the linked file's bytes",
            file.display()
        );
    }
    assert!(secret.exists());
    // A FIFO would block a reader forever: it is named, never opened.
    let lab = Lab::new();
    let fifo = lab.path().join("fifo.xml");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let (code, stderr, runs) = run(&lab, &[], &["--junit", "fifo.xml"], "exit 0");
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(runs.len(), 2);
    for r in &runs {
        let why = r["tests_missing"].as_str().unwrap_or_default();
        assert!(why.contains("a FIFO"), "{r}");
    }
    assert!(fifo.exists());
}

/// A lab whose store holds one session of two runs, each with a log.
fn lab_with_a_store() -> Lab {
    let lab = Lab::new();
    let (code, stderr, runs) = run(&lab, &[], &[], "echo hi");
    assert_eq!((code, runs.len()), (0, 2), "{stderr}");
    lab
}

/// The first run's log in `store`.
fn first_log(store: &Path) -> std::path::PathBuf {
    let mut logs: Vec<_> = files(&store.join("logs"));
    logs.sort();
    logs.into_iter().next().expect("a log")
}

/// `store` packed as a `.tar.gz` at `to`, links kept as links.
fn pack(store: &Path, to: &Path) {
    let file = std::fs::File::create(to).unwrap();
    let gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    tar.follow_symlinks(false);
    tar.append_dir_all(".flakelab", store).unwrap();
    tar.into_inner().unwrap().finish().unwrap();
}

/// `flakelab merge ARGS` in `lab`: exit code and stderr.
fn merge(lab: &Lab, args: &[&str]) -> (i32, String) {
    let out = lab.cmd().arg("merge").args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Asserts that nothing under `dir` holds `secret`.
fn nowhere_in(dir: &Path, secret: &str) {
    for file in files(dir) {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        assert!(!text.contains(secret), "{} holds {secret}", file.display());
    }
}

#[test]
fn merge_refuses_a_store_whose_log_is_a_link_to_a_host_file_directory_or_archive() {
    let lab = lab_with_a_store();
    let environ = lab.path().join("environ");
    write(&environ, "AWS_SECRET_ACCESS_KEY=s3cr3t-4711");
    let log = first_log(&lab.store());
    std::fs::remove_file(&log).unwrap();
    std::os::unix::fs::symlink(&environ, &log).unwrap();
    let archive = lab.path().join("shard.tar.gz");
    pack(&lab.store(), &archive);
    for input in [".flakelab", "shard.tar.gz"] {
        let into = lab.path().join(format!("merged-{}", input.len()));
        let (code, stderr) = merge(&lab, &[input, "--into", into.to_str().unwrap()]);
        assert_eq!(code, 2, "{input}: {stderr}");
        assert!(stderr.contains("symbolic link"), "{stderr}");
        assert!(stderr.contains("00000.log"), "the link is named: {stderr}");
        assert!(!into.exists(), "{input}: nothing is written");
    }
    nowhere_in(&lab.store().join("runs"), "s3cr3t-4711");
}

#[test]
fn merge_refuses_a_runs_file_linked_to_another_store_and_a_hard_link() {
    let lab = lab_with_a_store();
    let other = lab_with_a_store();
    let runs = files(&lab.store().join("runs"));
    let theirs = files(&other.store().join("runs"));
    std::fs::remove_file(&runs[0]).unwrap();
    std::os::unix::fs::symlink(&theirs[0], &runs[0]).unwrap();
    let (code, stderr) = merge(&lab, &[".flakelab", "--into", "merged"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("symbolic link"), "{stderr}");
    assert!(!lab.path().join("merged").exists());
    // A hard link may name a file outside the store: refused the same way.
    std::fs::remove_file(&runs[0]).unwrap();
    std::fs::hard_link(&theirs[0], &runs[0]).unwrap();
    let (code, stderr) = merge(&lab, &[".flakelab", "--into", "merged"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("hard link"), "{stderr}");
    assert!(!lab.path().join("merged").exists());
}

#[test]
fn an_archive_that_unpacks_past_the_limit_is_refused_from_its_headers() {
    let lab = lab_with_a_store();
    // 8 MiB of zeros packs into a few KiB.
    write(&first_log(&lab.store()), &"\0".repeat(8 << 20));
    let archive = lab.path().join("bomb.tar.gz");
    pack(&lab.store(), &archive);
    assert!(std::fs::metadata(&archive).unwrap().len() < 1 << 20);
    let (code, stderr) = merge(
        &lab,
        &["bomb.tar.gz", "--into", "m", "--unpack-limit", "1MiB"],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("more than 1048576 bytes (--unpack-limit)"),
        "{stderr}"
    );
    let (code, stderr) = merge(
        &lab,
        &["bomb.tar.gz", "--into", "m", "--unpack-entries", "3"],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("more than 3 entries (--unpack-entries)"),
        "{stderr}"
    );
    assert!(!lab.path().join("m").exists());
    // Within the limits it merges.
    let (code, stderr) = merge(&lab, &["bomb.tar.gz", "--into", "m"]);
    assert_eq!(code, 0, "{stderr}");
    let (code, stderr) = merge(
        &lab,
        &["bomb.tar.gz", "--into", "m", "--unpack-limit", "1Q"],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("unknown unit `Q`"), "{stderr}");
}

#[test]
fn a_fifo_in_the_store_is_named_and_never_waited_on() {
    let lab = lab_with_a_store();
    let sessions = lab.store().join("sessions.jsonl");
    std::fs::remove_file(&sessions).unwrap();
    nix::unistd::mkfifo(&sessions, nix::sys::stat::Mode::S_IRWXU).unwrap();
    // No writer ever opens the FIFO: a reader that opened it would wait forever.
    let out = lab.cmd().args(["report"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is a FIFO"), "{stderr}");
    let (code, stderr) = merge(&lab, &[".flakelab", "--into", "m"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("FIFO"), "{stderr}");
}

#[test]
fn values_that_would_overflow_or_mean_nothing_are_refused_before_work_starts() {
    let lab = Lab::new();
    let refused = |args: &[&str], env: &[(&str, &str)], says: &str| {
        let out = lab
            .cmd()
            .envs(env.iter().copied())
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!lab.store().exists(), "{args:?}: nothing ran");
    };
    fn run<'a>(flags: &[&'a str]) -> Vec<&'a str> {
        [&["run"], flags, &["--", "true"]].concat()
    }
    refused(
        &run(&["-n", "4294967295"]),
        &[],
        "more than flakelab plans (100000)",
    );
    refused(
        &run(&[]),
        &[("FLAKELAB_RUNS", "4294967295")],
        "FLAKELAB_RUNS",
    );
    for t in ["213503982334601d", "18446744073709551615s", "1y"] {
        refused(&run(&["--timeout", t]), &[], "a per-run timeout above 24h");
    }
    refused(&run(&["--kill-grace", "1y"]), &[], "a grace above 1h");
    for rate in ["5", "NaN", "-0.1", "inf"] {
        let flag = format!("--clear-below={rate}");
        let min = format!("--min-rate={rate}");
        refused(
            &run(&["--design", "screen", &flag]),
            &[],
            "is not a rate from 0 to 1",
        );
        refused(
            &["quarantine", "--format", "pytest", &min],
            &[],
            "a rate from 0 to 1",
        );
    }
    write(
        &lab.path().join("flakelab.toml"),
        "[run]\ntimeout = \"213503982334601d\"\n",
    );
    refused(&run(&[]), &[], "a per-run timeout above 24h");
}

fn entry(test: &str, file: Option<&str>) -> flakelab::history::quarantine::Entry {
    flakelab::history::quarantine::Entry {
        test: test.into(),
        evidence: "passed and failed on commit c1".into(),
        file: file.map(String::from),
    }
}

#[test]
fn the_rspec_snippet_loads_in_real_ruby_without_running_a_test_name() {
    use flakelab::history::quarantine::{emit, Syntax};
    if !super::capable("ruby", super::sh_ok("ruby --version")) {
        return;
    }
    let lab = Lab::new();
    let names = [
        "flaky #{File.write('pwned', 'x')} ok",
        "quote ' and \" and \\ and #@x",
        "two\nlines",
        "::error ::forged",
    ];
    let entries: Vec<_> = names
        .iter()
        .map(|n| entry(&format!("spec.x::{n}"), None))
        .collect();
    let snippet = emit(Syntax::Rspec, &entries).text;
    write(&lab.path().join("quarantine.rb"), &snippet);
    let out = std::process::Command::new("ruby")
        .args([
            "-rjson",
            "-e",
            "module RSpec; def self.configure; end; end; load './quarantine.rb'; print JSON.generate(FLAKELAB_QUARANTINE)",
        ])
        .current_dir(lab.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read: Vec<String> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(read, names);
    assert!(
        !lab.path().join("pwned").exists(),
        "a test name ran as code"
    );
}

#[test]
fn the_pytest_list_deselects_exactly_ids_with_spaces_through_an_argument_file() {
    use flakelab::history::quarantine::{emit, Syntax};
    if !super::capable("pytest", super::sh_ok("python3 -m pytest --version")) {
        return;
    }
    let lab = Lab::new();
    write(
        &lab.path().join("test_ids.py"),
        "import pytest\n\n@pytest.mark.parametrize('v', ['hello world', 'hello', 'world', '-k x'])\ndef test_p(v):\n    pass\n",
    );
    let entries = [
        entry("test_ids::test_p[hello world]", Some("test_ids.py")),
        entry("test_ids::test_p[-k x]", Some("test_ids.py")),
    ];
    let list = emit(Syntax::Pytest, &entries).text;
    write(&lab.path().join("quarantine.args"), &list);
    let out = std::process::Command::new("python3")
        .args([
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
        ])
        .args(["--junitxml=out.xml", "@quarantine.args"])
        .current_dir(lab.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let ran = flakelab::results::junit::parse_file(&lab.path().join("out.xml")).unwrap();
    let mut names: Vec<String> = ran.cases.iter().map(|c| c.name.clone()).collect();
    names.sort();
    assert_eq!(names, ["test_p[hello]", "test_p[world]"]);
}

#[test]
fn edited_integers_and_endless_lines_in_a_store_size_nothing() {
    let lab = lab_with_a_store();
    let runs = files(&lab.store().join("runs")).remove(0);
    let text = std::fs::read_to_string(&runs).unwrap();
    let context = text
        .lines()
        .find(|l| l.contains("flakelab.context/"))
        .unwrap();
    let run = text.lines().find(|l| l.contains("\"i\":1,")).unwrap();
    let edited = [
        context.replacen("\"c\":0", "\"c\":4294967295", 1),
        run.replacen("\"i\":1,", "\"i\":99999999999,", 1),
        "x".repeat(20 << 20),
    ];
    let mut all = text.clone();
    for line in &edited {
        all.push_str(line);
        all.push('\n');
    }
    std::fs::write(&runs, all).unwrap();
    // Under a 1 GiB address-space limit: an allocation sized by a number
    // read from the store would abort.
    let out = std::process::Command::new("prlimit")
        .arg(format!("--as={}", 1u64 << 30))
        .arg(super::bin())
        .args(["report", "--format", "json"])
        .current_dir(lab.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["skipped_lines"].as_u64(), Some(2), "{report}");
    // The two runs, and the edited line as a run of its own (its index is
    // data: it reads as another run, remembered by id, not by a bit).
    assert_eq!(
        super::cell(&report, "baseline")["n"].as_u64(),
        Some(3),
        "{report}"
    );
}

#[test]
fn a_second_session_of_one_id_in_one_store_is_refused_while_the_first_runs() {
    let lab = Lab::new();
    // The first session's run holds until the test releases it: the second
    // starts while the first is known to be running (a rendezvous, no timing).
    let hold = "touch started; while [ ! -e release ]; do sleep 0.01; done";
    let args = ["run", "-n", "2", "--shard", "1/2", "--session-id", "same"];
    let first = lab
        .cmd()
        .args(args)
        .args(["--", "sh", "-c", hold])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    super::wait_for_file(&lab.path().join("started"));
    let second = lab.cmd().args(args).args(["--", "true"]).output().unwrap();
    std::fs::write(lab.path().join("release"), "").unwrap();
    let first = first.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{stderr}");
    // Refused by the lock, or by the session record the first wrote right
    // after taking it (`liveness` tests the lock alone).
    assert!(
        stderr.contains("session same is running in the store")
            || stderr.contains("already holds session same"),
        "{stderr}"
    );
    assert_eq!(
        first.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    // Only the first session's run is recorded, and a later one of the same
    // id is refused too (the store holds it).
    assert_eq!(lab.runs().len(), 1);
    let third = lab.cmd().args(args).args(["--", "true"]).output().unwrap();
    assert_eq!(third.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&third.stderr).contains("already holds session same"));
}

#[test]
fn ingest_masks_credentials_as_a_run_does() {
    let lab = Lab::new();
    let secret = "s3cr3t-1n-th3-3nv";
    let report = lab.path().join("report.xml");
    std::fs::write(
        &report,
        format!(
            r#"<testsuite name="s" tests="1"><testcase classname="c" name="token {secret}" file="t/{secret}.py"/></testsuite>"#
        ),
    )
    .unwrap();
    let ingest = |extra: &[&str]| {
        lab.cmd()
            .env("DEPLOY_TOKEN", secret)
            .args(["ingest", "--no-detect", "--commit", "c1"])
            .args(extra)
            .arg(&report)
            .output()
            .unwrap()
    };
    let out = ingest(&["--context", "api_key=plain-value", "--run-id", secret]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written: String = files(&lab.store())
        .iter()
        .map(|f| String::from_utf8_lossy(&std::fs::read(f).unwrap()).into_owned())
        .collect();
    // The report was recorded, its test under a masked id, the credential
    // nowhere, the credential-named context value replaced.
    assert!(written.contains("token <redacted>"), "{written}");
    assert!(!written.contains(secret), "{written}");
    assert!(!written.contains("plain-value"), "{written}");
    // The masking does not change the report's identity: ingested again, it
    // is the same execution.
    let again = ingest(&["--context", "api_key=plain-value", "--run-id", secret]);
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("1 already recorded"),
        "{}",
        String::from_utf8_lossy(&again.stdout)
    );
}

#[test]
fn a_session_a_full_disk_stops_is_reported_stopped_by_a_full_disk() {
    // A store on a 400 KiB filesystem of its own (a tmpfs in a mount
    // namespace, gone with it), filled by the runs' logs.
    let usable = super::sh_ok("unshare -rm sh -c 'mount -t tmpfs -o size=64k t /mnt'");
    if !super::capable("a tmpfs in a user mount namespace", usable) {
        return;
    }
    let lab = Lab::new();
    std::fs::create_dir(lab.path().join("small")).unwrap();
    let script = format!(
        "mount -t tmpfs -o size=400k t small || exit 99
         {bin} run --store small/st -n 40 -- sh -c 'head -c 60000 /dev/zero | tr \"\\0\" x' >/dev/null 2>run.err
         echo $? > run.code
         {bin} report --store small/st --format json > report.json",
        bin = super::bin().display()
    );
    let mut unshare = std::process::Command::new("unshare");
    super::scrub(&mut unshare);
    let out = (unshare.current_dir(lab.path()))
        .args(["-rm", "sh", "-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |name: &str| std::fs::read_to_string(lab.path().join(name)).unwrap();
    // The session stops with the full disk named, and its report says so
    // later, not that the harness was killed.
    assert_eq!(read("run.code").trim(), "2");
    assert!(read("run.err").contains("the filesystem holding the store is full"));
    let report: serde_json::Value = serde_json::from_str(&read("report.json")).unwrap();
    assert_eq!(report["session_end"], "failed", "{report}");
    assert!(
        (report["stop_reason"].as_str().unwrap_or_default())
            .contains("the filesystem holding the store is full"),
        "{report}"
    );
    let recorded = report["recorded"].as_u64().unwrap();
    assert!(recorded > 0 && recorded < 40, "{recorded}");
}

#[test]
fn a_subject_that_kills_the_warden_is_reported_at_the_sessions_end() {
    let lab = Lab::new();
    // The subject SIGKILLs its own flakelab's warden (a child of the same
    // flakelab, `flakelab __warden`), and only that one.
    let script = r#"for p in $(pgrep -P $PPID); do
        if tr '\0' ' ' < /proc/$p/cmdline | grep -q __warden; then kill -9 $p; fi
    done"#;
    let (code, stderr, runs) = run(&lab, &[], &[], script);
    assert_eq!(runs.len(), 2);
    // The baseline alone: a run that died with its warden is a failure,
    // and its failures are the session's finding (exit 1); none, exit 0.
    let failed = runs.iter().any(|r| r["outcome"] == "fail");
    assert_eq!(code, i32::from(failed), "{stderr}");
    let out = lab.run(&["report", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let warnings = report["warnings"].to_string();
    assert!(
        warnings.contains("the warden process ended during the session"),
        "{report}"
    );
    // A session whose warden lived says nothing of the kind.
    let calm = Lab::new();
    let (code, _, _) = run(&calm, &[], &[], "true");
    assert_eq!(code, 0);
    let out = calm.run(&["report", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        !report["warnings"].to_string().contains("warden"),
        "{report}"
    );
}
