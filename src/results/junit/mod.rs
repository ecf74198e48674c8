//! JUnit XML reports: one report file → a flat list of [`Case`]s, plus the
//! test id and family id that k of N is keyed on.
//!
//! This module owns reading the report of any JUnit dialect (pytest,
//! Surefire, jest, go-junit-report, nextest, Gradle, PHPUnit, …) the way the
//! shared corpus README's *reference reading* does: every `testcase` element
//! at any depth under any root is a case, classified by its direct children
//! only (failure > error > skipped > passed), flaky/rerun children recorded
//! but not changing the outcome. Declared counts (`tests=`, `failures=`) and
//! `status=` attributes are ignored.
//!
//! It must not build a DOM, fetch or expand DTDs or external entities, trust
//! anything the report declares about itself, panic on any input, or hold
//! more than a bounded amount of memory whatever the report's size: one
//! lexing pass (the `Guard`) cuts the input into events borrowed from a
//! fixed read buffer, and elides the middle of any text run, CDATA section,
//! comment or attribute value longer than 128 KiB, so a 100 MB failure body
//! costs about as much memory as a 100 KB one.
//!
//! A report that is not well-formed XML is an error, not zero cases: a
//! truncated report from a killed runner must not read as "nothing failed".
//! Deliberate tolerances (documented divergences from a validating parser):
//! whitespace before the XML declaration, raw control characters, invalid
//! UTF-8 (replaced by U+FFFD), character references to control characters,
//! `]]>` in text, a declared `UTF-16` on 8-bit content, and unbound namespace
//! prefixes are accepted. Entities declared in an internal DTD subset are not expanded; a
//! reference to one is an error like any undefined entity.

// The reader's stages: `guard` reads the input and lexes it once
// (encoding, size cap, eliding long runs), `doc` turns its events
// into cases, and `text` holds the reference, line-end, time and UTF-8
// helpers both use. This file holds the public types and the parse loop
// that wires the stages together.
mod doc;
mod guard;
mod reruns;
mod text;

use std::fs::File;
use std::io::{self, BufRead, Read};
use std::path::Path;

use quick_xml::events::Event as QuickEvent;
use quick_xml::Reader;

use doc::Doc;
use guard::{Event, Guard};
pub use reruns::fold_reruns;

/// Bytes kept of a failure/error `message` attribute (cut at a character
/// boundary; no marker).
pub const MAX_MESSAGE: usize = 4096;
/// Bytes kept of the head of a failure/error text body; the rest is dropped
/// and a marker line giving the number of dropped bytes is appended.
pub const MAX_DETAIL: usize = 16384;
/// Largest report read, in bytes; a larger one is [`JunitError::TooLarge`].
pub const MAX_INPUT: u64 = 1 << 30;
/// Deepest element nesting accepted; deeper is [`JunitError::Malformed`].
pub const MAX_DEPTH: usize = 256;

pub use crate::record::CaseOutcome;

/// One `<testcase>` element of a report.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Case {
    /// `name` attribute of the innermost enclosing `<testsuite>`, `""` if
    /// none.
    pub suite: String,
    /// `classname` attribute, else `class` (Codeception), else `""`.
    pub classname: String,
    /// `name` attribute, `""` if missing.
    pub name: String,
    /// The reference reading (the corpus README's): direct children only,
    /// failure > error > skipped > passed; flaky*/rerun* elements ignored.
    pub outcome: CaseOutcome,
    /// The first attempt: equal to `outcome`, except that a case whose only
    /// outcome-like children are `<flakyFailure>`/`<flakyError>` (it failed,
    /// then passed on rerun) is Failed/Errored here, after the first such
    /// element. k of N counts this one: a retry that passed must not hide the
    /// failure. (`<rerunFailure>`/`<rerunError>`/`<rerun>` without a
    /// `<failure>` or `<error>` are read the same way; pytest's one case per
    /// attempt is folded by [`fold_reruns`].)
    pub first_attempt: CaseOutcome,
    /// Number of `<flakyFailure>`/`<flakyError>`/`<rerunFailure>`/`<rerunError>`
    /// direct children.
    pub reruns: u32,
    /// `message` attribute of the first `<failure>`/`<error>` (or of the first
    /// flaky*/rerun* element when the first attempt failed only there), capped
    /// at [`MAX_MESSAGE`] bytes.
    pub message: Option<String>,
    /// Text body (text + CDATA, and for Surefire a nested `<stackTrace>`) of
    /// that same element, capped at [`MAX_DETAIL`] bytes plus a marker line;
    /// `None` when the body is empty or only whitespace. When that element
    /// has neither message nor body, the text of a `<system-out>` that
    /// follows it in the case (CTest writes `<failure message=""/>` and the
    /// test's output there).
    pub detail: Option<String>,
    /// `time` attribute in seconds when it parses as a finite number
    /// (`"0."` and `"2,503.1"` are tolerated; garbage is `None`).
    pub time_s: Option<f64>,
    /// `file` attribute (pytest xunit1, Surefire, PHPUnit), when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// `line` attribute when it parses as a line number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

