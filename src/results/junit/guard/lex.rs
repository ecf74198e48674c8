//! The guard's lexer: one pass over the buffered bytes that cuts them into
//! [`Event`]s borrowed from the read buffer, with the checks quick-xml made
//! before (quote-aware tags, start and end tags, `-->` and no `--` in
//! comments, `]]>`, `?>`, DOCTYPE `<`/`>` balance) and the attribute syntax
//! the document builder used to check. Start tags take a fast path that
//! scans the name and attributes once and finds the `>` on the way; any tag
//! it does not fully understand is read again by the slow, exact path
//! ([`AttrScan`]). Any text run, CDATA section, comment, PI or attribute
//! value longer than the keep limit has its middle elided, cut only where
//! no reference, terminator or UTF-8 sequence straddles the cut, and the
//! references in what is dropped are still checked.

use std::io::Read;

use super::Guard;
use crate::results::junit::text::{is_continuation, is_xml_space, ref_error, resolve_ref};
use crate::results::junit::{JunitError, MAX_REF};

/// One attribute of a start tag: where its key and value are in the tag's
/// bytes, and what its value holds.
#[derive(Debug, Clone, Copy)]
pub(in crate::results::junit) struct Attr {
    key: (u32, u32),
    value: (u32, u32),
    flags: u8,
}

/// The value holds a `&`.
const AMP: u8 = 4;
/// The value holds a `<` (malformed).
const LT: u8 = 8;

impl Attr {
    fn new(key: (usize, usize), value: (usize, usize), flags: u8) -> Attr {
        Attr {
            key: (key.0 as u32, key.1 as u32),
            value: (value.0 as u32, value.1 as u32),
            flags,
        }
    }

    pub(in crate::results::junit) fn key<'a>(&self, tag: &'a [u8]) -> &'a [u8] {
        &tag[self.key.0 as usize..self.key.1 as usize]
    }

    /// Where the value is in the tag's bytes.
    pub(in crate::results::junit) fn value_range(&self) -> std::ops::Range<usize> {
        self.value.0 as usize..self.value.1 as usize
    }

    pub(in crate::results::junit) fn value<'a>(&self, tag: &'a [u8]) -> &'a [u8] {
        &tag[self.value.0 as usize..self.value.1 as usize]
    }

    /// The value holds a `&`.
    pub(in crate::results::junit) fn has_ref(&self) -> bool {
        self.flags & AMP != 0
    }

    /// The value holds a `<`.
    pub(in crate::results::junit) fn has_lt(&self) -> bool {
        self.flags & LT != 0
    }

    /// The value is kept as is: no reference, no whitespace to normalise.
    pub(in crate::results::junit) fn is_plain(&self, tag: &[u8]) -> bool {
        let value = self.value(tag);
        self.flags & AMP == 0 && memchr::memchr3(b'\t', b'\n', b'\r', value).is_none()
    }
}

