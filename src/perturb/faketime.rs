//! libfaketime: finding the library (never one hard-coded path) and the
//! child-only environment that shifts its clock. The harness's own clock is
//! never touched (STYLE practice 15), and the subject's clock is only
//! shifted: no libfaketime option is set unless a recipe says its runtime
//! needs it.

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

/// The child's variables for a clock spec: `LD_PRELOAD` (whatever the
/// harness's environment preloaded, then the library: a runtime that must
/// come first, such as AddressSanitizer's, keeps its place as at the
/// baseline), `FAKETIME`, and the libfaketime options a recipe declares its
/// runtime needs (`needs`). No other option is set: each changes how time
/// flows for the subject (with libfaketime 0.9.10,
/// `FAKETIME_DONT_FAKE_MONOTONIC=1` makes CPython's `time.sleep` fail with
/// EINVAL; `FAKETIME_DONT_RESET=1` makes an absolute start run on across
/// the run's processes instead of restarting in each).
pub fn child_env<'a>(
    lib: &Path,
    faketime: &str,
    inherited_preload: Option<&str>,
    needs: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> Vec<(String, String)> {
    let preload = match inherited_preload.filter(|p| !p.trim().is_empty()) {
        Some(rest) => format!("{rest}:{}", lib.display()),
        None => lib.display().to_string(),
    };
    let mut env = vec![
        ("LD_PRELOAD".into(), preload),
        ("FAKETIME".into(), faketime.into()),
    ];
    env.extend(needs.into_iter().map(|(k, v)| (k.clone(), v.clone())));
    env
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
    fn preload_keeps_what_was_there_in_front_and_nothing_else_is_set() {
        let none = std::collections::BTreeMap::new();
        let env = child_env(
            Path::new("/l/libfaketime.so.1"),
            "+10d",
            Some("/x.so"),
            &none,
        );
        assert_eq!(
            env,
            [
                (
                    "LD_PRELOAD".to_string(),
                    "/x.so:/l/libfaketime.so.1".to_string()
                ),
                ("FAKETIME".to_string(), "+10d".to_string()),
            ]
        );
        let alone = child_env(Path::new("/l/libfaketime.so.1"), "+10d", Some(" "), &none);
        assert_eq!(alone[0].1, "/l/libfaketime.so.1");
        let jvm = std::collections::BTreeMap::from([(
            "FAKETIME_DONT_FAKE_MONOTONIC".to_string(),
            "1".to_string(),
        )]);
        let env = child_env(Path::new("/l/libfaketime.so.1"), "+10d", None, &jvm);
        assert_eq!(env.len(), 3);
        assert_eq!(env[2].0, "FAKETIME_DONT_FAKE_MONOTONIC");
    }
}
