//! flakelab's own clock preload: the library built from `preload/clock.c`
//! by `build.rs` and carried inside this binary, written out to the user's
//! cache directory when a clock cell first needs it (verified byte for
//! byte before every use), the child-only variables that shift the wall
//! clock, and the record each preloaded process leaves for the run.
//!
//! Why C and a build script rather than a Rust `cdylib`: the preload
//! replaces C library symbols (`clock_gettime`, `execve`, the variadic
//! `execl`), runs in `vfork` children where nothing may allocate, and must
//! cost nothing at start-up; a few hundred lines of C against libc alone
//! do that with no Rust runtime or allocator to keep out of the way. Every
//! line of the library is in that one file.

use std::ffi::OsString;
use std::io::{Read as _, Write as _};
use std::os::unix::fs::{
    DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _,
};
use std::path::{Path, PathBuf};

use sha2::Digest as _;

use crate::error::{Error, Result};
use crate::exec::inspect::SeenProcess;

/// The variable holding the clock: `+S`/`-S` (a shift in seconds) or `@E`
/// (the clock reads epoch second `E` at the run's anchor).
pub const CLOCK_VAR: &str = "FLAKELAB_CLOCK";
/// The run's anchor and record file, set per run by `exec`.
pub use crate::exec::clock_record::{ANCHOR_VAR, RECORD_VAR};

/// The library, as built for this binary.
static LIBRARY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/flakelab-clock.so"));

/// The first 16 hex digits of the library's SHA-256: its file's name.
pub fn digest() -> String {
    let hash = sha2::Sha256::digest(LIBRARY);
    hash.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The cache directory the library is written to: `$XDG_CACHE_HOME/flakelab`,
/// else `$HOME/.cache/flakelab` (relative or empty values are ignored).
pub fn cache_dir(xdg: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    let absolute = |v: Option<OsString>| v.map(PathBuf::from).filter(|p| p.is_absolute());
    absolute(xdg)
        .or_else(|| absolute(home).map(|h| h.join(".cache")))
        .map(|c| c.join("flakelab"))
}

/// The library's path in `dir`, written there first if it is not there
/// whole. `dir` is created (mode 0700) when missing and must be a directory
/// of this user that no one else may write to; the file is opened without
/// following a symbolic link, compared byte for byte with the library this
/// binary carries, and otherwise replaced atomically (a new file, then a
/// rename over the old name).
pub fn install(dir: Option<&Path>) -> Result<PathBuf> {
    let dir = dir.ok_or_else(|| {
        cannot("neither XDG_CACHE_HOME nor HOME is set to an absolute path".into())
    })?;
    if std::fs::symlink_metadata(dir).is_err() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| cannot(format!("cannot create {}: {e}", dir.display())))?;
    }
    let meta = std::fs::symlink_metadata(dir)
        .map_err(|e| cannot(format!("cannot read {}: {e}", dir.display())))?;
    if !meta.is_dir() {
        return Err(cannot(format!("{} is not a directory", dir.display())));
    }
    if meta.uid() != nix::unistd::geteuid().as_raw() || meta.mode() & 0o022 != 0 {
        return Err(cannot(format!(
            "{} belongs to another user or others may write to it",
            dir.display()
        )));
    }
    let path = dir.join(format!("clock-{}.so", digest()));
    if holds_library(&path) {
        return Ok(path);
    }
    let mut file = tempfile::Builder::new()
        .prefix(".clock-")
        .suffix(".so.tmp")
        .permissions(std::fs::Permissions::from_mode(0o644))
        .tempfile_in(dir)
        .map_err(|e| cannot(format!("cannot write to {}: {e}", dir.display())))?;
    file.write_all(LIBRARY)
        .and_then(|()| file.as_file().sync_all())
        .map_err(|e| cannot(format!("cannot write to {}: {e}", dir.display())))?;
    file.persist(&path)
        .map_err(|e| cannot(format!("cannot write {}: {}", path.display(), e.error)))?;
    if holds_library(&path) {
        Ok(path)
    } else {
        Err(cannot(format!(
            "{} does not hold the library just written (changed by another process?)",
            path.display()
        )))
    }
}

