//! `scan --prove`'s design: each (runner, cell) group of findings
//! (`scan::prove::plan`) runs as one recorded session — the baseline, the
//! cell and its sham interleaved, on the reached tests only (and the
//! controls, with `--controls`), selected through the recipe's `[select]`
//! — and every finding gets its proof from those runs' per-test outcomes
//! (`scan::prove::decide`, Holm over the findings measured). Each session's
//! proofs are stored in `proves.jsonl` for `flakelab report`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use tokio::sync::watch;

use crate::context::config::{RunFlags, DEFAULT_CONFIDENCE};
use crate::error::Result;
use crate::exec::child::Stop;
use crate::exec::Executor;
use crate::record::{RunRecord, TestOutcome};
use crate::scan::prove::{self, Arm, Control, Measured, Proof, ProveRecord, ProvedSite, TestArms};
use crate::scan::ScanReport;
use crate::session::{self, resolve::Layers, Intent};

/// How the findings are proved (`scan --prove`'s flags).
pub(crate) struct Prove {
    /// The scanned tree, canonical. The sessions run from its project's
    /// root (`scan::project_of`), where the printed commands run, on the
    /// tests as the runner names them from there.
    pub root: PathBuf,
    /// The store (`--store`), else the project's.
    pub store: Option<PathBuf>,
    /// Runs per arm (`--runs`; at least 1).
    pub runs: u32,
    /// Also run the tests no finding reaches, as controls (`--controls`).
    pub controls: bool,
}

/// A group's session is about to run: `what` it proves, in words, and
/// its runs per arm.
pub(crate) struct Progress<'a> {
    /// What the session proves.
    pub what: &'a str,
    /// Runs per arm.
    pub runs: u32,
}

/// One group's session, as far as it got.
enum Ran {
    /// It ran: the session, the cell's sham, the counts by (cell, test),
    /// and what the reports named when none of the selected ids ([`strays`]).
    Measured {
        session: String,
        sham: Option<String>,
        arms: HashMap<(String, String), Arm>,
        strays: Vec<String>,
        store: crate::store::Store,
    },
    /// It ran, and its cell did not apply on this host: why.
    Unapplied {
        why: String,
        session: String,
        store: crate::store::Store,
    },
    /// It could not run: why.
    Not(String),
}

