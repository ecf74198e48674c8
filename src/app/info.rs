//! The subcommands that measure nothing: `init`, `plan`, `doctor`,
//! `perturbations` and `recipes`.

use crate::catalog::Catalog;
use crate::cli;
use crate::error::{Error, Result, EXIT_OK};
use crate::perturb::HostFacts;
use crate::plan;
use crate::session::subject_dir;

pub(super) fn init_cmd(args: &cli::InitArgs) -> Result<i32> {
    let dir = subject_dir(args.dir.as_deref())?;
    if let Some(system) = args.ci {
        if !args.command.is_empty() {
            return Err(Error::usage(
                "--ci writes a CI pipeline, which runs the `[lane] command` of flakelab.toml, not a command after `--`",
                "run `flakelab init -- CMD` for flakelab.toml, then `flakelab init --ci SYSTEM`",
            ));
        }
        super::print_text(&crate::onboard::init::init_ci(&dir, system, args.force)?);
        return Ok(EXIT_OK);
    }
    super::print_text(&crate::onboard::init::init(
        &dir,
        &args.command,
        args.force,
    )?);
    Ok(EXIT_OK)
}

pub(super) fn plan_cmd(args: &cli::PlanArgs) -> Result<i32> {
    let in_unit = |x: f64| x > 0.0 && x < 1.0;
    if !in_unit(args.rate) || !in_unit(args.confidence) {
        return Err(Error::usage(
            format!(
                "--rate {} and --confidence {} must both be in (0, 1)",
                args.rate, args.confidence
            ),
            "e.g. `flakelab plan --rate 0.01 --confidence 0.95`",
        ));
    }
    let n = plan::runs_needed(args.rate, args.confidence);
    println!(
        "{n} runs to see at least one failure of a {}% failure rate with {}% confidence",
        percent(args.rate),
        percent(args.confidence)
    );
    println!(
        "(0 failures in {n} runs bounds the rate below {} at that confidence)",
        crate::stats::format_bound(crate::stats::proportion(0, n, args.confidence).high)
            .trim_start_matches("rate < ")
    );
    Ok(EXIT_OK)
}

/// `0.01` → `1`, `0.005` → `0.5`: a percentage without float noise.
fn percent(x: f64) -> String {
    let s = format!("{:.4}", x * 100.0);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

pub(super) fn perturbations_cmd(args: &cli::PerturbationsArgs) -> Result<i32> {
    let dir = subject_dir(args.dir.as_deref())?;
    let catalog = Catalog::load(Some(&dir.join(".flakelab").join("perturbations")))?;
    let text = match &args.action {
        None => crate::report::catalog::list(&catalog),
        Some(cli::PerturbationsAction::Show { name }) => {
            crate::report::catalog::show(&catalog, name).ok_or_else(|| {
                Error::usage(
                    format!("no perturbation or matrix named `{name}`"),
                    "`flakelab perturbations` lists them",
                )
            })?
        }
    };
    super::print_text(&text);
    Ok(EXIT_OK)
}

pub(super) fn recipes_cmd(args: &cli::RecipesArgs) -> Result<i32> {
    let dir = subject_dir(args.dir.as_deref())?;
    let recipes = crate::catalog::recipe::load(Some(&dir.join(".flakelab").join("recipes")))?;
    let text = match &args.action {
        None => crate::report::catalog::recipes_list(&recipes),
        Some(cli::RecipesAction::Show { name }) => {
            let r = recipes.iter().find(|r| &r.name == name).ok_or_else(|| {
                Error::usage(
                    format!("no recipe named `{name}`"),
                    "`flakelab recipes` lists them",
                )
            })?;
            crate::report::catalog::recipe_show(r)
        }
        Some(cli::RecipesAction::Detect { command }) => {
            let dir = std::env::current_dir().unwrap_or_default();
            let source = |r: &crate::catalog::recipe::Recipe| {
                use crate::report::catalog::DetectReport;
                use crate::session::JunitSource;
                let real = crate::exec::executor::Executor::Real;
                match crate::session::per_test::default_source(Some(r), command, &dir, &real) {
                    Some(JunitSource::Runner) => DetectReport::PerTest,
                    Some(_) => DetectReport::Junit,
                    None => DetectReport::None,
                }
            };
            crate::report::catalog::recipe_detect(&recipes, command, super::num_cpus(), &source)
        }
    };
    super::print_text(&text);
    Ok(EXIT_OK)
}

pub(super) fn doctor_cmd() -> Result<i32> {
    let checks = crate::onboard::doctor::run(&HostFacts::detect());
    print!("{}", crate::onboard::doctor::render(&checks));
    Ok(if checks.iter().any(|c| c.needed && !c.ok) {
        crate::error::EXIT_NOT_APPLIED
    } else {
        EXIT_OK
    })
}
