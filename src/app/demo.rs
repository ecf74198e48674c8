//! `flakelab demo`: the `standard` matrix on the bundled example suite, in
//! a temporary directory, with every setting fixed (no layer applies).

use crate::cli;
use crate::context::config::RunFlags;
use crate::error::{Error, Result, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE};
use crate::session::{self, resolve::Layers, Intent};

pub(super) fn demo_cmd(ctx: &super::Ctx, args: &cli::DemoArgs) -> Result<i32> {
    // The warden first, so it removes the project if flakelab is killed
    // (one it cannot start is said by the session); a project a killed
    // flakelab left is removed first.
    let _ = crate::exec::warden::start();
    let dir = crate::exec::owned::OwnedDir::new("flakelab-demo-").map_err(|e| {
        Error::harness(
            format!("cannot create the demo directory: {e}"),
            "check that $TMPDIR is writable",
        )
    })?;
    crate::onboard::demo::create_project(dir.path()).map_err(|e| {
        Error::harness(
            format!("cannot write the demo project: {e}"),
            "check that $TMPDIR is writable",
        )
    })?;
    let exe = std::env::current_exe().map_err(|e| {
        Error::harness(
            format!("cannot find flakelab's own executable: {e}"),
            "run flakelab by its path",
        )
    })?;
    eprintln!(
        "flakelab demo: the bundled example suite plants one failure per flake class beside controls that always pass;\n\
         running the `standard` matrix on it, {} runs per cell, in {}",
        args.runs,
        dir.path().display()
    );
    let intent = Intent {
        command: vec![
            exe.display().to_string(),
            "__demo-suite".into(),
            "--project".into(),
            dir.path().display().to_string(),
        ],
        dir: Some(dir.path().to_path_buf()),
        seed: Some(args.seed),
        flags: RunFlags {
            runs: Some(args.runs),
            timeout: Some("60s".into()),
            confidence: Some(0.95),
            matrix: Some(vec!["standard".into()]),
            jobs: Some(args.jobs as usize),
            kill_grace: Some("5s".into()),
            junit: None,
        },
        shams: true,
        ..Intent::default()
    };
    let spec = session::resolve(intent, &Layers::none(), &ctx.executor)?;
    let code = super::run_and_report(&spec, args.format)?;
    eprintln!("{}", crate::onboard::demo::LEGEND);
    if let Some(path) = &args.html {
        write_html(&spec, path)?;
    }
    if args.keep {
        let kept = dir.keep();
        eprintln!(
            "flakelab demo: kept {} (store in .flakelab/): `flakelab report -C {}` re-renders it",
            kept.display(),
            kept.display()
        );
    }
    Ok(match code {
        EXIT_INTERRUPTED | EXIT_USAGE => code,
        _ => EXIT_OK,
    })
}

/// `--html`: the demo session's HTML report, written to `path`; its path
/// is printed.
fn write_html(spec: &session::SessionSpec, path: &std::path::Path) -> Result<()> {
    let Some(latest) = spec.store.session(None)? else {
        return Ok(());
    };
    let (report, _) = super::report_cmd::shown(&spec.store, &latest)?;
    let page = spec
        .redaction
        .text(&crate::report::html::render(&report))
        .into_owned();
    std::fs::write(path, page).map_err(|e| {
        Error::usage(
            format!("cannot write the HTML report to {}: {e}", path.display()),
            "give --html a writable file",
        )
    })?;
    let shown = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    eprintln!(
        "flakelab demo: wrote the HTML report to {}",
        shown.display()
    );
    println!("{}", shown.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    /// Every command the legend suggests is a whole `flakelab` command that
    /// the argument parser takes as written.
    #[test]
    fn every_command_the_legend_suggests_is_accepted() {
        let snippets: Vec<&str> = crate::onboard::demo::LEGEND
            .split('`')
            .skip(1)
            .step_by(2)
            .collect();
        assert!(!snippets.is_empty(), "the legend suggests nothing");
        for s in snippets {
            let words = shell_words::split(s).unwrap();
            assert_eq!(words[0], "flakelab", "`{s}` is not a whole command");
            if let Err(e) = crate::cli::Cli::try_parse_from(&words) {
                panic!("the legend suggests `{s}`, which flakelab refuses: {e}");
            }
        }
    }
}
