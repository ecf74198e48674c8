//! Execution identity: what makes two recorded executions the same one.
//!
//! An execution is identified by its recorded context, the report's path
//! and digest, the test id and the repetition index, plus the two facts of
//! the execution itself that a re-run changes and a copy does not: the
//! commit and the CI attempt. Nothing about when or where it was ingested
//! enters the key. So an artifact uploaded twice, or collected by two
//! aggregators, counts once; a re-run attempt counts again; `-count=12`
//! keeps its twelve (repetition indexes 0..11); and three matrix legs whose
//! reports are byte for byte the same stay three, because each recorded a
//! different context. The bias is "when in doubt, do not dedup": a missed
//! duplicate restores the old behaviour, a false dedup destroys evidence.
//!
//! Within one report, test id and repetition index are distinct by
//! construction, so the identity of every execution of a report is fixed
//! by the report's key ([`report_key`]) and dedup works a report at a time.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

use super::{Context, Observation};
use crate::junit::{Case, CaseOutcome};

/// `sha256:` and the hex digest of `bytes`.
pub fn digest(bytes: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(bytes);
    format!("sha256:{}", hex(&h.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The identity key of a report: 32 hex digits of the SHA-256 of its
/// context (every dimension, sorted), commit, attempt, path and digest,
/// each length-prefixed so no two different tuples share an encoding.
pub fn report_key(
    context: &Context,
    commit: Option<&str>,
    attempt: Option<&str>,
    path: &str,
    digest: &str,
) -> String {
    let mut h = Sha256::new();
    let mut part = |s: &str| {
        h.update((s.len() as u64).to_le_bytes());
        h.update(s.as_bytes());
    };
    part("flakelab.identity/1");
    part(&context.len().to_string());
    for (k, v) in context {
        part(k);
        part(v);
    }
    part(commit.unwrap_or("\u{0}none"));
    part(attempt.unwrap_or("\u{0}none"));
    part(path);
    part(digest);
    hex(&h.finalize()[..16])
}

/// The observations of a report's cases, in document order, each with its
/// repetition index (how many earlier cases have the same id). The file
/// and line are kept for failures and errors only.
pub fn observations(cases: &[Case]) -> Vec<Observation> {
    let mut seen: HashMap<String, u32> = HashMap::with_capacity(cases.len());
    cases
        .iter()
        .map(|c| {
            let test = c.id();
            let rep = seen.entry(test.clone()).or_insert(0);
            let this = *rep;
            *rep += 1;
            let bad = matches!(c.outcome, CaseOutcome::Failed | CaseOutcome::Errored);
            Observation {
                test,
                outcome: c.outcome,
                rep: this,
                file: c.file.clone().filter(|_| bad),
                line: c.line.filter(|_| bad),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(pairs: &[(&str, &str)]) -> Context {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_key_follows_the_evidence_not_the_ingestion() {
        let a = ctx(&[("os", "linux"), ("leg", "py=3.11")]);
        let b = ctx(&[("os", "linux"), ("leg", "py=3.12")]);
        let d = digest(b"<testsuite/>");
        let k = |c: &Context, attempt: &str, path: &str| {
            report_key(c, Some("c1"), Some(attempt), path, &d)
        };
        // The same artifact twice: one key.
        assert_eq!(k(&a, "1", "junit.xml"), k(&a, "1", "junit.xml"));
        // Legs differing only in what they recorded: different keys.
        assert_ne!(k(&a, "1", "junit.xml"), k(&b, "1", "junit.xml"));
        // A re-run attempt: another key.
        assert_ne!(k(&a, "1", "junit.xml"), k(&a, "2", "junit.xml"));
        // Two documents of one job: another key.
        assert_ne!(k(&a, "1", "junit.xml"), k(&a, "1", "other.xml"));
        // Length prefixes: no concatenation collides.
        assert_ne!(
            report_key(&ctx(&[("a", "bc")]), None, None, "p", &d),
            report_key(&ctx(&[("ab", "c")]), None, None, "p", &d)
        );
        assert_eq!(k(&a, "1", "x").len(), 32);
    }

    #[test]
    fn repetitions_are_counted_per_test() {
        let xml = "<testsuite name='s'>\
            <testcase classname='p' name='TestA'/>\
            <testcase classname='p' name='TestA'><failure/></testcase>\
            <testcase classname='p' name='TestB' file='b.go' line='7'/>\
            <testcase classname='p' name='TestA' file='a.go' line='3'><error/></testcase>\
            </testsuite>";
        let parsed = crate::junit::parse(xml.as_bytes()).unwrap();
        let obs = observations(&parsed.cases);
        let reps: Vec<(&str, u32)> = obs.iter().map(|o| (o.test.as_str(), o.rep)).collect();
        assert_eq!(
            reps,
            [
                ("p::TestA", 0),
                ("p::TestA", 1),
                ("p::TestB", 0),
                ("p::TestA", 2)
            ]
        );
        assert_eq!(obs[2].file, None, "a pass keeps no file");
        assert_eq!(obs[3].file.as_deref(), Some("a.go"));
        assert_eq!(obs[3].line, Some(3));
    }
}
