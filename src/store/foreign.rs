//! Another store, brought in: opened from a directory or a `.tar` /
//! `.tar.gz` archive of one (unpacked entry by entry within limits), checked
//! to hold regular files and directories only, and a run's kept files
//! copied from it, never through a link (`flakelab merge`).

use std::path::{Component, Path, PathBuf};

use super::Store;
use crate::error::{Error, Result};
use crate::record::RunRecord;

/// One input, opened: its store and the name it is shown by.
pub(crate) struct Source {
    /// The name it is shown by (the path given).
    pub(crate) shown: String,
    /// Its store.
    pub(crate) store: Store,
    /// Holds an unpacked archive until the merge is done.
    _unpacked: Option<tempfile::TempDir>,
}

impl Store {
    /// Copies a run's log and JUnit report (those kept in its store) along.
    pub(crate) fn copy_run_files(&self, from: &Store, run: &RunRecord) -> Result<()> {
        for rel in [&run.log, &run.junit].into_iter().flatten() {
            if !inside(rel) {
                continue;
            }
            let src = from.root().join(rel);
            let dst = self.root().join(rel);
            if std::fs::symlink_metadata(&dst).is_ok() {
                continue;
            }
            // Never through a link: the inputs were checked, and are opened
            // without following one all the same.
            let mut input = match crate::store::open::read(&src) {
                Ok(input) => input,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::store(&src, e, NOTHING_LINKED)),
            };
            let writable = |e| Error::store(&dst, e, "check that the merged store is writable");
            if let Some(parent) = dst.parent() {
                std::fs::create_dir_all(parent).map_err(writable)?;
            }
            let mut output = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&dst)
                .map_err(writable)?;
            std::io::copy(&mut input, &mut output).map_err(writable)?;
        }
        Ok(())
    }
}

/// A store-relative path that stays inside the store.
fn inside(path: &Path) -> bool {
    path.is_relative() && path.components().all(|c| matches!(c, Component::Normal(_)))
}

/// The fix for a store that holds something other than regular files.
const NOTHING_LINKED: &str =
    "a store to merge holds regular files and directories only: replace the link, FIFO or device by the file it stands for (nothing was written)";

/// Refuses a store directory that holds anything but directories and
/// regular files with one link each: a symbolic link (to `/proc/self/environ`,
/// another store, any host file), a FIFO, a device or a hard link to a file
/// outside it would carry what is not the store's into the merged one.
fn only_files(root: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| Error::store(&dir, e, NOTHING_LINKED))?;
        for entry in entries {
            let path = entry
                .map_err(|e| Error::store(&dir, e, NOTHING_LINKED))?
                .path();
            let meta = std::fs::symlink_metadata(&path)
                .map_err(|e| Error::store(&path, e, NOTHING_LINKED))?;
            let kind = meta.file_type();
            let refused = if kind.is_dir() {
                dirs.push(path.clone());
                None
            } else if kind.is_symlink() {
                Some("is a symbolic link")
            } else if !kind.is_file() {
                Some("is not a regular file (a FIFO, a socket or a device)")
            } else if meta.nlink() > 1 {
                Some("is a hard link to a file that may be outside the store")
            } else {
                None
            };
            if let Some(what) = refused {
                return Err(Error::store(&path, what, NOTHING_LINKED));
            }
        }
    }
    Ok(())
}

/// Opens one input: a store directory, a directory holding one store, or
/// an archive of one (unpacked into a temporary directory).
pub(crate) fn open_source(path: &Path, limits: Limits) -> Result<Source> {
    let shown = path.display().to_string();
    let not_store = |what: &str| {
        Error::usage(
            format!("{shown} {what}"),
            "give store directories (e.g. .flakelab) or .tar / .tar.gz archives of one",
        )
    };
    if path.is_dir() {
        let root = find_store(path).ok_or_else(|| not_store("holds no flakelab store"))?;
        only_files(&root)?;
        return Ok(Source {
            shown,
            store: Store::open(&root)?,
            _unpacked: None,
        });
    }
    if !path.is_file() {
        return Err(not_store("does not exist"));
    }
    let name = path.to_string_lossy().to_lowercase();
    let gz = name.ends_with(".tar.gz") || name.ends_with(".tgz");
    if !gz && !name.ends_with(".tar") {
        return Err(not_store(
            "is neither a directory nor a .tar / .tar.gz / .tgz archive",
        ));
    }
    let tmp = tempfile::tempdir().map_err(|e| {
        Error::store(
            std::env::temp_dir(),
            e,
            "set TMPDIR to a writable directory",
        )
    })?;
    let file = std::fs::File::open(path)
        .map_err(|e| Error::store(path, e, "check the archive's permissions"))?;
    let reader: Box<dyn std::io::Read> = if gz {
        Box::new(flate2::read::GzDecoder::new(file))
    } else {
        Box::new(file)
    };
    unpack(reader, tmp.path(), limits).map_err(|e| match e {
        Unpack::Refused(why) => Error::usage(format!("{shown}: {why}"), NOTHING_LINKED),
        Unpack::TooBig(why) => Error::usage(
            format!("{shown}: {why}"),
            "raise --unpack-limit / --unpack-entries if the archive is a store you trust (nothing was written)",
        ),
        Unpack::Full(e) => Error::store_io(
            tmp.path(),
            &e,
            "the temporary directory is full: set TMPDIR to a directory with room for the unpacked store",
        ),
        Unpack::Other(e) => not_store(&format!("cannot be unpacked: {e}")),
    })?;
    let root = find_store(tmp.path()).ok_or_else(|| not_store("holds no flakelab store"))?;
    Ok(Source {
        shown,
        store: Store::open(&root)?,
        _unpacked: Some(tmp),
    })
}

