//! What counts toward a quarantine entry's release: its test's runs since
//! the entry's fix (`LedgerEntry::since`, the `fixed` day or else the
//! `added` day), from both places they are recorded: the lab's runs and
//! the CI observations `ingest` recorded, each once (the history reader
//! hands each report once, by its identity key). A CI report counts from
//! the day it was ingested; one recorded before ingest dates were kept, or
//! folded by `compact`, has no day and is counted apart as undated, never
//! toward a release. A failure from either place counts against it.
//!
//! Pure: outcomes and days in, counts out.

use super::ledger::LedgerEntry;
use super::Item;
use crate::record::CaseOutcome;

/// One entry's runs since its fix, by where they were measured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// Lab runs of the test that passed.
    pub lab_clean: u64,
    /// Lab runs of the test that failed or errored.
    pub lab_failed: u64,
    /// Ingested CI observations of the test that passed.
    pub ci_clean: u64,
    /// Ingested CI observations that failed or errored (a pass on a retry
    /// counts as the failure it first was).
    pub ci_failed: u64,
    /// CI observations of the test with no ingest day (not counted).
    pub undated: u64,
}

impl Tally {
    /// Clean runs from both places.
    pub fn clean(&self) -> u64 {
        self.lab_clean + self.ci_clean
    }

    /// Failed runs from both places.
    pub fn failed(&self) -> u64 {
        self.lab_failed + self.ci_failed
    }
}

/// A tally per ledger entry, in the ledger's order.
#[derive(Debug, Clone)]
pub struct Tallies<'a> {
    entries: &'a [LedgerEntry],
    /// The tallies, one per entry.
    pub tallies: Vec<Tally>,
}

/// `YYYY-MM-DD` of an RFC 3339 time (or of a date).
fn day(at: &str) -> Option<&str> {
    at.get(..10).filter(|d| d.as_bytes().get(4) == Some(&b'-'))
}

