//! `flakelab report` and `flakelab evidence`: a stored session re-rendered
//! through the same model the live output used ([`shown`]): the report,
//! the screen design's confirmations, and `--confirm`'s replays.

use std::path::Path;

use crate::cli;
use crate::error::{Error, Result, EXIT_OK};
use crate::exec::Executor;
use crate::record::SessionRecord;
use crate::redact::Redaction;
use crate::report::{self, Report};
use crate::session::{resolve::store_root, subject_dir};
use crate::store::Store;

/// What rides along the report's pass over a session's runs: the
/// evidence's facts and the screen runs' counts (for the screen's verdicts).
#[derive(Default)]
struct Along {
    facts: crate::evidence::RunFacts,
    screen_runs: crate::report::screen::ScreenRuns,
}

impl report::assemble::Along for Along {
    fn add(&mut self, run: &crate::store::RunView) {
        self.facts.add(run);
        self.screen_runs.add(run);
    }

    fn screened(&self, report: &mut Report, screen: &crate::screen::ScreenRecord) {
        crate::report::screen::apply(report, screen, &self.screen_runs);
    }
}

/// The report of `session` as the user sees it, live or later
/// ([`report::assemble::shown`]), with the evidence's facts about its runs.
pub(super) fn shown(
    store: &Store,
    session: &SessionRecord,
) -> Result<(Report, crate::evidence::RunFacts)> {
    let mut along = Along::default();
    let report = report::assemble::shown(store, session, &mut along)?;
    Ok((report, along.facts))
}

/// The store of a command that reads one: it must exist.
pub(super) fn existing_store(store: &cli::StoreArgs) -> Result<(Store, std::path::PathBuf)> {
    let dir = subject_dir(store.dir.as_deref())?;
    let root = store_root(store.store.as_deref(), &dir);
    if !root.is_dir() {
        return Err(Error::usage(
            format!("no store at {}", root.display()),
            "run `flakelab run` first, or point at a store with --store DIR (a plain `flakelab demo` deletes its store when it ends: `flakelab demo --keep` keeps it and prints where)",
        ));
    }
    Ok((Store::open(&root)?, dir))
}

pub(super) fn no_session(what: &str, wanted: Option<&str>, root: &Path) -> Error {
    Error::usage(
        match wanted {
            Some(s) => format!("no {what} `{s}` in {}", root.display()),
            None => format!("no session recorded in {}", root.display()),
        },
        "list sessions with `cut -c1-200 .flakelab/sessions.jsonl`, or run `flakelab run` first",
    )
}

pub(super) fn report_cmd(args: &cli::ReportArgs) -> Result<i32> {
    let (store, dir) = existing_store(&args.store)?;
    let session = store
        .session(args.session.as_deref())?
        .ok_or_else(|| no_session("session", args.session.as_deref(), store.root()))?;
    let (mut report, _) = shown(&store, &session)?;
    report.ci_history = super::history::beside(&store, &report)?;
    let redaction =
        Redaction::new(&crate::context::config::redact_names(&dir)?).with_own_environment();
    super::print_report(&report, args.format, &redaction);
    if args.format != cli::Format::Github {
        report::outputs::auto_summary(&report, args.summary, &redaction);
    }
    Ok(report.exit_code())
}

/// `flakelab evidence`: the evidence block of a session, or of a ladder.
pub(super) fn evidence_cmd(ctx: &super::Ctx, args: &cli::EvidenceArgs) -> Result<i32> {
    let (store, dir) = existing_store(&args.store)?;
    let redaction =
        Redaction::new(&crate::context::config::redact_names(&dir)?).with_own_environment();
    let (ladders, _) = store.load_ladders()?;
    let by_ladder = args
        .session
        .as_deref()
        .and_then(|id| ladders.iter().find(|l| l.id == id));
    let wanted = match by_ladder {
        Some(l) => Some(crate::evidence::ladder_session(l).ok_or_else(|| {
            Error::usage(
                format!("ladder `{}` ran no rung", l.id),
                "run the ladder again; a ladder with no session has no evidence",
            )
        })?),
        None => args.session.as_deref(),
    };
    let session = store
        .session(wanted)?
        .ok_or_else(|| no_session("session or ladder", wanted, store.root()))?;
    let ladder = by_ladder.or_else(|| crate::evidence::ladder_of(&ladders, &session.id));
    let version = runner_version(&ctx.executor, &session);
    let (mut report, facts) = shown(&store, &session)?;
    report.ci_history = super::history::beside(&store, &report)?;
    let shown_report = report.clone();
    let mut evidence =
        crate::evidence::build_from(&session, &facts, report, ladder, version, &redaction);
    evidence.bisects = (store.bisects_of(&session.id)?.iter())
        .map(crate::evidence::BisectLine::from)
        .collect();
    let text = match args.format {
        cli::EvidenceFormat::Markdown => crate::evidence::markdown::render(&evidence),
        cli::EvidenceFormat::Json => crate::evidence::render_json(&evidence),
        cli::EvidenceFormat::Html => crate::evidence::html::render(&evidence, &shown_report),
    };
    super::print_text(&redaction.text(&text));
    Ok(EXIT_OK)
}

/// The runner version for the evidence: the one recorded at run time, else
/// the recipe's version command run now (and said so).
fn runner_version(executor: &Executor, session: &SessionRecord) -> crate::evidence::RunnerVersion {
    use crate::evidence::RunnerVersion;
    if let Some(v) = &session.runner_version {
        return RunnerVersion::Recorded(v.clone());
    }
    let Some(name) = &session.runner else {
        return RunnerVersion::Unknown("no recipe".into());
    };
    let recipes =
        crate::catalog::recipe::load(Some(&session.cwd.join(".flakelab").join("recipes")))
            .unwrap_or_default();
    match recipes.iter().find(|r| &r.name == name) {
        Some(r) if r.version.is_some() => {
            match crate::catalog::recipe::version_argv(r, &session.command)
                .and_then(|argv| executor.version(&argv, &session.cwd))
            {
                Some(v) => RunnerVersion::ReadNow(v),
                None => RunnerVersion::Unknown(
                    "not recorded at run time, and its version command failed now".into(),
                ),
            }
        }
        _ => RunnerVersion::Unknown(format!(
            "not recorded, and the `{name}` recipe declares no version command"
        )),
    }
}
