//! Runner recipes: what flakelab knows about one test runner, declared in
//! `recipes/*.toml` (embedded, overridable by `.flakelab/recipes/*.toml`):
//! how to recognise it in a command line, how to ask it for a JUnit report,
//! how to shuffle with a seed and read the seed back, how to switch its own
//! shuffling off, how to set its workers, how to select one test, what its
//! exit codes mean, and which perturbations its runtime cannot honour.
//!
//! Pure: parsing, detection and argv templating. Running is `exec`'s job.

pub mod argv;
pub mod ordered;
pub mod outcome;
pub mod per_test;
pub mod retries;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One recipe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    /// Name used by `--runner NAME` and `flakelab recipes show NAME`.
    pub name: String,
    /// One line: the runner and the plugins the recipe relies on.
    pub summary: String,
    /// How far the recipe's facts were checked: `tested` (flakelab's own
    /// tests run the real runner), `verified` (run by hand on this machine
    /// kind, see `shared/reference/runners.md`) or `documented` (from the
    /// runner's docs or source only: "unverified here").
    pub status: Status,
    /// The runner version(s) the facts were checked with, or the citation.
    pub checked: String,
    /// The command that prints the runner's version, as words; the word
    /// `{runner}` stands for the runner's own words in the subject's command
    /// (`python3 -m pytest`), e.g. `["{runner}", "--version"]` or
    /// `["go", "version"]`. Run once per session; its first line is recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<Vec<String>>,
    /// How to recognise the runner in a command line.
    pub detect: Detect,
    /// Arguments every run gets, in every cell (go's `-count=1`, without
    /// which repeated runs are answered from the test cache).
    #[serde(default)]
    pub always: Option<Inject>,
    /// How to get a JUnit report at a given path.
    #[serde(default)]
    pub junit: Option<Inject>,
    /// How to get per-test outcomes from what the runner ships, when no
    /// `{junit}`, no `--junit` and no plugin `[junit]` needs is at hand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_test: Option<per_test::PerTest>,
    /// How the runner's output says it retried tests, for a report that
    /// may keep no trace of the attempts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<retries::Retries>,
    /// How to shuffle with a seed, and read the seed back.
    #[serde(default)]
    pub shuffle: Option<Shuffle>,
    /// How to set the number of parallel workers.
    #[serde(default)]
    pub workers: Option<Workers>,
    /// How to build and run the tests under the runner's race detector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub race: Option<Race>,
    /// How to run one test by id.
    #[serde(default)]
    pub select: Option<Inject>,
    /// Whether and how the runner runs a given list of tests in a given
    /// order (`flakelab bisect`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordered: Option<ordered::Ordered>,
    /// What its exit codes mean.
    pub exit: ExitCodes,
    /// Perturbation kinds the runtime cannot honour, with the reason.
    #[serde(default)]
    pub unsupported: BTreeMap<String, String>,
    /// libfaketime options the runtime needs under a shifted clock
    /// (libfaketime's documentation names the JVM's
    /// `FAKETIME_DONT_FAKE_MONOTONIC=1`; OpenJDK 17 with libfaketime 0.9.10
    /// needs none). flakelab sets none unless a recipe declares them, and a
    /// cell that sets them says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faketime: Option<FaketimeNeeds>,
    /// Where the facts come from (runners.md sections, docs, source files).
    #[serde(default)]
    pub sources: Vec<String>,
}

/// libfaketime options a runtime needs (`[faketime]` in a recipe).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaketimeNeeds {
    /// The variables, each named `FAKETIME_…` (never `FAKETIME` itself,
    /// which is the shift).
    pub env: BTreeMap<String, String>,
    /// Why the runtime needs them: shown on every cell that sets them.
    pub why: String,
}

/// How far a recipe's facts were checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// flakelab's own test suite runs the real runner through this recipe.
    Tested,
    /// Checked by hand with the real runner on this machine kind.
    Verified,
    /// From documentation or source only: unverified here.
    Documented,
}

/// Command-line shapes that identify the runner. Each pattern is a list of
/// words: the first matches the program's file name, the rest must follow
/// in order, with only options (`-x`, `+nightly`) between them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Detect {
    /// Patterns, e.g. `["pytest"]`, `["python3", "-m", "pytest"]`, `["cargo", "test"]`.
    pub patterns: Vec<Vec<String>>,
}

/// Arguments and variables added to the command, with placeholders
/// (`{junit}`, `{seed}`, `{workers}`, `{id}`, `{id_re}`) replaced in one pass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inject {
    /// Arguments appended to the command.
    #[serde(default)]
    pub args: Vec<String>,
    /// Where the arguments go: `end` (default) or `after-double-dash`
    /// (after the command's `--`, adding one when there is none).
    #[serde(default)]
    pub position: Position,
    /// Variables set for the run.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// `[select]` only: drop the command's own path arguments (words naming
    /// an existing file or directory, or `file::rest`), because `{id}`
    /// names the file itself and the runner would otherwise run them all.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub drop_paths: bool,
    /// `[select]` only: options whose next word is their value, never a
    /// path argument to drop (`--ignore tests/slow`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub value_options: Vec<String>,
    /// `[select]` only: several ids select together when the arguments are
    /// repeated once per id (`--only a --only b`; pytest's node ids), so the
    /// screen design confirms many candidates in one invocation. Without
    /// it, each selection runs alone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repeats: bool,
    /// `[select]` only: how the runner names a test that flakelab knows by
    /// its JUnit id (`classname::name`), for `--design screen`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_from: Option<IdFrom>,
}

