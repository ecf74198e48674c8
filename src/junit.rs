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
//! more than a bounded amount of memory whatever the report's size: events are
//! streamed from `quick_xml::Reader`, and a small lexer in front of it (the
//! `Guard`) elides the middle of any text run, CDATA section, comment or
//! attribute value longer than 128 KiB before quick-xml buffers it, so a
//! 100 MB failure body costs about as much memory as a 100 KB one.
//!
//! A report that is not well-formed XML is an error, not zero cases: a
//! truncated report from a killed runner must not read as "nothing failed".
//! Deliberate tolerances (documented divergences from a validating parser):
//! whitespace before the XML declaration, raw control characters, invalid
//! UTF-8 (replaced by U+FFFD), character references to control characters,
//! `]]>` in text, a declared `UTF-16` on 8-bit content, and unbound namespace
//! prefixes are accepted. Entities declared in an internal DTD subset are not expanded; a
//! reference to one is an error like any undefined entity.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufRead, Read};
use std::path::Path;

use encoding_rs::{Encoding, UTF_16BE, UTF_16LE, UTF_8};
use quick_xml::events::{BytesDecl, BytesStart, Event};
use quick_xml::Reader;

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

/// How one attempt at a test case ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseOutcome {
    /// No failure, error or skipped child.
    Passed,
    /// A `<failure>` child.
    Failed,
    /// An `<error>` child (and no `<failure>`).
    Errored,
    /// A `<skipped>` child (and no `<failure>` or `<error>`).
    Skipped,
}

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
    /// failure. (`<rerunFailure>`/`<rerunError>` without a `<failure>` or
    /// `<error>` are read the same way.)
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
    /// `None` when the body is empty or only whitespace.
    pub detail: Option<String>,
    /// `time` attribute in seconds when it parses as a finite number
    /// (`"0."` and `"2,503.1"` are tolerated; garbage is `None`).
    pub time_s: Option<f64>,
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

/// Parses the report at `path`; a missing or unreadable file is
/// [`JunitError::Io`].
pub fn parse_file(path: &Path) -> Result<Parsed, JunitError> {
    let io_error = |e: io::Error| JunitError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let file = File::open(path).map_err(io_error)?;
    if file.metadata().map_err(io_error)?.len() > LIMITS.input {
        return Err(JunitError::TooLarge {
            limit: LIMITS.input,
        });
    }
    parse_with(file, &LIMITS)
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
    /// handed to quick-xml before the rest of it is elided.
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

/// Bytes of a processing instruction always kept (so the XML declaration is
/// never elided, whatever `keep` is).
const MIN_PI_KEEP: usize = 1024;

/// What the parse loop observed, for tests of the memory bound.
#[derive(Debug, Default, Clone, Copy)]
struct Stats {
    /// Largest capacity the event buffer reached.
    max_event_buffer: usize,
}

fn parse_with(input: impl Read, limits: &Limits) -> Result<(Parsed, Stats), JunitError> {
    let mut reader = Reader::from_reader(Guard::new(input, *limits));
    let config = reader.config_mut();
    config.check_end_names = true;
    config.check_comments = true;
    config.expand_empty_elements = false;
    config.trim_text(false);

    let mut doc = Doc::new(*limits);
    let mut stats = Stats::default();
    let mut buf = Vec::with_capacity(16 * 1024);
    loop {
        buf.clear();
        // Where this event starts in the input, for errors found in it.
        let at = reader.buffer_position() + reader.get_ref().skipped;
        let event = match reader.read_event_into(&mut buf) {
            Ok(event) => event,
            Err(e) => {
                let guard = reader.get_mut();
                if let Some(fault) = guard.fault.take() {
                    return Err(fault);
                }
                let skipped = guard.skipped;
                return Err(match e {
                    quick_xml::Error::Io(io) => JunitError::Io {
                        path: "<input>".to_string(),
                        message: io.to_string(),
                    },
                    other => JunitError::Malformed {
                        position: reader.error_position() + skipped,
                        message: other.to_string(),
                    },
                });
            }
        };
        let (elided, elided_text) = reader.get_mut().take_elided();
        let result = match event {
            Event::Start(e) => doc.start(&e, false),
            Event::Empty(e) => doc.start(&e, true),
            Event::End(_) => doc.end(),
            Event::Text(t) => doc.text(&t, false, elided, elided_text),
            Event::CData(t) => doc.text(&t, true, elided, false),
            Event::Decl(d) => doc.decl(&d),
            Event::DocType(_) => doc.doctype(),
            Event::PI(_) | Event::Comment(_) => {
                doc.seen_markup = true;
                Ok(())
            }
            Event::Eof => break,
        };
        stats.max_event_buffer = stats.max_event_buffer.max(buf.capacity());
        if let Err(message) = result {
            return Err(JunitError::Malformed {
                position: at,
                message,
            });
        }
    }
    let position = reader.buffer_position() + reader.get_ref().skipped;
    doc.finish(position).map(|parsed| (parsed, stats))
}

// ---------------------------------------------------------------------------
// The document builder: element stack, open cases, captured failure text.
// ---------------------------------------------------------------------------

/// What an open element is, for the reference reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `<testsuite>`: its name is on the suite stack.
    Suite,
    /// `<testcase>`: its builder is on the open-case stack.
    Case,
    /// An outcome-like direct child of a testcase that is not captured.
    Outcome,
    /// The failure/error (or flaky/rerun) element whose text is captured.
    Capture(Slot),
    /// A `<stackTrace>` directly inside the captured element.
    Trace(Slot),
    /// Anything else.
    Other,
}

/// Which capture of an open case an element fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// The first `<failure>`/`<error>`.
    Primary,
    /// The first flaky*/rerun* element, used when there is no failure/error.
    Rerun,
}

/// One open element: its kind and where its local name starts in
/// [`Doc::names`].
#[derive(Debug, Clone, Copy)]
struct Frame {
    kind: Kind,
    name_at: usize,
}

/// Message and body of one failure-like element.
#[derive(Debug, Default)]
struct Capture {
    message: Option<String>,
    detail: String,
    /// Input bytes of the body not kept.
    dropped: u64,
    /// No more body is kept.
    full: bool,
}

impl Capture {
    fn push(&mut self, text: &str) {
        if self.full {
            self.dropped += text.len() as u64;
            return;
        }
        let room = MAX_DETAIL - self.detail.len();
        if text.len() <= room {
            self.detail.push_str(text);
        } else {
            let cut = floor_char_boundary(text, room);
            self.detail.push_str(&text[..cut]);
            self.dropped += (text.len() - cut) as u64;
            self.full = true;
        }
    }

    fn finish(self) -> (Option<String>, Option<String>) {
        let mut detail = self.detail;
        let detail = if self.dropped > 0 {
            detail.push_str(&format!(
                "\n[flakelab: {} more bytes dropped]",
                self.dropped
            ));
            Some(detail)
        } else if detail.trim().is_empty() {
            None
        } else {
            Some(detail)
        };
        (self.message, detail)
    }
}

/// A `<testcase>` whose end tag has not been seen yet.
#[derive(Debug)]
struct OpenCase {
    index: usize,
    failed: bool,
    errored: bool,
    skipped: bool,
    /// Outcome of the first flaky*/rerun* child, if any.
    first_rerun: Option<CaseOutcome>,
    reruns: u32,
    primary: Option<Capture>,
    rerun: Option<Capture>,
}

/// Attribute values of interest on one start tag.
#[derive(Default)]
struct Attrs {
    name: Option<String>,
    classname: Option<String>,
    class: Option<String>,
    time: Option<f64>,
    message: Option<String>,
}

struct Doc {
    limits: Limits,
    cases: Vec<Case>,
    root: Option<String>,
    root_closed: bool,
    /// Any markup or non-whitespace text seen (else an empty report).
    seen_markup: bool,
    doctype: bool,
    frames: Vec<Frame>,
    /// Local names of the open elements, back to back.
    names: Vec<u8>,
    suites: Vec<String>,
    open: Vec<OpenCase>,
    /// Encoding of the bytes, when not UTF-8.
    encoding: Option<&'static Encoding>,
    scratch: Vec<u8>,
}

type Check<T = ()> = Result<T, String>;

impl Doc {
    fn new(limits: Limits) -> Doc {
        Doc {
            limits,
            cases: Vec::new(),
            root: None,
            root_closed: false,
            seen_markup: false,
            doctype: false,
            frames: Vec::new(),
            names: Vec::new(),
            suites: Vec::new(),
            open: Vec::new(),
            encoding: None,
            scratch: Vec::new(),
        }
    }

