//! The quarantine ledger (`flakelab-quarantine.toml`, committed beside
//! the code): each quarantined test with its owner, ticket, the date it was
//! added, its expiry and the evidence that put it there, and optionally the
//! date of its fix. Read strictly (a hand edit that breaks it is an error
//! naming the entry), and judged here: which entries have expired, and
//! which may leave — those whose failure rate since the fix is bounded
//! below a target at the stated confidence by the exact Clopper–Pearson
//! upper bound (299 clean runs for 1% at 95%), never "N passes in a row".
//!
//! Pure: text and counts in, verdicts out.

use jiff::civil::Date;
use serde::{Deserialize, Serialize};

/// The ledger's default file name, at the project's root.
pub const LEDGER_FILE: &str = "flakelab-quarantine.toml";

/// The whole ledger.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ledger {
    /// The entries, in the order added.
    #[serde(default, rename = "test")]
    pub tests: Vec<LedgerEntry>,
}

/// One quarantined test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerEntry {
    /// The test id, as the reports give it.
    pub id: String,
    /// Who answers for it.
    pub owner: String,
    /// The ticket that tracks the fix.
    pub ticket: String,
    /// When it was quarantined (YYYY-MM-DD).
    pub added: String,
    /// When the quarantine ends (YYYY-MM-DD): `check` fails after it.
    pub expires: String,
    /// What put it there, in a sentence.
    pub evidence: String,
    /// When it was fixed (YYYY-MM-DD): runs from this day on count toward
    /// its release (from `added` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed: Option<String>,
}

fn date(entry: &str, key: &str, value: &str) -> Result<Date, String> {
    value
        .parse::<Date>()
        .map_err(|e| format!("test `{entry}`: {key} = \"{value}\" is not a date (YYYY-MM-DD): {e}"))
}

impl LedgerEntry {
    /// The day from which runs count toward its release.
    pub fn since(&self) -> &str {
        self.fixed.as_deref().unwrap_or(&self.added)
    }

    fn check(&self) -> Result<(), String> {
        for (key, value) in [
            ("id", &self.id),
            ("owner", &self.owner),
            ("ticket", &self.ticket),
        ] {
            if value.trim().is_empty() {
                return Err(format!("test `{}`: {key} is empty", self.id));
            }
        }
        let added = date(&self.id, "added", &self.added)?;
        let expires = date(&self.id, "expires", &self.expires)?;
        if expires < added {
            return Err(format!(
                "test `{}`: expires {} is before added {}",
                self.id, self.expires, self.added
            ));
        }
        if let Some(fixed) = &self.fixed {
            date(&self.id, "fixed", fixed)?;
        }
        Ok(())
    }

    /// Whether it has expired on `today` (the day after `expires`).
    pub fn expired(&self, today: Date) -> bool {
        self.expires.parse::<Date>().is_ok_and(|e| today > e)
    }
}

/// Parses and checks a ledger's text: every key known, dates real, owner
/// and ticket given, each test once.
pub fn parse(text: &str) -> Result<Ledger, String> {
    let ledger: Ledger = toml::from_str(text).map_err(|e| e.to_string())?;
    let mut seen = std::collections::HashSet::new();
    for t in &ledger.tests {
        t.check()?;
        if !seen.insert(t.id.as_str()) {
            return Err(format!("test `{}` is listed twice", t.id));
        }
    }
    Ok(ledger)
}

/// The ledger's text.
pub fn render(ledger: &Ledger) -> String {
    format!(
        "# The quarantine ledger: `flakelab quarantine --add` writes it, `flakelab check`\n\
         # fails once an entry has expired, `flakelab quarantine --release` says which may leave.\n{}",
        toml::to_string(ledger).unwrap_or_default()
    )
}

/// What the runs since an entry's fix say about releasing it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Release {
    /// The test.
    pub id: String,
    /// Its owner.
    pub owner: String,
    /// Runs since the fix in which it passed.
    pub clean: u64,
    /// Runs since the fix in which it failed or errored.
    pub failed: u64,
    /// The upper bound of its failure rate at the confidence.
    pub bound: f64,
    /// Whether the bound is below the target.
    pub releasable: bool,
}