/// How a runner's selection id comes from a JUnit id.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IdFrom {
    /// The name part (go, jest, cargo): the default. Neighbours: the whole
    /// command.
    #[default]
    Name,
    /// The JUnit id itself; neighbours: its classname.
    Junit,
    /// A pytest node id: the classname's module path as a file, then
    /// `::Class::name`; neighbours: the file.
    Pytest,
}

/// Where injected arguments go.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Position {
    /// At the end of the command.
    #[default]
    End,
    /// After the command's `--` (one is added when missing).
    AfterDoubleDash,
    /// Right after the runner's own words (`node --test`), before any file
    /// argument: for runners that stop reading options at the first file.
    AfterMatch,
}

/// Shuffling with a seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shuffle {
    /// What turns shuffling on with `{seed}`.
    pub on: Inject,
    /// A regex with one capture group: the seed as the runner prints it.
    pub seed_regex: String,
    /// What turns the runner's own shuffling off (for every other cell),
    /// when it shuffles by default or through an installed plugin.
    #[serde(default)]
    pub off: Option<Inject>,
    /// Arguments that hide the seed line; they are removed in shuffle cells.
    #[serde(default)]
    pub hides_seed: Vec<String>,
    /// The seed's range: the largest seed the runner accepts.
    #[serde(default = "default_max_seed")]
    pub max_seed: u64,
    /// Output that means the plugin or flag the shuffle needs is missing
    /// (the run measured nothing: the cell is not applied).
    #[serde(default)]
    pub missing_regex: Option<String>,
    /// What to install when it is missing.
    #[serde(default)]
    pub missing_hint: Option<String>,
}

fn default_max_seed() -> u64 {
    u64::from(u32::MAX)
}

/// Parallel workers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workers {
    /// What sets `{workers}` workers.
    pub set: Inject,
    /// The runner's default: `1`, `cpus`, `cpus-1`, `half-cpus`.
    pub default: String,
    /// A regex whose match in the output proves workers really ran (with one
    /// capture group: their number), when the runner prints one.
    #[serde(default)]
    pub proof_regex: Option<String>,
    /// Options the command may already carry that would override the
    /// injected count (`--test-threads`, `-j`): removed with their value
    /// (`--opt V` and `--opt=V`) in workers cells.
    #[serde(default)]
    pub replaces: Vec<String>,
    /// Arguments that hide the proof line; they are removed in workers cells.
    #[serde(default)]
    pub hides_proof: Vec<String>,
    /// Output that means a plugin the workers need is missing.
    #[serde(default)]
    pub missing_regex: Option<String>,
    /// What to install when it is missing.
    #[serde(default)]
    pub missing_hint: Option<String>,
}

/// The runner's race detector (`race` cells).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Race {
    /// What builds and runs the tests under the detector (`{target}`: the
    /// host's target triple, for a sanitizer build of the standard library).
    pub on: Inject,
    /// What runs each test at the GOMAXPROCS values `{cpu}` (`1,2,4`).
    #[serde(default)]
    pub cpu: Option<Inject>,
    /// A regex whose match in the run's output proves the detector was live
    /// in the test binary: the sanitizer runtime's own start-up banner,
    /// which `on` asks it to print. A run without it measured nothing.
    pub proof_regex: String,
    /// What the detector needs on the host, in words (`flakelab doctor`
    /// checks it: `cgo` or `nightly-rust-src`).
    pub needs: String,
    /// Output that means the detector cannot be built here (no cgo, no C
    /// compiler, a stable toolchain): the run is not applied, with that line.
    #[serde(default)]
    pub missing_regex: Option<String>,
    /// What to install or set when it is missing.
    #[serde(default)]
    pub missing_hint: Option<String>,
}

/// The host capabilities a [`Race`] section may need.
pub const RACE_NEEDS: &[&str] = &["cgo", "nightly-rust-src"];

/// What the runner's exit codes mean (0 is always "all passed").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExitCodes {
    /// Codes for "tests failed".
    pub failed: Vec<i32>,
    /// Codes for "usage error" (an `error` outcome, never a failure).
    #[serde(default)]
    pub usage: Vec<i32>,
    /// Codes for "nothing collected" (an `error` outcome, never a pass).
    #[serde(default)]
    pub no_tests: Vec<i32>,
    /// A regex on the output that means nothing was collected although the
    /// code says 0 (runners that exit 0 on an empty run).
    #[serde(default)]
    pub no_tests_regex: Option<String>,
    /// A regex on the output that means the run measured nothing — a usage
    /// error, or no tests found — for runners whose code for that is the
    /// "tests failed" code (jest, vitest, cargo test).
    #[serde(default)]
    pub error_regex: Option<String>,
}

