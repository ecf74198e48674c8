//! `flakelab perturbations`: the catalog as text, from the same data the
//! runs use.

use std::fmt::Write as _;

use crate::catalog::recipe::{detect, Detection, Recipe, Status};
use crate::catalog::{Catalog, KINDS};

/// The list: every declared perturbation, then every matrix, then the kinds.
pub fn list(catalog: &Catalog) -> String {
    let mut out = String::new();
    let name_w = catalog
        .perturbations
        .iter()
        .map(|p| p.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let spec_w = catalog
        .perturbations
        .iter()
        .map(|p| p.perturb.to_string().len())
        .max()
        .unwrap_or(4)
        .max(4);
    let class_w = catalog
        .perturbations
        .iter()
        .map(|p| p.settles.len())
        .max()
        .unwrap_or(7)
        .max(7);
    let _ = writeln!(
        out,
        "{:<name_w$}  {:<spec_w$}  {:<class_w$}  summary",
        "name", "perturbation", "settles"
    );
    for p in &catalog.perturbations {
        let _ = writeln!(
            out,
            "{:<name_w$}  {:<spec_w$}  {:<class_w$}  {}",
            p.name,
            p.perturb.to_string(),
            p.settles,
            p.summary
        );
    }
    let _ = writeln!(out, "\nmatrices:");
    for m in &catalog.matrices {
        let _ = writeln!(out, "  {}: {}", m.name, m.summary);
        let _ = writeln!(out, "    cells: {}", m.cells.join(", "));
    }
    let _ = writeln!(out, "\nkinds (ad hoc: -p kind=value):");
    for k in KINDS {
        let _ = writeln!(out, "  {}", k.syntax);
    }
    out
}

fn status_text(s: Status) -> &'static str {
    match s {
        Status::Tested => "tested",
        Status::Verified => "verified by hand",
        Status::Documented => "unverified here",
    }
}

/// `flakelab recipes`: one line per recipe with what it can do.
pub fn recipes_list(recipes: &[Recipe]) -> String {
    let mut out = String::new();
    let w = recipes
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(4)
        .max(6);
    let _ = writeln!(
        out,
        "{:<w$}  {:<16}  junit  shuffle  workers  race  summary",
        "recipe", "status"
    );
    for r in recipes {
        let yes = |b: bool| if b { "yes" } else { "—" };
        let _ = writeln!(
            out,
            "{:<w$}  {:<16}  {:<5}  {:<7}  {:<7}  {:<4}  {}",
            r.name,
            status_text(r.status),
            yes(r.junit.is_some()),
            yes(r.shuffle.is_some()),
            yes(r.workers.is_some()),
            yes(r.race.is_some()),
            r.summary
        );
    }
    let _ = writeln!(out, "\n`flakelab recipes show NAME` prints one; `flakelab recipes detect -- CMD` says what a command gets.");
    out
}

/// One recipe in full, as TOML.
pub fn recipe_show(r: &Recipe) -> String {
    let mut out = format!("# {} — {} ({})\n", r.name, status_text(r.status), r.checked);
    out.push_str(&toml::to_string_pretty(r).unwrap_or_default());
    out
}

/// Where `recipes detect` says a run's per-test outcomes come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DetectReport {
    /// The recipe's `[junit]` (its plugin found, or no other way).
    Junit,
    /// The recipe's `[per_test]` (the runner's own output).
    PerTest,
    /// Neither.
    None,
}

