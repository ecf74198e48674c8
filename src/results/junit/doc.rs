//! The document state machine: builds [`Case`]s from the lexer's events by
//! the reference reading (element stack, suite names, open testcases, the
//! captured failure text), and checks what the lexer leaves to it: the XML
//! declaration and its encoding, DOCTYPE placement, a single root, nesting
//! depth, matching end tags, duplicate attributes, `<` in attribute values
//! and references.

use std::borrow::Cow;

use encoding_rs::{Encoding, UTF_16BE, UTF_16LE, UTF_8};
use quick_xml::events::BytesDecl;

use super::guard::Attr;
use super::text::{
    check_refs, floor_char_boundary, is_xml_space, normalize_newlines, parse_time, unescape,
    utf8_string,
};
use super::{Case, CaseOutcome, Check, JunitError, Limits, Parsed, MAX_DETAIL, MAX_MESSAGE};

/// The most cases reserved up front (about 200 MB of address space), so a
/// report near the 1 GiB input limit does not ask for gigabytes at once.
const RESERVE_MAX: usize = 1 << 20;
/// Attributes an element may have before their keys are checked for a
/// repeat through a set rather than against each other.
const MANY_ATTRIBUTES: usize = 16;

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
    /// An `<error>` directly inside a `<testsuite>`: trouble outside any
    /// test case.
    SuiteError,
    /// Anything else.
    Other,
}

/// What an open `<testsuite>` declared and held, for the check that its
/// `errors` count is carried by test cases.
#[derive(Debug, Clone, Copy, Default)]
struct SuiteCount {
    /// Its `errors` attribute.
    declared_errors: u64,
    /// Test cases in it (at any depth) that failed or errored.
    bad_cases: u64,
}

/// Which capture of an open case an element fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// The first `<failure>`/`<error>`.
    Primary,
    /// The first flaky*/rerun* element, used when there is no failure/error.
    Rerun,
    /// The failed case's own `<system-out>`, used when its failure says
    /// nothing (CTest: `<failure message=""/>`, the output beside it).
    Output,
}

/// One open element: its kind and where its (qualified) name starts in
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
    output: Option<Capture>,
}

/// Attribute values of interest on one start tag.
#[derive(Default)]
struct Attrs {
    name: Option<String>,
    classname: Option<String>,
    class: Option<String>,
    time: Option<f64>,
    message: Option<String>,
    file: Option<String>,
    line: Option<u32>,
    errors: Option<u64>,
}

pub(super) struct Doc {
    limits: Limits,
    cases: Vec<Case>,
    root: Option<String>,
    root_closed: bool,
    /// Any markup or non-whitespace text seen (else an empty report).
    pub(super) seen_markup: bool,
    doctype: bool,
    frames: Vec<Frame>,
    /// Names of the open elements, back to back.
    names: Vec<u8>,
    suites: Vec<String>,
    suite_counts: Vec<SuiteCount>,
    infra: Vec<String>,
    open: Vec<OpenCase>,
    /// Encoding of the bytes, when not UTF-8.
    encoding: Option<&'static Encoding>,
    scratch: Vec<u8>,
}

