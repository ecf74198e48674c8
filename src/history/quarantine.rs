//! Quarantine lists: the selected tests in each runner's own syntax.
//!
//! A test id is `classname::name` (see [`crate::results::junit::Case::id`]); it is
//! split at its first `::`, which is right for every dialect flakelab's
//! recipes know (nextest's classname is the binary id, its name the test
//! path; pytest's, go's and jest's classnames hold no `::`).
//!
//! Pure: each emitter returns the text and the entries it cannot express.

use serde::Serialize;

/// One quarantined test and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    /// The test id.
    pub test: String,
    /// The evidence, in a sentence.
    pub evidence: String,
    /// The test's file, when a report gave one.
    pub file: Option<String>,
}

/// The runners' syntaxes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// `--deselect NODEID`, one per line.
    Pytest,
    /// `-skip=REGEX` for `go test`.
    Go,
    /// `--testNamePattern=REGEX` excluding the names.
    Jest,
    /// `-t REGEX` (`--testNamePattern`) excluding the names.
    Vitest,
    /// `-E FILTERSET` for `cargo nextest run`.
    CargoNextest,
    /// A `spec_helper.rb` snippet excluding the full descriptions.
    Rspec,
    /// `--exclude-filter=REGEX` for PHPUnit 11 and later.
    Phpunit,
    /// `--filter=REGEX` for PHPUnit before 11 (no `--exclude-filter`): a
    /// negative lookahead that matches every test but the listed ones
    /// (PHPUnit 9 and 10 match a filter against `Class::method`, followed
    /// by ` with data set …` for a data-provider case).
    PhpunitFilter,
    /// A generic YAML list with the evidence.
    Yaml,
}

/// What an emitter produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Emitted {
    /// The text to print.
    pub text: String,
    /// Tests the syntax cannot express, left out (with why).
    pub left_out: Vec<String>,
}

/// The PHPUnit syntax for the PHPUnit whose `--version` printed
/// `version` (`PHPUnit 9.6.7 by Sebastian Bergmann and contributors.`):
/// `--exclude-filter` from PHPUnit 11 on, else (older, or unknown) the
/// `--filter` lookahead every PHPUnit since 9 reads the same way.
pub fn phpunit_syntax(version: Option<&str>) -> Syntax {
    let major = version
        .and_then(|v| v.split_whitespace().skip_while(|w| *w != "PHPUnit").nth(1))
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.parse::<u32>().ok());
    match major {
        Some(m) if m >= 11 => Syntax::Phpunit,
        _ => Syntax::PhpunitFilter,
    }
}

/// `(classname, name)` of a test id.
pub fn split(id: &str) -> (&str, &str) {
    id.split_once("::").unwrap_or(("", id))
}