/// What flakelab would do with a command line: every command shown is
/// built by the run's own code path (`argv::for_run`), so it is exactly
/// what a run of that cell starts. `source` picks the per-test source the
/// way a session would (the plugin probe is the caller's: it runs a process).
pub fn recipe_detect(
    recipes: &[Recipe],
    command: &[String],
    cpus: usize,
    source: &dyn Fn(&Recipe) -> DetectReport,
) -> String {
    use crate::catalog::recipe::argv::{for_run, Report, RunArgv};
    let mut out = String::new();
    let r = match detect(recipes, command) {
        Detection::Found { recipe, pattern } => {
            let _ = writeln!(
                out,
                "recipe:   {} (matched `{}`; {})",
                recipe.name,
                pattern.join(" "),
                status_text(recipe.status)
            );
            recipe
        }
        Detection::None(why) => {
            let _ = writeln!(out, "recipe:   none: {why}");
            let _ = writeln!(out, "flakelab measures this command by its exit code only.");
            return out;
        }
    };
    let junit_path = std::path::Path::new("/path/from/flakelab.xml");
    let report_path = std::path::Path::new("/path/from/flakelab.report");
    let in_command = command.iter().any(|w| w.contains("{junit}"));
    let chosen = if in_command {
        DetectReport::None
    } else {
        source(r)
    };
    let per_test_file = r
        .per_test
        .as_ref()
        .is_some_and(|p| p.from == crate::catalog::recipe::per_test::ReadFrom::File);
    let report = match chosen {
        _ if in_command => Some(Report::InCommand(junit_path)),
        DetectReport::Junit => Some(Report::Recipe(junit_path)),
        DetectReport::PerTest => Some(Report::Runner(per_test_file.then_some(report_path))),
        DetectReport::None => None,
    };
    let show = |ask: RunArgv<'_>| -> String {
        match for_run(Some(r), command, ask) {
            Ok((argv, env)) => {
                let env: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let mut s = env.join(" ");
                if !s.is_empty() {
                    s.push(' ');
                }
                s + &crate::repro::join(&argv)
            }
            Err(e) => format!("(recipe error: {e})"),
        }
    };
    let per_test = match (chosen, &r.per_test) {
        _ if in_command => "JUnit at {junit} in the command".to_string(),
        (DetectReport::Junit, _) => "JUnit through the recipe's [junit]".to_string(),
        (DetectReport::PerTest, Some(p)) => format!(
            "the runner's own {} output, read from {}",
            p.format.name(),
            if per_test_file {
                "the file it writes"
            } else {
                "the run's output"
            }
        ),
        _ => "none: put {junit} in the command, or use --junit PATH".to_string(),
    };
    let _ = writeln!(out, "per-test: {per_test}");
    if chosen == DetectReport::PerTest && r.junit.is_some() {
        let _ = writeln!(
            out,
            "          (the plugin the recipe's [junit] needs was not found here)"
        );
    }
    let base = RunArgv {
        report,
        ..RunArgv::default()
    };
    let _ = writeln!(out, "runs:     {}", show(base));
    match &r.shuffle {
        Some(s) => {
            let _ = writeln!(
                out,
                "shuffle:  {}",
                show(RunArgv {
                    shuffle_seed: Some(12345),
                    ..base
                })
            );
            let _ = writeln!(out, "          seed read back with /{}/", s.seed_regex);
        }
        None => {
            let _ = writeln!(
                out,
                "shuffle:  not supported: {}",
                r.unsupported
                    .get("shuffle")
                    .map_or("no seeded shuffle", String::as_str)
            );
        }
    }
    match (&r.workers, r.default_workers(cpus)) {
        (Some(w), Some(d)) => {
            let _ = writeln!(
                out,
                "workers:  default {d} here ({}); workers=2x: {}",
                w.default,
                show(RunArgv {
                    workers: Some(d * 2),
                    ..base
                })
            );
        }
        _ => {
            let _ = writeln!(out, "workers:  not supported");
        }
    }
    match &r.race {
        Some(race) => {
            let _ = writeln!(
                out,
                "race:     {}",
                show(RunArgv {
                    race: Some(&[]),
                    ..base
                })
            );
            let _ = writeln!(
                out,
                "          needs {}; the detector proven live by /{}/ in each run's output",
                race.needs, race.proof_regex
            );
        }
        None => {
            let _ = writeln!(out, "race:     not supported");
        }
    }
    let _ = writeln!(
        out,
        "exit:     {:?} = tests failed; {:?} = usage error and {:?} = no tests are recorded as errors, never as passes or failures",
        r.exit.failed, r.exit.usage, r.exit.no_tests
    );
    for (kind, why) in &r.unsupported {
        let _ = writeln!(out, "not applicable: {kind}: {why}");
    }
    if let Some(f) = &r.faketime {
        let set: Vec<String> = f.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(
            out,
            "faketime: also sets {} ({})",
            set.join(" "),
            f.why.trim()
        );
    }
    out
}

/// One perturbation or matrix in full, or None when no such name exists.
pub fn show(catalog: &Catalog, name: &str) -> Option<String> {
    if let Some(p) = catalog.declared(name) {
        let mut out = String::new();
        let _ = writeln!(out, "name:         {}", p.name);
        let _ = writeln!(out, "perturbation: {}", p.perturb);
        let _ = writeln!(out, "kind:         {}", p.perturb.name());
        let _ = writeln!(out, "settles:      {}", p.settles);
        let _ = writeln!(out, "summary:      {}", p.summary);
        let _ = writeln!(out, "declared in:  {}", p.source);
        return Some(out);
    }
    let m = catalog.matrix(name)?;
    let mut out = String::new();
    let _ = writeln!(out, "matrix:      {}", m.name);
    let _ = writeln!(out, "summary:     {}", m.summary);
    let _ = writeln!(out, "declared in: {}", m.source);
    let _ = writeln!(out, "cells:");
    let w = m.cells.iter().map(String::len).max().unwrap_or(0).max(16);
    for spec in &m.cells {
        let canonical = catalog
            .cell(spec)
            .map(|c| c.canonical().join(" + "))
            .unwrap_or_default();
        let _ = writeln!(out, "  {spec:<w$} {canonical}");
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_and_show_come_from_the_catalog() {
        let c = Catalog::load(None).unwrap();
        let text = list(&c);
        assert!(text.contains("tz-kiritimati"), "{text}");
        assert!(text.contains("tz=Pacific/Kiritimati"), "{text}");
        assert!(text.contains("standard:"), "{text}");
        let one = show(&c, "tz-kathmandu").unwrap();
        assert!(one.contains("perturbation: tz=Asia/Kathmandu"), "{one}");
        assert!(show(&c, "standard").unwrap().contains("tz-pago-pago"));
        assert!(show(&c, "nope").is_none());
    }
}
