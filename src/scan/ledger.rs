//! The ledger of accepted sites: each entry names a file (normalised to
//! `/`), the enclosing symbol, the class and the bucket (the sleep bucket,
//! or the construct's kind) and says why it is accepted. Keys carry no line
//! number, so an edit above a site does not churn the ledger. Checked both
//! ways: a finding with no entry is new, an entry with no finding is stale.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

pub use crate::record::schema::LEDGER_SCHEMA;

/// One accepted site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The file, relative to the scanned root (`\` is read as `/`).
    pub file: String,
    /// The enclosing symbol (`test_x`, `TestCase::test_x`, `<module>`).
    pub symbol: String,
    /// The class (`sleep`, `clock`, …).
    pub class: String,
    /// The sleep bucket, or the construct's kind for other classes.
    pub bucket: String,
    /// Why the site is accepted.
    pub reason: String,
}

/// The ledger file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ledger {
    /// Always [`LEDGER_SCHEMA`].
    pub schema: String,
    /// The accepted sites.
    pub entries: Vec<Entry>,
}

/// A ledger key: (file, symbol, class, bucket).
pub type Key = (String, String, String, String);

/// A path spelled with `/` whatever separator wrote it, without `./`.
pub fn normalise_key(path: &str) -> String {
    let p = path.replace('\\', "/");
    let mut parts: Vec<&str> = p
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    if parts.is_empty() {
        parts.push("");
    }
    parts.join("/")
}

impl Entry {
    /// The entry's key.
    pub fn key(&self) -> Key {
        (
            normalise_key(&self.file),
            self.symbol.clone(),
            self.class.clone(),
            self.bucket.clone(),
        )
    }
}

/// Parses a ledger, refusing an entry without a reason or a bucket.
pub fn parse(text: &str) -> Result<Ledger, String> {
    let ledger: Ledger =
        serde_json::from_str(text).map_err(|e| format!("not a scan ledger: {e}"))?;
    if ledger.schema != LEDGER_SCHEMA {
        return Err(format!(
            "schema is {:?}, expected {LEDGER_SCHEMA:?}",
            ledger.schema
        ));
    }
    for (i, e) in ledger.entries.iter().enumerate() {
        if e.reason.trim().is_empty() || e.bucket.trim().is_empty() {
            return Err(format!(
                "entry {} ({}: {}) has no {}: every accepted site says its bucket and why",
                i + 1,
                e.file,
                e.symbol,
                if e.bucket.trim().is_empty() {
                    "bucket"
                } else {
                    "reason"
                }
            ));
        }
    }
    Ok(ledger)
}

/// The result of checking findings against a ledger.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Check {
    /// Findings covered by an entry (their count).
    pub accepted: usize,
    /// Findings with no entry: (file, symbol, class, bucket).
    pub new: Vec<Key>,
    /// Entries no finding matches any more.
    pub stale: Vec<Key>,
}

impl Check {
    /// Whether `--strict` fails.
    pub fn fails(&self) -> bool {
        !self.new.is_empty() || !self.stale.is_empty()
    }
}

/// Checks the findings' keys against the ledger, both ways.
pub fn check(ledger: &Ledger, findings: &[Key]) -> Check {
    let entries: BTreeSet<Key> = ledger.entries.iter().map(Entry::key).collect();
    let found: BTreeSet<Key> = findings
        .iter()
        .map(|(f, s, c, b)| (normalise_key(f), s.clone(), c.clone(), b.clone()))
        .collect();
    Check {
        accepted: findings
            .iter()
            .filter(|(f, s, c, b)| {
                entries.contains(&(normalise_key(f), s.clone(), c.clone(), b.clone()))
            })
            .count(),
        new: found.difference(&entries).cloned().collect(),
        stale: entries.difference(&found).cloned().collect(),
    }
}
