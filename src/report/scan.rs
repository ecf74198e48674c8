//! Renders a scan (`crate::scan::ScanReport`): a terminal table, Markdown,
//! or JSON (schema `flakelab.scan/1`). Every rendering ends with the
//! class-coverage block.

use std::fmt::Write as _;

use crate::scan::{Finding, ScanReport};

/// The scan as one JSON document.
pub fn json(scan: &ScanReport) -> String {
    let mut s = serde_json::to_string_pretty(scan).expect("a scan always serialises");
    s.push('\n');
    s
}

fn proposal(f: &Finding) -> String {
    match (&f.perturbation, &f.settle) {
        (Some(p), _) => p.clone(),
        (None, Some(why)) => why.clone(),
        (None, None) => String::new(),
    }
}

fn files_line(scan: &ScanReport) -> String {
    let files: Vec<String> = scan
        .files
        .iter()
        .map(|(l, n)| format!("{} {n}", l.name()))
        .collect();
    if files.is_empty() {
        "no files".into()
    } else {
        files.join(", ")
    }
}

/// The scan as a terminal listing.
pub fn table(scan: &ScanReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "scan: {} finding(s) in {} (tests by static reach)",
        scan.findings.len(),
        files_line(scan)
    );
    for s in &scan.skipped {
        let _ = writeln!(out, "  skipped {}: {}", s.path, s.reason);
    }
    for p in &scan.parse_errors {
        let _ = writeln!(
            out,
            "  {p}: parsed with errors (scanned as far as it parsed)"
        );
    }
    for f in &scan.findings {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{}:{}  {}  {} [{}]",
            f.file,
            f.line,
            f.symbol,
            f.class.name(),
            f.bucket
        );
        let _ = writeln!(out, "  seen:    {}", f.detail);
        let _ = writeln!(out, "  tests:   {}", f.tests.join(", "));
        let _ = writeln!(out, "  perturb: {}", proposal(f));
        let _ = writeln!(out, "  status:  {}: {}", f.status, f.command);
        let _ = writeln!(out, "  fix:     {}", f.fix);
    }
    if let Some(l) = &scan.ledger {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "ledger: {} accepted, {} new, {} stale",
            l.accepted,
            l.new.len(),
            l.stale.len()
        );
        for (f, s, c, b) in &l.new {
            let _ = writeln!(out, "  new:   {f}  {s}  {c} [{b}]");
        }
        for (f, s, c, b) in &l.stale {
            let _ = writeln!(
                out,
                "  stale: {f}  {s}  {c} [{b}] (no longer found: remove the entry)"
            );
        }
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "coverage (class, sites, findings, scanned):");
    for c in &scan.coverage {
        let _ = writeln!(
            out,
            "  {:<14} {:>5} {:>5}  {}; {}",
            c.class.name(),
            c.sites,
            c.findings,
            c.scanned,
            c.class.constructs()
        );
    }
    out
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The scan as GitHub-flavoured Markdown.
pub fn markdown(scan: &ScanReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## flakelab scan\n");
    let _ = writeln!(
        out,
        "{} finding(s) in {}; tests by static reach; every finding is unconfirmed until a run shows it.\n",
        scan.findings.len(),
        files_line(scan)
    );
    if !scan.findings.is_empty() {
        let _ = writeln!(
            out,
            "| site | symbol | class | tests | perturbation | status | fix |"
        );
        let _ = writeln!(out, "| --- | --- | --- | --- | --- | --- | --- |");
        for f in &scan.findings {
            let _ = writeln!(
                out,
                "| `{}:{}` | `{}` | {} [{}]: {} | {} | {} | {}: `{}` | {} |",
                f.file,
                f.line,
                cell(&f.symbol),
                f.class.name(),
                f.bucket,
                cell(&f.detail),
                cell(&f.tests.join(", ")),
                cell(&proposal(f)),
                f.status,
                cell(&f.command),
                cell(&f.fix)
            );
        }
        let _ = writeln!(out);
    }
    if let Some(l) = &scan.ledger {
        let _ = writeln!(
            out,
            "Ledger: {} accepted, {} new, {} stale.\n",
            l.accepted,
            l.new.len(),
            l.stale.len()
        );
        for (f, s, c, b) in l.new.iter() {
            let _ = writeln!(out, "- new: `{f}` `{}` {c} [{b}]", cell(s));
        }
        for (f, s, c, b) in l.stale.iter() {
            let _ = writeln!(out, "- stale: `{f}` `{}` {c} [{b}]", cell(s));
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "| class | sites | findings | scanned |");
    let _ = writeln!(out, "| --- | ---: | ---: | --- |");
    for c in &scan.coverage {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {}; {} |",
            c.class.name(),
            c.sites,
            c.findings,
            cell(&c.scanned),
            cell(c.class.constructs())
        );
    }
    out
}
