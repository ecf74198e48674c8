//! Perturbation specs: the typed [`Kind`] enum shared by the TOML catalog and
//! the command line, the `kind=value` grammar, and the `a+b` cell grammar.
//!
//! Pure: parsing and display only. Whether a zone or locale exists on this
//! host is checked in `perturb`, not here.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::values;

/// One perturbation of a built-in kind with its parameters. In TOML it is an
/// internally tagged table, e.g. `{ kind = "tz", zone = "Pacific/Kiritimati" }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Kind {
    /// `TZ=<zone>`; the zone must exist in the zoneinfo database.
    Tz {
        /// IANA zone name, e.g. `Asia/Kathmandu`.
        zone: String,
    },
    /// `LC_ALL` and `LANG`; the locale must be installed.
    Locale {
        /// Locale name, e.g. `de_DE.UTF-8`.
        locale: String,
    },
    /// Set and unset environment variables.
    Env {
        /// Variables to set.
        #[serde(default)]
        set: BTreeMap<String, String>,
        /// Variables to remove.
        #[serde(default)]
        unset: Vec<String>,
    },
    /// Shift the wall clock with libfaketime (`+365d`, `@2027-06-30 12:00:00`).
    Faketime {
        /// The shift or absolute start, as in `faketime=VALUE`.
        clock: String,
    },
    /// A new network namespace with only loopback, up.
    Netns,
    /// Harness-owned busy threads for each run's duration.
    CpuStress {
        /// `2x` (factor of the online CPUs) or `3` (threads).
        amount: String,
    },
    /// Pin the child to this many CPUs.
    CpuPin {
        /// Number of CPUs.
        cpus: u32,
    },
    /// The runner's own shuffle with a per-run seed (needs a recipe).
    Shuffle,
    /// Systematic orders covering every adjacent pair (needs a recipe that
    /// runs a given order; else the seeded shuffle, said so).
    Orders,
    /// The runner's workers at a factor of its default, or a count (needs a recipe).
    Workers {
        /// `2x` (factor of the recipe's default on this host) or `8`.
        amount: String,
    },
    /// The runner's race detector (`go test -race`, a ThreadSanitizer
    /// build), optionally at several GOMAXPROCS values (needs a recipe).
    Race {
        /// GOMAXPROCS values to run each test at (`go test -cpu 1,2,4`);
        /// empty: the runner's default.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        cpu: Vec<u32>,
    },
    /// A resource limit on the child (soft and hard).
    Rlimit {
        /// `nofile`, `nproc`, `as`, …
        resource: String,
        /// The limit.
        value: u64,
    },
}

/// What a declared perturbation applies: one kind, or several together (a
/// composition, such as a zone and a clock start: the calendar edges). In
/// TOML, `perturb = { kind = "tz", … }` or
/// `perturb = [{ kind = "tz", … }, { kind = "faketime", … }]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Composed(pub Vec<Kind>);

impl Composed {
    /// The kinds' names, joined by `+`.
    pub fn name(&self) -> String {
        let names: Vec<&str> = self.0.iter().map(Kind::name).collect();
        names.join("+")
    }

    /// Checks each kind's values and that they compose
    /// (`check_composition`).
    pub fn validate(&self) -> Result<(), String> {
        if self.0.is_empty() {
            return Err("an empty list: give at least one { kind = … }".into());
        }
        self.0.iter().try_for_each(Kind::validate)?;
        check_composition(&self.0)
    }
}

impl fmt::Display for Composed {
    /// The cell spec: each kind's `kind=value`, joined by `+`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(Kind::to_string).collect();
        write!(f, "{}", parts.join("+"))
    }
}