/// The recipe files embedded in the binary.
const EMBEDDED: &[(&str, &str)] = &[
    (
        "recipes/pytest.toml",
        include_str!("../../../recipes/pytest.toml"),
    ),
    ("recipes/go.toml", include_str!("../../../recipes/go.toml")),
    (
        "recipes/gotestsum.toml",
        include_str!("../../../recipes/gotestsum.toml"),
    ),
    (
        "recipes/cargo-test.toml",
        include_str!("../../../recipes/cargo-test.toml"),
    ),
    (
        "recipes/cargo-nextest.toml",
        include_str!("../../../recipes/cargo-nextest.toml"),
    ),
    (
        "recipes/jest.toml",
        include_str!("../../../recipes/jest.toml"),
    ),
    (
        "recipes/vitest.toml",
        include_str!("../../../recipes/vitest.toml"),
    ),
    (
        "recipes/node-test.toml",
        include_str!("../../../recipes/node-test.toml"),
    ),
    (
        "recipes/mocha.toml",
        include_str!("../../../recipes/mocha.toml"),
    ),
    (
        "recipes/rspec.toml",
        include_str!("../../../recipes/rspec.toml"),
    ),
    (
        "recipes/phpunit.toml",
        include_str!("../../../recipes/phpunit.toml"),
    ),
    (
        "recipes/ctest.toml",
        include_str!("../../../recipes/ctest.toml"),
    ),
    (
        "recipes/playwright.toml",
        include_str!("../../../recipes/playwright.toml"),
    ),
    (
        "recipes/flakelab-demo.toml",
        include_str!("../../../recipes/flakelab-demo.toml"),
    ),
];

/// Parses and validates one recipe file's text; `source` names it in errors.
pub fn parse_text(source: &str, text: &str) -> crate::error::Result<Recipe> {
    let bad = |message: String| crate::error::Error::Catalog {
        path: source.to_string(),
        message,
        hint: "fix the recipe; `flakelab recipes show NAME` prints a working one".into(),
    };
    let recipe: Recipe = toml::from_str(text).map_err(|e| bad(located(text, &e)))?;
    recipe.validate().map_err(bad)?;
    Ok(recipe)
}

/// A TOML error's message with where it is: the table the offending key
/// or value sits in (`[per_test]`) and its line.
fn located(text: &str, err: &toml::de::Error) -> String {
    let message = err.message();
    let Some(start) = err.span().map(|s| s.start.min(text.len())) else {
        return message.to_string();
    };
    let line = text[..start].matches('\n').count() + 1;
    let upto = text[start..].find('\n').map_or(text.len(), |n| start + n);
    let table = text[..upto]
        .lines()
        .map(str::trim)
        .rfind(|l| l.starts_with('['))
        .map(|l| l.split('#').next().unwrap_or(l).trim_end());
    match table {
        Some(table) => format!("{message} (in {table}, line {line})"),
        None => format!("{message} (line {line})"),
    }
}

/// Loads the embedded recipes, then the project's `override_dir/*.toml`
/// (a recipe with an embedded recipe's name replaces it).
pub fn load(override_dir: Option<&std::path::Path>) -> crate::error::Result<Vec<Recipe>> {
    let parse = parse_text;
    let mut recipes = Vec::new();
    // The embedded recipes are checked by a test
    // (`every_embedded_recipe_is_valid_and_named_after_its_file`): validating
    // them again compiles every regex of every recipe on each start, and
    // that was about a third of flakelab's start-up.
    for (source, text) in EMBEDDED {
        let recipe = toml::from_str(text).map_err(|e| crate::error::Error::Catalog {
            path: (*source).to_string(),
            message: located(text, &e),
            hint: "this recipe is built in: report this as a bug".into(),
        })?;
        recipes.push(recipe);
    }
    if let Some(dir) = override_dir.filter(|d| d.is_dir()) {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_else(|_| Vec::new());
        files.retain(|p: &std::path::PathBuf| p.extension().is_some_and(|x| x == "toml"));
        files.sort();
        for path in files {
            let shown = path.display().to_string();
            let text =
                std::fs::read_to_string(&path).map_err(|e| crate::error::Error::Catalog {
                    path: shown.clone(),
                    message: e.to_string(),
                    hint: "check the file's permissions".into(),
                })?;
            let r = parse(&shown, &text)?;
            match recipes.iter_mut().find(|q: &&mut Recipe| q.name == r.name) {
                Some(q) => *q = r,
                None => recipes.push(r),
            }
        }
    }
    Ok(recipes)
}

/// The placeholders a recipe may use.
pub const PLACEHOLDERS: &[&str] = &[
    "junit", "seed", "workers", "id", "id_re", "report", "cpu", "target",
];

/// Words that run the rest of the command line as the real command.
const WRAPPERS: &[&[&str]] = &[
    &["poetry", "run"],
    &["uv", "run"],
    &["pipenv", "run"],
    &["hatch", "run"],
    &["pnpm", "exec"],
    &["yarn", "exec"],
    &["xvfb-run"],
    &["nice"],
    &["ionice"],
    &["stdbuf"],
];

/// Programs whose command line hides the runner: flakelab refuses to guess.
const OPAQUE: &[&str] = &[
    "sh", "bash", "zsh", "dash", "make", "npm", "yarn", "pnpm", "just", "tox", "nox",
];

/// What detection found.
#[derive(Debug, Clone, PartialEq)]
pub enum Detection<'a> {
    /// A recipe matched: the recipe, the pattern, and where the runner's
    /// words start in the command.
    Found {
        /// The recipe.
        recipe: &'a Recipe,
        /// The pattern that matched.
        pattern: Vec<String>,
    },
    /// No recipe: the reason, for the report.
    None(String),
}

