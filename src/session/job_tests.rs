//! The tests of `session::job` that run a whole session (through
//! `session::engine` and the fake executor) to build jobs from.

use super::job::plan_process;
use super::shared::Cache;
use super::SessionSpec;
use crate::exec::Executor;
use crate::plan;
use crate::record::SessionRecord;
use crate::session::resolve::{resolve, Intent, Layers};

/// A session of `cells` through the fake executor: its spec and record.
fn session(dir: &std::path::Path, cells: &[&str]) -> (SessionSpec, SessionRecord) {
    let script = dir.join("fake.toml");
    std::fs::write(&script, "").unwrap();
    let executor = Executor::from_script(Some(&script)).unwrap();
    let mut intent = Intent {
        command: vec!["sh".into(), "-c".into(), "echo 'it''s' $X".into()],
        dir: Some(dir.to_path_buf()),
        cells: cells.iter().map(|c| c.to_string()).collect(),
        seed: Some(5),
        ..Intent::default()
    };
    intent.flags.runs = Some(1);
    let spec = resolve(intent, &Layers::none(), &executor).unwrap();
    let done = super::engine::run_to_end(&spec);
    (spec, done.session)
}

#[test]
fn a_run_built_from_its_cells_shared_parts_is_the_run_built_anew() {
    let dir = tempfile::tempdir().unwrap();
    let (spec, session) = session(dir.path(), &["env=X=1", "env=API_TOKEN=hunter22"]);
    let mut reused = Cache::default();
    let mut seeds = std::collections::BTreeSet::new();
    let mut repros = std::collections::BTreeSet::new();
    let names: Vec<String> = spec.cells.iter().map(|(c, _)| c.name.clone()).collect();
    let plan = plan::build(&names, 4, 11);
    for run in plan.iter() {
        let shared = plan_process(&spec, &session, &session.cells, &run, 0, &mut reused)
            .unwrap()
            .unwrap();
        let mut off = Cache::off();
        let anew = plan_process(&spec, &session, &session.cells, &run, 0, &mut off)
            .unwrap()
            .unwrap();
        assert_eq!(format!("{shared:?}"), format!("{anew:?}"));
        let (job, record) = shared;
        // The run's own values, in a cell that does not set them.
        if record.env.set.contains_key("X") {
            assert_eq!(job.launch.env_set["FLAKELAB_RUN_ID"], record.id);
            assert_eq!(record.env.set["FLAKELAB_SEED"], run.seed.to_string());
            assert!(record
                .repro
                .contains(&format!("FLAKELAB_SEED={} ", run.seed)));
            seeds.insert(record.env.set["FLAKELAB_SEED"].clone());
            repros.insert(record.repro.clone());
        }
        if record.env.set.contains_key("API_TOKEN") {
            assert_eq!(record.env.set["API_TOKEN"], crate::redact::REDACTED);
            assert_eq!(job.launch.env_set["API_TOKEN"], "hunter22");
            assert!(!record.repro.contains("hunter22"));
        }
        assert_eq!(
            record.log.as_deref(),
            Some(std::path::Path::new(&format!(
                "logs/{}/{:05}.log",
                session.id, record.index
            )))
        );
    }
    // Four runs of the cell, four seeds, four lines: reused parts do not
    // freeze a run's own values.
    assert_eq!(seeds.len(), 4);
    assert_eq!(repros.len(), 4);
}
