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

use super::{Context, Head, Observation};
use crate::results::junit::{Case, CaseOutcome};

/// `sha256:` and the hex digest of `bytes`.
#[cfg(test)]
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
    part(crate::record::schema::IDENTITY_SCHEMA);
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
/// repetition index (how many earlier cases have the same id). Each is its
/// first attempt's outcome, "passed on a retry" kept apart; pytest's case
/// per rerun attempt is one observation ([`crate::results::junit::fold_reruns`]).
/// The file and line are kept for failures and errors only.
pub fn observations(cases: &[Case]) -> Vec<Observation> {
    let cases = crate::results::junit::fold_reruns(cases);
    let mut seen: HashMap<String, u32> = HashMap::with_capacity(cases.len());
    cases
        .iter()
        .map(|c| {
            let test = c.id();
            let rep = seen.entry(test.clone()).or_insert(0);
            let this = *rep;
            *rep += 1;
            let bad = matches!(c.first_attempt, CaseOutcome::Failed | CaseOutcome::Errored);
            Observation {
                test,
                outcome: c.first_attempt,
                retried: c.passed_on_rerun(),
                rep: this,
                file: c.file.clone().filter(|_| bad),
                line: c.line.filter(|_| bad),
            }
        })
        .collect()
}

/// Warnings for matrix legs the history cannot tell apart: several reports
/// of one provider run, job and attempt, at one path, with one recorded
/// context, but different contents. Those are different executions (so
/// they are kept, each counted), but nothing recorded says which leg each
/// ran in, so their failures cannot be told apart by leg — and two legs
/// whose reports happen to be byte for byte equal are one execution to the
/// identity. GitHub gives every leg of a matrix the same job name; the fix
/// is to record the leg. Reports without a run id are not compared. Each
/// warning names the run, job, attempt, path, context and how many reports.
pub fn indistinct_legs(heads: &[Head]) -> Vec<String> {
    use std::collections::{BTreeMap, BTreeSet};
    type Group<'a> = (
        Option<&'a str>,
        &'a str,
        Option<&'a str>,
        Option<&'a str>,
        &'a Context,
        &'a str,
    );
    let mut groups: BTreeMap<Group<'_>, BTreeSet<&str>> = BTreeMap::new();
    for h in heads {
        let Some(run) = h.provenance.run.as_deref() else {
            continue;
        };
        groups
            .entry((
                h.provenance.provider.as_deref(),
                run,
                h.provenance.job.as_deref(),
                h.provenance.attempt.as_deref(),
                &h.context,
                h.path.as_str(),
            ))
            .or_default()
            .insert(h.digest.as_str());
    }
    groups
        .into_iter()
        .filter(|(_, digests)| digests.len() > 1)
        .map(|((provider, run, job, attempt, context, path), digests)| {
            format!(
                "{} reports of {}run {run}{}{} at {path} recorded one context ({}) but differ: matrix legs that recorded nothing telling them apart{}; their failures cannot be told apart by leg. Ingest each leg with `--matrix '${{{{ toJSON(matrix) }}}}'` (the `leg` dimension) or `--context KEY=VALUE` naming what differs",
                digests.len(),
                provider.map(|p| format!("{p} ")).unwrap_or_default(),
                job.map(|j| format!(" job `{j}`")).unwrap_or_default(),
                attempt.map(|a| format!(" attempt {a}")).unwrap_or_default(),
                super::context_name(context),
                if provider == Some("github") {
                    " (GitHub gives every leg the same job name)"
                } else {
                    ""
                },
            )
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
        let parsed = crate::results::junit::parse(xml.as_bytes()).unwrap();
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

    #[test]
    fn legs_that_recorded_one_context_are_named_once_and_distinct_legs_never() {
        let head = |run: &str, job: &str, c: &Context, digest: &str| Head {
            provenance: super::super::Provenance {
                provider: Some("github".into()),
                run: Some(run.into()),
                job: Some(job.into()),
                attempt: Some("1".into()),
                ..Default::default()
            },
            context: c.clone(),
            path: "junit.xml".into(),
            digest: digest.into(),
        };
        let same = ctx(&[("os", "linux")]);
        let legs = [
            head("7", "test", &same, "sha256:a"),
            head("7", "test", &same, "sha256:b"),
            head("7", "test", &same, "sha256:c"),
            // The same artifact twice is not a leg.
            head("8", "test", &same, "sha256:a"),
            head("8", "test", &same, "sha256:a"),
            // Legs that recorded themselves.
            head("9", "test", &ctx(&[("leg", "py=3.11")]), "sha256:a"),
            head("9", "test", &ctx(&[("leg", "py=3.12")]), "sha256:b"),
            // Another job of the run.
            head("7", "lint", &same, "sha256:d"),
        ];
        let w = indistinct_legs(&legs);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("3 reports of github run 7 job `test` attempt 1 at junit.xml recorded one context (os=linux) but differ"),
            "{}",
            w[0]
        );
        assert!(w[0].contains("(GitHub gives every leg the same job name)"));
        assert!(
            w[0].contains("--matrix '${{ toJSON(matrix) }}'"),
            "{}",
            w[0]
        );
    }
}