/// The release verdict for `entry` after `clean` passing and `failed`
/// failing runs since its fix: releasable when the exact upper bound of the
/// failure rate at `confidence` is below `target`.
pub fn release(
    entry: &LedgerEntry,
    clean: u64,
    failed: u64,
    target: f64,
    confidence: f64,
) -> Release {
    let bound = crate::stats::proportion(failed, clean + failed, confidence).high;
    Release {
        id: entry.id.clone(),
        owner: entry.owner.clone(),
        clean,
        failed,
        bound,
        releasable: bound < target,
    }
}

/// The clean runs with no failure that bound the rate below `target` at
/// `confidence`: `⌈ln(1 − c) / ln(1 − target)⌉`.
pub fn clean_runs_needed(target: f64, confidence: f64) -> u64 {
    crate::plan::runs_needed(target, confidence)
}

/// Today, in UTC.
pub(crate) fn today() -> Date {
    jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
}

/// `YYYY-MM-DD`, or `N` days from `today` (`30d`).
pub(crate) fn expiry(text: &str, today: Date) -> crate::error::Result<Date> {
    let days = text.strip_suffix('d').and_then(|n| n.parse::<i32>().ok());
    let date = match days {
        Some(n) if n > 0 => today.checked_add(jiff::Span::new().days(n)).ok(),
        Some(_) => None,
        None => text.parse::<Date>().ok(),
    };
    date.filter(|d| *d >= today).ok_or_else(|| {
        crate::error::Error::usage(
            format!("--expires {text} is not a day from today on (YYYY-MM-DD, or days: 30d)"),
            "e.g. --expires 30d",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> LedgerEntry {
        LedgerEntry {
            id: "tests/test_a.py::test_x".into(),
            owner: "alice".into(),
            ticket: "SHOP-12".into(),
            added: "2026-12-01".into(),
            expires: "2027-01-01".into(),
            evidence: "passed and failed on commit abc".into(),
            fixed: None,
        }
    }

    #[test]
    fn a_ledger_round_trips_and_bad_entries_are_named() {
        let ledger = Ledger {
            tests: vec![entry()],
        };
        assert_eq!(parse(&render(&ledger)), Ok(ledger.clone()));
        let bad = |f: &dyn Fn(&mut LedgerEntry)| {
            let mut e = entry();
            f(&mut e);
            parse(&render(&Ledger { tests: vec![e] })).unwrap_err()
        };
        assert!(bad(&|e| e.owner = " ".into()).contains("owner is empty"));
        assert!(bad(&|e| e.expires = "2027-02-30".into()).contains("expires = \"2027-02-30\""));
        assert!(bad(&|e| e.expires = "2026-11-30".into()).contains("is before added"));
        assert!(bad(&|e| e.fixed = Some("soon".into())).contains("fixed"));
        let twice = Ledger {
            tests: vec![entry(), entry()],
        };
        assert!(parse(&render(&twice)).unwrap_err().contains("listed twice"));
        assert!(parse("[[test]]\nid = \"x\"\nowner = \"a\"\nowners = 1\n").is_err());
    }

    #[test]
    fn an_entry_expires_the_day_after_its_expiry() {
        let e = entry();
        assert!(!e.expired("2027-01-01".parse().unwrap()));
        assert!(e.expired("2027-01-02".parse().unwrap()));
    }

    #[test]
    fn release_needs_299_clean_runs_for_1_percent_at_95() {
        let e = entry();
        assert_eq!(clean_runs_needed(0.01, 0.95), 299);
        let at = |clean, failed| release(&e, clean, failed, 0.01, 0.95);
        assert!(!at(298, 0).releasable, "{:?}", at(298, 0));
        assert!(at(299, 0).releasable, "{:?}", at(299, 0));
        // A failure since the fix needs far more clean runs, never "N in a row".
        assert!(!at(299, 1).releasable);
        assert!(!at(0, 0).releasable);
    }
}
