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
        "{:<w$}  {:<16}  junit  shuffle  workers  summary",
        "recipe", "status"
    );
    for r in recipes {
        let yes = |b: bool| if b { "yes" } else { "—" };
        let _ = writeln!(
            out,
            "{:<w$}  {:<16}  {:<5}  {:<7}  {:<7}  {}",
            r.name,
            status_text(r.status),
            yes(r.junit.is_some()),
            yes(r.shuffle.is_some()),
            yes(r.workers.is_some()),
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

/// What flakelab would do with a command line.
pub fn recipe_detect(recipes: &[Recipe], command: &[String], cpus: usize) -> String {
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
    let vars = |k: &'static str, v: &str| std::collections::BTreeMap::from([(k, v.to_string())]);
    let show = |inject: &crate::catalog::recipe::Inject, k: &'static str, v: &str| -> String {
        let end = crate::catalog::recipe::runner_words_end(r, command);
        match inject.apply_at(command, &vars(k, v), end) {
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
    if let Some(a) = &r.always {
        let _ = writeln!(out, "always:   {}", show(a, "junit", ""));
    }
    match &r.junit {
        Some(j) => {
            let _ = writeln!(
                out,
                "junit:    {}",
                show(j, "junit", "/path/from/flakelab.xml")
            );
        }
        None => {
            let _ = writeln!(
                out,
                "junit:    not injected (put {{junit}} in the command, or use --junit PATH)"
            );
        }
    }
    match &r.shuffle {
        Some(s) => {
            let kept: Vec<String> = command
                .iter()
                .filter(|w| !s.hides_seed.contains(w))
                .cloned()
                .collect();
            let end = crate::catalog::recipe::runner_words_end(r, &kept);
            let shown = match s.on.apply_at(&kept, &vars("seed", "12345"), end) {
                Ok((argv, _)) => crate::repro::join(&argv),
                Err(e) => format!("(recipe error: {e})"),
            };
            let _ = writeln!(out, "shuffle:  {shown}");
            let _ = writeln!(out, "          seed read back with /{}/", s.seed_regex);
            if let Some(off) = &s.off {
                let _ = writeln!(out, "other cells: {}", show(off, "seed", ""));
            }
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
                show(&w.set, "workers", &(d * 2).to_string())
            );
        }
        _ => {
            let _ = writeln!(out, "workers:  not supported");
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
    for spec in &m.cells {
        let canonical = catalog
            .cell(spec)
            .map(|c| c.canonical().join(" + "))
            .unwrap_or_default();
        let _ = writeln!(out, "  {spec:<16} {canonical}");
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
