//! libtest's human output, which every `cargo test` prints with no flag:
//! `test NAME ... ok|FAILED|ignored` per test, after a `Running SRC (BIN)`
//! or `Doc-tests CRATE` header per test binary, then one
//! `---- NAME stdout ----` block per failure. The classname is the binary's
//! source (`src/lib.rs`, `tests/api.rs`, `Doc-tests crate`), so that two
//! binaries' tests of the same path stay apart; the name is libtest's own
//! (what `--exact` takes). The failure's message is the panic message (the
//! line after `thread '…' panicked at FILE:LINE:COL:`), its detail the block.
//!
//! Chosen over `--format json` (behind `-Z unstable-options`, unlocked on
//! stable by `RUSTC_BOOTSTRAP=1`): the text needs no flag and no variable,
//! so the user's command runs as typed, it reads doc-tests and every binary
//! alike, and it cannot break on a toolchain whose unstable JSON changed.
//! libtest's terse format (`-q`) prints no names: it gives no cases.

use std::collections::HashMap;

use crate::results::junit::{Case, CaseOutcome};

/// The cases of one `cargo test` output, in the order libtest reported them.
pub(super) fn cases(text: &str) -> Vec<Case> {
    let mut binary = String::new();
    let mut found: Vec<(String, String, CaseOutcome)> = Vec::new();
    // A `test NAME ... ` whose result comes on a later line (one thread,
    // with the test's own output between).
    let mut pending: Option<String> = None;
    let mut blocks: HashMap<(String, String), String> = HashMap::new();
    let mut block: Option<(String, String)> = None;
    for raw in text.lines() {
        let line = raw.trim_end();
        if let Some(rest) = line.trim_start().strip_prefix("Running ") {
            // `Running unittests src/lib.rs (target/debug/deps/x-hash)`
            let rest = rest.strip_prefix("unittests ").unwrap_or(rest);
            binary = rest.split(" (").next().unwrap_or(rest).trim().to_string();
            block = None;
            continue;
        }
        if let Some(krate) = line.trim_start().strip_prefix("Doc-tests ") {
            binary = format!("Doc-tests {}", krate.trim());
            block = None;
            continue;
        }
        if let Some(name) = line
            .strip_prefix("---- ")
            .and_then(|l| l.strip_suffix(" stdout ----"))
        {
            block = Some((binary.clone(), name.to_string()));
            continue;
        }
        if line == "failures:" || line.starts_with("test result: ") {
            block = None;
        }
        if let Some(key) = &block {
            let b = blocks.entry(key.clone()).or_default();
            if b.len() < crate::results::junit::MAX_DETAIL {
                b.push_str(line);
                b.push('\n');
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("test ") {
            let (name, result) = match rest.rsplit_once(" ... ") {
                Some((n, r)) => (n.to_string(), r.trim().to_string()),
                None => match rest.strip_suffix(" ...") {
                    Some(n) => {
                        pending = Some(n.to_string());
                        continue;
                    }
                    None => continue,
                },
            };
            if let Some(o) = outcome(&result) {
                found.push((binary.clone(), name, o));
                pending = None;
            } else if result.is_empty() {
                pending = Some(name);
            }
            continue;
        }
        if let Some(name) = pending.take() {
            match outcome(line.trim()) {
                Some(o) => found.push((binary.clone(), name, o)),
                None => pending = Some(name),
            }
        }
    }
    found
        .into_iter()
        .map(|(binary, name, outcome)| {
            let detail = blocks.remove(&(binary.clone(), name.clone()));
            let message = detail.as_deref().and_then(panic_message);
            super::case(&binary, &name, outcome, message, detail)
        })
        .collect()
}

/// `ok`, `FAILED`, `ignored` (with or without a reason): the outcome.
fn outcome(result: &str) -> Option<CaseOutcome> {
    match result {
        "ok" => Some(CaseOutcome::Passed),
        "FAILED" => Some(CaseOutcome::Failed),
        r if r == "ignored" || r.starts_with("ignored, ") => Some(CaseOutcome::Skipped),
        _ => None,
    }
}

/// The panic message: the line after `thread '…' panicked at …:` (Rust
/// 1.73 and later), else the quoted message of the older one-line form.
pub(super) fn panic_message(block: &str) -> Option<String> {
    let mut lines = block.lines();
    while let Some(l) = lines.next() {
        // `thread 'NAME' panicked at`, `thread 'NAME' (TID) panicked at` (1.90+).
        if l.starts_with("thread '") && l.contains(" panicked at ") {
            if l.ends_with(':') {
                return lines.next().map(str::to_string);
            }
            // Before 1.73: thread 'x' panicked at 'message', src/lib.rs:3:5
            let (_, rest) = l.split_once(" panicked at ")?;
            return Some(rest.to_string());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shuffled_failing_run_reads_every_test_and_the_panic() {
        let text = include_str!("../../../tests/fixtures/testreport/cargo-test-shuffle-fail.txt");
        let cs = cases(text);
        let got: Vec<(String, CaseOutcome)> = cs.iter().map(|c| (c.id(), c.outcome)).collect();
        assert_eq!(got.len(), 5);
        assert_eq!(
            got[1],
            (
                "src/lib.rs::order::b_formats_price".to_string(),
                CaseOutcome::Failed
            )
        );
        assert!(got
            .iter()
            .enumerate()
            .all(|(i, (_, o))| i == 1 || *o == CaseOutcome::Passed));
        assert_eq!(cs[1].message.as_deref(), Some("currency was never loaded"));
        assert!(cs[1].detail.as_deref().unwrap().contains("stack backtrace"));
    }

    #[test]
    fn one_thread_output_between_name_and_result_and_doc_tests() {
        let text = "     Running tests/api.rs (target/debug/deps/api-1)\n\nrunning 2 tests\ntest slow ... \nsome print\nok\ntest skipped ... ignored, needs a db\n   Doc-tests cratex\n\nrunning 1 test\ntest src/lib.rs - price (line 3) ... FAILED\n\nfailures:\n\n---- src/lib.rs - price (line 3) stdout ----\nthread 'x' panicked at 'old style', src/lib.rs:3:5\n\nfailures:\n    src/lib.rs - price (line 3)\n";
        let cs = cases(text);
        let got: Vec<(String, CaseOutcome)> = cs.iter().map(|c| (c.id(), c.outcome)).collect();
        assert_eq!(
            got,
            [
                ("tests/api.rs::slow".to_string(), CaseOutcome::Passed),
                ("tests/api.rs::skipped".to_string(), CaseOutcome::Skipped),
                (
                    "Doc-tests cratex::src/lib.rs - price (line 3)".to_string(),
                    CaseOutcome::Failed
                ),
            ]
        );
        assert_eq!(
            cs[2].message.as_deref(),
            Some("'old style', src/lib.rs:3:5")
        );
        // The terse format names no test.
        assert!(cases("running 3 tests\n...\ntest result: ok. 3 passed\n").is_empty());
    }
}
