//! Running one [`SessionSpec`]: probe every cell through the executor
//! (`launch`), record the session, plan its runs (interleaved, seeded),
//! turn each planned run into a job (`job`), hand the jobs to
//! `exec::schedule`, record each run's end (`finish`) in the store, then
//! read the session back. Nothing here prints a report.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

use super::finish::finish_record;
use super::job::plan_process;
use super::launch::probe_cell;
use super::{JunitSource, SessionSpec};
use crate::context::host;
use crate::error::Result;
use crate::exec::job::Job;
use crate::exec::result::Stop;
use crate::exec::schedule::{self, Event};
use crate::plan::{self, RunSpec};
use crate::record::{CellRecord, Outcome, RunRecord, SessionRecord, SESSION_SCHEMA};
use crate::report::progress::Progress;

/// Called after each replicate block with the session's runs so far;
/// returns true to stop the session there (a sequential decision).
pub type OnBlock<'a> = &'a mut dyn FnMut(&[RunRecord]) -> bool;

/// A new session id: the UTC time and 16 random bits, never one this
/// process has handed out before. Sessions that start in the same second
/// (a confirmation's replays, a screen's rounds, bisect's steps) would
/// otherwise share an id one time in 65,536 per pair, and a second session
/// under an id hides the first's record and joins its runs file.
pub fn new_session_id() -> String {
    static ISSUED: std::sync::Mutex<std::collections::BTreeSet<String>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    loop {
        let now = jiff::Timestamp::now().to_zoned(jiff::tz::TimeZone::UTC);
        let id = format!(
            "{}-{:04x}",
            now.strftime("%Y%m%d-%H%M%S"),
            rand::random::<u16>()
        );
        let mut issued = ISSUED.lock().unwrap_or_else(|e| e.into_inner());
        if issued.insert(id.clone()) {
            return id;
        }
    }
}

/// A new session id (see [`new_session_id`]) under which `store` holds no
/// runs yet: an id another flakelab gave a session in the same second is
/// passed over.
fn unused_session_id(store: &crate::store::Store) -> String {
    loop {
        let id = new_session_id();
        if !store.holds_runs_of(&id) {
            return id;
        }
    }
}

/// Now, as recorded (RFC 3339, milliseconds).
pub fn now_text() -> String {
    jiff::Timestamp::now()
        .round(jiff::Unit::Millisecond)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// A finished (or interrupted) session. Its runs are in the store, not
/// here: a session holds no run once it has ended ([`SessionDone::runs`]
/// reads them back for the callers that need them all).
pub struct SessionDone {
    /// The session's record.
    pub session: SessionRecord,
    /// Whether a stop signal cut it short.
    pub interrupted: bool,
    /// The most runs it held in memory at once (each a job and its starting
    /// record, from just before it started until it was stored): the runs
    /// in flight and one ahead, whatever the plan's length.
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "read by the memory-bound test only")
    )]
    pub held_at_most: usize,
}

impl SessionDone {
    /// The session's runs read back from `store`, in index order, with how
    /// the store's runs file read.
    pub fn runs(
        &self,
        store: &crate::store::Store,
    ) -> Result<(Vec<RunRecord>, crate::store::LoadStats)> {
        store.runs_of(&self.session.id)
    }
}

/// Probes the cells, records the session and runs its plan, building each
/// run's launch as it starts. `None` when Ctrl-C came while probing (nothing was run).
pub async fn run_session(
    settings: &SessionSpec,
    stop: &tokio::sync::watch::Receiver<Stop>,
) -> Result<Option<SessionDone>> {
    run_session_looking(settings, stop, None).await
}

