//! The fuzz targets: one function per reader or parser, taking the raw
//! input bytes. Each must return for every input without panicking; the
//! properties beyond that are asserted here, so a violation is a crash the
//! fuzzer reports. The same functions are called by `cargo fuzz` (one binary
//! per target under `fuzz/fuzz_targets/`) and by the corpus replay test of
//! the main test suite, so a committed crash input stays a regression test
//! whether or not a fuzzer is installed.

use std::path::Path;
use std::sync::OnceLock;

use flakelab::catalog::Catalog;

/// A fuzz target: takes any bytes, panics only on a finding.
pub type Target = fn(&[u8]);

/// The targets, by name, as the replay test and `fuzz/corpus/<name>/` know
/// them.
pub const TARGETS: &[(&str, Target)] = &[
    ("junit", junit),
    ("store", store),
    ("catalog", catalog),
    ("config", config),
    ("cell_spec", cell_spec),
    ("signature", signature),
    ("archive", archive),
    ("quarantine", quarantine),
];

/// The JUnit reader on any bytes. When it accepts the input and the input is
/// UTF-8 that a plain quick-xml reading also accepts, both must count the
/// same testcases with the same outcomes.
pub fn junit(data: &[u8]) {
    let Ok(parsed) = flakelab::results::junit::parse(data) else {
        return;
    };
    for case in &parsed.cases {
        // Every case must give an id and a family without panicking.
        let id = case.id();
        let _ = flakelab::results::junit::family_id(&id);
        assert!(case
            .message
            .as_ref()
            .is_none_or(|m| m.len() <= flakelab::results::junit::MAX_MESSAGE));
    }
    let Some(expected) = reference_counts(data) else {
        return;
    };
    let mut got = Counts::default();
    for case in &parsed.cases {
        got.add(case.outcome);
    }
    assert_eq!(
        got, expected,
        "the reader's counts differ from the reference reading"
    );
}

/// Outcome counts of a report.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// `<testcase>` elements.
    pub cases: usize,
    /// Cases with a `<failure>` child.
    pub failed: usize,
    /// Cases with an `<error>` child and no `<failure>`.
    pub errored: usize,
    /// Cases with a `<skipped>` child and neither of the above.
    pub skipped: usize,
}

impl Counts {
    fn add(&mut self, outcome: flakelab::results::junit::CaseOutcome) {
        use flakelab::results::junit::CaseOutcome::*;
        self.cases += 1;
        match outcome {
            Failed => self.failed += 1,
            Errored => self.errored += 1,
            Skipped => self.skipped += 1,
            Passed => {}
        }
    }
}

/// The corpus README's reference reading, written independently of the
/// reader with plain quick-xml events: every element whose local name is
/// `testcase`, at any depth, classified by its direct children (failure >
/// error > skipped > passed). `None` when the input is not UTF-8, declares a
/// DTD (entities the reader refuses), or quick-xml finds it not well-formed,
/// so only inputs both readings accept are compared.
pub fn reference_counts(data: &[u8]) -> Option<Counts> {
    use quick_xml::events::Event;
    let text = std::str::from_utf8(data).ok()?;
    let mut reader = quick_xml::Reader::from_str(text);
    reader.config_mut().check_end_names = true;
    reader.config_mut().check_comments = true;
    // One frame per open element: whether it is a testcase, and the
    // outcome-like children seen so far (failure, error, skipped).
    let mut stack: Vec<Option<[bool; 3]>> = Vec::new();
    let mut counts = Counts::default();
    let mut roots = 0usize;
    let classify = |flags: [bool; 3], counts: &mut Counts| {
        counts.cases += 1;
        if flags[0] {
            counts.failed += 1;
        } else if flags[1] {
            counts.errored += 1;
        } else if flags[2] {
            counts.skipped += 1;
        }
    };
    loop {
        let event = reader.read_event().ok()?;
        let (name, empty) = match &event {
            Event::Start(e) => (e.local_name().as_ref().to_vec(), false),
            Event::Empty(e) => (e.local_name().as_ref().to_vec(), true),
            Event::End(_) => {
                if let Some(flags) = stack.pop()? {
                    classify(flags, &mut counts);
                }
                continue;
            }
            Event::DocType(_) => return None,
            Event::Eof => break,
            _ => continue,
        };
        if stack.is_empty() {
            roots += 1;
        }
        if let Some(Some(flags)) = stack.last_mut() {
            match name.as_slice() {
                b"failure" => flags[0] = true,
                b"error" => flags[1] = true,
                b"skipped" => flags[2] = true,
                _ => {}
            }
        }
        let frame = (name == b"testcase").then_some([false; 3]);
        if empty {
            if let Some(flags) = frame {
                classify(flags, &mut counts);
            }
        } else {
            stack.push(frame);
        }
    }
    (stack.is_empty() && roots == 1).then_some(counts)
}