    fn decl(&mut self, decl: &BytesDecl<'_>) -> Check {
        if self.seen_markup {
            return Err("the XML declaration is not at the start of the report".into());
        }
        self.seen_markup = true;
        decl.version()
            .map_err(|e| format!("bad XML declaration: {e}"))?;
        let Some(label) = decl.encoding() else {
            return Ok(());
        };
        let label = label.map_err(|e| format!("bad XML declaration: {e}"))?;
        let Some(encoding) = Encoding::for_label(&label) else {
            return Err(format!(
                "unknown encoding {:?} in the XML declaration",
                String::from_utf8_lossy(&label)
            ));
        };
        if encoding == UTF_8 || encoding == UTF_16LE || encoding == UTF_16BE {
            // UTF-16 input was transcoded to UTF-8 before quick-xml; a
            // declared UTF-16 on 8-bit input is read as UTF-8 (tolerance).
            self.encoding = None;
        } else if encoding.is_ascii_compatible() {
            self.encoding = Some(encoding);
        } else {
            return Err(format!(
                "unsupported encoding {} in the XML declaration",
                encoding.name()
            ));
        }
        Ok(())
    }

    fn doctype(&mut self) -> Check {
        if self.root.is_some() {
            return Err("a DOCTYPE after the root element".into());
        }
        if self.doctype {
            return Err("a second DOCTYPE".into());
        }
        self.doctype = true;
        self.seen_markup = true;
        Ok(())
    }

    fn start(&mut self, e: &BytesStart<'_>, empty: bool) -> Check {
        self.seen_markup = true;
        if self.root_closed {
            return Err("content after the root element (two root elements?)".into());
        }
        if self.frames.len() >= self.limits.depth {
            return Err(format!(
                "elements nested deeper than {} levels",
                self.limits.depth
            ));
        }
        let qname = e.name();
        let qname = qname.as_ref();
        if !is_name_start(qname.first().copied()) {
            return Err(format!(
                "invalid element name {:?}",
                String::from_utf8_lossy(qname)
            ));
        }
        let local = local_name(qname);

        let parent = self.frames.last().map(|f| f.kind);
        let kind = match local {
            b"testsuite" => Kind::Suite,
            b"testcase" => Kind::Case,
            _ => match parent {
                Some(Kind::Case) => self.outcome_kind(local),
                Some(Kind::Capture(slot)) if local == b"stackTrace" => Kind::Trace(slot),
                _ => Kind::Other,
            },
        };

        let attrs = self.attributes(e, kind)?;

        if self.frames.is_empty() {
            self.root = Some(String::from_utf8_lossy(local).into_owned());
        }
        match kind {
            Kind::Suite => self.suites.push(attrs.name.unwrap_or_default()),
            Kind::Case => {
                self.open.push(OpenCase {
                    index: self.cases.len(),
                    failed: false,
                    errored: false,
                    skipped: false,
                    first_rerun: None,
                    reruns: 0,
                    primary: None,
                    rerun: None,
                });
                self.cases.push(Case {
                    suite: self.suites.last().cloned().unwrap_or_default(),
                    classname: attrs.classname.or(attrs.class).unwrap_or_default(),
                    name: attrs.name.unwrap_or_default(),
                    outcome: CaseOutcome::Passed,
                    first_attempt: CaseOutcome::Passed,
                    reruns: 0,
                    message: None,
                    detail: None,
                    time_s: attrs.time,
                });
            }
            Kind::Capture(slot) => {
                if let Some(case) = self.open.last_mut() {
                    let capture = Capture {
                        message: attrs.message,
                        ..Capture::default()
                    };
                    match slot {
                        Slot::Primary => case.primary = Some(capture),
                        Slot::Rerun => case.rerun = Some(capture),
                    }
                }
            }
            Kind::Outcome | Kind::Trace(_) | Kind::Other => {}
        }
        self.frames.push(Frame {
            kind,
            name_at: self.names.len(),
        });
        self.names.extend_from_slice(local);
        if empty {
            self.end()?;
        }
        Ok(())
    }

    /// Classifies a direct child of the innermost open testcase and records
    /// what it says about the case.
    fn outcome_kind(&mut self, local: &[u8]) -> Kind {
        let Some(case) = self.open.last_mut() else {
            return Kind::Other;
        };
        let (failure, rerun) = match local {
            b"failure" => (CaseOutcome::Failed, false),
            b"error" => (CaseOutcome::Errored, false),
            b"skipped" => {
                case.skipped = true;
                return Kind::Outcome;
            }
            b"flakyFailure" | b"rerunFailure" => (CaseOutcome::Failed, true),
            b"flakyError" | b"rerunError" => (CaseOutcome::Errored, true),
            _ => return Kind::Other,
        };
        if rerun {
            case.reruns = case.reruns.saturating_add(1);
            case.first_rerun.get_or_insert(failure);
            if case.primary.is_none() && case.rerun.is_none() {
                return Kind::Capture(Slot::Rerun);
            }
            return Kind::Outcome;
        }
        if failure == CaseOutcome::Failed {
            case.failed = true;
        } else {
            case.errored = true;
        }
        if case.primary.is_none() {
            case.rerun = None;
            return Kind::Capture(Slot::Primary);
        }
        Kind::Outcome
    }

    /// Checks every attribute of a start tag and decodes the ones `kind`
    /// keeps.
    fn attributes(&mut self, e: &BytesStart<'_>, kind: Kind) -> Check<Attrs> {
        let mut attrs = Attrs::default();
        // `<` and `&` are rare in attribute values: look at each value only
        // when the tag has one.
        let raw = e.attributes_raw();
        let suspicious = memchr::memchr2(b'<', b'&', raw).is_some();
        let mut scan = AttrScan { raw, at: 0 };
        // Keys seen so far, for the duplicate check, without allocating for
        // the usual handful.
        let mut seen: [&[u8]; 8] = [&[]; 8];
        let mut more: Vec<&[u8]> = Vec::new();
        let mut count = 0;
        while let Some((key, value)) = scan.next_attr()? {
            let earlier = &seen[..count.min(seen.len())];
            if earlier.contains(&key) || more.contains(&key) {
                return Err(format!(
                    "duplicate attribute {:?}",
                    String::from_utf8_lossy(key)
                ));
            }
            if count < seen.len() {
                seen[count] = key;
            } else {
                more.push(key);
            }
            count += 1;
            if suspicious && memchr::memchr(b'<', value).is_some() {
                return Err(format!(
                    "`<` in the value of attribute {:?}",
                    String::from_utf8_lossy(key)
                ));
            }
            match (kind, key) {
                (Kind::Case | Kind::Suite, b"name") => attrs.name = Some(self.attr_string(value)?),
                (Kind::Case, b"classname") => attrs.classname = Some(self.attr_string(value)?),
                (Kind::Case, b"class") => attrs.class = Some(self.attr_string(value)?),
                (Kind::Case, b"time") => attrs.time = self.attr_time(value)?,
                (Kind::Capture(_), b"message") => {
                    let mut message = self.attr_string(value)?;
                    message.truncate(floor_char_boundary(&message, MAX_MESSAGE));
                    attrs.message = Some(message);
                }
                _ if suspicious => check_refs(value)?,
                _ => {}
            }
        }
        Ok(attrs)
    }

