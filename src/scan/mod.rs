//! `flakelab scan`: static detection of flake sources in test code and the
//! code it calls, for Python, Go, JavaScript/TypeScript and Rust. Owns the
//! scan's findings, its class-coverage block and the ledger check; pure
//! apart from reading the files under the root (`walk`). Proof by running
//! is `--prove`'s (`prove` decides, `design::prove` runs the sessions); a
//! finding here is never called proven.
//!
//! Every file is parsed with tree-sitter (`syntax`), the detectors
//! (`detect`) walk the tree, and each site's tests come from static
//! reachability (`reach`).

use std::path::Path;

use jiff::civil::Date;
use serde::{Deserialize, Serialize};

pub mod detect;
pub mod ledger;
pub mod prove;
pub mod reach;
pub mod syntax;
#[cfg(test)]
mod tests;
pub mod walk;

use detect::{Proposal, TreeFacts};
use syntax::{Lang, Src};

pub use crate::record::schema::SCAN_SCHEMA;

/// A flake-source class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// Calendar or zone reads off the real clock; time bombs.
    Clock,
    /// Unseeded randomness reaching an assertion.
    Random,
    /// Fixed sleeps.
    Sleep,
    /// Literal non-loopback addresses called from tests.
    Network,
    /// Process-global state written and never restored.
    GlobalState,
    /// Host resources with fixed names: ports, temp paths, databases.
    HostResource,
    /// Locale- and hash-order-dependent formatting and iteration.
    Order,
}

impl Class {
    /// Every class, in report order.
    pub const ALL: [Class; 7] = [
        Class::Clock,
        Class::Random,
        Class::Sleep,
        Class::Network,
        Class::GlobalState,
        Class::HostResource,
        Class::Order,
    ];

    /// The class's name as printed and keyed.
    pub fn name(self) -> &'static str {
        match self {
            Class::Clock => "clock",
            Class::Random => "random",
            Class::Sleep => "sleep",
            Class::Network => "network",
            Class::GlobalState => "global-state",
            Class::HostResource => "host-resource",
            Class::Order => "order",
        }
    }

    /// The constructs the class looks for, per language (the coverage
    /// block's "scanned" column).
    pub fn constructs(self) -> &'static str {
        match self {
            Class::Clock => "calendar reads (date.today, datetime.now, time.localtime, time.Now().Day…, new Date(), Local::now, the C library's localtime_r/mktime from Rust) in files that freeze no clock; future expiry dates (strings, date(…), time.Date(…))",
            Class::Random => "process-global draws (random.*, math/rand top level, Math.random, rand::random/thread_rng) whose value is asserted, in files that seed nothing",
            Class::Sleep => "time.sleep/asyncio.sleep, time.Sleep, await sleep/setTimeout, thread::sleep/tokio::time::sleep: bounded poll, sleep-then-assert, unbounded poll, long sleep",
            Class::Network => "literal non-loopback URLs and IPs passed to HTTP/socket calls, and whether a network guard is present",
            Class::GlobalState => "env writes (os.environ, os.Setenv, process.env, env::set_var), chdir, Python module-level containers (item assignment, update, append… on a module's own list/dict/set or an imported ALL_CAPS one), JS fake timers and intervals, never restored",
            Class::HostResource => "literal ports given to bind/listen (port=N, port: N), /tmp/ paths, fixed *.db/*.sqlite names",
            Class::Order => "Python list/join over a set, Go range over a map appended in order, Rust HashMap/HashSet iteration collected; locale-dependent formatting: Python locale.*, setlocale(…, \"\"), strftime %c/%x/%a/%b…, format(…, \"n\"); JS toLocale*() and Intl.* without a locale, localeCompare; Rust setlocale/strftime/nl_langinfo through the C library",
        }
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// The file, relative to the root, with `/`.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// The enclosing test, fixture or helper (`<module>` outside all).
    pub symbol: String,
    /// The class.
    pub class: Class,
    /// The construct.
    pub kind: String,
    /// The sleep bucket, or the construct for other classes (the ledger key's last part).
    pub bucket: String,
    /// The tests it reaches, by id.
    pub tests: Vec<String>,
    /// How `tests` was found.
    pub reach: String,
    /// The proposed cell, or null when no perturbation settles it.
    pub perturbation: Option<String>,
    /// Further cells, each of which on its own can flip it where
    /// `perturbation` does not (a date read: the zone on the other side of
    /// UTC). `--prove` runs every one; any that flips it proves it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<String>,
    /// The tests run beside `tests` to show it: a fixed resource's partner
    /// (another test naming the same one), or a global-state write's file
    /// neighbours (the tests it can pollute).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub beside: Vec<String>,
    /// Why no perturbation settles it (when `perturbation` is null).
    pub settle: Option<String>,
    /// `unconfirmed` from the scan alone; `proven`, `not-shown` or
    /// `unconfirmed` after `--prove` (with `proof`).
    pub status: String,
    /// The command that would prove it.
    pub command: String,
    /// The fix shape.
    pub fix: String,
    /// What was seen.
    pub detail: String,
    /// The file's language (its runner, for `--prove`).
    #[serde(skip)]
    pub lang: Lang,
    /// The fixed host resource it names (a port, a path).
    #[serde(skip)]
    pub resource: Option<String>,
    /// What `--prove` measured: the cell, the session, the counts and the
    /// p-value, the bound, or why it stays unconfirmed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proof: Option<prove::Proof>,
}

