//! The hidden helper subcommands: `__probe` (what a probe child sees),
//! `__exec` (apply netns, limits and pinning, then exec the subject) and
//! `__demo-suite` (the bundled example suite). Their bodies live with the
//! code they serve: `perturb::probe::helper` (each kind's child side in
//! `perturb::kind`), `perturb::isolate::helper`,
//! `crate::onboard::demo`.

use crate::cli;
use crate::error::{Error, Result, EXIT_OK};
use crate::perturb::{isolate, probe::helper};

pub(super) fn probe_cmd(args: &cli::ProbeArgs) -> Result<i32> {
    let text = helper::report(&args.what, &args.args)
        .map_err(|e| Error::usage(e, "`__probe` is flakelab's own probe child"))?;
    super::print_text(&text);
    Ok(EXIT_OK)
}

pub(super) fn exec_cmd(args: &cli::ExecArgs) -> Result<i32> {
    let failed = isolate::helper(
        args.netns,
        &args.rlimit,
        args.cpus.as_deref(),
        &args.command,
    );
    eprintln!("{failed}");
    Ok(isolate::SETUP_EXIT)
}

pub(super) fn demo_suite_cmd(args: &cli::DemoSuiteArgs) -> Result<i32> {
    // `--shuffle` without a seed: a fresh one, printed like any other.
    let seed = args.seed.or_else(|| {
        args.shuffle.then(|| {
            use std::hash::{BuildHasher, RandomState};
            RandomState::new().hash_one(std::process::id()) % 1_000_000_000
        })
    });
    let listed = match &args.order {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .map_err(|e| {
                    crate::error::Error::usage(
                        format!("cannot read the order file {}: {e}", path.display()),
                        "give --order a file of test names, one a line",
                    )
                })?
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(String::from)
                .collect::<Vec<String>>(),
        ),
        None => None,
    };
    let opts = crate::onboard::demo::Options {
        listed: listed.as_deref(),
        only: args.only.as_deref(),
        seed,
        workers: args.workers.map(|n| n as usize),
        junit: args.junit.as_deref(),
    };
    Ok(crate::onboard::demo::run_suite(
        &args.project,
        &opts,
        &mut std::io::stdout().lock(),
    ))
}