impl Doc {
    pub(super) fn new(limits: Limits) -> Doc {
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
            suite_counts: Vec::new(),
            infra: Vec::new(),
            open: Vec::new(),
            encoding: None,
            scratch: Vec::new(),
        }
    }

    /// Reserves room for `cases` test cases.
    /// Reserves room for `cases` more cases, at most [`RESERVE_MAX`]; a
    /// reservation the allocator refuses is skipped (the list then grows as
    /// usual): a report's declared size never aborts the parse.
    pub(super) fn reserve(&mut self, cases: usize) {
        let _ = self.cases.try_reserve(cases.min(RESERVE_MAX));
    }

    pub(super) fn decl(&mut self, decl: &BytesDecl<'_>) -> Check {
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
            // UTF-16 input was transcoded to UTF-8 before lexing; a
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

    pub(super) fn doctype(&mut self) -> Check {
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

    /// A start tag: `tag` is its content (between `<` and `>`, without the
    /// `/` of an empty element), its name the first `name_len` bytes, and
    /// `attrs` its attributes, syntax already checked.
    pub(super) fn start(
        &mut self,
        tag: &[u8],
        name_len: usize,
        attrs: &[Attr],
        empty: bool,
    ) -> Check {
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
        let qname = &tag[..name_len];
        let local = local_name(qname);

        let parent = self.frames.last().map(|f| f.kind);
        let kind = match local {
            b"testsuite" => Kind::Suite,
            b"testcase" => Kind::Case,
            _ => match parent {
                Some(Kind::Case) => self.outcome_kind(local),
                Some(Kind::Capture(slot)) if local == b"stackTrace" => Kind::Trace(slot),
                Some(Kind::Suite) if local == b"error" => Kind::SuiteError,
                _ => Kind::Other,
            },
        };

        let attrs = self.attributes(tag, attrs, kind)?;

        if self.frames.is_empty() {
            self.root = Some(String::from_utf8_lossy(local).into_owned());
        }
        match kind {
            Kind::Suite => {
                self.suites.push(attrs.name.unwrap_or_default());
                self.suite_counts.push(SuiteCount {
                    declared_errors: attrs.errors.unwrap_or(0),
                    bad_cases: 0,
                });
            }
            Kind::SuiteError => {
                let suite = self.suites.last().cloned().unwrap_or_default();
                self.infra.push(match attrs.message {
                    Some(m) if !m.trim().is_empty() => {
                        format!("an <error> outside any test case in testsuite `{suite}`: {m}")
                    }
                    _ => format!("an <error> outside any test case in testsuite `{suite}`"),
                });
            }
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
                    output: None,
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
                    file: attrs.file,
                    line: attrs.line,
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
                        Slot::Output => case.output = Some(capture),
                    }
                }
            }
            Kind::Outcome | Kind::Trace(_) | Kind::Other => {}
        }
        self.frames.push(Frame {
            kind,
            name_at: self.names.len(),
        });
        self.names.extend_from_slice(qname);
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
            b"flakyFailure" | b"rerunFailure" | b"rerun" => (CaseOutcome::Failed, true),
            b"flakyError" | b"rerunError" => (CaseOutcome::Errored, true),
            // Kept only after a failure or error (a passing case's output is
            // never read).
            b"system-out" if (case.failed || case.errored) && case.output.is_none() => {
                return Kind::Capture(Slot::Output);
            }
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
    fn attributes(&mut self, tag: &[u8], list: &[Attr], kind: Kind) -> Check<Attrs> {
        let mut attrs = Attrs::default();
        // For a tag whose values are kept, the whole tag as text when it is
        // UTF-8 without tab or line end (one check, not one a value): a
        // value without references is then a slice of it, kept as is.
        let keeps = matches!(
            kind,
            Kind::Case | Kind::Suite | Kind::Capture(_) | Kind::SuiteError
        );
        let text = if keeps
            && self.encoding.is_none()
            && memchr::memchr3(b'\t', b'\n', b'\r', tag).is_none()
        {
            std::str::from_utf8(tag).ok()
        } else {
            None
        };
        let plain = |attr: &Attr| match text {
            Some(text) if !attr.has_ref() => text.get(attr.value_range()),
            _ => None,
        };
        // Past a few attributes, the keys seen go into a set: comparing each
        // key with every earlier one is quadratic, and an element may carry
        // any number of attributes.
        let mut keys: Option<std::collections::HashSet<&[u8]>> = (list.len() > MANY_ATTRIBUTES)
            .then(|| std::collections::HashSet::with_capacity(list.len()));
        for (n, attr) in list.iter().enumerate() {
            let key = attr.key(tag);
            let value = attr.value(tag);
            // Length and last byte first: most keys differ there, and
            // comparing them costs no call.
            let same = |a: &Attr| {
                let k = a.key(tag);
                k.len() == key.len() && k.last() == key.last() && k == key
            };
            let repeated = match keys.as_mut() {
                Some(keys) => !keys.insert(key),
                None => list[..n].iter().any(same),
            };
            if repeated {
                return Err(format!(
                    "duplicate attribute {:?}",
                    String::from_utf8_lossy(key)
                ));
            }
            if attr.has_lt() {
                return Err(format!(
                    "`<` in the value of attribute {:?}",
                    String::from_utf8_lossy(key)
                ));
            }
            let string = |doc: &mut Doc| match plain(attr) {
                Some(s) => Ok(s.to_owned()),
                None => doc.attr_string(value, attr.is_plain(tag)),
            };
            match (kind, key) {
                (Kind::Case | Kind::Suite, b"name") => attrs.name = Some(string(self)?),
                (Kind::Case, b"classname") => attrs.classname = Some(string(self)?),
                (Kind::Case, b"class") => attrs.class = Some(string(self)?),
                (Kind::Case, b"time") => {
                    attrs.time = match plain(attr) {
                        Some(s) => parse_time(s),
                        None => self.attr_time(value, attr)?,
                    }
                }
                (Kind::Case, b"file") => attrs.file = Some(string(self)?),
                (Kind::Case, b"line") => {
                    attrs.line = match plain(attr) {
                        Some(s) => s.trim().parse().ok(),
                        None => self.attr_number(value, attr)?,
                    }
                }
                (Kind::Suite, b"errors") => {
                    attrs.errors = match plain(attr) {
                        Some(s) => s.trim().parse().ok(),
                        None => self.attr_number(value, attr)?,
                    }
                }
                (Kind::Capture(_) | Kind::SuiteError, b"message") => {
                    let mut message = string(self)?;
                    message.truncate(floor_char_boundary(&message, MAX_MESSAGE));
                    attrs.message = Some(message);
                }
                _ if attr.has_ref() => check_refs(value)?,
                _ => {}
            }
        }
        Ok(attrs)
    }

    /// An attribute value, normalised and unescaped.
    /// `plain` when the value holds no `&`, tab, line feed or carriage
    /// return.
    fn attr_string(&mut self, raw: &[u8], plain: bool) -> Check<String> {
        if plain && self.encoding.is_none() {
            return Ok(utf8_string(raw));
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        let result = self.decode_into(raw, true, &mut scratch);
        let out = result.map(|()| utf8_string(&scratch));
        self.scratch = scratch;
        out
    }

    /// A number attribute (`line`, `errors`), surrounding whitespace
    /// ignored; `None` when it does not parse. A plain value is parsed in
    /// place, without the string [`Doc::attr_string`] would build.
    fn attr_number<T: std::str::FromStr>(&mut self, raw: &[u8], attr: &Attr) -> Check<Option<T>> {
        if !attr.has_ref() && self.encoding.is_none() {
            return Ok(std::str::from_utf8(raw)
                .ok()
                .and_then(|s| s.trim().parse().ok()));
        }
        Ok(self.attr_string(raw, false)?.trim().parse().ok())
    }

    fn attr_time(&mut self, raw: &[u8], attr: &Attr) -> Check<Option<f64>> {
        if !attr.has_ref() && self.encoding.is_none() {
            return Ok(std::str::from_utf8(raw).ok().and_then(parse_time));
        }
        Ok(parse_time(&self.attr_string(raw, false)?))
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

    /// Whether a text run of nothing but whitespace here would change
    /// nothing: anywhere but in a captured body.
    pub(super) fn ignores_space(&self) -> bool {
        !matches!(
            self.frames.last().map(|f| f.kind),
            Some(Kind::Capture(_) | Kind::Trace(_))
        )
    }

    pub(super) fn text(
        &mut self,
        raw: &[u8],
        cdata: bool,
        elided: u64,
        elided_text: bool,
    ) -> Check {
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
            Slot::Output => case.output.as_mut(),
        }
    }

    /// An end tag: its name must be the innermost open element's.
    pub(super) fn end_tag(&mut self, name: &[u8]) -> Check {
        let Some(frame) = self.frames.last() else {
            return Err(format!(
                "ill-formed document: close tag `</{}>` does not match any open tag",
                String::from_utf8_lossy(name)
            ));
        };
        let open = &self.names[frame.name_at..];
        if open != name {
            return Err(format!(
                "ill-formed document: expected `</{}>`, but `</{}>` was found",
                String::from_utf8_lossy(open),
                String::from_utf8_lossy(name)
            ));
        }
        self.end()
    }

    fn end(&mut self) -> Check {
        let Some(frame) = self.frames.pop() else {
            return Err("an end tag without a start tag".into());
        };
        self.names.truncate(frame.name_at);
        match frame.kind {
            Kind::Suite => {
                let name = self.suites.pop().unwrap_or_default();
                let count = self.suite_counts.pop().unwrap_or_default();
                if count.declared_errors > 0 && count.bad_cases == 0 {
                    self.infra.push(format!(
                        "testsuite `{name}` declares {} error(s) but none of its test cases failed or errored",
                        count.declared_errors
                    ));
                }
                if let Some(outer) = self.suite_counts.last_mut() {
                    outer.bad_cases += count.bad_cases;
                }
            }
            Kind::Case => {
                if let Some(open) = self.open.pop() {
                    self.close_case(open);
                }
            }
            Kind::Capture(_) | Kind::Outcome | Kind::Trace(_) | Kind::SuiteError | Kind::Other => {}
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
        if matches!(outcome, CaseOutcome::Failed | CaseOutcome::Errored) {
            if let Some(suite) = self.suite_counts.last_mut() {
                suite.bad_cases += 1;
            }
        }
        case.outcome = outcome;
        case.first_attempt = first_attempt;
        case.reruns = open.reruns;
        if let Some(capture) = capture {
            (case.message, case.detail) = capture.finish();
        }
        let said_nothing =
            case.message.as_deref().is_none_or(|m| m.trim().is_empty()) && case.detail.is_none();
        if said_nothing && matches!(first_attempt, CaseOutcome::Failed | CaseOutcome::Errored) {
            if let Some(output) = open.output {
                case.detail = output.finish().1;
            }
        }
    }

    pub(super) fn finish(self, position: u64) -> Result<Parsed, JunitError> {
        if let Some(frame) = self.frames.last() {
            let name =
                String::from_utf8_lossy(local_name(&self.names[frame.name_at..])).into_owned();
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
            infra: self.infra,
        })
    }
}