    /// An attribute value, normalised and unescaped.
    fn attr_string(&mut self, raw: &[u8]) -> Check<String> {
        let plain = !raw
            .iter()
            .any(|&b| matches!(b, b'&' | b'\t' | b'\n' | b'\r'));
        if plain && self.encoding.is_none() {
            return Ok(utf8_string(raw));
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        let result = self.decode_into(raw, true, &mut scratch);
        let out = result.map(|()| utf8_string(&scratch));
        self.scratch = scratch;
        out
    }

    fn attr_time(&mut self, raw: &[u8]) -> Check<Option<f64>> {
        if memchr::memchr(b'&', raw).is_none() && self.encoding.is_none() {
            return Ok(std::str::from_utf8(raw).ok().and_then(parse_time));
        }
        Ok(parse_time(&self.attr_string(raw)?))
    }

    /// Decodes `raw` (document encoding) into UTF-8 bytes in `out`, with
    /// line-end (text) or whitespace (attribute) normalisation and
    /// references resolved.
    fn decode_into(&self, raw: &[u8], attr: bool, out: &mut Vec<u8>) -> Check {
        out.clear();
        match self.encoding {
            None => unescape(raw, attr, out),
            Some(encoding) => {
                let text = encoding.decode_without_bom_handling(raw).0;
                unescape(text.as_bytes(), attr, out)
            }
        }
    }

    fn text(&mut self, raw: &[u8], cdata: bool, elided: u64, elided_text: bool) -> Check {
        let Some(top) = self.frames.last() else {
            if cdata {
                return Err("CDATA outside the root element".into());
            }
            if elided_text || raw.iter().any(|&b| !is_xml_space(b)) {
                return Err("text outside the root element".into());
            }
            return Ok(());
        };
        let slot = match top.kind {
            Kind::Capture(slot) | Kind::Trace(slot) => slot,
            _ => {
                if !cdata {
                    check_refs(raw)?;
                }
                return Ok(());
            }
        };
        let full = self.capture(slot).is_none_or(|capture| capture.full);
        if full {
            if !cdata {
                check_refs(raw)?;
            }
            if let Some(capture) = self.capture(slot) {
                capture.dropped += raw.len() as u64 + elided;
            }
            return Ok(());
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        let result = if cdata {
            scratch.clear();
            match self.encoding {
                None => normalize_newlines(raw, &mut scratch),
                Some(encoding) => normalize_newlines(
                    encoding.decode_without_bom_handling(raw).0.as_bytes(),
                    &mut scratch,
                ),
            }
            Ok(())
        } else {
            self.decode_into(raw, false, &mut scratch)
        };
        if result.is_ok() {
            let text = match std::str::from_utf8(&scratch) {
                Ok(text) => Cow::Borrowed(text),
                Err(_) => String::from_utf8_lossy(&scratch),
            };
            if let Some(capture) = self.capture(slot) {
                capture.push(&text);
                if elided > 0 {
                    // The middle of this run was dropped: keep no text after
                    // the gap, so the detail stays a prefix of the body.
                    capture.dropped += elided;
                    capture.full = true;
                }
            }
        }
        self.scratch = scratch;
        result
    }

    fn capture(&mut self, slot: Slot) -> Option<&mut Capture> {
        let case = self.open.last_mut()?;
        match slot {
            Slot::Primary => case.primary.as_mut(),
            Slot::Rerun => case.rerun.as_mut(),
        }
    }

    fn end(&mut self) -> Check {
        let Some(frame) = self.frames.pop() else {
            return Err("an end tag without a start tag".into());
        };
        self.names.truncate(frame.name_at);
        match frame.kind {
            Kind::Suite => {
                self.suites.pop();
            }
            Kind::Case => {
                if let Some(open) = self.open.pop() {
                    self.close_case(open);
                }
            }
            Kind::Capture(_) | Kind::Outcome | Kind::Trace(_) | Kind::Other => {}
        }
        if self.frames.is_empty() {
            self.root_closed = true;
        }
        Ok(())
    }

    fn close_case(&mut self, open: OpenCase) {
        let Some(case) = self.cases.get_mut(open.index) else {
            return;
        };
        let outcome = if open.failed {
            CaseOutcome::Failed
        } else if open.errored {
            CaseOutcome::Errored
        } else if open.skipped {
            CaseOutcome::Skipped
        } else {
            CaseOutcome::Passed
        };
        let (first_attempt, capture) = match (outcome, open.first_rerun) {
            (CaseOutcome::Passed, Some(first)) => (first, open.rerun),
            (CaseOutcome::Failed | CaseOutcome::Errored, _) => (outcome, open.primary),
            _ => (outcome, None),
        };
        case.outcome = outcome;
        case.first_attempt = first_attempt;
        case.reruns = open.reruns;
        if let Some(capture) = capture {
            (case.message, case.detail) = capture.finish();
        }
    }

    fn finish(self, position: u64) -> Result<Parsed, JunitError> {
        if let Some(frame) = self.frames.last() {
            let name = String::from_utf8_lossy(&self.names[frame.name_at..]).into_owned();
            return Err(JunitError::Malformed {
                position,
                message: format!("the report ends inside <{name}> (truncated?)"),
            });
        }
        let Some(root) = self.root else {
            if !self.seen_markup {
                return Err(JunitError::Empty);
            }
            return Err(JunitError::Malformed {
                position,
                message: "no root element".into(),
            });
        };
        Ok(Parsed {
            cases: self.cases,
            root,
        })
    }
}

/// A validating scanner over the attributes of a start tag (the bytes after
/// the element name): `S Name S? = S? ("…" | '…')`, repeated. Values are
/// returned raw (not unescaped).
struct AttrScan<'a> {
    raw: &'a [u8],
    at: usize,
}

impl<'a> AttrScan<'a> {
    fn next_attr(&mut self) -> Check<Option<(&'a [u8], &'a [u8])>> {
        let raw = self.raw;
        let start = self.at;
        let mut i = start;
        while i < raw.len() && is_xml_space(raw[i]) {
            i += 1;
        }
        if i == raw.len() {
            self.at = i;
            return Ok(None);
        }
        if i == start {
            return Err("attributes must be separated by whitespace".into());
        }
        let key_start = i;
        while i < raw.len() && !is_xml_space(raw[i]) && raw[i] != b'=' {
            if matches!(raw[i], b'"' | b'\'' | b'<' | b'>') {
                return Err("bad attribute name".into());
            }
            i += 1;
        }
        let key = &raw[key_start..i];
        if !is_name_start(key.first().copied()) {
            return Err(format!(
                "bad attribute name {:?}",
                String::from_utf8_lossy(key)
            ));
        }
        while i < raw.len() && is_xml_space(raw[i]) {
            i += 1;
        }
        if raw.get(i) != Some(&b'=') {
            return Err(format!(
                "attribute {:?} has no value",
                String::from_utf8_lossy(key)
            ));
        }
        i += 1;
        while i < raw.len() && is_xml_space(raw[i]) {
            i += 1;
        }
        let quote = match raw.get(i) {
            Some(&q @ (b'"' | b'\'')) => q,
            _ => {
                return Err(format!(
                    "the value of attribute {:?} is not quoted",
                    String::from_utf8_lossy(key)
                ))
            }
        };
        i += 1;
        let Some(len) = memchr::memchr(quote, &raw[i..]) else {
            return Err(format!(
                "the value of attribute {:?} is not closed",
                String::from_utf8_lossy(key)
            ));
        };
        let value = &raw[i..i + len];
        self.at = i + len + 1;
        Ok(Some((key, value)))
    }
}

/// The local part of a qualified name (after the last `:`).
fn local_name(qname: &[u8]) -> &[u8] {
    match memchr::memrchr(b':', qname) {
        Some(i) => &qname[i + 1..],
        None => qname,
    }
}

fn is_name_start(b: Option<u8>) -> bool {
    matches!(
        b,
        Some(b'A'..=b'Z' | b'a'..=b'z' | b'_' | b':' | 0x80..=0xff)
    )
}

/// A UTF-8 continuation byte (`10xxxxxx`).
fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

fn is_xml_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

fn utf8_string(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

fn floor_char_boundary(s: &str, max: usize) -> usize {
    if max >= s.len() {
        return s.len();
    }
    let mut i = max;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A `time` attribute in seconds: finite numbers only; `,` is a thousands
/// separator when a `.` is present or when there are several, else a
/// decimal comma.
fn parse_time(s: &str) -> Option<f64> {
    let s = s.trim();
    let value: f64 = if s.contains(',') {
        let commas = s.matches(',').count();
        let fixed: Cow<'_, str> = if s.contains('.') || commas > 1 {
            s.replace(',', "").into()
        } else {
            s.replace(',', ".").into()
        };
        fixed.parse().ok()?
    } else {
        s.parse().ok()?
    };
    value.is_finite().then_some(value)
}

/// The character a reference name (between `&` and `;`) stands for: the
/// five predefined entities and numeric character references. Anything
/// else (an entity that would need a DTD) is `None`.
fn resolve_ref(name: &[u8]) -> Option<char> {
    let code = match name {
        b"lt" => return Some('<'),
        b"gt" => return Some('>'),
        b"amp" => return Some('&'),
        b"apos" => return Some('\''),
        b"quot" => return Some('"'),
        [b'#', b'x', hex @ ..] => parse_code(hex, 16)?,
        [b'#', dec @ ..] => parse_code(dec, 10)?,
        _ => return None,
    };
    char::from_u32(code).filter(|&c| c != '\0')
}

fn parse_code(digits: &[u8], radix: u32) -> Option<u32> {
    if digits.is_empty() {
        return None;
    }
    let mut code: u32 = 0;
    for &d in digits {
        let v = (d as char).to_digit(radix)?;
        code = code.checked_mul(radix)?.checked_add(v)?;
    }
    Some(code)
}

fn ref_error(name: &[u8]) -> String {
    format!(
        "undefined entity or bad character reference &{};",
        String::from_utf8_lossy(name)
    )
}

/// Checks every `&` in `raw` starts a resolvable reference.
fn check_refs(raw: &[u8]) -> Check {
    let mut from = 0;
    while let Some(k) = memchr::memchr(b'&', &raw[from..]) {
        let amp = from + k;
        let rest = &raw[amp + 1..];
        let Some(semi) = memchr::memchr(b';', &rest[..rest.len().min(MAX_REF)]) else {
            return Err("`&` not followed by a reference ending in `;`".into());
        };
        if resolve_ref(&rest[..semi]).is_none() {
            return Err(ref_error(&rest[..semi]));
        }
        from = amp + semi + 2;
    }
    Ok(())
}

/// Resolves references in `raw` into `out`, normalising line ends (`\r\n`
/// and `\r` to `\n`) in text, and each whitespace character (after line-end
/// normalisation) to a space in attribute values, as XML requires.
fn unescape(raw: &[u8], attr: bool, out: &mut Vec<u8>) -> Check {
    let mut i = 0;
    while i < raw.len() {
        let next = if attr {
            raw[i..]
                .iter()
                .position(|&b| matches!(b, b'&' | b'\t' | b'\n' | b'\r'))
        } else {
            memchr::memchr2(b'&', b'\r', &raw[i..])
        };
        let Some(k) = next else {
            out.extend_from_slice(&raw[i..]);
            break;
        };
        out.extend_from_slice(&raw[i..i + k]);
        i += k;
        match raw[i] {
            b'&' => {
                let rest = &raw[i + 1..];
                let Some(semi) = memchr::memchr(b';', &rest[..rest.len().min(MAX_REF)]) else {
                    return Err("`&` not followed by a reference ending in `;`".into());
                };
                let c = resolve_ref(&rest[..semi]).ok_or_else(|| ref_error(&rest[..semi]))?;
                let mut utf8 = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
                i += semi + 2;
            }
            b'\r' => {
                out.push(if attr { b' ' } else { b'\n' });
                i += 1;
                if raw.get(i) == Some(&b'\n') {
                    i += 1;
                }
            }
            _ => {
                out.push(b' ');
                i += 1;
            }
        }
    }
    Ok(())
}

/// Copies `raw` into `out` with `\r\n` and `\r` turned into `\n`.
fn normalize_newlines(raw: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while let Some(k) = memchr::memchr(b'\r', &raw[i..]) {
        out.extend_from_slice(&raw[i..i + k]);
        out.push(b'\n');
        i += k + 1;
        if raw.get(i) == Some(&b'\n') {
            i += 1;
        }
    }
    out.extend_from_slice(&raw[i..]);
}

// ---------------------------------------------------------------------------
// The guard: a byte-level lexer between the input and quick-xml.
// ---------------------------------------------------------------------------

/// Lexical state of the guard, mirroring where quick-xml's reader is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lex {
    /// Character data, up to `<`.
    Text,
    /// Eliding the rest of a long text run (references still checked).
    TextSkip,
    /// Just after `<`.
    Open,
    /// Just after `<!`.
    Bang,
    /// Inside a start or end tag; `quote` is the open quote, 0 outside.
    Tag {
        quote: u8,
    },
    /// Eliding the rest of a long attribute value.
    ValueSkip {
        quote: u8,
    },
    /// Inside `<!--`, up to `-->`.
    Comment,
    CommentSkip,
    /// Inside `<![`, up to `]]>`.
    CData,
    CDataSkip,
    /// Inside `<?`, up to `?>`.
    Pi,
    PiSkip,
    /// Inside `<!DOCTYPE`, up to the `>` that balances the `<`s.
    DocType {
        balance: u64,
    },
}

/// What one lexing step did.
enum Flow {
    /// Bytes `pos..ready` are ready for quick-xml.
    Emitted,
    /// Bytes were dropped (or the state changed) without emitting any.
    Skipped,
    /// More input is needed to decide.
    More,
    /// The input is rejected (`fault` is set).
    Fault,
}

/// How to cut a long run that has reached the keep limit.
enum Cut {
    /// Cut here: no reference straddles this point.
    At(usize),
    /// The run ends (at a terminator) at this index before a cut is needed.
    Stop(usize),
    /// Not enough lookahead yet.
    More,
}

/// A `BufRead` in front of quick-xml that sniffs the encoding (strips a BOM,
/// transcodes UTF-16 to UTF-8), counts the input against the size limit and
/// elides the middle of any text run, CDATA section, comment, PI or
/// attribute value longer than `keep` bytes, so quick-xml's event buffer
/// stays bounded. It tracks quick-xml's lexical state with the same rules
/// (quote-aware tags, `-->`, `]]>`, `?>`, DOCTYPE `<`/`>` balance), cuts only
/// where no reference, terminator or UTF-8 sequence straddles the cut, and
/// still checks the references in what it drops. Ordinary tags take a fast
/// path: when the next `<` is closer than `keep`, nothing up to it needs
/// eliding, so the tag's quotes are not tracked (that is quick-xml's job).
struct Guard<R> {
    inner: R,
    limits: Limits,
    /// Set when the input is UTF-16.
    decoder: Option<encoding_rs::Decoder>,
    /// Undecoded UTF-16 input.
    raw: Vec<u8>,
    raw_pos: usize,
    raw_eof: bool,
    /// The UTF-16 decoder has had its last input.
    utf16_done: bool,
    buf: Vec<u8>,
    /// Next byte quick-xml will get.
    pos: usize,
    /// End of the bytes classified and ready for quick-xml.
    ready: usize,
    /// End of the bytes in `buf`.
    end: usize,
    eof: bool,
    sniffed: bool,
    lex: Lex,
    /// Bytes of the current elidable region handed out so far.
    run: usize,
    /// Bytes of the current tag or DOCTYPE.
    markup: usize,
    /// Bytes of the current comment, from its `!`.
    rlen: usize,
    /// The two bytes before `ready` in the current region (0 when none).
    prev: [u8; 2],
    /// Input bytes read.
    read: u64,
    /// Offset of `buf[0]` in the (UTF-8) input stream.
    base: u64,
    /// Bytes elided since the last [`Guard::take_elided`], and whether any
    /// of them was text other than whitespace.
    elided: u64,
    elided_text: bool,
    /// All bytes quick-xml never saw (BOM, elided), for error positions.
    skipped: u64,
    fault: Option<JunitError>,
}

impl<R: Read> Guard<R> {
    fn new(inner: R, limits: Limits) -> Guard<R> {
        Guard {
            inner,
            limits,
            decoder: None,
            raw: Vec::new(),
            raw_pos: 0,
            raw_eof: false,
            utf16_done: false,
            buf: vec![0; limits.chunk.max(4 * MAX_REF)],
            pos: 0,
            ready: 0,
            end: 0,
            eof: false,
            sniffed: false,
            lex: Lex::Text,
            run: 0,
            markup: 0,
            rlen: 0,
            prev: [0; 2],
            read: 0,
            base: 0,
            elided: 0,
            elided_text: false,
            skipped: 0,
            fault: None,
        }
    }