/// What the lexer hands the document builder.
pub(in crate::results::junit) enum Event<'a> {
    /// A start tag: `tag` is everything between `<` and `>` (without the
    /// `/` of an empty element), its first `name_len` bytes the name.
    Start {
        tag: &'a [u8],
        name_len: usize,
        attrs: &'a [Attr],
        empty: bool,
    },
    /// An end tag and its name.
    End { name: &'a [u8] },
    /// Character data (references not resolved), `elided` bytes of it
    /// dropped after `raw`, `elided_text` when any of those was not
    /// whitespace.
    Text {
        raw: &'a [u8],
        elided: u64,
        elided_text: bool,
    },
    /// The content of a CDATA section, `elided` bytes of it dropped after
    /// `raw`.
    CData { raw: &'a [u8], elided: u64 },
    /// An XML declaration, `<?xml` to `?>`.
    Decl(&'a [u8]),
    /// A DOCTYPE declaration.
    DocType,
    /// A comment or a processing instruction.
    Markup,
    /// The end of the input.
    Eof,
}

/// Bytes of a processing instruction always kept (so the XML declaration is
/// never elided, whatever `keep` is).
const MIN_PI_KEEP: usize = 1024;

const fn table(bytes: &[u8]) -> [bool; 256] {
    let mut t = [false; 256];
    let mut i = 0;
    while i < bytes.len() {
        t[bytes[i] as usize] = true;
        i += 1;
    }
    t
}

/// Bytes that end an element name on the fast path.
const NAME_END: [bool; 256] = table(b" \t\n\r>/\"'");
/// Bytes that end an attribute name: whitespace and `=`, and the quotes and
/// brackets that make it a bad one.
const KEY_END: [bool; 256] = table(b" \t\n\r=\"'<>");
fn value_flags(value: &[u8]) -> u8 {
    value.iter().fold(0, |f, &b| match b {
        b'&' => f | AMP,
        b'<' => f | LT,
        _ => f,
    })
}

pub(in crate::results::junit) fn is_name_start(b: Option<u8>) -> bool {
    matches!(
        b,
        Some(b'A'..=b'Z' | b'a'..=b'z' | b'_' | b':' | 0x80..=0xff)
    )
}

/// Where the `>` that ends a tag is in `hay` (which starts inside the tag,
/// outside any quote), skipping quoted values.
fn tag_end(hay: &[u8]) -> Option<usize> {
    let mut quote = 0u8;
    for k in memchr::memchr3_iter(b'>', b'"', b'\'', hay) {
        let b = hay[k];
        if quote == 0 {
            if b == b'>' {
                return Some(k);
            }
            quote = b;
        } else if b == quote {
            quote = 0;
        }
    }
    None
}

/// Where the `]]>` ending a CDATA section starts in `hay`.
fn cdata_end(hay: &[u8]) -> Option<usize> {
    memchr::memchr_iter(b'>', hay)
        .find(|&j| j >= 2 && hay[j - 1] == b']' && hay[j - 2] == b']')
        .map(|j| j - 2)
}

/// Where a `>` preceded by `?` is in `buf[from..]`, `buf[from - 1]` being
/// looked at too.
fn pi_end(buf: &[u8], from: usize) -> Option<usize> {
    memchr::memchr_iter(b'>', &buf[from..])
        .map(|k| from + k)
        .find(|&j| buf[j - 1] == b'?')
}

/// Whether the content of a PI (after `<?`) makes it an XML declaration.
fn is_decl(content: &[u8]) -> bool {
    content.starts_with(b"xml") && (content.len() == 3 || is_xml_space(content[3]))
}

const UNCLOSED_TAG: &str = "syntax error: tag not closed: `>` not found before end of input";

/// What the fast scan of a start tag found.
enum Fast {
    /// The whole tag: its content's end (before `/>` or `>`), the name's
    /// length, whether it is empty, and the index after its `>`.
    Tag {
        content_end: usize,
        name_len: usize,
        empty: bool,
        next: usize,
    },
    /// Something the fast path does not handle: read it the exact way.
    Slow,
    /// The buffer ends inside the tag.
    More,
}

impl<R: Read> Guard<R> {
    /// The next event. With `skip_space`, a text run of nothing but
    /// whitespace is passed over instead of being an event (the caller
    /// says when such a run cannot matter to it).
    pub(in crate::results::junit) fn next(
        &mut self,
        skip_space: bool,
    ) -> Result<Event<'_>, JunitError> {
        if !self.sniffed {
            self.sniff()?;
        }
        loop {
            if self.pos == self.end {
                if !self.eof {
                    self.fill()?;
                }
                if self.pos == self.end {
                    return Ok(Event::Eof);
                }
            }
            if self.buf[self.pos] == b'<' {
                break;
            }
            if !skip_space {
                return self.text();
            }
            let rest = &self.buf[self.pos..self.end];
            match rest.iter().position(|&b| !is_xml_space(b)) {
                Some(k) if rest[k] == b'<' => self.pos += k,
                Some(_) => return self.text(),
                None => self.pos = self.end,
            }
        }
        self.want(2)?;
        let Some(&b) = self.buf[..self.end].get(self.pos + 1) else {
            return Err(self.malformed(self.pos, UNCLOSED_TAG));
        };
        match b {
            b'!' => self.bang(),
            b'?' => self.pi(),
            b'/' => self.end_tag(),
            _ => self.start_tag(),
        }
    }

    /// Reads until `n` bytes from `pos` are buffered or the input ends.
    fn want(&mut self, n: usize) -> Result<(), JunitError> {
        while self.end - self.pos < n && !self.eof {
            self.fill()?;
        }
        Ok(())
    }

    fn note_side(&mut self) {
        self.max_side = self.max_side.max(self.side.capacity());
    }

    /// Character data up to the next `<`.
    fn text(&mut self) -> Result<Event<'_>, JunitError> {
        let keep = self.limits.keep;
        let cut = loop {
            let p = self.pos;
            let avail = self.end - p;
            let window = avail.min(keep + MAX_REF);
            let lt = memchr::memchr(b'<', &self.buf[p..p + window]);
            if let Some(k) = lt {
                if k <= keep {
                    self.pos = p + k;
                    return Ok(Event::Text {
                        raw: &self.buf[p..p + k],
                        elided: 0,
                        elided_text: false,
                    });
                }
            } else if window < keep + MAX_REF && !self.eof {
                self.fill()?;
                continue;
            } else if avail <= keep {
                // The input ends in this text.
                self.pos = self.end;
                return Ok(Event::Text {
                    raw: &self.buf[p..self.end],
                    elided: 0,
                    elided_text: false,
                });
            }
            // Longer than `keep`: cut right before a `&` or after a `;` in
            // the next MAX_REF bytes, else where no UTF-8 sequence is cut.
            let from = p + keep;
            let stop = lt.map_or(p + window, |k| p + k);
            let cut = match memchr::memchr2(b'&', b';', &self.buf[from..stop]) {
                Some(k) if self.buf[from + k] == b'&' => from + k,
                Some(k) => from + k + 1,
                None if lt.is_some() => {
                    // No reference in the way: the `<` ends the run first.
                    self.pos = stop;
                    return Ok(Event::Text {
                        raw: &self.buf[p..stop],
                        elided: 0,
                        elided_text: false,
                    });
                }
                None => {
                    let mut c = from;
                    while c < from + 3 && c < self.end && is_continuation(self.buf[c]) {
                        c += 1;
                    }
                    c
                }
            };
            break cut;
        };
        let p = self.pos;
        self.side.clear();
        self.side.extend_from_slice(&self.buf[p..cut]);
        self.note_side();
        self.pos = cut;
        let (elided, elided_text) = self.skip_run(b'<', false)?;
        Ok(Event::Text {
            raw: &self.side,
            elided,
            elided_text,
        })
    }

    /// Drops bytes up to (not including) the next `stop`, checking the
    /// references in them (and rejecting `<` when `lt_bad`, in an attribute
    /// value). Returns the bytes dropped and whether any was not
    /// whitespace. Stops at the end of the input.
    fn skip_run(&mut self, stop: u8, lt_bad: bool) -> Result<(u64, bool), JunitError> {
        let (mut elided, mut text) = (0u64, false);
        let mut account = |bytes: &[u8]| {
            elided += bytes.len() as u64;
            if !text {
                text = bytes.iter().any(|&b| !is_xml_space(b));
            }
        };
        loop {
            let p = self.pos;
            let found = memchr::memchr3(stop, b'&', b'<', &self.buf[p..self.end]);
            let Some(k) = found else {
                account(&self.buf[p..self.end]);
                self.pos = self.end;
                if self.eof {
                    return Ok((elided, text));
                }
                self.fill()?;
                continue;
            };
            let at = p + k;
            account(&self.buf[p..at]);
            self.pos = at;
            match self.buf[at] {
                b'&' => {
                    let rest = &self.buf[at + 1..self.end.min(at + 1 + MAX_REF)];
                    match memchr::memchr(b';', rest) {
                        Some(semi) => {
                            if resolve_ref(&rest[..semi]).is_none() {
                                return Err(self.malformed(at, ref_error(&rest[..semi])));
                            }
                            account(&self.buf[at..at + semi + 2]);
                            self.pos = at + semi + 2;
                        }
                        None if rest.len() < MAX_REF && !self.eof => {
                            self.fill()?;
                        }
                        None => {
                            return Err(
                                self.malformed(at, "`&` not followed by a reference ending in `;`")
                            )
                        }
                    }
                }
                b'<' if lt_bad => return Err(self.malformed(at, "`<` in an attribute value")),
                _ => return Ok((elided, text)),
            }
        }
    }

    /// `<!`: a CDATA section, a comment or a DOCTYPE.
    fn bang(&mut self) -> Result<Event<'_>, JunitError> {
        self.want(3)?;
        match self.buf[..self.end].get(self.pos + 2) {
            Some(b'[') => self.cdata(),
            Some(b'-') => self.comment(),
            Some(b'D' | b'd') => self.doctype(),
            _ => Err(self.malformed(self.pos, "syntax error: unknown or missed symbol in markup")),
        }
    }

    fn cdata(&mut self) -> Result<Event<'_>, JunitError> {
        const OPEN: &[u8] = b"<![CDATA[";
        const UNCLOSED: &str =
            "syntax error: CDATA not closed: `]]>` not found before end of input";
        let keep = self.limits.keep;
        self.want(OPEN.len())?;
        let start = self.pos;
        if !self.buf[start..self.end].starts_with(OPEN) {
            return Err(self.malformed(start, UNCLOSED));
        }
        let cut = loop {
            let c = self.pos + OPEN.len();
            let lim = self.end.min(c + keep + 3);
            if let Some(t) = cdata_end(&self.buf[c..lim]) {
                self.pos = c + t + 3;
                return Ok(Event::CData {
                    raw: &self.buf[c..c + t],
                    elided: 0,
                });
            }
            if lim < c + keep + 3 {
                if self.eof {
                    return Err(self.malformed(self.pos, UNCLOSED));
                }
                self.fill()?;
                continue;
            }
            let mut cut = c + keep;
            while cut < c + keep + 3 && is_continuation(self.buf[cut]) {
                cut += 1;
            }
            self.side.clear();
            self.side.extend_from_slice(&self.buf[c..cut]);
            self.note_side();
            break cut;
        };
        self.pos = cut;
        let mut elided = 0u64;
        loop {
            let p = self.pos;
            if let Some(t) = cdata_end(&self.buf[p..self.end]) {
                elided += t as u64;
                self.pos = p + t + 3;
                return Ok(Event::CData {
                    raw: &self.side,
                    elided,
                });
            }
            // Keep two bytes: they may begin the terminator.
            let drop = (self.end - p).saturating_sub(2);
            elided += drop as u64;
            self.pos = p + drop;
            if self.eof {
                return Err(self.malformed(self.pos, UNCLOSED));
            }
            self.fill()?;
        }
    }

    /// A comment: `<!--` up to the first `--`, which must be followed by
    /// `>`.
    fn comment(&mut self) -> Result<Event<'_>, JunitError> {
        const UNCLOSED: &str =
            "syntax error: comment not closed: `-->` not found before end of input";
        self.want(4)?;
        let start = self.pos;
        match self.buf[..self.end].get(start + 3) {
            Some(b'-') => {}
            Some(_) => {
                return Err(self.malformed(start, "syntax error: a comment must start with `<!--`"))
            }
            None => return Err(self.malformed(start, UNCLOSED)),
        }
        let mut from = start + 4;
        loop {
            let Some(k) = memchr::memchr(b'-', &self.buf[from..self.end]) else {
                if self.eof {
                    return Err(self.malformed(self.pos, UNCLOSED));
                }
                self.pos = self.end;
                self.fill()?;
                from = self.pos;
                continue;
            };
            let q = from + k;
            if q + 2 >= self.end {
                if self.eof {
                    return Err(self.malformed(self.pos, UNCLOSED));
                }
                self.pos = q;
                self.fill()?;
                from = self.pos;
                continue;
            }
            if self.buf[q + 1] == b'-' {
                if self.buf[q + 2] == b'>' {
                    self.pos = q + 3;
                    return Ok(Event::Markup);
                }
                return Err(self.malformed(
                    q,
                    "ill-formed document: forbidden string `--` was found in a comment",
                ));
            }
            from = q + 1;
        }
    }

    /// `<!DOCTYPE`, up to the `>` that balances the `<`s in it.
    fn doctype(&mut self) -> Result<Event<'_>, JunitError> {
        const OPEN: &[u8] = b"<!DOCTYPE";
        const UNCLOSED: &str =
            "syntax error: DOCTYPE not closed: `>` not found before end of input";
        self.want(OPEN.len())?;
        let start = self.pos;
        let head = &self.buf[start..self.end];
        if head.len() < OPEN.len() || !head[..OPEN.len()].eq_ignore_ascii_case(OPEN) {
            return Err(self.malformed(start, UNCLOSED));
        }
        let mut balance = 0u64;
        let mut named = false;
        let mut length = 0usize;
        let mut from = start + OPEN.len();
        loop {
            let hay = &self.buf[from..self.end];
            let mut closed = None;
            for k in memchr::memchr2_iter(b'<', b'>', hay) {
                if hay[k] == b'<' {
                    balance += 1;
                } else if balance == 0 {
                    closed = Some(k);
                    break;
                } else {
                    balance -= 1;
                }
            }
            let upto = closed.unwrap_or(hay.len());
            named = named || hay[..upto].iter().any(|&b| !is_xml_space(b));
            length += from + upto - self.pos;
            if length > self.limits.markup {
                return Err(self.tag_too_long(start));
            }
            if let Some(k) = closed {
                if !named {
                    return Err(
                        self.malformed(start, "ill-formed document: a DOCTYPE without a name")
                    );
                }
                self.pos = from + k + 1;
                return Ok(Event::DocType);
            }
            if self.eof {
                return Err(self.malformed(start, UNCLOSED));
            }
            self.pos = self.end;
            self.fill()?;
            from = self.pos;
        }
    }

    fn tag_too_long(&self, at: usize) -> JunitError {
        let limit = self.limits.markup;
        self.malformed(at, format!("a tag or DOCTYPE longer than {limit} bytes"))
    }

    /// `<?`: a processing instruction or the XML declaration.
    fn pi(&mut self) -> Result<Event<'_>, JunitError> {
        const UNCLOSED: &str = "syntax error: processing instruction or xml declaration not closed: `?>` not found before end of input";
        let mut from = self.pos + 2;
        loop {
            let start = self.pos;
            match pi_end(&self.buf[..self.end], from) {
                Some(j) if j == start + 2 => return Err(self.malformed(start, UNCLOSED)),
                Some(j) => {
                    self.pos = j + 1;
                    return Ok(if is_decl(&self.buf[start + 2..j - 1]) {
                        Event::Decl(&self.buf[start..j + 1])
                    } else {
                        Event::Markup
                    });
                }
                None if self.eof => return Err(self.malformed(start, UNCLOSED)),
                None => {
                    let scanned = self.end - start;
                    if !self.fill()? {
                        break;
                    }
                    from = self.pos + scanned.max(2);
                }
            }
        }
        // Longer than the buffer: keep its head, drop the rest.
        let start = self.pos;
        let keep = self.limits.keep.max(MIN_PI_KEEP).min(self.end - start - 2);
        let decl = is_decl(&self.buf[start + 2..self.end]);
        self.side.clear();
        self.side
            .extend_from_slice(&self.buf[start..start + 2 + keep]);
        self.side.extend_from_slice(b"?>");
        self.note_side();
        self.pos = self.end - 1;
        loop {
            if let Some(j) = pi_end(&self.buf[..self.end], self.pos + 1) {
                self.pos = j + 1;
                return Ok(if decl {
                    Event::Decl(&self.side)
                } else {
                    Event::Markup
                });
            }
            if self.eof {
                return Err(self.malformed(self.pos, UNCLOSED));
            }
            self.pos = self.end - 1;
            self.fill()?;
        }
    }

    /// `</name>`.
    fn end_tag(&mut self) -> Result<Event<'_>, JunitError> {
        loop {
            let p = self.pos;
            let mut i = p + 2;
            while i < self.end && !NAME_END[self.buf[i] as usize] {
                i += 1;
            }
            if i < self.end && self.buf[i] == b'>' {
                self.pos = i + 1;
                return Ok(Event::End {
                    name: &self.buf[p + 2..i],
                });
            }
            // The exact way: the name is what is between `</` and the `>`,
            // trailing whitespace trimmed.
            if let Some(g) = tag_end(&self.buf[p + 1..self.end]) {
                let name = trim_end(&self.buf[p + 2..p + 1 + g]);
                self.pos = p + 2 + g;
                return Ok(Event::End {
                    name: &self.buf[p + 2..p + 2 + name],
                });
            }
            if self.eof {
                return Err(self.malformed(p, UNCLOSED_TAG));
            }
            if !self.fill()? {
                self.assemble_tag()?;
                let tag = &self.side[1..self.side.len() - 1];
                let name = trim_end(&tag[1..]);
                return Ok(Event::End {
                    name: &self.side[2..2 + name],
                });
            }
        }
    }

    /// `<name attributes>` or `<name attributes/>`.
    fn start_tag(&mut self) -> Result<Event<'_>, JunitError> {
        loop {
            let p = self.pos;
            match self.fast_start(p) {
                Fast::Tag {
                    content_end,
                    name_len,
                    empty,
                    next,
                } => {
                    self.pos = next;
                    return Ok(Event::Start {
                        tag: &self.buf[p + 1..content_end],
                        name_len,
                        attrs: &self.attrs,
                        empty,
                    });
                }
                Fast::More if !self.eof => {
                    if self.fill()? {
                        continue;
                    }
                }
                Fast::More | Fast::Slow => {}
            }
            let p = self.pos;
            let Some(g) = tag_end(&self.buf[p + 1..self.end]) else {
                if self.eof {
                    return Err(self.malformed(p, UNCLOSED_TAG));
                }
                if self.fill()? {
                    continue;
                }
                // Longer than the buffer.
                return self.assembled_start_tag();
            };
            let content = &self.buf[p + 1..p + 1 + g];
            match scan_tag(content, self.limits.keep, &mut self.attrs) {
                Err(message) => return Err(self.malformed(p, message)),
                Ok(Some((len, name_len, empty))) => {
                    self.pos = p + 2 + g;
                    return Ok(Event::Start {
                        tag: &self.buf[p + 1..p + 1 + len],
                        name_len,
                        attrs: &self.attrs,
                        empty,
                    });
                }
                Ok(None) => {
                    // A value longer than `keep`: copy the tag, eliding it.
                    return self.assembled_start_tag();
                }
            }
        }
    }

    /// The fast path for a start tag at `p`: name, then `S key="value"`
    /// repeated, then `>` or `/>`, read once.
    fn fast_start(&mut self, p: usize) -> Fast {
        let buf = &self.buf[..self.end];
        let end = buf.len();
        let keep = self.limits.keep;
        let t = p + 1;
        let mut i = t;
        while i < end && !NAME_END[buf[i] as usize] {
            i += 1;
        }
        if i == end {
            return Fast::More;
        }
        let name_len = i - t;
        if !is_name_start(buf.get(t).copied()) {
            return Fast::Slow;
        }
        self.attrs.clear();
        loop {
            match buf[i] {
                b'>' => {
                    return Fast::Tag {
                        content_end: i,
                        name_len,
                        empty: false,
                        next: i + 1,
                    }
                }
                b'/' => {
                    return match buf.get(i + 1) {
                        Some(b'>') => Fast::Tag {
                            content_end: i,
                            name_len,
                            empty: true,
                            next: i + 2,
                        },
                        Some(_) => Fast::Slow,
                        None => Fast::More,
                    }
                }
                b' ' | b'\t' | b'\n' | b'\r' => {}
                _ => return Fast::Slow,
            }
            i += 1;
            while i < end && is_xml_space(buf[i]) {
                i += 1;
            }
            if i == end {
                return Fast::More;
            }
            if matches!(buf[i], b'>' | b'/') {
                continue;
            }
            let key = i;
            while i < end && !KEY_END[buf[i] as usize] {
                i += 1;
            }
            if i + 1 >= end {
                return Fast::More;
            }
            if buf[i] != b'=' || !is_name_start(Some(buf[key])) {
                return Fast::Slow;
            }
            let key_end = i;
            let quote = buf[i + 1];
            if quote != b'"' && quote != b'\'' {
                return Fast::Slow;
            }
            i += 2;
            let value = i;
            let mut flags = 0u8;
            loop {
                let Some(k) = memchr::memchr3(quote, b'&', b'<', &buf[i..]) else {
                    return Fast::More;
                };
                i += k;
                match buf[i] {
                    b'&' => flags |= AMP,
                    b'<' => flags |= LT,
                    _ => break,
                }
                i += 1;
            }
            if i - value > keep {
                return Fast::Slow;
            }
            self.attrs
                .push(Attr::new((key - t, key_end - t), (value - t, i - t), flags));
            i += 1;
            if i == end {
                return Fast::More;
            }
        }
    }

    /// Copies the tag at `pos` (from `<` to `>`, quote-aware) into `side`,
    /// eliding the middle of any attribute value longer than `keep`; for a
    /// tag longer than the read buffer or with such a value.
    /// The start tag at `pos` copied aside by [`Self::assemble_tag`] (longer
    /// than the buffer, or with a value to elide), scanned there.
    fn assembled_start_tag(&mut self) -> Result<Event<'_>, JunitError> {
        self.assemble_tag()?;
        let mut attrs = std::mem::take(&mut self.attrs);
        let content = &self.side[1..self.side.len() - 1];
        let parsed = scan_tag(content, usize::MAX, &mut attrs);
        self.attrs = attrs;
        let (len, name_len, empty) = parsed
            .map_err(|m| self.malformed(self.pos, m))?
            .unwrap_or((0, 0, false));
        Ok(Event::Start {
            tag: &self.side[1..1 + len],
            name_len,
            attrs: &self.attrs,
            empty,
        })
    }

    fn assemble_tag(&mut self) -> Result<(), JunitError> {
        let keep = self.limits.keep;
        let start = self.pos;
        self.side.clear();
        let mut quote = 0u8;
        // Bytes of the open value copied so far.
        let mut run = 0usize;
        loop {
            let p = self.pos;
            let end = self.end;
            let found = if quote == 0 {
                memchr::memchr3(b'>', b'"', b'\'', &self.buf[p..end])
            } else {
                memchr::memchr(quote, &self.buf[p..end])
            };
            let seg = found.map_or(end, |k| p + k);
            if quote != 0 && run + (seg - p) > keep {
                let from = p + (keep - run);
                if end - from < MAX_REF && found.is_none() && !self.eof {
                    self.fill()?;
                    continue;
                }
                // Cut right before a `&` or after a `;`, else where no
                // UTF-8 sequence is cut; a quote close by ends the value
                // first.
                let window = &self.buf[from..end.min(from + MAX_REF)];
                let mut cut = None;
                for (k, &b) in window.iter().enumerate() {
                    if b == quote {
                        break;
                    }
                    if b == b'&' {
                        cut = Some(from + k);
                        break;
                    }
                    if b == b';' {
                        cut = Some(from + k + 1);
                        break;
                    }
                }
                let whole =
                    found.is_some_and(|_| seg < from + MAX_REF) && cut.is_none_or(|c| c > seg);
                if !whole {
                    let cut = cut.unwrap_or_else(|| {
                        let mut c = from;
                        while c < from + 3 && c < end && is_continuation(self.buf[c]) {
                            c += 1;
                        }
                        c
                    });
                    self.side.extend_from_slice(&self.buf[p..cut]);
                    self.pos = cut;
                    self.skip_run(quote, true)?;
                    if self.pos == self.end && self.eof {
                        return Err(self.malformed(self.pos, UNCLOSED_TAG));
                    }
                    // The closing quote is next: a run of `keep` lets it in.
                    run = keep;
                    continue;
                }
            }
            match found {
                Some(k) => {
                    let j = p + k;
                    self.side.extend_from_slice(&self.buf[p..=j]);
                    self.pos = j + 1;
                    if quote != 0 {
                        quote = 0;
                    } else if self.buf[j] == b'>' {
                        self.note_side();
                        if self.side.len() > self.limits.markup {
                            return Err(self.tag_too_long(start));
                        }
                        return Ok(());
                    } else {
                        quote = self.buf[j];
                    }
                    run = 0;
                }
                None => {
                    self.side.extend_from_slice(&self.buf[p..end]);
                    if quote != 0 {
                        run += end - p;
                    }
                    self.pos = end;
                    if self.eof {
                        return Err(self.malformed(self.pos, UNCLOSED_TAG));
                    }
                    self.fill()?;
                }
            }
            if self.side.len() > self.limits.markup {
                self.note_side();
                return Err(self.tag_too_long(start));
            }
        }
    }
}

