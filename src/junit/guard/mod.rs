//! The guard: a `BufRead` between the report and quick-xml. This file owns
//! the input side: sniffing the encoding (BOM, UTF-16 transcoding),
//! counting the input against the size limit, the read buffer, and the
//! `Read`/`BufRead` plumbing quick-xml pulls from. [`lex`] classifies the
//! buffered bytes and elides long runs.

mod lex;

use std::io::{self, BufRead, Read};

use encoding_rs::{UTF_16BE, UTF_16LE};

use super::{JunitError, Limits, MAX_REF};
use lex::{Flow, Lex};

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
pub(super) struct Guard<R> {
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
    pub(super) skipped: u64,
    pub(super) fault: Option<JunitError>,
}

impl<R: Read> Guard<R> {
    pub(super) fn new(inner: R, limits: Limits) -> Guard<R> {
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
    pub(super) fn take_elided(&mut self) -> (u64, bool) {
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
    use crate::junit::{parse, parse_with, LIMITS};

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
    pub(super) fn huge_failure(body: u64, fill: u8, cdata: bool) -> impl Read {
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
    fn the_input_size_is_capped() {
        let limits = Limits {
            input: 1000,
            ..LIMITS
        };
        let err = parse_with(huge_failure(5000, b'x', false), &limits).unwrap_err();
        assert_eq!(err, JunitError::TooLarge { limit: 1000 });
    }
}