    /// Bytes elided since the last call, and whether any was non-whitespace
    /// text.
    fn take_elided(&mut self) -> (u64, bool) {
        let taken = (self.elided, self.elided_text);
        self.elided = 0;
        self.elided_text = false;
        taken
    }

    fn reject(&mut self, message: impl Into<String>) -> Flow {
        self.fault = Some(JunitError::Malformed {
            position: self.read_position(),
            message: message.into(),
        });
        Flow::Fault
    }

    fn read_position(&self) -> u64 {
        self.base + self.ready as u64
    }

    fn fault_error(&self) -> io::Error {
        io::Error::other("the report was rejected")
    }

    /// Reads from the inner reader, counting against the size limit.
    fn read_inner(inner: &mut R, dst: &mut [u8], read: &mut u64, limit: u64) -> io::Result<usize> {
        let n = loop {
            match inner.read(dst) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        *read += n as u64;
        if *read > limit {
            return Err(io::Error::other("too large"));
        }
        Ok(n)
    }

    /// Moves unconsumed bytes to the front and reads more.
    fn fill(&mut self) -> io::Result<()> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.base += self.pos as u64;
            self.end -= self.pos;
            self.ready -= self.pos;
            self.pos = 0;
        }
        if self.end == self.buf.len() {
            // Lookahead never needs a full buffer; reading into no room would
            // look like the end of the input.
            self.fault = Some(JunitError::Malformed {
                position: self.read_position(),
                message: "internal error: read buffer full".into(),
            });
            return Err(self.fault_error());
        }
        let limit = self.limits.input;
        if self.decoder.is_none() {
            let n = match Self::read_inner(
                &mut self.inner,
                &mut self.buf[self.end..],
                &mut self.read,
                limit,
            ) {
                Ok(n) => n,
                Err(e) => return Err(self.io_fault(e)),
            };
            if n == 0 {
                self.eof = true;
            }
            self.end += n;
            return Ok(());
        }
        loop {
            if self.utf16_done {
                self.eof = true;
                return Ok(());
            }
            if self.raw_pos == self.raw.len() && !self.raw_eof {
                self.raw.resize(self.limits.chunk, 0);
                let n =
                    match Self::read_inner(&mut self.inner, &mut self.raw, &mut self.read, limit) {
                        Ok(n) => n,
                        Err(e) => return Err(self.io_fault(e)),
                    };
                self.raw.truncate(n);
                self.raw_pos = 0;
                self.raw_eof = n == 0;
            }
            let Some(decoder) = self.decoder.as_mut() else {
                return Ok(());
            };
            let last = self.raw_eof;
            let (result, read, written, _) =
                decoder.decode_to_utf8(&self.raw[self.raw_pos..], &mut self.buf[self.end..], last);
            self.raw_pos += read;
            self.end += written;
            // A decoder must not be called again after its last input.
            if last && result == encoding_rs::CoderResult::InputEmpty {
                self.utf16_done = true;
            }
            if written > 0 {
                return Ok(());
            }
        }
    }

