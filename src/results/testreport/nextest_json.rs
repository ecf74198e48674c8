//! cargo-nextest's libtest-like JSON (`--message-format libtest-json`,
//! experimental: `NEXTEST_EXPERIMENTAL_LIBTEST_JSON=1`), one event a line
//! on stdout: `{"type":"test","event":"ok|failed|ignored","name":…}`. It
//! needs no JUnit profile, which nextest configures only in a file.
//!
//! A name is `CRATE::BINARY$TEST`; the classname is nextest's binary id as
//! its JUnit writes it: the crate alone for its library (`BINARY` is the
//! crate's name with `_` for `-`), else `CRATE::BINARY`. A name ending in
//! `#N` is the test's attempt N under nextest's retries: attempts before it
//! failed (nextest retries only a failure), so its first attempt failed.
//! The event of a failure carries the test's output (`stdout`): its panic
//! message is the message. Lines that are not events (nextest's own lines,
//! mixed into the run's output) are skipped.

use serde::Deserialize;

use crate::results::junit::{Case, CaseOutcome};

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    event: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    stdout: Option<String>,
}

/// The cases of one run's output, in the order nextest finished them.
pub(super) fn cases(text: &str) -> Vec<Case> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if !line.starts_with('{') {
            continue;
        }
        let Ok(ev) = serde_json::from_str::<Event>(line) else {
            continue;
        };
        if ev.kind != "test" {
            continue;
        }
        let outcome = match ev.event.as_str() {
            "ok" => CaseOutcome::Passed,
            "failed" | "timeout" => CaseOutcome::Failed,
            "ignored" => CaseOutcome::Skipped,
            _ => continue,
        };
        let (name, attempt) = match ev.name.rsplit_once('#') {
            Some((n, a)) if a.parse::<u32>().is_ok() => (n, a.parse::<u32>().unwrap_or(1)),
            _ => (ev.name.as_str(), 1),
        };
        let (binary, test) = name.split_once('$').unwrap_or(("", name));
        let classname = match binary.split_once("::") {
            Some((krate, bin)) if bin == krate.replace('-', "_") => krate,
            _ => binary,
        };
        let detail = ev.stdout.filter(|_| outcome == CaseOutcome::Failed);
        let message = detail.as_deref().and_then(super::libtest::panic_message);
        let mut c = super::case(classname, test, outcome, message, detail);
        if attempt > 1 && outcome != CaseOutcome::Skipped {
            c.first_attempt = CaseOutcome::Failed;
            c.reruns = attempt - 1;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use CaseOutcome::{Failed, Passed, Skipped};

    #[test]
    fn events_become_cases_and_an_attempt_number_tells_a_retry() {
        // cargo-nextest 0.9.143, `--retries 1 --message-format libtest-json`.
        let text = r#"    Starting 4 tests across 3 binaries
{"type":"suite","event":"started","test_count":6}
{"type":"test","event":"started","name":"cargo-fixture::cargo_fixture$flaky::first_fails"}
{"type":"test","event":"ok","name":"cargo-fixture::cargo_fixture$flaky::first_fails#2","exec_time":0.012}
{"type":"test","event":"failed","name":"cargo-fixture::cargo_fixture$order::b_formats_price#2","exec_time":0.3,"stdout":"\nthread 'order::b_formats_price' (7632) panicked at src/lib.rs:91:30:\ncurrency was never loaded\nstack backtrace:\n"}
{"type":"test","event":"ok","name":"cargo-fixture::api$api_ok","exec_time":0.006}
{"type":"test","event":"ignored","name":"cargo-fixture::tool$bin_ok"}
{"type":"suite","event":"ok","passed":1,"failed":0}
"#;
        let cs = cases(text);
        let got: Vec<(String, CaseOutcome, CaseOutcome, u32)> = cs
            .iter()
            .map(|c| (c.id(), c.first_attempt, c.outcome, c.reruns))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "cargo-fixture::flaky::first_fails".to_string(),
                    Failed,
                    Passed,
                    1
                ),
                (
                    "cargo-fixture::order::b_formats_price".to_string(),
                    Failed,
                    Failed,
                    1
                ),
                ("cargo-fixture::api::api_ok".to_string(), Passed, Passed, 0),
                (
                    "cargo-fixture::tool::bin_ok".to_string(),
                    Skipped,
                    Skipped,
                    0
                ),
            ]
        );
        assert_eq!(cs[1].message.as_deref(), Some("currency was never loaded"));
    }
}
