//! Ingesting CI's JUnit reports (files, directories, quoted globs, as
//! `flakelab ingest REPORT...` names them): read one at a time through the
//! tolerant reader, each recorded
//! with its context and provenance by the store, a report already
//! recorded skipped. Memory follows the largest report, not their number:
//! a report is hashed as it is parsed, and dropped once written. The
//! reports are written through a [`Sink`], which the store implements
//! (history never names the store: the store's history file reads this
//! module's records).

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::history::context::Recorded;
use crate::history::{identity, Head, Observation, ReportRecord, REPORT_SCHEMA};
use crate::redact::{Redaction, REDACTED};

/// Where ingested reports are recorded: the store's history file.
pub trait Sink {
    /// The identity keys recorded already (complete and folded reports)
    /// and the complete reports' heads, first seen first.
    fn index(&self) -> Result<(HashSet<String>, Vec<Head>)>;
    /// Records one report and its observations, in one write.
    fn append(&self, report: &ReportRecord, obs: &[Observation]) -> Result<()>;
}

/// The store is where ingested reports go.
impl Sink for crate::store::Store {
    fn index(&self) -> Result<(HashSet<String>, Vec<Head>)> {
        let index = self.history_index()?;
        Ok((index.keys, index.heads))
    }

    fn append(&self, report: &ReportRecord, obs: &[Observation]) -> Result<()> {
        self.append_report(report, obs)
    }
}

/// What one ingest did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct IngestSummary {
    /// Reports recorded.
    pub recorded: u64,
    /// Observations recorded.
    pub observations: u64,
    /// Reports skipped: the same execution is recorded already.
    pub duplicates: u64,
    /// Bytes of the reports read.
    pub bytes: u64,
    /// Reports that could not be read, with why (each recorded with no
    /// observation, as runner-infrastructure evidence).
    pub unreadable: Vec<String>,
    /// Matrix legs the history cannot tell apart
    /// (`identity::indistinct_legs`), after this ingest.
    pub indistinct_legs: Vec<String>,
}

/// Ingests every report `inputs` names into `store`'s history with
/// `recorded`'s context and provenance. A report that cannot be read is
/// listed in [`IngestSummary::unreadable`] and the rest go on; an input
/// that names nothing is an error (before anything is written). What is
/// recorded is masked by `redaction` as a run's records are (context and
/// provenance values, paths, test ids and files, reasons); a report's
/// identity key is taken before, so it does not change with the masking.
pub fn ingest_reports(
    store: &impl Sink,
    inputs: &[PathBuf],
    recorded: &Recorded,
    redaction: &Redaction,
) -> Result<IngestSummary> {
    let masked = masked(recorded, redaction);
    let mut files = Vec::new();
    for input in inputs {
        let found = expand(input)?;
        if found.is_empty() {
            return Err(Error::usage(
                format!("{} names no JUnit report (no *.xml file)", input.display()),
                "give report files, a directory holding them, or a quoted glob such as 'reports/**/*.xml'",
            ));
        }
        files.extend(found);
    }
    let (mut keys, mut heads) = store.index()?;
    let mut summary = IngestSummary::default();
    for (file, shown) in files {
        let (obs, digest, infra, readable) = match read_report(&file) {
            Err(e) => {
                summary.unreadable.push(format!("{}: {e}", file.display()));
                let digest = digest_of(&file);
                let why = vec![format!("the report could not be read: {e}")];
                (Vec::new(), digest, why, false)
            }
            Ok((parsed, digest, bytes)) => {
                summary.bytes += bytes;
                (
                    identity::observations(&parsed.cases),
                    digest,
                    parsed.infra,
                    true,
                )
            }
        };
        let key = identity::report_key(
            &recorded.context,
            recorded.commit.as_deref(),
            recorded.provenance.attempt.as_deref(),
            &shown,
            &digest,
        );
        if keys.contains(&key) {
            summary.duplicates += 1;
            continue;
        }
        let text = |t: &str| redaction.text(t).into_owned();
        let obs: Vec<Observation> = (obs.into_iter())
            .map(|mut o| {
                o.test = text(&o.test);
                o.file = o.file.as_deref().map(text);
                o
            })
            .collect();
        let report = ReportRecord {
            schema: REPORT_SCHEMA.to_string(),
            key: key.clone(),
            context: masked.context.clone(),
            commit: masked.commit.clone(),
            provenance: masked.provenance.clone(),
            path: text(&shown),
            digest,
            n: obs.len() as u64,
            infra: infra.iter().map(|i| text(i)).collect(),
        };
        store.append(&report, &obs)?;
        heads.push(Head::of(&report));
        keys.insert(key);
        if readable {
            summary.recorded += 1;
            summary.observations += obs.len() as u64;
        }
    }
    summary.indistinct_legs = identity::indistinct_legs(&heads);
    Ok(summary)
}

