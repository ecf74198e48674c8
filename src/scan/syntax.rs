//! The parsed source: which grammar a file takes, the per-language node
//! kinds the detectors ask about, and the helpers every detector shares
//! (text without comments, the enclosing test or fixture, the statement a
//! node sits in). The only module of `scan` that knows tree-sitter.

use tree_sitter::{Node, Parser, Tree};

/// A language the scanner parses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    /// Python (`.py`).
    Python,
    /// Go (`.go`).
    Go,
    /// JavaScript (`.js`, `.mjs`, `.cjs`, `.jsx`).
    JavaScript,
    /// TypeScript (`.ts`, `.mts`, `.cts`, `.tsx`).
    TypeScript,
    /// Rust (`.rs`).
    Rust,
}

impl Lang {
    /// The language of a file name, by its extension.
    pub fn of(name: &str) -> Option<Lang> {
        let ext = name.rsplit_once('.')?.1;
        Some(match ext {
            "py" => Lang::Python,
            "go" => Lang::Go,
            "js" | "mjs" | "cjs" | "jsx" => Lang::JavaScript,
            "ts" | "mts" | "cts" | "tsx" => Lang::TypeScript,
            "rs" => Lang::Rust,
            _ => return None,
        })
    }

    /// The language's name as printed.
    pub fn name(self) -> &'static str {
        match self {
            Lang::Python => "python",
            Lang::Go => "go",
            Lang::JavaScript => "javascript",
            Lang::TypeScript => "typescript",
            Lang::Rust => "rust",
        }
    }

    /// JavaScript and TypeScript share every detector.
    pub fn is_js(self) -> bool {
        matches!(self, Lang::JavaScript | Lang::TypeScript)
    }
}

/// Parses `text` as `lang` (`tsx` picks the TSX dialect of TypeScript).
pub fn parse(lang: Lang, text: &str, tsx: bool) -> Option<Tree> {
    let language: tree_sitter::Language = match lang {
        Lang::Python => tree_sitter_python::LANGUAGE.into(),
        Lang::Go => tree_sitter_go::LANGUAGE.into(),
        Lang::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
        Lang::TypeScript if tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
        Lang::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
    };
    let mut parser = Parser::new();
    parser.set_language(&language).ok()?;
    parser.parse(text, None)
}

/// One parsed file and the questions detectors ask of its nodes.
pub struct Src<'a> {
    /// The file's language.
    pub lang: Lang,
    /// The file's text.
    pub text: &'a str,
}

/// The role of the symbol a site sits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A test function (or a JS `it`/`test` block).
    Test,
    /// A fixture or setup hook (reaches the tests that use it).
    Fixture,
    /// Any other function (reaches the tests that call it).
    Helper,
    /// Outside every function (reaches every test of the file).
    Module,
}

/// The enclosing symbol of a site: the ledger's key half and where reach starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// As printed and keyed: `test_x`, `TestCase::test_x`, a JS title, `<module>`.
    pub name: String,
    /// What the symbol is.
    pub role: Role,
    /// The bare function name other code calls it by (for reach).
    pub callable: Option<String>,
}

impl Symbol {
    /// The symbol of a site outside every function.
    pub fn module() -> Symbol {
        Symbol {
            name: "<module>".into(),
            role: Role::Module,
            callable: None,
        }
    }
}