/// Whether `path` is a regular file (not a link to one) holding exactly
/// the library.
fn holds_library(path: &Path) -> bool {
    let Ok(mut file) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
    else {
        return false;
    };
    let regular = file.metadata().is_ok_and(|m| m.is_file());
    let mut bytes = Vec::with_capacity(LIBRARY.len());
    regular && file.read_to_end(&mut bytes).is_ok() && bytes == LIBRARY
}

fn cannot(why: String) -> Error {
    Error::usage(
        format!("cannot write flakelab's clock preload: {why}"),
        "set XDG_CACHE_HOME to a directory of your own (the library is written there once)",
    )
}

/// The value of [`CLOCK_VAR`]: a shift (`+31536000`, `-2592000`, `+0`), or
/// an absolute instant in epoch seconds (`@1835438398`).
pub fn value(seconds: Option<i64>, epoch: Option<i64>) -> String {
    match (epoch, seconds) {
        (Some(e), _) => format!("@{e}"),
        (None, s) => format!("{:+}", s.unwrap_or(0)),
    }
}

/// The child's variables: `LD_PRELOAD` (what the harness preloaded stays in
/// front, as at the baseline, then the library) and the clock.
pub fn child_env(
    lib: &Path,
    clock: &str,
    inherited_preload: Option<&str>,
) -> Vec<(String, String)> {
    let preload = match inherited_preload.filter(|p| !p.trim().is_empty()) {
        Some(rest) => format!("{rest}:{}", lib.display()),
        None => lib.display().to_string(),
    };
    vec![
        ("LD_PRELOAD".into(), preload),
        (CLOCK_VAR.into(), clock.into()),
    ]
}

/// One line of a run's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// The preload loaded in a process (`A pid ppid [off] exe`); `shifted`
    /// is false when the process's clock variable was missing or not one
    /// the preload reads.
    Loaded {
        /// The process.
        pid: i32,
        /// Its parent.
        ppid: i32,
        /// Its executable.
        exe: String,
        /// Whether it shifts the clock.
        shifted: bool,
    },
    /// A preloaded process is about to execute a program the preload cannot
    /// reach (`X pid ppid static|go path`).
    Bypass {
        /// The process (it keeps its pid across the exec).
        pid: i32,
        /// Its parent.
        ppid: i32,
        /// The program.
        exe: String,
        /// A Go program (else statically linked).
        go: bool,
    },
}

/// Parses a run's record; malformed lines (a process killed mid-write) are
/// skipped.
pub fn parse_record(text: &str) -> Vec<Line> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Line> {
    let mut parts = line.splitn(4, ' ');
    let kind = parts.next()?;
    let pid = parts.next()?.parse().ok()?;
    let ppid = parts.next()?.parse().ok()?;
    let rest = parts.next()?;
    match kind {
        "A" => {
            let (exe, shifted) = match rest.strip_prefix("off ") {
                Some(exe) => (exe, false),
                None => (rest, true),
            };
            Some(Line::Loaded {
                pid,
                ppid,
                exe: exe.into(),
                shifted,
            })
        }
        "X" => {
            let (what, exe) = rest.split_once(' ')?;
            let go = match what {
                "go" => true,
                "static" => false,
                _ => return None,
            };
            Some(Line::Bypass {
                pid,
                ppid,
                exe: exe.into(),
                go,
            })
        }
        _ => None,
    }
}

