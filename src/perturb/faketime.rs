//! libfaketime: finding the library (never one hard-coded path) and the
//! child-only environment that shifts its clock. The harness's own clock is
//! never touched (STYLE practice 15).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The library's file name.
pub const LIB_NAME: &str = "libfaketime.so.1";

/// Finds libfaketime: `$FAKETIME_LIB` when set (it must exist), else the
/// first `faketime/libfaketime.so.1` under the usual library directories.
pub fn locate(override_path: Option<&Path>) -> Result<PathBuf> {
    if let Some(path) = override_path {
        return if path.is_file() {
            Ok(path.to_path_buf())
        } else {
            Err(missing(&format!(
                "FAKETIME_LIB points at {}, which is not a file",
                path.display()
            )))
        };
    }
    search(&[
        "/usr/lib",
        "/usr/lib64",
        "/usr/local/lib",
        "/lib",
        "/opt/homebrew/lib",
    ])
    .ok_or_else(|| missing("libfaketime is not installed"))
}

fn search(roots: &[&str]) -> Option<PathBuf> {
    for root in roots {
        let root = Path::new(root);
        let direct = [root.join("faketime").join(LIB_NAME), root.join(LIB_NAME)];
        if let Some(found) = direct.into_iter().find(|p| p.is_file()) {
            return Some(found);
        }
        // Multiarch directories: /usr/lib/x86_64-linux-gnu/faketime/…
        let Ok(entries) = std::fs::read_dir(root) else {
            continue;
        };
        for entry in entries.flatten() {
            let candidate = entry.path().join("faketime").join(LIB_NAME);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    None
}

fn missing(why: &str) -> Error {
    Error::usage(
        format!("cannot shift the clock: {why}"),
        "install libfaketime (Debian/Ubuntu: `apt-get install faketime libfaketime`; Fedora: `dnf install libfaketime`), or set FAKETIME_LIB to the library's path",
    )
}

/// The child's variables for a clock spec: `LD_PRELOAD` (the library first,
/// then whatever the harness's environment preloaded), `FAKETIME`, and the
/// two settings that keep complex runtimes sane: monotonic clocks stay real
/// (timeouts and the JVM keep working) and an absolute start is shared with
/// the run's child processes instead of restarting in each.
pub fn child_env(
    lib: &Path,
    faketime: &str,
    inherited_preload: Option<&str>,
) -> Vec<(String, String)> {
    let preload = match inherited_preload.filter(|p| !p.is_empty()) {
        Some(rest) => format!("{}:{rest}", lib.display()),
        None => lib.display().to_string(),
    };
    vec![
        ("LD_PRELOAD".into(), preload),
        ("FAKETIME".into(), faketime.into()),
        ("FAKETIME_DONT_FAKE_MONOTONIC".into(), "1".into()),
        ("FAKETIME_DONT_RESET".into(), "1".into()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_override_names_the_package() {
        let err = locate(Some(Path::new("/nonexistent/libfaketime.so.1")))
            .unwrap_err()
            .to_string();
        assert!(err.contains("FAKETIME_LIB"), "{err}");
        assert!(
            err.contains("apt-get install faketime libfaketime"),
            "{err}"
        );
    }

    #[test]
    fn search_finds_multiarch_layouts() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("x86_64-linux-gnu/faketime");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::write(lib.join(LIB_NAME), b"").unwrap();
        let root = dir.path().display().to_string();
        assert_eq!(search(&[&root]), Some(lib.join(LIB_NAME)));
        assert_eq!(search(&["/nonexistent"]), None);
    }

    #[test]
    fn preload_keeps_what_was_there() {
        let env = child_env(Path::new("/l/libfaketime.so.1"), "+10d", Some("/x.so"));
        assert_eq!(env[0].1, "/l/libfaketime.so.1:/x.so");
        assert_eq!(env[1], ("FAKETIME".to_string(), "+10d".to_string()));
    }
}
