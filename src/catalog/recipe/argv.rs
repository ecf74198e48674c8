//! The argv of one run, built from the user's command and the recipe's
//! templates: the report path, the shuffle seed (or shuffling off), the
//! workers, the recipe's `[always]` arguments, and `[select]` for one test.

use std::collections::BTreeMap;
use std::path::Path;

use super::{drop_path_args, remove_options, runner_words_end, Inject, Recipe};

/// Where this run's JUnit report goes, and how the runner learns of it.
#[derive(Debug, Clone, Copy)]
pub enum Report<'a> {
    /// `{junit}` in the command becomes this path.
    InCommand(&'a Path),
    /// The recipe's `[junit]` arguments carry this path.
    Recipe(&'a Path),
    /// The recipe's `[per_test]` arguments: `{report}` is this path (None
    /// when the runner's output is read).
    Runner(Option<&'a Path>),
}

/// What one run asks of its runner beyond the user's command.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunArgv<'a> {
    /// The report, if the run writes one.
    pub report: Option<Report<'a>>,
    /// Shuffle on with this seed (`Some`), or off in a cell that does not shuffle.
    pub shuffle_seed: Option<u64>,
    /// Workers to set.
    pub workers: Option<usize>,
    /// The race detector on, with the GOMAXPROCS values to sweep (empty:
    /// the runner's default).
    pub race: Option<&'a [u32]>,
}

/// The target triple flakelab was built for, the `{target}` of a
/// sanitizer build of the standard library (the subject's toolchain is
/// assumed to build for the same host).
pub fn host_target() -> String {
    let env = if cfg!(target_env = "musl") {
        "musl"
    } else {
        "gnu"
    };
    match std::env::consts::OS {
        "linux" => format!("{}-unknown-linux-{env}", std::env::consts::ARCH),
        "macos" => format!("{}-apple-darwin", std::env::consts::ARCH),
        os => format!("{}-unknown-{os}", std::env::consts::ARCH),
    }
}

/// Whether `argv` sets the option `arg` names (`-count=1` names `-count`,
/// also written `--count`), as `-count=N` or `-count N`.
fn sets_option(argv: &[String], arg: &str) -> bool {
    let Some(name) = arg
        .split('=')
        .next()
        .filter(|n| n.starts_with('-') && arg.contains('='))
    else {
        return false;
    };
    let bare = name.trim_start_matches('-');
    argv.iter().any(|w| {
        let flag = w.split('=').next().unwrap_or(w);
        flag.starts_with('-')
            && flag.trim_start_matches('-') == bare
            && flag.len() <= bare.len() + 2
    })
}

/// The command of one run: the user's, with the report path, and with the
/// recipe's shuffle (this run's seed, or shuffling off in every other cell)
/// and workers arguments. Returns the argv and the variables to add; `Err`
/// says which template failed.
pub fn for_run(
    recipe: Option<&Recipe>,
    command: &[String],
    ask: RunArgv<'_>,
) -> Result<(Vec<String>, BTreeMap<String, String>), String> {
    let mut argv = command.to_vec();
    let mut env = BTreeMap::new();
    let mut inject = |inject: &Inject,
                      argv: &mut Vec<String>,
                      vars: BTreeMap<&str, String>|
     -> Result<(), String> {
        let end = recipe.map_or(argv.len(), |r| runner_words_end(r, argv));
        let (next, more) = inject.apply_at(argv, &vars, end)?;
        *argv = next;
        env.extend(more);
        Ok(())
    };
    if let Some(always) = recipe.and_then(|r| r.always.as_ref()) {
        // An option the command sets itself keeps the command's value
        // (`go test -count=3` repeats each test three times: the recipe's
        // `-count=1` must not come after it and win).
        let own = Inject {
            args: always
                .args
                .iter()
                .filter(|a| !sets_option(&argv, a))
                .cloned()
                .collect(),
            ..always.clone()
        };
        inject(&own, &mut argv, BTreeMap::new())?;
    }
    match ask.report {
        Some(Report::InCommand(path)) => {
            argv = expand_junit(&argv, &path.display().to_string());
        }
        Some(Report::Recipe(path)) => {
            if let Some(j) = recipe.and_then(|r| r.junit.as_ref()) {
                inject(
                    j,
                    &mut argv,
                    BTreeMap::from([("junit", path.display().to_string())]),
                )?;
            }
        }
        Some(Report::Runner(path)) => {
            if let Some(p) = recipe.and_then(|r| r.per_test.as_ref()) {
                let vars = path
                    .map(|path| BTreeMap::from([("report", path.display().to_string())]))
                    .unwrap_or_default();
                inject(&p.inject, &mut argv, vars)?;
            }
        }
        None => {}
    }
    if let Some(shuffle) = recipe.and_then(|r| r.shuffle.as_ref()) {
        if let Some(seed) = ask.shuffle_seed {
            argv.retain(|w| !shuffle.hides_seed.contains(w));
            inject(
                &shuffle.on,
                &mut argv,
                BTreeMap::from([("seed", seed.to_string())]),
            )?;
        } else if let Some(off) = &shuffle.off {
            inject(off, &mut argv, BTreeMap::new())?;
        }
    }
    if let (Some(cpu), Some(race)) = (ask.race, recipe.and_then(|r| r.race.as_ref())) {
        inject(
            &race.on,
            &mut argv,
            BTreeMap::from([("target", host_target())]),
        )?;
        if let (false, Some(sweep)) = (cpu.is_empty(), &race.cpu) {
            let list: Vec<String> = cpu.iter().map(u32::to_string).collect();
            inject(sweep, &mut argv, BTreeMap::from([("cpu", list.join(","))]))?;
        }
    }
    if let (Some(n), Some(w)) = (ask.workers, recipe.and_then(|r| r.workers.as_ref())) {
        argv.retain(|a| !w.hides_proof.contains(a));
        argv = remove_options(&argv, &w.replaces);
        inject(
            &w.set,
            &mut argv,
            BTreeMap::from([("workers", n.to_string())]),
        )?;
    }
    Ok((argv, env))
}

/// Replaces `{junit}` in every word of the command (one pass: the path is
/// never expanded again).
pub fn expand_junit(command: &[String], path: &str) -> Vec<String> {
    command.iter().map(|w| w.replace("{junit}", path)).collect()
}

/// The placeholders of a `[select]`: `{id}` as given, `{id_re}` with every
/// regex metacharacter escaped, for runners whose selection is a pattern
/// (go's `-run`, jest's `-t`, mocha's `--grep`, ctest's `-R`, …): a test
/// named `totals (EUR)` must not select `totals EUR` instead.
fn select_vars(id: &str) -> BTreeMap<&'static str, String> {
    BTreeMap::from([("id", id.to_string()), ("id_re", regex_escape(id))])
}

