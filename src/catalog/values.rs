//! Value grammars of the kernel-level kinds (pure parsing):
//! `faketime=+365d` / `faketime=@2027-06-30 12:00:00` /
//! `faketime=@2028-02-29T22:59:58Z` / `faketime=@dst-5s`, `cpu-stress=2x` /
//! `cpu-stress=3`, `rlimit=nofile:64`.

use std::fmt;

/// A libfaketime clock specification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClockShift {
    /// Shift the clock by this many seconds (`+365d`, `-30d`, `+90m`).
    Relative {
        /// The shift in seconds.
        seconds: i64,
    },
    /// Start the clock at this local date and time (`@2027-06-30 12:00:00`).
    Absolute {
        /// The start, in the child's local zone.
        at: jiff::civil::DateTime,
    },
    /// Start the clock at this instant (`@2028-02-29T22:59:58Z`): what a
    /// local start or a [`ClockShift::BeforeDst`] becomes once its zone is
    /// known (`perturb::calendar`), the only absolute form a clock
    /// mechanism is given.
    Instant {
        /// The start.
        at: jiff::Timestamp,
    },
    /// Start the clock this many seconds before the next change of the
    /// cell's zone's UTC offset (`@dst-5s`): turned into an
    /// [`ClockShift::Instant`] when the session is planned, so that the
    /// record and the repro line carry the instant.
    BeforeDst {
        /// Seconds before the change (at least 1).
        seconds: i64,
    },
}

/// The `faketime=@dst-…` prefix: before the next daylight-saving change.
pub const BEFORE_DST: &str = "dst-";

/// The libfaketime variable and value that make it read an
/// [`ClockShift::Instant`]'s `@<epoch seconds>` as epoch seconds. Without
/// it libfaketime reads `@YYYY-MM-DD HH:MM:SS` with `mktime` in the
/// child's `TZ` (and picks one of the two readings of a repeated hour).
pub const FAKETIME_FMT_EPOCH: (&str, &str) = ("FAKETIME_FMT", "%s");

/// The smallest relative shift accepted: the probe's tolerance must be able
/// to tell a shifted clock from an unshifted one.
pub const MIN_SHIFT_SECONDS: i64 = 60;

/// Parses a faketime value.
pub fn parse_clock_shift(text: &str) -> Result<ClockShift, String> {
    if text == "+0" {
        // The sham: the preload with no shift (the probe reads the real clock).
        return Ok(ClockShift::Relative { seconds: 0 });
    }
    if let Some(rest) = text.strip_prefix('@') {
        if let Some(before) = rest.strip_prefix(BEFORE_DST) {
            let seconds = parse_seconds(before).filter(|s| *s >= 1).ok_or_else(|| {
                format!("faketime `{text}`: write @dst-5s (a whole number of seconds, minutes or hours, s, m or h, before the next daylight-saving change of the cell's zone)")
            })?;
            return Ok(ClockShift::BeforeDst { seconds });
        }
        if rest.contains('T') {
            let at: jiff::Timestamp = rest.trim().parse().map_err(|e| {
                format!("faketime `{text}`: expected an instant @YYYY-MM-DDTHH:MM:SSZ ({e})")
            })?;
            return Ok(ClockShift::Instant { at });
        }
        let at: jiff::civil::DateTime = rest
            .trim()
            .parse()
            .map_err(|e| format!("faketime `{text}`: expected @YYYY-MM-DD HH:MM:SS ({e})"))?;
        return Ok(ClockShift::Absolute { at });
    }
    let sign = match text.chars().next() {
        Some('+') => 1,
        Some('-') => -1,
        _ => {
            return Err(format!(
                "faketime `{text}`: write a signed shift such as +365d, -30d, +90m, +2h, +1y, or an absolute start @2027-06-30 12:00:00 (local), @2027-06-30T10:00:00Z (UTC) or @dst-5s"
            ))
        }
    };
    let body = &text[1..];
    let (digits, unit) = body.split_at(
        body.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(body.len()),
    );
    let forms = "write a signed whole number and a unit (s, m, h, d or y), such as +365d, -30d, +90m, +2h, +1y or +600s, or an absolute start @2027-06-30 12:00:00";
    if digits.is_empty() {
        return Err(format!(
            "faketime `{text}`: no number after the sign; {forms}"
        ));
    }
    let n: i64 = digits
        .parse()
        .map_err(|_| format!("faketime `{text}`: `{digits}` is too large a number; {forms}"))?;
    let per = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "y" => 365 * 86_400,
        other => {
            return Err(format!(
                "faketime `{text}`: unknown unit `{other}` (use s, m, h, d or y)"
            ))
        }
    };
    let seconds = sign
        * n.checked_mul(per)
            .ok_or(format!("faketime `{text}` is too large"))?;
    if seconds.abs() < MIN_SHIFT_SECONDS {
        return Err(format!(
            "faketime `{text}`: shifts under {MIN_SHIFT_SECONDS}s cannot be told apart from the real clock by the probe"
        ));
    }
    Ok(ClockShift::Relative { seconds })
}