impl Serialize for Composed {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0.as_slice() {
            [one] => one.serialize(s),
            many => many.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Composed {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct OneOrMany;
        impl<'de> serde::de::Visitor<'de> for OneOrMany {
            type Value = Composed;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a table { kind = … } or a list of them")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Composed, A::Error> {
                let one = Kind::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(Composed(vec![one]))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Composed, A::Error> {
                Vec::<Kind>::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
                    .map(Composed)
            }
        }
        d.deserialize_any(OneOrMany)
    }
}

/// Checks that the perturbations of one cell compose: a clock start
/// before the next daylight-saving change (`faketime=@dst-5s`) needs the
/// zone whose change it is (`tz=ZONE`) in the same cell.
pub fn check_composition(kinds: &[Kind]) -> Result<(), String> {
    let has_zone = kinds.iter().any(|k| matches!(k, Kind::Tz { .. }));
    for kind in kinds {
        if let Kind::Faketime { clock } = kind {
            let before_dst = matches!(
                values::parse_clock_shift(clock),
                Ok(values::ClockShift::BeforeDst { .. })
            );
            if before_dst && !has_zone {
                return Err(format!(
                    "`{kind}` needs tz=ZONE in the same cell: the daylight-saving change is the zone's (e.g. tz=America/New_York+{kind})"
                ));
            }
        }
    }
    Ok(())
}

/// A kind this build knows: its name, the syntax of its value, and whether
/// it may be written bare (a documented default value).
#[derive(Debug, Clone, Copy)]
pub struct KindInfo {
    /// Name before `=`.
    pub name: &'static str,
    /// Syntax help.
    pub syntax: &'static str,
    /// Whether `-p NAME` alone is valid.
    pub bare: bool,
}

/// The kinds this build knows.
pub const KINDS: &[KindInfo] = &[
    KindInfo {
        name: "tz",
        syntax: "tz=ZONE (an IANA zone, e.g. tz=Asia/Kathmandu)",
        bare: false,
    },
    KindInfo {
        name: "locale",
        syntax: "locale=NAME (an installed locale, e.g. locale=C.UTF-8)",
        bare: false,
    },
    KindInfo {
        name: "env",
        syntax: "env=NAME=VALUE to set, env=-NAME to unset",
        bare: false,
    },
    KindInfo {
        name: "faketime",
        syntax: "faketime=+365d | -30d | +90m | +2h | +1y | @YYYY-MM-DD HH:MM:SS (local to the cell's zone) | @YYYY-MM-DDTHH:MM:SSZ (UTC) | @dst-5s (before the next daylight-saving change of the cell's tz=)",
        bare: false,
    },
    KindInfo {
        name: "netns",
        syntax: "netns (no network: a new network namespace with loopback only)",
        bare: true,
    },
    KindInfo {
        name: "cpu-stress",
        syntax: "cpu-stress[=2x|=N] (busy threads: a factor of the online CPUs, or N; default 2x)",
        bare: true,
    },
    KindInfo {
        name: "cpu-pin",
        syntax: "cpu-pin[=K] (the child may run on K CPUs only; default 1)",
        bare: true,
    },
    KindInfo {
        name: "shuffle",
        syntax: "shuffle (the runner's own shuffle, a recorded seed per run; needs a recipe)",
        bare: true,
    },
    KindInfo {
        name: "orders",
        syntax: "orders (systematic test orders: every ordered pair of tests in a module, and of modules, adjacent at least once; needs a recipe that runs a given order, else the seeded shuffle)",
        bare: true,
    },
    KindInfo {
        name: "workers",
        syntax: "workers[=2x|=N] (the runner's workers: a factor of its default, or N; default 2x)",
        bare: true,
    },
    KindInfo {
        name: "race",
        syntax: "race[=cpu:1,2,4] (the runner's race detector, proven live in each run's test binary; cpu: GOMAXPROCS values each test runs at; needs a recipe)",
        bare: true,
    },
    KindInfo {
        name: "rlimit",
        syntax: "rlimit=RESOURCE:VALUE (e.g. nofile:64, nproc:200, as:512M)",
        bare: false,
    },
];

impl Kind {
    /// The kind's name as written before `=`.
    pub fn name(&self) -> &'static str {
        match self {
            Kind::Tz { .. } => "tz",
            Kind::Locale { .. } => "locale",
            Kind::Env { .. } => "env",
            Kind::Faketime { .. } => "faketime",
            Kind::Netns => "netns",
            Kind::CpuStress { .. } => "cpu-stress",
            Kind::CpuPin { .. } => "cpu-pin",
            Kind::Rlimit { .. } => "rlimit",
            Kind::Shuffle => "shuffle",
            Kind::Orders => "orders",
            Kind::Workers { .. } => "workers",
            Kind::Race { .. } => "race",
        }
    }