    fn io_fault(&mut self, e: io::Error) -> io::Error {
        if self.read > self.limits.input {
            self.fault = Some(JunitError::TooLarge {
                limit: self.limits.input,
            });
        }
        e
    }

    /// Looks at the first bytes: strips a UTF-8 BOM, switches to UTF-16
    /// transcoding on a UTF-16 BOM or `<?` in UTF-16.
    fn sniff(&mut self) -> io::Result<()> {
        while self.end < 4 && !self.eof {
            self.fill()?;
        }
        self.sniffed = true;
        let head = &self.buf[..self.end];
        let (utf16, bom) = if head.starts_with(&[0xEF, 0xBB, 0xBF]) {
            (None, 3)
        } else if head.starts_with(&[0xFF, 0xFE]) {
            (Some(UTF_16LE), 2)
        } else if head.starts_with(&[0xFE, 0xFF]) {
            (Some(UTF_16BE), 2)
        } else if head.starts_with(&[b'<', 0, b'?', 0]) {
            (Some(UTF_16LE), 0)
        } else if head.starts_with(&[0, b'<', 0, b'?']) {
            (Some(UTF_16BE), 0)
        } else {
            (None, 0)
        };
        self.skipped += bom as u64;
        match utf16 {
            None => {
                self.pos = bom;
                self.ready = bom;
            }
            Some(encoding) => {
                self.raw = self.buf[bom..self.end].to_vec();
                self.raw_pos = 0;
                self.raw_eof = self.eof;
                self.eof = false;
                self.decoder = Some(encoding.new_decoder_without_bom_handling());
                self.pos = 0;
                self.ready = 0;
                self.end = 0;
            }
        }
        Ok(())
    }

    /// Makes more bytes ready, or reaches the end.
    fn advance(&mut self) -> io::Result<()> {
        loop {
            if self.fault.is_some() {
                return Err(self.fault_error());
            }
            if !self.sniffed {
                self.sniff()?;
                continue;
            }
            match self.step() {
                Flow::Emitted => return Ok(()),
                Flow::Skipped => continue,
                Flow::Fault => return Err(self.fault_error()),
                Flow::More => {
                    if self.eof {
                        // Whatever could not be classified goes out as is;
                        // quick-xml reports the truncation.
                        self.ready = self.end;
                        return Ok(());
                    }
                    self.fill()?;
                }
            }
        }
    }

    /// Drops `self.pos..to` (only called when nothing is pending).
    fn skip_to(&mut self, to: usize, text: bool) {
        if text && !self.elided_text {
            self.elided_text = self.buf[self.pos..to].iter().any(|&b| !is_xml_space(b));
        }
        let n = (to - self.pos) as u64;
        self.elided += n;
        self.skipped += n;
        self.pos = to;
        self.ready = to;
    }

    /// Records the last two bytes of `buf[from..to]` as the region's tail.
    fn remember(&mut self, from: usize, to: usize) {
        match to - from {
            0 => {}
            1 => self.prev = [self.prev[1], self.buf[to - 1]],
            _ => self.prev = [self.buf[to - 2], self.buf[to - 1]],
        }
    }

    /// The byte `back` places before index `j` of the region scanned from
    /// `seg` (earlier bytes come from `prev`).
    fn before(&self, seg: usize, j: usize, back: usize) -> u8 {
        if j >= seg + back {
            self.buf[j - back]
        } else {
            match seg + back - j {
                1 => self.prev[1],
                2 => self.prev[0],
                _ => 0,
            }
        }
    }

    /// Where to cut a text run or attribute value that reached the keep
    /// limit at `from`: right before a `&` or right after a `;` within
    /// `MAX_REF` bytes, else at `from` (no reference is that long).
    fn safe_cut(&self, from: usize, stop: u8) -> Cut {
        let window = &self.buf[from..self.end.min(from + MAX_REF)];
        for (k, &b) in window.iter().enumerate() {
            if b == stop {
                return Cut::Stop(from + k);
            }
            if b == b'&' {
                return Cut::At(from + k);
            }
            if b == b';' {
                return Cut::At(from + k + 1);
            }
        }
        if window.len() == MAX_REF || self.eof {
            // Not inside a UTF-8 sequence either.
            let mut c = from;
            while c < from + 3 && window.get(c - from).is_some_and(|&b| is_continuation(b)) {
                c += 1;
            }
            Cut::At(c)
        } else {
            Cut::More
        }
    }

    /// Validates the reference starting at `buf[amp] == b'&'` while skipping;
    /// returns its length, `None` for more input, or a fault.
    fn skip_ref(&mut self, amp: usize) -> Result<Option<usize>, Flow> {
        let rest = &self.buf[amp + 1..self.end.min(amp + 1 + MAX_REF)];
        match memchr::memchr(b';', rest) {
            Some(semi) => {
                if resolve_ref(&rest[..semi]).is_none() {
                    let message = ref_error(&rest[..semi]);
                    return Err(self.reject(message));
                }
                Ok(Some(semi + 2))
            }
            None if rest.len() < MAX_REF && !self.eof => Ok(None),
            None => Err(self.reject("`&` not followed by a reference ending in `;`")),
        }
    }

