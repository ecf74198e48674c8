//! `cpu-pin=K`: the child may run on K CPUs only (`sched_setaffinity`
//! between fork and exec). Probe: our own `__probe affinity` reports K
//! CPUs. Sham: the setup before exec, pinned to every CPU. Classes:
//! load-sensitive synchronisation (less CPU for the run).

use super::{Expect, Preparing, Reading, Role, Seen, Sham};
use crate::catalog::class::FlakeClass;
use crate::error::{Error, Result};
use crate::perturb::{isolate, HostFacts};

pub(super) const NEEDS_RECIPE: bool = false;
pub(super) const ROLE: Role = Role::Load;

pub(super) fn prepare(cpus: u32, label: String, p: &mut Preparing) -> Result<()> {
    let k = cpus as usize;
    if k > p.host.cpus.len() {
        return Err(Error::usage(
            format!(
                "`{label}` asks for {k} CPUs but this process may use {}",
                p.host.cpus.len()
            ),
            format!("use cpu-pin=1 … cpu-pin={}", p.host.cpus.len()),
        ));
    }
    p.out.isolation.cpus = Some(p.host.cpus[..k].to_vec());
    let argv = p.own_probe(&["affinity"]);
    p.out.probes.push(super::Probe {
        perturbation: label,
        argv,
        expect: Expect::Cpus { count: k },
    });
    Ok(())
}

pub(super) fn judge(what: &str, count: usize, output: &str) -> Result<String, String> {
    let n: Option<usize> = output
        .lines()
        .find_map(|l| l.strip_prefix("cpus: "))
        .and_then(|v| v.split_whitespace().next()?.parse().ok());
    match n {
        Some(n) if n == count => Ok(format!("{what}: child's affinity mask has {n} CPU(s)")),
        other => Err(format!(
            "{what}: child's affinity mask has {} CPU(s), expected {count}",
            other.map_or("?".into(), |n| n.to_string())
        )),
    }
}

/// The child's side: `cpus: N (list)` from the affinity mask.
pub(super) fn child() -> String {
    let cpus = isolate::allowed_cpus();
    format!("cpus: {} ({})\n", cpus.len(), isolate::cpu_list(&cpus))
}

pub(super) fn sham(host: &HostFacts) -> Option<Sham> {
    super::setup_sham(host)
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