    /// Checks the values of a kind read from TOML (the command line is
    /// checked while parsing).
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Kind::Faketime { clock } => values::parse_clock_shift(clock).map(drop),
            Kind::CpuStress { amount } => values::parse_stress(amount).map(drop),
            Kind::Workers { amount } => values::parse_workers(amount).map(drop),
            Kind::CpuPin { cpus: 0 } => Err("cpu-pin needs at least 1 CPU".into()),
            Kind::Race { cpu } if cpu.contains(&0) => {
                Err("race cpu: GOMAXPROCS values are at least 1".into())
            }
            Kind::Rlimit { resource, value } => {
                values::parse_rlimit(&format!("{resource}:{value}")).map(drop)
            }
            Kind::Env { set, unset } => set
                .keys()
                .chain(unset)
                .try_for_each(|k| check_var_name(k, &format!("env {k}"))),
            // Nothing more to check here: a zone or a locale is checked on
            // the host it applies to (its probe), the rest carry no value
            // or one checked above. Every kind is named: a new kind is led
            // here by the compiler.
            Kind::Tz { .. }
            | Kind::Locale { .. }
            | Kind::Netns
            | Kind::Shuffle
            | Kind::Orders
            | Kind::CpuPin { .. }
            | Kind::Race { .. } => Ok(()),
        }
    }

    /// The `kind=value` form as recorded: like `Display`, but values of
    /// credential-like variables are replaced by `<redacted>`.
    pub fn recorded(&self, redaction: &crate::redact::Redaction) -> String {
        let Kind::Env { set, unset } = self else {
            return self.to_string();
        };
        let mut parts: Vec<String> = set
            .iter()
            .map(|(k, v)| {
                let v = if redaction.is_secret(k) {
                    crate::redact::REDACTED
                } else {
                    v
                };
                format!("env={k}={v}")
            })
            .collect();
        parts.extend(unset.iter().map(|k| format!("env=-{k}")));
        parts.join("+")
    }

    /// Parses `kind=value` (the ad-hoc form of `-p`).
    /// Returns `Ok(None)` when `text` does not start with a known kind.
    pub fn parse(text: &str) -> Result<Option<Kind>, String> {
        let (kind, value) = match text.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (text, None),
        };
        let need = |what: &str| -> Result<String, String> {
            match value {
                Some(v) if !v.is_empty() => Ok(v.to_string()),
                _ => Err(format!("`{text}` needs a value: {what}")),
            }
        };
        let parsed = match kind {
            "tz" => Kind::Tz {
                zone: need("tz=ZONE, e.g. tz=Pacific/Kiritimati")?,
            },
            "locale" => Kind::Locale {
                locale: need("locale=NAME, e.g. locale=C.UTF-8")?,
            },
            "env" => {
                let v = need("env=NAME=VALUE or env=-NAME")?;
                if let Some(name) = v.strip_prefix('-') {
                    check_var_name(name, text)?;
                    Kind::Env {
                        set: BTreeMap::new(),
                        unset: vec![name.to_string()],
                    }
                } else {
                    let (name, val) = v
                        .split_once('=')
                        .ok_or_else(|| format!("`{text}` needs env=NAME=VALUE or env=-NAME"))?;
                    check_var_name(name, text)?;
                    Kind::Env {
                        set: BTreeMap::from([(name.to_string(), val.to_string())]),
                        unset: Vec::new(),
                    }
                }
            }
            "faketime" => {
                let v = need("faketime=+365d or faketime=@2027-06-30 12:00:00")?;
                values::parse_clock_shift(&v)?;
                Kind::Faketime { clock: v }
            }
            "netns" => match value {
                None | Some("off") => Kind::Netns,
                Some(other) => {
                    return Err(format!(
                        "`netns={other}`: write `netns` (or `netns=off`) for a run without network"
                    ))
                }
            },
            "cpu-stress" => {
                let v = value.unwrap_or("2x");
                let amount = values::parse_stress(v)?;
                Kind::CpuStress {
                    amount: amount.to_string(),
                }
            }
            "cpu-pin" => {
                let cpus = match value {
                    None => 1,
                    Some(v) => v
                        .parse::<u32>()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| format!("`{text}`: write cpu-pin=K with K >= 1"))?,
                };
                Kind::CpuPin { cpus }
            }
            "shuffle" => match value {
                None | Some("on") => Kind::Shuffle,
                Some(other) => {
                    return Err(format!(
                        "`shuffle={other}`: write `shuffle`; each run gets its own recorded seed"
                    ))
                }
            },
            "orders" => match value {
                None | Some("on") => Kind::Orders,
                Some(other) => {
                    return Err(format!(
                        "`orders={other}`: write `orders`; the orders are built from the collected tests"
                    ))
                }
            },
            "workers" => {
                let amount = values::parse_workers(value.unwrap_or("2x"))?;
                Kind::Workers {
                    amount: amount.to_string(),
                }
            }
            "race" => match value {
                None | Some("on") => Kind::Race { cpu: Vec::new() },
                Some(v) => Kind::Race {
                    cpu: values::parse_cpu_list(v.strip_prefix("cpu:").ok_or_else(|| {
                        format!("`{text}`: write `race`, or `race=cpu:1,2,4` for GOMAXPROCS values")
                    })?)?,
                },
            },
            "rlimit" => {
                let (resource, value) = values::parse_rlimit(&need("rlimit=nofile:64")?)?;
                Kind::Rlimit { resource, value }
            }
            _ => return Ok(None),
        };
        Ok(Some(parsed))
    }
}