/// The list in `syntax`. An empty selection gives an empty text (a runner
/// given nothing skips nothing).
pub fn emit(syntax: Syntax, entries: &[Entry]) -> Emitted {
    let mut left_out = Vec::new();
    let text = match syntax {
        Syntax::Pytest => {
            let mut lines = String::new();
            for e in entries {
                let node = pytest_node(e);
                if node.chars().any(char::is_control) {
                    left_out.push(format!(
                        "{}: a line break or control character in a node id cannot be given on one line",
                        printable(&e.test)
                    ));
                } else {
                    lines.push_str(&format!("--deselect={node}\n"));
                }
            }
            lines
        }
        Syntax::Go => {
            let mut names = Vec::new();
            for e in entries {
                let (_, name) = split(&e.test);
                if name.contains('/') {
                    left_out.push(format!(
                        "{}: a subtest; `go test -skip` cannot skip one subtest beside others without skipping more",
                        printable(&e.test)
                    ));
                } else if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
                    left_out.push(format!(
                        "{}: a space or a control character is in no Go test's name",
                        printable(&e.test)
                    ));
                } else {
                    names.push(regex::escape(name));
                }
            }
            if names.is_empty() {
                String::new()
            } else {
                format!("-skip=^(?:{})$\n", names.join("|"))
            }
        }
        Syntax::Jest | Syntax::Vitest => {
            if entries.is_empty() {
                String::new()
            } else {
                let names: Vec<String> = entries
                    .iter()
                    .map(|e| js_escape(split(&e.test).1))
                    .collect();
                format!("--testNamePattern=^(?!(?:{})$)\n", names.join("|"))
            }
        }
        Syntax::CargoNextest => {
            if entries.is_empty() {
                String::new()
            } else {
                let parts: Vec<String> = entries
                    .iter()
                    .map(|e| format!("test(={})", nextest_escape(split(&e.test).1)))
                    .collect();
                format!("not ({})\n", parts.join(" | "))
            }
        }
        Syntax::Rspec => {
            let names: Vec<String> = entries
                .iter()
                .map(|e| ruby_quote(split(&e.test).1))
                .collect();
            format!(
                "# flakelab quarantine: put in spec/spec_helper.rb\nFLAKELAB_QUARANTINE = [{}].freeze\nRSpec.configure do |config|\n  config.filter_run_excluding(full_description: ->(d) {{ FLAKELAB_QUARANTINE.include?(d) }})\nend\n",
                names.join(", ")
            )
        }
        Syntax::Phpunit => {
            if entries.is_empty() {
                String::new()
            } else {
                format!(
                    "--exclude-filter=/^(?:{})(?:\\x{{20}}|$)/\n",
                    phpunit_alternation(entries)
                )
            }
        }
        Syntax::PhpunitFilter => {
            if entries.is_empty() {
                String::new()
            } else {
                format!(
                    "--filter=/^(?!(?:{})(?:\\x{{20}}|$))/\n",
                    phpunit_alternation(entries)
                )
            }
        }
        Syntax::Yaml => {
            let mut s = String::from("# flakelab.quarantine/1\nquarantine:\n");
            if entries.is_empty() {
                s = String::from("# flakelab.quarantine/1\nquarantine: []\n");
            }
            for e in entries {
                s.push_str(&format!("  - test: {}\n", json_quote(&e.test)));
                if let Some(f) = &e.file {
                    s.push_str(&format!("    file: {}\n", json_quote(f)));
                }
                s.push_str(&format!("    evidence: {}\n", json_quote(&e.evidence)));
            }
            s
        }
    };
    Emitted { text, left_out }
}

/// The tests of a `go test -list . PACKAGES` output, as (package, name):
/// each package's names come before its `ok  PACKAGE  TIME` line; a
/// package without tests prints `?  PACKAGE  [no test files]`. Benchmarks
/// are left out (`-run` does not select them). A `FAIL` line (a package
/// that did not build) is an error: the list would be incomplete.
pub fn go_list(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut pending: Vec<&str> = Vec::new();
    for line in text.lines() {
        let t = line.trim_end();
        if t.is_empty() {
            continue;
        }
        let mut words = t.split_whitespace();
        let first = words.next().unwrap_or_default();
        match first {
            "ok" => {
                let pkg = words.next().unwrap_or_default();
                out.extend(
                    pending
                        .drain(..)
                        .map(|n| (pkg.to_string(), n.to_string())),
                );
            }
            "?" => pending.clear(),
            "FAIL" => {
                return Err(format!(
                    "the list says `{t}`: a package did not build or list, so the list is incomplete; fix it and list again"
                ))
            }
            name if !t.contains(char::is_whitespace) && !name.starts_with("Benchmark") => {
                pending.push(name);
            }
            _ => {}
        }
    }
    if !pending.is_empty() {
        return Err(format!(
            "{} name(s) after the last `ok PACKAGE` line: give the whole output of `go test -list . PACKAGES`",
            pending.len()
        ));
    }
    Ok(out)
}

