//! What a finished run's exit code and output mean to its runner, read
//! from the recipe's facts: the runner's usage errors and empty runs
//! (never a pass or a fail), and the per-run proof of the recipe-driven
//! kinds (the seed a shuffle run printed, the workers a workers run started).
//! Fixing "pytest's exit 5 misread" starts here and in `recipes/pytest.toml`.

use super::Recipe;

/// The runner's own "usage error" or "nothing collected", from its recipe:
/// by exit code, or by a line of output for runners that share codes.
pub fn runner_error(recipe: &Recipe, code: Option<i32>, log: &str) -> Option<String> {
    let code = code?;
    let plain = strip_ansi(log);
    let found = |re: &Option<String>| -> Option<String> {
        let re = regex::Regex::new(re.as_deref()?).ok()?;
        let m = re.find(&plain)?;
        let line_start = plain[..m.start()].rfind('\n').map_or(0, |i| i + 1);
        let line_end = plain[m.start()..]
            .find('\n')
            .map_or(plain.len(), |i| m.start() + i);
        Some(plain[line_start..line_end].trim().to_string())
    };
    let last = plain
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("(no output)")
        .to_string();
    if recipe.exit.usage.contains(&code) {
        return Some(format!("{} usage error (exit {code}): {last}", recipe.name));
    }
    if recipe.exit.no_tests.contains(&code) {
        return Some(format!(
            "{} collected no tests (exit {code}): {last}",
            recipe.name
        ));
    }
    if code != 0 {
        if let Some(line) = found(&recipe.exit.error_regex) {
            return Some(format!(
                "{} could not run the tests (exit {code}): {line}",
                recipe.name
            ));
        }
        return None;
    }
    found(&recipe.exit.no_tests_regex)
        .map(|line| format!("{} ran no tests (exit 0): {line}", recipe.name))
}

/// The log without colour codes (vitest colours even when piped), so that
/// no seed, proof or error line hides behind them.
pub fn strip_ansi(log: &str) -> String {
    static ANSI: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    ANSI.get_or_init(|| regex::Regex::new(r"\x1b\[[0-9;]*[A-Za-z]").expect("a valid pattern"))
        .replace_all(log, "")
        .into_owned()
}

/// What a run of a recipe-driven cell was asked to do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Asked {
    /// The runner's shuffle, with this run's seed.
    pub shuffle: bool,
    /// The run's seed.
    pub seed: u64,
    /// Workers requested.
    pub workers: Option<usize>,
    /// The race detector asked for.
    pub race: bool,
}

/// The plugin or flag a recipe-driven cell needs is missing (the runner
/// said so, before any test ran): `Some` is why the run's cell was not
/// applied, with what to install. Read before [`runner_error`], since a
/// missing plugin usually ends in the runner's usage error.
pub fn prerequisite_missing(recipe: &Recipe, asked: Asked, log: &str) -> Option<String> {
    let plain = strip_ansi(log);
    let found = |re: &Option<String>| {
        re.as_deref()
            .and_then(|r| regex::Regex::new(r).ok())
            .is_some_and(|re| re.is_match(&plain))
    };
    let hint = |h: &Option<String>| h.as_deref().map(|h| format!(" ({h})")).unwrap_or_default();
    if let (true, Some(s)) = (asked.shuffle, &recipe.shuffle) {
        if found(&s.missing_regex) {
            return Some(format!(
                "shuffle: {} cannot shuffle here: its shuffle plugin is not installed{}",
                recipe.name,
                hint(&s.missing_hint)
            ));
        }
    }
    if let (true, Some(r)) = (asked.race, &recipe.race) {
        if let Some(line) = first_match(&r.missing_regex, &plain) {
            return Some(format!(
                "race: {} cannot build the race detector here: {line}{}",
                recipe.name,
                hint(&r.missing_hint)
            ));
        }
    }
    if let (Some(_), Some(w)) = (asked.workers, &recipe.workers) {
        if found(&w.missing_regex) {
            return Some(format!(
                "workers: {} cannot run workers here{}",
                recipe.name,
                hint(&w.missing_hint)
            ));
        }
    }
    None
}

