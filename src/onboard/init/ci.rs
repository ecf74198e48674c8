//! `flakelab init --ci SYSTEM`: the CI file, and what the project's shard
//! jobs must set up before flakelab runs (the runner's toolchain and the
//! packages the cells need: steps before the action on GitHub, an image and
//! `before_script` lines on GitLab), detected from the `[lane] command` of
//! flakelab.toml or the project's files.

use std::path::Path;

use crate::error::Result;

/// The action `init --ci github`'s workflow uses: the repository that
/// ships flakelab's `action.yml` (a fork uses its own).
pub const ACTION: &str = "flakelab/flakelab@v0";

/// Where the GitLab pipeline's build job clones flakelab's source from
/// (the repository of [`ACTION`]), and the revision it builds.
pub const SOURCE_GIT: &str = "https://github.com/flakelab/flakelab.git";
/// The revision of [`SOURCE_GIT`] the GitLab build job builds (the
/// action's tag).
pub const SOURCE_REF: &str = "v0";

/// The GitLab image of a project with no detected runner: Debian, as the
/// build job's (glibc-compatible with the binary it builds).
pub const GITLAB_DEFAULT_IMAGE: &str = "debian:bookworm-slim";

/// The GitLab shard job's line that installs the zone database where the
/// image lacks it (the zone cells need it; `flakelab doctor` says so).
pub const GITLAB_TZDATA: &str = "test -e /usr/share/zoneinfo/Pacific/Kiritimati || (apt-get update && apt-get install -y --no-install-recommends tzdata)";

/// The GitLab CI template: `{{git}}`, `{{ref}}`, `{{image}}` and
/// `{{setup}}` are filled by [`gitlab_pipeline`].
const GITLAB_TEMPLATE: &str = include_str!("../../../templates/ci/gitlab.yml");

/// The GitHub Actions workflow template: `{{action}}` and `{{setup}}` are
/// filled by [`github_workflow`].
const GITHUB_TEMPLATE: &str = include_str!("../../../templates/ci/github.yml");

/// What a shard job sets up before flakelab runs the tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CiSetup {
    /// The runner it is for (`pytest`, `node`, `go`, `cargo`, `rspec`), if one was detected.
    pub runner: Option<&'static str>,
    /// The workflow steps, as YAML indented for a job's `steps:`.
    pub steps: String,
    /// GitLab: the shard job's image, with the runner's toolchain
    /// (Debian bookworm, as the build job's); `None` for the default.
    pub image: Option<&'static str>,
    /// GitLab: the shard job's `before_script` commands after flakelab is
    /// on PATH, each with a comment saying what it is for.
    pub commands: Vec<(&'static str, String)>,
}

/// The setup of a project whose test command is `argv`; `dir` is read for
/// the dependency files (`requirements*.txt`, a lockfile).
pub fn setup_for(argv: &[String], dir: &Path) -> CiSetup {
    let has = |f: &str| dir.join(f).is_file();
    let words: Vec<&str> = argv
        .iter()
        .map(|w| w.rsplit('/').next().unwrap_or(w))
        .collect();
    let any = |names: &[&str]| words.iter().any(|w| names.contains(w));
    if any(&["pytest", "py.test"]) || (any(&["python", "python3"]) && any(&["pytest"])) {
        let mut install = String::from("python -m pip install pytest pytest-randomly pytest-xdist");
        if has("requirements.txt") {
            install.push_str(" -r requirements.txt");
        }
        if has("requirements-dev.txt") {
            install.push_str(" -r requirements-dev.txt");
        }
        if has("pyproject.toml") || has("setup.py") {
            install.push_str(" -e .");
        }
        return CiSetup {
            runner: Some("pytest"),
            steps: format!(
                "      - uses: actions/setup-python@v6\n        with:\n          python-version: \"3.x\"\n      # pytest-randomly for the shuffle cells, pytest-xdist for the workers cells.\n      - name: Install the test dependencies\n        run: {install}\n"
            ),
            image: Some("python:3-bookworm"),
            commands: vec![(
                "pytest-randomly for the shuffle cells, pytest-xdist for the workers cells.",
                install,
            )],
        };
    }
    if any(&[
        "npm",
        "npx",
        "yarn",
        "pnpm",
        "node",
        "jest",
        "vitest",
        "mocha",
        "playwright",
    ]) {
        let install = if has("package-lock.json") {
            "npm ci"
        } else {
            "npm install"
        };
        return CiSetup {
            runner: Some("node"),
            steps: format!(
                "      - uses: actions/setup-node@v5\n        with:\n          node-version: \"lts/*\"\n      - name: Install the test dependencies\n        run: {install}\n"
            ),
            image: Some("node:lts-bookworm"),
            commands: vec![("The test dependencies.", install.to_string())],
        };
    }
    if words.first() == Some(&"go") || any(&["gotestsum"]) {
        return CiSetup {
            runner: Some("go"),
            steps: "      - uses: actions/setup-go@v6\n        with:\n          go-version-file: go.mod\n".into(),
            image: Some("golang:1-bookworm"),
            commands: vec![("The module's dependencies.", "go mod download".into())],
        };
    }
    if words.first() == Some(&"cargo") {
        // The action's own toolchain step (install: source) sets up Rust.
        return CiSetup {
            runner: Some("cargo"),
            steps: String::new(),
            image: Some("rust:1-bookworm"),
            commands: Vec::new(),
        };
    }
    if any(&["rspec", "bundle"]) {
        return CiSetup {
            runner: Some("rspec"),
            steps:
                "      - uses: ruby/setup-ruby@v1\n        with:\n          bundler-cache: true\n"
                    .into(),
            image: Some("ruby:3-bookworm"),
            commands: vec![("The bundle.", "bundle install".into())],
        };
    }
    CiSetup::default()
}

