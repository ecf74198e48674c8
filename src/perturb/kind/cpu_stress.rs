//! `cpu-stress=2x|N`: busy threads owned by the harness beside each run
//! (`exec::stress`). Probe: the stress threads beside a short probe got
//! their share of the CPU ([`judge_stress`], which also judges each run).
//! Sham: `cpu-stress=0`, the run scheduled alone with no busy thread.
//! Classes: load-sensitive synchronisation.

use super::{Expect, Observed, Preparing, Reading, Role, Seen, Sham};
use crate::catalog::class::FlakeClass;
use crate::catalog::values;
use crate::error::{Error, Result};
use crate::perturb::{Prepared, StressPlan};
use crate::record::RunCpu;

pub(super) const NEEDS_RECIPE: bool = false;
pub(super) const ROLE: Role = Role::Load;

pub(super) fn prepare(amount: &str, label: String, p: &mut Preparing) -> Result<()> {
    let amount =
        values::parse_stress(amount).map_err(|m| Error::usage(m, "see `flakelab run --help`"))?;
    let threads = amount.threads(p.host.cpus.len());
    p.out.stress = Some(StressPlan {
        threads,
        cpus: None,
        allowed: p.host.cpus.len(),
    });
    // No busy thread (the sham): nothing to measure; the run is still
    // scheduled alone.
    if threads > 0 {
        p.out.stress_label = Some(label.clone());
        p.out.probes.push(super::Probe {
            perturbation: label,
            argv: vec!["sleep".into(), "0.5".into()],
            expect: Expect::Stress,
        });
    }
    Ok(())
}

/// Stress competes with a pinned child only on the child's CPUs.
pub(super) fn finish(out: &mut Prepared) {
    if let (Some(stress), Some(cpus)) = (&mut out.stress, &out.isolation.cpus) {
        stress.cpus = Some(cpus.clone());
    }
}

pub(super) fn judge(what: &str, seen: &Observed) -> Result<String, String> {
    match judge_stress(what, seen.cpu.as_ref())? {
        Some(fact) => Ok(fact),
        None => Err(format!(
            "{what}: the probe ended before its stress could be measured"
        )),
    }
}

/// Below this share of a CPU, on average over the window, a busy stress
/// thread was not running at all (not placed, frozen, or throttled by a
/// CPU quota): a loaded 2-CPU host with a load average of 8 still gives each
/// of 4 stressors 16% (measured), eight times more.
pub const STRESS_MIN_SHARE: f64 = 0.02;

/// Windows shorter than this are measured but not judged: over a few
/// scheduler periods a busy thread's share is noise, not the stress. The
/// cell's probe (0.5 s) is always long enough.
pub const STRESS_MIN_WINDOW_S: f64 = 0.25;

/// The least part of the CPU time a run used that its stressors must have
/// had: half of `T / (T + U)`, the part `T` busy threads on `U` CPUs take
/// from a subject that keeps every one of those CPUs busy. Busy threads of
/// one session share its CPU time equally (the child shares flakelab's
/// session), so this part does not depend on how loaded the rest of the host
/// is; it falls below the threshold when the stressors were throttled apart
/// from the subject, or when the subject keeps more than `T + 2U` threads
/// busy, and so swamps the stress with its own.
pub fn stress_part_needed(threads: usize, cpus: usize) -> f64 {
    let (t, u) = (threads as f64, cpus.max(1) as f64);
    t / (2.0 * (t + u))
}

/// Whether the stress threads beside a run (or probe) got their share:
/// `Ok(fact)`, `Ok(None)` when the window was too short to judge, or
/// `Err(reason)`.
pub fn judge_stress(what: &str, cpu: Option<&RunCpu>) -> Result<Option<String>, String> {
    let Some((cpu, stress)) = cpu.and_then(|c| c.stress.as_ref().map(|s| (c, s))) else {
        return Err(format!(
            "{what}: the stress threads' CPU time was not measured"
        ));
    };
    if let Some(why) = &stress.error {
        return Err(format!(
            "{what}: {why}, so the stress did not reach the child's CPUs"
        ));
    }
    if cpu.window_s < STRESS_MIN_WINDOW_S {
        return Ok(None);
    }
    let share = cpu.stress_share().unwrap_or(0.0);
    let threads = stress.threads;
    if share < STRESS_MIN_SHARE {
        return Err(format!(
            "{what}: the {threads} stress thread(s) got {} of a CPU each over {:.2} s, below {}: they did not run (a CPU quota, or frozen)",
            percent(share),
            cpu.window_s,
            percent(STRESS_MIN_SHARE)
        ));
    }
    let needed = stress_part_needed(threads, stress.cpus);
    match cpu.stress_part() {
        Some(part) if part < needed => Err(format!(
            "{what}: the {threads} stress thread(s) got {} of the CPU time the run used ({:.2} s of {:.2} s), below {}: the subject's own busy threads swamped them, or they were throttled apart from it",
            percent(part),
            stress.cpu_s,
            stress.cpu_s + cpu.subject_s.unwrap_or(0.0),
            percent(needed)
        )),
        part => Ok(Some(format!(
            "{what}: {threads} stress thread(s) got {} of a CPU each{}",
            percent(share),
            part.map(|p| format!(", {} of the CPU time the run used", percent(p)))
                .unwrap_or_default()
        ))),
    }
}

/// `31%`, `0.4%`.
pub fn percent(share: f64) -> String {
    let p = share * 100.0;
    if p > 0.0 && p < 1.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
    }
}

pub(super) fn sham() -> Option<Sham> {
    Some(Sham {
        mechanism: "a run scheduled alone",
        spec: "cpu-stress=0".to_string(),
    })
}

pub(super) fn examines() -> Vec<FlakeClass> {
    vec![FlakeClass::LoadSensitiveSynchronisation]
}

pub(super) fn read(seen: &Seen) -> Vec<Reading> {
    vec![Reading::Claim(
        FlakeClass::LoadSensitiveSynchronisation,
        format!(
            "only the CPU available to the run changed: a wait that assumes a speed gets stretched past its limit.{}",
            seen.combined
        ),
    )]
}