/// For a go without `-skip` (before Go 1.20): the complement as one
/// `-run=^(?:…)$` over `listed` ([`go_list`]): every listed test, example
/// and fuzz target but the quarantined ones (matched by package and name).
/// `-run` selects by name in every package, so a quarantined name that
/// another package also has (not quarantined there) cannot be deselected:
/// it is kept (run) and named in `left_out`; so is a quarantined test the
/// list does not hold. A test added after the list was made is not run:
/// list again when the tests change.
pub fn emit_go_run(entries: &[Entry], listed: &[(String, String)]) -> Emitted {
    use std::collections::BTreeSet;
    let mut left_out = Vec::new();
    let quarantined: BTreeSet<(&str, &str)> = entries.iter().map(|e| split(&e.test)).collect();
    for (pkg, name) in &quarantined {
        if !listed.iter().any(|(p, n)| p == pkg && n == name) {
            left_out.push(format!(
                "{pkg}::{name}: not in the `go test -list` output (nothing to deselect)"
            ));
        }
    }
    let kept: BTreeSet<&str> = listed
        .iter()
        .filter(|(p, n)| !quarantined.contains(&(p.as_str(), n.as_str())))
        .map(|(_, n)| n.as_str())
        .collect();
    for (pkg, name) in &quarantined {
        if kept.contains(name) {
            left_out.push(format!(
                "{pkg}::{name}: another package has a test of that name that is not quarantined, and `-run` selects by name in every package; it runs (give that package its own `go test`)"
            ));
        }
    }
    let names: Vec<String> = kept.iter().map(|n| regex::escape(n)).collect();
    let text = if names.is_empty() {
        "-run=^$\n".to_string()
    } else {
        format!("-run=^(?:{})$\n", names.join("|"))
    };
    Emitted { text, left_out }
}

/// A pytest node id: the report's file when it gave one, else the
/// classname's module path (dotted segments up to the first that starts
/// with an upper-case letter, a class) as a `.py` file, then the classes,
/// then the name.
/// The entries as PHPUnit names them (`Class::method`), escaped and joined
/// into one PCRE alternation.
fn phpunit_alternation(entries: &[Entry]) -> String {
    let names: Vec<String> = (entries.iter())
        .map(|e| {
            let (class, name) = split(&e.test);
            pcre_escape(&format!("{class}::{name}"))
        })
        .collect();
    names.join("|")
}

fn pytest_node(e: &Entry) -> String {
    let (class, name) = split(&e.test);
    let segments: Vec<&str> = class.split('.').filter(|s| !s.is_empty()).collect();
    let first_class = segments
        .iter()
        .position(|s| s.starts_with(|c: char| c.is_ascii_uppercase()))
        .unwrap_or(segments.len());
    let (module, classes) = segments.split_at(first_class);
    let file = match &e.file {
        Some(f) if f.ends_with(".py") => f.clone(),
        _ => format!("{}.py", module.join("/")),
    };
    let mut node = file;
    for c in classes {
        node.push_str("::");
        node.push_str(c);
    }
    node.push_str("::");
    node.push_str(name);
    node
}

/// A JavaScript regex matching `s` literally, with no space, line break or
/// control character left raw (`\xHH`), so it survives a shell's word
/// splitting and stays on one line.
fn js_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\^$.*+?()[]{}|/".contains(c) {
            out.push('\\');
        } else if c.is_ascii_whitespace() || c.is_ascii_control() {
            out.push_str(&format!("\\x{:02X}", c as u32));
            continue;
        } else if c.is_control() || c.is_whitespace() {
            out.push_str(&format!("\\u{:04X}", c as u32));
            continue;
        }
        out.push(c);
    }
    out
}

/// A PCRE (PHPUnit's `--filter`) pattern matching `s` literally, spaces
/// and control characters as `\x{HH}`.
fn pcre_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\^$.*+?()[]{}|/#:-".contains(c) {
            out.push('\\');
        } else if c.is_whitespace() || c.is_control() {
            out.push_str(&format!("\\x{{{:X}}}", c as u32));
            continue;
        }
        out.push(c);
    }
    out
}