fn check_var_name(name: &str, text: &str) -> Result<(), String> {
    if name.starts_with("FLAKELAB") {
        return Err(format!(
            "`{name}` in `{text}` is reserved: flakelab sets FLAKELAB* identically in every cell"
        ));
    }
    let ok = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{name}` in `{text}` is not a valid environment variable name"
        ))
    }
}

impl fmt::Display for Kind {
    /// The canonical `kind=value` form, which [`Kind::parse`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::Tz { zone } => write!(f, "tz={zone}"),
            Kind::Locale { locale } => write!(f, "locale={locale}"),
            Kind::Env { set, unset } => {
                let mut parts: Vec<String> =
                    set.iter().map(|(k, v)| format!("env={k}={v}")).collect();
                parts.extend(unset.iter().map(|k| format!("env=-{k}")));
                write!(f, "{}", parts.join("+"))
            }
            Kind::Faketime { clock } => write!(f, "faketime={clock}"),
            Kind::Netns => write!(f, "netns"),
            Kind::CpuStress { amount } => write!(f, "cpu-stress={amount}"),
            Kind::CpuPin { cpus } => write!(f, "cpu-pin={cpus}"),
            Kind::Rlimit { resource, value } => write!(f, "rlimit={resource}:{value}"),
            Kind::Shuffle => write!(f, "shuffle"),
            Kind::Orders => write!(f, "orders"),
            Kind::Workers { amount } => write!(f, "workers={amount}"),
            Kind::Race { cpu } if cpu.is_empty() => write!(f, "race"),
            Kind::Race { cpu } => {
                let list: Vec<String> = cpu.iter().map(u32::to_string).collect();
                write!(f, "race=cpu:{}", list.join(","))
            }
        }
    }
}

/// Splits a cell spec at the `+` signs that start a new perturbation: a `+`
/// followed by a known kind (`tz=…`, `netns`) or a declared name. A `+`
/// anywhere else belongs to the value (`faketime=+365d`).
pub fn split_cell(spec: &str, is_name: impl Fn(&str) -> bool) -> Vec<&str> {
    let starts_item = |rest: &str| -> bool {
        let head_end = rest.find(['+', '=']).unwrap_or(rest.len());
        let head = &rest[..head_end];
        let has_value = rest[head_end..].starts_with('=');
        let is_kind = KINDS
            .iter()
            .any(|k| k.name == head && (has_value || k.bare));
        let name_end = rest.find('+').unwrap_or(rest.len());
        is_kind || is_name(&rest[..name_end])
    };
    let mut parts = Vec::new();
    let mut start = 0;
    for (i, _) in spec.match_indices('+') {
        if i > start && starts_item(&spec[i + 1..]) {
            parts.push(&spec[start..i]);
            start = i + 1;
        }
    }
    parts.push(&spec[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_displays_each_kind() {
        for text in [
            "tz=Asia/Kathmandu",
            "locale=C.UTF-8",
            "env=A=1",
            "env=-HOME",
            "env=X=a=b",
            "race",
            "race=cpu:1,2,4",
        ] {
            let kind = Kind::parse(text).unwrap().unwrap();
            assert_eq!(kind.to_string(), text);
        }
    }

    #[test]
    fn rejects_missing_values_and_bad_names() {
        assert!(Kind::parse("tz").unwrap_err().contains("needs a value"));
        assert!(Kind::parse("tz=").is_err());
        assert!(Kind::parse("env=NOVALUE").is_err());
        assert!(Kind::parse("env=1X=2").unwrap_err().contains("not a valid"));
        assert!(Kind::parse("env=FLAKELAB_RUN_ID=x")
            .unwrap_err()
            .contains("reserved"));
        assert_eq!(Kind::parse("warp=9").unwrap(), None);
        assert!(Kind::parse("race=1,2")
            .unwrap_err()
            .contains("race=cpu:1,2,4"));
        assert!(Kind::parse("race=cpu:1,0").is_err());
        assert!(Kind::parse("race=cpu:").is_err());
        assert_eq!(
            Kind::parse("race=on").unwrap().unwrap(),
            Kind::Race { cpu: Vec::new() }
        );
    }

    #[test]
    fn splits_only_where_a_perturbation_starts() {
        let names = |n: &str| n == "tz-east" || n == "netns";
        assert_eq!(
            split_cell("tz=Asia/Kathmandu", names),
            ["tz=Asia/Kathmandu"]
        );
        assert_eq!(
            split_cell("tz=Asia/Kathmandu+env=A=1+tz-east", names),
            ["tz=Asia/Kathmandu", "env=A=1", "tz-east"]
        );
        assert_eq!(split_cell("env=X=+1+netns", names), ["env=X=+1", "netns"]);
        assert_eq!(split_cell("env=X=a+b", names), ["env=X=a+b"]);
        assert_eq!(split_cell("env=X=+tz", names), ["env=X=+tz"]);
        assert_eq!(
            split_cell("tz=Asia/Kathmandu+faketime=+1y+netns", names),
            ["tz=Asia/Kathmandu", "faketime=+1y", "netns"]
        );
        assert_eq!(
            split_cell("faketime=@2027-06-30 12:00:00+cpu-stress", names),
            ["faketime=@2027-06-30 12:00:00", "cpu-stress"]
        );
    }

    #[test]
    fn toml_form_is_strict() {
        #[derive(Deserialize)]
        struct W {
            #[expect(dead_code, reason = "only deserialisation is under test")]
            p: Kind,
        }
        assert!(toml::from_str::<W>("p = { kind = \"tz\", zone = \"UTC\" }").is_ok());
        let err = toml::from_str::<W>("p = { kind = \"tz\", zon = \"UTC\" }")
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("zon"), "{err}");
        assert!(toml::from_str::<W>("p = { kind = \"warp\" }").is_err());
    }
}