impl Finding {
    /// The ledger key.
    pub fn key(&self) -> ledger::Key {
        (
            self.file.clone(),
            self.symbol.clone(),
            self.class.name().to_string(),
            self.bucket.clone(),
        )
    }
}

/// One row of the class-coverage block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Coverage {
    /// The class.
    pub class: Class,
    /// What was scanned: the files per language and the constructs.
    pub scanned: String,
    /// Sites seen (findings and accepted shapes such as bounded polls).
    pub sites: usize,
    /// Findings.
    pub findings: usize,
}

/// The whole scan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScanReport {
    /// Always [`SCAN_SCHEMA`].
    pub schema: &'static str,
    /// Files parsed per language.
    pub files: Vec<(Lang, usize)>,
    /// Files that did not parse cleanly (scanned as far as they parsed).
    pub parse_errors: Vec<String>,
    /// Trees and files skipped, and why.
    pub skipped: Vec<walk::Skipped>,
    /// The findings, by file and line.
    pub findings: Vec<Finding>,
    /// The class-coverage block.
    pub coverage: Vec<Coverage>,
    /// The ledger check, with `--ledger`.
    pub ledger: Option<ledger::Check>,
    /// `--prove --controls`: the tests no finding reaches, run under each
    /// cell beside the findings' tests, by cell.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub controls: Vec<prove::Control>,
    /// Every test of the scanned test files, by language (the controls'
    /// source).
    #[serde(skip)]
    pub tests: Vec<(Lang, String)>,
}

/// What a scan is asked.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// "Today", for time bombs.
    pub today: Date,
    /// Paths under the root not to scan.
    pub exclude: Vec<String>,
}

/// Guards that make a language's tests refuse real network, by the text
/// that turns them on.
const GUARDS: &[(Lang, &str, &str)] = &[
    (Lang::Python, "disable_socket", "pytest-socket"),
    (Lang::Python, "--disable-socket", "pytest-socket"),
    (Lang::JavaScript, "disableNetConnect", "nock"),
    (Lang::JavaScript, "onUnhandledRequest", "msw"),
];