/// `recorded` as it is stored: a context value under a credential-like
/// name replaced, credential values masked in every value.
fn masked(recorded: &Recorded, redaction: &Redaction) -> Recorded {
    let text = |t: &str| redaction.text(t).into_owned();
    let opt = |t: &Option<String>| t.as_deref().map(text);
    let context = (recorded.context.iter())
        .map(|(k, v)| {
            let v = if redaction.is_secret(k) {
                REDACTED.to_string()
            } else {
                text(v)
            };
            (text(k), v)
        })
        .collect();
    let p = &recorded.provenance;
    let mut provenance = p.clone();
    provenance.provider = opt(&p.provider);
    provenance.run = opt(&p.run);
    provenance.job = opt(&p.job);
    provenance.attempt = opt(&p.attempt);
    provenance.url = opt(&p.url);
    Recorded {
        context,
        commit: opt(&recorded.commit),
        provenance,
    }
}

/// `sha256:HEX` of the file's bytes as far as they can be read (a report
/// that cannot be opened hashes as no bytes).
fn digest_of(path: &Path) -> String {
    let mut hash = Sha256::new();
    if let Ok(mut f) = File::open(path) {
        let mut buf = vec![0u8; 1 << 16];
        while let Ok(n) = f.read(&mut buf) {
            if n == 0 {
                break;
            }
            hash.update(&buf[..n]);
        }
    }
    let hex: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// A reader that hashes what passes through it.
struct Hashing<R> {
    inner: R,
    hash: Sha256,
    bytes: u64,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

/// Parses the report at `path`, hashing its bytes as they are read (the
/// rest after the root element too): the cases, `sha256:HEX`, the size.
fn read_report(
    path: &Path,
) -> std::result::Result<
    (crate::results::junit::Parsed, String, u64),
    crate::results::junit::JunitError,
> {
    let io_error = |e: io::Error| crate::results::junit::JunitError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let file = File::open(path).map_err(io_error)?;
    let size = file.metadata().map_err(io_error)?.len();
    if size > crate::results::junit::MAX_INPUT {
        return Err(crate::results::junit::JunitError::TooLarge {
            limit: crate::results::junit::MAX_INPUT,
        });
    }
    let mut hashing = Hashing {
        inner: file,
        hash: Sha256::new(),
        bytes: 0,
    };
    let parsed = crate::results::junit::parse_known_size(&mut hashing, size)?;
    io::copy(&mut hashing, &mut io::sink()).map_err(io_error)?;
    let hex: String = hashing
        .hash
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok((parsed, format!("sha256:{hex}"), hashing.bytes))
}

/// The report files an input names, each with the path it is recorded
/// under: a file by its name; a directory's `*.xml` files (recursively,
/// sorted) by their path below it; a glob's matches by their path below
/// the glob's literal prefix.
fn expand(input: &Path) -> Result<Vec<(PathBuf, String)>> {
    let text = input.to_string_lossy();
    if text.contains(['*', '?', '[']) && !input.exists() {
        return glob(&text);
    }
    let meta = fs::metadata(input).map_err(|e| {
        Error::usage(
            format!("cannot read {}: {e}", input.display()),
            "give report files, a directory holding them, or a quoted glob such as 'reports/**/*.xml'",
        )
    })?;
    if meta.is_dir() {
        let mut out = Vec::new();
        walk(input, &mut out)?;
        out.sort();
        Ok(out
            .into_iter()
            .filter(|p| p.extension().is_some_and(|x| x.eq_ignore_ascii_case("xml")))
            .map(|p| {
                let shown = rel(&p, input);
                (p, shown)
            })
            .collect())
    } else {
        let shown = input
            .file_name()
            .map_or_else(|| text.to_string(), |n| n.to_string_lossy().into_owned());
        Ok(vec![(input.to_path_buf(), shown)])
    }
}

fn rel(p: &Path, base: &Path) -> String {
    p.strip_prefix(base)
        .unwrap_or(p)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = fs::read_dir(dir).map_err(|e| {
        Error::usage(
            format!("cannot list {}: {e}", dir.display()),
            "check the directory's permissions",
        )
    })?;
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => walk(&path, out)?,
            Ok(t) if t.is_file() => out.push(path),
            _ => {}
        }
    }
    Ok(())
}

