//! Renders a scan (`crate::scan::ScanReport`): a terminal table, Markdown,
//! or JSON (schema `flakelab.scan/1`). Every rendering ends with the
//! class-coverage block. Also a `scan --prove` proof in words, and a prove
//! session's block in `flakelab report`.

use std::fmt::Write as _;

use crate::scan::prove::{Proof, ProveRecord, Status};
use crate::scan::{Finding, ScanReport};

/// A proof in words: the status with its counts and p-value, the bound at
/// its N, or why it stays unconfirmed and the command to run.
pub fn proof_text(p: &Proof) -> String {
    let short = crate::report::short_p;
    let session = p
        .session
        .as_deref()
        .map(|s| format!(" (session {s})"))
        .unwrap_or_default();
    let counts = p.counts.as_ref().map(|t| {
        let sham = match (&p.sham, t.sham) {
            (Some(name), Some((k, n))) => format!(", {k} of {n} under its sham {name}"),
            _ => String::new(),
        };
        format!(
            "{} failed {} of {} under {} against {} of {} at baseline{sham}; p = {}, Holm over {} {}",
            t.test,
            t.cell.0,
            t.cell.1,
            p.cell.as_deref().unwrap_or("the cell"),
            t.baseline.0,
            t.baseline.1,
            short(p.p.unwrap_or(1.0)),
            p.family.unwrap_or(1),
            short(p.adjusted_p.unwrap_or(1.0)),
        )
    });
    let note = p
        .reason
        .as_deref()
        .map(|r| format!("; {r}"))
        .unwrap_or_default();
    match (p.status, counts) {
        (Status::Proven, Some(c)) => format!("proven: {c}{note}{session}"),
        (Status::Flips, Some(c)) => {
            format!("flips: {c}: a site the scan missed{note}{session}")
        }
        (Status::NotShown, Some(c)) => format!(
            "not shown: {c}; at this N the cell raises its failure rate by less than {:.0}% ({:.0}% confidence){note}{session}",
            p.bound.unwrap_or(1.0) * 100.0,
            p.confidence * 100.0
        ),
        (status, _) => format!(
            "{}: {}; run: {}",
            status.word(),
            p.reason.as_deref().unwrap_or("not measured"),
            p.command.as_deref().unwrap_or("flakelab scan --prove")
        ),
    }
}

/// A prove session's block in `flakelab report`: each finding's and
/// control's status, one line each.
pub fn prove_lines(record: &ProveRecord) -> Vec<String> {
    let mut out = vec![format!(
        "scan --prove under {}: {} finding(s), {} control(s)",
        record.cell,
        record.findings.len(),
        record.controls.len()
    )];
    for f in &record.findings {
        out.push(format!(
            "  {}  {}  {}: {}",
            f.site,
            f.symbol,
            f.class.name(),
            proof_text(&f.proof)
        ));
    }
    for c in &record.controls {
        out.push(format!("  control {}: {}", c.test, proof_text(&c.proof)));
    }
    out
}

/// The scan as one JSON document.
pub fn json(scan: &ScanReport) -> String {
    let mut s = serde_json::to_string_pretty(scan).expect("a scan always serialises");
    s.push('\n');
    s
}

fn proposal(f: &Finding) -> String {
    match (&f.perturbation, &f.settle) {
        (Some(p), _) if f.also.is_empty() => p.clone(),
        (Some(p), _) => format!("{p} or {} (each on its own)", f.also.join(" or ")),
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
        if !f.beside.is_empty() {
            let _ = writeln!(out, "  beside:  {}", f.beside.join(", "));
        }
        let _ = writeln!(out, "  perturb: {}", proposal(f));
        match &f.proof {
            Some(p) => {
                let _ = writeln!(out, "  status:  {}", proof_text(p));
            }
            None => {
                let _ = writeln!(out, "  status:  {}: {}", f.status, f.command);
            }
        }
        let _ = writeln!(out, "  fix:     {}", f.fix);
    }
    if !scan.controls.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "controls (tests no finding reaches, run beside them):");
        for c in &scan.controls {
            let _ = writeln!(out, "  {}: {}", c.test, proof_text(&c.proof));
        }
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
                "| `{}:{}` | `{}` | {} [{}]: {} | {} | {} | {} | {} |",
                f.file,
                f.line,
                cell(&f.symbol),
                f.class.name(),
                f.bucket,
                cell(&f.detail),
                cell(&f.tests.join(", ")),
                cell(&proposal(f)),
                match &f.proof {
                    Some(p) => cell(&proof_text(p)),
                    None => format!("{}: `{}`", f.status, cell(&f.command)),
                },
                cell(&f.fix)
            );
        }
        let _ = writeln!(out);
    }
    if !scan.controls.is_empty() {
        let _ = writeln!(
            out,
            "Controls (tests no finding reaches, run beside them):\n"
        );
        for c in &scan.controls {
            let _ = writeln!(
                out,
                "- `{}`: {}",
                cell(&c.test),
                cell(&proof_text(&c.proof))
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