/// `5s`, `2m`, `1h` (or bare seconds) as seconds.
fn parse_seconds(text: &str) -> Option<i64> {
    let (digits, per) = match text.char_indices().last()? {
        (i, 's') => (&text[..i], 1),
        (i, 'm') => (&text[..i], 60),
        (i, 'h') => (&text[..i], 3600),
        _ => (text, 1),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<i64>().ok()?.checked_mul(per)
}

/// An instant as written in a `faketime=@…` value: `2028-02-29T22:59:58Z`.
pub fn instant_text(at: jiff::Timestamp) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

impl ClockShift {
    /// The value of libfaketime's `FAKETIME` variable. An
    /// [`ClockShift::Instant`] is `@<epoch seconds>`, read as such only
    /// with [`FAKETIME_FMT_EPOCH`] set beside it.
    pub fn faketime_value(&self) -> String {
        match self {
            ClockShift::Relative { seconds } => format!("{seconds:+}"),
            ClockShift::Absolute { at } => format!("@{}", at.strftime("%Y-%m-%d %H:%M:%S")),
            ClockShift::Instant { at } => format!("@{}", at.as_second()),
            ClockShift::BeforeDst { seconds } => format!("@{BEFORE_DST}{seconds}s"),
        }
    }
}

/// How many busy threads a `cpu-stress` cell runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StressAmount {
    /// A factor of the online CPUs (`2x`).
    Factor(f64),
    /// A fixed number of threads (`3`).
    Threads(u32),
}

impl StressAmount {
    /// Threads for a host with `cpus` online CPUs (a factor gives at least 1).
    pub fn threads(self, cpus: usize) -> usize {
        match self {
            StressAmount::Factor(f) => ((cpus as f64) * f).ceil().max(1.0) as usize,
            StressAmount::Threads(n) => n as usize,
        }
    }
}

impl fmt::Display for StressAmount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StressAmount::Factor(x) => write!(f, "{x}x"),
            StressAmount::Threads(n) => write!(f, "{n}"),
        }
    }
}

/// Parses `2x`, `0.5x` or `3`.
pub fn parse_stress(text: &str) -> Result<StressAmount, String> {
    let bad = || {
        format!("cpu-stress `{text}`: write a factor of the online CPUs (2x) or a thread count (3)")
    };
    if let Some(f) = text.strip_suffix('x') {
        let f: f64 = f.parse().map_err(|_| bad())?;
        if !(f > 0.0 && f <= 64.0) {
            return Err(bad());
        }
        Ok(StressAmount::Factor(f))
    } else {
        let n: u32 = text.parse().map_err(|_| bad())?;
        // 0 is the sham: the run is scheduled alone, with no busy thread.
        if n > 1024 {
            return Err(bad());
        }
        Ok(StressAmount::Threads(n))
    }
}

/// Parses a `workers` amount: the same grammar as `cpu-stress` (`2x` is a
/// factor of the recipe's default on this host, `8` a count).
pub fn parse_workers(text: &str) -> Result<StressAmount, String> {
    parse_stress(text).map_err(|_| {
        format!("workers `{text}`: write a factor of the runner's default (2x) or a count (8)")
    })
}