/// `dir` itself when it is a store, else the one store up to three levels
/// below it (an artifact's or archive's wrapping directories).
fn find_store(dir: &Path) -> Option<PathBuf> {
    if Store::is_store(dir) {
        return Some(dir.to_path_buf());
    }
    let mut level = vec![dir.to_path_buf()];
    for _ in 0..3 {
        let mut next = Vec::new();
        for d in &level {
            let Ok(entries) = std::fs::read_dir(d) else {
                continue;
            };
            let mut children: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                // A link to a directory is not followed to find a store.
                .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()))
                .collect();
            children.sort();
            if let Some(found) = children.iter().find(|p| Store::is_store(p)) {
                return Some(found.clone());
            }
            next.extend(children);
        }
        level = next;
    }
    None
}

/// How much one archive may unpack.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Bytes of file content, added up.
    pub bytes: u64,
    /// Entries, files and directories alike.
    pub entries: u64,
}

/// Why an archive was not unpacked.
#[derive(Debug)]
enum Unpack {
    /// It holds an entry a store must not (a link, a device, a FIFO, a
    /// path leaving the directory).
    Refused(String),
    /// It is larger than the limits.
    TooBig(String),
    /// The temporary directory's filesystem is full (ENOSPC, EDQUOT).
    Full(std::io::Error),
    /// Anything else (a corrupt archive).
    Other(std::io::Error),
}

/// Unpacks the archive `reader` into `dir`, entry by entry: directories and
/// regular files only, each inside `dir`, within `limits` (checked from the
/// headers, before any byte of the entry is written).
fn unpack(
    reader: impl std::io::Read,
    dir: &Path,
    limits: Limits,
) -> std::result::Result<(), Unpack> {
    use tar::EntryType;
    let mut archive = tar::Archive::new(reader);
    let (mut bytes, mut entries) = (0u64, 0u64);
    for entry in archive.entries().map_err(Unpack::Other)? {
        let mut entry = entry.map_err(Unpack::Other)?;
        let kind = entry.header().entry_type();
        let name = entry
            .path()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "an entry".into());
        match kind {
            EntryType::Regular | EntryType::Continuous | EntryType::Directory => {}
            EntryType::XGlobalHeader | EntryType::XHeader => continue,
            EntryType::Symlink => {
                return Err(Unpack::Refused(format!("{name} is a symbolic link")))
            }
            EntryType::Link => return Err(Unpack::Refused(format!("{name} is a hard link"))),
            _ => {
                return Err(Unpack::Refused(format!(
                    "{name} is not a regular file or a directory ({kind:?})"
                )))
            }
        }
        entries += 1;
        bytes = bytes.saturating_add(entry.header().size().map_err(Unpack::Other)?);
        if entries > limits.entries {
            return Err(Unpack::TooBig(format!(
                "it holds more than {} entries (--unpack-entries)",
                limits.entries
            )));
        }
        if bytes > limits.bytes {
            return Err(Unpack::TooBig(format!(
                "it unpacks to more than {} bytes (--unpack-limit)",
                limits.bytes
            )));
        }
        // `unpack_in` refuses a path that would land outside `dir`.
        match entry.unpack_in(dir) {
            Ok(true) => {}
            Ok(false) => {
                return Err(Unpack::Refused(format!(
                    "{name} would land outside the store"
                )))
            }
            Err(e) if full(&e) => {
                return Err(Unpack::Full(std::io::Error::from_raw_os_error(
                    nix::libc::ENOSPC,
                )))
            }
            Err(e) => return Err(Unpack::Other(e)),
        }
    }
    Ok(())
}

/// Whether `e` (or an error it wraps: the tar crate adds the entry's path)
/// says the filesystem is full.
fn full(e: &std::io::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            if matches!(
                io.raw_os_error(),
                Some(nix::libc::ENOSPC | nix::libc::EDQUOT)
            ) {
                return true;
            }
        }
        cause = c.source();
    }
    false
}
