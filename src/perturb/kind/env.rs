//! `env=NAME=VALUE` / `env=-NAME`: variables set or removed. Probe: our own
//! `__probe env` reports what the child sees (credential values never
//! printed). No sham: the variable is the condition. Classes: unseeded
//! randomness when the variable is `PYTHONHASHSEED`, none otherwise.

use std::collections::BTreeMap;

use super::{Expect, Preparing, Reading, Role, Seen, Sham};
use crate::catalog::class::FlakeClass;
use crate::error::Result;

pub(super) const NEEDS_RECIPE: bool = false;
pub(super) const ROLE: Role = Role::Other;

/// The variable whose value seeds Python's string hashing.
const HASH_SEED: &str = "PYTHONHASHSEED";

pub(super) fn prepare(
    set: &BTreeMap<String, String>,
    unset: &[String],
    label: String,
    p: &mut Preparing,
) -> Result<()> {
    for (k, v) in set {
        p.out.claim(&label, k, Some(v))?;
    }
    for k in unset {
        p.out.claim(&label, k, None)?;
    }
    let names: Vec<&str> = set.keys().chain(unset).map(String::as_str).collect();
    let mut args = vec!["env"];
    args.extend(names);
    let argv = p.own_probe(&args);
    p.out.probes.push(super::Probe {
        perturbation: label,
        argv,
        expect: Expect::Env {
            set: set.clone(),
            unset: unset.to_vec(),
            secret: set
                .keys()
                .filter(|k| p.redaction.is_secret(k))
                .cloned()
                .collect(),
        },
    });
    Ok(())
}

pub(super) fn judge(
    what: &str,
    set: &BTreeMap<String, String>,
    unset: &[String],
    secret: &[String],
    output: &str,
) -> Result<String, String> {
    let mut seen: BTreeMap<&str, Option<&str>> = BTreeMap::new();
    for line in output.lines() {
        if let Some(rest) = line.strip_prefix("set ") {
            if let Some((k, v)) = rest.split_once('=') {
                seen.insert(k, Some(v));
            }
        } else if let Some(k) = line.strip_prefix("unset ") {
            seen.insert(k.trim(), None);
        }
    }
    for (k, v) in set {
        match seen.get(k.as_str()) {
            Some(Some(got)) if got == v => {}
            Some(Some(_)) if secret.contains(k) => {
                return Err(format!(
                    "{what}: child sees {k} with another value than the one set (values redacted)"
                ))
            }
            Some(Some(got)) => return Err(format!("{what}: child sees {k}={got}, expected {v}")),
            _ => return Err(format!("{what}: child does not see {k}")),
        }
    }
    for k in unset {
        if let Some(Some(_)) = seen.get(k.as_str()) {
            return Err(format!("{what}: child still sees {k}"));
        }
        if !seen.contains_key(k.as_str()) {
            return Err(format!("{what}: probe did not report {k}"));
        }
    }
    Ok(format!("{what}: child sees the variables as set"))
}

/// The child's side: `set NAME=VALUE` or `unset NAME` for each variable.
pub(super) fn child(names: &[String]) -> String {
    names
        .iter()
        .map(|name| match std::env::var_os(name) {
            Some(v) => format!("set {name}={}\n", v.to_string_lossy()),
            None => format!("unset {name}\n"),
        })
        .collect()
}

pub(super) fn sham() -> Option<Sham> {
    None
}

pub(super) fn examines(set: &BTreeMap<String, String>) -> Vec<FlakeClass> {
    if set.contains_key(HASH_SEED) {
        vec![FlakeClass::UnseededRandomness]
    } else {
        vec![]
    }
}

pub(super) fn read(set: &BTreeMap<String, String>, seen: &Seen) -> Vec<Reading> {
    if !set.contains_key(HASH_SEED) {
        return vec![];
    }
    vec![Reading::Claim(
        FlakeClass::UnseededRandomness,
        format!(
            "only the hash seed (PYTHONHASHSEED) changed: the outcome follows a value chosen at random per process.{}",
            seen.combined
        ),
    )]
}
