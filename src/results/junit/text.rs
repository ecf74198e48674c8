//! Text-level helpers shared by the document builder and the guard:
//! character and entity references (resolving, checking, unescaping),
//! line-end and attribute-whitespace normalisation, `time` attribute
//! parsing, and small byte/UTF-8 helpers.

use std::borrow::Cow;

use super::{Check, MAX_REF};

/// A UTF-8 continuation byte (`10xxxxxx`).
pub(super) fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

pub(super) fn is_xml_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

pub(super) fn utf8_string(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

pub(super) fn floor_char_boundary(s: &str, max: usize) -> usize {
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
pub(super) fn parse_time(s: &str) -> Option<f64> {
    if let Some(value) = plain_decimal(s.as_bytes()) {
        return Some(value);
    }
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

/// `digits[.digits]` with at most 15 digits in all, read exactly the way
/// `str::parse::<f64>` reads it (the mantissa and the power of ten are exact
/// in an `f64`, so one division rounds correctly), without its general
/// machinery; `None` for anything else.
fn plain_decimal(s: &[u8]) -> Option<f64> {
    let mut mantissa: u64 = 0;
    let mut digits = 0u32;
    let mut fraction = None;
    for (i, &b) in s.iter().enumerate() {
        match b {
            b'0'..=b'9' => {
                mantissa = mantissa * 10 + u64::from(b - b'0');
                digits += 1;
                if digits > 15 {
                    return None;
                }
            }
            b'.' if fraction.is_none() => fraction = Some(i),
            _ => return None,
        }
    }
    if digits == 0 {
        return None;
    }
    let scale = fraction.map_or(0, |at| s.len() - at - 1);
    Some(mantissa as f64 / POWERS_OF_TEN[scale])
}

const POWERS_OF_TEN: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// The character a reference name (between `&` and `;`) stands for: the
/// five predefined entities and numeric character references. Anything
/// else (an entity that would need a DTD) is `None`.
pub(super) fn resolve_ref(name: &[u8]) -> Option<char> {
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

pub(super) fn ref_error(name: &[u8]) -> String {
    format!(
        "undefined entity or bad character reference &{};",
        String::from_utf8_lossy(name)
    )
}

/// Checks every `&` in `raw` starts a resolvable reference.
#[inline]
pub(super) fn check_refs(raw: &[u8]) -> Check {
    // Most text is the short whitespace between tags: a plain loop there
    // costs less than a call.
    if raw.len() <= 32 && !raw.contains(&b'&') {
        return Ok(());
    }
    check_refs_in(raw)
}

fn check_refs_in(raw: &[u8]) -> Check {
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
pub(super) fn unescape(raw: &[u8], attr: bool, out: &mut Vec<u8>) -> Check {
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
pub(super) fn normalize_newlines(raw: &[u8], out: &mut Vec<u8>) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn plain_decimals_read_as_str_parse_reads_them() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut cases: Vec<String> = [
            "0",
            "0.",
            ".5",
            "1.",
            "123456789012345",
            "0.000000000000001",
        ]
        .map(String::from)
        .to_vec();
        for _ in 0..20_000 {
            let int: String = (0..next(9))
                .map(|_| char::from(b'0' + next(10) as u8))
                .collect();
            let frac: String = (0..next(9))
                .map(|_| char::from(b'0' + next(10) as u8))
                .collect();
            cases.push(format!("{int}.{frac}"));
            cases.push(int);
        }
        for s in &cases {
            let exact = s.parse::<f64>().ok();
            let fast = plain_decimal(s.as_bytes());
            assert!(
                fast.is_none() || fast == exact,
                "{s:?}: {fast:?} vs {exact:?}"
            );
            if s.len() <= 16 && s.bytes().any(|b| b.is_ascii_digit()) {
                assert!(fast.is_some(), "{s:?}");
            }
        }
        for other in ["", ".", "1..2", "-1", "+1", " 1", "1e3", "1234567890123456"] {
            assert_eq!(plain_decimal(other.as_bytes()), None, "{other:?}");
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
}
