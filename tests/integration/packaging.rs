//! The packages other ecosystems install (issue #37 items 1 and 2), built
//! from the binary under test (nothing is built twice) and installed with
//! the network off: the PyPI wheel (`scripts/build-wheel.sh --binary`) into
//! a fresh virtual environment, and the npm packages
//! (`scripts/build-npm.sh`) into a fresh project; from there
//! `flakelab --version` and `flakelab demo -n 2` run.

use std::path::Path;
use std::process::{Command, Output};

use super::{bin, capable, sh_ok};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn ok(out: &Output, what: &str) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{what}: {:?}\n{text}", out.status);
    text
}

/// `script` run by `sh` with no network (its own network namespace, with
/// loopback up, as a host without a route out), in `dir`, with `path`
/// first on PATH.
fn offline(dir: &Path, path: &Path, script: &str) -> Output {
    let mut c = Command::new("unshare");
    super::scrub(&mut c);
    c.args(["-rn", "sh", "-c"])
        .arg(format!("ip link set lo up && {script}"))
        .current_dir(dir)
        .env(
            "PATH",
            format!(
                "{}:{}",
                path.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("npm_config_update_notifier", "false")
        .output()
        .unwrap()
}

fn can_go_offline() -> bool {
    capable(
        "a network namespace (unshare -rn) with ip",
        sh_ok("unshare -rn sh -c 'ip link set lo up'"),
    )
}

/// The demo and the version, run from `path` (where the package put
/// `flakelab`) with the network off; `launcher` is how the user calls it.
fn runs_from(dir: &Path, path: &Path, launcher: &str) {
    let out = offline(dir, path, &format!("{launcher} --version"));
    let text = ok(&out, "--version");
    assert_eq!(
        text.trim(),
        format!("flakelab {}", env!("CARGO_PKG_VERSION"))
    );
    let out = offline(dir, path, &format!("{launcher} demo -n 2"));
    let text = ok(&out, "demo -n 2");
    assert!(text.contains("what each cell flips"), "{text}");
    // Every planned run ran (the progress line at 100%).
    assert!(text.contains(" runs (100%)"), "{text}");
}

#[test]
fn the_wheel_installs_into_a_fresh_venv_offline_and_runs_the_demo() {
    if !capable("python3 -m venv", sh_ok("python3 -m venv --help")) || !can_go_offline() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dist = tmp.path().join("dist");
    let out = Command::new(root().join("scripts/build-wheel.sh"))
        .arg("--binary")
        .arg(bin())
        .arg("--out")
        .arg(&dist)
        .output()
        .unwrap();
    let wheel = ok(&out, "build-wheel.sh").trim().to_string();
    assert!(
        wheel.ends_with(&format!(
            "flakelab-{}-py3-none-linux_x86_64.whl",
            env!("CARGO_PKG_VERSION")
        )) || !cfg!(target_arch = "x86_64"),
        "{wheel}"
    );
    let venv = tmp.path().join("venv");
    ok(
        &Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .output()
            .unwrap(),
        "venv",
    );
    // The venv's own pip, with no index and no network.
    let out = offline(
        tmp.path(),
        &venv.join("bin"),
        &format!("pip install --no-index --quiet {wheel}"),
    );
    ok(&out, "pip install");
    let installed = venv.join("bin/flakelab");
    assert!(installed.is_file(), "no {}", installed.display());
    runs_from(tmp.path(), &venv.join("bin"), "flakelab");
}

/// A fresh npm project in `dir` with `tarballs` installed from disk.
fn npm_project(dir: &Path, cache: &Path, tarballs: &[&str]) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("package.json"),
        r#"{"name": "a-project", "version": "1.0.0", "private": true}"#,
    )
    .unwrap();
    let out = offline(
        dir,
        dir,
        &format!(
            "npm install --offline --no-audit --no-fund --cache {} {}",
            cache.display(),
            tarballs.join(" ")
        ),
    );
    ok(&out, "npm install");
}

#[test]
fn the_npm_packages_install_into_a_fresh_project_offline_and_npx_runs_the_demo() {
    if !capable("node and npm", sh_ok("npm --version && node --version")) || !can_go_offline() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(root().join("scripts/build-npm.sh"))
        .arg("--binary")
        .arg(bin())
        .arg("--out")
        .arg(tmp.path().join("npm"))
        .output()
        .unwrap();
    let packed = ok(&out, "build-npm.sh");
    let tarballs: Vec<&str> = packed.lines().collect();
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        tarballs[0].ends_with(&format!("/flakelab-{version}.tgz")),
        "{packed}"
    );
    assert!(
        tarballs[1].ends_with(&format!("/flakelab-linux-x64-{version}.tgz")),
        "{packed}"
    );
    let cache = tmp.path().join("cache");

    let project = tmp.path().join("project");
    npm_project(&project, &cache, &tarballs);
    let npx = format!("npx --offline --cache {} flakelab", cache.display());
    runs_from(&project, &project, &npx);

    // The launcher says why when the platform has no package…
    std::fs::write(
        project.join("darwin.js"),
        "Object.defineProperty(process, 'platform', { value: 'darwin' });",
    )
    .unwrap();
    let out = offline(
        &project,
        &project,
        "node -r ./darwin.js node_modules/flakelab/bin/flakelab.js --version",
    );
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("no flakelab binary for darwin-"), "{text}");
    assert!(
        text.contains("runs on Linux (linux-x64, linux-arm64)"),
        "{text}"
    );

    // …and when the platform's package was left out of the install.
    let bare = tmp.path().join("bare");
    npm_project(&bare, &cache, &tarballs[..1]);
    let out = offline(&bare, &bare, &format!("{npx} --version"));
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("the package flakelab-linux-x64, which carries flakelab's binary for linux-x64, is not installed"),
        "{text}"
    );
}
