//! The declared catalog: perturbations and named matrices from the TOML
//! files under `perturbations/` (embedded in the binary), overridden entry by
//! entry by a project's own `.flakelab/perturbations/*.toml`.
//!
//! Loading is strict (unknown keys fail, naming the file and the key) and
//! otherwise pure; resolving a cell spec turns user text into typed
//! [`Cell`]s. Host checks (does this zone exist here?) live in `perturb`.

pub(crate) mod class;
pub(crate) mod perturbation;
pub mod recipe;
pub mod topology;
pub(crate) mod values;

use crate::redact::Redaction;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use perturbation::{Composed, Kind, KindInfo, KINDS};

use crate::error::{Error, Result};

/// The perturbation files embedded in the binary, with their names.
const EMBEDDED: &[(&str, &str)] = &[
    (
        "perturbations/zones.toml",
        include_str!("../../perturbations/zones.toml"),
    ),
    (
        "perturbations/environment.toml",
        include_str!("../../perturbations/environment.toml"),
    ),
    (
        "perturbations/kernel.toml",
        include_str!("../../perturbations/kernel.toml"),
    ),
    (
        "perturbations/calendar.toml",
        include_str!("../../perturbations/calendar.toml"),
    ),
    (
        "perturbations/runner.toml",
        include_str!("../../perturbations/runner.toml"),
    ),
    (
        "perturbations/matrices.toml",
        include_str!("../../perturbations/matrices.toml"),
    ),
];

/// One declared perturbation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Declared {
    /// Name used in `-p NAME` and in matrices.
    pub name: String,
    /// One-line summary.
    pub summary: String,
    /// The flake class it helps settle.
    pub settles: String,
    /// The perturbation itself: one kind, or several applied together.
    pub perturb: Composed,
    /// The file it came from (filled in on load).
    #[serde(skip_deserializing, default)]
    pub source: String,
}

/// One named set of cells.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Matrix {
    /// Name used in `--matrix NAME`.
    pub name: String,
    /// One-line summary.
    pub summary: String,
    /// Cell specs.
    pub cells: Vec<String>,
    /// The file it came from (filled in on load).
    #[serde(skip_deserializing, default)]
    pub source: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CatalogFile {
    #[serde(default)]
    perturbation: Vec<Declared>,
    #[serde(default)]
    matrix: Vec<Matrix>,
}

/// A cell: perturbations applied together; the baseline has none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    /// `baseline`, or the spec as the user wrote it.
    pub name: String,
    /// The perturbations.
    pub perturbations: Vec<Kind>,
}

impl Cell {
    /// The baseline cell.
    pub fn baseline() -> Cell {
        Cell {
            name: "baseline".into(),
            perturbations: Vec::new(),
        }
    }

    /// The perturbations in canonical `kind=value` form, as recorded
    /// (credential-like values redacted).
    pub fn canonical(&self) -> Vec<String> {
        self.recorded(&Redaction::default())
    }

    /// [`Cell::canonical`] with the project's own redaction.
    pub fn recorded(&self, redaction: &Redaction) -> Vec<String> {
        self.perturbations
            .iter()
            .map(|k| k.recorded(redaction))
            .collect()
    }

    /// The cell with a name that carries no credential under `redaction`
    /// (a cell typed as `env=NAME=VALUE` is named by its recorded form).
    pub fn redacted(mut self, redaction: &Redaction) -> Cell {
        let recorded = self.recorded(redaction);
        if self.key() != recorded && self.name.contains('=') {
            // Never let a credential reach a record through the cell's name.
            self.name = recorded.join("+");
        }
        self
    }

    /// The exact perturbations, unredacted: two cells with the same key are
    /// the same cell.
    pub fn key(&self) -> Vec<String> {
        self.perturbations.iter().map(Kind::to_string).collect()
    }
}

/// The loaded catalog.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Declared perturbations, embedded first, then project additions.
    pub perturbations: Vec<Declared>,
    /// Named matrices.
    pub matrices: Vec<Matrix>,
}

impl Catalog {
    /// Loads the embedded catalog, then the project's overrides from
    /// `override_dir` (normally `<dir>/.flakelab/perturbations`) if it exists.
    pub fn load(override_dir: Option<&Path>) -> Result<Catalog> {
        let mut catalog = Catalog::default();
        for (name, text) in EMBEDDED {
            catalog.merge(parse_file(name, text)?, name)?;
        }
        if let Some(dir) = override_dir.filter(|d| d.is_dir()) {
            let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
                .map_err(|e| catalog_err(dir, e.to_string(), "check the directory's permissions"))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect();
            files.sort();
            for path in files {
                let text = std::fs::read_to_string(&path).map_err(|e| {
                    catalog_err(&path, e.to_string(), "check the file's permissions")
                })?;
                let shown = path.display().to_string();
                catalog.merge(parse_file(&shown, &text)?, &shown)?;
            }
        }
        catalog.validate()?;
        Ok(catalog)
    }