/// Scans the tree at `root`.
pub fn scan(root: &Path, opts: &ScanOptions) -> std::io::Result<ScanReport> {
    let walked = walk::walk(root, &opts.exclude)?;
    let mut texts = Vec::new();
    for (rel, path, lang) in &walked.files {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        texts.push((rel.clone(), *lang, text));
    }
    let project = project_of(root);
    let mut guards = Vec::new();
    for (lang, token, name) in GUARDS {
        let config = [
            "setup.cfg",
            "pytest.ini",
            "pyproject.toml",
            "tox.ini",
            "package.json",
        ]
        .iter()
        .any(|c| {
            [root, project.root.as_path()]
                .iter()
                .any(|d| std::fs::read_to_string(d.join(c)).is_ok_and(|t| t.contains(token)))
        });
        if config || texts.iter().any(|(_, _, t)| t.contains(token)) {
            guards.push((*lang, *name));
        }
    }
    let facts = TreeFacts {
        today: opts.today,
        guards,
    };
    // The JS runner is the project's: its package.json may be above the
    // scanned tree.
    let js_runner = js_runner(&project.root);
    let js = (js_runner, project.prefix.as_str());

    let mut indexes = Vec::new();
    let mut raw = Vec::new();
    let mut parse_errors = Vec::new();
    let mut counts: Vec<(Lang, usize)> = Vec::new();
    for (rel, lang, text) in &texts {
        let Some(tree) = syntax::parse(*lang, text, rel.ends_with(".tsx")) else {
            continue;
        };
        let root_node = tree.root_node();
        if root_node.has_error() {
            parse_errors.push(rel.clone());
        }
        match counts.iter_mut().find(|(l, _)| l == lang) {
            Some((_, n)) => *n += 1,
            None => counts.push((*lang, 1)),
        }
        let src = Src { lang: *lang, text };
        indexes.push(reach::index(&src, root_node, rel));
        for site in detect::detect(&src, root_node, &facts) {
            raw.push((indexes.len() - 1, site));
        }
    }
    counts.sort();

    let mut coverage: Vec<Coverage> = Class::ALL
        .iter()
        .map(|c| Coverage {
            class: *c,
            scanned: scanned_line(&counts, *c),
            sites: 0,
            findings: 0,
        })
        .collect();
    let mut findings = Vec::new();
    for (i, site) in raw {
        let file = &indexes[i];
        let row = coverage
            .iter_mut()
            .find(|r| r.class == site.class)
            .expect("every class has a row");
        row.sites += 1;
        let tests_file = walk::is_test_file(&file.rel, file.lang);
        let tests = reach::reached(&site.symbol, file, &indexes);
        if !site.finding
            || tests.is_empty()
            || (!tests_file && site.symbol.role == syntax::Role::Module)
        {
            continue;
        }
        row.findings += 1;
        let (perturbation, also, settle) = match &site.proposal {
            Proposal::Cell(c) => (Some(c.clone()), Vec::new(), None),
            Proposal::Either(cells) => (cells.first().cloned(), cells[1..].to_vec(), None),
            Proposal::None(why) => (
                None,
                Vec::new(),
                Some(format!("no perturbation settles this: {why}")),
            ),
        };
        let mut cells: Vec<&str> = perturbation.iter().map(String::as_str).collect();
        cells.extend(also.iter().map(String::as_str));
        let command = command(file, &tests, &cells, js);
        findings.push(Finding {
            file: file.rel.clone(),
            line: site.line,
            symbol: site.symbol.name.clone(),
            class: site.class,
            kind: site.kind.to_string(),
            bucket: site.bucket.unwrap_or(site.kind).to_string(),
            tests,
            reach: "static".into(),
            perturbation,
            also,
            beside: Vec::new(),
            settle,
            status: "unconfirmed".into(),
            command,
            fix: site.fix.to_string(),
            detail: site.detail,
            lang: file.lang,
            resource: site.resource.clone(),
            proof: None,
        });
    }
    partners(&mut findings, &indexes, js);
    findings.sort_by(|a, b| (&a.file, a.line, a.class).cmp(&(&b.file, b.line, b.class)));
    findings.dedup_by(|a, b| {
        a.file == b.file && a.line == b.line && a.class == b.class && a.kind == b.kind
    });
    for row in &mut coverage {
        row.findings = findings.iter().filter(|f| f.class == row.class).count();
    }
    let tests = (indexes.iter())
        .filter(|f| walk::is_test_file(&f.rel, f.lang))
        .flat_map(|f| {
            (f.funcs.iter())
                .filter(|x| x.role == syntax::Role::Test)
                .map(|x| (f.lang, f.test_id(x)))
        })
        .collect();
    Ok(ScanReport {
        schema: SCAN_SCHEMA,
        files: counts,
        parse_errors,
        skipped: walked.skipped,
        findings,
        coverage,
        ledger: None,
        controls: Vec::new(),
        tests,
    })
}