/// The setup for the project in `dir`: its `[lane] command`, else the test
/// command its files suggest (`flakelab init`'s detection).
pub fn setup_of(dir: &Path) -> Result<CiSetup> {
    let lane = crate::context::config::load(dir)?.and_then(|c| c.lane);
    let argv = match lane.and_then(|l| l.argv().ok()) {
        Some(argv) => argv,
        None => match super::detect_project(dir).into_iter().next() {
            Some(found) => found.command,
            None => return Ok(CiSetup::default()),
        },
    };
    Ok(setup_for(&argv, dir))
}

/// The workflow `init --ci github` writes, using the action `action`.
pub fn github_workflow(action: &str, setup: &CiSetup) -> String {
    let steps = match (setup.runner, setup.steps.is_empty()) {
        (_, false) => setup.steps.trim_end().to_string(),
        (Some(runner), true) => format!("      # {runner}: nothing to set up beside the action's own Rust toolchain."),
        (None, true) => "      # Set up the project's toolchain and test dependencies here (no test\n      # runner detected: `flakelab init` writes flakelab.toml's `[lane] command`,\n      # then `flakelab init --ci github --force` writes the steps it needs).".to_string(),
    };
    GITHUB_TEMPLATE
        .replace("{{action}}", action)
        .replace("{{setup}}", &steps)
}

