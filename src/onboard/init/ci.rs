//! `flakelab init --ci SYSTEM`: the CI file, and for GitHub what the
//! project's jobs must set up before the flakelab action runs (the
//! runner's toolchain and the packages the cells need), detected from the
//! `[lane] command` of flakelab.toml or the project's files.

use std::path::Path;

use crate::error::Result;

/// The action `init --ci github`'s workflow uses: the repository that
/// ships flakelab's `action.yml` (a fork uses its own).
pub const ACTION: &str = "flakelab/flakelab@v0";

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
        };
    }
    if words.first() == Some(&"go") || any(&["gotestsum"]) {
        return CiSetup {
            runner: Some("go"),
            steps: "      - uses: actions/setup-go@v6\n        with:\n          go-version-file: go.mod\n".into(),
        };
    }
    if words.first() == Some(&"cargo") {
        // The action's own toolchain step (install: source) sets up Rust.
        return CiSetup {
            runner: Some("cargo"),
            steps: String::new(),
        };
    }
    if any(&["rspec", "bundle"]) {
        return CiSetup {
            runner: Some("rspec"),
            steps:
                "      - uses: ruby/setup-ruby@v1\n        with:\n          bundler-cache: true\n"
                    .into(),
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
}