/// The line of `log` where `re` first matches, trimmed (an event's
/// `Output` when the line is a test2json event).
fn first_match(re: &Option<String>, log: &str) -> Option<String> {
    let re = regex::Regex::new(re.as_deref()?).ok()?;
    let m = re.find(log)?;
    let start = log[..m.start()].rfind('\n').map_or(0, |i| i + 1);
    let end = log[m.start()..]
        .find('\n')
        .map_or(log.len(), |i| m.start() + i);
    Some(log[start..end].trim().chars().take(200).collect())
}

/// The per-run probes of the recipe-driven kinds: the seed the runner
/// printed must be the one passed, and workers must show they ran. `Some`
/// is why the run's cell was not applied.
pub fn not_applied(recipe: &Recipe, asked: Asked, log: &str) -> Option<String> {
    let plain = strip_ansi(log);
    let log = plain.as_str();
    if let (true, Some(shuffle)) = (asked.shuffle, &recipe.shuffle) {
        let printed = regex::Regex::new(&shuffle.seed_regex).ok().and_then(|re| {
            re.captures(log)
                .and_then(|c| c.get(1))
                .map(|m| m.as_str().to_string())
        });
        match printed {
            None => {
                return Some(format!(
                    "shuffle: {} printed no seed line: its shuffle plugin or flag did not take effect (see `flakelab recipes show {}`)",
                    recipe.name, recipe.name
                ))
            }
            Some(seed) if seed != asked.seed.to_string() => {
                return Some(format!(
                    "shuffle: {} printed seed {seed}, not the seed passed ({})",
                    recipe.name, asked.seed
                ))
            }
            Some(_) => {}
        }
    }
    if let (true, Some(r)) = (asked.race, &recipe.race) {
        if let Some(missing) = prerequisite_missing(recipe, asked, log) {
            return Some(missing);
        }
        let live = regex::Regex::new(&r.proof_regex).is_ok_and(|re| re.is_match(log));
        if !live {
            return Some(format!(
                "race: no test binary of {} said its race detector was running (no match for /{}/ in the run's output): a silent detector measured nothing",
                recipe.name, r.proof_regex
            ));
        }
    }
    if let (Some(n), Some(w)) = (asked.workers, &recipe.workers) {
        if let Some(missing) = prerequisite_missing(recipe, asked, log) {
            return Some(missing);
        }
        let proof = w
            .proof_regex
            .as_deref()
            .and_then(|r| regex::Regex::new(r).ok());
        if let Some(re) = proof {
            match re.captures(log) {
                None => {
                    return Some(format!(
                        "workers: {} did not report starting {n} workers",
                        recipe.name
                    ))
                }
                // The capture group is the number the runner started.
                Some(c) => {
                    if let Some(got) = c.get(1).filter(|m| m.as_str() != n.to_string()) {
                        return Some(format!(
                            "workers: {} reported {} workers, not the {n} asked",
                            recipe.name,
                            got.as_str()
                        ));
                    }
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pytest() -> Recipe {
        super::super::load(None)
            .unwrap()
            .into_iter()
            .find(|r| r.name == "pytest")
            .unwrap()
    }

    #[test]
    fn runner_codes_and_lines_become_errors() {
        let r = pytest();
        assert!(runner_error(&r, Some(4), "ERROR: not found: x.py::nope\n")
            .unwrap()
            .contains("usage error (exit 4)"));
        assert!(runner_error(&r, Some(5), "3 deselected\n")
            .unwrap()
            .contains("collected no tests"));
        assert_eq!(runner_error(&r, Some(1), "1 failed, 2 passed\n"), None);
        assert_eq!(runner_error(&r, Some(0), "3 passed\n"), None);
    }

    #[test]
    fn a_shuffle_run_must_print_the_seed_it_was_given() {
        let r = pytest();
        let shuffled = Asked {
            shuffle: true,
            seed: 1234,
            workers: None,
            race: false,
        };
        assert_eq!(
            not_applied(&r, shuffled, "Using --randomly-seed=1234\n"),
            None
        );
        let missing = not_applied(&r, shuffled, "collected 3 items\n").unwrap();
        assert!(missing.contains("printed no seed line"), "{missing}");
        let other = not_applied(&r, shuffled, "Using --randomly-seed=99\n").unwrap();
        assert!(other.contains("printed seed 99"), "{other}");
        // Colour codes do not hide the line.
        assert_eq!(
            not_applied(
                &r,
                shuffled,
                "\u{1b}[1mUsing --randomly-seed=1234\u{1b}[0m\n"
            ),
            None
        );
    }

    fn go() -> Recipe {
        super::super::load(None)
            .unwrap()
            .into_iter()
            .find(|r| r.name == "go")
            .unwrap()
    }

    #[test]
    fn a_race_run_must_show_the_detector_live_and_names_a_missing_cgo() {
        let r = go();
        let race = Asked {
            race: true,
            ..Asked::default()
        };
        // go test -race -json under GORACE=verbosity=1 (go 1.19.8).
        let live = "{\"Action\":\"output\",\"Package\":\"example.com/racy\",\"Output\":\"***** Running under ThreadSanitizer v3 (pid 2322) *****\\n\"}\n";
        assert_eq!(not_applied(&r, race, live), None);
        let silent = "{\"Action\":\"pass\",\"Package\":\"example.com/racy\"}\n";
        let why = not_applied(&r, race, silent).unwrap();
        assert!(why.contains("a silent detector measured nothing"), "{why}");
        // The same output is fine for a cell that did not ask for it.
        assert_eq!(not_applied(&r, Asked::default(), silent), None);
        let no_cgo = "go: -race requires cgo; enable cgo by setting CGO_ENABLED=1\n";
        let why = prerequisite_missing(&r, race, no_cgo).unwrap();
        assert!(
            why.starts_with(
                "race: go cannot build the race detector here: go: -race requires cgo;"
            ),
            "{why}"
        );
        assert!(why.contains("apt-get install gcc"), "{why}");
        let no_cc = "# example.com/racy.test\nruntime/race(.text): relocation target __popcountdi2 not defined\n";
        assert!(prerequisite_missing(&r, race, no_cc).is_some());
        assert_eq!(prerequisite_missing(&r, Asked::default(), no_cgo), None);
    }

    #[test]
    fn workers_need_their_proof_and_name_a_missing_plugin() {
        let r = pytest();
        let workers = Asked {
            shuffle: false,
            seed: 1,
            workers: Some(2),
            race: false,
        };
        assert_eq!(not_applied(&r, workers, "created: 2/2 workers\n"), None);
        let missing = not_applied(
            &r,
            workers,
            "ERROR: usage: pytest [options]\npytest: error: unrecognized arguments: -n 2\n",
        )
        .unwrap();
        assert!(missing.contains("pip install pytest-xdist"), "{missing}");
        // Missing before anything ran: read ahead of the usage error.
        let usage = "ERROR: usage: python -m pytest [options]\npython -m pytest: error: unrecognized arguments: -n\n";
        assert!(runner_error(&r, Some(4), usage).is_some());
        assert!(prerequisite_missing(&r, workers, usage)
            .unwrap()
            .contains("pip install pytest-xdist"));
        let shuffled = Asked {
            shuffle: true,
            seed: 1,
            workers: None,
            race: false,
        };
        let plugin = "ERROR: Error importing plugin \"randomly\": No module named 'randomly'\n";
        assert!(prerequisite_missing(&r, shuffled, plugin)
            .unwrap()
            .contains("pip install pytest-randomly"));
        assert_eq!(prerequisite_missing(&r, Asked::default(), plugin), None);
        let silent = not_applied(&r, workers, "5 passed\n").unwrap();
        assert!(
            silent.contains("did not report starting 2 workers"),
            "{silent}"
        );
        // Fewer workers than asked is not the cell.
        let fewer = not_applied(&r, workers, "created: 1/1 workers\n").unwrap();
        assert!(
            fewer.contains("reported 1 workers, not the 2 asked"),
            "{fewer}"
        );
    }
}
