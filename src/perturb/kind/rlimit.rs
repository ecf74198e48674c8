//! `rlimit=RESOURCE:VALUE`: a soft and hard resource limit on the child
//! (`setrlimit` between fork and exec). Probe: our own `__probe rlimit RES`
//! reports the limit. Sham: the setup before exec with a null parameter.
//! Classes: host-resource collision (how much of a resource is left).

use super::{Expect, Preparing, Reading, Role, Seen, Sham};
use crate::catalog::class::FlakeClass;
use crate::error::Result;
use crate::perturb::{isolate, HostFacts};

pub(super) const NEEDS_RECIPE: bool = false;
pub(super) const ROLE: Role = Role::Other;

pub(super) fn prepare(resource: &str, value: u64, label: String, p: &mut Preparing) -> Result<()> {
    p.out.isolation.rlimits.retain(|(r, _)| r != resource);
    p.out.isolation.rlimits.push((resource.to_string(), value));
    let argv = p.own_probe(&["rlimit", resource]);
    p.out.probes.push(super::Probe {
        perturbation: label,
        argv,
        expect: Expect::Rlimit {
            resource: resource.to_string(),
            value,
        },
    });
    Ok(())
}

pub(super) fn judge(
    what: &str,
    resource: &str,
    value: u64,
    output: &str,
) -> Result<String, String> {
    let line = output
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{resource} ")));
    let mut nums = line.unwrap_or("").split_whitespace();
    let soft = nums.next().unwrap_or("?");
    let hard = nums.next().unwrap_or("?");
    if soft == value.to_string() && hard == value.to_string() {
        Ok(format!(
            "{what}: child's {resource} limit is {soft} (soft and hard)"
        ))
    } else {
        Err(format!(
            "{what}: child's {resource} limit is {soft}/{hard}, expected {value}"
        ))
    }
}

/// The child's side: `RES soft hard` for one resource limit.
pub(super) fn child(resource: &str) -> String {
    match isolate::current_rlimit(resource) {
        Some((soft, hard)) => format!("{resource} {soft} {hard}\n"),
        None => format!("{resource} unknown\n"),
    }
}

pub(super) fn sham(host: &HostFacts) -> Option<Sham> {
    super::setup_sham(host)
}

pub(super) fn examines() -> Vec<FlakeClass> {
    vec![FlakeClass::HostResourceCollision]
}

pub(super) fn read(resource: &str, value: u64, seen: &Seen) -> Vec<Reading> {
    vec![Reading::Claim(
        FlakeClass::HostResourceCollision,
        format!(
            "a limit on a host resource ({resource} at {value}) makes runs fail: the suite depends on how much of it the host has left.{}",
            seen.combined
        ),
    )]
}