/// The store's reading API on a store whose four JSON Lines files hold the
/// input, split at its first three NUL bytes (runs, sessions, ladders,
/// screens). Reading must not fail or panic; each record read back must be
/// found again by id; and a session appended afterwards must read back
/// with every record read before (the healing of a cut-short last line).
pub fn store(data: &[u8]) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = flakelab::store::Store::open(dir.path()).expect("a fresh store opens");
    let names = [
        "runs.jsonl",
        "sessions.jsonl",
        "ladders.jsonl",
        "screens.jsonl",
    ];
    for (name, part) in names.iter().zip(data.splitn(4, |b| *b == 0)) {
        std::fs::write(dir.path().join(name), part).expect("the store file is written");
    }
    let (runs, run_stats) = store.load_runs().expect("runs read tolerantly");
    let (sessions, _) = store.load_sessions().expect("sessions read tolerantly");
    let _ = store.load_ladders().expect("ladders read tolerantly");
    let _ = store.session(None).expect("the latest session is found");
    for s in &sessions {
        // A prefix may be ambiguous (a usage error), but must not panic.
        let prefix: String = s.id.chars().take(4).collect();
        let _ = store.session(Some(&prefix));
        let found = store
            .session(Some(&s.id))
            .expect("an exact id is not ambiguous");
        assert!(
            found.is_some(),
            "session {:?} read but not found by id",
            s.id
        );
        let (of, _) = store.runs_of(&s.id).expect("runs of a session read");
        assert!(of.iter().all(|r| r.session == s.id));
        let _ = store.screen_of(&s.id);
    }
    let lines = data.split(|b| *b == b'\n' || *b == 0).count();
    assert!(runs.len() + run_stats.skipped_lines + run_stats.duplicate_ids <= lines);

    if let Some(first) = sessions.first() {
        let mut appended = first.clone();
        appended.id = "fuzz-appended-session".into();
        if sessions.iter().all(|s| s.id != appended.id) {
            store
                .append_session(&appended)
                .expect("the session is appended");
            let (after, _) = store
                .load_sessions()
                .expect("sessions read after the append");
            assert_eq!(
                after.len(),
                sessions.len() + 1,
                "an append lost or gained a record"
            );
            assert!(after.iter().any(|s| s.id == appended.id));
        }
    }
}

/// The catalog parsers on any text: the first byte chooses a perturbation
/// catalog file (added on top of the embedded one), a runner recipe, or a
/// ladder (topology) file; the rest is the file's text.
pub fn catalog(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    match which % 3 {
        0 => {
            let mut catalog = embedded().clone();
            if catalog.add_text("fuzz.toml", text).is_ok() {
                // Every matrix cell resolves once the catalog validated.
                for m in &catalog.matrices {
                    for spec in &m.cells {
                        assert!(catalog.cell(spec).is_ok(), "validated cell {spec:?} fails");
                    }
                }
            }
        }
        1 => {
            if let Ok(recipe) = flakelab::catalog::recipe::parse_text("fuzz.toml", text) {
                let _ = recipe.default_workers(2);
            }
        }
        _ => {
            let _ = flakelab::catalog::topology::parse("ladder.toml", text);
        }
    }
}

/// `flakelab.toml` on any text, and the resolution of its `[run]` section's
/// durations.
pub fn config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(config) = flakelab::context::config::parse(text, Path::new("flakelab.toml")) {
        if let Some(lane) = &config.lane {
            assert!(lane.argv().is_ok(), "a parsed lane's command must split");
        }
    }
    let _ = flakelab::context::config::parse_duration(text);
    let _ = flakelab::context::config::parse_timeout(text);
}

