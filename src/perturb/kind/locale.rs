//! `locale=NAME`: `LC_ALL` and `LANG` set to an installed locale (an
//! unknown one silently means `C`, so it is refused). Probe: `locale`
//! accepts and reports it. No sham: the variable is the condition.
//! Classes: locale.

use super::{Expect, Preparing, Reading, Role, Seen, Sham};
use crate::catalog::class::FlakeClass;
use crate::error::Result;
use crate::perturb::env;

pub(super) const NEEDS_RECIPE: bool = false;
pub(super) const ROLE: Role = Role::Other;

pub(super) fn prepare(locale: &str, label: String, p: &mut Preparing) -> Result<()> {
    env::check_locale(locale)?;
    p.out.claim(&label, "LC_ALL", Some(locale))?;
    p.out.claim(&label, "LANG", Some(locale))?;
    p.out.probes.push(super::Probe {
        perturbation: label,
        argv: vec!["locale".into()],
        expect: Expect::Locale {
            locale: locale.to_string(),
        },
    });
    Ok(())
}

pub(super) fn judge(what: &str, locale: &str, output: &str) -> Result<String, String> {
    if let Some(line) = output.lines().find(|l| l.contains("Cannot set")) {
        return Err(format!("{what}: the C library refused it: {}", line.trim()));
    }
    let reported = output
        .lines()
        .find_map(|l| l.strip_prefix("LC_ALL="))
        .map(|v| v.trim_matches('"'));
    match reported {
        Some(v) if v == locale => Ok(format!("{what}: child's C library accepts LC_ALL={v}")),
        other => Err(format!(
            "{what}: child reports LC_ALL={}, expected {locale}",
            other.unwrap_or("(nothing)")
        )),
    }
}

pub(super) fn sham() -> Option<Sham> {
    None
}

pub(super) fn examines() -> Vec<FlakeClass> {
    vec![FlakeClass::Locale]
}

pub(super) fn read(locale: &str, seen: &Seen) -> Vec<Reading> {
    vec![Reading::Claim(
        FlakeClass::Locale,
        format!(
            "only the locale ({locale}) changed in this cell.{}",
            seen.combined
        ),
    )]
}
