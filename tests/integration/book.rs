//! The book and the README, tested: every command block they show either
//! runs here and prints what is shown, or is marked as an illustration.
//!
//! Convention (book/src/design/book-tests.md):
//! - A ```` ```console ````, ```` ```text ````, ```` ```sh ```` (or `bash`,
//!   `shell`) block whose first line starts with `$ ` is a transcript: each
//!   `$ COMMAND` line (a trailing `\` continues it) runs with `sh -c` in a
//!   fresh directory per page, the built `flakelab` first on `PATH`, and
//!   what it prints (stdout, then stderr) must match the lines up to the
//!   next `$ ` line.
//! - A `sh`/`bash`/`shell`/`console` block without `$ ` shows commands with
//!   no output to check: it must be marked.
//! - `<!-- illustration -->` (or `<!-- illustration: why -->`) on the line
//!   before the fence marks a block this test does not run: a long session
//!   of a real runner, a host-dependent listing, a sketch with placeholders.
//! - A `text` block without `$ ` that follows no command block is output
//!   or a formula, not a command: nothing to run.
//! - A fence of four backticks (```` ````console ````) holds output with
//!   ```` ``` ```` fences of its own (a Markdown report); it closes only on
//!   four.
//! - Commands run with `TZ=Etc/UTC`, so the host's own zone (a zone cell's
//!   sham, `tz=Etc/UTC (sham)`) reads the same on every machine.
//!
//! - `<!-- book-test: project=DIR needs=NAME -->` anywhere on a page runs
//!   its transcripts in a copy of `DIR` (a small project committed under
//!   `book/examples/`; its `setup.sh`, if any, runs first and removes
//!   itself) instead of an empty directory. A page whose needs this host
//!   lacks (`pytest`: pytest with its shuffle and workers plugins;
//!   `netns`: `unshare -rn`) is
//!   skipped with a message, unless `FLAKELAB_TEST_REQUIRE_ALL=1`.
//!
//! Volatile fields are normalised on both sides before comparing: session
//! ids, run ids, seeds, durations, absolute paths; runs of spaces count as
//! one (tables re-align). A shown line `…` (alone) stands for any lines.

use std::path::{Path, PathBuf};
use std::process::Command;

/// One fenced block of a page.
struct Block {
    file: String,
    /// 1-based line of the opening fence.
    line: usize,
    info: String,
    body: Vec<String>,
    illustration: bool,
}

const COMMAND_INFOS: &[&str] = &["sh", "bash", "shell", "console"];
const CHECKED_INFOS: &[&str] = &["sh", "bash", "shell", "console", "text", ""];

fn pages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    let mut stack = vec![root.join("book/src")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                pages.push(p);
            }
        }
    }
    pages.sort();
    pages
}

/// A page's `<!-- book-test: project=DIR needs=NAME -->` line: the
/// example project its transcripts run in, and what that project needs.
#[derive(Debug, Default, PartialEq)]
struct PageSetup {
    project: Option<String>,
    needs: Vec<String>,
}

fn page_setup(text: &str) -> Result<PageSetup, String> {
    let mut setup = PageSetup::default();
    // The width of the open fence, as `blocks` reads fences: a page that
    // shows the line in a code block (this convention's own page) does not
    // mean it.
    let mut open: Option<usize> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let ticks = trimmed.len() - trimmed.trim_start_matches('`').len();
        match open {
            None if ticks >= 3 => {
                open = Some(ticks);
                continue;
            }
            Some(width) => {
                if ticks >= width && trimmed.trim_end().len() == ticks {
                    open = None;
                }
                continue;
            }
            None => {}
        }
        let Some(rest) = line.trim().strip_prefix("<!-- book-test:") else {
            continue;
        };
        let rest = rest.trim_end().strip_suffix("-->").ok_or_else(|| {
            format!("`{line}`: a book-test line ends with `-->` on the same line")
        })?;
        for field in rest.split_whitespace() {
            match field.split_once('=') {
                Some(("project", dir)) => setup.project = Some(dir.to_string()),
                Some(("needs", what)) => setup.needs.push(what.to_string()),
                _ => {
                    return Err(format!(
                        "`{line}`: unknown field `{field}` (project=DIR, needs=NAME)"
                    ))
                }
            }
        }
    }
    Ok(setup)
}