impl<'a> Src<'a> {
    /// A node's source text.
    pub fn text(&self, n: Node) -> &'a str {
        &self.text[n.start_byte()..n.end_byte()]
    }

    /// A node's source text with every comment inside it removed, so a
    /// comment never reads as code (`for { // until the deadline`).
    pub fn code(&self, n: Node) -> String {
        let mut out = String::new();
        let mut at = n.start_byte();
        let mut stack = vec![n];
        let mut comments = Vec::new();
        while let Some(x) = stack.pop() {
            if self.is_comment(x) {
                comments.push((x.start_byte(), x.end_byte()));
                continue;
            }
            for i in 0..x.child_count() {
                if let Some(c) = x.child(i) {
                    stack.push(c);
                }
            }
        }
        comments.sort_unstable();
        for (s, e) in comments {
            if s >= at {
                out.push_str(&self.text[at..s]);
                at = e;
            }
        }
        out.push_str(&self.text[at..n.end_byte()]);
        out
    }

    /// Whether `n` is a comment.
    pub fn is_comment(&self, n: Node) -> bool {
        matches!(n.kind(), "comment" | "line_comment" | "block_comment")
    }

    /// Whether `n` is a call (`f(x)`, `new F(x)`).
    pub fn is_call(&self, n: Node) -> bool {
        match self.lang {
            Lang::Python => n.kind() == "call",
            _ => n.kind() == "call_expression" || n.kind() == "new_expression",
        }
    }

    /// A call's callee, whitespace and Rust turbofish removed
    /// (`time.Sleep`, `rand::random`, `new Date`).
    pub fn callee(&self, call: Node) -> String {
        let f = call
            .child_by_field_name("function")
            .or_else(|| call.child_by_field_name("constructor"));
        let Some(f) = f else { return String::new() };
        let mut s: String = self
            .code(f)
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        if let Some(i) = s.find("::<") {
            s.truncate(i);
        }
        if call.kind() == "new_expression" {
            s.insert_str(0, "new ");
        }
        s
    }

    /// A call's argument list node.
    pub fn args(&self, call: Node<'a>) -> Option<Node<'a>> {
        call.child_by_field_name("arguments")
    }

    /// Whether `n` is a string literal.
    pub fn is_string(&self, n: Node) -> bool {
        match self.lang {
            Lang::Python => n.kind() == "string",
            Lang::Go => matches!(
                n.kind(),
                "interpreted_string_literal" | "raw_string_literal"
            ),
            Lang::Rust => matches!(n.kind(), "string_literal" | "raw_string_literal"),
            _ => matches!(n.kind(), "string" | "template_string"),
        }
    }

    /// A string literal's content without its quotes and prefixes.
    pub fn string_value(&self, n: Node) -> String {
        let t = self.text(n);
        let t = t.trim_start_matches(|c: char| c.is_ascii_alphabetic() || c == '#');
        t.trim_matches(|c| matches!(c, '"' | '\'' | '`' | '#'))
            .to_string()
    }

    /// Whether `n` is a function definition.
    pub fn is_function(&self, n: Node) -> bool {
        match self.lang {
            Lang::Python => n.kind() == "function_definition",
            Lang::Go => matches!(n.kind(), "function_declaration" | "method_declaration"),
            Lang::Rust => n.kind() == "function_item",
            _ => matches!(
                n.kind(),
                "function_declaration" | "method_definition" | "generator_function_declaration"
            ),
        }
    }

    /// Whether `n` is a loop.
    pub fn is_loop(&self, n: Node) -> bool {
        match self.lang {
            Lang::Python => matches!(n.kind(), "for_statement" | "while_statement"),
            Lang::Go => n.kind() == "for_statement",
            Lang::Rust => matches!(
                n.kind(),
                "for_expression" | "while_expression" | "loop_expression"
            ),
            _ => matches!(
                n.kind(),
                "for_statement" | "for_in_statement" | "while_statement" | "do_statement"
            ),
        }
    }

    /// Whether `n` holds statements (a block, a module, a function body).
    pub fn is_block(&self, n: Node) -> bool {
        matches!(
            n.kind(),
            "block"
                | "module"
                | "statement_list"
                | "program"
                | "statement_block"
                | "source_file"
                | "declaration_list"
        )
    }

    /// The statement `n` sits in: its ancestor (or itself) whose parent
    /// holds statements.
    pub fn statement(&self, n: Node<'a>) -> Node<'a> {
        let mut cur = n;
        while let Some(p) = cur.parent() {
            if self.is_block(p) {
                return cur;
            }
            cur = p;
        }
        cur
    }

    /// The statements after `stmt` in its block.
    pub fn following(&self, stmt: Node<'a>) -> Vec<Node<'a>> {
        let mut out = Vec::new();
        let mut cur = stmt.next_named_sibling();
        while let Some(s) = cur {
            if !self.is_comment(s) {
                out.push(s);
            }
            cur = s.next_named_sibling();
        }
        out
    }

    /// The innermost loop around `n` inside its function.
    pub fn enclosing_loop(&self, n: Node<'a>) -> Option<Node<'a>> {
        let mut cur = n.parent();
        while let Some(p) = cur {
            if self.is_function(p) || is_closure(p) {
                return None;
            }
            if self.is_loop(p) {
                return Some(p);
            }
            cur = p.parent();
        }
        None
    }

    /// The innermost function around `n`.
    pub fn enclosing_function(&self, n: Node<'a>) -> Option<Node<'a>> {
        let mut cur = n.parent();
        while let Some(p) = cur {
            if self.is_function(p) {
                return Some(p);
            }
            cur = p.parent();
        }
        None
    }

    /// The outermost function around `n` (the ledger's symbol: a helper
    /// nested in a test is keyed on the test).
    pub fn outermost_function(&self, n: Node<'a>) -> Option<Node<'a>> {
        let mut found = None;
        let mut cur = Some(n);
        while let Some(p) = cur {
            if self.is_function(p) {
                found = Some(p);
            }
            cur = p.parent();
        }
        found
    }

    /// A function's name.
    pub fn function_name(&self, f: Node) -> String {
        f.child_by_field_name("name")
            .map(|n| self.text(n).to_string())
            .unwrap_or_default()
    }

    /// The enclosing test, fixture or helper of `n`, or `<module>`.
    pub fn symbol(&self, n: Node<'a>) -> Symbol {
        if self.lang.is_js() {
            if let Some(s) = self.js_block(n) {
                return s;
            }
        }
        let Some(f) = self.outermost_function(n) else {
            return Symbol::module();
        };
        let name = self.function_name(f);
        let role = self.role(f, &name);
        let mut shown = name.clone();
        match self.lang {
            Lang::Python => {
                if let Some(class) = enclosing_kind(f, "class_definition") {
                    shown = format!("{}::{name}", self.function_name(class));
                }
            }
            Lang::Go if f.kind() == "method_declaration" => {
                if let Some(r) = f.child_by_field_name("receiver") {
                    let recv: String = self
                        .text(r)
                        .trim_matches(|c| c == '(' || c == ')')
                        .split_whitespace()
                        .last()
                        .unwrap_or("")
                        .trim_start_matches('*')
                        .to_string();
                    shown = format!("{recv}.{name}");
                }
            }
            _ => {}
        }
        Symbol {
            name: shown,
            role,
            callable: Some(name),
        }
    }

    /// A function's role: test, fixture or helper.
    pub fn role(&self, f: Node, name: &str) -> Role {
        match self.lang {
            Lang::Python => {
                let decorated = f
                    .parent()
                    .filter(|p| p.kind() == "decorated_definition")
                    .map(|p| self.text(p))
                    .unwrap_or("");
                let head = decorated.split("def ").next().unwrap_or("");
                if head.contains("fixture") {
                    Role::Fixture
                } else if name.starts_with("test") {
                    Role::Test
                } else if matches!(name, "setUp" | "tearDown" | "setup_method" | "setUpClass") {
                    Role::Fixture
                } else {
                    Role::Helper
                }
            }
            Lang::Go => {
                if name.starts_with("Test") && name != "TestMain" {
                    Role::Test
                } else if name == "TestMain" {
                    Role::Fixture
                } else {
                    Role::Helper
                }
            }
            Lang::Rust => {
                let mut prev = f.prev_named_sibling();
                while let Some(p) = prev {
                    if p.kind() != "attribute_item" {
                        break;
                    }
                    let a = self.text(p);
                    if a.contains("test") && !a.contains("cfg(test)") {
                        return Role::Test;
                    }
                    prev = p.prev_named_sibling();
                }
                Role::Helper
            }
            _ => Role::Helper,
        }
    }

    /// For JS/TS: the innermost `it`/`test` block's title (a test), or a
    /// hook (`beforeEach`, …) as `<module>` with the fixture role.
    fn js_block(&self, n: Node<'a>) -> Option<Symbol> {
        let mut cur = n.parent();
        while let Some(p) = cur {
            if p.kind() == "call_expression" {
                let callee = self.callee(p);
                let base = callee.split('.').next().unwrap_or("");
                if matches!(base, "it" | "test") {
                    let title = self.js_title(p)?;
                    return Some(Symbol {
                        name: title,
                        role: Role::Test,
                        callable: None,
                    });
                }
                if matches!(base, "beforeEach" | "beforeAll" | "afterEach" | "afterAll") {
                    return Some(Symbol {
                        name: "<module>".into(),
                        role: Role::Fixture,
                        callable: None,
                    });
                }
            }
            cur = p.parent();
        }
        None
    }

    /// The title of a JS `it("title", …)` call.
    pub fn js_title(&self, call: Node) -> Option<String> {
        let args = call.child_by_field_name("arguments")?;
        let first = args.named_child(0)?;
        self.is_string(first).then(|| self.string_value(first))
    }
}

/// Whether `n` is an anonymous function (a closure's loop is not the
/// caller's loop).
fn is_closure(n: Node) -> bool {
    matches!(
        n.kind(),
        "lambda" | "func_literal" | "closure_expression" | "arrow_function" | "function_expression"
    )
}

/// The nearest ancestor of `n` of `kind`.
pub fn enclosing_kind<'t>(n: Node<'t>, kind: &str) -> Option<Node<'t>> {
    let mut cur = n.parent();
    while let Some(p) = cur {
        if p.kind() == kind {
            return Some(p);
        }
        cur = p.parent();
    }
    None
}

/// Every node of a tree, in document order.
pub fn nodes(root: Node) -> Vec<Node> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        out.push(n);
        for i in (0..n.child_count()).rev() {
            if let Some(c) = n.child(i) {
                stack.push(c);
            }
        }
    }
    out
}
