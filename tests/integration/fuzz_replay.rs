//! Replays every fuzz target's committed corpus (`fuzz/corpus/<target>/`,
//! seeds, minimised finds and the crash inputs kept as regressions) through
//! the same target functions `cargo fuzz` runs, so the properties hold on
//! those inputs in every `cargo test`, with or without a fuzzer installed.
//! The JUnit target also gets every fixture report of `tests/fixtures/junit`.

#[path = "../../fuzz/src/targets.rs"]
mod targets;

use std::path::{Path, PathBuf};

fn corpus(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut files = super::files(&dir);
    files.sort();
    files
}

fn replay(target: &str, f: targets::Target, extra: Vec<PathBuf>) {
    let files: Vec<PathBuf> = corpus(target).into_iter().chain(extra).collect();
    assert!(!files.is_empty(), "no corpus for the fuzz target {target}");
    for path in files {
        let data = std::fs::read(&path).unwrap();
        let result = std::panic::catch_unwind(|| f(&data));
        assert!(
            result.is_ok(),
            "fuzz target {target} fails on {}",
            path.display()
        );
    }
}

fn target(name: &str) -> targets::Target {
    targets::TARGETS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, f)| *f)
        .unwrap()
}

#[test]
fn every_fuzz_target_has_a_corpus_directory() {
    for (name, _) in targets::TARGETS {
        assert!(!corpus(name).is_empty(), "fuzz/corpus/{name} is empty");
    }
}

#[test]
fn the_junit_corpus_and_fixtures_replay_with_the_reference_counts() {
    let fixtures =
        super::files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/junit"))
            .into_iter()
            .filter(|p| p.extension().is_some_and(|x| x == "xml"))
            .collect();
    replay("junit", target("junit"), fixtures);
}

#[test]
fn the_store_corpus_replays() {
    replay("store", target("store"), Vec::new());
}

#[test]
fn the_catalog_corpus_replays() {
    replay("catalog", target("catalog"), Vec::new());
}

#[test]
fn the_config_corpus_replays() {
    replay("config", target("config"), Vec::new());
}

#[test]
fn the_cell_spec_corpus_replays() {
    replay("cell_spec", target("cell_spec"), Vec::new());
}

#[test]
fn the_signature_corpus_replays() {
    replay("signature", target("signature"), Vec::new());
}

#[test]
fn the_archive_corpus_replays() {
    replay("archive", target("archive"), Vec::new());
}

#[test]
fn the_quarantine_corpus_replays() {
    replay("quarantine", target("quarantine"), Vec::new());
}

#[test]
fn the_reference_reading_counts_direct_children_only() {
    let xml = b"<testsuites><testsuite><testcase name='a'><failure/><error/></testcase>\
        <testcase name='b'><system-out><failure/></system-out></testcase>\
        <x:testcase xmlns:x='u' name='c'><skipped/></x:testcase><testcase name='d'/>\
        </testsuite></testsuites>";
    let counts = targets::reference_counts(xml).unwrap();
    assert_eq!(
        counts,
        targets::Counts {
            cases: 4,
            failed: 1,
            errored: 0,
            skipped: 1
        }
    );
    assert_eq!(targets::reference_counts(b"<a><testcase></a>"), None);
}