    /// Adds one catalog file's text (named `source` in errors) on top of
    /// this catalog, as [`Catalog::load`] adds a project's file, and checks
    /// the result. On an error the catalog may hold part of the file.
    pub fn add_text(&mut self, source: &str, text: &str) -> Result<()> {
        self.merge(parse_file(source, text)?, source)?;
        self.validate()
    }

    fn merge(&mut self, file: CatalogFile, source: &str) -> Result<()> {
        let mut seen = std::collections::HashSet::new();
        for mut p in file.perturbation {
            check_name(&p.name, source)?;
            if !seen.insert(p.name.clone()) {
                return Err(catalog_err(
                    source,
                    format!("perturbation `{}` is declared twice", p.name),
                    "give each [[perturbation]] a distinct name",
                ));
            }
            p.perturb.validate().map_err(|message| {
                catalog_err(
                    source,
                    format!("perturbation `{}`, key `perturb`: {message}", p.name),
                    "fix the value; `flakelab run --help` shows each kind's syntax",
                )
            })?;
            p.source = source.to_string();
            match self.perturbations.iter_mut().find(|q| q.name == p.name) {
                Some(q) => *q = p,
                None => self.perturbations.push(p),
            }
        }
        for mut m in file.matrix {
            check_name(&m.name, source)?;
            m.source = source.to_string();
            match self.matrices.iter_mut().find(|q| q.name == m.name) {
                Some(q) => *q = m,
                None => self.matrices.push(m),
            }
        }
        Ok(())
    }

    fn validate(&self) -> Result<()> {
        for m in &self.matrices {
            for spec in &m.cells {
                self.cell(spec).map_err(|message| {
                    catalog_err(
                        &m.source,
                        format!("matrix `{}`, cell `{spec}`: {message}", m.name),
                        "use a declared perturbation name or kind=value",
                    )
                })?;
            }
        }
        Ok(())
    }

    /// The declared perturbation with this name.
    pub fn declared(&self, name: &str) -> Option<&Declared> {
        self.perturbations.iter().find(|p| p.name == name)
    }

    /// The matrix with this name.
    pub fn matrix(&self, name: &str) -> Option<&Matrix> {
        self.matrices.iter().find(|m| m.name == name)
    }

    /// Resolves a cell spec (`name`, `kind=value`, or several joined by `+`).
    pub fn cell(&self, spec: &str) -> Result<Cell, String> {
        let mut perturbations = Vec::new();
        for item in perturbation::split_cell(spec, |n| self.declared(n).is_some()) {
            if let Some(d) = self.declared(item) {
                perturbations.extend(d.perturb.0.iter().cloned());
            } else if let Some(kind) = Kind::parse(item)? {
                perturbations.push(kind);
            } else {
                return Err(self.unknown(item));
            }
        }
        perturbation::check_composition(&perturbations)?;
        Ok(Cell {
            name: spec.to_string(),
            perturbations,
        }
        .redacted(&Redaction::default()))
    }

    fn unknown(&self, item: &str) -> String {
        let kinds: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
        let close: Vec<&str> = self
            .perturbations
            .iter()
            .map(|p| p.name.as_str())
            .filter(|n| n.contains(item) || item.contains(*n))
            .collect();
        let mut msg = format!(
            "unknown perturbation `{item}`: not a declared name and not one of the kinds {}",
            kinds.join(", ")
        );
        if !close.is_empty() {
            msg.push_str(&format!(" (did you mean {}?)", close.join(", ")));
        }
        msg
    }
}

fn parse_file(source: &str, text: &str) -> Result<CatalogFile> {
    toml::from_str(text).map_err(|e| {
        catalog_err(
            source,
            e.message().to_string() + &span_hint(text, e.span()),
            "fix the key or value named above; `flakelab perturbations` lists valid entries",
        )
    })
}

fn span_hint(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    match span {
        Some(r) => {
            let line = text[..r.start.min(text.len())].matches('\n').count() + 1;
            format!(" (line {line})")
        }
        None => String::new(),
    }
}

fn check_name(name: &str, source: &str) -> Result<()> {
    let bad = name.is_empty()
        || name.contains(['+', '=', ' '])
        || KINDS.iter().any(|k| k.name == name)
        || name == "baseline";
    if bad {
        return Err(catalog_err(
            source,
            format!("name `{name}` is not allowed"),
            "names are non-empty, contain no `+`, `=` or spaces, and are not a kind or `baseline`",
        ));
    }
    Ok(())
}

