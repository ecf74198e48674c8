//! The quarantine ledger's commands: `quarantine --add` (an entry with its
//! owner, ticket, expiry and evidence), `quarantine --release` (the entries
//! whose runs since their fix, in the lab and ingested from CI, bound below
//! the target), and the expired entries `check` fails on. The judging is
//! `history::ledger`'s, the counting `history::release`'s.

use std::path::Path;

use crate::cli::QuarantineArgs;
use crate::error::{Error, Result, EXIT_OK};
use crate::history::ledger::{self, expiry, today, Ledger, LedgerEntry};
use crate::history::release::Tallies;
use crate::record::{CaseOutcome, Outcome, TestOutcome};
use crate::store::Store;

/// The ledger at `path`; none yet is an empty one.
fn read(path: &Path) -> Result<Ledger> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Ledger::default()),
        Err(e) => {
            return Err(Error::usage(
                format!("cannot read the quarantine ledger {}: {e}", path.display()),
                "name it with --ledger FILE",
            ))
        }
    };
    ledger::parse(&text).map_err(|e| {
        Error::usage(
            format!("{}: {e}", path.display()),
            "fix the entry (keys: id, owner, ticket, added, expires, evidence, fixed)",
        )
    })
}

/// `quarantine --add` and `quarantine --release`.
pub(super) fn ledger_cmd(args: &QuarantineArgs) -> Result<i32> {
    let mut book = read(&args.ledger)?;
    let store = Store::at(&super::ingest::history_store(&args.store.store));
    let Some(test) = &args.add else {
        return release_cmd(args, &book, &store);
    };
    if let Some(e) = book.tests.iter().find(|e| &e.id == test) {
        return Err(Error::usage(
            format!(
                "{test} is already quarantined (owner {}, expires {})",
                e.owner, e.expires
            ),
            format!("edit its entry in {}", args.ledger.display()),
        ));
    }
    let today = today();
    let expires = expiry(args.expires.as_deref().unwrap_or(""), today)?;
    let evidence = match &args.evidence {
        Some(e) => e.clone(),
        None => super::history::load(&store, &args.analysis)
            .ok()
            .and_then(|(a, _)| a.tests.into_iter().find(|t| &t.test == test))
            .map(|t| t.statement)
            .ok_or_else(|| {
                Error::usage(
                    format!(
                        "the history in {} says nothing about {test}",
                        store.root().display()
                    ),
                    "say what put it there with --evidence TEXT",
                )
            })?,
    };
    let entry = LedgerEntry {
        id: test.clone(),
        owner: args.owner.clone().unwrap_or_default(),
        ticket: args.ticket.clone().unwrap_or_default(),
        added: today.to_string(),
        expires: expires.to_string(),
        evidence,
        fixed: None,
    };
    book.tests.push(entry.clone());
    let text = ledger::render(&book);
    ledger::parse(&text).map_err(|e| Error::usage(e, "give a non-empty --owner and --ticket"))?;
    std::fs::write(&args.ledger, text).map_err(|e| {
        Error::usage(
            format!("cannot write {}: {e}", args.ledger.display()),
            "name a writable file with --ledger FILE",
        )
    })?;
    super::print_text(&format!(
        "quarantined {} in {} (owner {}, ticket {}, expires {}); commit it\n",
        entry.id,
        args.ledger.display(),
        entry.owner,
        entry.ticket,
        entry.expires
    ));
    Ok(EXIT_OK)
}

/// `quarantine --release`: each entry's runs since its fix, in the lab
/// and in the ingested CI history (`history::release` counts them).
fn release_cmd(args: &QuarantineArgs, book: &Ledger, store: &Store) -> Result<i32> {
    if book.tests.is_empty() {
        return Err(Error::usage(
            format!("no quarantine ledger entry in {}", args.ledger.display()),
            "add one with `flakelab quarantine --add TEST --owner NAME --ticket ID --expires 30d`",
        ));
    }
    let mut tallies = Tallies::new(&book.tests);
    if store.root().is_dir() {
        let mut runs = store.runs_iter(None)?;
        runs.each_view(|run| {
            if !matches!(run.outcome(), Outcome::Pass | Outcome::Fail) {
                return Ok(());
            }
            for t in run.tests() {
                let outcome = match t.outcome {
                    TestOutcome::Pass => CaseOutcome::Passed,
                    TestOutcome::Fail => CaseOutcome::Failed,
                    TestOutcome::Error => CaseOutcome::Errored,
                    TestOutcome::Skip => CaseOutcome::Skipped,
                };
                tallies.add_lab(t.id, run.started_at(), outcome);
            }
            Ok(())
        })?;
        runs.finish()?;
    }
    if store.history_path().is_file() {
        let folded = store.folded_keys()?;
        let stats = store.each_history(&folded, |item| tallies.add_ci(&item))?;
        super::history::warn_skipped(&stats);
    }
    let needed = ledger::clean_runs_needed(args.target, args.confidence);
    let mut out = String::new();
    for (e, t) in book.tests.iter().zip(&tallies.tallies) {
        let (clean, failed) = (t.clean(), t.failed());
        let r = ledger::release(e, clean, failed, args.target, args.confidence);
        let mut whence = format!("clean: {} lab, {} CI", t.lab_clean, t.ci_clean);
        if failed > 0 {
            whence.push_str(&format!(
                "; failed: {} lab, {} CI",
                t.lab_failed, t.ci_failed
            ));
        }
        out.push_str(&format!(
            "{} {} (owner {}): {failed} of {} runs since {} failed ({whence}), {} at {}% ({})\n",
            if r.releasable {
                "may leave:"
            } else {
                "stays:    "
            },
            e.id,
            e.owner,
            clean + failed,
            e.since(),
            crate::stats::format_bound(r.bound),
            args.confidence * 100.0,
            if r.releasable {
                format!("below the target {}", args.target)
            } else if failed == 0 {
                format!(
                    "{} more clean runs to bound it below {}",
                    needed - clean.min(needed),
                    args.target
                )
            } else {
                format!(
                    "not below {}: a failure since the fix needs its own fix",
                    args.target
                )
            }
        ));
        if t.undated > 0 {
            eprintln!(
                "note: {}: {} CI observation(s) carry no ingest day (ingested before flakelab recorded one, or folded by `compact`) and do not count toward its release",
                e.id, t.undated
            );
        }
    }
    super::print_text(&out);
    Ok(EXIT_OK)
}

/// The ledger's entries at `path` (none without one).
pub(super) fn entries(path: &Path) -> Result<Vec<LedgerEntry>> {
    Ok(read(path)?.tests)
}

/// The lines `check` prints for the expired entries of the ledger in the
/// working directory (none without one).
pub(super) fn expired_lines() -> Result<String> {
    let book = read(Path::new(ledger::LEDGER_FILE))?;
    let today = today();
    Ok(book
        .tests
        .iter()
        .filter(|e| e.expired(today))
        .map(|e| {
            format!(
                "quarantine expired: {} on {} (owner {}, ticket {}): fix it or extend its entry in {}\n",
                e.id,
                e.expires,
                e.owner,
                e.ticket,
                ledger::LEDGER_FILE
            )
        })
        .collect())
}