impl Case {
    /// Whether the first attempt failed (or errored) and the reference
    /// outcome is a pass.
    pub fn passed_on_rerun(&self) -> bool {
        self.outcome == CaseOutcome::Passed
            && matches!(
                self.first_attempt,
                CaseOutcome::Failed | CaseOutcome::Errored
            )
    }

    /// Stable id: `classname::name` when classname is non-empty, else
    /// `suite::name` when suite is non-empty, else `name`.
    pub fn id(&self) -> String {
        if !self.classname.is_empty() {
            format!("{}::{}", self.classname, self.name)
        } else if !self.suite.is_empty() {
            format!("{}::{}", self.suite, self.name)
        } else {
            self.name.clone()
        }
    }
}

/// The family id: the id with parameters stripped — trailing `[...]` groups
/// (pytest `test_x[a-1]`, also nested brackets) and a trailing `(...)` group,
/// then trailing whitespace. `test_x[a-1]` → `test_x`; `a::b (case 3)` →
/// `a::b`; ids without parameters are unchanged, and an id that is nothing
/// but a group is kept whole.
pub fn family_id(id: &str) -> String {
    let mut rest = id.trim_end();
    while let Some(open) = trailing_group(rest, b'[', b']') {
        rest = rest[..open].trim_end();
    }
    if let Some(open) = trailing_group(rest, b'(', b')') {
        rest = rest[..open].trim_end();
    }
    if rest.is_empty() {
        id.to_string()
    } else {
        rest.to_string()
    }
}

/// Start of the balanced `open`…`close` group that ends `s`, if `s` ends
/// with `close` and the brackets balance.
fn trailing_group(s: &str, open: u8, close: u8) -> Option<usize> {
    let bytes = s.as_bytes();
    if bytes.last() != Some(&close) {
        return None;
    }
    let mut depth = 0usize;
    for (i, &b) in bytes.iter().enumerate().rev() {
        if b == close {
            depth += 1;
        } else if b == open {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// A parsed report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    /// Every `<testcase>`, in document order of their start tags.
    pub cases: Vec<Case>,
    /// Local name of the root element.
    pub root: String,
    /// Trouble outside any test case, in words: an `<error>` directly in a
    /// `<testsuite>`, or a suite whose `errors` count no failing or
    /// erroring test case in it carries.
    pub infra: Vec<String>,
}

/// Why a report could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum JunitError {
    /// The report is 0 bytes or only whitespace.
    #[error("the report is empty")]
    Empty,
    /// The report is not well-formed XML.
    #[error("the report is not well-formed XML (at byte {position}): {message}")]
    Malformed {
        /// Approximate byte offset of the problem in the input.
        position: u64,
        /// What is wrong.
        message: String,
    },
    /// The report could not be read.
    #[error("cannot read the report {path}: {message}")]
    Io {
        /// The file (`<input>` for [`parse`]).
        path: String,
        /// The I/O error.
        message: String,
    },
    /// The report is larger than [`MAX_INPUT`].
    #[error("the report is larger than {limit} bytes")]
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
}

/// Parses a report from a reader. I/O errors name the path `<input>`.
pub fn parse(input: impl BufRead) -> Result<Parsed, JunitError> {
    parse_with(input, &LIMITS).map(|(parsed, _)| parsed)
}

/// Parses a report of `size` bytes (its file's length) from a reader: as
/// [`parse`], with the list of cases reserved from the size.
pub fn parse_known_size(input: impl Read, size: u64) -> Result<Parsed, JunitError> {
    parse_sized(input, &LIMITS, size).map(|(parsed, _)| parsed)
}

/// Parses the report at `path`; a missing or unreadable file is
/// [`JunitError::Io`].
pub fn parse_file(path: &Path) -> Result<Parsed, JunitError> {
    let io_error = |e: io::Error| JunitError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let file = File::open(path).map_err(io_error)?;
    let size = file.metadata().map_err(io_error)?.len();
    if size > LIMITS.input {
        return Err(JunitError::TooLarge {
            limit: LIMITS.input,
        });
    }
    parse_sized(file, &LIMITS, size)
        .map(|(parsed, _)| parsed)
        .map_err(|e| match e {
            JunitError::Io { message, .. } => JunitError::Io {
                path: path.display().to_string(),
                message,
            },
            other => other,
        })
}

/// The bounds the reader works within (smaller in tests).
#[derive(Debug, Clone, Copy)]
struct Limits {
    /// Bytes of one text run, CDATA section, comment, PI or attribute value
    /// kept before the rest of it is elided.
    keep: usize,
    /// Longest tag or DOCTYPE (including kept attribute values).
    markup: usize,
    /// Largest input.
    input: u64,
    /// Deepest nesting.
    depth: usize,
    /// Size of the read buffer.
    chunk: usize,
}

const LIMITS: Limits = Limits {
    keep: 128 * 1024,
    markup: 8 << 20,
    input: MAX_INPUT,
    depth: MAX_DEPTH,
    chunk: 256 * 1024,
};

/// Longest character or entity reference looked at (`&` to `;`).
const MAX_REF: usize = 64;

/// What the parse loop observed, for tests of the memory bound.
#[derive(Debug, Default, Clone, Copy)]
struct Stats {
    /// Largest capacity the buffer for elided runs' heads and long tags
    /// reached (events borrow from the fixed read buffer otherwise).
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "read by the tests of the memory bound")
    )]
    max_event_buffer: usize,
}