/// The record as the programs the run's processes ran, in the shape of
/// the `/proc` watch (`exec::inspect`) so `proof` judges both alike: a
/// program's parent is the previous program of the same pid (it exec'd),
/// else the last program of its parent pid. A process forked without an
/// exec (a subshell) announces nothing, so what it runs has no known parent
/// here: an orphan, never excused as a helper (the `/proc` watch knows the
/// whole tree, and names the test processes). A process whose clock variable
/// the preload could not read is given an environment whose clock differs
/// from `clock` (the cell's value); `lib` is the preloaded library.
pub fn seen_from_record(lines: &[Line], lib: &Path, clock: &str) -> Vec<SeenProcess> {
    let mut seen: Vec<SeenProcess> = Vec::with_capacity(lines.len());
    for line in lines {
        let (pid, ppid, exe) = match line {
            Line::Loaded { pid, ppid, exe, .. } | Line::Bypass { pid, ppid, exe, .. } => {
                (*pid, *ppid, exe)
            }
        };
        let last = |p: i32| seen.iter().rposition(|s| p > 0 && s.pid == p);
        let parent = last(pid).or_else(|| last(ppid));
        let name = Path::new(exe)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (static_linked, go, env) = match line {
            Line::Bypass { go, .. } => (Some(!go), Some(*go), None),
            Line::Loaded { shifted, .. } => {
                let value = if *shifted {
                    clock.to_string()
                } else {
                    String::new()
                };
                let env = [
                    ("LD_PRELOAD".to_string(), lib.display().to_string()),
                    (CLOCK_VAR.to_string(), value),
                ];
                (Some(false), Some(false), Some(env.into_iter().collect()))
            }
        };
        seen.push(SeenProcess {
            pid,
            parent,
            exe: Some(exe.clone()),
            name,
            static_linked,
            go,
            secure: Some(false),
            env,
        });
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_dir_prefers_xdg_and_ignores_relative_values() {
        let d = |x: Option<&str>, h: Option<&str>| cache_dir(x.map(Into::into), h.map(Into::into));
        assert_eq!(
            d(Some("/x"), Some("/h")),
            Some(PathBuf::from("/x/flakelab"))
        );
        assert_eq!(
            d(Some("rel"), Some("/h")),
            Some(PathBuf::from("/h/.cache/flakelab"))
        );
        assert_eq!(d(None, Some("")), None);
        assert_eq!(d(None, None), None);
    }

    #[test]
    fn install_writes_once_replaces_a_changed_file_and_refuses_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache/flakelab");
        let path = install(Some(&cache)).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), LIBRARY);
        assert!(path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .contains(&digest()));
        let mode = std::fs::metadata(&cache).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
        // Tampered: rewritten whole.
        std::fs::write(&path, b"not the library").unwrap();
        assert_eq!(install(Some(&cache)).unwrap(), path);
        assert_eq!(std::fs::read(&path).unwrap(), LIBRARY);
        // A link planted in its place is replaced, never followed.
        let elsewhere = dir.path().join("elsewhere.so");
        std::fs::write(&elsewhere, b"x").unwrap();
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        assert_eq!(install(Some(&cache)).unwrap(), path);
        assert!(!std::fs::symlink_metadata(&path).unwrap().is_symlink());
        assert_eq!(std::fs::read(&elsewhere).unwrap(), b"x");
        // Nothing else was left in the directory.
        assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 1);
        // A directory others may write to is refused.
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = install(Some(&cache)).unwrap_err().to_string();
        assert!(err.contains("others may write"), "{err}");
        assert!(install(None).unwrap_err().to_string().contains("HOME"));
    }

    /// The record lines of `/bin/true` run once under the preload with
    /// `exes` as `FLAKELAB_CLOCK_EXES` (unset when None).
    fn announced_by_true(exes: Option<&str>) -> String {
        let dir = tempfile::tempdir().unwrap();
        let lib = install(Some(&dir.path().join("cache"))).unwrap();
        let record = dir.path().join("record");
        std::fs::write(&record, "").unwrap();
        let mut cmd = std::process::Command::new("/bin/true");
        cmd.env("LD_PRELOAD", &lib)
            .env(CLOCK_VAR, "+0")
            .env(RECORD_VAR, &record)
            .env_remove(crate::exec::clock_record::EXES_VAR);
        if let Some(exes) = exes {
            cmd.env(crate::exec::clock_record::EXES_VAR, exes);
        }
        assert!(cmd.status().unwrap().success());
        std::fs::read_to_string(&record).unwrap()
    }

    #[test]
    fn a_process_execd_by_a_listed_path_announces_the_listed_exe_and_others_their_own() {
        let exe = |text: &str| match parse_record(text).as_slice() {
            [Line::Loaded { exe, shifted, .. }] => {
                assert!(*shifted, "{text}");
                exe.clone()
            }
            other => panic!("one announcement expected: {other:?}"),
        };
        let own = std::fs::canonicalize("/bin/true").unwrap();
        let own = own.to_string_lossy();
        // Listed (a made-up exe, so the test sees where the name came from).
        let listed = "/usr/bin/env\t/nowhere/env\n/bin/true\t/nowhere/true\n";
        assert_eq!(exe(&announced_by_true(Some(listed))), "/nowhere/true");
        // Not listed, a prefix of the path, or no list: /proc/self/exe.
        for exes in [
            None,
            Some("/usr/bin/env\t/nowhere/env\n"),
            Some("/bin/tru\t/nowhere/true\n"),
            Some("/bin/true/\t/nowhere/true"),
            Some("/bin/true\t\n"),
            Some("/bin/true"),
        ] {
            assert_eq!(exe(&announced_by_true(exes)), own, "{exes:?}");
        }
    }

    #[test]
    fn the_library_makes_no_shared_memory_and_names_only_libc() {
        let has = |needle: &[u8]| LIBRARY.windows(needle.len()).any(|w| w == needle);
        assert!(LIBRARY.starts_with(b"\x7fELF"));
        // It imports no shared-memory or semaphore call, and no allocator.
        for call in [
            &b"shm_open"[..],
            b"sem_open",
            b"mmap",
            b"malloc",
            b"mkstemp",
        ] {
            assert!(!has(call), "{}", String::from_utf8_lossy(call));
        }
        // Its wall-clock functions and exec wrappers are there.
        for symbol in [
            &b"clock_gettime"[..],
            b"gettimeofday",
            b"timespec_get",
            b"ftime",
            b"posix_spawnp",
            b"execvpe",
        ] {
            assert!(has(symbol), "{}", String::from_utf8_lossy(symbol));
        }
        assert!(!has(b"libm.so"));
        assert!(!has(b"libpthread"));
    }

    #[test]
    fn the_clock_value_and_the_preload_order() {
        assert_eq!(value(Some(31_536_000), None), "+31536000");
        assert_eq!(value(Some(-2_592_000), None), "-2592000");
        assert_eq!(value(Some(0), None), "+0");
        assert_eq!(value(None, Some(1_835_438_398)), "@1835438398");
        let env = child_env(Path::new("/c/clock.so"), "+0", Some("/asan.so"));
        assert_eq!(env[0], ("LD_PRELOAD".into(), "/asan.so:/c/clock.so".into()));
        assert_eq!(env[1], (CLOCK_VAR.into(), "+0".into()));
        assert_eq!(child_env(Path::new("/c.so"), "+0", Some(" "))[0].1, "/c.so");
    }

    #[test]
    fn the_record_parses_and_skips_torn_lines() {
        let text = "A 10 1 /usr/bin/dash\nX 11 10 static /t/stat ic\nA 12 10 off /usr/bin/date\nX 13 10 go /t/g\nA 14\nQ 1 2 x\nX 1 2 elf /x\n";
        let loaded = |pid, ppid, exe: &str, shifted| Line::Loaded {
            pid,
            ppid,
            exe: exe.into(),
            shifted,
        };
        let bypass = |pid, exe: &str, go| Line::Bypass {
            pid,
            ppid: 10,
            exe: exe.into(),
            go,
        };
        assert_eq!(
            parse_record(text),
            [
                loaded(10, 1, "/usr/bin/dash", true),
                bypass(11, "/t/stat ic", false),
                loaded(12, 10, "/usr/bin/date", false),
                bypass(13, "/t/g", true),
            ]
        );
    }

    #[test]
    fn the_record_becomes_a_process_tree() {
        // sh (10) execs env then python (same pid); python forks 11, which
        // execs a static binary; a subshell (21) of python runs date (22),
        // whose parent is unknown here.
        let text = "A 10 1 /usr/bin/dash\nA 10 1 /usr/bin/env\nA 10 1 /usr/bin/python3\nX 11 10 static /t/stat\nA 22 21 /usr/bin/date\n";
        let seen = seen_from_record(&parse_record(text), Path::new("/c.so"), "+5");
        let parents: Vec<Option<usize>> = seen.iter().map(|s| s.parent).collect();
        assert_eq!(parents, [None, Some(0), Some(1), Some(2), None]);
        assert_eq!(seen[3].static_linked, Some(true));
        assert_eq!(seen[3].go, Some(false));
        assert_eq!(seen[0].env.as_ref().unwrap()[CLOCK_VAR], "+5");
        assert_eq!(seen[4].name, "date");
    }
}
