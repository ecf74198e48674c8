//! A JUnit path the user named (`--junit`, `FLAKELAB_JUNIT`, `[run] junit`)
//! is the user's, not flakelab's: nothing at it is ever deleted or followed.
//! Just before each run the file at the path (if any) is noted; after the
//! run its report is read only when the run wrote it (the file is new, or
//! changed since it was noted), so a report left by an earlier run, or any
//! file of the user's, never passes for the run's own.
//!
//! A path from `flakelab.toml` must also stay inside the project: a file in
//! a cloned repository must not make the runner write anywhere else.

use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
use std::path::{Component, Path};

/// What identifies the entry at a path at one moment (the link itself, for
/// a link): a write, a truncation or a replacement changes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Noted {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

/// The entry at `path` now, without following a link; `None` when there
/// is none.
pub(crate) fn note(path: &Path) -> Option<Noted> {
    let m = std::fs::symlink_metadata(path).ok()?;
    Some(Noted {
        dev: m.dev(),
        ino: m.ino(),
        size: m.size(),
        mtime: (m.mtime(), m.mtime_nsec()),
        ctime: (m.ctime(), m.ctime_nsec()),
    })
}

/// Why the report at `path` is not the run's own and is not read (`before`:
/// the entry noted just before the run started), or `None` when it may be
/// read (a missing file is left to the reader, which says it is missing).
pub(crate) fn not_the_runs(path: &Path, before: Option<Noted>) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let kind = meta.file_type();
    let shown = path.display();
    if kind.is_symlink() {
        return Some(format!(
            "the report path {shown} is a symbolic link: flakelab reads no report through a link (name the file itself)"
        ));
    }
    if !kind.is_file() {
        let what = if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_dir() {
            "a directory"
        } else if kind.is_block_device() || kind.is_char_device() {
            "a device"
        } else {
            "not a regular file"
        };
        return Some(format!(
            "the report path {shown} is {what}, not a report the run wrote"
        ));
    }
    if before.is_some() && note(path) == before {
        return Some(format!(
            "the run wrote no report: {shown} is the file that was there before it started, unchanged (flakelab never deletes a file it did not write)"
        ));
    }
    None
}

/// Checks a report path from `flakelab.toml` (`template`, with `{run}`)
/// against the project directory `dir`: relative, without `..`, and not
/// leaving `dir` through a link on the way. Returns why it is refused.
pub(crate) fn inside_project(dir: &Path, template: &str) -> Result<(), String> {
    let path = Path::new(template);
    let plain = path
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !plain {
        return Err(format!(
            "`{template}` is not a path inside the project (absolute, or with `..`)"
        ));
    }
    // Every directory on the way that exists must resolve inside `dir`:
    // a link in the repository must not carry the report elsewhere.
    let Ok(root) = dir.canonicalize() else {
        return Ok(());
    };
    let sample = dir.join(template.replace("{run}", "run"));
    let mut on_the_way = sample.ancestors().skip(1);
    let deepest = on_the_way.find(|p| p.exists());
    if let Some(existing) = deepest {
        let real = existing.canonicalize().map_err(|e| e.to_string())?;
        if !real.starts_with(&root) {
            return Err(format!(
                "`{template}` leads outside the project through the link {}",
                existing.display()
            ));
        }
    }
    if std::fs::symlink_metadata(&sample).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(format!("`{template}` is a symbolic link"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_was_there_unchanged_is_not_the_runs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.xml");
        std::fs::write(&path, "<testsuite/>").unwrap();
        let before = note(&path);
        let why = not_the_runs(&path, before).unwrap();
        assert!(why.contains("the run wrote no report"), "{why}");
        // A run that replaces it (a new file) wrote it.
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "<testsuite/>").unwrap();
        assert_eq!(not_the_runs(&path, before), None);
    }

    #[test]
    fn a_file_rewritten_in_place_is_the_runs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.xml");
        std::fs::write(&path, "<testsuite/>").unwrap();
        let before = note(&path);
        std::fs::write(&path, "<testsuite name='x'/>").unwrap();
        assert_eq!(not_the_runs(&path, before), None);
        // Nothing there before: whatever is there now is the run's.
        assert_eq!(not_the_runs(&path, None), None);
        // Nothing there after: left to the reader.
        assert_eq!(not_the_runs(&dir.path().join("none.xml"), None), None);
    }

    #[test]
    fn links_fifos_and_directories_are_never_read() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("secret");
        std::fs::write(&target, "token").unwrap();
        let link = dir.path().join("link.xml");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(not_the_runs(&link, None).unwrap().contains("symbolic link"));
        let fifo = dir.path().join("fifo.xml");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(not_the_runs(&fifo, None).unwrap().contains("a FIFO"));
        assert!(not_the_runs(dir.path(), None)
            .unwrap()
            .contains("a directory"));
    }

    #[test]
    fn a_path_from_the_project_file_stays_inside_the_project() {
        let outside = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let dir = project.path();
        assert_eq!(inside_project(dir, "reports/{run}.xml"), Ok(()));
        assert_eq!(inside_project(dir, "./junit.xml"), Ok(()));
        for bad in ["/etc/passwd", "../victim.xml", "reports/../../x.xml"] {
            let why = inside_project(dir, bad).unwrap_err();
            assert!(
                why.contains("not a path inside the project"),
                "{bad}: {why}"
            );
        }
        std::os::unix::fs::symlink(outside.path(), dir.join("reports")).unwrap();
        let why = inside_project(dir, "reports/{run}.xml").unwrap_err();
        assert!(why.contains("through the link"), "{why}");
        std::os::unix::fs::symlink(outside.path().join("v"), dir.join("v.xml")).unwrap();
        let why = inside_project(dir, "v.xml").unwrap_err();
        assert!(why.contains("symbolic link"), "{why}");
    }
}