    /// Classifies bytes from `ready` on; see [`Flow`].
    fn step(&mut self) -> Flow {
        let keep = self.limits.keep;
        let end = self.end;
        let mut i = self.ready;
        let flow = loop {
            match self.lex {
                Lex::Text => {
                    let limit_at = i + keep.saturating_sub(self.run);
                    let stop = end.min(limit_at);
                    if let Some(k) = memchr::memchr(b'<', &self.buf[i..stop]) {
                        i += k + 1;
                        self.run = 0;
                        self.lex = Lex::Open;
                        continue;
                    }
                    self.run += stop - i;
                    i = stop;
                    if stop < limit_at {
                        break Flow::More;
                    }
                    match self.safe_cut(i, b'<') {
                        Cut::Stop(j) => {
                            i = j + 1;
                            self.run = 0;
                            self.lex = Lex::Open;
                        }
                        Cut::At(c) => {
                            i = c;
                            self.lex = Lex::TextSkip;
                        }
                        Cut::More => break Flow::More,
                    }
                }
                Lex::TextSkip => {
                    if i != self.pos {
                        break Flow::More;
                    }
                    match memchr::memchr2(b'<', b'&', &self.buf[i..end]) {
                        Some(k) if self.buf[i + k] == b'<' => {
                            self.skip_to(i + k, true);
                            self.lex = Lex::Text;
                            self.run = 0;
                            return Flow::Skipped;
                        }
                        Some(k) => match self.skip_ref(i + k) {
                            Ok(Some(len)) => {
                                self.skip_to(i + k + len, true);
                                return Flow::Skipped;
                            }
                            Ok(None) => {
                                self.skip_to(i + k, true);
                                return Flow::More;
                            }
                            Err(flow) => return flow,
                        },
                        None => {
                            self.skip_to(end, true);
                            return Flow::More;
                        }
                    }
                }
                Lex::Open => {
                    let Some(&b) = self.buf[..end].get(i) else {
                        break Flow::More;
                    };
                    self.markup = 0;
                    self.run = 0;
                    self.rlen = 0;
                    self.prev = [0; 2];
                    match b {
                        b'!' => {
                            i += 1;
                            self.lex = Lex::Bang;
                        }
                        b'?' => self.lex = Lex::Pi,
                        _ => {
                            // Fast path: a start or end tag cannot contain
                            // `<`, so when the next `<` is less than `keep`
                            // bytes away, this tag and the text after it need
                            // no eliding. (A `<` inside a quoted value is
                            // malformed; the tag holding it reaches the parser
                            // intact and is rejected there.)
                            let window = &self.buf[i..end.min(i + keep)];
                            if let Some(k) = memchr::memchr(b'<', window) {
                                i += k + 1;
                                continue;
                            }
                            self.lex = Lex::Tag { quote: 0 };
                        }
                    }
                }
                Lex::Bang => {
                    let Some(&b) = self.buf[..end].get(i) else {
                        break Flow::More;
                    };
                    self.prev = [0, b'!'];
                    match b {
                        b'[' => self.lex = Lex::CData,
                        b'-' => {
                            self.rlen = 1;
                            self.lex = Lex::Comment;
                        }
                        b'D' | b'd' => self.lex = Lex::DocType { balance: 0 },
                        // quick-xml rejects this markup.
                        _ => self.lex = Lex::Text,
                    }
                }
                Lex::Tag { quote } => {
                    // One pass over the tag's delimiters. `quote` is the open
                    // quote (0 outside); the open value's bytes from `value`
                    // on, plus `run` handed out before, are its length.
                    let mut quote = quote;
                    let mut value = i;
                    let mut closed = None;
                    let mut long = None;
                    for k in memchr::memchr3_iter(b'>', b'"', b'\'', &self.buf[i..end]) {
                        let j = i + k;
                        let b = self.buf[j];
                        if quote == 0 {
                            if b == b'>' {
                                closed = Some(j);
                                break;
                            }
                            quote = b;
                            value = j + 1;
                            self.run = 0;
                        } else if b == quote {
                            if j - value + self.run > keep {
                                long = Some(value + keep - self.run);
                                break;
                            }
                            quote = 0;
                            self.run = 0;
                        }
                    }
                    if let Some(j) = closed {
                        self.markup += j + 1 - i;
                        i = j + 1;
                        self.lex = Lex::Text;
                        self.run = 0;
                        if self.markup > self.limits.markup {
                            break self.tag_too_long();
                        }
                        continue;
                    }
                    if long.is_none() && quote != 0 && end - value + self.run > keep {
                        long = Some(value + keep - self.run);
                    }
                    let Some(limit_at) = long else {
                        // Needs more input; remember how much of the open
                        // value was handed out.
                        if quote != 0 {
                            self.run += end - value;
                        }
                        self.markup += end - i;
                        i = end;
                        self.lex = Lex::Tag { quote };
                        if self.markup > self.limits.markup {
                            break self.tag_too_long();
                        }
                        break Flow::More;
                    };
                    // A value longer than `keep`: hand out its head, then
                    // elide the rest.
                    self.markup += limit_at - i;
                    i = limit_at;
                    self.run = keep;
                    self.lex = Lex::Tag { quote };
                    if self.markup > self.limits.markup {
                        break self.tag_too_long();
                    }
                    match self.safe_cut(i, quote) {
                        Cut::Stop(j) => {
                            self.markup += j + 1 - i;
                            i = j + 1;
                            self.run = 0;
                            self.lex = Lex::Tag { quote: 0 };
                        }
                        Cut::At(c) => {
                            self.markup += c - i;
                            i = c;
                            self.lex = Lex::ValueSkip { quote };
                        }
                        Cut::More => break Flow::More,
                    }
                }
                Lex::ValueSkip { quote } => {
                    if i != self.pos {
                        break Flow::More;
                    }
                    let found = memchr::memchr3(quote, b'&', b'<', &self.buf[i..end]);
                    match found.map(|k| (k, self.buf[i + k])) {
                        Some((_, b'<')) => return self.reject("`<` in an attribute value"),
                        Some((k, b'&')) => match self.skip_ref(i + k) {
                            Ok(Some(len)) => {
                                self.skip_to(i + k + len, false);
                                return Flow::Skipped;
                            }
                            Ok(None) => {
                                self.skip_to(i + k, false);
                                return Flow::More;
                            }
                            Err(flow) => return flow,
                        },
                        Some((k, _)) => {
                            self.skip_to(i + k, false);
                            self.lex = Lex::Tag { quote };
                            self.run = 0;
                            return Flow::Skipped;
                        }
                        None => {
                            self.skip_to(end, false);
                            return Flow::More;
                        }
                    }
                }
                Lex::Comment | Lex::CData | Lex::Pi => {
                    let (term, min_len) = match self.lex {
                        Lex::Comment => (b'-', 5),
                        Lex::CData => (b']', 0),
                        _ => (b'?', 0),
                    };
                    let double = term != b'?';
                    // The XML declaration is a PI: never cut one that short.
                    let keep = if double { keep } else { keep.max(MIN_PI_KEEP) };
                    let limit_at = i + keep.saturating_sub(self.run);
                    let stop = end.min(limit_at);
                    let seg = i;
                    let mut closed = None;
                    for k in memchr::memchr_iter(b'>', &self.buf[seg..stop]) {
                        let j = seg + k;
                        let long_enough = self.rlen + (j - seg) >= min_len;
                        let ends = self.before(seg, j, 1) == term
                            && (!double || self.before(seg, j, 2) == term);
                        if ends && long_enough {
                            closed = Some(j);
                            break;
                        }
                    }
                    if let Some(j) = closed {
                        i = j + 1;
                        self.lex = Lex::Text;
                        self.run = 0;
                        continue;
                    }
                    self.remember(seg, stop);
                    self.rlen += stop - seg;
                    self.run += stop - seg;
                    i = stop;
                    if stop < limit_at {
                        break Flow::More;
                    }
                    // Reached the keep limit: cut where the byte before is not
                    // part of a terminator, so none straddles the cut.
                    while i < end && (self.prev[1] == term || is_continuation(self.buf[i])) {
                        let b = self.buf[i];
                        if b == b'>' && (!double || self.prev[0] == term) {
                            break;
                        }
                        self.prev = [self.prev[1], b];
                        self.rlen += 1;
                        i += 1;
                    }
                    if i < end && self.buf[i] == b'>' && self.prev[1] == term {
                        // The terminator ends here.
                        i += 1;
                        self.lex = Lex::Text;
                        self.run = 0;
                        continue;
                    }
                    if self.prev[1] == term || (i == end && !self.eof) {
                        break Flow::More;
                    }
                    self.lex = match self.lex {
                        Lex::Comment => Lex::CommentSkip,
                        Lex::CData => Lex::CDataSkip,
                        _ => Lex::PiSkip,
                    };
                }
                Lex::CommentSkip | Lex::CDataSkip | Lex::PiSkip => {
                    if i != self.pos {
                        break Flow::More;
                    }
                    let (term, back, resume) = match self.lex {
                        Lex::CommentSkip => (b'-', 2, Lex::Comment),
                        Lex::CDataSkip => (b']', 2, Lex::CData),
                        _ => (b'?', 1, Lex::Pi),
                    };
                    let mut found = None;
                    for k in memchr::memchr_iter(b'>', &self.buf[i..end]) {
                        let j = i + k;
                        if j >= i + back && self.buf[j - back..j].iter().all(|&b| b == term) {
                            found = Some(j - back);
                            break;
                        }
                    }
                    match found {
                        Some(t) => {
                            self.skip_to(t, false);
                            self.prev = [0; 2];
                            self.run = 0;
                            self.lex = resume;
                            return Flow::Skipped;
                        }
                        None => {
                            let keep_from = if self.eof {
                                end
                            } else {
                                end.saturating_sub(back).max(i)
                            };
                            self.skip_to(keep_from, false);
                            return Flow::More;
                        }
                    }
                }
                Lex::DocType { mut balance } => {
                    let seg = i;
                    let mut closed = None;
                    for k in memchr::memchr2_iter(b'<', b'>', &self.buf[seg..end]) {
                        if self.buf[seg + k] == b'<' {
                            balance += 1;
                        } else if balance == 0 {
                            closed = Some(seg + k);
                            break;
                        } else {
                            balance -= 1;
                        }
                    }
                    if let Some(j) = closed {
                        self.markup += j + 1 - seg;
                        i = j + 1;
                        self.lex = Lex::Text;
                        self.run = 0;
                        continue;
                    }
                    self.markup += end - seg;
                    i = end;
                    self.lex = Lex::DocType { balance };
                    if self.markup > self.limits.markup {
                        break self.tag_too_long();
                    }
                    break Flow::More;
                }
            }
        };
        if matches!(flow, Flow::Fault) {
            return flow;
        }
        if i > self.ready {
            self.ready = i;
            return Flow::Emitted;
        }
        flow
    }

    fn tag_too_long(&mut self) -> Flow {
        let limit = self.limits.markup;
        self.reject(format!("a tag or DOCTYPE longer than {limit} bytes"))
    }
}