/// [`run_session`], calling `on_block` after each replicate block (every
/// cell once) and stopping early when it says so.
pub async fn run_session_looking(
    settings: &SessionSpec,
    stop: &tokio::sync::watch::Receiver<Stop>,
    mut on_block: Option<OnBlock<'_>>,
) -> Result<Option<SessionDone>> {
    // `netns` cells get one namespace each, from the probes to the end.
    let _netns = crate::exec::cellns::hold();
    let session_id = match (&settings.sharding, &settings.named) {
        (Some(s), _) => s.session_id.clone(),
        (None, Some(id)) => id.clone(),
        (None, None) => unused_session_id(&settings.store),
    };
    let started_at = now_text();
    let names: Vec<String> = settings.cells.iter().map(|(c, _)| c.name.clone()).collect();
    let replay = &settings.replay;
    let mut plan = plan::build(&names, settings.runs, settings.seed);
    plan.every_seed = replay.seed;
    plan.first_seed = replay.first_seed;

    let mut cell_records = Vec::new();
    let known = settings.known.as_ref();
    for (i, (cell, prepared)) in settings.cells.iter().enumerate() {
        if let Some(record) = known.and_then(|k| k.cells.get(&cell.name)) {
            cell_records.push(record.clone());
            continue;
        }
        cell_records.push(probe_cell(settings, &session_id, i, cell, prepared, stop).await?);
        if *stop.borrow() != Stop::Run {
            eprintln!("flakelab: interrupted while probing; nothing was run");
            return Ok(None);
        }
    }
    let mut session = SessionRecord {
        schema: SESSION_SCHEMA.into(),
        id: session_id.clone(),
        started_at: started_at.clone(),
        flakelab_version: env!("CARGO_PKG_VERSION").into(),
        command: settings.command.clone(),
        cwd: settings.dir.clone(),
        seed: settings.seed,
        confidence: settings.confidence,
        signature: (settings.signatures.first()).map(|r| r.as_str().to_string()),
        signatures: match settings.signatures.as_slice() {
            [_, _, ..] => settings
                .signatures
                .iter()
                .map(|r| r.as_str().to_string())
                .collect(),
            _ => Vec::new(),
        },
        timeout_s: settings.limits.timeout.map(|t| t.as_secs_f64()),
        jobs: settings.jobs,
        cells: cell_records.clone(),
        plan: plan.clone(),
        host: host::host_info(),
        repo: host::repo_info(&settings.dir),
        replay_of: replay.of.clone(),
        runner: settings.recipe.as_ref().map(|r| r.name.clone()),
        runner_note: settings.runner_note.clone(),
        runner_version: match known {
            Some(k) => k.runner_version.clone(),
            None => (settings.recipe.as_ref())
                .and_then(|r| crate::catalog::recipe::version_argv(r, &settings.command))
                .and_then(|argv| settings.executor.version(&argv, &settings.dir)),
        },
        left_out: settings
            .left_out
            .iter()
            .map(|(cell, why)| format!("{cell}: {why}"))
            .collect(),
        junit: match &settings.junit {
            Some(JunitSource::Path(p)) => Some(p.clone()),
            _ => None,
        },
        rung: settings.rung.clone(),
        part_of: settings.part_of.clone(),
        shards: None,
        warnings: survivor_warning(&settings.executor).into_iter().collect(),
        records_end: true,
        design_chosen: settings.design_chosen.clone(),
        scan_prove: settings.scan_prove.clone(),
        per_test_from: match &settings.junit {
            Some(JunitSource::Runner) => (settings.recipe.as_ref())
                .and_then(|r| r.per_test.as_ref())
                .map(|p| p.format.label().to_string()),
            Some(_) => Some(
                crate::results::testreport::Format::Junit
                    .label()
                    .to_string(),
            ),
            None => None,
        },
    };
    super::scrub::session(&settings.redaction, &mut session);
    if let Some(s) = &settings.sharding {
        session.shards = Some(crate::context::shard::shard_set(&session, s.shard));
    }
    // Held until the end record is appended, so a reader tells a running
    // session from one killed without a stop (see `liveness`).
    let running = crate::context::liveness::Running::start(&settings.store, &session_id)?;
    if settings.sharding.is_some()
        && (settings.store.session(Some(&session_id))?).is_some_and(|s| s.id == session_id)
    {
        // Checked again under the lock: a shard of this id that ran and
        // ended since the first check holds it now.
        running.abandon();
        return Err(crate::error::Error::usage(
            format!(
                "the store {} already holds session {session_id}",
                settings.store.root().display()
            ),
            "give each shard its own store (--store DIR) and merge them with `flakelab merge`; a new session needs another --session-id",
        ));
    }
    let kept = Kept::default();
    let runs = async {
        settings.store.append_session(&session)?;

        // One display for the whole session, however many blocks it runs in.
        // The recorded (redacted) cell names: a cell's name can hold a value.
        let shown = if settings.quiet {
            Vec::new()
        } else {
            planned(settings, &plan, &session.cells)
        };
        let mut progress = Progress::new(shown, settings.jobs);
        let progress = &mut progress;
        let interrupted = match on_block.as_mut() {
            None => {
                execute(
                    settings,
                    &session,
                    plan.iter().filter(|r| owns(settings, r.replicate)),
                    &cell_records,
                    stop.clone(),
                    &kept,
                    progress,
                )
                .await?
            }
            Some(look) => {
                let mut interrupted = false;
                for replicate in (0..settings.runs).filter(|&r| owns(settings, r)) {
                    let block = plan.block(replicate);
                    interrupted = execute(
                        settings,
                        &session,
                        block,
                        &cell_records,
                        stop.clone(),
                        &kept,
                        progress,
                    )
                    .await?;
                    if interrupted {
                        break;
                    }
                    let (runs, _) = settings.store.runs_of(&session_id)?;
                    if look(&runs) {
                        break;
                    }
                }
                interrupted
            }
        };
        progress.finish();
        Ok(interrupted)
    };
    let interrupted = match runs.await {
        Ok(interrupted) => interrupted,
        Err(e) => {
            // Why it stopped is recorded with its stop (a full disk reads
            // as a full disk, not as a killed harness).
            running.fail(&e);
            return Err(e);
        }
    };
    // A warden that ended during the session (a subject killed it) is said
    // at its end: its runs' processes were not guarded from then on.
    let later = survivor_warning(&settings.executor).filter(|w| !session.warnings.contains(w));
    running.end(interrupted, later.into_iter().collect())?;
    Ok(Some(SessionDone {
        session,
        interrupted,
        held_at_most: kept.held.get(),
    }))
}

