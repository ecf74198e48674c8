//! A hand-written reader for the common `flakelab.run/2` run line: the
//! exact shape [`super::compact::Writer`] emits (serde_json's compact
//! output of [`RunLine`]: no whitespace, fields in declaration order,
//! absent optional fields left out), decoded in one pass with no
//! allocation for its strings.
//!
//! It only ever answers what serde_json would: [`run_line`] gives the
//! [`RunLine`] that `serde_json::from_slice::<RunLine>` gives for the same
//! bytes, or None — it declines — for anything it does not fully understand
//! (an escape in a string, whitespace, an unknown or repeated field, fields
//! in another order, a `null`, a number outside the writer's forms), which
//! the caller then reads with serde_json as before. The rare nested values
//! (`end`, `codes`, `topo`, `procs`) are delimited here and handed to
//! serde_json on their own. `fast_tests` checks the agreement by property.
//!
//! Pure: bytes in, a borrowed line out.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};

use super::compact::{RunLine, TestLine};
use crate::record::{Outcome, RunCpu, StressCpu, TestOutcome};

static SERDE_ONLY: AtomicBool = AtomicBool::new(false);

/// From now on, in this process, every run line is read by serde_json: the
/// reader as it was before this fast path, which the scale benchmark
/// (`benches/scale.rs`) measures it against.
#[doc(hidden)]
pub fn read_with_serde_only() {
    SERDE_ONLY.store(true, Ordering::Relaxed);
}

/// Whether run lines are tried here first.
pub(super) fn enabled() -> bool {
    !SERDE_ONLY.load(Ordering::Relaxed)
}

/// The run line in `bytes` (one line, without its newline), when it has
/// the writer's shape; None to leave it to serde_json.
pub(super) fn run_line(bytes: &[u8]) -> Option<RunLine<'_>> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut c = Cursor { text, at: 0 };
    let line = c.run()?;
    (c.at == bytes.len()).then_some(line)
}

/// A position in the line being read.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

/// The fields of a run line, in the writer's order (which `Ord` follows).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Field {
    Schema,
    W,
    I,
    Id,
    C,
    R,
    S,
    At,
    D,
    O,
    X,
    End,
    Codes,
    Sm,
    Why,
    Ob,
    Od,
    Busy,
    Cpu,
    Strag,
    Warn,
    Tm,
    Fs,
    Topo,
    Procs,
    N,
    Ab,
    T,
}

impl Field {
    fn of(key: &str) -> Option<Field> {
        Some(match key {
            "schema" => Field::Schema,
            "w" => Field::W,
            "i" => Field::I,
            "id" => Field::Id,
            "c" => Field::C,
            "r" => Field::R,
            "s" => Field::S,
            "at" => Field::At,
            "d" => Field::D,
            "o" => Field::O,
            "x" => Field::X,
            "end" => Field::End,
            "codes" => Field::Codes,
            "sm" => Field::Sm,
            "why" => Field::Why,
            "ob" => Field::Ob,
            "od" => Field::Od,
            "busy" => Field::Busy,
            "cpu" => Field::Cpu,
            "strag" => Field::Strag,
            "warn" => Field::Warn,
            "tm" => Field::Tm,
            "fs" => Field::Fs,
            "topo" => Field::Topo,
            "procs" => Field::Procs,
            "n" => Field::N,
            "ab" => Field::Ab,
            "t" => Field::T,
            _ => return None,
        })
    }
}

