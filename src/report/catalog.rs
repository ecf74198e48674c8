//! `flakelab perturbations`: the catalog as text, from the same data the
//! runs use.

use std::fmt::Write as _;

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
