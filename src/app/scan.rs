//! `flakelab scan`: scans a tree, checks the ledger, proves the findings
//! by running them (`--prove`, `app::prove`), renders through
//! `report::scan` and turns the ledger check into the exit code.

use crate::cli::{Format, ScanArgs};
use crate::error::{Error, Result};
use crate::report;
use crate::scan::{self, ledger, ScanOptions};

/// Runs `flakelab scan`; returns the exit code.
pub fn scan_cmd(ctx: &super::Ctx, args: &ScanArgs) -> Result<i32> {
    let root = args.path.clone().unwrap_or_else(|| ".".into());
    if !root.is_dir() {
        return Err(Error::usage(
            format!("{} is not a directory", root.display()),
            "give the tree to scan: `flakelab scan tests`",
        ));
    }
    let today = match &args.today {
        Some(d) => d.parse::<jiff::civil::Date>().map_err(|e| {
            Error::usage(format!("--today {d}: {e}"), "write the date as YYYY-MM-DD")
        })?,
        None => jiff::Timestamp::now()
            .to_zoned(jiff::tz::TimeZone::UTC)
            .date(),
    };
    let ledger = match &args.ledger {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                Error::usage(
                    format!("cannot read the ledger {}: {e}", path.display()),
                    "give an existing ledger file (see `flakelab scan --help`)",
                )
            })?;
            Some(ledger::parse(&text).map_err(|e| {
                Error::usage(
                    format!("ledger {}: {e}", path.display()),
                    "fix the entry (see `flakelab scan --help` for the ledger's fields)",
                )
            })?)
        }
        None => None,
    };
    let opts = ScanOptions {
        today,
        exclude: args.exclude.clone(),
    };
    let mut found = scan::scan(&root, &opts).map_err(|e| {
        Error::usage(
            format!("cannot scan {}: {e}", root.display()),
            "check the path is readable",
        )
    })?;
    let empty = ledger::Ledger {
        schema: ledger::LEDGER_SCHEMA.into(),
        entries: Vec::new(),
    };
    if ledger.is_some() || args.strict {
        let keys: Vec<_> = found.findings.iter().map(scan::Finding::key).collect();
        found.ledger = Some(ledger::check(ledger.as_ref().unwrap_or(&empty), &keys));
    }
    let interrupted = if args.prove {
        if matches!(args.format, Format::Html | Format::Github) {
            return Err(Error::usage(
                "`--format html` and `--format github` are not available for `flakelab scan`",
                "use --format table, markdown or json",
            ));
        }
        let root = root.canonicalize().unwrap_or(root.clone());
        super::runtime()?.block_on(super::prove::prove(ctx, &root, args, &mut found))?
    } else {
        false
    };
    let text = match args.format {
        Format::Table => report::scan::table(&found),
        Format::Markdown => report::scan::markdown(&found),
        Format::Html | Format::Github => {
            return Err(crate::error::Error::usage(
                format!(
                    "`--format {}` is not available for `flakelab scan`",
                    if args.format == Format::Html {
                        "html"
                    } else {
                        "github"
                    }
                ),
                "use --format table, markdown or json",
            ))
        }
        Format::Json => report::scan::json(&found),
    };
    super::print_text(&text);
    let fails = args.strict && found.ledger.as_ref().is_some_and(ledger::Check::fails);
    if interrupted {
        return Ok(crate::stats::verdict::Verdict::Interrupted.exit_code());
    }
    Ok(if fails { 1 } else { 0 })
}