/// A `-p` cell spec against the embedded catalog.
pub fn cell_spec(data: &[u8]) {
    let Ok(spec) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(cell) = embedded().cell(spec) {
        let _ = cell.canonical();
        let _ = cell.key();
    }
}

/// The signature normaliser on any text: it must be idempotent (its doc
/// promises a fixed point) and the log scan must not panic.
pub fn signature(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let once = flakelab::results::signature::normalise(&text);
    let twice = flakelab::results::signature::normalise(&once);
    assert_eq!(once, twice, "normalising a signature again changed it");
    if let Some(line) = flakelab::results::signature::from_log(&text) {
        let _ = flakelab::results::signature::normalise(&line);
    }
}

/// The embedded perturbation catalog, loaded once.
fn embedded() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| Catalog::load(None).expect("the embedded catalog loads"))
}

/// `flakelab merge` of an archive made of the input (a `.tar.gz` when it
/// starts with gzip's magic bytes, else a `.tar`) into a fresh store, with
/// small unpack limits. Merging may refuse the archive but must not panic,
/// and whatever it accepts leaves only directories and regular files in the
/// destination, within the limits.
pub fn archive(data: &[u8]) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let name = if data.starts_with(&[0x1f, 0x8b]) {
        "shard.tar.gz"
    } else {
        "shard.tar"
    };
    let input = dir.path().join(name);
    std::fs::write(&input, data).expect("the archive is written");
    let into = dir.path().join("merged");
    let limits = flakelab::store::foreign::Limits {
        bytes: 1 << 20,
        entries: 256,
    };
    if flakelab::context::shard::merge::merge(&[input], &into, limits).is_err() {
        return;
    }
    let mut total = 0u64;
    let mut dirs = vec![into];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).expect("the destination reads") {
            let path = entry.expect("an entry").path();
            let meta = std::fs::symlink_metadata(&path).expect("its metadata");
            if meta.is_dir() {
                dirs.push(path);
            } else {
                assert!(meta.is_file(), "{} is not a regular file", path.display());
                total += meta.len();
            }
        }
    }
    // The merged store holds at most what the archive could unpack, plus
    // the records the merge writes about it.
    assert!(total <= 4 << 20, "{total} bytes merged");
}

/// Every quarantine format on test ids made of the input (split at NUL
/// bytes, lossily decoded). No format may print a line a CI log reads as a
/// workflow command, break one id over several lines where the syntax is
/// one argument, or leave a Ruby interpolation open.
pub fn quarantine(data: &[u8]) {
    use flakelab::history::quarantine::{emit, Entry, Syntax};
    let entries: Vec<Entry> = (data.split(|b| *b == 0))
        .take(16)
        .map(|id| Entry {
            test: String::from_utf8_lossy(id).into_owned(),
            evidence: "seen failing".into(),
            file: None,
        })
        .collect();
    for syntax in [
        Syntax::Pytest,
        Syntax::Go,
        Syntax::Jest,
        Syntax::Vitest,
        Syntax::CargoNextest,
        Syntax::Rspec,
        Syntax::Phpunit,
        Syntax::PhpunitFilter,
        Syntax::Yaml,
    ] {
        let out = emit(syntax, &entries);
        for line in out.text.lines() {
            assert!(!line.trim_start().starts_with("::"), "{syntax:?}: {line:?}");
        }
        match syntax {
            // One argument (or one argument a line): no id's own break.
            Syntax::Go | Syntax::Jest | Syntax::Vitest | Syntax::CargoNextest => {
                assert!(
                    out.text.trim_end().lines().count() <= 1,
                    "{syntax:?}: {:?}",
                    out.text
                );
            }
            Syntax::Pytest => {
                for line in out.text.lines() {
                    assert!(line.starts_with("--deselect="), "{line:?}");
                }
            }
            Syntax::Rspec => {
                // Every `#` inside the list's literals is escaped.
                let list = out.text.lines().nth(1).unwrap_or_default();
                let bytes = list.as_bytes();
                let mut inside = false;
                let mut i = 0;
                while i < bytes.len() {
                    match bytes[i] {
                        b'\\' if inside => i += 1,
                        b'"' => inside = !inside,
                        b'#' if inside => panic!("an unescaped # in {list:?}"),
                        _ => {}
                    }
                    i += 1;
                }
            }
            Syntax::Phpunit | Syntax::PhpunitFilter | Syntax::Yaml => {}
        }
    }
}