/// Expands a glob (`*` within a component, `**` across components, `?`,
/// `[…]`) below its literal prefix.
fn glob(pattern: &str) -> Result<Vec<(PathBuf, String)>> {
    let parts: Vec<&str> = pattern.split('/').collect();
    let literal = parts
        .iter()
        .take_while(|p| !p.contains(['*', '?', '[']))
        .count();
    let base: PathBuf = if literal == 0 {
        PathBuf::from(".")
    } else if pattern.starts_with('/') && literal == 1 {
        PathBuf::from("/")
    } else {
        PathBuf::from(parts[..literal].join("/"))
    };
    let rest = parts[literal..].join("/");
    let mut re = String::from("^");
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' if chars.peek() == Some(&'*') => {
                chars.next();
                if chars.peek() == Some(&'/') {
                    chars.next();
                    re.push_str("(?:.*/)?");
                } else {
                    re.push_str(".*");
                }
            }
            '*' => re.push_str("[^/]*"),
            '?' => re.push_str("[^/]"),
            '[' => {
                re.push('[');
                for c in chars.by_ref() {
                    re.push(c);
                    if c == ']' {
                        break;
                    }
                }
            }
            c => re.push_str(&regex::escape(&c.to_string())),
        }
    }
    re.push('$');
    let re = regex::Regex::new(&re).map_err(|e| {
        Error::usage(
            format!("invalid glob {pattern:?}: {e}"),
            "use *, ** and ? (for example 'reports/**/*.xml')",
        )
    })?;
    let mut found = Vec::new();
    if base.is_dir() {
        walk(&base, &mut found)?;
    }
    found.sort();
    Ok(found
        .into_iter()
        .filter_map(|p| {
            let shown = rel(&p, &base);
            re.is_match(&shown).then_some((p, shown))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_directories_and_files() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::create_dir_all(d.join("a/b")).unwrap();
        for f in ["a/x.xml", "a/b/y.xml", "a/b/z.txt", "top.xml"] {
            fs::write(d.join(f), "<testsuite/>").unwrap();
        }
        let shown = |v: Vec<(PathBuf, String)>| v.into_iter().map(|(_, s)| s).collect::<Vec<_>>();
        assert_eq!(shown(expand(&d.join("a")).unwrap()), ["b/y.xml", "x.xml"]);
        assert_eq!(shown(expand(&d.join("top.xml")).unwrap()), ["top.xml"]);
        let g = format!("{}/a/**/*.xml", d.display());
        assert_eq!(shown(glob(&g).unwrap()), ["b/y.xml", "x.xml"]);
        let g = format!("{}/a/*.xml", d.display());
        assert_eq!(shown(glob(&g).unwrap()), ["x.xml"]);
        let g = format!("{}/*/b/?.xml", d.display());
        assert_eq!(shown(glob(&g).unwrap()), ["a/b/y.xml"]);
    }

    #[test]
    fn a_credential_in_the_runs_page_is_masked_and_its_day_kept() {
        let redaction = Redaction::new(&[]).with_values([("CI_TOKEN", "s3cr3t-t0ken-value")]);
        let recorded = Recorded {
            provenance: crate::history::Provenance {
                url: Some("https://ci:s3cr3t-t0ken-value@ci.example/run/1".into()),
                ingested: Some("2026-12-07T01:00:00Z".into()),
                ..Default::default()
            },
            ..Recorded::default()
        };
        let m = masked(&recorded, &redaction);
        assert_eq!(
            m.provenance.url,
            Some(format!("https://ci:{REDACTED}@ci.example/run/1"))
        );
        assert_eq!(
            m.provenance.ingested.as_deref(),
            Some("2026-12-07T01:00:00Z")
        );
    }
}