impl<'a> Cursor<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.at).copied()
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek() == Some(b)).then(|| self.at += 1)
    }

    /// `,` before another member (true) or the closing `close` (false).
    fn more(&mut self, close: u8) -> Option<bool> {
        match self.peek()? {
            b',' => {
                self.at += 1;
                Some(true)
            }
            b if b == close => {
                self.at += 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// A string without escapes or control characters, borrowed.
    fn str(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.at;
        let bytes = self.bytes();
        let mut i = start;
        loop {
            match *bytes.get(i)? {
                b'"' => break,
                b'\\' | 0..=0x1f => return None,
                _ => i += 1,
            }
        }
        self.at = i + 1;
        // Both ends are next to an ASCII quote: char boundaries.
        self.text.get(start..i)
    }

    /// `"key":`.
    fn key(&mut self) -> Option<&'a str> {
        let key = self.str()?;
        self.eat(b':')?;
        Some(key)
    }

    /// A non-negative JSON integer (no sign, fraction or exponent).
    fn uint(&mut self) -> Option<u64> {
        let bytes = self.bytes();
        let start = self.at;
        let mut v: u64 = 0;
        while let Some(&b) = bytes.get(self.at) {
            if !b.is_ascii_digit() {
                break;
            }
            v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
            self.at += 1;
        }
        let digits = self.at - start;
        if digits == 0 || (digits > 1 && bytes[start] == b'0') {
            return None;
        }
        // A fraction or exponent makes it a float, which serde refuses for
        // an integer field: leave the line to it.
        matches!(self.peek(), Some(b',' | b'}' | b']')).then_some(v)
    }

    fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.uint()?).ok()
    }

    fn usize(&mut self) -> Option<usize> {
        usize::try_from(self.uint()?).ok()
    }

    /// An `i32`. `-0` is declined: serde_json reads it as a float.
    fn i32(&mut self) -> Option<i32> {
        if self.eat(b'-').is_some() {
            let v = self.uint()?;
            if v == 0 {
                return None;
            }
            i32::try_from(-i64::try_from(v).ok()?).ok()
        } else {
            i32::try_from(self.uint()?).ok()
        }
    }

    /// A finite float in JSON's number grammar, in the forms the writer
    /// emits (at most 32 characters, an exponent of at most 3 digits).
    fn f64(&mut self) -> Option<f64> {
        let bytes = self.bytes();
        let start = self.at;
        let mut i = start;
        let digits = |i: &mut usize| {
            let from = *i;
            while bytes.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
            *i - from
        };
        if bytes.get(i) == Some(&b'-') {
            i += 1;
        }
        let int = digits(&mut i);
        if int == 0 || (int > 1 && bytes[i - int] == b'0') {
            return None;
        }
        if bytes.get(i) == Some(&b'.') {
            i += 1;
            if digits(&mut i) == 0 {
                return None;
            }
        }
        if matches!(bytes.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(bytes.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let exp = digits(&mut i);
            if exp == 0 || exp > 3 {
                return None;
            }
        }
        if i - start > 32 || !matches!(bytes.get(i), Some(b',' | b'}' | b']')) {
            return None;
        }
        // Rust's parse rounds correctly, as serde_json's float_roundtrip.
        let v: f64 = self.text[start..i].parse().ok()?;
        self.at = i;
        v.is_finite().then_some(v)
    }

    fn bool(&mut self) -> Option<bool> {
        let rest = &self.bytes()[self.at..];
        if rest.starts_with(b"true") {
            self.at += 4;
            Some(true)
        } else if rest.starts_with(b"false") {
            self.at += 5;
            Some(false)
        } else {
            None
        }
    }

    fn outcome(&mut self) -> Option<Outcome> {
        Some(match self.str()? {
            "pass" => Outcome::Pass,
            "fail" => Outcome::Fail,
            "timeout" => Outcome::Timeout,
            "error" => Outcome::Error,
            "not_applied" => Outcome::NotApplied,
            _ => return None,
        })
    }

    fn test_outcome(&mut self) -> Option<TestOutcome> {
        Some(match self.str()? {
            "pass" => TestOutcome::Pass,
            "fail" => TestOutcome::Fail,
            "error" => TestOutcome::Error,
            "skip" => TestOutcome::Skip,
            _ => return None,
        })
    }

    /// The members of an array, each read by `item`.
    fn array<T>(&mut self, mut item: impl FnMut(&mut Self) -> Option<T>) -> Option<Vec<T>> {
        self.eat(b'[')?;
        let mut out = Vec::new();
        if self.eat(b']').is_some() {
            return Some(out);
        }
        loop {
            out.push(item(self)?);
            if !self.more(b']')? {
                return Some(out);
            }
        }
    }

    /// The text of one object or array (strings inside respected), to hand
    /// to serde_json.
    fn raw(&mut self) -> Option<&'a str> {
        let bytes = self.bytes();
        let start = self.at;
        if !matches!(bytes.get(start), Some(b'{' | b'[')) {
            return None;
        }
        let mut depth = 0usize;
        let mut i = start;
        loop {
            match *bytes.get(i)? {
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                b'"' => {
                    i += 1;
                    loop {
                        match *bytes.get(i)? {
                            b'"' => break,
                            b'\\' => i += 2,
                            _ => i += 1,
                        }
                    }
                }
                _ => {}
            }
            i += 1;
        }
        self.at = i + 1;
        self.text.get(start..i + 1)
    }

    /// A nested value read by serde_json on its own.
    fn serde<T: serde::de::DeserializeOwned>(&mut self) -> Option<T> {
        serde_json::from_str(self.raw()?).ok()
    }

    /// The members of an object in the order of `rank`: each key's rank
    /// above the last one's (so no key twice), each read by `member`.
    fn object<K: Ord + Copy>(
        &mut self,
        rank: impl Fn(&str) -> Option<K>,
        mut member: impl FnMut(&mut Self, K) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        let mut last: Option<K> = None;
        loop {
            let k = rank(self.key()?)?;
            if last.is_some_and(|l| k <= l) {
                return None;
            }
            last = Some(k);
            member(self, k)?;
            if !self.more(b'}')? {
                return Some(());
            }
        }
    }

    fn test_line(&mut self) -> Option<TestLine> {
        let (mut k, mut o) = (None, None);
        let mut t = TestLine {
            k: 0,
            o: TestOutcome::Pass,
            rr: false,
            re: 0,
            sig: None,
            msg: None,
            sm: None,
        };
        let rank = |key: &str| {
            ["k", "o", "rr", "re", "sig", "msg", "sm"]
                .iter()
                .position(|f| *f == key)
        };
        self.object(rank, |c, at| {
            match at {
                0 => k = Some(c.u32()?),
                1 => o = Some(c.test_outcome()?),
                2 => t.rr = c.bool()?,
                3 => t.re = c.u32()?,
                4 => t.sig = Some(c.str()?.to_string()),
                5 => t.msg = Some(c.str()?.to_string()),
                _ => t.sm = Some(c.bool()?),
            }
            Some(())
        })?;
        t.k = k?;
        t.o = o?;
        Some(t)
    }

    fn stress(&mut self) -> Option<StressCpu> {
        let (mut threads, mut cpus, mut cpu_s, mut error) = (None, None, None, None);
        let rank = |key: &str| {
            ["threads", "cpus", "cpu_s", "error"]
                .iter()
                .position(|f| *f == key)
        };
        self.object(rank, |c, at| {
            match at {
                0 => threads = Some(c.usize()?),
                1 => cpus = Some(c.usize()?),
                2 => cpu_s = Some(c.f64()?),
                _ => error = Some(c.str()?.to_string()),
            }
            Some(())
        })?;
        Some(StressCpu {
            threads: threads?,
            cpus: cpus?,
            cpu_s: cpu_s?,
            error,
        })
    }

    fn cpu(&mut self) -> Option<RunCpu> {
        let (mut window_s, mut subject_s, mut stress) = (None, None, None);
        let rank = |key: &str| {
            ["window_s", "subject_s", "stress"]
                .iter()
                .position(|f| *f == key)
        };
        self.object(rank, |c, at| {
            match at {
                0 => window_s = Some(c.f64()?),
                1 => subject_s = Some(c.f64()?),
                _ => stress = Some(c.stress()?),
            }
            Some(())
        })?;
        Some(RunCpu {
            window_s: window_s?,
            subject_s,
            stress,
        })
    }

    fn run(&mut self) -> Option<RunLine<'a>> {
        let mut line = RunLine {
            schema: Cow::Borrowed(""),
            w: Cow::Borrowed(""),
            i: 0,
            id: None,
            c: 0,
            r: 0,
            s: 0,
            at: Cow::Borrowed(""),
            d: 0.0,
            o: Outcome::Pass,
            x: None,
            end: None,
            codes: None,
            sm: None,
            why: None,
            ob: 0,
            od: 0,
            busy: None,
            cpu: None,
            strag: 0,
            warn: Vec::new(),
            tm: None,
            fs: None,
            topo: None,
            procs: None,
            n: 0,
            ab: Vec::new(),
            t: Vec::new(),
        };
        // The fields serde_json requires.
        let mut required = 0u8;
        self.object(Field::of, |c, f| {
            match f {
                Field::Schema => {
                    line.schema = Cow::Borrowed(c.str()?);
                    required |= 1;
                }
                Field::W => {
                    line.w = Cow::Borrowed(c.str()?);
                    required |= 2;
                }
                Field::I => {
                    line.i = c.usize()?;
                    required |= 4;
                }
                Field::Id => line.id = Some(Cow::Borrowed(c.str()?)),
                Field::C => {
                    line.c = c.u32()?;
                    required |= 8;
                }
                Field::R => line.r = c.u32()?,
                Field::S => {
                    line.s = c.uint()?;
                    required |= 16;
                }
                Field::At => {
                    line.at = Cow::Borrowed(c.str()?);
                    required |= 32;
                }
                Field::D => {
                    line.d = c.f64()?;
                    required |= 64;
                }
                Field::O => {
                    line.o = c.outcome()?;
                    required |= 128;
                }
                Field::X => line.x = Some(c.i32()?),
                Field::End => line.end = Some(c.serde()?),
                Field::Codes => line.codes = Some(c.serde()?),
                Field::Sm => line.sm = Some(c.bool()?),
                Field::Why => line.why = Some(c.str()?.to_string()),
                Field::Ob => line.ob = c.uint()?,
                Field::Od => line.od = c.uint()?,
                Field::Busy => line.busy = Some(c.f64()?),
                Field::Cpu => line.cpu = Some(Box::new(c.cpu()?)),
                Field::Strag => line.strag = c.u32()?,
                Field::Warn => line.warn = c.array(|c| c.str().map(str::to_string))?,
                Field::Tm => line.tm = Some(c.str()?.to_string()),
                Field::Fs => line.fs = Some(c.str()?.to_string()),
                Field::Topo => line.topo = Some(Box::new(c.serde()?)),
                Field::Procs => line.procs = Some(Box::new(c.serde()?)),
                Field::N => line.n = c.u32()?,
                Field::Ab => line.ab = c.array(Cursor::u32)?,
                Field::T => line.t = c.array(Cursor::test_line)?,
            }
            Some(())
        })?;
        (required == u8::MAX).then_some(line)
    }
}