fn scanned_line(counts: &[(Lang, usize)], class: Class) -> String {
    let files: Vec<String> = counts
        .iter()
        .map(|(l, n)| format!("{} {n}", l.name()))
        .collect();
    let files = if files.is_empty() {
        "no files".to_string()
    } else {
        files.join(", ")
    };
    let go_locale = if class == Class::Order && counts.iter().any(|(l, _)| *l == Lang::Go) {
        " (go: map order only, its formatting is locale-free)"
    } else {
        ""
    };
    format!("{files}{go_locale}")
}

/// Files that mark a project's root: where its test command is run from.
/// A `conftest.py` is none: pytest finds it under its rootdir, and
/// `tests/conftest.py` below a `pyproject.toml` is the common layout (ids
/// named from `tests/` would not be pytest's).
const PROJECT_MARKERS: &[&str] = &[
    ".git",
    "pyproject.toml",
    "setup.cfg",
    "setup.py",
    "pytest.ini",
    "tox.ini",
    "go.mod",
    "package.json",
    "Cargo.toml",
];

/// The project a scanned tree belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// Its root, canonical: the nearest directory at or above the scanned
    /// tree holding a [`PROJECT_MARKERS`] file, else the tree itself. The
    /// printed commands and `--prove`'s sessions run from here.
    pub root: std::path::PathBuf,
    /// The scanned tree's path from [`Project::root`], with a trailing `/`;
    /// empty when it is the root.
    pub prefix: String,
}

/// The project `root` (a scanned tree) belongs to; `root` itself, with
/// no prefix, when it cannot be resolved.
pub fn project_of(root: &Path) -> Project {
    let alone = || Project {
        root: root.to_path_buf(),
        prefix: String::new(),
    };
    let Ok(root) = root.canonicalize() else {
        return alone();
    };
    let marked = |d: &Path| PROJECT_MARKERS.iter().any(|m| d.join(m).exists());
    let Some(project) = root.ancestors().find(|d| marked(d)) else {
        return Project {
            root,
            prefix: String::new(),
        };
    };
    let rel = root.strip_prefix(project).unwrap_or(Path::new(""));
    let rel: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    Project {
        root: project.to_path_buf(),
        prefix: match rel.is_empty() {
            true => String::new(),
            false => format!("{}/", rel.join("/")),
        },
    }
}

/// The JS runner a project's package.json names.
pub fn js_runner(root: &Path) -> &'static str {
    let pkg = std::fs::read_to_string(root.join("package.json")).unwrap_or_default();
    if pkg.contains("\"vitest\"") {
        "vitest"
    } else if pkg.contains("\"jest\"") {
        "jest"
    } else {
        "node"
    }
}

/// The exact command that would prove a finding: `flakelab run` of the
/// proposed cell (the baseline alone when none settles it) on the reached
/// tests only.
fn command(
    file: &reach::FileIndex,
    tests: &[String],
    cells: &[&str],
    (js, prefix): (&str, &str),
) -> String {
    let q = |s: &str| shell_words::quote(s).into_owned();
    // Paths from the project root: the runner is started there.
    let at = |s: &str| q(&format!("{prefix}{s}"));
    let shuffles = cells.contains(&"shuffle");
    let subject = match file.lang {
        // A shuffle cell turns pytest-randomly on itself: `-p no:randomly`
        // would refuse it.
        Lang::Python if shuffles => format!(
            "python3 -m pytest -p no:cacheprovider {}",
            tests.iter().map(|t| at(t)).collect::<Vec<_>>().join(" ")
        ),
        Lang::Python => format!(
            "python3 -m pytest -p no:randomly -p no:cacheprovider {}",
            tests.iter().map(|t| at(t)).collect::<Vec<_>>().join(" ")
        ),
        Lang::Go => {
            let dir = file.rel.rsplit_once('/').map_or("", |(d, _)| d);
            let dir = format!("{prefix}{dir}");
            let dir = dir.trim_end_matches('/');
            let pkg = if dir.is_empty() {
                "./".to_string()
            } else {
                format!("./{dir}")
            };
            format!(
                "go test -count=1 -run {} {pkg}",
                q(&format!("^({})$", tests.join("|")))
            )
        }
        Lang::Rust => format!(
            "cargo test -- --exact {}",
            tests.iter().map(|t| q(t)).collect::<Vec<_>>().join(" ")
        ),
        _ => {
            let pattern = tests
                .iter()
                .map(|t| regex::escape(t))
                .collect::<Vec<_>>()
                .join("|");
            match js {
                "vitest" => format!("npx vitest run {} -t {}", at(&file.rel), q(&pattern)),
                "jest" => format!("npx jest {} -t {}", at(&file.rel), q(&pattern)),
                _ => format!(
                    "node --test --test-name-pattern={} {}",
                    q(&pattern),
                    at(&file.rel)
                ),
            }
        }
    };
    let cells: String = cells.iter().map(|c| format!("-p {} ", q(c))).collect();
    format!("flakelab run -n 20 {cells}-- {subject}")
}

