//! `race[=cpu:1,2,4]`: the runner's race detector (`go test -race`, a
//! ThreadSanitizer build), optionally at several GOMAXPROCS values (from
//! the recipe). Proof: the detector is live in each run's test binary
//! (`session`). No sham: an instrumented build always detects; its
//! instrumentation also slows the subject, so a race cell is read by its
//! failures' signatures.

use super::{Preparing, Reading, Role, Seen, Sham};
use crate::catalog::class::FlakeClass;
use crate::error::Result;
use crate::perturb::Missing;

pub(super) const NEEDS_RECIPE: bool = true;
pub(super) const ROLE: Role = Role::Other;

pub(super) fn prepare(cpu: &[u32], p: &mut Preparing) -> Result<()> {
    let recipe = p.recipe;
    match recipe.and_then(|r| r.race.as_ref().map(|race| (r, race))) {
        Some((r, race)) if !cpu.is_empty() && race.cpu.is_none() => {
            p.out.missing = Some(Missing {
                message: format!(
                    "cannot sweep GOMAXPROCS: the {} recipe's race detector has no cpu option",
                    r.name
                ),
                hint: format!("use `race` alone (see `flakelab recipes show {}`)", r.name),
            })
        }
        Some(_) => p.out.race = Some(cpu.to_vec()),
        None => {
            p.out.missing = Some(Missing {
                message: format!(
                    "cannot run the race detector: {}",
                    recipe.map_or("no recipe recognises this command".to_string(), |r| format!(
                        "the {} recipe knows no race-detector build for this runner",
                        r.name
                    ))
                ),
                hint: "name the runner with --runner NAME (`flakelab recipes` lists them; go and cargo-test have one)".into(),
            })
        }
    }
    Ok(())
}

pub(super) fn sham() -> Option<Sham> {
    None
}

pub(super) fn examines() -> Vec<FlakeClass> {
    vec![FlakeClass::DataRace]
}

/// The first failure that is the detector's own report (`signature::race`
/// signs one `data race: …`; go's test output says `race detected`).
fn race_report(failures: &[String]) -> Option<&str> {
    failures
        .iter()
        .find(|f| {
            let lower = f.to_ascii_lowercase();
            lower.starts_with("data race")
                || lower.contains("race detected")
                || lower.contains("threadsanitizer")
        })
        .map(String::as_str)
}

pub(super) fn read(seen: &Seen) -> Vec<Reading> {
    match race_report(seen.failures) {
        Some(report) => vec![Reading::Claim(
            FlakeClass::DataRace,
            format!(
                "the runner's race detector (proven live in each run's test binary) fails runs the baseline passes, and its report is the failure: \"{report}\".{}",
                seen.combined
            ),
        )],
        None => vec![Reading::Open(
            FlakeClass::DataRace,
            format!(
                "`{}` differs, but no failure is a race report: the detector's instrumentation also slows the subject, which may own the difference: {}",
                seen.cell, seen.row
            ),
        )],
    }
}