fn program_matches(pattern: &str, word: &str) -> bool {
    let file = word.rsplit('/').next().unwrap_or(word);
    if pattern == "python" || pattern == "python3" {
        // python, python3, python3.11 …
        return file
            .strip_prefix("python")
            .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit() || c == '.'));
    }
    file == pattern
}

/// Where the real command starts after wrappers (`env A=B`, `timeout 5m`,
/// `poetry run` …), or None when the program hides the runner.
fn skip_wrappers(argv: &[String]) -> Result<usize, String> {
    let mut i = 0;
    loop {
        let Some(word) = argv.get(i) else {
            return Err("the command is empty".into());
        };
        let file = word.rsplit('/').next().unwrap_or(word);
        if file == "env" {
            i += 1;
            while argv
                .get(i)
                .is_some_and(|w| w.starts_with('-') || w.contains('='))
            {
                i += 1;
            }
            continue;
        }
        if file == "timeout" {
            i += 1;
            while argv.get(i).is_some_and(|w| w.starts_with('-')) {
                i += 1;
            }
            i += 1; // the duration
            continue;
        }
        if let Some(w) = WRAPPERS.iter().find(|w| {
            program_matches(w[0], word) && w[1..].iter().zip(&argv[i + 1..]).all(|(a, b)| a == b)
        }) {
            i += w.len();
            while argv.get(i).is_some_and(|w| w.starts_with('-')) {
                i += 1;
            }
            continue;
        }
        if OPAQUE.contains(&file) {
            return Err(format!(
                "`{file}` hides which runner it starts; name it with --runner NAME, or run the runner directly"
            ));
        }
        return Ok(i);
    }
}

/// Whether `pattern` matches `argv` from `start`: the first word by file
/// name, the others in order with only options between them.
fn matches_at(pattern: &[String], argv: &[String], start: usize) -> bool {
    match_end(pattern, argv, start).is_some()
}

/// Where the match of `pattern` at `start` ends (the index after its last
/// word), if it matches.
fn match_end(pattern: &[String], argv: &[String], start: usize) -> Option<usize> {
    let (first, rest) = pattern.split_first()?;
    if !argv.get(start).is_some_and(|w| program_matches(first, w)) {
        return None;
    }
    let mut i = start + 1;
    for want in rest {
        loop {
            match argv.get(i) {
                Some(w) if w == want => break,
                Some(w) if w.starts_with('-') || w.starts_with('+') => i += 1,
                _ => return None,
            }
        }
        i += 1;
    }
    Some(i)
}

/// Where the runner's own words end in `argv` (after wrappers and the words
/// of the first pattern of `recipe` that matches), for `after-match`
/// injection; the end of `argv` when none matches.
pub fn runner_words_end(recipe: &Recipe, argv: &[String]) -> usize {
    skip_wrappers(argv)
        .ok()
        .and_then(|start| {
            recipe
                .detect
                .patterns
                .iter()
                .filter_map(|p| match_end(p, argv, start))
                .max()
        })
        .unwrap_or(argv.len())
}

/// The recipe's version command for `command`, with `{runner}` replaced by
/// the runner's words in it (wrappers included); None without a `version`.
pub fn version_argv(recipe: &Recipe, command: &[String]) -> Option<Vec<String>> {
    recipe
        .version
        .as_ref()
        .map(|words| with_runner_words(recipe, words, command))
}

/// The recipe's `[per_test] plugin_probe` for `command`, `{runner}` replaced
/// as in [`version_argv`]; None without one.
pub fn plugin_probe_argv(recipe: &Recipe, command: &[String]) -> Option<Vec<String>> {
    let words = recipe.per_test.as_ref()?.plugin_probe.as_ref()?;
    Some(with_runner_words(recipe, words, command))
}

fn with_runner_words(recipe: &Recipe, words: &[String], command: &[String]) -> Vec<String> {
    let runner = &command[..runner_words_end(recipe, command).min(command.len())];
    words
        .iter()
        .flat_map(|w| {
            if w == "{runner}" {
                runner.to_vec()
            } else {
                vec![w.clone()]
            }
        })
        .collect()
}

/// Removes each option in `options` from `argv`, with its value: both
/// `--opt V` and `--opt=V`.
pub fn remove_options(argv: &[String], options: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut skip_value = false;
    for w in argv {
        if skip_value {
            skip_value = false;
            continue;
        }
        if options.iter().any(|o| w == o) {
            skip_value = true;
            continue;
        }
        if options.iter().any(|o| w.starts_with(&format!("{o}="))) {
            continue;
        }
        out.push(w.clone());
    }
    out
}

/// The command without its path arguments after the runner's words
/// (`start`): words that name an existing path under `dir` (or
/// `path::rest`), unless an option in `value_options` takes them as its
/// value. Used by `[select] drop_paths`.
pub fn drop_path_args(
    argv: &[String],
    start: usize,
    dir: &std::path::Path,
    value_options: &[String],
) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    for (i, w) in argv.iter().enumerate() {
        let is_value = i > 0 && value_options.iter().any(|o| *o == argv[i - 1]);
        let path = w.split("::").next().unwrap_or(w);
        let names_path = !w.starts_with('-') && !path.is_empty() && dir.join(path).exists();
        if i >= start && names_path && !is_value && !argv[..i].iter().any(|a| a == "--") {
            continue;
        }
        out.push(w.clone());
    }
    out
}