fn catalog_err(path: impl AsRef<Path>, message: String, hint: &str) -> Error {
    Error::Catalog {
        path: path.as_ref().display().to_string(),
        message,
        hint: hint.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_catalog_loads_with_a_standard_matrix() {
        let c = Catalog::load(None).unwrap();
        let standard = c.matrix("standard").expect("standard matrix");
        assert!(!standard.cells.is_empty());
        assert_eq!(
            c.cell("tz-kiritimati").unwrap().canonical(),
            ["tz=Pacific/Kiritimati"]
        );
    }

    #[test]
    fn project_overrides_replace_by_name_and_add() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("mine.toml"),
            r#"
[[perturbation]]
name = "tz-kiritimati"
summary = "overridden"
settles = "clock and zone"
perturb = { kind = "tz", zone = "Asia/Tokyo" }

[[perturbation]]
name = "debug-on"
summary = "DEBUG=1"
settles = "process-global contamination"
perturb = { kind = "env", set = { DEBUG = "1" } }
"#,
        )
        .unwrap();
        let c = Catalog::load(Some(dir.path())).unwrap();
        assert_eq!(c.declared("tz-kiritimati").unwrap().summary, "overridden");
        let cell = c.cell("tz-kiritimati+debug-on").unwrap();
        assert_eq!(cell.canonical(), ["tz=Asia/Tokyo", "env=DEBUG=1"]);
    }

    #[test]
    fn unknown_keys_fail_naming_file_and_key() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("bad.toml"),
            "[[perturbation]]\nname = \"x\"\nsumary = \"typo\"\nsettles = \"s\"\nperturb = { kind = \"tz\", zone = \"UTC\" }\n",
        )
        .unwrap();
        let err = Catalog::load(Some(dir.path())).unwrap_err().to_string();
        assert!(err.contains("bad.toml"), "{err}");
        assert!(err.contains("sumary"), "{err}");
        assert!(err.contains("line 3"), "{err}");
    }

    #[test]
    fn matrix_with_unknown_cell_is_a_catalog_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("m.toml"),
            "[[matrix]]\nname = \"mine\"\nsummary = \"s\"\ncells = [\"tz-nowhere\"]\n",
        )
        .unwrap();
        let err = Catalog::load(Some(dir.path())).unwrap_err().to_string();
        assert!(err.contains("matrix `mine`"), "{err}");
        assert!(err.contains("tz-nowhere"), "{err}");
    }

    #[test]
    fn a_composed_perturbation_is_a_list_and_its_cell_has_every_kind() {
        let c = Catalog::load(None).unwrap();
        let leap = c.cell("cal-leap-day").unwrap();
        assert_eq!(
            leap.canonical(),
            ["tz=Europe/Berlin", "faketime=@2028-02-29 23:59:58"]
        );
        assert_eq!(
            c.declared("cal-leap-day").unwrap().perturb.name(),
            "tz+faketime"
        );
        let calendar = c.matrix("calendar").expect("calendar matrix");
        assert_eq!(calendar.cells.len(), 5);
        for spec in &calendar.cells {
            let cell = c.cell(spec).unwrap();
            assert_eq!(cell.perturbations.len(), 2, "{spec}");
        }
        let mut own = Catalog::load(None).unwrap();
        own.add_text(
            "mine.toml",
            "[[perturbation]]\nname = \"dst-paris\"\nsummary = \"s\"\nsettles = \"clock and zone\"\nperturb = [{ kind = \"tz\", zone = \"Europe/Paris\" }, { kind = \"faketime\", clock = \"@dst-3s\" }]\n",
        )
        .unwrap();
        assert_eq!(
            own.cell("dst-paris").unwrap().canonical(),
            ["tz=Europe/Paris", "faketime=@dst-3s"]
        );
        // A typo inside the list is named.
        let err = Catalog::default()
            .add_text(
                "bad.toml",
                "[[perturbation]]\nname = \"x\"\nsummary = \"s\"\nsettles = \"s\"\nperturb = [{ kind = \"tz\", zon = \"UTC\" }]\n",
            )
            .unwrap_err()
            .to_string();
        assert!(err.contains("zon"), "{err}");
    }

    #[test]
    fn a_start_before_the_dst_change_needs_the_zone_in_its_cell() {
        let c = Catalog::load(None).unwrap();
        let err = c.cell("faketime=@dst-5s").unwrap_err();
        assert!(err.contains("needs tz=ZONE in the same cell"), "{err}");
        assert!(c.cell("faketime=@dst-5s+tz=Europe/Berlin").is_ok());
        let err = Catalog::default()
            .add_text(
                "bad.toml",
                "[[perturbation]]\nname = \"x\"\nsummary = \"s\"\nsettles = \"s\"\nperturb = { kind = \"faketime\", clock = \"@dst-5s\" }\n",
            )
            .unwrap_err()
            .to_string();
        assert!(err.contains("needs tz=ZONE"), "{err}");
    }

    #[test]
    fn unknown_item_suggests_close_names() {
        let c = Catalog::load(None).unwrap();
        let err = c.cell("kiritimati").unwrap_err();
        assert!(err.contains("did you mean tz-kiritimati"), "{err}");
    }
}