/// Which tests run beside each finding, and the cells and commands that
/// follow: a fixed resource another test names too runs with that partner
/// under more workers, one no other test names goes to the ladder's rung 3
/// (the test in several processes at once); a global-state write runs with
/// its file's other tests (the ones it can pollute), shuffled.
fn partners(findings: &mut [Finding], indexes: &[reach::FileIndex], js: (&str, &str)) {
    /// A finding's class, construct, runner, resource and tests.
    type Named = (Class, String, Lang, Option<String>, Vec<String>);
    let snapshot: Vec<Named> = (findings.iter())
        .map(|f| {
            let lang = prove::runner_lang(f.lang);
            (
                f.class,
                f.kind.clone(),
                lang,
                f.resource.clone(),
                f.tests.clone(),
            )
        })
        .collect();
    let q = |s: &str| shell_words::quote(s).into_owned();
    for f in findings.iter_mut() {
        let Some(file) = indexes.iter().find(|x| x.rel == f.file) else {
            continue;
        };
        let mut beside: Vec<String> = Vec::new();
        let mut add = |t: &String, tests: &[String]| {
            if !tests.contains(t) && !beside.contains(t) {
                beside.push(t.clone());
            }
        };
        match f.class {
            Class::HostResource => {
                for (class, kind, lang, resource, tests) in &snapshot {
                    let same = *class == f.class
                        && *kind == f.kind
                        && *lang == prove::runner_lang(f.lang)
                        && resource.is_some()
                        && *resource == f.resource;
                    if same {
                        tests.iter().for_each(|t| add(t, &f.tests));
                    }
                }
                // One site reaching several tests: they are each other's partners.
                if beside.is_empty() && f.tests.len() < 2 {
                    let what = f.resource.clone().unwrap_or_else(|| f.kind.clone());
                    f.perturbation = None;
                    f.settle = Some(format!(
                        "a collision needs a partner, and no other test here names {what}: run the test in several processes at once (the ladder's rung 3)"
                    ));
                    let subject = command(file, &f.tests, &[], js);
                    let subject = subject.split_once(" -- ").map_or("", |x| x.1);
                    let prefix = if f.lang == Lang::Python { js.1 } else { "" };
                    let test = (f.tests.first())
                        .map(|t| q(&format!("{prefix}{t}")))
                        .unwrap_or_default();
                    f.command =
                        format!("flakelab ladder --from 3 --to 3 --test {test} -- {subject}");
                    continue;
                }
            }
            Class::GlobalState if f.perturbation.as_deref() == Some("shuffle") => {
                // The polluter candidates' files: the writer's own and each
                // reached test's (a helper or fixture writing elsewhere).
                let tests_of = |x: &reach::FileIndex| -> Vec<String> {
                    (x.funcs.iter())
                        .filter(|fx| fx.role == syntax::Role::Test)
                        .map(|fx| x.test_id(fx))
                        .collect()
                };
                for x in indexes.iter().filter(|x| x.lang == file.lang) {
                    let ids = tests_of(x);
                    if x.rel == f.file || ids.iter().any(|t| f.tests.contains(t)) {
                        ids.iter().for_each(|t| add(t, &f.tests));
                    }
                }
                if beside.is_empty() {
                    continue;
                }
            }
            _ => continue,
        }
        f.beside = beside;
        let mut all = f.tests.clone();
        all.extend(f.beside.iter().cloned());
        let cells: Vec<&str> = f.perturbation.iter().map(String::as_str).collect();
        f.command = command(file, &all, &cells, js);
    }
}