/// Proves `scan`'s findings in place, each session's proofs stored;
/// returns whether a stop signal cut it short.
pub(crate) async fn prove(
    how: &Prove,
    scan: &mut ScanReport,
    executor: &Executor,
    stop: &watch::Receiver<Stop>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<bool> {
    // The sessions run where the printed commands do: a subdirectory's
    // tests from its project's root, named as the runner names them there.
    let project = crate::scan::project_of(&how.root);
    let root = project.root.as_path();
    let prefix = project.prefix.as_str();
    let js_runner = crate::scan::js_runner(root);
    // Absolute (the runs start in the project), its links kept: the recipe
    // knows the runner by the file name.
    let local = std::path::absolute(root.join("node_modules/.bin").join(js_runner))
        .ok()
        .filter(|p| p.is_file());
    let js = prove::js_command(js_runner, local.as_deref());
    let runner: Vec<crate::scan::Finding> = (scan.findings.iter())
        .map(|f| prove::for_runner(f, prefix))
        .collect();
    let (groups, now) = prove::plan(&runner, DEFAULT_CONFIDENCE, &js, prefix);
    // Each finding's proofs, one per cell it ran under (or why not).
    let mut pending: Vec<(usize, Proof)> = now;
    let reached: Vec<String> = (runner.iter())
        .flat_map(|f| f.tests.iter().cloned())
        .collect();
    let mut interrupted = false;
    let mut confidence = DEFAULT_CONFIDENCE;
    // What each measured finding and control ran, and every session run.
    let mut finding_items: Vec<(usize, Measured)> = Vec::new();
    let mut control_items: Vec<(String, Measured)> = Vec::new();
    let mut sessions: Vec<(String, String, crate::store::Store)> = Vec::new();
    for group in &groups {
        // An order group runs its file's tests in two fixed orders: no
        // controls beside them.
        let controls: Vec<String> = if how.controls && group.beside.is_empty() {
            (scan.tests.iter())
                .map(|(l, t)| (*l, prove::runner_id(*l, t, prefix)))
                .filter(|(l, t)| prove::runner_lang(*l) == group.lang && !reached.contains(t))
                .map(|(_, t)| t)
                .collect()
        } else {
            Vec::new()
        };
        let ran = if interrupted || *stop.borrow() != Stop::Run {
            interrupted = true;
            Ran::Not("interrupted before its session ran".into())
        } else {
            let on = GroupRun {
                how,
                root,
                group,
                controls: &controls,
            };
            run_group(on, executor, stop, progress, &mut confidence).await?
        };
        match ran {
            Ran::Unapplied {
                why,
                session,
                store,
            } => {
                // Recorded: the session's report says why its findings
                // stay unconfirmed.
                for &i in &group.findings {
                    let f = &scan.findings[i];
                    let mut proof = Proof::unconfirmed(why.clone(), f.command.clone(), confidence);
                    proof.cell = Some(group.cell.clone());
                    proof.session = Some(session.clone());
                    pending.push((i, proof));
                }
                sessions.push((session, group.cell.clone(), store));
            }
            Ran::Not(why) => {
                for &i in &group.findings {
                    let f = &scan.findings[i];
                    let mut proof = Proof::unconfirmed(why.clone(), f.command.clone(), confidence);
                    proof.cell = Some(group.cell.clone());
                    pending.push((i, proof));
                }
            }
            Ran::Measured {
                session,
                sham,
                arms,
                strays,
                store,
            } => {
                let counts = |test: &str| TestArms {
                    test: test.to_string(),
                    cell: arms
                        .get(&(group.cell.clone(), test.to_string()))
                        .copied()
                        .unwrap_or((0, 0)),
                    baseline: arms
                        .get(&("baseline".to_string(), test.to_string()))
                        .copied()
                        .unwrap_or((0, 0)),
                    sham: sham.as_ref().map(|s| {
                        arms.get(&(s.clone(), test.to_string()))
                            .copied()
                            .unwrap_or((0, 0))
                    }),
                };
                for &i in &group.findings {
                    let f = &runner[i];
                    let tests = match prove::together(f) {
                        Some(set) => vec![counts(&set.join(" + "))],
                        None => (f.tests.iter().chain(&f.beside))
                            .map(|t| counts(t))
                            .collect(),
                    };
                    finding_items.push((
                        i,
                        Measured {
                            cell: group.cell.clone(),
                            sham: sham.clone(),
                            session: session.clone(),
                            tests,
                            strays: strays.clone(),
                        },
                    ));
                }
                for t in &controls {
                    control_items.push((
                        t.clone(),
                        Measured {
                            cell: group.cell.clone(),
                            sham: sham.clone(),
                            session: session.clone(),
                            tests: vec![counts(t)],
                            strays: strays.clone(),
                        },
                    ));
                }
                sessions.push((session, group.cell.clone(), store));
            }
        }
    }
    let items: Vec<Measured> = finding_items.iter().map(|(_, m)| m.clone()).collect();
    for ((i, _), proof) in finding_items
        .iter()
        .zip(prove::decide(&items, confidence, false))
    {
        pending.push((*i, proof));
    }
    for (i, f) in scan.findings.iter_mut().enumerate() {
        let mine: Vec<Proof> = (pending.iter())
            .filter(|(j, _)| *j == i)
            .map(|(_, p)| p.clone())
            .collect();
        if let Some(p) = prove::best(mine) {
            f.proof = Some(p);
        }
    }
    let items: Vec<Measured> = control_items.iter().map(|(_, m)| m.clone()).collect();
    scan.controls = (control_items.iter())
        .zip(prove::decide(&items, confidence, true))
        .map(|((test, _), proof)| Control {
            test: test.clone(),
            proof,
        })
        .collect();
    for f in &mut scan.findings {
        if let Some(p) = &f.proof {
            f.status = p.status.key().to_string();
        }
    }
    for (session, cell, store) in sessions {
        let mine = |p: &Proof| p.session.as_deref() == Some(session.as_str());
        let record = ProveRecord {
            schema: prove::PROVE_SCHEMA.into(),
            session: session.clone(),
            cell,
            findings: (pending.iter())
                .filter(|(_, p)| mine(p))
                .map(|(i, p)| {
                    let f = &scan.findings[*i];
                    ProvedSite {
                        site: format!("{}:{}", f.file, f.line),
                        symbol: f.symbol.clone(),
                        class: f.class,
                        proof: p.clone(),
                    }
                })
                .collect(),
            controls: scan
                .controls
                .iter()
                .filter(|c| mine(&c.proof))
                .cloned()
                .collect(),
        };
        store.append_prove(&record)?;
    }
    Ok(interrupted)
}

/// One group to prove, with the controls run beside it.
struct GroupRun<'a> {
    how: &'a Prove,
    /// The project's root: where the session runs.
    root: &'a Path,
    group: &'a prove::Group,
    controls: &'a [String],
}