/// Whether this host has what a page's project needs (`None`: an unknown
/// name, which is a mistake on the page).
fn need_met(name: &str) -> Option<bool> {
    match name {
        // The runner the walkthroughs drive, with the plugins its shuffle and
        // workers cells use (scripts/test.sh installs all three). The
        // shuffle counts the pages show follow pytest-randomly's seed to
        // order: the version scripts/test.sh pins, no other.
        "pytest" => Some(
            super::sh_ok("command -v pytest")
                && super::sh_ok(
                    "python3 -c 'import pytest, xdist, importlib.metadata as m; \
                     assert m.version(\"pytest-randomly\") == \"5.1.0\"'",
                ),
        ),
        // A network namespace of one's own (the `netns` cell's mechanism).
        "netns" => Some(super::sh_ok("unshare -rn true")),
        _ => None,
    }
}

/// A fresh directory for a page's transcripts: empty, or a copy of its
/// example project after the project's `setup.sh`.
fn page_dir(setup: &PageSetup) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let Some(project) = &setup.project else {
        return dir;
    };
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join(project);
    assert!(
        from.is_dir(),
        "book-test project {project} is not a directory"
    );
    copy_tree(&from, dir.path());
    if dir.path().join("setup.sh").exists() {
        let mut c = Command::new("sh");
        super::scrub(&mut c);
        let out = c.arg("setup.sh").current_dir(dir.path()).output().unwrap();
        assert!(
            out.status.success(),
            "{project}/setup.sh failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    dir
}

fn copy_tree(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        // Byte code a local pytest left beside the sources is not the project.
        if name == "__pycache__" {
            continue;
        }
        let (src, dest) = (e.path(), to.join(&name));
        if src.is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
            copy_tree(&src, &dest);
        } else {
            std::fs::copy(&src, &dest).unwrap();
        }
    }
}