/// Finds the recipe for a command line.
pub fn detect<'a>(recipes: &'a [Recipe], argv: &[String]) -> Detection<'a> {
    let start = match skip_wrappers(argv) {
        Ok(s) => s,
        Err(why) => return Detection::None(why),
    };
    // The longest matching pattern wins (`cargo nextest run` over `cargo`).
    let mut best: Option<(&Recipe, &Vec<String>)> = None;
    for r in recipes {
        for p in &r.detect.patterns {
            if matches_at(p, argv, start) && best.is_none_or(|(_, b)| p.len() > b.len()) {
                best = Some((r, p));
            }
        }
    }
    match best {
        Some((recipe, pattern)) => Detection::Found {
            recipe,
            pattern: pattern.clone(),
        },
        None => Detection::None(format!(
            "no recipe recognises `{}`; per-test data needs {{junit}} or --junit, and shuffle/workers cells need --runner NAME",
            argv[start]
        )),
    }
}

/// Replaces `{name}` placeholders in one pass (a substituted value is never
/// expanded again). Unknown placeholders are an error.
pub fn fill(template: &str, vars: &BTreeMap<&str, String>) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find(['{', '}']) {
        out.push_str(&rest[..open]);
        // `{{` and `}}` stand for literal braces (a runner's own template).
        if rest[open..].starts_with("{{") || rest[open..].starts_with("}}") {
            out.push_str(&rest[open..open + 1]);
            rest = &rest[open + 2..];
            continue;
        }
        if rest[open..].starts_with('}') {
            out.push('}');
            rest = &rest[open + 1..];
            continue;
        }
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            out.push_str(&rest[open..]);
            return Ok(out);
        };
        let name = &after[..close];
        match vars.get(name) {
            Some(v) => out.push_str(v),
            None if PLACEHOLDERS.contains(&name) => {
                return Err(format!("placeholder `{{{name}}}` has no value here"))
            }
            None => return Err(format!("unknown placeholder `{{{name}}}`")),
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

impl Inject {
    /// Applies the injection to `argv`, returning the new argv and the
    /// variables to set.
    pub fn apply(
        &self,
        argv: &[String],
        vars: &BTreeMap<&str, String>,
    ) -> Result<(Vec<String>, BTreeMap<String, String>), String> {
        self.apply_at(argv, vars, argv.len())
    }

    /// Like [`Inject::apply`], with the index where the runner's own words
    /// end (see [`runner_words_end`]) for `after-match` injection.
    pub fn apply_at(
        &self,
        argv: &[String],
        vars: &BTreeMap<&str, String>,
        words_end: usize,
    ) -> Result<(Vec<String>, BTreeMap<String, String>), String> {
        let args = self
            .args
            .iter()
            .map(|a| fill(a, vars))
            .collect::<Result<Vec<_>, _>>()?;
        let env = self
            .env
            .iter()
            .map(|(k, v)| Ok((k.clone(), fill(v, vars)?)))
            .collect::<Result<BTreeMap<_, _>, String>>()?;
        let mut out = argv.to_vec();
        match self.position {
            Position::End => out.extend(args),
            Position::AfterDoubleDash => {
                if !out.iter().any(|w| w == "--") {
                    out.push("--".into());
                }
                out.extend(args);
            }
            Position::AfterMatch => {
                let at = words_end.min(out.len());
                out.splice(at..at, args);
            }
        }
        Ok((out, env))
    }

    fn templates(&self) -> impl Iterator<Item = &String> {
        self.args.iter().chain(self.env.values())
    }
}

impl Recipe {
    /// Checks what serde cannot: placeholders, regexes, and that each
    /// section uses the placeholder it needs.
    pub fn validate(&self) -> Result<(), String> {
        let check = |what: &str, inject: &Inject, needs: &str| -> Result<(), String> {
            let mut vars: BTreeMap<&str, String> =
                PLACEHOLDERS.iter().map(|p| (*p, String::new())).collect();
            vars.insert(needs, "X".into());
            let mut used = false;
            for t in inject.templates() {
                fill(t, &vars).map_err(|e| format!("[{what}]: {e}"))?;
                // `{id_re}` is the same id, escaped for a pattern.
                used |=
                    t.contains(&format!("{{{needs}}}")) || (needs == "id" && t.contains("{id_re}"));
            }
            if !used && !needs.is_empty() {
                let or = if needs == "id" { " or {id_re}" } else { "" };
                return Err(format!("[{what}] never uses {{{needs}}}{or}"));
            }
            Ok(())
        };
        if let Some(j) = &self.junit {
            check("junit", j, "junit")?;
        }
        if let Some(p) = &self.per_test {
            p.validate()?;
        }
        if let Some(r) = &self.retries {
            r.validate()?;
        }
        if let Some(v) = &self.version {
            if v.is_empty() {
                return Err("version is empty: give the words of a version command".into());
            }
            if let Some(w) = v.iter().find(|w| w.contains('{') && *w != "{runner}") {
                return Err(format!(
                    "version: `{w}`: the only placeholder is a whole word {{runner}}"
                ));
            }
        }
        if let Some(a) = &self.always {
            for t in a.templates() {
                fill(t, &BTreeMap::new())
                    .map_err(|e| format!("[always]: {e} (it takes no placeholders)"))?;
            }
        }
        if let Some(s) = &self.select {
            check("select", s, "id")?;
        }
        if let Some(o) = &self.ordered {
            o.validate()?;
        }
        if let Some(f) = &self.faketime {
            if f.env.is_empty() || f.why.trim().is_empty() {
                return Err(
                    "[faketime] needs `env` (the options) and `why` (the runtime's reason)".into(),
                );
            }
            if let Some(k) = f.env.keys().find(|k| !k.starts_with("FAKETIME_")) {
                return Err(format!(
                    "[faketime] env: `{k}` is not a libfaketime option (they are named FAKETIME_…; the shift itself is flakelab's)"
                ));
            }
        }
        if let Some(s) = &self.shuffle {
            check("shuffle.on", &s.on, "seed")?;
            let re = regex::Regex::new(&s.seed_regex)
                .map_err(|e| format!("[shuffle] seed_regex: {e}"))?;
            if re.captures_len() != 2 {
                return Err("[shuffle] seed_regex needs exactly one capture group".into());
            }
        }
        if let Some(w) = &self.workers {
            check("workers.set", &w.set, "workers")?;
            if !["1", "cpus", "cpus-1", "half-cpus"].contains(&w.default.as_str()) {
                return Err(format!(
                    "[workers] default `{}`: use 1, cpus, cpus-1 or half-cpus",
                    w.default
                ));
            }
            for re in [&w.proof_regex, &w.missing_regex].into_iter().flatten() {
                regex::Regex::new(re).map_err(|e| format!("[workers] regex: {e}"))?;
            }
        }
        if let Some(r) = &self.race {
            check("race.on", &r.on, "")?;
            if let Some(c) = &r.cpu {
                check("race.cpu", c, "cpu")?;
            }
            if !RACE_NEEDS.contains(&r.needs.as_str()) {
                return Err(format!(
                    "[race] needs `{}`: use one of {}",
                    r.needs,
                    RACE_NEEDS.join(", ")
                ));
            }
            for re in [Some(&r.proof_regex), r.missing_regex.as_ref()]
                .into_iter()
                .flatten()
            {
                regex::Regex::new(re).map_err(|e| format!("[race] regex: {e}"))?;
            }
        }
        for re in [&self.exit.no_tests_regex, &self.exit.error_regex]
            .into_iter()
            .flatten()
        {
            regex::Regex::new(re).map_err(|e| format!("[exit] regex: {e}"))?;
        }
        if self.detect.patterns.iter().any(Vec::is_empty) {
            return Err("[detect] has an empty pattern".into());
        }
        Ok(())
    }

    /// The default number of workers on a host with `cpus` CPUs.
    pub fn default_workers(&self, cpus: usize) -> Option<usize> {
        let w = self.workers.as_ref()?;
        Some(
            match w.default.as_str() {
                "cpus" => cpus,
                "cpus-1" => cpus.saturating_sub(1),
                "half-cpus" => cpus / 2,
                _ => 1,
            }
            .max(1),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every string a user reads from a recipe (its summary, why a kind is
    /// unsupported, …) names no file flakelab does not ship: the
    /// `shared/reference/` notes are the maintainers', not the user's.
    /// Only `sources` and `checked` cite them, as provenance.
    #[test]
    fn no_user_facing_text_cites_a_file_flakelab_does_not_ship() {
        for r in load(None).unwrap() {
            let mut v = serde_json::to_value(&r).unwrap();
            let o = v.as_object_mut().unwrap();
            o.remove("sources");
            o.remove("checked");
            let text = v.to_string();
            for cited in ["shared/", "reference/", ".md"] {
                assert!(
                    !text.contains(cited),
                    "recipe {} tells the user about `{cited}`: {text}",
                    r.name
                );
            }
        }
    }

    #[test]
    fn the_version_command_takes_the_runners_words_from_the_command() {
        let mut r = recipe(&[&["python3", "-m", "pytest"]]);
        assert_eq!(version_argv(&r, &["python3".into()]), None);
        r.version = Some(vec!["{runner}".into(), "--version".into()]);
        let cmd: Vec<String> = ["python3", "-m", "pytest", "tests/", "-x"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            version_argv(&r, &cmd).unwrap(),
            ["python3", "-m", "pytest", "--version"]
        );
        r.version = Some(vec!["{runner} --version".into()]);
        assert!(r.validate().unwrap_err().contains("whole word {runner}"));
        r.version = Some(vec![]);
        assert!(r.validate().is_err());
    }

    fn recipe(patterns: &[&[&str]]) -> Recipe {
        Recipe {
            name: "x".into(),
            summary: String::new(),
            status: Status::Documented,
            checked: String::new(),
            version: None,
            detect: Detect {
                patterns: patterns
                    .iter()
                    .map(|p| p.iter().map(|s| s.to_string()).collect())
                    .collect(),
            },
            always: None,
            junit: None,
            per_test: None,
            retries: None,
            shuffle: None,
            workers: None,
            race: None,
            select: None,
            ordered: None,
            exit: ExitCodes {
                failed: vec![1],
                usage: vec![],
                no_tests: vec![],
                no_tests_regex: None,
                error_regex: None,
            },
            unsupported: BTreeMap::new(),
            faketime: None,
            sources: vec![],
        }
    }

    fn argv(s: &str) -> Vec<String> {
        shell_words::split(s).unwrap()
    }

    #[test]
    fn faketime_options_must_be_libfaketime_options_with_a_reason() {
        let mut r = recipe(&[&["x"]]);
        r.faketime = Some(FaketimeNeeds {
            env: BTreeMap::from([("FAKETIME_DONT_FAKE_MONOTONIC".into(), "1".into())]),
            why: "the JVM".into(),
        });
        assert_eq!(r.validate(), Ok(()));
        for (k, why) in [
            ("FAKETIME", "the JVM"),
            ("LD_PRELOAD", "x"),
            ("FAKETIME_X", " "),
        ] {
            r.faketime = Some(FaketimeNeeds {
                env: BTreeMap::from([(k.into(), "1".into())]),
                why: why.into(),
            });
            assert!(r.validate().unwrap_err().starts_with("[faketime]"), "{k}");
        }
        // No embedded recipe needs any: none of them runs a JVM.
        assert!(load(None).unwrap().iter().all(|r| r.faketime.is_none()));
    }

    #[test]
    fn select_drops_path_arguments_but_not_option_values() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("tests/slow")).unwrap();
        std::fs::write(dir.path().join("tests/test_a.py"), "").unwrap();
        std::fs::write(dir.path().join("pytest.ini"), "").unwrap();
        let cmd = argv(
            "pytest -x -c pytest.ini --ignore tests/slow tests tests/test_a.py::test_b -k x -- tests",
        );
        let values = vec!["-c".to_string(), "--ignore".to_string()];
        let out = drop_path_args(&cmd, 1, dir.path(), &values);
        assert_eq!(
            out,
            argv("pytest -x -c pytest.ini --ignore tests/slow -k x -- tests")
        );
        // Nothing names a path: nothing is dropped.
        assert_eq!(
            drop_path_args(&argv("go test ./..."), 2, dir.path(), &[]),
            argv("go test ./...")
        );
    }

    #[test]
    fn detection_table_of_real_command_lines() {
        let recipes = load(None).unwrap();
        let table: &[(&str, Option<&str>)] = &[
            ("pytest", Some("pytest")),
            ("pytest -x -q tests/unit", Some("pytest")),
            ("python -m pytest --maxfail=1", Some("pytest")),
            ("python3.12 -m pytest", Some("pytest")),
            ("poetry run pytest -n auto", Some("pytest")),
            ("uv run pytest tests", Some("pytest")),
            (
                "env DJANGO_SETTINGS_MODULE=app.settings pytest",
                Some("pytest"),
            ),
            ("timeout 10m pytest", Some("pytest")),
            ("go test ./...", Some("go")),
            ("go test -race -count=1 ./internal/...", Some("go")),
            ("gotestsum -- ./...", Some("gotestsum")),
            ("cargo test --workspace", Some("cargo-test")),
            ("cargo +nightly test", Some("cargo-test")),
            ("cargo nextest run --workspace", Some("cargo-nextest")),
            ("npx jest --ci", Some("jest")),
            ("jest", Some("jest")),
            ("npx vitest run", Some("vitest")),
            ("node --test", Some("node-test")),
            ("npx mocha 'test/**/*.spec.js'", Some("mocha")),
            ("bundle exec rspec spec/models", Some("rspec")),
            ("rspec", Some("rspec")),
            ("vendor/bin/phpunit --testsuite unit", Some("phpunit")),
            ("ctest --output-on-failure", Some("ctest")),
            ("npx playwright test", Some("playwright")),
            // Must refuse to guess.
            ("npm test", None),
            ("yarn test", None),
            ("make check", None),
            ("sh -c 'pytest && go test ./...'", None),
            ("bash scripts/test.sh", None),
            ("./gradlew test", None),
            ("python3 -m unittest discover", None),
            ("python3 manage.py test", None),
            ("cargo build", None),
            ("go vet ./...", None),
            ("node server.js", None),
            ("tox -e py311", None),
        ];
        for (cmd, want) in table {
            let got = match detect(&recipes, &argv(cmd)) {
                Detection::Found { recipe, .. } => Some(recipe.name.as_str()),
                Detection::None(_) => None,
            };
            assert_eq!(got, *want, "{cmd}");
        }
    }

    #[test]
    fn seed_lines_recorded_from_real_runs_are_read_back() {
        // Output lines as recorded in shared/reference/runners.md (VERIFIED
        // rows, run on this machine kind), one per recipe with a shuffle.
        let recorded: &[(&str, &str, &str)] = &[
            (
                "pytest",
                "platform linux -- Python 3.11.7\nUsing --randomly-seed=1234\nrootdir: /x\n",
                "1234",
            ),
            ("go", "=== RUN   TestA\n-test.shuffle 1234\n", "1234"),
            (
                "go",
                "{\"Action\":\"output\",\"Output\":\"-test.shuffle 1234\\n\"}\n",
                "1234",
            ),
            (
                "cargo-test",
                "\nrunning 4 tests (shuffle seed: 1234)\ntest a ... ok\n",
                "1234",
            ),
            (
                "jest",
                "Tests:       3 passed, 3 total\nSeed:        1234\n",
                "1234",
            ),
            (
                "vitest",
                " RUN  v4.1.12 /x\n      Running tests with seed \"1234\"\n",
                "1234",
            ),
            (
                "playwright",
                "Running 5 tests using 1 worker, shuffle seed 1234\n",
                "1234",
            ),
            ("rspec", "Randomized with seed 1234\n...\n", "1234"),
            (
                "phpunit",
                "PHPUnit 9.6.7 by Sebastian Bergmann and contributors.\n\nRandom Seed:   1234\n",
                "1234",
            ),
        ];
        let recipes = load(None).unwrap();
        for (name, log, seed) in recorded {
            let r = recipes.iter().find(|r| r.name == *name).unwrap();
            let re = regex::Regex::new(&r.shuffle.as_ref().unwrap().seed_regex).unwrap();
            let got = re.captures(log).and_then(|c| c.get(1)).map(|m| m.as_str());
            assert_eq!(got, Some(*seed), "{name}: {log:?}");
            // A run whose output lacks the line is caught.
            assert!(re.captures("all tests passed\n").is_none(), "{name}");
        }
    }

    #[test]
    fn every_embedded_recipe_is_valid_and_named_after_its_file() {
        for (source, text) in EMBEDDED {
            let r: Recipe = toml::from_str(text).unwrap_or_else(|e| panic!("{source}: {e}"));
            r.validate().unwrap_or_else(|e| panic!("{source}: {e}"));
            assert_eq!(format!("recipes/{}.toml", r.name), *source);
        }
    }

    #[test]
    fn after_match_goes_before_file_arguments() {
        let node = Recipe {
            name: "node".into(),
            ..recipe(&[&["node", "--test"]])
        };
        let inject = Inject {
            args: vec!["--test-reporter=junit".into()],
            position: Position::AfterMatch,
            env: BTreeMap::new(),
            ..Inject::default()
        };
        let cmd = argv("env A=1 node --test test/a.test.js test/b.test.js");
        let end = runner_words_end(&node, &cmd);
        let (out, _) = inject.apply_at(&cmd, &BTreeMap::new(), end).unwrap();
        assert_eq!(
            out,
            argv("env A=1 node --test --test-reporter=junit test/a.test.js test/b.test.js")
        );
    }

    #[test]
    fn options_are_removed_with_their_values() {
        let opts = vec!["--test-threads".to_string(), "-j".to_string()];
        assert_eq!(
            remove_options(
                &argv("cargo test -j 2 -- --test-threads=1 --exact x"),
                &opts
            ),
            argv("cargo test -- --exact x")
        );
        assert_eq!(
            remove_options(&argv("cargo test -- --test-threads 1"), &opts),
            argv("cargo test --")
        );
    }

    #[test]
    fn fill_is_one_pass_and_strict() {
        let vars = BTreeMap::from([("seed", "{junit}".to_string())]);
        assert_eq!(fill("--seed={seed}", &vars).unwrap(), "--seed={junit}");
        assert!(fill("{nope}", &vars)
            .unwrap_err()
            .contains("unknown placeholder"));
        assert!(fill("{junit}", &vars).unwrap_err().contains("no value"));
    }

    #[test]
    fn injection_after_double_dash_adds_one_when_missing() {
        let inject = Inject {
            args: vec!["--shuffle-seed".into(), "{seed}".into()],
            position: Position::AfterDoubleDash,
            env: BTreeMap::from([("RUSTC_BOOTSTRAP".to_string(), "1".to_string())]),
            ..Inject::default()
        };
        let vars = BTreeMap::from([("seed", "7".to_string())]);
        let (a, env) = inject.apply(&argv("cargo test"), &vars).unwrap();
        assert_eq!(a, argv("cargo test -- --shuffle-seed 7"));
        assert_eq!(env["RUSTC_BOOTSTRAP"], "1");
        let (a, _) = inject.apply(&argv("cargo test -- --exact"), &vars).unwrap();
        assert_eq!(a, argv("cargo test -- --exact --shuffle-seed 7"));
    }

    #[test]
    fn detection_sees_through_wrappers_and_refuses_to_guess() {
        let recipes = vec![
            Recipe {
                name: "pytest".into(),
                ..recipe(&[&["pytest"], &["python3", "-m", "pytest"]])
            },
            Recipe {
                name: "cargo-test".into(),
                ..recipe(&[&["cargo", "test"]])
            },
            Recipe {
                name: "nextest".into(),
                ..recipe(&[&["cargo", "nextest", "run"]])
            },
        ];
        let name = |cmd: &str| match detect(&recipes, &argv(cmd)) {
            Detection::Found { recipe, .. } => recipe.name.clone(),
            Detection::None(why) => format!("none: {why}"),
        };
        assert_eq!(name("pytest -x tests/"), "pytest");
        assert_eq!(name("/usr/bin/python3.11 -u -m pytest -q"), "pytest");
        assert_eq!(
            name("env PYTHONHASHSEED=0 timeout 5m poetry run pytest"),
            "pytest"
        );
        assert_eq!(name("cargo +nightly test --release"), "cargo-test");
        assert_eq!(name("cargo nextest run --workspace"), "nextest");
        assert!(name("sh -c 'pytest'").contains("hides which runner"));
        assert!(name("npm test").contains("hides which runner"));
        assert!(name("make check").contains("hides which runner"));
        assert!(name("./run-tests.sh").starts_with("none: no recipe recognises"));
        assert!(name("python3 -m unittest").starts_with("none:"));
        assert!(name("cargo build").starts_with("none:"));
    }
}