impl<R: Read> Read for Guard<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for Guard<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos == self.ready {
            self.advance()?;
        }
        Ok(&self.buf[self.pos..self.ready])
    }

    fn consume(&mut self, amount: usize) {
        self.pos = (self.pos + amount).min(self.ready);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::path::PathBuf;

    fn ok(xml: &str) -> Parsed {
        parse(xml.as_bytes()).unwrap_or_else(|e| panic!("{e}\n{xml}"))
    }

    fn malformed(xml: &[u8]) -> String {
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

    fn case(name: &str, body: &str) -> String {
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
    fn times() {
        for (s, t) in [
            ("1.5", Some(1.5)),
            (" 2 ", Some(2.0)),
            ("0.", Some(0.0)),
            (".5", Some(0.5)),
            ("2,503.1", Some(2503.1)),
            ("1,234,567", Some(1234567.0)),
            ("0,25", Some(0.25)),
            ("1.7e-05", Some(1.7e-5)),
            ("-3", Some(-3.0)),
            ("", None),
            ("o99,999.881", None),
            ("NaN", None),
            ("inf", None),
            ("1e999", None),
            ("12s", None),
        ] {
            assert_eq!(parse_time(s), t, "parse_time({s:?})");
        }
    }

    #[test]
    fn references_and_normalisation() {
        let mut out = Vec::new();
        unescape(
            b"a&lt;b&gt;&amp;&apos;&quot;&#65;&#x42;&#x1F600;",
            false,
            &mut out,
        )
        .unwrap();
        assert_eq!(String::from_utf8(out.clone()).unwrap(), "a<b>&'\"AB😀");
        out.clear();
        unescape(b"l1\r\nl2\rl3\n\tx&#xD;&#xA;", false, &mut out).unwrap();
        assert_eq!(out, b"l1\nl2\nl3\n\tx\r\n");
        out.clear();
        unescape(b"a\r\nb\tc\nd\re&#10;f", true, &mut out).unwrap();
        assert_eq!(out, b"a b c d e\nf");
        for bad in [
            &b"&oob;"[..],
            b"&#X41;",
            b"&#0;",
            b"&#xD800;",
            b"&#1114112;",
            b"&#x;",
            b"&#;",
            b"&amp",
            b"a & b",
            b"&#99999999999999999999;",
        ] {
            out.clear();
            assert!(unescape(bad, false, &mut out).is_err(), "{bad:?}");
            assert!(check_refs(bad).is_err(), "{bad:?}");
        }
        assert!(check_refs(b"&#x1b;[31m &lt; ok").is_ok());
    }

    #[test]
    fn reference_reading() {
        let xml = r#"<?xml version="1.0"?>
<testsuites>
  <testsuite name="outer">
    <failure message="suite-level, not counted"/>
    <testcase classname="C" name="pass" time="0.5"/>
    <testcase classname="C" name="fail"><failure message="m">body</failure></testcase>
    <testcase classname="C" name="err"><error/></testcase>
    <testcase classname="C" name="skip"><skipped/></testcase>
    <testcase classname="C" name="skip+fail"><skipped/><failure/></testcase>
    <testcase classname="C" name="skip+err"><skipped/><error/></testcase>
    <testcase classname="C" name="err+fail"><error message="first"/><failure message="second"/></testcase>
    <testcase classname="C" name="deep"><x><failure/><skipped/></x></testcase>
    <testcase classname="C" name="status" status="disabled"/>
    <testsuite name="inner">
      <testcase name="nested-suite"/>
    </testsuite>
    <testcase name="back-in-outer"/>
    <testcase name="outer-case"><testcase name="inner-case"><failure/></testcase></testcase>
  </testsuite>
  <testcase name="no-suite"/>
</testsuites>"#;
        let parsed = ok(xml);
        assert_eq!(parsed.root, "testsuites");
        let got: Vec<(&str, &str, CaseOutcome)> = parsed
            .cases
            .iter()
            .map(|c| (c.suite.as_str(), c.name.as_str(), c.outcome))
            .collect();
        use CaseOutcome::*;
        assert_eq!(
            got,
            [
                ("outer", "pass", Passed),
                ("outer", "fail", Failed),
                ("outer", "err", Errored),
                ("outer", "skip", Skipped),
                ("outer", "skip+fail", Failed),
                ("outer", "skip+err", Errored),
                ("outer", "err+fail", Failed),
                ("outer", "deep", Passed),
                ("outer", "status", Passed),
                ("inner", "nested-suite", Passed),
                ("outer", "back-in-outer", Passed),
                ("outer", "outer-case", Passed),
                ("outer", "inner-case", Failed),
                ("", "no-suite", Passed),
            ]
        );
        let c = &parsed.cases;
        assert_eq!(c[0].time_s, Some(0.5));
        assert_eq!(c[1].message.as_deref(), Some("m"));
        assert_eq!(c[1].detail.as_deref(), Some("body"));
        assert_eq!(c[2].message, None);
        assert_eq!(c[2].detail, None);
        assert_eq!(c[3].message, None, "skip reasons are not kept");
        assert_eq!(
            c[6].message.as_deref(),
            Some("first"),
            "first failure/error"
        );
        assert_eq!(c[12].id(), "outer::inner-case");
        assert_eq!(c[13].id(), "no-suite");
    }

    #[test]
    fn first_attempts() {
        use CaseOutcome::*;
        let read = |body: &str| ok(&case("t", body)).cases.remove(0);
        let c = read(r#"<flakyFailure message="one">t1</flakyFailure><flakyError message="two"/>"#);
        assert_eq!((c.outcome, c.first_attempt, c.reruns), (Passed, Failed, 2));
        assert!(c.passed_on_rerun());
        assert_eq!(
            (c.message.as_deref(), c.detail.as_deref()),
            (Some("one"), Some("t1"))
        );
        let c = read(
            r#"<flakyError message="e"><stackTrace>at x</stackTrace><system-out>no</system-out></flakyError>"#,
        );
        assert_eq!((c.outcome, c.first_attempt), (Passed, Errored));
        assert_eq!(c.detail.as_deref(), Some("at x"));
        let c = read(
            r#"<failure message="final">f</failure><rerunFailure message="r1"/><rerunFailure/><rerunError/>"#,
        );
        assert_eq!((c.outcome, c.first_attempt, c.reruns), (Failed, Failed, 3));
        assert!(!c.passed_on_rerun());
        assert_eq!(c.message.as_deref(), Some("final"));
        let c = read(r#"<flakyFailure message="flaky"/><failure message="fail-on-flaky"/>"#);
        assert_eq!((c.outcome, c.first_attempt), (Failed, Failed));
        assert_eq!(c.message.as_deref(), Some("fail-on-flaky"));
        let c = read(r#"<skipped/><flakyFailure message="x"/>"#);
        assert_eq!((c.outcome, c.first_attempt), (Skipped, Skipped));
        assert_eq!(c.message, None);
        let c = read(r#"<system-out><flakyFailure/></system-out>"#);
        assert_eq!((c.outcome, c.first_attempt, c.reruns), (Passed, Passed, 0));
    }

    #[test]
    fn bodies_join_text_cdata_and_stack_trace_only() {
        let c = ok(&case(
            "t",
            "<failure>a&amp;b\r\n<![CDATA[<raw> &amp;\r\n]]><stackTrace>trace</stackTrace><system-out>out</system-out><x>no</x>z</failure>",
        ))
        .cases
        .remove(0);
        assert_eq!(c.detail.as_deref(), Some("a&b\n<raw> &amp;\ntracez"));
        let c = ok(&case("t", "<failure message=''>  \n  </failure>"))
            .cases
            .remove(0);
        assert_eq!((c.message.as_deref(), c.detail), (Some(""), None));
    }

    #[test]
    fn attributes_are_normalised_and_unescaped() {
        let xml = "<testsuite name='a&amp;b'><testcase classname=\"x\r\n y\" name='q&quot;\t&#xA;' time='1'>\
                   <failure message=\"line1&#10;line2\nline3\"/></testcase></testsuite>";
        let c = ok(xml).cases.remove(0);
        assert_eq!(c.suite, "a&b");
        assert_eq!(c.classname, "x  y");
        assert_eq!(c.name, "q\" \n");
        assert_eq!(c.message.as_deref(), Some("line1\nline2 line3"));
        let codeception = ok("<testsuite><testcase class='K' name='n'/></testsuite>");
        assert_eq!(codeception.cases[0].classname, "K");
        let both = ok("<testsuite><testcase class='K' classname='C' name='n'/></testsuite>");
        assert_eq!(both.cases[0].classname, "C");
    }

    #[test]
    fn namespaces_and_roots() {
        let p = ok("<j:testsuites xmlns:j='urn:x'><j:testsuite name='s'><j:testcase name='n'><j:failure/></j:testcase></j:testsuite></j:testsuites>");
        assert_eq!(p.root, "testsuites");
        assert_eq!(p.cases[0].outcome, CaseOutcome::Failed);
        assert_eq!(p.cases[0].suite, "s");
        let p = ok("<nothing><testcase name='a'/><TestCase name='not counted'/></nothing>");
        assert_eq!((p.root.as_str(), p.cases.len()), ("nothing", 1));
        let p = ok("<testsuite/>");
        assert_eq!((p.root.as_str(), p.cases.len()), ("testsuite", 0));
    }

    #[test]
    fn well_formed_extras_are_accepted() {
        for xml in [
            "\u{feff}<?xml version='1.0' encoding='utf-8'?>\r\n<a/>\r\n",
            "<?xml version=\"1.1\"?><a/>",
            "<!-- before --><?pi x?><a><!-- in --><?pi y?></a><!-- after -->\n",
            "<?xml version='1.0'?>\n<!DOCTYPE r [\n<!ELEMENT r ANY>\n<!ENTITY % p SYSTEM 'http://x/'>\n]>\n<r/>",
            "\n  <?xml version='1.0'?><a/>",
            "<a b = '1'\n c=\"2\"  />",
            "<a>]]&gt; &#x1b;[31m</a>",
        ] {
            assert!(parse(xml.as_bytes()).is_ok(), "{xml:?}: {:?}", parse(xml.as_bytes()));
        }
    }

    #[test]
    fn not_well_formed_is_an_error() {
        assert_eq!(parse(&b""[..]), Err(JunitError::Empty));
        assert_eq!(parse(&b" \r\n\t "[..]), Err(JunitError::Empty));
        assert_eq!(parse(&b"\xef\xbb\xbf\n"[..]), Err(JunitError::Empty));
        for (xml, why) in [
            (&b"plain text"[..], "text outside"),
            (b"<?xml version='1.0'?>", "no root"),
            (b"<!-- only a comment -->", "no root"),
            (b"<a>", "ends inside <a>"),
            (b"<a><b>text", "ends inside <b>"),
            (b"<a><![CDATA[open", "CDATA"),
            (b"<a", ""),
            (b"<a></b>", ""),
            (b"</a>", ""),
            (b"<a/><b/>", "root"),
            (b"<a/>text", "text outside"),
            (b"<a/><![CDATA[x]]>", "CDATA outside"),
            (b"<a/><!DOCTYPE a>", "DOCTYPE"),
            (b"<!DOCTYPE a><!DOCTYPE a><a/>", "DOCTYPE"),
            (b"<a b='<'/>", "`<`"),
            (b"<a b='&oob;'/>", "&oob;"),
            (b"<a>&oob;</a>", "&oob;"),
            (b"<a>a & b</a>", "`&`"),
            (b"<a b=c/>", "not quoted"),
            (b"<a b/>", "no value"),
            (b"<a b='1'c='2'/>", "whitespace"),
            (b"<a b='1' b='2'/>", "duplicate"),
            (b"< a/>", "element name"),
            (b"<1a/>", "element name"),
            (b"<a><!-- x -- y --></a>", ""),
            (b"<a/><?xml version='1.0'?>", "declaration"),
            (b"<?xml encoding='utf-8'?><a/>", "declaration"),
            (
                b"<?xml version='1.0' encoding='UTF-16 LE'?><a/>",
                "UTF-16 LE",
            ),
            (
                b"<?xml version='1.0' encoding='x-nonsense'?><a/>",
                "unknown encoding",
            ),
            (
                b"<?xml version='1.0' encoding='ISO-2022-JP'?><a/>",
                "unsupported",
            ),
            (b"<r><!ENTITY x 'y'></r>", ""),
        ] {
            let message = malformed(xml);
            assert!(
                message.contains(why),
                "{:?}: {message:?} should mention {why:?}",
                String::from_utf8_lossy(xml)
            );
        }
        let deep = format!(
            "{}{}",
            "<a>".repeat(MAX_DEPTH + 1),
            "</a>".repeat(MAX_DEPTH + 1)
        );
        assert!(malformed(deep.as_bytes()).contains("deeper"));
        let fine = format!("{}{}", "<a>".repeat(MAX_DEPTH), "</a>".repeat(MAX_DEPTH));
        assert!(parse(fine.as_bytes()).is_ok());
    }

    #[test]
    fn encodings() {
        let xml = "<?xml version=\"1.0\" encoding=\"UTF-16\"?>\r\n<testsuite name=\"é\"><testcase name=\"Проверка 😀\"><failure message=\"ü\">ß</failure></testcase></testsuite>";
        let mut le = vec![0xFF, 0xFE];
        let mut be = vec![0xFE, 0xFF];
        for unit in xml.encode_utf16() {
            le.extend_from_slice(&unit.to_le_bytes());
            be.extend_from_slice(&unit.to_be_bytes());
        }
        let no_bom = le[2..].to_vec();
        for bytes in [le, be, no_bom] {
            let c = parse(&bytes[..]).unwrap().cases.remove(0);
            assert_eq!((c.suite.as_str(), c.name.as_str()), ("é", "Проверка 😀"));
            assert_eq!(
                (c.message.as_deref(), c.detail.as_deref()),
                (Some("ü"), Some("ß"))
            );
        }
        let latin1 = b"<?xml version='1.0' encoding='ISO-8859-1'?><testsuite><testcase name='caf\xe9 \x80'><failure>\xe9&#233;</failure></testcase></testsuite>";
        let c = parse(&latin1[..]).unwrap().cases.remove(0);
        // encoding_rs reads ISO-8859-1 as windows-1252 (the WHATWG label map).
        assert_eq!(c.name, "café €");
        assert_eq!(c.detail.as_deref(), Some("éé"));
        // A declared UTF-16 on 8-bit input is read as UTF-8 (tolerance).
        let c = parse(
            &b"<?xml version='1.0' encoding='UTF-16'?><t><testcase name='\xc3\xa9'/></t>"[..],
        )
        .unwrap();
        assert_eq!(c.cases[0].name, "é");
        // Invalid UTF-8 is replaced, not fatal.
        let c = parse(&b"<t><testcase name='a\xffb'/></t>"[..]).unwrap();
        assert_eq!(c.cases[0].name, "a\u{fffd}b");
    }

    /// `<testsuite><testcase name="t"><failure message="…">BODY</failure>…`
    /// with `body` bytes of `fill`, streamed without holding it in memory.
    fn huge_failure(body: u64, fill: u8, cdata: bool) -> impl Read {
        let (open, close) = if cdata {
            ("<![CDATA[", "]]>")
        } else {
            ("", "")
        };
        let head = format!("<testsuite><testcase name=\"t\"><failure message=\"m\">{open}");
        let tail = format!("{close}</failure><system-out>after</system-out></testcase><testcase name=\"u\"/></testsuite>");
        io::Cursor::new(head.into_bytes())
            .chain(io::repeat(fill).take(body))
            .chain(io::Cursor::new(tail.into_bytes()))
    }

    #[test]
    fn a_50_mb_failure_body_keeps_the_head_and_bounded_memory() {
        let body = 50_000_000;
        for cdata in [false, true] {
            let (parsed, stats) = parse_with(huge_failure(body, b'x', cdata), &LIMITS).unwrap();
            assert_eq!(parsed.cases.len(), 2);
            let detail = parsed.cases[0].detail.as_deref().unwrap();
            assert_eq!(&detail[..MAX_DETAIL], "x".repeat(MAX_DETAIL));
            assert_eq!(
                &detail[MAX_DETAIL..],
                format!(
                    "\n[flakelab: {} more bytes dropped]",
                    body - MAX_DETAIL as u64
                )
            );
            assert_eq!(parsed.cases[0].message.as_deref(), Some("m"));
            assert!(
                stats.max_event_buffer <= 4 * LIMITS.keep,
                "event buffer grew to {} bytes",
                stats.max_event_buffer
            );
        }
    }

    #[test]
    fn huge_values_comments_and_instructions_stay_bounded() {
        let big = "y".repeat(3_000_000);
        let amps = "&amp;".repeat(600_000);
        for xml in [
            format!("<t><testcase name='n'><failure message='{big}'/></testcase></t>"),
            format!("<t><testcase name='n'><failure message='{amps}'/></testcase></t>"),
            format!("<t><!--{big}--><?pi {big}?><testcase name='n'><failure>{amps}</failure></testcase></t>"),
            format!("<t><testcase name='n'><failure><![CDATA[{big}]]]]><![CDATA[>]]></failure></testcase></t>"),
            format!("<t><testcase name='n'><failure>{big}<x/>{big}</failure></testcase><!-- -{big}- --></t>"),
        ] {
            let (parsed, stats) = parse_with(xml.as_bytes(), &LIMITS).unwrap();
            assert_eq!(parsed.cases.len(), 1);
            assert_eq!(parsed.cases[0].outcome, CaseOutcome::Failed);
            if let Some(m) = &parsed.cases[0].message {
                assert!(m.len() <= MAX_MESSAGE);
                assert!(m.chars().all(|c| c == 'y' || c == '&'), "{}", &m[..40]);
            }
            if let Some(d) = &parsed.cases[0].detail {
                assert!(d.len() <= MAX_DETAIL + 64);
            }
            assert!(stats.max_event_buffer <= 4 * LIMITS.keep, "{}", stats.max_event_buffer);
        }
        // References are still checked in what is elided.
        let bad =
            format!("<t><testcase name='n'><failure>{big}&oob;{big}</failure></testcase></t>");
        assert!(malformed(bad.as_bytes()).contains("&oob;"));
        let bad = format!("<t><testcase name='n'><failure message='{big}<{big}'/></testcase></t>");
        assert!(malformed(bad.as_bytes()).contains('<'));
        let bad = format!("<a>{big}</a>{big}");
        assert!(malformed(bad.as_bytes()).contains("text outside"));
        let ws = " ".repeat(300_000);
        assert!(parse(format!("<a/>{ws}").as_bytes()).is_ok());
    }

    #[test]
    fn the_input_size_is_capped() {
        let limits = Limits {
            input: 1000,
            ..LIMITS
        };
        let err = parse_with(huge_failure(5000, b'x', false), &limits).unwrap_err();
        assert_eq!(err, JunitError::TooLarge { limit: 1000 });
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
                    let (message, detail) = match capture {
                        Some((m, b)) => {
                            let b = b.replace("\r\n", "\n").replace('\r', "\n");
                            (m, (!b.trim().is_empty()).then_some(b))
                        }
                        None => (None, None),
                    };
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