impl<'a> Tallies<'a> {
    /// Empty tallies for `entries`.
    pub fn new(entries: &'a [LedgerEntry]) -> Tallies<'a> {
        Tallies {
            entries,
            tallies: vec![Tally::default(); entries.len()],
        }
    }

    fn each(&mut self, test: &str, mut f: impl FnMut(&LedgerEntry, &mut Tally)) {
        for (e, t) in self.entries.iter().zip(&mut self.tallies) {
            if e.id == test {
                f(e, t);
            }
        }
    }

    /// Counts one lab run's outcome of `test`, started at `started_at`
    /// (RFC 3339): a pass is clean, a failure or error failed, a skip
    /// nothing.
    pub fn add_lab(&mut self, test: &str, started_at: &str, outcome: CaseOutcome) {
        let Some(d) = day(started_at) else { return };
        self.each(test, |e, t| {
            if d >= e.since() {
                match outcome {
                    CaseOutcome::Passed => t.lab_clean += 1,
                    CaseOutcome::Failed | CaseOutcome::Errored => t.lab_failed += 1,
                    CaseOutcome::Skipped => {}
                }
            }
        });
    }

    /// Counts one item of the ingested history: each observation of an
    /// entry's test in a report ingested on or after the entry's day; a
    /// report with no ingest day, or folded counts, only as undated.
    pub fn add_ci(&mut self, item: &Item<'_>) {
        match item {
            Item::Report(r, obs) => {
                let d = r.provenance.ingested.as_deref().and_then(day);
                for o in obs.iter() {
                    self.each(&o.test, |e, t| match (o.outcome, d) {
                        (CaseOutcome::Skipped, _) => {}
                        (_, None) => t.undated += 1,
                        (_, Some(d)) if d < e.since() => {}
                        (CaseOutcome::Passed, Some(_)) => t.ci_clean += 1,
                        (_, Some(_)) => t.ci_failed += 1,
                    });
                }
            }
            Item::Counts(c) => self.each(&c.test, |_, t| t.undated += c.counts.ran()),
            Item::Infra(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Observation, Provenance, ReportRecord, REPORT_SCHEMA};

    fn entry(id: &str, added: &str, fixed: Option<&str>) -> LedgerEntry {
        LedgerEntry {
            id: id.into(),
            owner: "alice".into(),
            ticket: "T-1".into(),
            added: added.into(),
            expires: added.into(),
            evidence: "e".into(),
            fixed: fixed.map(str::to_string),
        }
    }

    fn report(
        ingested: Option<&str>,
        obs: &[(&str, CaseOutcome, bool)],
    ) -> (ReportRecord, Vec<Observation>) {
        let r = ReportRecord {
            schema: REPORT_SCHEMA.into(),
            key: "k".into(),
            context: Default::default(),
            commit: Some("c".into()),
            provenance: Provenance {
                ingested: ingested.map(str::to_string),
                ..Provenance::default()
            },
            path: "j.xml".into(),
            digest: "d".into(),
            n: obs.len() as u64,
            infra: Vec::new(),
        };
        let obs = obs
            .iter()
            .map(|(t, o, retried)| Observation {
                test: t.to_string(),
                outcome: *o,
                retried: *retried,
                rep: 0,
                file: None,
                line: None,
            })
            .collect();
        (r, obs)
    }

    #[test]
    fn ci_observations_count_from_the_fix_day_each_once_by_outcome() {
        use CaseOutcome::*;
        let entries = [
            entry("a", "2026-12-01", Some("2026-12-05")),
            entry("b", "2026-12-01", None),
        ];
        let mut t = Tallies::new(&entries);
        // Before a's fix, on b's day: counts for b only.
        let (r, o) = report(
            Some("2026-12-04T23:59:59Z"),
            &[("a", Failed, false), ("b", Passed, false)],
        );
        t.add_ci(&Item::Report(&r, &o));
        // On a's fix day and after: every pass clean, every failure (a
        // retried pass too) failed, a skip nothing, other tests nothing.
        let (r, o) = report(
            Some("2026-12-05T00:00:00Z"),
            &[
                ("a", Passed, false),
                ("a", Passed, false),
                ("a", Skipped, false),
                ("c", Failed, false),
            ],
        );
        t.add_ci(&Item::Report(&r, &o));
        let (r, o) = report(
            Some("2026-12-09T10:00:00Z"),
            &[("a", Failed, true), ("b", Errored, false)],
        );
        t.add_ci(&Item::Report(&r, &o));
        // No ingest day: undated, whatever the outcome.
        let (r, o) = report(None, &[("a", Passed, false), ("a", Failed, false)]);
        t.add_ci(&Item::Report(&r, &o));
        assert_eq!(
            t.tallies[0],
            Tally {
                ci_clean: 2,
                ci_failed: 1,
                undated: 2,
                ..Tally::default()
            }
        );
        assert_eq!(
            t.tallies[1],
            Tally {
                ci_clean: 1,
                ci_failed: 1,
                ..Tally::default()
            }
        );
    }

    #[test]
    fn lab_runs_and_ci_observations_add_up_toward_the_bound() {
        use CaseOutcome::*;
        let entries = [entry("a", "2026-12-01", None)];
        let mut t = Tallies::new(&entries);
        let (r, o) = report(
            Some("2026-12-02T08:00:00Z"),
            &vec![("a", Passed, false); 298],
        );
        t.add_ci(&Item::Report(&r, &o));
        t.add_lab("a", "2026-11-30T12:00:00Z", Passed); // before: not counted
        t.add_lab("a", "2026-12-01T00:00:01Z", Skipped); // a skip: nothing
        assert_eq!((t.tallies[0].clean(), t.tallies[0].failed()), (298, 0));
        let at = |t: &Tally| {
            crate::history::ledger::release(&entries[0], t.clean(), t.failed(), 0.01, 0.95)
        };
        assert!(!at(&t.tallies[0]).releasable);
        t.add_lab("a", "2026-12-01T00:00:01Z", Passed);
        assert_eq!(t.tallies[0].lab_clean, 1);
        assert!(
            at(&t.tallies[0]).releasable,
            "298 from CI and 1 from the lab: 299"
        );
        // A failure in either place keeps it in.
        let mut lab_fail = t.clone();
        lab_fail.add_lab("a", "2026-12-03T00:00:00Z", Failed);
        assert!(!at(&lab_fail.tallies[0]).releasable);
        let (r, o) = report(Some("2026-12-03T00:00:00Z"), &[("a", Failed, false)]);
        t.add_ci(&Item::Report(&r, &o));
        assert_eq!(t.tallies[0].ci_failed, 1);
        assert!(!at(&t.tallies[0]).releasable);
    }

    #[test]
    fn folded_counts_are_undated_and_a_malformed_day_counts_nothing() {
        let entries = [entry("a", "2026-12-01", None)];
        let mut t = Tallies::new(&entries);
        let c = crate::history::CountsRecord {
            schema: crate::history::COUNTS_SCHEMA.into(),
            test: "a".into(),
            context: Default::default(),
            commit: None,
            counts: crate::history::Counts {
                passed: 5,
                failed: 1,
                skipped: 3,
                ..Default::default()
            },
            file: None,
            line: None,
        };
        t.add_ci(&Item::Counts(&c));
        t.add_lab("a", "garbage", CaseOutcome::Passed);
        let (r, o) = report(Some("yesterday"), &[("a", CaseOutcome::Passed, false)]);
        t.add_ci(&Item::Report(&r, &o));
        assert_eq!(
            t.tallies[0],
            Tally {
                undated: 7,
                ..Tally::default()
            }
        );
    }
}