/// The session's warning when nothing would end its runs' processes if
/// flakelab itself were killed (no warden: `exec::warden`); none for the
/// fake executor, which starts nothing.
fn survivor_warning(executor: &crate::exec::Executor) -> Option<String> {
    if !matches!(executor, crate::exec::Executor::Real) {
        return None;
    }
    crate::exec::warden::status().map(|why| {
        format!(
            "no warden ({why}): if flakelab is killed, the processes of its runs keep running; they are still ended when flakelab ends on its own or by Ctrl-C/SIGTERM/SIGHUP (see `flakelab doctor`)"
        )
    })
}

/// The runs this process will execute, per cell (name, count): every
/// replicate it owns of each applied cell, times the copies of each.
fn planned(settings: &SessionSpec, plan: &plan::Plan, cells: &[CellRecord]) -> Vec<(String, u64)> {
    let mut counts: Vec<(String, u64)> = cells.iter().map(|c| (c.name.clone(), 0)).collect();
    for spec in plan.iter().filter(|r| owns(settings, r.replicate)) {
        if let Some((_, n)) = counts
            .get_mut(spec.cell)
            .filter(|_| cells[spec.cell].applied)
        {
            *n += settings.copies as u64;
        }
    }
    counts
}

/// Whether this process runs replicate block `replicate` (every block,
/// unless it is one shard of a sharded session).
fn owns(settings: &SessionSpec, replicate: u32) -> bool {
    (settings.sharding.as_ref()).is_none_or(|s| s.shard.owns(replicate))
}

/// What a session keeps across its blocks of runs.
#[derive(Default)]
struct Kept {
    /// The most runs held at once.
    held: Cell<usize>,
    /// What every run of a cell shares, built at the cell's first run.
    cache: RefCell<super::shared::Cache>,
}

/// The jobs of `specs`, built as the scheduler asks for them (a run's
/// launch, record and paths exist from just before it starts until it
/// ends, never for the whole plan at once). Each job's starting record goes
/// into `pending`; a run of a cell that is not applied is stored at once
/// and yields no job. The first error stops the jobs and is kept in `error`.
fn jobs<'a>(
    settings: &'a SessionSpec,
    session: &'a SessionRecord,
    cells: &'a [CellRecord],
    specs: impl Iterator<Item = RunSpec> + 'a,
    pending: &'a RefCell<BTreeMap<usize, RunRecord>>,
    error: &'a RefCell<Option<crate::error::Error>>,
    kept: &'a Kept,
) -> impl Iterator<Item = Job> + 'a {
    specs
        .flat_map(move |spec| (0..settings.copies).map(move |copy| (spec, copy)))
        .map_while(move |(spec, copy)| {
            if error.borrow().is_some() {
                return None;
            }
            let mut cache = kept.cache.borrow_mut();
            match plan_process(settings, session, cells, &spec, copy, &mut cache) {
                Ok(made) => Some(made),
                Err(e) => {
                    *error.borrow_mut() = Some(e);
                    None
                }
            }
        })
        .flatten()
        .map(move |(job, record)| {
            let mut pending = pending.borrow_mut();
            pending.insert(job.index, record);
            kept.held.set(kept.held.get().max(pending.len()));
            job
        })
}

