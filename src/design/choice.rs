//! `run --design auto`: which design a session runs, with why: the fixed
//! design unless the screen pays (per-test outcomes over enough (test,
//! cell) pairs, as the store's latest session of the command says).

use crate::cli::Design;
use crate::error::Result;
use crate::session::SessionSpec;

/// (test, cell) pairs from which `--design auto` screens: below them, N
/// full runs cost little and measure rates too.
pub const AUTO_MIN_PAIRS: u64 = 500;

/// `--design auto`'s choice for `spec`, with why (`confirm`: `--confirm`
/// was given): fixed unless the runs
/// yield per-test outcomes over at least [`AUTO_MIN_PAIRS`] pairs, as the
/// latest earlier session of the same command in the store says.
pub(crate) fn auto_design(
    spec: &SessionSpec,
    confirm: bool,
    sharded: bool,
) -> Result<(Design, String)> {
    let fixed = |why: &str| Ok((Design::Fixed, format!("fixed design (auto): {why}")));
    if !spec.signatures.is_empty() {
        return fixed("--signature counts whole runs whose output matches, not per-test outcomes");
    }
    if confirm {
        return fixed("--confirm replays failing runs of the fixed design");
    }
    if spec.junit.is_none() {
        return fixed("the runs yield no per-test outcomes (no JUnit report)");
    }
    let perturbed = spec
        .cells
        .iter()
        .filter(|(c, _)| c.name != "baseline")
        .count() as u64;
    if perturbed == 0 || spec.cell_index("baseline").is_none() {
        return fixed("no perturbed cell to compare with the baseline");
    }
    // Last of the reasons that do not depend on how the session is run:
    // a sharded session says the same as one run whole wherever it can.
    if sharded {
        return fixed("the session is sharded, and the screen design shards only after its screen ran alone (`--design screen --screen-only`)");
    }
    let (sessions, _) = spec.store.load_sessions()?;
    let earlier = sessions
        .iter()
        .rev()
        .find(|s| s.part_of.is_none() && s.command == spec.command);
    let mut tests = None;
    if let Some(s) = earlier {
        spec.store.each_view(&s.id, |r| {
            let n = r.tests_len() as u64;
            if n > 0 {
                tests = Some(tests.unwrap_or(0).max(n));
            }
            Ok(())
        })?;
    }
    let Some(tests) = tests else {
        return fixed("no earlier session of this command in the store says how many tests it has (`--design screen` screens anyway)");
    };
    let pairs = tests * perturbed;
    if pairs >= AUTO_MIN_PAIRS {
        Ok((
            Design::Screen,
            format!("screen design (auto): {tests} tests × {perturbed} perturbed cell(s) = {pairs} (test, cell) pairs, at least {AUTO_MIN_PAIRS}"),
        ))
    } else {
        fixed(&format!(
            "{tests} tests × {perturbed} perturbed cell(s) = {pairs} (test, cell) pairs, fewer than {AUTO_MIN_PAIRS}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::child::Stop;
    use crate::exec::Executor;
    use crate::session::resolve::{resolve, Intent, Layers};

    /// A `tz=UTC` session of `subject {junit}` whose every run reports
    /// `tests` passing tests.
    fn spec_of(dir: &std::path::Path, tests: usize) -> SessionSpec {
        let cases: String = (0..tests)
            .map(|i| format!("<testcase classname='m' name='t{i}'/>"))
            .collect();
        let script = dir.join("fake.toml");
        std::fs::write(
            &script,
            format!("[[run]]\njunit = \"<testsuite name='s'>{cases}</testsuite>\"\n"),
        )
        .unwrap();
        let executor = Executor::from_script(Some(&script)).unwrap();
        let mut intent = Intent {
            command: vec!["subject".into(), "--junit={junit}".into()],
            dir: Some(dir.to_path_buf()),
            cells: vec!["tz=UTC".into()],
            seed: Some(1),
            ..Intent::default()
        };
        intent.flags.runs = Some(1);
        resolve(intent, &Layers::none(), &executor).unwrap()
    }

    fn run_once(spec: &SessionSpec) {
        let (_tx, stop) = tokio::sync::watch::channel(Stop::Run);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(crate::session::run_session(spec, &stop))
            .unwrap()
            .unwrap();
    }

    #[test]
    fn auto_screens_from_enough_pairs_the_store_has_seen() {
        let dir = tempfile::tempdir().unwrap();
        let spec = spec_of(dir.path(), AUTO_MIN_PAIRS as usize);
        let (design, why) = auto_design(&spec, false, false).unwrap();
        assert_eq!(design, Design::Fixed, "{why}");
        assert!(why.contains("no earlier session"), "{why}");
        assert_eq!(auto_design(&spec, true, false).unwrap().0, Design::Fixed);
        run_once(&spec);
        let (design, why) = auto_design(&spec, false, false).unwrap();
        assert_eq!(design, Design::Screen, "{why}");
        assert!(why.contains("500 tests × 1 perturbed cell(s)"), "{why}");
        let (design, why) = auto_design(&spec, false, true).unwrap();
        assert_eq!(design, Design::Fixed);
        assert!(why.contains("sharded"), "{why}");
    }

    #[test]
    fn auto_stays_fixed_below_its_pairs() {
        let dir = tempfile::tempdir().unwrap();
        let spec = spec_of(dir.path(), 3);
        run_once(&spec);
        let (design, why) = auto_design(&spec, false, false).unwrap();
        assert_eq!(design, Design::Fixed);
        assert!(why.contains("fewer than 500"), "{why}");
    }
}