fn relative(path: &Path) -> String {
    path.strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The fenced blocks of one page, in order.
fn blocks(file: &str, text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    // (opening line, info, indent, marked, fence width)
    let mut open: Option<(usize, String, usize, bool, usize)> = None;
    let mut body = Vec::new();
    let mut previous = "";
    for (i, raw) in text.lines().enumerate() {
        let trimmed = raw.trim_start();
        let ticks = trimmed.len() - trimmed.trim_start_matches('`').len();
        match &open {
            None => {
                if ticks >= 3 {
                    let info = &trimmed[ticks..];
                    let indent = raw.len() - trimmed.len();
                    let marked = previous.trim_start().starts_with("<!-- illustration");
                    open = Some((i + 1, info.trim().to_string(), indent, marked, ticks));
                    body.clear();
                } else if !raw.trim().is_empty() {
                    previous = raw;
                }
            }
            Some((line, info, indent, marked, width)) => {
                // A fence closes on a line of at least as many backticks and
                // nothing else: a ```` block holds ``` blocks.
                if ticks >= *width && trimmed.trim_end().len() == ticks {
                    out.push(Block {
                        file: file.to_string(),
                        line: *line,
                        info: info.split([',', ' ']).next().unwrap_or("").to_string(),
                        body: std::mem::take(&mut body),
                        illustration: *marked,
                    });
                    open = None;
                    previous = raw;
                } else {
                    let cut = raw.len().min(*indent);
                    let keep = if raw[..cut].trim().is_empty() {
                        &raw[cut..]
                    } else {
                        raw
                    };
                    body.push(keep.to_string());
                }
            }
        }
    }
    out
}

/// The `$ ` commands of a transcript, each with the lines shown after it.
fn transcript(body: &[String]) -> Vec<(String, Vec<String>)> {
    let mut steps: Vec<(String, Vec<String>)> = Vec::new();
    let mut continued = false;
    for l in body {
        if continued {
            let (cmd, _) = steps.last_mut().unwrap();
            cmd.push('\n');
            cmd.push_str(l);
            continued = l.ends_with('\\');
        } else if let Some(cmd) = l.strip_prefix("$ ") {
            steps.push((cmd.to_string(), Vec::new()));
            continued = cmd.ends_with('\\');
        } else if let Some((_, shown)) = steps.last_mut() {
            shown.push(l.clone());
        }
    }
    steps
}

/// Volatile fields replaced, runs of spaces as one, ends trimmed.
fn normalise(text: &str, dir: &Path) -> Vec<String> {
    use std::sync::LazyLock;
    static RULES: LazyLock<Vec<(regex::Regex, &str)>> = LazyLock::new(|| {
        [
            (r"\b\d{8}-\d{6}-[0-9a-f]{4}(\.\d{5})?\b", "<id>"),
            (r"\bseed[:= ]\s*\d+", "seed <n>"),
            (r"--randomly-seed=\d+", "--randomly-seed=<n>"),
            (r"\b\d+(\.\d+)?\s?(ms|s|min)\b", "<duration>"),
            (
                r#"(^|[\s='"(`])/(tmp|path|home|root|work|var|usr)/[^\s'"`)]*"#,
                "$1<path>",
            ),
            (r"[ \t]+", " "),
        ]
        .into_iter()
        .map(|(re, to)| (regex::Regex::new(re).unwrap(), to))
        .collect()
    });
    // The page's directory is a path like any other shown.
    let text = text.replace(&dir.display().to_string(), "/path/page-dir");
    text.lines()
        .map(|l| {
            let mut l = l.to_string();
            for (re, to) in RULES.iter() {
                l = re.replace_all(&l, *to).into_owned();
            }
            l.trim().to_string()
        })
        .collect()
}

/// Whether `got` matches `shown`, where a shown `…` line is any lines.
fn matches(shown: &[String], got: &[String]) -> bool {
    match shown.split_first() {
        None => got.is_empty(),
        Some((first, rest)) if first == "…" || first == "..." => {
            (0..=got.len()).any(|skip| matches(rest, &got[skip..]))
        }
        Some((first, rest)) => got.first() == Some(first) && matches(rest, &got[1..]),
    }
}

fn run(cmd: &str, dir: &Path) -> String {
    let bin_dir = super::bin().parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = Command::new("sh");
    super::scrub(&mut c);
    let out = c
        .arg("-c")
        .arg(cmd)
        .current_dir(dir)
        .env("PATH", path)
        .env("TZ", "Etc/UTC")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    text
}

/// What checking a set of pages found.
#[derive(Default)]
struct Checked {
    problems: Vec<String>,
    tested: usize,
    marked: usize,
}

/// Checks the pages whose `book-test` line names a project (`true`) or
/// names none (`false`); pages whose needs this host lacks are skipped
/// with a message (a failure under `FLAKELAB_TEST_REQUIRE_ALL=1`).
fn check_pages(with_project: bool) -> Checked {
    let mut found = Checked::default();
    let Checked {
        problems,
        tested,
        marked,
    } = &mut found;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let file = relative(&page);
        let setup = match page_setup(&text) {
            Ok(s) => s,
            Err(e) => {
                problems.push(format!("{file}: {e}"));
                continue;
            }
        };
        if setup.project.is_some() != with_project {
            continue;
        }
        let mut lacking = Vec::new();
        for need in &setup.needs {
            match need_met(need) {
                Some(true) => {}
                Some(false) => lacking.push(need.as_str()),
                None => problems.push(format!(
                    "{file}: book-test needs `{need}`, which this test does not know (known: pytest, netns)"
                )),
            }
        }
        if !lacking.is_empty()
            && !super::capable(&format!("{} (for {file})", lacking.join(", ")), false)
        {
            continue;
        }
        let all = blocks(&file, &text);
        let dir = page_dir(&setup);
        let tested_before = *tested;
        for (i, b) in all.iter().enumerate() {
            if !CHECKED_INFOS.contains(&b.info.as_str()) {
                continue;
            }
            if b.illustration {
                *marked += 1;
                continue;
            }
            let first = b.body.iter().find(|l| !l.trim().is_empty());
            let is_transcript = first.is_some_and(|l| l.starts_with("$ "));
            if !is_transcript {
                let after_command = i > 0
                    && COMMAND_INFOS.contains(&all[i - 1].info.as_str())
                    && !all[i - 1].illustration;
                if COMMAND_INFOS.contains(&b.info.as_str()) || (b.info == "text" && after_command) {
                    problems.push(format!(
                        "{}:{}: a ```{} block of commands that no test runs.\n  fix: write it as a transcript (`$ COMMAND` lines, each followed by what it prints) that this test runs, or put `<!-- illustration -->` on the line before the fence",
                        b.file, b.line, b.info
                    ));
                }
                continue;
            }
            *tested += 1;
            for (cmd, shown) in transcript(&b.body) {
                let got = run(&cmd, dir.path());
                let got_n = normalise(&got, dir.path());
                let shown_n = normalise(&shown.join("\n"), dir.path());
                let trim = |v: Vec<String>| {
                    let mut v = v;
                    while v.last().is_some_and(String::is_empty) {
                        v.pop();
                    }
                    v
                };
                if !matches(&trim(shown_n), &trim(got_n)) {
                    problems.push(format!(
                        "{}:{}: `$ {cmd}` prints something else than the book shows.\n  fix: make the block match (what it printed is below; volatile fields are normalised, a line `…` stands for any lines), or put `<!-- illustration -->` on the line before the fence\n--- shown\n{}\n--- printed\n{}",
                        b.file,
                        b.line,
                        shown.join("\n"),
                        got.trim_end()
                    ));
                }
            }
        }
        if setup.project.is_some() && *tested == tested_before {
            problems.push(format!(
                "{file}: names a book-test project but shows no transcript to run in it"
            ));
        }
    }
    found
}

