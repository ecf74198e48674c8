//! The declared topology ladder: `topologies/ladder.toml`, embedded in the
//! binary, with rungs replaced or added by a project's
//! `.flakelab/topologies/ladder.toml`. Loading is strict and pure.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

const EMBEDDED_NAME: &str = "topologies/ladder.toml";
const EMBEDDED: &str = include_str!("../../topologies/ladder.toml");

/// What one process of a rung runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RungRuns {
    /// The focused test alone, through the recipe's `[select]`.
    Selection,
    /// The command after `--`.
    Command,
    /// The lane declared in `flakelab.toml`.
    Lane,
}

/// How many processes one run of a rung starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Processes {
    /// One.
    One,
    /// P at once (`--processes`).
    Parallel,
}

/// Where each process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkingCopy {
    /// The subject's directory.
    Shared,
    /// A working copy of its own per process.
    Own,
}

/// One declared rung.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rung {
    /// The rung number.
    pub rung: u8,
    /// Short name.
    pub name: String,
    /// The topology, in words.
    pub topology: String,
    /// What one process runs.
    pub runs: RungRuns,
    /// Processes per run.
    pub processes: Processes,
    /// Where they run.
    pub working_copy: WorkingCopy,
    /// What reproducing here shows.
    pub shows: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LadderFile {
    rung: Vec<Rung>,
}

/// Parses one ladder file's text; `source` names it in errors.
pub fn parse(source: &str, text: &str) -> Result<Vec<Rung>> {
    let file: LadderFile = toml::from_str(text).map_err(|e| Error::Catalog {
        path: source.into(),
        message: e.to_string(),
        hint: "fix the file; `topologies/ladder.toml` in flakelab's sources shows every key".into(),
    })?;
    Ok(file.rung)
}

/// The ladder: the embedded rungs, each replaced by the project's rung of
/// the same number, plus the project's new rungs, sorted by number.
pub fn load(override_file: Option<&Path>) -> Result<Vec<Rung>> {
    let mut rungs = parse(EMBEDDED_NAME, EMBEDDED)?;
    if let Some(path) = override_file.filter(|p| p.is_file()) {
        let text = std::fs::read_to_string(path).map_err(|e| Error::Catalog {
            path: path.display().to_string(),
            message: e.to_string(),
            hint: "check the file's permissions".into(),
        })?;
        for rung in parse(&path.display().to_string(), &text)? {
            match rungs.iter_mut().find(|r| r.rung == rung.rung) {
                Some(r) => *r = rung,
                None => rungs.push(rung),
            }
        }
    }
    rungs.sort_by_key(|r| r.rung);
    Ok(rungs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_ladder_has_five_rungs_in_order() {
        let rungs = load(None).unwrap();
        let shape: Vec<_> = rungs
            .iter()
            .map(|r| (r.rung, r.runs, r.processes, r.working_copy))
            .collect();
        use Processes::*;
        use RungRuns::*;
        use WorkingCopy::*;
        assert_eq!(
            shape,
            [
                (1, Selection, One, Shared),
                (2, Command, One, Shared),
                (3, Command, Parallel, Shared),
                (4, Lane, One, Shared),
                (5, Lane, Parallel, Own),
            ]
        );
    }

    #[test]
    fn a_project_rung_replaces_the_embedded_one_with_its_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ladder.toml");
        std::fs::write(
            &path,
            "[[rung]]\nrung = 4\nname = \"ci\"\ntopology = \"t\"\nruns = \"command\"\n\
             processes = \"parallel\"\nworking_copy = \"shared\"\nshows = \"s\"\n",
        )
        .unwrap();
        let rungs = load(Some(&path)).unwrap();
        assert_eq!(rungs.len(), 5);
        assert_eq!(rungs[3].name, "ci");
        assert_eq!(rungs[3].processes, Processes::Parallel);
    }

    #[test]
    fn an_unknown_key_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ladder.toml");
        std::fs::write(&path, "[[rung]]\nrung = 1\nprocesess = \"one\"\n").unwrap();
        let e = load(Some(&path)).unwrap_err().to_string();
        assert!(e.contains("ladder.toml") && e.contains("processes"), "{e}");
    }
}
