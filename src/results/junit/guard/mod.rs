//! The guard: the reader's input and its single lexing pass. This file owns
//! the input side: sniffing the encoding (BOM, UTF-16 transcoding),
//! counting the input against the size limit, and the read buffer the
//! events borrow from. [`lex`] cuts the buffered bytes into events and
//! elides long runs.

mod lex;

use std::io::{self, Read};

use encoding_rs::{UTF_16BE, UTF_16LE};

use super::{JunitError, Limits, MAX_REF};
pub(super) use lex::{Attr, Event};

/// The reader's input and lexer: sniffs the encoding (strips a BOM,
/// transcodes UTF-16 to UTF-8), counts the input against the size limit,
/// and cuts the bytes into [`Event`]s that borrow from its read buffer (no
/// copy), eliding the middle of any text run, CDATA section, comment, PI or
/// attribute value longer than `keep` bytes so that what it holds stays
/// bounded whatever the report's size. Only what it keeps of an elided run,
/// and a tag longer than the read buffer, are copied (into `side`).
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
    /// Start of the bytes not yet made into events.
    pos: usize,
    /// End of the bytes in `buf`.
    end: usize,
    /// The input has no more bytes.
    eof: bool,
    sniffed: bool,
    /// Input bytes read.
    read: u64,
    /// Offset of `buf[0]` in the (UTF-8) input stream.
    base: u64,
    /// The kept head of an elided run, or a tag assembled across refills.
    side: Vec<u8>,
    /// The attributes of the last start tag.
    attrs: Vec<Attr>,
    /// Largest capacity `side` reached.
    pub(super) max_side: usize,
}

impl<R: Read> Guard<R> {
    pub(super) fn new(inner: R, limits: Limits) -> Guard<R> {
        // Room for a whole run of `keep` bytes wherever it starts, plus the
        // lookahead to cut it safely.
        let size = limits.chunk.max(2 * limits.keep + 8 * MAX_REF);
        Guard {
            inner,
            limits,
            decoder: None,
            raw: Vec::new(),
            raw_pos: 0,
            raw_eof: false,
            utf16_done: false,
            buf: vec![0; size],
            pos: 0,
            end: 0,
            eof: false,
            sniffed: false,
            read: 0,
            base: 0,
            side: Vec::new(),
            attrs: Vec::new(),
            max_side: 0,
        }
    }

    /// Offset in the input of the next byte to lex.
    pub(super) fn position(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Offset in the input of `buf[i]`.
    fn offset(&self, i: usize) -> u64 {
        self.base + i as u64
    }

    fn malformed(&self, i: usize, message: impl Into<String>) -> JunitError {
        JunitError::Malformed {
            position: self.offset(i),
            message: message.into(),
        }
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

    fn io_error(&self, e: io::Error) -> JunitError {
        if self.read > self.limits.input {
            JunitError::TooLarge {
                limit: self.limits.input,
            }
        } else {
            JunitError::Io {
                path: "<input>".to_string(),
                message: e.to_string(),
            }
        }
    }

    /// Drops the bytes before `pos`, then reads until the buffer is full or
    /// the input ends. Returns whether any byte was added. Reading until
    /// full (rather than once) keeps the lexer's rescans of an unfinished
    /// event to a few, whatever sizes the inner reader hands out.
    fn fill(&mut self) -> Result<bool, JunitError> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.base += self.pos as u64;
            self.end -= self.pos;
            self.pos = 0;
        }
        let before = self.end;
        while !self.eof && self.end < self.buf.len() {
            self.read_more()?;
        }
        Ok(self.end > before)
    }

    /// One read (or one decoding step) into `buf[end..]`; sets `eof` at the
    /// end of the input.
    fn read_more(&mut self) -> Result<(), JunitError> {
        let limit = self.limits.input;
        if self.decoder.is_none() {
            let n = Self::read_inner(
                &mut self.inner,
                &mut self.buf[self.end..],
                &mut self.read,
                limit,
            )
            .map_err(|e| self.io_error(e))?;
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
                self.raw.resize(self.limits.chunk.max(4 * MAX_REF), 0);
                let n = Self::read_inner(&mut self.inner, &mut self.raw, &mut self.read, limit)
                    .map_err(|e| self.io_error(e))?;
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
            if written > 0 || self.end == self.buf.len() {
                return Ok(());
            }
        }
    }

    /// Looks at the first bytes: skips a UTF-8 BOM, switches to UTF-16
    /// transcoding on a UTF-16 BOM or `<?` in UTF-16.
    fn sniff(&mut self) -> Result<(), JunitError> {
        self.sniffed = true;
        while self.end < 4 && !self.eof {
            self.read_more()?;
        }
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
        match utf16 {
            None => self.pos = bom,
            Some(encoding) => {
                self.raw = self.buf[bom..self.end].to_vec();
                self.raw_pos = 0;
                self.raw_eof = self.eof;
                self.eof = false;
                self.decoder = Some(encoding.new_decoder_without_bom_handling());
                self.pos = 0;
                self.end = 0;
                // Offsets count the transcoded stream, from its start.
                self.base = 0;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::junit::{parse, parse_with, LIMITS};

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