/// Parses a GOMAXPROCS list, `1,2,4` (`race=cpu:…`): each at least 1.
pub fn parse_cpu_list(text: &str) -> Result<Vec<u32>, String> {
    let bad =
        || format!("race cpu `{text}`: write GOMAXPROCS values of at least 1, e.g. cpu:1,2,4");
    let list = text
        .split(',')
        .map(|v| {
            v.trim()
                .parse::<u32>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(bad)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(list)
}

/// The resources `rlimit` can set, with the `prlimit` option for each.
pub const RLIMITS: &[(&str, &str)] = &[
    ("nofile", "open files"),
    ("nproc", "processes of this user"),
    ("as", "address space, bytes"),
    ("data", "data segment, bytes"),
    ("stack", "stack, bytes"),
    ("fsize", "file size, bytes"),
    ("core", "core file size, bytes"),
    ("memlock", "locked memory, bytes"),
    ("cpu", "CPU time, seconds"),
];

/// Parses `nofile:64`, `as:512M`; returns (resource, value).
pub fn parse_rlimit(text: &str) -> Result<(String, u64), String> {
    let names: Vec<&str> = RLIMITS.iter().map(|(n, _)| *n).collect();
    let (res, value) = text.split_once(':').ok_or_else(|| {
        format!(
            "rlimit `{text}`: write RESOURCE:VALUE, e.g. nofile:64 ({})",
            names.join(", ")
        )
    })?;
    if !names.contains(&res) {
        return Err(format!(
            "rlimit `{text}`: unknown resource `{res}` (one of {})",
            names.join(", ")
        ));
    }
    let (digits, mult) = match value.char_indices().last() {
        Some((i, 'K' | 'k')) => (&value[..i], 1u64 << 10),
        Some((i, 'M')) => (&value[..i], 1 << 20),
        Some((i, 'G')) => (&value[..i], 1 << 30),
        _ => (value, 1),
    };
    let n: u64 = digits.parse().map_err(|_| {
        format!("rlimit `{text}`: `{value}` is not a number (suffixes K, M, G allowed)")
    })?;
    let v = n
        .checked_mul(mult)
        .ok_or(format!("rlimit `{text}` is too large"))?;
    Ok((res.to_string(), v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_and_absolute_shifts() {
        assert_eq!(
            parse_clock_shift("+365d").unwrap(),
            ClockShift::Relative {
                seconds: 365 * 86_400
            }
        );
        assert_eq!(
            parse_clock_shift("-30d").unwrap(),
            ClockShift::Relative {
                seconds: -30 * 86_400
            }
        );
        assert_eq!(parse_clock_shift("+90m").unwrap().faketime_value(), "+5400");
        assert_eq!(
            parse_clock_shift("+1y").unwrap().faketime_value(),
            "+31536000"
        );
        let abs = parse_clock_shift("@2027-06-30 12:00:00").unwrap();
        assert_eq!(abs.faketime_value(), "@2027-06-30 12:00:00");
        let instant = parse_clock_shift("@2028-02-29T22:59:58Z").unwrap();
        assert_eq!(instant.faketime_value(), "@1835477998");
        let ClockShift::Instant { at } = instant else {
            panic!("{instant:?}")
        };
        assert_eq!(instant_text(at), "2028-02-29T22:59:58Z");
        assert_eq!(
            parse_clock_shift("@dst-5s").unwrap(),
            ClockShift::BeforeDst { seconds: 5 }
        );
        assert_eq!(
            parse_clock_shift("@dst-2m").unwrap(),
            ClockShift::BeforeDst { seconds: 120 }
        );
        for bad in [
            "365d",
            "+d",
            "+5w",
            "+30s",
            "@tomorrow",
            "",
            "@dst",
            "@dst-",
            "@dst-0s",
            "@dst-5w",
            "@dst--5s",
            "@2028-02-30T00:00:00Z",
        ] {
            assert!(parse_clock_shift(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_shift_without_a_number_says_what_is_missing_and_the_forms() {
        let err = parse_clock_shift("+abc").unwrap_err();
        assert!(!err.contains("``"), "{err}");
        assert!(err.contains("no number after the sign"), "{err}");
        assert!(
            err.contains("+365d") && err.contains("@2027-06-30"),
            "{err}"
        );
        let err = parse_clock_shift("+99999999999999999999d").unwrap_err();
        assert!(err.contains("too large"), "{err}");
    }

    #[test]
    fn stress_amounts() {
        assert_eq!(parse_stress("2x").unwrap().threads(2), 4);
        assert_eq!(parse_stress("0.5x").unwrap().threads(3), 2);
        assert_eq!(parse_stress("3").unwrap().threads(64), 3);
        // The sham: no busy thread.
        assert_eq!(parse_stress("0").unwrap().threads(8), 0);
        for bad in ["0x", "x", "-1x", "lots", "1025"] {
            assert!(parse_stress(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rlimits() {
        assert_eq!(parse_rlimit("nofile:64").unwrap(), ("nofile".into(), 64));
        assert_eq!(parse_rlimit("as:512M").unwrap(), ("as".into(), 512 << 20));
        assert!(parse_rlimit("files:64")
            .unwrap_err()
            .contains("unknown resource"));
        assert!(parse_rlimit("nofile").is_err());
        assert!(parse_rlimit("nofile:many").is_err());
    }
}