/// The pipeline `init --ci gitlab` writes: a job that builds flakelab from
/// `git` at `rev`, the shards in the runner's image with its setup, and
/// the merge.
pub fn gitlab_pipeline(git: &str, rev: &str, setup: &CiSetup) -> String {
    let mut lines = vec![
        "    # The zone database for the zone cells, where the image lacks it.".to_string(),
        format!("    - {GITLAB_TZDATA}"),
    ];
    for (why, command) in &setup.commands {
        lines.push(format!("    # {why}"));
        lines.push(format!("    - {command}"));
    }
    if setup.runner.is_none() {
        lines.push(
            "    # No test runner detected: set `image:` to one with your toolchain and".into(),
        );
        lines
            .push("    # install your test dependencies here (or run `flakelab init`, then".into());
        lines.push("    # `flakelab init --ci gitlab --force`).".into());
    }
    GITLAB_TEMPLATE
        .replace("{{git}}", git)
        .replace("{{ref}}", rev)
        .replace("{{image}}", setup.image.unwrap_or(GITLAB_DEFAULT_IMAGE))
        .replace("{{setup}}", &lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn each_runner_gets_its_toolchain_and_pytest_the_plugins_the_cells_need() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            (
                "pytest tests",
                Some("pytest"),
                "pytest-randomly pytest-xdist",
            ),
            (
                "python3 -m pytest -q",
                Some("pytest"),
                "actions/setup-python",
            ),
            ("npx jest", Some("node"), "npm install"),
            ("go test ./...", Some("go"), "go-version-file: go.mod"),
            ("cargo test", Some("cargo"), ""),
            ("bundle exec rspec", Some("rspec"), "ruby/setup-ruby"),
            ("./ci/test", None, ""),
        ];
        for (line, runner, has) in cases {
            let setup = setup_for(&argv(line), dir.path());
            assert_eq!(setup.runner, runner, "{line}");
            assert!(setup.steps.contains(has), "{line}: {}", setup.steps);
        }
    }

    #[test]
    fn dependency_files_are_installed_from() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("requirements.txt"), "").unwrap();
        std::fs::write(dir.path().join("package-lock.json"), "{}").unwrap();
        let py = setup_for(&argv("pytest"), dir.path());
        assert!(py.steps.contains("-r requirements.txt"), "{}", py.steps);
        let node = setup_for(&argv("npm test"), dir.path());
        assert!(node.steps.contains("run: npm ci"), "{}", node.steps);
    }

    #[test]
    fn the_workflow_uses_the_action_and_says_where_the_setup_goes() {
        let text = github_workflow("./", &CiSetup::default());
        assert_eq!(text.matches("uses: ./\n").count(), 2, "{text}");
        assert!(
            !text.contains("{{action}}") && !text.contains("{{setup}}"),
            "{text}"
        );
        assert!(text.contains("no test\n      # runner detected"), "{text}");
        let py = github_workflow(
            ACTION,
            &setup_for(&argv("pytest"), Path::new("/nonexistent")),
        );
        assert!(
            py.contains("      - uses: actions/setup-python@v6\n"),
            "{py}"
        );
        assert!(!py.contains("no test"), "{py}");
    }

    #[test]
    fn the_gitlab_pipeline_builds_flakelab_and_sets_up_the_runner_in_its_image() {
        let py = setup_for(&argv("pytest tests"), Path::new("/nonexistent"));
        let text = gitlab_pipeline(SOURCE_GIT, SOURCE_REF, &py);
        let doc = yaml_rust2::YamlLoader::load_from_str(&text)
            .unwrap_or_else(|e| panic!("{e}\n{text}"))
            .remove(0);
        assert!(!text.contains("{{"), "{text}");
        assert_eq!(doc["variables"]["FLAKELAB_GIT"].as_str(), Some(SOURCE_GIT));
        assert_eq!(doc["variables"]["FLAKELAB_REF"].as_str(), Some(SOURCE_REF));
        let lines = |job: &str, key: &str| -> Vec<String> {
            doc[job][key]
                .as_vec()
                .unwrap_or_else(|| panic!("{job}.{key}\n{text}"))
                .iter()
                .map(|l| l.as_str().unwrap().to_string())
                .collect()
        };
        assert!(lines("flakelab-build", "script")
            .iter()
            .any(|l| l.starts_with("cargo install --locked --path")));
        assert!(!text.contains("cargo install --locked flakelab"), "{text}");
        assert_eq!(
            doc["flakelab-shard"]["image"].as_str(),
            Some("python:3-bookworm")
        );
        let before = lines("flakelab-shard", "before_script");
        assert_eq!(before[0], "export PATH=\"$PWD/flakelab-bin/bin:$PATH\"");
        assert!(before.contains(&GITLAB_TZDATA.to_string()), "{before:?}");
        assert!(
            before
                .contains(&"python -m pip install pytest pytest-randomly pytest-xdist".to_string()),
            "{before:?}"
        );
        assert!(lines("flakelab-merge", "before_script")[0].starts_with("export PATH="));
        // Every runner's image is Debian bookworm, as the build job's.
        for line in [
            "npx jest",
            "go test ./...",
            "cargo test",
            "bundle exec rspec",
        ] {
            let s = setup_for(&argv(line), Path::new("/nonexistent"));
            assert!(s.image.unwrap().ends_with("-bookworm"), "{line}");
            let text = gitlab_pipeline(SOURCE_GIT, SOURCE_REF, &s);
            yaml_rust2::YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{line}: {e}"));
            assert!(
                text.contains(&format!("image: {}", s.image.unwrap())),
                "{line}"
            );
        }
        let none = gitlab_pipeline(SOURCE_GIT, SOURCE_REF, &CiSetup::default());
        assert!(
            none.contains(&format!("image: {GITLAB_DEFAULT_IMAGE}")),
            "{none}"
        );
        assert!(none.contains("No test runner detected"), "{none}");
    }
}