/// Length of `s` without trailing XML whitespace.
fn trim_end(s: &[u8]) -> usize {
    s.iter()
        .rposition(|&b| !is_xml_space(b))
        .map_or(0, |i| i + 1)
}

/// Reads the content of a start tag (between `<` and `>`) the exact way:
/// a trailing `/` makes it empty, the name runs to the first whitespace,
/// and the rest is attributes ([`AttrScan`]), put in `attrs`. Returns the
/// content's length without the `/`, the name's length and whether it is
/// empty; `None` when a value is longer than `keep`.
fn scan_tag(
    content: &[u8],
    keep: usize,
    attrs: &mut Vec<Attr>,
) -> Result<Option<(usize, usize, bool)>, String> {
    let (content, empty) = match content.strip_suffix(b"/") {
        Some(c) => (c, true),
        None => (content, false),
    };
    let name_len = content
        .iter()
        .position(|&b| is_xml_space(b))
        .unwrap_or(content.len());
    let name = &content[..name_len];
    if !is_name_start(name.first().copied()) {
        return Err(format!(
            "invalid element name {:?}",
            String::from_utf8_lossy(name)
        ));
    }
    attrs.clear();
    let mut scan = AttrScan {
        raw: content,
        at: name_len,
    };
    while let Some((key, value)) = scan.next_attr()? {
        if value.1 - value.0 > keep {
            return Ok(None);
        }
        let flags = value_flags(&content[value.0..value.1]);
        attrs.push(Attr::new(key, value, flags));
    }
    Ok(Some((content.len(), name_len, empty)))
}

/// A validating scanner over the attributes of a start tag (the bytes after
/// the element name): `S Name S? = S? ("…" | '…')`, repeated. Returns
/// where each key and raw value is.
struct AttrScan<'a> {
    raw: &'a [u8],
    at: usize,
}

type Span = (usize, usize);

impl AttrScan<'_> {
    fn next_attr(&mut self) -> Result<Option<(Span, Span)>, String> {
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
        while i < raw.len() && !KEY_END[raw[i] as usize] {
            i += 1;
        }
        if matches!(raw.get(i), Some(b'"' | b'\'' | b'<' | b'>')) {
            return Err("bad attribute name".into());
        }
        let key = &raw[key_start..i];
        if !is_name_start(key.first().copied()) {
            return Err(format!(
                "bad attribute name {:?}",
                String::from_utf8_lossy(key)
            ));
        }
        let key_end = i;
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
        self.at = i + len + 1;
        Ok(Some(((key_start, key_end), (i, i + len))))
    }
}

#[cfg(test)]
mod tests {
    use crate::results::junit::guard::tests::huge_failure;
    use crate::results::junit::tests::malformed;
    use crate::results::junit::{parse, parse_with, CaseOutcome, LIMITS, MAX_DETAIL, MAX_MESSAGE};

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
}