/// The local part of a qualified name (after the last `:`). Names are
/// short: a plain loop costs less than `memrchr`'s call.
fn local_name(qname: &[u8]) -> &[u8] {
    match qname.iter().rposition(|&b| b == b':') {
        Some(i) => &qname[i + 1..],
        None => qname,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::junit::tests::{case, malformed};
    use crate::results::junit::{parse, MAX_DEPTH};

    fn ok(xml: &str) -> Parsed {
        parse(xml.as_bytes()).unwrap_or_else(|e| panic!("{e}\n{xml}"))
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
        // A bare `<rerun>` element is an attempt that failed and was rerun.
        let c = read(r#"<rerun message="first try">t</rerun>"#);
        assert_eq!((c.outcome, c.first_attempt, c.reruns), (Passed, Failed, 1));
        assert_eq!(c.message.as_deref(), Some("first try"));
    }

    #[test]
    fn a_failure_that_says_nothing_takes_the_cases_own_output() {
        use CaseOutcome::*;
        let read = |body: &str| ok(&case("t", body)).cases.remove(0);
        // CTest 3.25: `<failure message=""/>`, the test's output beside it.
        let c =
            read("<failure message=\"\"/><system-out>invoice dated day 2, want 1\n</system-out>");
        assert_eq!(c.outcome, Failed);
        assert_eq!(c.detail.as_deref(), Some("invoice dated day 2, want 1\n"));
        // A failure that says something keeps it; a passing case's output
        // is never read.
        let c = read(r#"<failure message="boom"/><system-out>out</system-out>"#);
        assert_eq!((c.message.as_deref(), c.detail), (Some("boom"), None));
        let c = read(r#"<system-out>out</system-out>"#);
        assert_eq!((c.outcome, c.detail), (Passed, None));
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
    fn number_attributes_read_in_place_as_when_unescaped() {
        let line =
            |value: &str| ok(&format!("<t><testcase name='n' line='{value}'/></t>")).cases[0].line;
        assert_eq!(line("12"), Some(12));
        assert_eq!(line(" 12\t"), Some(12));
        assert_eq!(line("1&#50;"), Some(12));
        assert_eq!(line("\r\n7 "), Some(7));
        // Surrounding whitespace is Unicode's (as `str::trim` has it).
        assert_eq!(line("1\u{a0}"), Some(1));
        for bad in ["", "x", "1 2", "-3", "4294967296"] {
            assert_eq!(line(bad), None, "{bad:?}");
        }
        assert!(malformed(b"<t><testcase name='n' line='&oob;'/></t>").contains("&oob;"));
        let latin1 =
            b"<?xml version='1.0' encoding='ISO-8859-1'?><t><testcase name='n' line='\xa0 9'/></t>";
        assert_eq!(parse(&latin1[..]).unwrap().cases[0].line, Some(9));
        let errors = |value: &str| {
            ok(&format!(
                "<testsuite name='s' errors='{value}'><testcase name='a'/></testsuite>"
            ))
            .infra
        };
        assert_eq!(errors(" 2 ").len(), 1);
        assert_eq!(errors("&#49;").len(), 1);
        assert!(errors("0").is_empty() && errors("two").is_empty());
    }

    #[test]
    fn duplicate_attributes_are_found_among_many_and_alike() {
        // Keys of one length that differ only in their last byte, or only
        // before it, are distinct; a repeat is found in the first eight and
        // after them.
        assert!(parse(&b"<a ab='1' ac='2' bc='3' zz='4'/>"[..]).is_ok());
        let many: String = (0..12).map(|i| format!(" k{i:02}='v'")).collect();
        assert!(parse(format!("<a{many}/>").as_bytes()).is_ok());
        for repeat in ["k03", "k11", "k00"] {
            let xml = format!("<a{many} {repeat}='w'/>");
            assert!(malformed(xml.as_bytes()).contains(repeat), "{repeat}");
        }
        assert!(malformed(b"<a ab='1' cb='2' ab='3'/>").contains("duplicate"));
        // Past MANY_ATTRIBUTES the keys are kept in a set: the same answers.
        let lots: String = (0..MANY_ATTRIBUTES * 3)
            .map(|i| format!(" k{i:03}='v'"))
            .collect();
        assert!(parse(format!("<a{lots}/>").as_bytes()).is_ok());
        for repeat in ["k000", "k020", "k047"] {
            let xml = format!("<a{lots} {repeat}='w'/>");
            assert!(malformed(xml.as_bytes()).contains(repeat), "{repeat}");
        }
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
    fn trouble_outside_any_test_case_is_named() {
        let p = ok("<testsuites><testsuite name='s' errors='1'>\
                    <error message='ImportError: no module x'>trace</error>\
                    <testcase name='a'/></testsuite>\
                    <testsuite name='t' errors='2'><testcase name='b'/></testsuite>\
                    <testsuite name='u' errors='1'><testcase name='c'><error/></testcase></testsuite>\
                    <testsuite name='v' errors='0'><testcase name='d'><failure/></testcase></testsuite>\
                    </testsuites>");
        assert_eq!(
            p.infra,
            [
                "an <error> outside any test case in testsuite `s`: ImportError: no module x",
                "testsuite `s` declares 1 error(s) but none of its test cases failed or errored",
                "testsuite `t` declares 2 error(s) but none of its test cases failed or errored",
            ]
        );
        assert_eq!(p.cases.len(), 4);
        // An <error> inside a test case is the case's, not the suite's.
        assert!(
            ok("<testsuite errors='1'><testcase name='a'><error/></testcase></testsuite>")
                .infra
                .is_empty()
        );
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
}
