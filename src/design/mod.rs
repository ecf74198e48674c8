//! The multi-session designs: each drives sessions through
//! `crate::session`, returns a record and prints nothing. A driver takes
//! the resolved spec (which carries the executor, `crate::exec::Executor`)
//! and the stop signal; what it reports while it runs goes to a callback
//! the wiring (the `app` module) prints. The pure rules each design reasons
//! with stay where the store, the report and the evidence read them too
//! (`crate::ladder`, `crate::bisect`, `crate::scan::prove`,
//! `crate::report::verify`): moved here, they would tie those modules to
//! the drivers in an import cycle.

pub(crate) mod bisect;
pub(crate) mod choice;
pub(crate) mod confirm;
pub(crate) mod ladder;
pub(crate) mod orders;
pub(crate) mod prove;
pub(crate) mod screen;
pub(crate) mod verify;

#[cfg(test)]
pub(crate) mod testing {
    //! What the designs' tests share: the fake executor from a script, a
    //! spec resolved with no layers, and a runtime.

    use std::path::Path;

    use tokio::sync::watch;

    use crate::exec::child::Stop;
    use crate::exec::Executor;
    use crate::session::resolve::{resolve, Intent, Layers};
    use crate::session::SessionSpec;

    /// The fake executor answering from `script` (written into `dir`).
    pub(crate) fn fake(dir: &Path, script: &str) -> Executor {
        let path = dir.join("fake.toml");
        std::fs::write(&path, script).unwrap();
        Executor::from_script(Some(&path)).unwrap()
    }

    /// `command` in `dir` with `cells`, `runs` per cell, under seed 1,
    /// resolved with no layers.
    pub(crate) fn spec(
        dir: &Path,
        executor: &Executor,
        command: &[&str],
        cells: &[&str],
        runs: u32,
    ) -> SessionSpec {
        let mut intent = Intent {
            command: command.iter().map(|w| w.to_string()).collect(),
            dir: Some(dir.to_path_buf()),
            cells: cells.iter().map(|c| c.to_string()).collect(),
            seed: Some(1),
            ..Intent::default()
        };
        intent.flags.runs = Some(runs);
        resolve(intent, &Layers::none(), executor).unwrap()
    }

    /// Runs `future` to its end on a runtime of its own, with a stop
    /// signal never sent.
    pub(crate) fn run<T>(future: impl FnOnce(watch::Receiver<Stop>) -> T) -> T::Output
    where
        T: std::future::Future,
    {
        let (_tx, stop) = watch::channel(Stop::Run);
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(future(stop))
    }
}