fn parse_with(input: impl Read, limits: &Limits) -> Result<(Parsed, Stats), JunitError> {
    parse_sized(input, limits, 0)
}

/// Bytes of report per test case assumed when reserving room for the cases
/// of a report of known size (reports run 150 to 500 bytes a case; fewer
/// cases than this many bytes each cost only untouched address space, more
/// grow the list as usual).
const BYTES_PER_CASE: u64 = 256;

/// [`parse_with`] for an input of `size` bytes (0 when unknown): the list of
/// cases is reserved up front, so it is not copied through ever larger
/// buffers while it grows.
fn parse_sized(
    input: impl Read,
    limits: &Limits,
    size: u64,
) -> Result<(Parsed, Stats), JunitError> {
    let mut guard = Guard::new(input, *limits);
    let mut doc = Doc::new(*limits);
    doc.reserve((size / BYTES_PER_CASE) as usize);
    loop {
        // Where this event starts in the input, for errors found in it.
        let at = guard.position();
        let result = match guard.next(doc.ignores_space())? {
            Event::Start {
                tag,
                name_len,
                attrs,
                empty,
            } => doc.start(tag, name_len, attrs, empty),
            Event::End { name } => doc.end_tag(name),
            Event::Text {
                raw,
                elided,
                elided_text,
            } => doc.text(raw, false, elided, elided_text),
            Event::CData { raw, elided } => doc.text(raw, true, elided, false),
            Event::Decl(bytes) => decl(&mut doc, bytes),
            Event::DocType => doc.doctype(),
            Event::Markup => {
                doc.seen_markup = true;
                Ok(())
            }
            Event::Eof => break,
        };
        if let Err(message) = result {
            return Err(JunitError::Malformed {
                position: at,
                message,
            });
        }
    }
    let stats = Stats {
        max_event_buffer: guard.max_side,
    };
    doc.finish(guard.position()).map(|parsed| (parsed, stats))
}

/// Hands the XML declaration (`<?xml` to `?>`) to the document as
/// quick-xml reads it.
fn decl(doc: &mut Doc, bytes: &[u8]) -> Check {
    match Reader::from_reader(bytes).read_event() {
        Ok(QuickEvent::Decl(d)) => doc.decl(&d),
        Ok(_) => Err("bad XML declaration".into()),
        Err(e) => Err(format!("bad XML declaration: {e}")),
    }
}