/// Runs one group's session: resolves the runner's command with the cell
/// and its sham, selects the reached tests (and `controls`) through the
/// recipe, runs, and counts each test's failures per cell.
async fn run_group(
    on: GroupRun<'_>,
    executor: &Executor,
    stop: &watch::Receiver<Stop>,
    progress: &mut dyn FnMut(Progress<'_>),
    confidence: &mut f64,
) -> Result<Ran> {
    let GroupRun {
        how,
        root,
        group,
        controls,
    } = on;
    let command = group.command.clone();
    let intent = Intent {
        command: command.clone(),
        dir: Some(root.to_path_buf()),
        store: how.store.clone(),
        cells: vec![group.cell.clone()],
        flags: RunFlags {
            runs: Some(how.runs.max(1)),
            matrix: Some(Vec::new()),
            ..RunFlags::default()
        },
        shams: true,
        ..Intent::default()
    };
    let spec = match session::resolve(intent, &Layers::of_project(root)?, executor) {
        Ok(s) => s,
        Err(e) => {
            return Ok(Ran::Not(format!(
                "the cell cannot run here: {} (hint: {})",
                e.message(),
                e.hint()
            )))
        }
    };
    *confidence = spec.confidence;
    // A cell the runner cannot honour would run and be reported not
    // applied: said now, nothing run.
    let unfit = (spec.cells.iter())
        .find(|(c, _)| c.name == group.cell)
        .and_then(|(_, p)| p.not_applicable.clone());
    if let Some(why) = unfit {
        return Ok(Ran::Not(format!(
            "the cell cannot apply to this runner: {why}"
        )));
    }
    let words = shell_words::join(&command);
    let Some(recipe) = spec.recipe.clone() else {
        return Ok(Ran::Not(format!("no recipe recognises `{words}`")));
    };
    let Some(select) = recipe.select.clone() else {
        return Ok(Ran::Not(format!(
            "the {} recipe has no [select]: it cannot run the reached tests alone",
            recipe.name
        )));
    };
    if spec.junit.is_none() {
        return Ok(Ran::Not(format!("`{words}` yields no per-test outcomes")));
    }
    if !group.beside.is_empty() {
        return run_orders(spec, group, stop, progress).await;
    }
    let mut ids = group.tests.clone();
    ids.extend(controls.iter().cloned());
    let argv = prove::select_argv(&recipe, &spec.command, &ids, &spec.dir);
    let argv = match argv {
        Ok(a) => a,
        Err(why) => {
            return Ok(Ran::Not(format!(
                "no selection of the reached tests: {why}"
            )))
        }
    };
    let sham = spec.shams.by_cell.get(&group.cell).cloned();
    let what = format!(
        "scan --prove: {} finding(s) on {} reached test(s) and {} control(s) under {}",
        group.findings.len(),
        group.tests.len(),
        controls.len(),
        group.cell
    );
    progress(Progress {
        what: &what,
        runs: spec.runs,
    });
    let spec = spec.with_command(argv).proving(what);
    let Some(done) = session::run_session(&spec, stop).await? else {
        return Ok(Ran::Not("interrupted before its session ran".into()));
    };
    let applied = |name: &str| {
        (done.session.cells.iter())
            .find(|c| c.name == name)
            .map(|c| (c.applied, c.reason.clone()))
    };
    if let Some((false, reason)) = applied(&group.cell) {
        return Ok(Ran::Unapplied {
            why: format!(
                "the cell did not apply on this host (session {}): {}",
                done.session.id,
                reason.unwrap_or_else(|| "its probe did not prove it".into())
            ),
            session: done.session.id.clone(),
            store: spec.store.clone(),
        });
    }
    let sham = sham.filter(|s| applied(s).is_some_and(|(a, _)| a));
    let (runs, _) = done.runs(&spec.store)?;
    let from = select.id_from.unwrap_or_default();
    let mut counted = arms(&runs, from, &spec.dir);
    for set in &group.together {
        counted.extend(together(&runs, from, &spec.dir, set));
    }
    Ok(Ran::Measured {
        session: done.session.id.clone(),
        sham,
        arms: counted,
        strays: strays(&runs, from, &spec.dir, &ids),
        store: spec.store.clone(),
    })
}

/// Runs an order group's session: the shuffle cell's runs run the writing
/// tests first and the tests they can pollute after, the baseline's those
/// tests first and the writers last, both through the recipe's
/// `[ordered]`, the cell's own shuffle off: one fixed order each, so what
/// differs between the arms is the order alone.
async fn run_orders(
    spec: session::SessionSpec,
    group: &prove::Group,
    stop: &watch::Receiver<Stop>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Ran> {
    use crate::catalog::recipe::ordered::OrderHow;
    let ordered = match crate::bisect::can_order(spec.recipe.as_ref()) {
        Ok(o) => o.clone(),
        Err(why) => {
            return Ok(Ran::Not(format!(
                "no order of the tests can be given: {why}"
            )))
        }
    };
    let first: Vec<String> = group.tests.iter().chain(&group.beside).cloned().collect();
    let last: Vec<String> = group.beside.iter().chain(&group.tests).cloned().collect();
    let name = format!("prove-{}", crate::session::engine::new_session_id());
    let argv = |step: u32, list: &[String]| -> Result<Vec<String>> {
        let file = spec.store.write_bisect_order(&name, step, list)?;
        ordered
            .argv(&spec.command, &file.display().to_string())
            .map_err(|e| crate::error::Error::harness(e, "report this as a bug"))
    };
    let (cell_argv, base_argv) = (argv(0, &first)?, argv(1, &last)?);
    let what = format!(
        "scan --prove: {} finding(s), {} writing test(s) run before the {} test(s) they can pollute, against after them at baseline, under {}",
        group.findings.len(),
        group.tests.len(),
        group.beside.len(),
        group.cell
    );
    progress(Progress {
        what: &what,
        runs: spec.runs,
    });
    let mut spec = (spec.with_command(base_argv))
        .with_cell_command(&group.cell, cell_argv)
        .proving(what);
    for (c, prepared) in &mut spec.cells {
        if c.name == group.cell {
            prepared.shuffle = false;
        }
    }
    if ordered.how == OrderHow::PytestPlugin {
        let dir = spec.store.write_bisect_plugin()?;
        spec.put_on_pythonpath(&dir);
    }
    let Some(done) = session::run_session(&spec, stop).await? else {
        return Ok(Ran::Not("interrupted before its session ran".into()));
    };
    let (runs, _) = done.runs(&spec.store)?;
    let from = (spec.recipe.as_ref())
        .and_then(|r| r.select.as_ref())
        .and_then(|s| s.id_from)
        .unwrap_or_default();
    Ok(Ran::Measured {
        session: done.session.id.clone(),
        sham: None,
        arms: arms(&runs, from, &spec.dir),
        strays: strays(&runs, from, &spec.dir, &first),
        store: spec.store.clone(),
    })
}

/// Failures and runs per (cell, runner id) among `runs`: a run counts once
/// per id, failed when any case of it failed — a parametrised test's
/// cases count under its own id and under the id without parameters (the
/// one a finding names). A skip counts in neither.
fn arms(
    runs: &[RunRecord],
    from: crate::catalog::recipe::IdFrom,
    dir: &Path,
) -> HashMap<(String, String), Arm> {
    let mut out: HashMap<(String, String), Arm> = HashMap::new();
    for (cell, seen) in outcomes(runs, from, dir) {
        for (id, failed) in seen {
            let e = out.entry((cell.clone(), id)).or_default();
            e.0 += u64::from(failed);
            e.1 += 1;
        }
    }
    out
}

/// Each run's cell and its outcomes by runner id (failed: any case of it
/// failed); a skip is no outcome.
fn outcomes(
    runs: &[RunRecord],
    from: crate::catalog::recipe::IdFrom,
    dir: &Path,
) -> Vec<(String, HashMap<String, bool>)> {
    let mut out = Vec::new();
    for r in runs {
        // Runner id → whether any case failed, in this run.
        let mut seen: HashMap<String, bool> = HashMap::new();
        for t in &r.tests {
            let failed = match t.outcome {
                TestOutcome::Pass => false,
                TestOutcome::Fail | TestOutcome::Error => true,
                TestOutcome::Skip => continue,
            };
            let ids = [t.id.as_str(), t.family()];
            for (n, id) in ids.iter().enumerate() {
                if n == 1 && ids[1] == ids[0] {
                    continue;
                }
                if let Some(id) = crate::screen::runner_id(from, id, dir) {
                    *seen.entry(id).or_default() |= failed;
                }
            }
        }
        out.push((r.cell.clone(), seen));
    }
    out
}

/// When none of `asked` is in any run's report: the first few ids the
/// reports name instead (the runner id, else the report's own id when it
/// maps to none, e.g. a pytest class path no file under `dir` matches).
/// Empty when any asked test was reported, or nothing was.
fn strays(
    runs: &[RunRecord],
    from: crate::catalog::recipe::IdFrom,
    dir: &Path,
    asked: &[String],
) -> Vec<String> {
    let mut named: Vec<String> = Vec::new();
    for t in runs.iter().flat_map(|r| &r.tests) {
        if t.outcome == TestOutcome::Skip {
            continue;
        }
        let ids = [t.id.as_str(), t.family()];
        let mapped: Vec<Option<String>> = ids
            .iter()
            .map(|id| crate::screen::runner_id(from, id, dir))
            .collect();
        if mapped.iter().flatten().any(|id| asked.contains(id)) {
            return Vec::new();
        }
        let id = mapped[0].clone().unwrap_or_else(|| t.id.clone());
        if !named.contains(&id) {
            named.push(id);
        }
    }
    named.sort();
    named.truncate(3);
    named
}

/// Failures and runs per cell of `tests` together: a run failed when any
/// of them failed (a collision fails whichever test binds second), and
/// counts when any of them ran. Keyed by the tests joined with ` + `.
fn together(
    runs: &[RunRecord],
    from: crate::catalog::recipe::IdFrom,
    dir: &Path,
    tests: &[String],
) -> HashMap<(String, String), Arm> {
    let key = tests.join(" + ");
    let mut out: HashMap<(String, String), Arm> = HashMap::new();
    for (cell, seen) in outcomes(runs, from, dir) {
        let mine: Vec<bool> = tests.iter().filter_map(|t| seen.get(t).copied()).collect();
        if mine.is_empty() {
            continue;
        }
        let e = out.entry((cell, key.clone())).or_default();
        e.0 += u64::from(mine.iter().any(|f| *f));
        e.1 += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::recipe::IdFrom;
    use crate::record::TestRecord;

    fn run(cell: &str, tests: &[(&str, Option<&str>, TestOutcome)]) -> RunRecord {
        let mut r = crate::record::fixture::run("s", 1, cell);
        r.replicate = 1;
        r.tests = tests
            .iter()
            .map(|(id, family, outcome)| TestRecord {
                id: id.to_string(),
                family: family.map(String::from),
                outcome: *outcome,
                passed_on_rerun: false,
                retries: 0,
                signature: None,
                message: None,
                signature_match: None,
                signature_pattern: None,
            })
            .collect();
        r
    }

    #[test]
    fn a_zone_finding_is_proven_by_its_session_and_its_proof_stored() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("tests")).unwrap();
        std::fs::write(
            root.join("tests/test_zone.py"),
            "from datetime import datetime\n\n\ndef today_label():\n    return datetime.now().strftime(\"%Y-%m-%d %H\")\n\n\ndef test_today_label():\n    assert today_label()\n",
        )
        .unwrap();
        let today = "2026-12-01".parse().unwrap();
        let opts = crate::scan::ScanOptions {
            today,
            exclude: Vec::new(),
        };
        let mut scan = crate::scan::scan(&root, &opts).unwrap();
        assert_eq!(scan.findings.len(), 1, "{:?}", scan.findings);
        let case = |failure: &str| {
            format!("<testsuite name='s' tests='1'><testcase classname='tests.test_zone' name='test_today_label'>{failure}</testcase></testsuite>")
        };
        let executor = crate::design::testing::fake(
            dir.path(),
            &format!(
                "version = \"pytest 9.2.0\"\n\
                 [[run]]\ncell = \"tz=Pacific/Kiritimati\"\nexit = 1\njunit = \"{}\"\n\
                 [[run]]\njunit = \"{}\"\n",
                case("<failure message='offset'/>"),
                case("")
            ),
        );
        let how = Prove {
            root: root.clone(),
            store: None,
            runs: 6,
            controls: false,
        };
        let mut lines = Vec::new();
        let interrupted = crate::design::testing::run(|stop| {
            let (how, scan, executor, lines) = (&how, &mut scan, &executor, &mut lines);
            async move {
                let mut progress = |p: Progress<'_>| lines.push(format!("{}, {}", p.what, p.runs));
                prove(how, scan, executor, &stop, &mut progress).await
            }
        })
        .unwrap();
        assert!(!interrupted);
        // Both zones ran, each its own session.
        assert_eq!(
            lines,
            [
                "scan --prove: 1 finding(s) on 1 reached test(s) and 0 control(s) under tz=Pacific/Kiritimati, 6",
                "scan --prove: 1 finding(s) on 1 reached test(s) and 0 control(s) under tz=Pacific/Pago_Pago, 6"
            ]
        );
        let finding = &scan.findings[0];
        let proof = finding.proof.as_ref().expect("proved");
        // Proven by the zone that flipped it; the other one noted.
        assert_eq!(proof.status, prove::Status::Proven, "{proof:?}");
        assert_eq!(proof.cell.as_deref(), Some("tz=Pacific/Kiritimati"));
        assert_eq!(proof.family, Some(2), "each zone is an item of the family");
        assert_eq!(finding.status, "proven");
        let note = proof.reason.as_deref().unwrap();
        assert!(
            note.starts_with("also tried under tz=Pacific/Pago_Pago: not shown (session "),
            "{note}"
        );
        let session = proof.session.clone().expect("its session");
        let store = crate::store::Store::at(&root.join(".flakelab"));
        let stored = store.prove_of(&session).unwrap().expect("stored");
        assert_eq!(stored.cell, "tz=Pacific/Kiritimati");
        assert_eq!(stored.findings.len(), 1);
        assert_eq!(stored.findings[0].proof.status, prove::Status::Proven);
        // The other zone's session stores what it measured there.
        let other = note
            .rsplit_once("(session ")
            .unwrap()
            .1
            .trim_end_matches(')');
        let stored = store.prove_of(other).unwrap().expect("stored");
        assert_eq!(stored.cell, "tz=Pacific/Pago_Pago");
        assert_eq!(stored.findings[0].proof.status, prove::Status::NotShown);
    }

    /// Scans `tests/sub` of a project whose pyproject.toml is at `root`,
    /// proves it with junit classname `classname` for its one test, and
    /// returns the scan (the first zone flips it when the ids match).
    fn prove_subdirectory(root: &Path, classname: &str) -> ScanReport {
        std::fs::write(root.join("pyproject.toml"), "[project]\nname = \"p\"\n").unwrap();
        std::fs::create_dir_all(root.join("tests/sub")).unwrap();
        std::fs::write(
            root.join("tests/sub/test_zone.py"),
            "from datetime import datetime\n\n\ndef test_today_label():\n    assert datetime.now().strftime(\"%Y-%m-%d %H\")\n",
        )
        .unwrap();
        let opts = crate::scan::ScanOptions {
            today: "2026-12-01".parse().unwrap(),
            exclude: Vec::new(),
        };
        let mut scan = crate::scan::scan(&root.join("tests/sub"), &opts).unwrap();
        assert_eq!(scan.findings[0].tests, ["test_zone.py::test_today_label"]);
        let case = |failure: &str| {
            format!("<testsuite name='s' tests='1'><testcase classname='{classname}' name='test_today_label'>{failure}</testcase></testsuite>")
        };
        let executor = crate::design::testing::fake(
            root,
            &format!(
                "version = \"pytest 9.2.0\"\n\
                 [[run]]\ncell = \"tz=Pacific/Kiritimati\"\nexit = 1\njunit = \"{}\"\n\
                 [[run]]\njunit = \"{}\"\n",
                case("<failure message='offset'/>"),
                case("")
            ),
        );
        let how = Prove {
            root: root.join("tests/sub"),
            store: None,
            runs: 6,
            controls: false,
        };
        crate::design::testing::run(|stop| {
            let (how, scan, executor) = (&how, &mut scan, &executor);
            async move { prove(how, scan, executor, &stop, &mut |_| {}).await }
        })
        .unwrap();
        scan
    }

    #[test]
    fn a_subdirectorys_finding_runs_from_the_project_root_under_the_ids_pytest_reports_there() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let scan = prove_subdirectory(&root, "tests.sub.test_zone");
        let proof = scan.findings[0].proof.as_ref().expect("proved");
        assert_eq!(proof.status, prove::Status::Proven, "{proof:?}");
        let counts = proof.counts.as_ref().unwrap();
        assert_eq!(counts.test, "tests/sub/test_zone.py::test_today_label");
        assert_eq!((counts.cell, counts.baseline), ((6, 6), (0, 6)));
        // The project's store, its runs started at its root on the id
        // named from there.
        let store = crate::store::Store::at(&root.join(".flakelab"));
        let session = proof.session.as_deref().unwrap();
        let (runs, _) = store.runs_of(session).unwrap();
        assert_eq!(runs.len(), 18, "cell, sham and baseline, 6 each");
        for r in &runs {
            assert_eq!(r.cwd, root);
            assert!(
                r.argv
                    .contains(&"tests/sub/test_zone.py::test_today_label".to_string()),
                "{:?}",
                r.argv
            );
        }
        assert!(!root.join("tests/sub/.flakelab").exists());
    }

    #[test]
    fn ids_reported_from_another_root_leave_the_finding_unconfirmed_with_what_they_were() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        // As if pytest named its tests from tests/: no file under the
        // project root matches the classname.
        let scan = prove_subdirectory(&root, "sub.test_zone");
        let proof = scan.findings[0].proof.as_ref().expect("proved");
        assert_eq!(proof.status, prove::Status::Unconfirmed, "{proof:?}");
        assert_eq!(scan.findings[0].status, "unconfirmed");
        let why = proof.reason.as_deref().unwrap();
        assert!(
            why.starts_with("its tests are in none of the cell's or the baseline's run reports: the selection measured nothing; the reports name sub.test_zone::test_today_label where the scan selected tests/sub/test_zone.py::test_today_label"),
            "{why}"
        );
    }

    #[test]
    fn strays_are_named_only_when_no_selected_test_was_reported() {
        use TestOutcome::{Fail, Pass, Skip};
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("tests")).unwrap();
        std::fs::write(dir.path().join("tests/test_a.py"), "").unwrap();
        let asked = ["tests/test_a.py::test_b".to_string()];
        let from = IdFrom::Pytest;
        let elsewhere = [
            run("tz=X", &[("test_a::test_b", None, Fail)]),
            run(
                "baseline",
                &[("test_a::test_c", None, Pass), ("x::y", None, Skip)],
            ),
        ];
        assert_eq!(
            strays(&elsewhere, from, dir.path(), &asked),
            ["test_a::test_b", "test_a::test_c"]
        );
        let matched = [run(
            "tz=X",
            &[("tests.test_a::test_b", None, Fail), ("q::r", None, Pass)],
        )];
        assert!(strays(&matched, from, dir.path(), &asked).is_empty());
        assert!(strays(&[], from, dir.path(), &asked).is_empty());
    }

    #[test]
    fn a_module_dict_writer_runs_first_in_the_cell_and_last_at_baseline_and_is_proven() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("tests")).unwrap();
        std::fs::write(
            root.join("tests/test_config.py"),
            "CONFIG = {\"mode\": \"safe\"}\n\n\ndef test_default_mode():\n    assert CONFIG[\"mode\"] == \"safe\"\n\n\ndef test_fast_mode():\n    CONFIG[\"mode\"] = \"fast\"\n    assert CONFIG\n",
        )
        .unwrap();
        let opts = crate::scan::ScanOptions {
            today: "2026-12-01".parse().unwrap(),
            exclude: Vec::new(),
        };
        let mut scan = crate::scan::scan(&root, &opts).unwrap();
        assert_eq!(scan.findings.len(), 1, "{:?}", scan.findings);
        let suite = |failure: &str| {
            format!("<testsuite name='s' tests='2'><testcase classname='tests.test_config' name='test_default_mode'>{failure}</testcase><testcase classname='tests.test_config' name='test_fast_mode'/></testsuite>")
        };
        // The reader fails only in the runs that take the first order file.
        let executor = crate::design::testing::fake(
            dir.path(),
            &format!(
                "version = \"pytest 9.2.0\"\n\
                 [[run]]\nargv = \"order-0000\"\nexit = 1\njunit = \"{}\"\n\
                 [[run]]\nargv = \"order-0001\"\njunit = \"{}\"\n",
                suite("<failure message='mode'/>"),
                suite("")
            ),
        );
        let how = Prove {
            root: root.clone(),
            store: None,
            runs: 6,
            controls: true,
        };
        let mut lines = Vec::new();
        crate::design::testing::run(|stop| {
            let (how, scan, executor, lines) = (&how, &mut scan, &executor, &mut lines);
            async move {
                let mut progress = |p: Progress<'_>| lines.push(p.what.to_string());
                prove(how, scan, executor, &stop, &mut progress).await
            }
        })
        .unwrap();
        assert_eq!(
            lines,
            ["scan --prove: 1 finding(s), 1 writing test(s) run before the 1 test(s) they can pollute, against after them at baseline, under shuffle"]
        );
        let proof = scan.findings[0].proof.as_ref().expect("proved");
        assert_eq!(proof.status, prove::Status::Proven, "{proof:?}");
        let counts = proof.counts.as_ref().unwrap();
        assert_eq!(counts.test, "tests/test_config.py::test_default_mode");
        assert_eq!((counts.cell, counts.baseline), ((6, 6), (0, 6)));
        assert!(scan.controls.is_empty(), "an order group runs no controls");
        // The cell's order puts the writer first; the baseline's last.
        // The session's lists, beside the order plugin's directory.
        let orders = std::fs::read_dir(root.join(".flakelab/bisect"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("prove-")
            })
            .expect("the session's order lists");
        let read = |f: &str| std::fs::read_to_string(orders.join(f)).unwrap();
        assert_eq!(
            read("order-0000.txt"),
            "tests/test_config.py::test_fast_mode\ntests/test_config.py::test_default_mode\n"
        );
        assert_eq!(
            read("order-0001.txt"),
            "tests/test_config.py::test_default_mode\ntests/test_config.py::test_fast_mode\n"
        );
    }

    #[test]
    fn a_parametrised_test_counts_once_per_run_under_the_id_a_finding_names() {
        use TestOutcome::{Fail, Pass, Skip};
        let runs = [
            run(
                "tz=X",
                &[
                    ("pkg::TestA[1]", Some("pkg::TestA"), Pass),
                    ("pkg::TestA[2]", Some("pkg::TestA"), Fail),
                    ("pkg::TestB", None, Skip),
                ],
            ),
            run("tz=X", &[("pkg::TestA[1]", Some("pkg::TestA"), Pass)]),
            run("baseline", &[("pkg::TestA[1]", Some("pkg::TestA"), Pass)]),
        ];
        let got = arms(&runs, IdFrom::Name, Path::new("/"));
        let at = |cell: &str, id: &str| got.get(&(cell.to_string(), id.to_string())).copied();
        assert_eq!(at("tz=X", "TestA"), Some((1, 2)));
        assert_eq!(at("tz=X", "TestA[2]"), Some((1, 1)));
        assert_eq!(at("baseline", "TestA"), Some((0, 1)));
        assert_eq!(at("tz=X", "TestB"), None, "a skip is no run of the test");
    }
}