#[test]
fn every_book_and_readme_command_is_tested_or_marked() {
    let Checked {
        problems,
        tested,
        marked,
    } = check_pages(false);
    assert!(
        tested >= 5,
        "only {tested} blocks are tested ({marked} marked)"
    );
    assert!(
        problems.is_empty(),
        "{} book/README block(s) need attention ({tested} tested, {marked} marked as illustration; convention: book/src/design/book-tests.md):\n\n{}",
        problems.len(),
        problems.join("\n\n")
    );
}

/// The walkthroughs run on their example project (`book/examples/`): a real
/// runner, so a page of its own that can run beside the others.
#[test]
fn every_walkthrough_command_runs_on_its_example_project() {
    let Checked {
        problems,
        tested,
        marked,
    } = check_pages(true);
    assert!(
        problems.is_empty(),
        "{} walkthrough block(s) need attention ({tested} tested, {marked} marked as illustration; convention: book/src/design/book-tests.md):\n\n{}",
        problems.len(),
        problems.join("\n\n")
    );
}

#[test]
fn a_page_names_its_project_and_needs() {
    let page = "# W\n<!-- book-test: project=book/examples/billing needs=pytest -->\ntext\n";
    assert_eq!(
        page_setup(page).unwrap(),
        PageSetup {
            project: Some("book/examples/billing".into()),
            needs: vec!["pytest".into()],
        }
    );
    assert_eq!(page_setup("no marker").unwrap(), PageSetup::default());
    assert_eq!(
        page_setup("```markdown\n<!-- book-test: project=x -->\n```\n").unwrap(),
        PageSetup::default()
    );
    // A fence of four holds one of three; text after a fence is read again.
    assert_eq!(
        page_setup(
            "````md\n```\n<!-- book-test: project=x -->\n````\n<!-- book-test: project=y -->\n"
        )
        .unwrap()
        .project,
        Some("y".into())
    );
    assert!(page_setup("<!-- book-test: projet=x -->").is_err());
    assert!(page_setup("<!-- book-test: project=x").is_err());
    assert!(need_met("pytest").is_some());
    assert_eq!(need_met("nonesuch"), None);
}