/// `text` with a backslash before each of `\ . + * ? ( ) | [ ] { } ^ $`: a
/// literal in RE2, ECMAScript, PCRE and CMake regular expressions alike.
pub fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The command with the recipe's `[select]` for one test (or module, or
/// file): the command's own paths dropped where the recipe says so.
pub fn select(
    recipe: &Recipe,
    command: &[String],
    id: &str,
    dir: &Path,
) -> Result<Vec<String>, String> {
    select_with(recipe, command, select_vars(id), dir)
}

/// The command with the recipe's `[select]` for a regular expression of
/// the caller's (several ids as one alternation, each already escaped):
/// `{id_re}` gets `pattern` as it is. `Err` when the recipe's selection is
/// not a pattern (`{id_re}` unused).
pub fn select_pattern(
    recipe: &Recipe,
    command: &[String],
    pattern: &str,
    dir: &Path,
) -> Result<Vec<String>, String> {
    let is_pattern =
        (recipe.select.as_ref()).is_some_and(|s| s.args.iter().any(|a| a.contains("{id_re}")));
    if !is_pattern {
        return Err(format!(
            "the {} recipe does not select by a pattern",
            recipe.name
        ));
    }
    let vars = BTreeMap::from([("id", pattern.to_string()), ("id_re", pattern.to_string())]);
    select_with(recipe, command, vars, dir)
}

fn select_with(
    recipe: &Recipe,
    command: &[String],
    vars: BTreeMap<&'static str, String>,
    dir: &Path,
) -> Result<Vec<String>, String> {
    let Some(select) = &recipe.select else {
        return Err(format!(
            "the {} recipe declares no [select]: it cannot run one test alone",
            recipe.name
        ));
    };
    let end = runner_words_end(recipe, command);
    let argv = if select.drop_paths {
        drop_path_args(command, end, dir, &select.value_options)
    } else {
        command.to_vec()
    };
    let (argv, env) = select
        .apply_at(&argv, &vars, end.min(argv.len()))
        .map_err(|e| format!("the {} recipe's [select] failed: {e}", recipe.name))?;
    if !env.is_empty() {
        return Err(format!(
            "the {} recipe selects through variables, which flakelab does not pass yet",
            recipe.name
        ));
    }
    Ok(argv)
}

