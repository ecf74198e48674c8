//! `flakelab quarantine --format F`: the tests history proves
//! nondeterministic (or, with `--min-rate`, fail at least that often), in
//! the runner's own syntax on stdout; what a syntax cannot express is named
//! on stderr.

use crate::cli::{QuarantineArgs, QuarantineFormat};
use crate::error::{Error, Result, EXIT_OK};
use crate::history::analyse::Finding;
use crate::history::quarantine::{emit, emit_go_run, go_list, phpunit_syntax, Entry, Syntax};
use crate::store::Store;

pub(super) fn quarantine_cmd(args: &QuarantineArgs) -> Result<i32> {
    let Some(format) = args.format else {
        // --add or --release (clap requires one of them without --format).
        return super::ledger::ledger_cmd(args);
    };
    let store = Store::at(&super::ingest::history_store(&args.store.store));
    let (analysis, stats) = super::history::load(&store, &args.analysis)?;
    super::history::warn_skipped(&stats);
    let entries: Vec<Entry> = analysis
        .tests
        .iter()
        .filter(|t| {
            let proven = t.finding == Finding::SameCommit
                && t.same_commit.iter().any(|s| s.failed >= args.min_failures);
            let rate = args.min_rate > 0.0 && t.contexts.iter().any(|c| c.low >= args.min_rate);
            proven || rate
        })
        .map(|t| Entry {
            test: t.test.clone(),
            evidence: t.statement.clone(),
            file: t.file.clone(),
        })
        .collect();
    // And the quarantine ledger's entries, expired or not (`check` fails
    // on those), until they are released.
    let mut entries = entries;
    for e in super::ledger::entries(&args.ledger)? {
        if !entries.iter().any(|x| x.test == e.id) {
            entries.push(Entry {
                evidence: format!(
                    "{} (ledger: owner {}, ticket {}, until {})",
                    e.evidence, e.owner, e.ticket, e.expires
                ),
                test: e.id,
                file: None,
            });
        }
    }
    let syntax = match format {
        QuarantineFormat::Pytest => Syntax::Pytest,
        QuarantineFormat::Go => Syntax::Go,
        QuarantineFormat::Jest => Syntax::Jest,
        QuarantineFormat::Vitest => Syntax::Vitest,
        QuarantineFormat::CargoNextest => Syntax::CargoNextest,
        QuarantineFormat::Rspec => Syntax::Rspec,
        QuarantineFormat::Phpunit => {
            // The project's own PHPUnit first (Composer's), else the one
            // on PATH: `--exclude-filter` exists from PHPUnit 11 on.
            let local = std::path::Path::new("vendor/bin/phpunit");
            let program = if local.is_file() {
                "vendor/bin/phpunit"
            } else {
                "phpunit"
            };
            let version = crate::exec::query::query(program, &["--version"]);
            let version = version
                .as_deref()
                .and_then(|v| v.lines().find(|l| l.contains("PHPUnit")));
            let syntax = phpunit_syntax(version);
            eprintln!(
                "note: {} for {}",
                if syntax == Syntax::Phpunit {
                    "--exclude-filter"
                } else {
                    "--filter with a negative lookahead"
                },
                version.map_or_else(
                    || format!(
                        "no PHPUnit found (`{program} --version`): every PHPUnit since 9 reads it"
                    ),
                    |v| v.split(" by ").next().unwrap_or(v).trim().to_string()
                )
            );
            syntax
        }
        QuarantineFormat::Yaml => Syntax::Yaml,
    };
    let out = match (&args.go_list, syntax) {
        (Some(path), Syntax::Go) => {
            let text = if path.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin())
            } else {
                std::fs::read_to_string(path)
            }
            .map_err(|e| {
                Error::usage(
                    format!("cannot read --go-list {}: {e}", path.display()),
                    "give the file `go test -list . ./... > go-tests.txt` wrote, or `-` to read it from stdin",
                )
            })?;
            let listed = go_list(&text).map_err(|m| {
                Error::usage(
                    format!("--go-list {}: {m}", path.display()),
                    "run `go test -list . ./...` again and pass its whole output",
                )
            })?;
            emit_go_run(&entries, &listed)
        }
        (Some(_), _) => {
            return Err(Error::usage(
                "--go-list is for --format go",
                "drop --go-list, or use --format go",
            ))
        }
        (None, Syntax::Go) => {
            let out = emit(syntax, &entries);
            if !out.text.is_empty() {
                eprintln!("note: `go test -skip` needs Go 1.20 or later; for an older go, pass --go-list FILE (the output of `go test -list . ./...`) for the same list as a `-run` complement");
            }
            out
        }
        (None, _) => emit(syntax, &entries),
    };
    for l in &out.left_out {
        eprintln!("note: left out {l}");
    }
    super::print_text(&out.text);
    Ok(EXIT_OK)
}
