//! Which tests a site reaches, by static reachability: the test it sits
//! in; the tests that call the helper it sits in (through helpers of the
//! same file, package or importing file); the tests that request the
//! fixture it sits in; every test of its file for module-level code.

use std::collections::BTreeSet;

use tree_sitter::Node;

use super::syntax::{nodes, Lang, Role, Src, Symbol};

/// A function (or a JS `it`/`test` block) of one file.
#[derive(Debug, Clone)]
pub struct Func {
    /// The name it is called by (JS tests: the title).
    pub name: String,
    /// The symbol as keyed (`Class::test_x`).
    pub shown: String,
    /// Test, fixture or helper.
    pub role: Role,
    /// The names its body mentions.
    pub idents: BTreeSet<String>,
    /// Its parameters (pytest fixtures are requested by parameter name).
    pub params: Vec<String>,
}

/// One file's functions.
#[derive(Debug, Clone)]
pub struct FileIndex {
    /// Relative path with `/`.
    pub rel: String,
    /// Language.
    pub lang: Lang,
    /// Its text (for the import check).
    pub text: String,
    /// Functions and tests.
    pub funcs: Vec<Func>,
}

impl FileIndex {
    /// A test's id as its runner names it (pytest node id, Go test name,
    /// JS title, Rust test name).
    pub fn test_id(&self, f: &Func) -> String {
        match self.lang {
            Lang::Python => format!("{}::{}", self.rel, f.shown),
            _ => f.shown.clone(),
        }
    }

    fn dir(&self) -> &str {
        self.rel.rsplit_once('/').map_or("", |(d, _)| d)
    }

    fn stem(&self) -> &str {
        let name = self.rel.rsplit('/').next().unwrap_or(&self.rel);
        name.split('.').next().unwrap_or(name)
    }
}

/// Indexes the functions and tests of one parsed file.
pub fn index(src: &Src, root: Node, rel: &str) -> FileIndex {
    let mut funcs = Vec::new();
    for n in nodes(root) {
        if src.is_function(n) && src.outermost_function(n) == Some(n) {
            let sym = src.symbol(n.child_by_field_name("name").unwrap_or(n));
            let name = src.function_name(n);
            let params = n
                .child_by_field_name("parameters")
                .map(|p| {
                    nodes(p)
                        .into_iter()
                        .filter(|x| x.kind() == "identifier")
                        .map(|x| src.text(x).to_string())
                        .collect()
                })
                .unwrap_or_default();
            funcs.push(Func {
                role: if src.lang.is_js() {
                    Role::Helper
                } else {
                    src.role(n, &name)
                },
                name,
                shown: if src.lang.is_js() {
                    src.function_name(n)
                } else {
                    sym.name
                },
                idents: idents(src, n),
                params,
            });
        } else if src.lang.is_js() && n.kind() == "call_expression" {
            let callee = src.callee(n);
            if matches!(callee.split('.').next(), Some("it" | "test")) {
                if let Some(title) = src.js_title(n) {
                    funcs.push(Func {
                        name: title.clone(),
                        shown: title,
                        role: Role::Test,
                        idents: idents(src, n),
                        params: Vec::new(),
                    });
                }
            }
        }
    }
    FileIndex {
        rel: rel.to_string(),
        lang: src.lang,
        text: src.text.to_string(),
        funcs,
    }
}

fn idents(src: &Src, n: Node) -> BTreeSet<String> {
    nodes(n)
        .into_iter()
        .filter(|x| {
            matches!(
                x.kind(),
                "identifier" | "field_identifier" | "property_identifier"
            )
        })
        .map(|x| src.text(x).to_string())
        .collect()
}

/// The test ids a site in `file` with `symbol` reaches, sorted.
pub fn reached(symbol: &Symbol, file: &FileIndex, all: &[FileIndex]) -> Vec<String> {
    let mut out = BTreeSet::new();
    let tests_of = |f: &FileIndex, out: &mut BTreeSet<String>| {
        for t in f.funcs.iter().filter(|t| t.role == Role::Test) {
            out.insert(f.test_id(t));
        }
    };
    let conftest = file.rel.ends_with("conftest.py");
    let under = |f: &FileIndex| {
        f.lang == Lang::Python
            && (file.dir().is_empty() || f.rel.starts_with(&format!("{}/", file.dir())))
    };
    match symbol.role {
        Role::Test => {
            if let Some(t) = file
                .funcs
                .iter()
                .find(|t| t.role == Role::Test && t.shown == symbol.name)
            {
                out.insert(file.test_id(t));
            }
        }
        Role::Module => {
            if conftest {
                all.iter()
                    .filter(|f| under(f))
                    .for_each(|f| tests_of(f, &mut out));
            } else {
                tests_of(file, &mut out);
            }
        }
        Role::Fixture if file.lang.is_js() || file.lang == Lang::Go => tests_of(file, &mut out),
        Role::Fixture | Role::Helper => {
            let Some(name) = symbol.callable.clone() else {
                return Vec::new();
            };
            // The files that can see the symbol: its own, its package (Go),
            // the files under a conftest, or files that import it by name.
            let scope: Vec<&FileIndex> = all
                .iter()
                .filter(|f| {
                    f.rel == file.rel
                        || (file.lang == Lang::Go && f.lang == Lang::Go && f.dir() == file.dir())
                        || (conftest && under(f))
                        // Rust names collide across a crate: its reach stays in the file.
                        || (f.lang == file.lang && f.lang != Lang::Rust && f.text.contains(file.stem()))
                })
                .collect();
            let mut names = BTreeSet::from([name]);
            loop {
                let before = names.len();
                for f in &scope {
                    for func in &f.funcs {
                        let uses = func.idents.iter().any(|i| names.contains(i))
                            || (f.lang == Lang::Python
                                && func.params.iter().any(|p| names.contains(p)));
                        if uses && func.role != Role::Test {
                            names.insert(func.name.clone());
                        }
                    }
                }
                if names.len() == before {
                    break;
                }
            }
            for f in &scope {
                for t in f.funcs.iter().filter(|t| t.role == Role::Test) {
                    let uses = t.idents.iter().any(|i| names.contains(i))
                        || (f.lang == Lang::Python && t.params.iter().any(|p| names.contains(p)));
                    if uses {
                        out.insert(f.test_id(t));
                    }
                }
            }
        }
    }
    out.into_iter().collect()
}