/// A nextest name matcher's text for `s`: its escape sequences for `\`,
/// `/`, `)`, `,` and line breaks, `\u{..}` for any other space or control
/// character.
fn nextest_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' | '/' | ')' | ',' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_whitespace() || c.is_control() => {
                out.push_str(&format!("\\u{{{:X}}}", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

/// A Ruby double-quoted string of `s` on one line: `#` escaped, so nothing
/// in it is interpolated (`#{…}` stays text), line breaks and other
/// control characters as escapes.
fn ruby_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' | '"' | '#' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:X}}}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `s` with its control characters shown escaped, for a message line.
fn printable(s: &str) -> String {
    s.chars().flat_map(char::escape_debug).collect()
}

fn json_quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(test: &str) -> Entry {
        Entry {
            test: test.into(),
            evidence: "passed and failed on commit c1".into(),
            file: None,
        }
    }

    #[test]
    fn each_syntax() {
        let py = [
            e("test_orders::test_total"),
            e("tests.test_a.TestK::test_x[1-2]"),
        ];
        assert_eq!(
            emit(Syntax::Pytest, &py).text,
            "--deselect=test_orders.py::test_total\n--deselect=tests/test_a.py::TestK::test_x[1-2]\n"
        );
        let go = emit(
            Syntax::Go,
            &[
                e("example.com/pool::TestA"),
                e("p::TestB.x"),
                e("p::TestC/sub"),
            ],
        );
        assert_eq!(go.text, "-skip=^(?:TestA|TestB\\.x)$\n");
        assert_eq!(go.left_out.len(), 1);
        assert_eq!(
            emit(Syntax::Jest, &[e("sum adds::sum adds (1+1)")]).text,
            "--testNamePattern=^(?!(?:sum\\x20adds\\x20\\(1\\+1\\))$)\n"
        );
        assert_eq!(
            emit(
                Syntax::CargoNextest,
                &[e("crate::mod_a::t1"), e("crate::t2")]
            )
            .text,
            "not (test(=mod_a::t1) | test(=t2))\n"
        );
        assert!(emit(Syntax::Rspec, &[e("spec.user::User saves")])
            .text
            .contains("[\"User saves\"]"));
        assert_eq!(
            emit(Syntax::Phpunit, &[e("Tests\\FooTest::testBar")]).text,
            "--exclude-filter=/^(?:Tests\\\\FooTest\\:\\:testBar)(?:\\x{20}|$)/\n"
        );
        assert_eq!(
            emit(Syntax::PhpunitFilter, &[e("Tests\\FooTest::testBar")]).text,
            "--filter=/^(?!(?:Tests\\\\FooTest\\:\\:testBar)(?:\\x{20}|$))/\n"
        );
        for (version, syntax) in [
            (
                Some("PHPUnit 9.6.7 by Sebastian Bergmann and contributors."),
                Syntax::PhpunitFilter,
            ),
            (
                Some("PHPUnit 10.5.2 by Sebastian Bergmann and contributors."),
                Syntax::PhpunitFilter,
            ),
            (
                Some("PHPUnit 11.0.1 by Sebastian Bergmann and contributors."),
                Syntax::Phpunit,
            ),
            (
                Some("PHPUnit 12.3.0 by Sebastian Bergmann and contributors."),
                Syntax::Phpunit,
            ),
            (Some("garbage"), Syntax::PhpunitFilter),
            (None, Syntax::PhpunitFilter),
        ] {
            assert_eq!(phpunit_syntax(version), syntax, "{version:?}");
        }
        let yaml = emit(Syntax::Yaml, &[e("a::b")]).text;
        assert_eq!(
            yaml,
            "# flakelab.quarantine/1\nquarantine:\n  - test: \"a::b\"\n    evidence: \"passed and failed on commit c1\"\n"
        );
        assert_eq!(emit(Syntax::Go, &[]).text, "");
        assert_eq!(
            emit(Syntax::Yaml, &[]).text,
            "# flakelab.quarantine/1\nquarantine: []\n"
        );
    }
}

#[cfg(test)]
mod hostile_ids {
    use super::*;
    use proptest::prelude::*;

    fn entry(test: String) -> Entry {
        Entry {
            test,
            evidence: "e".into(),
            file: None,
        }
    }

    /// Test names as an attacker writes them: line breaks, workflow-command
    /// prefixes, interpolation, quotes, spaces, backticks, pipes, escapes.
    fn hostile() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                Just("\n".to_string()),
                Just("::error ::".to_string()),
                Just("#{system('touch x')}".to_string()),
                Just("'".to_string()),
                Just("\"".to_string()),
                Just(" ".to_string()),
                Just("`".to_string()),
                Just("|".to_string()),
                Just("\\".to_string()),
                Just(")".to_string()),
                Just(",".to_string()),
                Just("/".to_string()),
                Just("\t".to_string()),
                "[a-zA-Z0-9_.]{1,4}",
            ],
            1..6,
        )
        .prop_map(|parts| parts.concat())
    }

    /// The Ruby double-quoted literals of `text`, read back as Ruby does
    /// (the escapes `ruby_quote` writes).
    fn ruby_strings(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            if c != '"' {
                continue;
            }
            let mut s = String::new();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => match chars.next() {
                        Some('n') => s.push('\n'),
                        Some('r') => s.push('\r'),
                        Some('t') => s.push('\t'),
                        Some('u') => {
                            let hex: String =
                                chars.by_ref().skip(1).take_while(|&c| c != '}').collect();
                            s.push(char::from_u32(u32::from_str_radix(&hex, 16).unwrap()).unwrap());
                        }
                        Some(n) => s.push(n),
                        None => {}
                    },
                    '"' => break,
                    c => s.push(c),
                }
            }
            out.push(s);
        }
        out
    }

    /// A nextest matcher's text, unescaped as nextest does.
    fn nextest_unescape(m: &str) -> String {
        let mut out = String::new();
        let mut chars = m.chars();
        while let Some(c) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('r') => out.push('\r'),
                Some('t') => out.push('\t'),
                Some('u') => {
                    let hex: String = chars.by_ref().skip(1).take_while(|&c| c != '}').collect();
                    out.push(char::from_u32(u32::from_str_radix(&hex, 16).unwrap()).unwrap());
                }
                Some(c) => out.push(c),
                None => {}
            }
        }
        out
    }

    proptest! {
        #[test]
        fn every_format_reads_back_exactly_the_ids_given(
            names in proptest::collection::vec(hostile(), 1..4),
            other in hostile(),
        ) {
            prop_assume!(!names.contains(&other));
            let entries: Vec<Entry> = names.iter().map(|n| entry(format!("c::{n}"))).collect();
            for syntax in [
                Syntax::Pytest, Syntax::Go, Syntax::Jest, Syntax::Vitest,
                Syntax::CargoNextest, Syntax::Rspec, Syntax::Phpunit, Syntax::PhpunitFilter,
                Syntax::Yaml,
            ] {
                let out = emit(syntax, &entries);
                // One line per argument: no line break of a test's own, and
                // nothing a CI log reads as a workflow command.
                for line in out.text.lines() {
                    prop_assert!(!line.starts_with("::"), "{syntax:?}: {line}");
                }
                match syntax {
                    Syntax::Rspec => {
                        let read = ruby_strings(out.text.lines().nth(1).unwrap());
                        prop_assert_eq!(&read, &names);
                        let interpolated = out.text.contains("\"#{") || out.text.contains(" #{");
                        prop_assert!(!interpolated);
                    }
                    Syntax::Yaml => {
                        let read: Vec<String> = out.text.lines()
                            .filter_map(|l| l.strip_prefix("  - test: "))
                            .map(|q| serde_json::from_str::<String>(q).unwrap())
                            .collect();
                        let given: Vec<String> = names.iter().map(|n| format!("c::{n}")).collect();
                        prop_assert_eq!(read, given);
                    }
                    Syntax::Pytest => {
                        let lines = out.text.lines().count();
                        prop_assert_eq!(lines + out.left_out.len(), names.len());
                        prop_assert!(out.text.lines().all(|l| l.starts_with("--deselect=c.py::")));
                    }
                    Syntax::PhpunitFilter => {
                        // One word: a lookahead refusing exactly the names.
                        prop_assert!(!out.text.trim_end().contains(char::is_whitespace), "{}", out.text);
                        let p = out.text.trim_end().strip_prefix("--filter=/^(?!").unwrap();
                        let inner = p.strip_suffix("(?:\\x{20}|$))/").unwrap().replace("\\/", "/");
                        let re = regex::Regex::new(&format!("^(?:{inner})$")).unwrap();
                        for n in &names {
                            let id = format!("c::{n}");
                            prop_assert!(re.is_match(&id), "{}", n);
                        }
                        let stranger = format!("c::{other}");
                        prop_assert!(!re.is_match(&stranger));
                    }
                    Syntax::Go | Syntax::Phpunit => {
                        // A single word, read as a regex matching exactly
                        // the kept names.
                        prop_assert!(!out.text.trim_end().contains(char::is_whitespace), "{}", out.text);
                        if out.text.is_empty() {
                            prop_assert_eq!(out.left_out.len(), names.len());
                            continue;
                        }
                        let pattern = match syntax {
                            Syntax::Go => out.text.trim_end().strip_prefix("-skip=").unwrap().to_string(),
                            _ => {
                                let p = out.text.trim_end().strip_prefix("--exclude-filter=/").unwrap();
                                p.strip_suffix("(?:\\x{20}|$)/").unwrap().replace("\\/", "/").to_string() + "$"
                            }
                        };
                        let re = regex::Regex::new(&pattern).unwrap();
                        let prefix = if syntax == Syntax::Phpunit { "c::" } else { "" };
                        for n in &names {
                            let kept = syntax == Syntax::Phpunit || !n.contains(|c: char| c.is_whitespace() || c.is_control() || c == '/');
                            prop_assert_eq!(re.is_match(&format!("{prefix}{n}")), kept, "{}", n);
                        }
                        let stranger = format!("{prefix}{other}");
                        prop_assert!(!re.is_match(&stranger));
                    }
                    Syntax::Jest | Syntax::Vitest => {
                        prop_assert!(!out.text.trim_end().contains(char::is_whitespace), "{}", out.text);
                    }
                    Syntax::CargoNextest => {
                        let text = out.text.trim_end();
                        prop_assert!(!text.contains('\n'));
                        let inner = text.strip_prefix("not (").unwrap().strip_suffix(')').unwrap();
                        let read: Vec<String> = inner
                            .split(" | ")
                            .map(|t| nextest_unescape(t.strip_prefix("test(=").unwrap().strip_suffix(')').unwrap()))
                            .collect();
                        prop_assert_eq!(&read, &names);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod go_list_tests {
    use super::*;

    fn entry(test: &str) -> Entry {
        Entry {
            test: test.into(),
            evidence: String::new(),
            file: None,
        }
    }

    #[test]
    fn a_go_list_gives_the_complement_by_package_and_name() {
        let list = "TestA\nTestPool\nExampleA\nBenchmarkA\nok  \texample.com/pool\t0.002s\n?   \texample.com/empty\t[no test files]\nTestPool\nTestB\nok  \texample.com/other\t0.001s\n";
        let listed = go_list(list).unwrap();
        assert_eq!(listed.len(), 5, "benchmarks are not -run's: {listed:?}");
        let out = emit_go_run(&[entry("example.com/pool::TestA")], &listed);
        assert_eq!(out.text, "-run=^(?:ExampleA|TestB|TestPool)$\n");
        assert!(out.left_out.is_empty());
        // TestPool is quarantined in one package only: -run cannot say so.
        let out = emit_go_run(
            &[
                entry("example.com/pool::TestPool"),
                entry("example.com/gone::TestC"),
            ],
            &listed,
        );
        assert_eq!(out.text, "-run=^(?:ExampleA|TestA|TestB|TestPool)$\n");
        assert_eq!(out.left_out.len(), 2, "{:?}", out.left_out);
        assert!(out.left_out[0].starts_with("example.com/gone::TestC: not in the"));
        assert!(out.left_out[1].starts_with("example.com/pool::TestPool: another package"));
        // Everything quarantined: nothing runs.
        let all: Vec<Entry> = listed
            .iter()
            .map(|(p, n)| entry(&format!("{p}::{n}")))
            .collect();
        assert_eq!(emit_go_run(&all, &listed).text, "-run=^$\n");
        assert!(go_list("TestA\nFAIL\texample.com/x [build failed]\n").is_err());
        assert!(go_list("TestA\n").is_err());
    }
}
