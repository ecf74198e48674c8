//! Hostile names stay names in every output (issue #33): a test id or a
//! failure message with a line break and a GitHub workflow command after it
//! (`::error::…`, `::stop-commands::…`), a Markdown backtick or pipe, never
//! becomes a command, a new line or a broken table in what flakelab prints.
//! The names come in as a CI report would bring them: a JUnit report.

use std::process::Output;

use super::Lab;

/// A test id that would forge workflow commands if printed raw.
const HOSTILE: &str = "h&#10;::error::forged-id&#10;::stop-commands::tok";
/// A failure message that would do the same.
const MESSAGE: &str = "boom&#10;::warning::forged-message";

/// A JUnit report of a plain test passing and the hostile one as given.
fn report(hostile_fails: bool) -> String {
    let hostile = if hostile_fails {
        format!(
            r#"<testcase classname="c" name="{HOSTILE}"><failure message="{MESSAGE}">{MESSAGE}</failure></testcase>"#
        )
    } else {
        format!(r#"<testcase classname="c" name="{HOSTILE}"/>"#)
    };
    format!(
        r#"<testsuite name="s" tests="2"><testcase classname="c" name="plain"/>{hostile}</testsuite>"#
    )
}

/// Every line of `out` (stdout and stderr) that a GitHub Actions runner
/// would read as a forged command: one that starts, after blanks, with a
/// workflow command flakelab did not write.
fn forged(out: &Output) -> Vec<String> {
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .map(str::trim_start)
        .filter(|l| {
            l.starts_with("::error::forged")
                || l.starts_with("::warning::forged")
                || l.starts_with("::stop-commands::")
        })
        .map(String::from)
        .collect()
}

/// Asserts `out` forges nothing, showing what it printed when it does.
fn assert_clean(what: &str, out: &Output) {
    let lines = forged(out);
    assert!(
        lines.is_empty(),
        "{what} forged {lines:?}:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_guard_catches_a_raw_name() {
    // The check above can fail: a raw name printed on its own line forges.
    let raw = std::process::Command::new("printf")
        .arg("row: h\n::error::forged-id\n")
        .output()
        .unwrap();
    assert_eq!(forged(&raw), ["::error::forged-id"]);
}

#[test]
fn a_runs_outputs_forge_no_workflow_command_from_a_test_id_or_message() {
    let lab = Lab::new();
    let failing = lab.path().join("failing.xml");
    std::fs::write(&failing, report(true)).unwrap();
    // Every run writes the report with the hostile test failing.
    let script = format!("cp {} out.xml; exit 1", failing.display());
    let run = |format: &str| {
        lab.cmd()
            .args(["run", "-n", "2", "--junit", "out.xml", "--format", format])
            .args(["--", "sh", "-c", &script])
            .output()
            .unwrap()
    };
    for format in ["table", "markdown", "github"] {
        let out = run(format);
        if format != "github" {
            // The row is there, on one line.
            assert!(String::from_utf8_lossy(&out.stdout).contains("forged-id"));
        }
        assert_clean(&format!("run --format {format}"), &out);
    }
    // The hostile test was read: its id is in the records, line break and all.
    let ids: Vec<String> = (lab.runs().iter())
        .flat_map(|r| r["tests"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["id"].as_str().map(String::from))
        .collect();
    assert!(
        ids.iter().any(|id| id.contains("\n::error::forged-id")),
        "{ids:?}"
    );
    for format in ["table", "markdown", "github"] {
        let out = lab.run(&["report", "--format", format]);
        assert_clean(&format!("report --format {format}"), &out);
    }
    let out = lab.run(&["evidence"]);
    assert_clean("evidence", &out);
}

#[test]
fn histories_checks_and_quarantines_forge_no_workflow_command() {
    let lab = Lab::new();
    let ingest = |commit: &str, fails: &[bool]| {
        let mut paths = Vec::new();
        for (i, f) in fails.iter().enumerate() {
            let path = lab.path().join(format!("{commit}-{i}.xml"));
            std::fs::write(&path, report(*f)).unwrap();
            paths.push(path.display().to_string());
        }
        let out = lab
            .cmd()
            .args(["ingest", "--no-detect", "--commit", commit])
            .args(&paths)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_clean("ingest", &out);
    };
    // A clean baseline, then a commit where the hostile test fails.
    ingest("c0", &[false, false, false]);
    let baseline = lab.run(&["check", "--write-baseline", "--min-runs", "2"]);
    assert_eq!(baseline.status.code(), Some(0));
    ingest("c1", &[true, true, false]);

    let check = lab.run(&["check", "--annotations", "--min-runs", "2"]);
    assert_clean("check --annotations", &check);
    // The gate still speaks about the test, escaped on one line.
    let stdout = String::from_utf8_lossy(&check.stdout);
    assert!(stdout.contains("forged-id"), "{stdout}");

    for format in ["table", "markdown", "json"] {
        let out = lab.run(&["history", "--format", format, "--min-runs", "2"]);
        assert_eq!(out.status.code(), Some(0), "history --format {format}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("forged-id"));
        assert_clean(&format!("history --format {format}"), &out);
    }
    for format in [
        "pytest",
        "go",
        "jest",
        "vitest",
        "cargo-nextest",
        "rspec",
        "phpunit",
        "yaml",
    ] {
        let out = lab.run(&[
            "quarantine",
            "--format",
            format,
            "--min-failures",
            "1",
            "--min-runs",
            "2",
        ]);
        assert_clean(&format!("quarantine --format {format}"), &out);
    }
}