/// A check's result: `Err` holds the message of a [`JunitError::Malformed`].
type Check<T = ()> = Result<T, String>;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::path::PathBuf;

    /// Parses `xml`, expecting [`JunitError::Malformed`]; returns its message.
    pub(super) fn malformed(xml: &[u8]) -> String {
        match parse(xml) {
            Err(JunitError::Malformed { message, .. }) => message,
            other => panic!("{:?} → {other:?}", String::from_utf8_lossy(xml)),
        }
    }

    /// Limits small enough that eliding happens on ordinary tests.
    fn tiny(keep: usize) -> Limits {
        Limits {
            keep,
            markup: 1 << 20,
            input: MAX_INPUT,
            depth: MAX_DEPTH,
            chunk: 4 * MAX_REF,
        }
    }

    /// A reader that hands out its data in the given chunk sizes (cycled).
    struct Chunky<'a> {
        data: &'a [u8],
        sizes: Vec<usize>,
        next: usize,
    }

    impl Read for Chunky<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let want = self.sizes[self.next % self.sizes.len()].max(1);
            self.next += 1;
            let n = want.min(out.len()).min(self.data.len());
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    /// A report with one testcase named `name` whose content is `body`.
    pub(super) fn case(name: &str, body: &str) -> String {
        format!("<testsuite name=\"s\"><testcase classname=\"c\" name=\"{name}\">{body}</testcase></testsuite>")
    }

    #[test]
    fn family_ids() {
        for (id, family) in [
            ("tests.test_lib::test_x[a-1]", "tests.test_lib::test_x"),
            ("test_x[a-1]", "test_x"),
            ("a::b (case 3)", "a::b"),
            ("t[a[b]c]", "t"),
            ("t[a][b]", "t"),
            ("t [a] [b]  ", "t"),
            ("T::TestData(2,\"A\")", "T::TestData"),
            ("t(String)[1]", "t"),
            ("t (a) (b)", "t (a)"),
            ("t(a)[x] [y]", "t"),
            ("plain::name", "plain::name"),
            ("name ", "name"),
            ("[only]", "[only]"),
            ("(only)", "(only)"),
            ("t[unbalanced", "t[unbalanced"),
            ("t]", "t]"),
            ("t[a]]", "t[a]]"),
            ("", ""),
            ("Go/sub/[x]", "Go/sub/"),
        ] {
            assert_eq!(family_id(id), family, "family_id({id:?})");
        }
    }

    #[test]
    fn ids() {
        let mut c = Case {
            suite: "S".into(),
            classname: "C".into(),
            name: "n".into(),
            outcome: CaseOutcome::Passed,
            first_attempt: CaseOutcome::Passed,
            reruns: 0,
            message: None,
            detail: None,
            time_s: None,
            file: None,
            line: None,
        };
        assert_eq!(c.id(), "C::n");
        c.classname.clear();
        assert_eq!(c.id(), "S::n");
        c.suite.clear();
        assert_eq!(c.id(), "n");
        c.name.clear();
        assert_eq!(c.id(), "");
    }

    #[test]
    fn io_errors_name_the_file() {
        let err = parse_file(Path::new("/nonexistent/report.xml")).unwrap_err();
        assert!(matches!(&err, JunitError::Io { path, .. } if path == "/nonexistent/report.xml"));
        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::other("disk on fire"))
            }
        }
        let err = parse(io::BufReader::new(Broken)).unwrap_err();
        assert!(matches!(&err, JunitError::Io { message, .. } if message.contains("disk on fire")));
    }

    // --- property tests -------------------------------------------------

    /// Name, outcome, first attempt, reruns, message and detail of a case.
    type Expected = (
        String,
        CaseOutcome,
        CaseOutcome,
        u32,
        Option<String>,
        Option<String>,
    );

    /// A generated report and what the reference reading says about it.
    #[derive(Debug, Clone)]
    struct Model {
        xml: Vec<u8>,
        cases: Vec<Expected>,
    }

    fn escape(s: &str, attr: bool) -> String {
        let mut out = String::new();
        for c in s.chars() {
            match c {
                '<' => out.push_str("&lt;"),
                '&' => out.push_str("&amp;"),
                '>' => out.push_str(if attr { ">" } else { "&gt;" }),
                '"' => out.push_str("&quot;"),
                '\'' => out.push_str("&apos;"),
                '\n' if attr => out.push_str("&#10;"),
                '\r' => out.push_str("&#13;"),
                '\t' if attr => out.push_str("&#9;"),
                c => out.push(c),
            }
        }
        out
    }

    fn text_strategy() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z ]{0,12}",
            "[a-zA-Z0-9<>&\"' \\n\\t\\]\\-é😀]{0,80}",
            "[x\\]\\->?]{0,300}",
        ]
    }

    /// (kind, message, body, as CDATA) for one child of a testcase;
    /// kind 0..=6 = failure, error, skipped, flakyFailure, flakyError,
    /// rerunFailure, system-out.
    fn child_strategy() -> impl Strategy<Value = (u8, Option<String>, String, bool)> {
        (
            0u8..7,
            proptest::option::of(text_strategy()),
            text_strategy(),
            any::<bool>(),
        )
    }

    fn model_strategy() -> impl Strategy<Value = Model> {
        let case = (
            "[a-z_]{1,8}(\\[[a-z0-9-]{1,4}\\])?",
            proptest::collection::vec(child_strategy(), 0..4),
            any::<bool>(),
        );
        (proptest::collection::vec(case, 0..6), any::<bool>(), any::<bool>()).prop_map(
            |(cases, crlf, comments)| {
                let nl = if crlf { "\r\n" } else { "\n" };
                let mut xml = format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>{nl}<testsuites>{nl}<testsuite name=\"s\">{nl}");
                let mut expected = Vec::new();
                for (name, children, single) in cases {
                    let q = if single { '\'' } else { '"' };
                    xml.push_str(&format!("<testcase classname={q}c{q} name={q}{name}{q}>"));
                    let (mut failed, mut errored, mut skipped) = (false, false, false);
                    let mut reruns = 0;
                    let mut first_rerun = None;
                    let mut primary = None;
                    let mut rerun = None;
                    let mut output: Option<String> = None;
                    for (kind, message, body, cdata) in children {
                        let tag = ["failure", "error", "skipped", "flakyFailure", "flakyError", "rerunFailure", "system-out"][kind as usize];
                        xml.push_str(&format!("<{tag}"));
                        if let Some(m) = &message {
                            xml.push_str(&format!(" message={q}{}{q}", escape(m, true)));
                        }
                        xml.push('>');
                        if comments {
                            xml.push_str("<!-- c -->");
                        }
                        let body_ok = cdata && !body.contains("]]>");
                        if body_ok {
                            xml.push_str(&format!("<![CDATA[{body}]]>"));
                        } else {
                            xml.push_str(&escape(&body, false));
                        }
                        xml.push_str(&format!("</{tag}>{nl}"));
                        let capture = (message.clone(), body.clone());
                        match kind {
                            0 | 1 => {
                                if kind == 0 { failed = true } else { errored = true }
                                if primary.is_none() {
                                    primary = Some(capture);
                                }
                            }
                            2 => skipped = true,
                            3..=5 => {
                                reruns += 1;
                                first_rerun.get_or_insert(if kind == 4 { CaseOutcome::Errored } else { CaseOutcome::Failed });
                                if rerun.is_none() {
                                    rerun = Some(capture);
                                }
                            }
                            6 if (failed || errored) && output.is_none() => output = Some(body.clone()),
                            _ => {}
                        }
                    }
                    xml.push_str(&format!("</testcase>{nl}"));
                    let outcome = if failed {
                        CaseOutcome::Failed
                    } else if errored {
                        CaseOutcome::Errored
                    } else if skipped {
                        CaseOutcome::Skipped
                    } else {
                        CaseOutcome::Passed
                    };
                    let (first, capture) = match (outcome, first_rerun) {
                        (CaseOutcome::Passed, Some(f)) => (f, rerun),
                        (CaseOutcome::Failed | CaseOutcome::Errored, _) => (outcome, primary),
                        _ => (outcome, None),
                    };
                    let normal = |b: &str| {
                        let b = b.replace("\r\n", "\n").replace('\r', "\n");
                        (!b.trim().is_empty()).then_some(b)
                    };
                    let (message, mut detail) = match capture {
                        Some((m, b)) => (m, normal(&b)),
                        None => (None, None),
                    };
                    // A failure that says nothing takes the case's output.
                    let said_nothing = message.as_deref().is_none_or(|m| m.trim().is_empty()) && detail.is_none();
                    if said_nothing && matches!(first, CaseOutcome::Failed | CaseOutcome::Errored) {
                        detail = output.as_deref().and_then(normal);
                    }
                    expected.push((name, outcome, first, reruns, message, detail));
                }
                xml.push_str(&format!("</testsuite>{nl}</testsuites>{nl}"));
                Model { xml: xml.into_bytes(), cases: expected }
            },
        )
    }

    fn corpus_files() -> &'static [(PathBuf, Vec<u8>)] {
        static FILES: std::sync::OnceLock<Vec<(PathBuf, Vec<u8>)>> = std::sync::OnceLock::new();
        FILES.get_or_init(|| {
            let root = Path::new(env!("CARGO_MANIFEST_DIR"));
            let shared = root.join("../shared/junit-corpus");
            let dir = if shared.is_dir() {
                shared
            } else {
                root.join("tests/fixtures/junit")
            };
            let mut files = Vec::new();
            for dialect in std::fs::read_dir(&dir).expect("corpus").flatten() {
                if let Ok(entries) = std::fs::read_dir(dialect.path()) {
                    for f in entries.flatten() {
                        let path = f.path();
                        if path.extension().is_some_and(|e| e == "xml") {
                            let bytes = std::fs::read(&path).unwrap();
                            files.push((path, bytes));
                        }
                    }
                }
            }
            files.sort();
            assert!(
                files.len() >= 90,
                "corpus at {} has {} files",
                dir.display(),
                files.len()
            );
            files
        })
    }

    /// Every corpus file, mutated a few ways at deterministic spots, reads
    /// without panicking (the proptest below samples more spots).
    #[test]
    fn every_corpus_file_survives_mutation() {
        for (path, original) in corpus_files() {
            if original.is_empty() {
                continue;
            }
            let mut seed = original.len() as u64 ^ 0x9E37_79B9_7F4A_7C15;
            let mut next = |n: usize| {
                seed = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                (seed >> 33) as usize % n
            };
            for _ in 0..3 {
                let i = next(original.len());
                let mut flipped = original.clone();
                flipped[i] ^= 1 + next(255) as u8;
                let mut cut = original.clone();
                cut.drain(i..(i + 1 + next(256)).min(original.len()));
                for bytes in [&original[..i], &flipped[..], &cut[..]] {
                    let survived = std::panic::catch_unwind(|| parse(bytes));
                    assert!(survived.is_ok(), "{} (mutated) panicked", path.display());
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let _ = parse(&bytes[..]);
            let _ = parse_with(&bytes[..], &tiny(8));
        }

        #[test]
        fn bytes_spliced_into_a_report_never_panic(
            at in 0usize..400,
            junk in proptest::collection::vec(any::<u8>(), 0..64),
            junk_text in "[<>&;!?\\[\\]\"'/=a-z \\-]{0,40}",
        ) {
            let base = case("t[1]", "<failure message='m &amp; n'><![CDATA[x]]>y &lt; z</failure><system-out>o</system-out>").into_bytes();
            for splice in [junk, junk_text.into_bytes()] {
                let at = at.min(base.len());
                let mut bytes = base[..at].to_vec();
                bytes.extend_from_slice(&splice);
                bytes.extend_from_slice(&base[at..]);
                let _ = parse(&bytes[..]);
                let _ = parse_with(&bytes[..], &tiny(8));
            }
        }

        #[test]
        fn mutated_corpus_files_never_panic(
            pick in any::<prop::sample::Index>(),
            kind in 0u8..3,
            a in any::<prop::sample::Index>(),
            b in any::<prop::sample::Index>(),
            byte in any::<u8>(),
        ) {
            let files = corpus_files();
            let (path, original) = &files[pick.index(files.len())];
            let mut bytes = original.clone();
            if !bytes.is_empty() {
                let i = a.index(bytes.len());
                match kind {
                    0 => bytes.truncate(i),
                    1 => bytes[i] ^= byte.max(1),
                    _ => {
                        let j = (i + 1 + b.index(256)).min(bytes.len());
                        bytes.drain(i..j);
                    }
                }
            }
            let survived = std::panic::catch_unwind(|| parse(&bytes[..]));
            prop_assert!(survived.is_ok(), "{} (mutated) panicked", path.display());
        }

        /// Token soup (fragments of markup in any order) reads the same
        /// whatever the read chunking, with default and with tiny limits.
        #[test]
        fn token_soup_reads_the_same_in_any_chunking(
            tokens in proptest::collection::vec(prop_oneof![
                Just("<a".to_string()), Just("<testcase name='x'>".to_string()),
                Just("</testcase>".to_string()), Just("<failure message=\"m".to_string()),
                Just("</failure>".to_string()), Just("<b/>".to_string()), Just("</a>".to_string()),
                Just(">".to_string()), Just("\"".to_string()), Just("'".to_string()),
                Just("<!--".to_string()), Just("-->".to_string()), Just("-".to_string()),
                Just("<![CDATA[".to_string()), Just("]]>".to_string()), Just("]".to_string()),
                Just("<?".to_string()), Just("?>".to_string()), Just("<!DOCTYPE r [".to_string()),
                Just("&amp;".to_string()), Just("&".to_string()), Just(";".to_string()),
                Just("é".to_string()), "[a-z ]{0,70}", "x{60,200}",
            ], 0..24),
            sizes in proptest::collection::vec(1usize..50, 1..6),
            keep in 16usize..48,
        ) {
            let xml = tokens.concat();
            for limits in [LIMITS, tiny(keep)] {
                let whole = parse_with(xml.as_bytes(), &limits).map(|(p, _)| p);
                let chunky = Chunky { data: xml.as_bytes(), sizes: sizes.clone(), next: 0 };
                let chunked = parse_with(chunky, &limits).map(|(p, _)| p);
                match (&whole, &chunked) {
                    (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
                    (Err(a), Err(b)) => prop_assert_eq!(
                        std::mem::discriminant(a), std::mem::discriminant(b), "{:?} vs {:?}", a, b
                    ),
                    _ => prop_assert!(false, "{:?} vs {:?} on {:?}", whole, chunked, xml),
                }
            }
        }

        /// The guard and the parser give the same answer whatever the read
        /// chunking; with a tiny keep limit the outcomes still match the
        /// model, and kept text is a prefix of the full text.
        #[test]
        fn generated_reports_match_the_model(
            model in model_strategy(),
            sizes in proptest::collection::vec(1usize..40, 1..8),
            keep in 16usize..64,
        ) {
            let full = parse(&model.xml[..]).unwrap_or_else(|e| panic!("{e}\n{}", String::from_utf8_lossy(&model.xml)));
            prop_assert_eq!(full.cases.len(), model.cases.len());
            for (got, (name, outcome, first, reruns, message, detail)) in full.cases.iter().zip(&model.cases) {
                prop_assert_eq!(&got.name, name);
                prop_assert_eq!((got.outcome, got.first_attempt, got.reruns), (*outcome, *first, *reruns));
                prop_assert_eq!(&got.message, message);
                prop_assert_eq!(&got.detail, detail);
            }
            let chunky = Chunky { data: &model.xml, sizes: sizes.clone(), next: 0 };
            let (chunked, _) = parse_with(chunky, &LIMITS).unwrap();
            prop_assert_eq!(&chunked, &full);

            let chunky = Chunky { data: &model.xml, sizes, next: 0 };
            let (small, _) = parse_with(chunky, &tiny(keep)).unwrap();
            prop_assert_eq!(small.cases.len(), full.cases.len());
            for (s, f) in small.cases.iter().zip(&full.cases) {
                prop_assert_eq!((&s.name, s.outcome, s.first_attempt, s.reruns), (&f.name, f.outcome, f.first_attempt, f.reruns));
                if let (Some(sm), Some(fm)) = (&s.message, &f.message) {
                    prop_assert!(fm.starts_with(sm.as_str()), "{:?} vs {:?}", sm, fm);
                } else {
                    prop_assert_eq!(s.message.is_some(), f.message.is_some());
                }
                let kept = s.detail.as_deref().map(|d| d.split("\n[flakelab: ").next().unwrap_or(d));
                match (kept, &f.detail) {
                    (Some(k), Some(fd)) => prop_assert!(fd.starts_with(k), "{:?} vs {:?}", k, fd),
                    (None, None) => {}
                    (Some(k), None) => prop_assert!(k.trim().is_empty() || s.detail.as_deref().unwrap().contains("more bytes dropped")),
                    (None, Some(fd)) => prop_assert!(false, "lost detail {:?}", fd),
                }
            }
        }
    }
}