/// The command with the recipe's `[select]` for several ids at once (the
/// arguments repeated per id): `Err` when the recipe does not declare
/// `repeats` and more than one id is asked for.
pub fn select_many(
    recipe: &Recipe,
    command: &[String],
    ids: &[String],
    dir: &Path,
) -> Result<Vec<String>, String> {
    let Some(first) = ids.first() else {
        return Ok(command.to_vec());
    };
    let mut argv = select(recipe, command, first, dir)?;
    if ids.len() == 1 {
        return Ok(argv);
    }
    if !recipe.select.as_ref().is_some_and(|s| s.repeats) {
        return Err(format!(
            "the {} recipe's [select] does not declare `repeats`: it selects one id per run",
            recipe.name
        ));
    }
    for id in &ids[1..] {
        // The first id's arguments are in place; the others go right
        // after the runner's words, as the first's did.
        let select = recipe.select.as_ref().expect("checked above");
        let end = runner_words_end(recipe, &argv).min(argv.len());
        let vars = select_vars(id);
        let (next, _) = select
            .apply_at(&argv, &vars, end)
            .map_err(|e| format!("the {} recipe's [select] failed: {e}", recipe.name))?;
        argv = next;
    }
    Ok(argv)
}

/// The lane's command at `workers` workers, through the recipe's workers
/// option (the lane's own worker option replaced).
pub fn with_workers(
    recipe: &Recipe,
    command: &[String],
    workers: usize,
) -> Result<Vec<String>, String> {
    let Some(w) = &recipe.workers else {
        return Err(format!("{} has no workers option", recipe.name));
    };
    let argv = remove_options(command, &w.replaces);
    let end = runner_words_end(recipe, &argv);
    let vars = BTreeMap::from([("workers", workers.to_string())]);
    let (argv, _) = w.set.apply_at(&argv, &vars, end)?;
    Ok(argv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_selection_escapes_the_id_and_matches_only_it() {
        let id = r"totals (EUR) [x].y{2}|^$+*?\";
        let escaped = regex_escape(id);
        assert_eq!(escaped, r"totals \(EUR\) \[x\]\.y\{2\}\|\^\$\+\*\?\\");
        let re = regex::Regex::new(&format!("^{escaped}$")).unwrap();
        assert!(re.is_match(id));
        assert!(!re.is_match(r"totals EUR x.y{2}|^$+*?\"));
        // Unescaped, the id is a pattern that selects another test.
        let raw = regex::Regex::new(r"^tot(EUR)[x].y$").unwrap();
        assert!(raw.is_match("totEURxzy"));
        assert_eq!(regex_escape("plain_name::x"), "plain_name::x");
    }

    #[test]
    fn the_commands_own_count_wins_over_the_recipes() {
        let go = recipe("go");
        let plain = RunArgv {
            report: None,
            shuffle_seed: None,
            workers: None,
            race: None,
        };
        for (command, want) in [
            ("go test ./...", "go test ./... -count=1 -shuffle=off"),
            (
                "go test -count=3 ./...",
                "go test -count=3 ./... -shuffle=off",
            ),
            (
                "go test -count 3 ./...",
                "go test -count 3 ./... -shuffle=off",
            ),
            (
                "go test --count=3 ./...",
                "go test --count=3 ./... -shuffle=off",
            ),
            // Another option that merely starts with the name is not it.
            (
                "go test -countx ./...",
                "go test -countx ./... -count=1 -shuffle=off",
            ),
        ] {
            let (argv, _) = for_run(Some(&go), &words(command), plain).unwrap();
            assert_eq!(argv.join(" "), want, "{command}");
        }
    }

    fn recipe(name: &str) -> Recipe {
        super::super::load(None)
            .unwrap()
            .into_iter()
            .find(|r| r.name == name)
            .unwrap()
    }

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn a_race_run_gets_the_detector_its_banner_and_the_gomaxprocs_sweep() {
        let go = recipe("go");
        let ask = |race| RunArgv {
            race,
            ..RunArgv::default()
        };
        let (argv, env) = for_run(Some(&go), &words("go test ./..."), ask(Some(&[]))).unwrap();
        assert_eq!(argv, words("go test ./... -count=1 -shuffle=off -race"));
        assert_eq!(
            env,
            BTreeMap::from([("GORACE".into(), "verbosity=1".into())])
        );
        let (argv, _) = for_run(Some(&go), &words("go test ./..."), ask(Some(&[1, 2, 4]))).unwrap();
        assert_eq!(
            argv,
            words("go test ./... -count=1 -shuffle=off -race -cpu 1,2,4")
        );
        let (argv, env) = for_run(Some(&go), &words("go test ./..."), ask(None)).unwrap();
        assert!(
            !argv.contains(&"-race".to_string()) && env.is_empty(),
            "{argv:?}"
        );
        // cargo: the build-std flags are cargo's, before libtest's `--`.
        let cargo = recipe("cargo-test");
        let (argv, env) = for_run(
            Some(&cargo),
            &words("cargo test -- --nocapture"),
            ask(Some(&[])),
        )
        .unwrap();
        let target = host_target();
        assert_eq!(
            argv,
            words(&format!(
                "cargo test -Zbuild-std --target {target} -- --nocapture"
            ))
        );
        assert_eq!(env["RUSTFLAGS"], "-Zsanitizer=thread");
        assert_eq!(env["TSAN_OPTIONS"], "verbosity=1");
    }
}