/// Runs the planned runs `specs`, appending each finished run to the store
/// and showing it in `progress` (`kept` keeps the most runs held at once,
/// and what the runs of each cell share).
/// Returns whether the session was interrupted.
async fn execute(
    settings: &SessionSpec,
    session: &SessionRecord,
    specs: impl Iterator<Item = RunSpec>,
    cells: &[CellRecord],
    stop: tokio::sync::watch::Receiver<Stop>,
    kept: &Kept,
    progress: &mut Progress,
) -> Result<bool> {
    let pending: RefCell<BTreeMap<usize, RunRecord>> = RefCell::new(BTreeMap::new());
    let plan_error = RefCell::new(None);
    let mut queue = jobs(settings, session, cells, specs, &pending, &plan_error, kept).peekable();
    // The first job is built before anything starts, so a command the
    // recipe cannot build fails the session before its first run.
    queue.peek();
    if let Some(e) = plan_error.borrow_mut().take() {
        return Err(e);
    }

    let mut store_error = None;
    let end = schedule::schedule(
        &settings.executor,
        queue,
        settings.jobs,
        settings.limits,
        stop,
        |event| match event {
            Event::Started { .. } => {}
            Event::Interrupted => progress.interrupted(),
            Event::Finished {
                index,
                started_at,
                result,
                measured,
            } => {
                let Some(mut record) = pending.borrow_mut().remove(&index) else {
                    return;
                };
                record.cpu_busy = measured.host_busy;
                record.cpu = measured.cpu;
                let cell = settings.cell_index(&record.cell).unwrap_or(0);
                let report_before = kept.cache.borrow_mut().report_before(index);
                finish_record(
                    &mut record,
                    started_at,
                    result,
                    settings,
                    &settings.cells[cell].1,
                    report_before,
                );
                progress.finished(cell, record.outcome == Outcome::Fail, record.duration_s);
                if let Err(e) = settings.store.append_run(&record) {
                    store_error.get_or_insert(e);
                }
            }
        },
    )
    .await;
    match store_error.or(plan_error.into_inner()) {
        Some(e) => Err(e),
        None => Ok(end.interrupted),
    }
}

/// Runs `spec`'s session to its end on a runtime of its own, never
/// interrupted: for tests through the fake executor.
#[cfg(test)]
pub(super) fn run_to_end(spec: &SessionSpec) -> SessionDone {
    let (_tx, stop) = tokio::sync::watch::channel(Stop::Run);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run_session(spec, &stop)).unwrap().unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::Executor;
    use crate::session::resolve::{resolve, Intent, Layers};

    /// A session of `runs` per cell through the fake executor (every run
    /// passes at once), `jobs` at a time: how many runs it held at most,
    /// and the report folded from its store.
    fn session_of(runs: u32, jobs: usize) -> (usize, crate::report::Report, usize) {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("fake.toml");
        std::fs::write(&script, "").unwrap();
        let executor = Executor::from_script(Some(&script)).unwrap();
        let mut intent = Intent {
            command: vec!["true".into()],
            dir: Some(dir.path().to_path_buf()),
            cells: vec!["env=X=1".into()],
            seed: Some(3),
            ..Intent::default()
        };
        intent.flags.runs = Some(runs);
        intent.flags.jobs = Some(jobs);
        let spec = resolve(intent, &Layers::none(), &executor).unwrap();
        let done = run_to_end(&spec);
        let mut fold = crate::report::Fold::new(&done.session);
        let load = spec
            .store
            .each_run(&done.session.id, |r| {
                fold.add(&crate::store::RunView::of(&r));
                Ok(())
            })
            .unwrap();
        let entries = fold.entries();
        (done.held_at_most, fold.finish(load), entries)
    }

    #[test]
    fn session_ids_never_repeat_within_a_process_or_a_store() {
        // 20,000 ids in a second or two: with 16 random bits a second,
        // about 3,000 would repeat if nothing kept them apart.
        let ids: Vec<String> = (0..20_000).map(|_| new_session_id()).collect();
        let distinct: std::collections::BTreeSet<&String> = ids.iter().collect();
        assert_eq!(distinct.len(), ids.len());
        // An id whose runs file the store already holds is passed over.
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::Store::at(dir.path());
        let taken = "20260101-000000-0001";
        assert!(!store.holds_runs_of(taken));
        std::fs::create_dir_all(dir.path().join("runs")).unwrap();
        std::fs::write(dir.path().join("runs").join(format!("{taken}.jsonl")), "").unwrap();
        assert!(store.holds_runs_of(taken));
        assert_ne!(unused_session_id(&store), taken);
    }

    #[test]
    fn a_session_holds_the_runs_in_flight_not_its_plan() {
        let (held_small, small, entries_small) = session_of(50, 2);
        let (held, report, entries) = session_of(5_000, 2);
        assert_eq!(report.planned, 10_000);
        assert_eq!(report.recorded, 10_000);
        assert!(
            report.cells.iter().all(|c| c.passed == 5_000),
            "{:?}",
            report.cells
        );
        // Two in flight and one built ahead, for 100 runs as for 10,000.
        assert!(held <= 3, "held {held} runs at once");
        assert_eq!(held, held_small);
        assert_eq!(small.recorded, 100);
        // The report's fold over the stored runs holds as much either way.
        assert_eq!(entries, entries_small);
    }
}