#[test]
fn the_extractor_reads_fences_marks_and_transcripts() {
    let page = "text\n\n<!-- illustration: a sketch -->\n```sh\nflakelab run -- make\n```\n\n  ```console\n  $ flakelab plan \\\n  --rate 0.5\n  5 runs\n  $ true\n  ```\n\n````console\n$ flakelab report --format markdown\n```sh\ncd x\n```\n````\n";
    let b = blocks("p.md", page);
    assert_eq!(b.len(), 3);
    assert_eq!(b[2].info, "console");
    assert_eq!(
        b[2].body,
        [
            "$ flakelab report --format markdown",
            "```sh",
            "cd x",
            "```"
        ]
    );
    assert!(b[0].illustration && !b[1].illustration);
    assert_eq!((b[1].line, b[1].info.as_str()), (8, "console"));
    let t = transcript(&b[1].body);
    assert_eq!(t.len(), 2);
    assert_eq!(t[0].0, "flakelab plan \\\n--rate 0.5");
    assert_eq!(t[0].1, ["5 runs"]);
    let dir = Path::new("/nowhere");
    let n = normalise(
        "session 20261129-203945-0927 · seed 7 · in 1.5 s, /tmp/x/y",
        dir,
    );
    assert_eq!(n, ["session <id> · seed <n> · in <duration>, <path>"]);
    let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(matches(&s(&["a", "…", "d"]), &s(&["a", "b", "c", "d"])));
    assert!(!matches(&s(&["a", "d"]), &s(&["a", "b", "d"])));
}

/// mdBook's id of a heading: lower case, spaces as `-`, only letters,
/// digits, `-` and `_` kept.
fn heading_id(heading: &str) -> String {
    heading
        .trim()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect::<String>()
        .to_lowercase()
}

/// The heading ids of a page (outside code blocks), with mdBook's `-1`,
/// `-2` suffixes for repeats.
fn anchors(text: &str) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    let mut fenced = false;
    for l in text.lines() {
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let Some(h) = l.strip_prefix('#') else {
            continue;
        };
        let h = h.trim_start_matches('#');
        if !h.starts_with(' ') {
            continue;
        }
        let base = heading_id(h);
        let mut id = base.clone();
        let mut n = 0;
        while ids.contains(&id) {
            n += 1;
            id = format!("{base}-{n}");
        }
        ids.push(id);
    }
    ids
}

/// The relative links of a page's prose (code blocks and spans skipped).
fn links(text: &str) -> Vec<(usize, String)> {
    let re = regex::Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let span = regex::Regex::new(r"`[^`]*`").unwrap();
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, l) in text.lines().enumerate() {
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let prose = span.replace_all(l, "");
        for c in re.captures_iter(&prose) {
            let target = c[1].to_string();
            if !target.contains("://") && !target.starts_with("mailto:") {
                out.push((i + 1, target));
            }
        }
    }
    out
}

#[test]
fn every_relative_link_and_anchor_in_the_book_resolves() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("book/src");
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages().into_iter().filter(|p| p.starts_with(&src)) {
        let text = std::fs::read_to_string(&page).unwrap();
        for (line, target) in links(&text) {
            checked += 1;
            let (file, fragment) = target.split_once('#').unwrap_or((&target, ""));
            let dest = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            let why = if !dest.exists() {
                Some(format!("{} does not exist", relative(&dest)))
            } else if !fragment.is_empty()
                && dest.extension().is_some_and(|x| x == "md")
                && !anchors(&std::fs::read_to_string(&dest).unwrap())
                    .contains(&fragment.to_string())
            {
                Some(format!(
                    "{} has no heading with the id `{fragment}`",
                    relative(&dest)
                ))
            } else {
                None
            };
            if let Some(why) = why {
                broken.push(format!(
                    "{}:{line}: the link ({target}) is broken: {why}\n  fix: point it at an existing page and heading",
                    relative(&page)
                ));
            }
        }
    }
    assert!(checked > 10, "only {checked} links found");
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn heading_ids_follow_mdbook() {
    assert_eq!(heading_id(" Kinds"), "kinds");
    assert_eq!(
        heading_id(" The `standard` matrix: zones & more"),
        "the-standard-matrix-zones--more"
    );
    assert_eq!(anchors("# A\n## A\n```\n# not\n```\n"), ["a", "a-1"]);
    assert_eq!(
        links("see [x](a.md#b) and `[y](c.md)` [z](https://e.org)"),
        [(1, "a.md#b".to_string())]
    );
}
