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
//! Pure: bytes in, a borrowed line out; the one state is
//! [`read_with_serde_only`], a process-wide switch the scale bench uses to
//! measure the reader before this one in the same run.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};

use super::lines::{RunLine, TestLine};
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
    Cursor { text, at: 0 }.run()
}

/// A position in the line being read.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

/// The start every run line the writer writes has: schema and writer key.
const PREFIX: &str = "{\"schema\":\"flakelab.run/2\",\"w\":";

/// A run line's key's place in the writer's order.
fn run_field(key: &str) -> Option<usize> {
    Some(match key {
        "schema" => 0,
        "w" => 1,
        "i" => 2,
        "id" => 3,
        "c" => 4,
        "r" => 5,
        "s" => 6,
        "at" => 7,
        "d" => 8,
        "o" => 9,
        "x" => 10,
        "end" => 11,
        "codes" => 12,
        "sm" => 13,
        "why" => 14,
        "ob" => 15,
        "od" => 16,
        "busy" => 17,
        "cpu" => 18,
        "strag" => 19,
        "warn" => 20,
        "tm" => 21,
        "fs" => 22,
        "topo" => 23,
        "procs" => 24,
        "n" => 25,
        "ab" => 26,
        "t" => 27,
        "sp" => 28,
        _ => return None,
    })
}

fn test_field(key: &str) -> Option<usize> {
    Some(match key {
        "k" => 0,
        "o" => 1,
        "rr" => 2,
        "re" => 3,
        "sig" => 4,
        "msg" => 5,
        "sm" => 6,
        "sp" => 7,
        _ => return None,
    })
}

fn cpu_field(key: &str) -> Option<usize> {
    Some(match key {
        "window_s" => 0,
        "subject_s" => 1,
        "stress" => 2,
        _ => return None,
    })
}

fn stress_field(key: &str) -> Option<usize> {
    Some(match key {
        "threads" => 0,
        "cpus" => 1,
        "cpu_s" => 2,
        "error" => 3,
        _ => return None,
    })
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

    /// The members of an object in the order `rank` gives its keys, some
    /// left out: each read by `member` with its key's rank. A key must rank
    /// above the last one, so a key out of order, twice or unknown declines
    /// the line.
    fn object(
        &mut self,
        rank: impl Fn(&str) -> Option<usize>,
        member: impl FnMut(&mut Self, usize) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        self.members(None, rank, member)
    }

    /// The members after one of rank `last` (and its comma), to the `}`.
    fn members(
        &mut self,
        mut last: Option<usize>,
        rank: impl Fn(&str) -> Option<usize>,
        mut member: impl FnMut(&mut Self, usize) -> Option<()>,
    ) -> Option<()> {
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
            sp: None,
        };
        self.object(test_field, |c, at| {
            match at {
                0 => k = Some(c.u32()?),
                1 => o = Some(c.test_outcome()?),
                2 => t.rr = c.bool()?,
                3 => t.re = c.u32()?,
                4 => t.sig = Some(c.str()?.to_string()),
                5 => t.msg = Some(c.str()?.to_string()),
                6 => t.sm = Some(c.bool()?),
                _ => t.sp = Some(c.u32()?),
            }
            Some(())
        })?;
        t.k = k?;
        t.o = o?;
        Some(t)
    }

    fn stress(&mut self) -> Option<StressCpu> {
        let (mut threads, mut cpus, mut cpu_s, mut error) = (None, None, None, None);
        self.object(stress_field, |c, at| {
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
        self.object(cpu_field, |c, at| {
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

    /// The whole line: a run object and nothing after it.
    fn run(&mut self) -> Option<RunLine<'a>> {
        let (mut schema, mut w, mut i, mut id, mut c_) = (None, None, None, None, None);
        let (mut r, mut s, mut at, mut d, mut o) = (0, None, None, None, None);
        let (mut x, mut end, mut codes, mut sm, mut why) = (None, None, None, None, None);
        let (mut ob, mut od, mut busy, mut cpu, mut strag) = (0, 0, None, None, 0);
        let (mut warn, mut tm, mut fs, mut topo, mut procs) = (Vec::new(), None, None, None, None);
        let (mut n, mut ab, mut t, mut sp) = (0, Vec::new(), Vec::new(), None);
        // The writer's start, checked at once (the reader has checked it).
        let known = self.text.starts_with(PREFIX);
        let text = self.text;
        let schema_known = known.then(|| &text[11..25]);
        let mut member = |c: &mut Self, f| {
            match f {
                0 => schema = Some(c.str()?),
                1 => w = Some(c.str()?),
                2 => i = Some(c.usize()?),
                3 => id = Some(c.str()?),
                4 => c_ = Some(c.u32()?),
                5 => r = c.u32()?,
                6 => s = Some(c.uint()?),
                7 => at = Some(c.str()?),
                8 => d = Some(c.f64()?),
                9 => o = Some(c.outcome()?),
                10 => x = Some(c.i32()?),
                11 => end = Some(c.serde()?),
                12 => codes = Some(c.serde()?),
                13 => sm = Some(c.bool()?),
                14 => why = Some(c.str()?.to_string()),
                15 => ob = c.uint()?,
                16 => od = c.uint()?,
                17 => busy = Some(c.f64()?),
                18 => cpu = Some(Box::new(c.cpu()?)),
                19 => strag = c.u32()?,
                20 => warn = c.array(|c| c.str().map(str::to_string))?,
                21 => tm = Some(c.str()?.to_string()),
                22 => fs = Some(c.str()?.to_string()),
                23 => topo = Some(Box::new(c.serde()?)),
                24 => procs = Some(Box::new(c.serde()?)),
                25 => n = c.u32()?,
                26 => ab = c.array(Cursor::u32)?,
                27 => t = c.array(Cursor::test_line)?,
                _ => sp = Some(c.u32()?),
            }
            Some(())
        };
        if known {
            self.at = PREFIX.len();
            member(self, 1)?;
            if self.more(b'}')? {
                self.members(Some(1), run_field, &mut member)?;
            }
        } else {
            self.object(run_field, &mut member)?;
        }
        if self.at != self.text.len() {
            return None;
        }
        // The fields serde_json requires are there.
        Some(RunLine {
            schema: Cow::Borrowed(schema.or(schema_known)?),
            w: Cow::Borrowed(w?),
            i: i?,
            id: id.map(Cow::Borrowed),
            c: c_?,
            r,
            s: s?,
            at: Cow::Borrowed(at?),
            d: d?,
            o: o?,
            x,
            end,
            codes,
            sm,
            why,
            ob,
            od,
            busy,
            cpu,
            strag,
            warn,
            tm,
            fs,
            topo,
            procs,
            n,
            ab,
            t,
            sp,
        })
    }
}
