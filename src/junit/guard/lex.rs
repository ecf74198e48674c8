//! The guard's lexer: tracks quick-xml's lexical state over the buffered
//! bytes (quote-aware tags, `-->`, `]]>`, `?>`, DOCTYPE `<`/`>` balance) and
//! elides the middle of any text run, CDATA section, comment, PI or
//! attribute value longer than the keep limit, cutting only where no
//! reference, terminator or UTF-8 sequence straddles the cut and still
//! checking the references in what it drops.

use std::io::Read;

use super::Guard;
use crate::junit::text::{is_continuation, is_xml_space, ref_error, resolve_ref};
use crate::junit::MAX_REF;

/// Lexical state of the guard, mirroring where quick-xml's reader is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lex {
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
pub(super) enum Flow {
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

/// Bytes of a processing instruction always kept (so the XML declaration is
/// never elided, whatever `keep` is).
const MIN_PI_KEEP: usize = 1024;

impl<R: Read> Guard<R> {
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

    /// The fast path for ordinary tags, from `at` (just after a `<` that
    /// opens a start or end tag): a tag cannot contain `<`, so while each
    /// next `<` is less than `keep` bytes after the one before, those tags
    /// and the text between them need no eliding. (A `<` inside a quoted
    /// value is malformed; the tag holding it reaches the parser intact and
    /// is rejected there.) Returns the index just after the last `<` passed
    /// over when the byte after it is `!` or `?` or not read yet (the
    /// caller looks at it in [`Lex::Open`]), or `None` when the `<` after
    /// `at` is `keep` or more bytes away (the tag at `at` is lexed slowly).
    fn skip_plain_tags(&self, at: usize, end: usize) -> Option<usize> {
        let keep = self.limits.keep;
        let mut last = at;
        for k in memchr::memchr_iter(b'<', &self.buf[at..end]) {
            let j = at + k;
            if j - last >= keep {
                break;
            }
            last = j + 1;
            if last == end || matches!(self.buf[last], b'!' | b'?') {
                return Some(last);
            }
        }
        (last > at).then_some(last)
    }

    /// Classifies bytes from `ready` on; see [`Flow`].
    pub(super) fn step(&mut self) -> Flow {
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
                        _ => match self.skip_plain_tags(i, end) {
                            Some(next) => i = next,
                            None => self.lex = Lex::Tag { quote: 0 },
                        },
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

#[cfg(test)]
mod tests {
    use crate::junit::guard::tests::huge_failure;
    use crate::junit::tests::malformed;
    use crate::junit::{parse, parse_with, CaseOutcome, LIMITS, MAX_DETAIL, MAX_MESSAGE};

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
