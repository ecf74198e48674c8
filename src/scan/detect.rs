//! The detectors: every site of every class in one parsed file, with its
//! kind, its sleep bucket, whether it is a finding (it reaches an
//! assertion and nothing in the file pins it) and the perturbation that
//! would flip it. Pure: a file's text and the tree's facts in, sites out.

use std::sync::LazyLock;

use jiff::civil::Date;
use regex::Regex;
use tree_sitter::Node;

use super::syntax::{enclosing_kind, nodes, Lang, Src, Symbol};
use super::Class;

/// What a site proposes: a cell that would flip it, or why none would.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Proposal {
    /// A cell spec (`tz=Pacific/Kiritimati`, `faketime=@2031-01-02 12:00:00`).
    Cell(String),
    /// Cells of which any one can flip it, and none always does (the
    /// zones on both sides of UTC for a date read: which one moves the date
    /// depends on the hour).
    Either(Vec<String>),
    /// No perturbation settles this; the reason.
    None(&'static str),
}

/// One site a detector found.
#[derive(Debug, Clone)]
pub struct Site {
    /// The class.
    pub class: Class,
    /// The construct (`calendar-read`, `time-bomb`, `env-write`, …).
    pub kind: &'static str,
    /// The sleep bucket (sleeps only).
    pub bucket: Option<&'static str>,
    /// 1-based line.
    pub line: usize,
    /// The enclosing test, fixture or helper.
    pub symbol: Symbol,
    /// A finding (false: a site counted in the coverage block only).
    pub finding: bool,
    /// The proposed perturbation.
    pub proposal: Proposal,
    /// The fix shape.
    pub fix: &'static str,
    /// What was seen (the date a bomb goes off, the host, the guard…).
    pub detail: String,
    /// The fixed host resource it names (a port, a path), for its partners.
    pub resource: Option<String>,
}

/// Facts about the whole tree that a file's detectors need.
#[derive(Debug, Clone)]
pub struct TreeFacts {
    /// "Today" for time bombs.
    pub today: Date,
    /// Guards present in the tree, per language.
    pub guards: Vec<(Lang, &'static str)>,
}

impl TreeFacts {
    fn guard_for(&self, lang: Lang) -> Option<&'static str> {
        self.guards
            .iter()
            .find(|(l, _)| *l == lang || (l.is_js() && lang.is_js()))
            .map(|(_, g)| *g)
    }
}

/// The zones a date read is proposed under: UTC+14 moves the local date
/// off the UTC date from 10:00 UTC on, UTC−11 before 11:00 UTC, so at
/// every hour one of them does (their spans add to 25 hours).
pub const DATE_ZONES: [&str; 2] = ["tz=Pacific/Kiritimati", "tz=Pacific/Pago_Pago"];

fn zones() -> Proposal {
    Proposal::Either(DATE_ZONES.iter().map(|z| z.to_string()).collect())
}

fn re(s: &str) -> Regex {
    Regex::new(s).expect("a detector's regex compiles")
}

static FREEZE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"freeze_time|freezegun|time_machine|useFakeTimers|setSystemTime|MockDate|clockwork|clock\.NewMock|synctest|start_paused|mock_instant|MockClock",
    )
});
static SEEDED: LazyLock<Regex> = LazyLock::new(|| {
    re(r"random\.seed\(|rand\.Seed\(|seedrandom|faker\.seed|seed_from_u64|from_seed")
});
static VIRTUAL: LazyLock<Regex> = LazyLock::new(|| re(r"synctest\.|start_paused"));
static DEADLINE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)deadline|timeout|time\.time\(\)|monotonic|perf_counter|time\.Now\(\)|time\.Since|time\.Until|time\.After|Date\.now\(\)|performance\.now\(\)|Instant::now|elapsed\(\)|\.Before\(|ctx\.Done\(\)",
    )
});
static EXPIRY: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)expir|valid_?until|valid_?to\b|not_?after|deadline|cutoff|sunset|\bttl\b|ends?_?at\b|until",
    )
});
static DATE: LazyLock<Regex> = LazyLock::new(|| re(r"\b(20\d\d)-(\d\d)-(\d\d)\b"));
static NEGATIVE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\bnot\b|is None|==\s*0\b|!=\s*0\b|==\s*\[\]|\bFalse\b|\bfalse\b|Nil\(|Empty\(|!=\s*nil|toHaveLength\(0\)|\.not\.|is_none\(\)|is_empty\(\)|!\w",
    )
});
static PORT: LazyLock<Regex> = LazyLock::new(|| re(r"^([\w.\-\[\]:]*):(\d{1,5})$"));
static DB: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)((^|[/:])[\w-]+\.(db|sqlite3?)$)|create database\s+\w+"));

fn assert_re(lang: Lang) -> &'static Regex {
    static PY: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*assert\b|self\.assert|pytest\.raises"));
    static GO: LazyLock<Regex> =
        LazyLock::new(|| re(r"\.(Error|Errorf|Fatal|Fatalf|Fail|FailNow)\(|\b(assert|require)\."));
    static JS: LazyLock<Regex> = LazyLock::new(|| re(r"\bexpect\(|\bassert\b"));
    static RS: LazyLock<Regex> = LazyLock::new(|| re(r"\bassert(_eq|_ne)?!|\bpanic!"));
    match lang {
        Lang::Python => &PY,
        Lang::Go => &GO,
        Lang::Rust => &RS,
        _ => &JS,
    }
}

/// Every site in one file.
pub fn detect(src: &Src, root: Node, facts: &TreeFacts) -> Vec<Site> {
    let code = src.code(root);
    let d = Detector {
        src,
        facts,
        frozen: FREEZE.is_match(&code),
        code,
        out: Vec::new(),
        containers: module_containers(src, root),
        imports: imports(src, root),
    };
    d.run(root)
}

struct Detector<'s, 'a> {
    src: &'s Src<'a>,
    facts: &'s TreeFacts,
    code: String,
    frozen: bool,
    out: Vec<Site>,
    containers: Vec<String>,
    imports: Imports,
}

impl<'a> Detector<'_, 'a> {
    fn run(mut self, root: Node<'a>) -> Vec<Site> {
        for n in nodes(root) {
            if self.src.is_comment(n) {
                continue;
            }
            if self.src.is_call(n) {
                let callee = self.src.callee(n);
                self.clock(n, &callee);
                self.random(n, &callee);
                self.sleep(n, &callee);
                self.network(n, &callee);
                self.global(n, &callee);
                self.resource_call(n, &callee);
                self.order_call(n, &callee);
                // Dates built from integers: date(2031, 1, 1), time.Date(2031, time.June, 30, …).
                if matches!(last_segment(&callee), "date" | "datetime" | "Date")
                    && !callee.starts_with("new ")
                {
                    self.int_date(n);
                }
            } else if self.src.is_string(n) {
                self.string(n);
            } else {
                self.other(n);
            }
        }
        self.out
    }

    fn push(&mut self, n: Node<'a>, s: SiteSpec) {
        self.out.push(Site {
            class: s.class,
            kind: s.kind,
            bucket: s.bucket,
            line: n.start_position().row + 1,
            symbol: self.src.symbol(n),
            finding: s.finding,
            proposal: s.proposal,
            fix: s.fix,
            detail: s.detail,
            resource: None,
        });
    }

    /// Whether the value `n` computes reaches an assertion: `n` is in an
    /// assertion or a return, or the name it is assigned to is asserted
    /// (or returned) by a later statement of its block.
    fn reaches_assert(&self, n: Node<'a>) -> bool {
        let stmt = self.src.statement(n);
        let code = self.src.code(stmt);
        let asserts = assert_re(self.src.lang);
        if asserts.is_match(&code) || code.trim_start().starts_with("return") {
            return true;
        }
        if stmt.parent().is_some_and(|p| p.kind() == "block")
            && self.src.lang == Lang::Rust
            && stmt.next_named_sibling().is_none()
            && !code.trim_end().ends_with(';')
        {
            return true;
        }
        static ASSIGN: LazyLock<Regex> = LazyLock::new(|| {
            re(r"^\s*(?:(?:let|const|var)\s+(?:mut\s+)?)?([A-Za-z_]\w*)\s*(?::[^=]*)?(?::=|=[^=])")
        });
        let Some(var) = ASSIGN.captures(&code).map(|c| c[1].to_string()) else {
            return false;
        };
        let word = format!(r"\b{}\b", regex::escape(&var));
        self.src.following(stmt).into_iter().any(|s| {
            let c = self.src.code(s);
            re_match(&word, &c) && (asserts.is_match(&c) || c.trim_start().starts_with("return"))
        })
    }

    fn clock(&mut self, n: Node<'a>, callee: &str) {
        let calendar = match self.src.lang {
            Lang::Python => re_match(
                r"^(datetime\.)?(datetime|date)\.(now|today|utcnow)$|^time\.localtime$",
                callee,
            ),
            Lang::Go => {
                callee == "time.Now"
                    && n.parent()
                        .filter(|p| p.kind() == "selector_expression")
                        .and_then(|p| p.child_by_field_name("field"))
                        .is_some_and(|f| {
                            matches!(
                                self.src.text(f),
                                "Year"
                                    | "Month"
                                    | "Day"
                                    | "YearDay"
                                    | "Weekday"
                                    | "Format"
                                    | "Date"
                                    | "Hour"
                                    | "AddDate"
                                    | "ISOWeek"
                            )
                        })
            }
            Lang::Rust => {
                re_match(
                    r"(^|::)(Local::now|Local::today|Utc::now|now_local|now_utc|Zoned::now)$",
                    callee,
                ) || Self::c_zone_read(callee)
            }
            _ => {
                callee == "new Date" && self.src.args(n).is_none_or(|a| a.named_child_count() == 0)
            }
        };
        if !calendar {
            return;
        }
        // The C library's zone reads fill an out-parameter: what reaches
        // an assertion is the struct, read later in the same function.
        let c_read = self.src.lang == Lang::Rust && Self::c_zone_read(callee);
        let asserted = self.reaches_assert(n)
            || (c_read
                && self.src.enclosing_function(n).is_some_and(|f| {
                    let body = self.src.code(f);
                    assert_re(Lang::Rust).is_match(&body) || body.contains("->")
                }));
        let finding = !self.frozen && asserted;
        let detail = if c_read {
            format!("{callee} reads the zone (TZ) through the C library")
        } else {
            format!("{callee} read off the real clock")
        };
        self.push(
            n,
            SiteSpec {
                class: Class::Clock,
                kind: "calendar-read",
                bucket: None,
                finding,
                proposal: zones(),
                fix: "inject or freeze the clock, and compute \"today\" in the zone the code under test uses",
                detail,
            },
        );
    }

    /// A zone read through the C library (`libc::localtime_r`, or an
    /// `extern "C"` declaration called by its bare name).
    fn c_zone_read(callee: &str) -> bool {
        re_match(
            r"^(libc::)?(localtime_r|localtime|mktime|timelocal)$",
            callee,
        )
    }

    fn random(&mut self, n: Node<'a>, callee: &str) {
        let unseeded = match self.src.lang {
            Lang::Python => re_match(
                r"^random\.(random|randint|randrange|choice|choices|shuffle|sample|uniform|getrandbits)$",
                callee,
            ),
            Lang::Go => re_match(
                r"^rand\.(Intn|Int|Int31|Int31n|Int63|Int63n|IntN|Float32|Float64|Perm|Shuffle|N|Uint32|Uint64)$",
                callee,
            ),
            Lang::Rust => {
                re_match(r"(^|::)(random|thread_rng|rng)$", callee) && callee.contains("rand")
            }
            _ => callee == "Math.random",
        };
        if !unseeded {
            return;
        }
        let finding = !SEEDED.is_match(&self.code) && self.reaches_assert(n);
        self.push(
            n,
            SiteSpec {
                class: Class::Random,
                kind: "unseeded-draw",
                bucket: None,
                finding,
                proposal: Proposal::None(
                    "the draw already changes from run to run: the baseline's own k of N is the measure",
                ),
                fix: "draw from a generator seeded per test, and print the seed on failure",
                detail: format!("{callee} from the process-global generator reaches an assertion"),
            },
        );
    }

    fn sleep(&mut self, n: Node<'a>, callee: &str) {
        let lang = self.src.lang;
        let is_sleep = match lang {
            Lang::Python => matches!(callee, "time.sleep" | "sleep" | "asyncio.sleep"),
            Lang::Go => callee == "time.Sleep",
            Lang::Rust => re_match(r"(^|::)sleep$", callee),
            _ => {
                matches!(callee, "sleep" | "delay" | "page.waitForTimeout")
                    || (callee == "setTimeout" && enclosing_kind(n, "await_expression").is_some())
                    || (callee == "setTimeout"
                        && enclosing_kind(n, "new_expression")
                            .is_some_and(|p| self.src.callee(p) == "new Promise"))
            }
        };
        if !is_sleep || (matches!(lang, Lang::Go | Lang::Rust) && VIRTUAL.is_match(&self.code)) {
            return;
        }
        let seconds = self.duration(n, callee);
        // A zero sleep is a yield; a JS `setTimeout(r, ms)` with a variable
        // delay is the body of a sleep helper, whose callers are the sites.
        if seconds == Some(0.0) || (lang.is_js() && callee == "setTimeout" && seconds.is_none()) {
            return;
        }
        let (kind, bucket, finding, proposal, fix, detail) = if let Some(lp) =
            self.src.enclosing_loop(n)
        {
            if self.bounded(lp) {
                (
                    "sleep",
                    "bounded-poll",
                    false,
                    Proposal::Cell("cpu-stress".into()),
                    "none needed: a poll with a deadline",
                    "inside a loop bounded by a count or a deadline".to_string(),
                )
            } else {
                (
                        "sleep",
                        "unbounded-poll",
                        true,
                        Proposal::None(
                            "an unbounded poll never fails, it waits: a run's --timeout shows it, no perturbation flips it",
                        ),
                        "bound the loop by a deadline and fail naming what was last seen",
                        "inside a loop with no count and no deadline".to_string(),
                    )
            }
        } else {
            let stmt = self.src.statement(n);
            let asserted = self
                .src
                .following(stmt)
                .into_iter()
                .find(|s| assert_re(lang).is_match(&self.src.code(*s)));
            if let Some(a) = asserted {
                let negative = NEGATIVE.is_match(&self.src.code(a));
                (
                        "sleep",
                        "sleep-then-assert",
                        true,
                        Proposal::Cell("cpu-stress".into()),
                        "wait on the condition with a deadline; for a negative, assert it stays false across the whole window",
                        if negative {
                            "a fixed sleep, then a negative assertion".to_string()
                        } else {
                            "a fixed sleep, then an assertion".to_string()
                        },
                    )
            } else if seconds.is_some_and(|s| s >= 1.0) {
                (
                    "long-sleep",
                    "long-sleep",
                    true,
                    Proposal::None(
                        "a long fixed sleep costs wall time and flips nothing by itself",
                    ),
                    "wait for the event itself, or move the test onto a fake clock",
                    "a fixed sleep of a second or more".to_string(),
                )
            } else {
                (
                    "sleep",
                    "bare",
                    false,
                    Proposal::Cell("cpu-stress".into()),
                    "none needed: nothing is asserted after it",
                    "a short sleep nothing asserts after".to_string(),
                )
            }
        };
        let detail = match seconds {
            Some(s) => format!("{detail} ({s}s)"),
            None => detail,
        };
        self.push(
            n,
            SiteSpec {
                class: Class::Sleep,
                kind,
                bucket: Some(bucket),
                finding,
                proposal,
                fix,
                detail,
            },
        );
    }

    /// A sleep's length in seconds, where its argument is a literal.
    fn duration(&self, n: Node<'a>, callee: &str) -> Option<f64> {
        let args = self.src.args(n)?;
        let text: String = self.src.code(args);
        let inner = text.trim().trim_start_matches('(').trim_end_matches(')');
        match self.src.lang {
            Lang::Python => inner.split(',').next()?.trim().parse().ok(),
            Lang::Go => {
                let mut total = 1.0;
                for part in inner.split('*') {
                    let p = part.trim();
                    total *= match p {
                        "time.Nanosecond" => 1e-9,
                        "time.Microsecond" => 1e-6,
                        "time.Millisecond" => 1e-3,
                        "time.Second" => 1.0,
                        "time.Minute" => 60.0,
                        _ => p.parse::<f64>().ok()?,
                    };
                }
                Some(total)
            }
            Lang::Rust => {
                static FROM: LazyLock<Regex> =
                    LazyLock::new(|| re(r"from_(secs|millis|micros|secs_f64)\(\s*([\d._]+)\s*\)"));
                let c = FROM.captures(inner)?;
                let v: f64 = c[2].replace('_', "").parse().ok()?;
                Some(match &c[1] {
                    "millis" => v / 1e3,
                    "micros" => v / 1e6,
                    _ => v,
                })
            }
            _ => {
                let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
                let ms = if callee == "setTimeout" {
                    parts.last()?
                } else {
                    parts.first()?
                };
                ms.replace('_', "").parse::<f64>().ok().map(|v| v / 1e3)
            }
        }
    }

    /// Whether a loop is bounded: a count, a finite iteration, or a
    /// deadline in its condition or its body (comments never count).
    fn bounded(&self, lp: Node<'a>) -> bool {
        let body = lp
            .child_by_field_name("body")
            .map(|b| self.src.code(b))
            .unwrap_or_default();
        let cond = lp
            .child_by_field_name("condition")
            .map(|c| self.src.code(c));
        let deadline = |s: &str| DEADLINE.is_match(s);
        match (self.src.lang, lp.kind()) {
            (Lang::Python, "for_statement") | (Lang::Rust, "for_expression") => true,
            (_, "for_in_statement") => true,
            (Lang::Go, _) => {
                let mut c = lp.walk();
                let clause = lp
                    .named_children(&mut c)
                    .find(|x| !matches!(x.kind(), "block" | "comment"));
                match clause {
                    Some(x) if x.kind() == "range_clause" => true,
                    Some(x) if x.kind() == "for_clause" => {
                        x.child_by_field_name("condition").is_some() || deadline(&body)
                    }
                    Some(x) => deadline(&self.src.code(x)) || deadline(&body),
                    None => deadline(&body),
                }
            }
            (l, "for_statement") if l.is_js() => {
                cond.is_some_and(|c| c.trim() != ";") || deadline(&body)
            }
            _ => match cond {
                Some(c) if !matches!(c.trim(), "True" | "true" | "1" | "(true)" | "(1)") => {
                    deadline(&c) || deadline(&body)
                }
                _ => deadline(&body),
            },
        }
    }

    fn network(&mut self, n: Node<'a>, callee: &str) {
        let last = last_segment(callee);
        let net = matches!(
            last,
            "get"
                | "post"
                | "put"
                | "patch"
                | "delete"
                | "head"
                | "request"
                | "urlopen"
                | "fetch"
                | "create_connection"
                | "connect"
                | "Dial"
                | "DialTimeout"
                | "Get"
                | "Post"
                | "Head"
                | "NewRequest"
                | "HTTPConnection"
                | "HTTPSConnection"
                | "getaddrinfo"
                | "gethostbyname"
                | "LookupHost"
        );
        if !net {
            return;
        }
        let Some(args) = self.src.args(n) else { return };
        let Some(host) = nodes(args)
            .into_iter()
            .filter(|s| self.src.is_string(*s))
            .find_map(|s| remote_host(&self.src.string_value(s)))
        else {
            return;
        };
        let guard = self.facts.guard_for(self.src.lang);
        self.push(
            n,
            SiteSpec {
                class: Class::Network,
                kind: "remote-address",
                bucket: None,
                finding: true,
                proposal: Proposal::Cell("netns".into()),
                fix: "serve it on loopback (a local test server or a recorded reply) and turn a network guard on",
                detail: match guard {
                    Some(g) => format!("{callee} to {host}; network guard present ({g})"),
                    None => format!("{callee} to {host}; no network guard"),
                },
            },
        );
    }

    fn global(&mut self, n: Node<'a>, callee: &str) {
        let lang = self.src.lang;
        let writes = matches!(
            callee,
            "os.environ.update"
                | "os.environ.setdefault"
                | "os.putenv"
                | "os.chdir"
                | "os.Setenv"
                | "os.Chdir"
                | "process.chdir"
                | "setInterval"
        ) || callee.ends_with("set_var")
            || callee.ends_with("set_current_dir")
            || callee.ends_with(".useFakeTimers")
            || (lang == Lang::Python
                && callee
                    .rsplit_once('.')
                    .is_some_and(|(name, _)| self.is_container(name)));
        if !writes {
            return;
        }
        let scope = self
            .src
            .outermost_function(n)
            .map(|f| self.src.code(f))
            .unwrap_or_else(|| self.code.clone());
        let count = |s: &str, what: &str| s.matches(what).count();
        let (kind, restored, fix) = match (lang, callee) {
            (Lang::Python, "os.environ.update" | "os.environ.setdefault" | "os.putenv") => (
                "env-write",
                re_match(
                    r"os\.environ\.pop|del os\.environ|os\.environ\.clear|os\.environ\s*=|monkeypatch",
                    &scope,
                ),
                ENV_FIX,
            ),
            (Lang::Python, "os.chdir") => ("cwd-change", count(&scope, "os.chdir(") >= 2, CWD_FIX),
            (Lang::Go, "os.Setenv") => (
                "env-write",
                re_match(r"os\.Unsetenv|defer os\.Setenv|t\.Cleanup", &scope),
                ENV_FIX,
            ),
            (Lang::Go, "os.Chdir") => ("cwd-change", count(&scope, "os.Chdir(") >= 2, CWD_FIX),
            (Lang::Rust, c) if c.ends_with("set_var") => (
                "env-write",
                scope.contains("remove_var(") || count(&scope, "set_var(") >= 2,
                ENV_FIX,
            ),
            (Lang::Rust, c) if c.ends_with("set_current_dir") => (
                "cwd-change",
                count(&scope, "set_current_dir(") >= 2,
                CWD_FIX,
            ),
            (l, "process.chdir") if l.is_js() => (
                "cwd-change",
                count(&self.code, "process.chdir(") >= 2,
                CWD_FIX,
            ),
            (l, c) if l.is_js() && c.ends_with(".useFakeTimers") => (
                "fake-timers",
                self.code.contains("useRealTimers("),
                "restore real timers in afterEach (useRealTimers)",
            ),
            (l, "setInterval") if l.is_js() => (
                "interval",
                self.code.contains("clearInterval("),
                "clear the interval in afterEach",
            ),
            (Lang::Python, c) => {
                let Some((name, method)) = c.rsplit_once('.') else {
                    return;
                };
                if !self.is_container(name)
                    || !matches!(
                        method,
                        "append"
                            | "add"
                            | "update"
                            | "extend"
                            | "setdefault"
                            | "insert"
                            | "pop"
                            | "popitem"
                            | "remove"
                            | "discard"
                    )
                    || self.src.outermost_function(n).is_none()
                {
                    return;
                }
                (
                    "module-container",
                    self.container_reset(name),
                    CONTAINER_FIX,
                )
            }
            _ => return,
        };
        self.push_global(n, kind, restored, fix, callee);
    }

    fn container_reset(&self, name: &str) -> bool {
        self.code.contains(&format!("{name}.clear("))
            || self.code.contains(&format!("{name}[:] ="))
            || self.code.contains(&format!("patch.dict({name}"))
    }

    /// Whether `name` is a module-level container: this module's own (any
    /// list, dict or set bound at module level), an ALL_CAPS name imported
    /// from another module, or an ALL_CAPS attribute of an imported module
    /// (`settings.CONFIG`).
    fn is_container(&self, name: &str) -> bool {
        if self.containers.iter().any(|c| c == name) {
            return true;
        }
        match name.rsplit_once('.') {
            Some((module, attr)) => {
                all_caps(attr) && self.imports.modules.iter().any(|m| m == module)
            }
            None => all_caps(name) && self.imports.names.iter().any(|m| m == name),
        }
    }

    fn push_global(
        &mut self,
        n: Node<'a>,
        kind: &'static str,
        restored: bool,
        fix: &'static str,
        what: &str,
    ) {
        self.push(
            n,
            SiteSpec {
                class: Class::GlobalState,
                kind,
                bucket: None,
                finding: !restored,
                proposal: Proposal::Cell("shuffle".into()),
                fix,
                detail: format!("{what} writes process-global state and nothing restores it"),
            },
        );
    }

    fn resource_call(&mut self, n: Node<'a>, callee: &str) {
        let last = last_segment(callee);
        let listens = matches!(
            last,
            "bind"
                | "listen"
                | "Listen"
                | "ListenAndServe"
                | "ListenPacket"
                | "ListenTCP"
                | "serve"
                | "HTTPServer"
                | "TCPServer"
                | "ThreadingHTTPServer"
                | "make_server"
                | "createServer"
        );
        if !listens {
            return;
        }
        let Some(args) = self.src.args(n) else { return };
        let mut port = None;
        for a in nodes(args) {
            if self.src.is_string(a) {
                if let Some(c) = PORT.captures(&self.src.string_value(a)) {
                    port = Some(c[2].to_string());
                }
            } else if matches!(
                a.kind(),
                "integer" | "number" | "int_literal" | "integer_literal"
            ) && (a.parent().is_some_and(|p| p.kind() == "tuple")
                || (self.src.lang.is_js() && last == "listen" && args.named_child(0) == Some(a)))
            {
                port = Some(self.src.text(a).to_string());
            }
        }
        if let Some(p) = port.filter(|p| p.parse::<u32>().is_ok_and(|v| v != 0)) {
            self.push_resource(
                n,
                ("fixed-port", &p),
                format!("{callee} on fixed port {p}"),
                PORT_FIX,
            );
        }
    }

    fn push_resource(
        &mut self,
        n: Node<'a>,
        (kind, resource): (&'static str, &str),
        detail: String,
        fix: &'static str,
    ) {
        self.push(
            n,
            SiteSpec {
                class: Class::HostResource,
                kind,
                bucket: None,
                finding: true,
                proposal: Proposal::Cell("workers=2x".into()),
                fix,
                detail,
            },
        );
        if let Some(site) = self.out.last_mut() {
            site.resource = Some(resource.to_string());
        }
    }

    fn order_call(&mut self, n: Node<'a>, callee: &str) {
        let lang = self.src.lang;
        let (kind, proposal, detail) = match lang {
            Lang::Python if matches!(callee, "list" | "tuple") || callee.ends_with(".join") => {
                let Some(args) = self.src.args(n) else { return };
                let Some(a) = args.named_child(0) else { return };
                let set = a.kind() == "set"
                    || a.kind() == "set_comprehension"
                    || (a.kind() == "call" && self.src.callee(a) == "set");
                if !set {
                    return;
                }
                (
                    "hash-order",
                    Proposal::Cell("hashseed-random".into()),
                    format!("{callee}(set) iterates in hash order"),
                )
            }
            l if l.is_js()
                && re_match(
                    r"\.(toLocaleString|toLocaleDateString|toLocaleTimeString)$",
                    callee,
                ) =>
            {
                if self.src.args(n).is_some_and(|a| a.named_child_count() > 0) {
                    return;
                }
                let proposal = if callee.ends_with("toLocaleString") {
                    Proposal::Cell(LOCALE_CELL.into())
                } else {
                    zones()
                };
                (
                    "locale-format",
                    proposal,
                    format!("{} with the host's locale and zone", last_segment(callee)),
                )
            }
            l if l.is_js()
                && (re_match(
                    r"^(new )?Intl\.(NumberFormat|DateTimeFormat|Collator|RelativeTimeFormat|PluralRules|ListFormat)$",
                    callee,
                ) || callee.ends_with(".localeCompare")) =>
            {
                // The locale is the first argument (localeCompare's second).
                let at = usize::from(callee.ends_with(".localeCompare"));
                let locale = self.src.args(n).and_then(|a| a.named_child(at));
                if locale.is_some_and(|a| self.src.text(a) != "undefined") {
                    return;
                }
                (
                    "locale-format",
                    Proposal::Cell(LOCALE_CELL.into()),
                    format!(
                        "{} with the host's default locale",
                        callee.trim_start_matches("new ")
                    ),
                )
            }
            Lang::Python => {
                let Some(detail) = self.python_locale(n, callee) else {
                    return;
                };
                ("locale-format", Proposal::Cell(LOCALE_CELL.into()), detail)
            }
            Lang::Rust
                if re_match(
                    r"^(libc::)?(setlocale|strftime|nl_langinfo)$|(^|::)get_locale$",
                    callee,
                ) =>
            {
                (
                    "locale-format",
                    Proposal::Cell(LOCALE_CELL.into()),
                    format!("{callee} reads the host's locale (LC_ALL, LANG)"),
                )
            }
            Lang::Rust if re_match(r"\.(keys|values|iter|into_iter|drain)$", callee) => {
                let recv = callee.rsplit_once('.').map(|x| x.0).unwrap_or("");
                let scope = self
                    .src
                    .enclosing_function(n)
                    .map(|f| self.src.code(f))
                    .unwrap_or_default();
                let decl = format!(
                    r"\b{}\s*(:\s*(std::collections::)?Hash(Map|Set)|=\s*(std::collections::)?Hash(Map|Set)::)",
                    regex::escape(recv)
                );
                let stmt = self.src.code(self.src.statement(n));
                if !re_match(&decl, &scope) || !stmt.contains("collect") || scope.contains("sort") {
                    return;
                }
                (
                    "hash-order",
                    Proposal::None("Rust's HashMap seeds its hasher per process: the baseline's own k of N is the measure"),
                    format!("{callee} collected in hash order"),
                )
            }
            _ => return,
        };
        let finding = self.reaches_assert(n);
        self.push(
            n,
            SiteSpec {
                class: Class::Order,
                kind,
                bucket: None,
                finding,
                proposal,
                fix: ORDER_FIX,
                detail,
            },
        );
    }

    /// A Python call whose output depends on the locale, and what it is:
    /// the locale module's formatting, `setlocale(…, "")` adopting the
    /// host's, `strftime` with a locale directive, `format(x, "n")`.
    fn python_locale(&self, n: Node<'a>, callee: &str) -> Option<String> {
        let args = self.src.args(n);
        let arg = |i: usize| {
            args.and_then(|a| a.named_child(i))
                .filter(|a| self.src.is_string(*a))
                .map(|a| self.src.string_value(a))
        };
        const ONCE: &str = "(locale-dependent once setlocale adopts the host's locale)";
        if callee == "locale.setlocale" {
            return (arg(1).as_deref() == Some("")).then(|| {
                "locale.setlocale(…, \"\") adopts the host's locale (LC_ALL, LANG)".into()
            });
        }
        if re_match(
            r"^locale\.(format_string|format|currency|str|atof|atoi|localeconv|nl_langinfo|getlocale|getdefaultlocale)$",
            callee,
        ) {
            return Some(format!(
                "{callee} formats or reads by the process's locale {ONCE}"
            ));
        }
        if last_segment(callee) == "strftime" {
            let at = usize::from(callee == "time.strftime" || callee == "strftime");
            let spec = arg(0).or_else(|| arg(at))?;
            return re_match(r"%[cxXaAbBp]", &spec)
                .then(|| format!("strftime(\"{spec}\") names days, months or the date order by the locale {ONCE}"));
        }
        if callee == "format" {
            let spec = arg(1)?;
            return spec
                .ends_with('n')
                .then(|| format!("format(…, \"{spec}\") groups digits by the locale {ONCE}"));
        }
        None
    }

    fn string(&mut self, n: Node<'a>) {
        let v = self.src.string_value(n);
        if (v.starts_with("/tmp/") || v.starts_with("/var/tmp/"))
            && v.len() > 5
            && !v.contains(['{', '%', '$'])
        {
            self.push_resource(
                n,
                ("fixed-temp-path", &v),
                format!("fixed temporary path {v}"),
                TMP_FIX,
            );
        } else if DB.is_match(&v) && v != ":memory:" {
            self.push_resource(
                n,
                ("fixed-db-name", &v),
                format!("fixed database name {v}"),
                DB_FIX,
            );
        }
        if let Some(c) = DATE.captures(&v) {
            let date = (c[1].parse(), c[2].parse(), c[3].parse());
            if let (Ok(y), Ok(m), Ok(d)) = date {
                self.time_bomb(n, y, m, d);
            }
        }
    }

    fn other(&mut self, n: Node<'a>) {
        let lang = self.src.lang;
        match (lang, n.kind()) {
            (Lang::Python, "assignment") => {
                let left = n
                    .child_by_field_name("left")
                    .map(|l| self.src.code(l))
                    .unwrap_or_default();
                if left.starts_with("os.environ[") {
                    let scope = self
                        .src
                        .outermost_function(n)
                        .map(|f| self.src.code(f))
                        .unwrap_or_else(|| self.code.clone());
                    let restored = re_match(
                        r"os\.environ\.pop|del os\.environ|os\.environ\.clear|os\.environ\s*=[^=]|os\.environ\.update\(",
                        &scope,
                    );
                    self.push_global(n, "env-write", restored, ENV_FIX, "os.environ[…] =");
                } else if let Some((name, _)) = left.split_once('[') {
                    if self.is_container(name) && self.src.outermost_function(n).is_some() {
                        let reset = self.container_reset(name);
                        self.push_global(
                            n,
                            "module-container",
                            reset,
                            CONTAINER_FIX,
                            &format!("{name}[…] ="),
                        );
                    }
                }
            }
            (l, "assignment_expression") if l.is_js() => {
                let left = n
                    .child_by_field_name("left")
                    .map(|l| self.src.code(l))
                    .unwrap_or_default();
                if left.starts_with("process.env.") || left.starts_with("process.env[") {
                    let restored = re_match(
                        r"delete process\.env|process\.env\s*=[^=]|stubEnv|unstubAllEnvs",
                        &self.code,
                    ) && !self.code.contains("// no restore");
                    self.push_global(n, "env-write", restored, ENV_FIX, &format!("{left} ="));
                }
            }
            (Lang::Python, "keyword_argument") => {
                let name = n
                    .child_by_field_name("name")
                    .map(|x| self.src.text(x))
                    .unwrap_or("");
                let value = n.child_by_field_name("value");
                if name == "port" {
                    if let Some(v) = value.filter(|v| v.kind() == "integer") {
                        let p = self.src.text(v);
                        if p != "0" {
                            self.push_resource(n, ("fixed-port", p), format!("port={p}"), PORT_FIX);
                        }
                    }
                }
            }
            (l, "pair") if l.is_js() => {
                let key = n
                    .child_by_field_name("key")
                    .map(|x| self.src.text(x))
                    .unwrap_or("");
                let value = n.child_by_field_name("value");
                if key == "port" {
                    if let Some(v) = value.filter(|v| v.kind() == "number") {
                        let p = self.src.text(v);
                        if p != "0" {
                            self.push_resource(
                                n,
                                ("fixed-port", p),
                                format!("port: {p}"),
                                PORT_FIX,
                            );
                        }
                    }
                }
            }
            (Lang::Go, "range_clause") => self.go_map_range(n),
            _ => {}
        }
    }

    fn int_date(&mut self, n: Node<'a>) {
        let Some(args) = self.src.args(n) else { return };
        let mut c = args.walk();
        let parts: Vec<String> = args
            .named_children(&mut c)
            .take(3)
            .map(|a| self.src.code(a).trim().to_string())
            .collect();
        if parts.len() < 3 {
            return;
        }
        let month = parts[1]
            .strip_prefix("time.")
            .and_then(month_number)
            .or_else(|| parts[1].parse().ok());
        if let (Ok(y), Some(m), Ok(d)) = (parts[0].parse(), month, parts[2].parse()) {
            self.time_bomb(n, y, m, d);
        }
    }

    fn time_bomb(&mut self, n: Node<'a>, y: i16, m: i8, d: i8) {
        let Ok(date) = Date::new(y, m, d) else { return };
        let today = self.facts.today;
        let Ok(horizon) = today.checked_add(jiff::Span::new().years(10)) else {
            return;
        };
        if date <= today || date > horizon || self.frozen {
            return;
        }
        let row = n.start_position().row;
        let line = self.src.text.lines().nth(row).unwrap_or("");
        if !EXPIRY.is_match(line) {
            return;
        }
        let Ok(after) = date.checked_add(jiff::Span::new().days(1)) else {
            return;
        };
        self.push(
            n,
            SiteSpec {
                class: Class::Clock,
                kind: "time-bomb",
                bucket: None,
                finding: true,
                proposal: Proposal::Cell(format!("faketime=@{after} 12:00:00")),
                fix: "derive the date from a frozen or injected now (now + the period), or freeze the clock in the test",
                detail: format!("fixed expiry date {date}: the test fails from {after} on"),
            },
        );
    }

    fn go_map_range(&mut self, n: Node<'a>) {
        let Some(right) = n.child_by_field_name("right") else {
            return;
        };
        let name = self.src.text(right).trim().to_string();
        if !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
            return;
        }
        let Some(f) = self.src.enclosing_function(n) else {
            return;
        };
        let scope = self.src.code(f);
        let decl = format!(
            r"\b{0}\s*(:=|=)\s*(map\[|make\(map\[)|\bvar\s+{0}\s+map\[|\b{0}\s+map\[",
            regex::escape(&name)
        );
        let body = n
            .parent()
            .and_then(|lp| lp.child_by_field_name("body"))
            .map(|b| self.src.code(b))
            .unwrap_or_default();
        if !re_match(&decl, &scope)
            || !body.contains("append(")
            || re_match(r"sort\.|slices\.Sort", &scope)
        {
            return;
        }
        self.push(
            n,
            SiteSpec {
                class: Class::Order,
                kind: "map-order",
                bucket: None,
                finding: true,
                proposal: Proposal::None(
                    "Go randomises map iteration on every run: the baseline's own k of N is the measure",
                ),
                fix: ORDER_FIX,
                detail: format!("range over map {name} appended in iteration order"),
            },
        );
    }
}

struct SiteSpec {
    class: Class,
    kind: &'static str,
    bucket: Option<&'static str>,
    finding: bool,
    proposal: Proposal,
    fix: &'static str,
    detail: String,
}

const ENV_FIX: &str =
    "use the runner's restoring helper (monkeypatch.setenv, t.Setenv, vi.stubEnv) or restore it in a finally or cleanup";
const CWD_FIX: &str = "restore the working directory in a cleanup (monkeypatch.chdir, t.Chdir), or pass paths instead";
const CONTAINER_FIX: &str = "reset the container in a fixture, or build it per test";
const PORT_FIX: &str = "bind port 0 and read the chosen port back";
const TMP_FIX: &str = "use a per-test temporary directory (tmp_path, t.TempDir(), mkdtemp)";
const DB_FIX: &str =
    "name the database per test or per worker (a temporary file, :memory:, a worker suffix)";
/// The cell proposed for locale-dependent formatting: a locale every host
/// has (`locale -a`), unlike the developer's.
const LOCALE_CELL: &str = "locale=POSIX";
const ORDER_FIX: &str =
    "sort before comparing, compare as sets, or pass the locale and zone explicitly";

/// What a Python module imports: the modules by the name it calls them,
/// and the names it takes from other modules.
#[derive(Default)]
struct Imports {
    modules: Vec<String>,
    names: Vec<String>,
}

fn imports(src: &Src, root: Node) -> Imports {
    let mut out = Imports::default();
    if src.lang != Lang::Python {
        return out;
    }
    static AS: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*([\w.]+)(?:\s+as\s+(\w+))?\s*$"));
    let mut c = root.walk();
    for stmt in root.named_children(&mut c) {
        let text = src.code(stmt);
        let (list, into) = match stmt.kind() {
            "import_statement" => (
                text.trim_start().trim_start_matches("import"),
                &mut out.modules,
            ),
            "import_from_statement" => match text.split_once(" import ") {
                Some((_, l)) => (l, &mut out.names),
                None => continue,
            },
            _ => continue,
        };
        for item in list.trim().trim_matches(['(', ')']).split(',') {
            if let Some(m) = AS.captures(item) {
                into.push(m.get(2).map_or(&m[1], |a| a.as_str()).to_string());
            }
        }
    }
    out
}

fn all_caps(name: &str) -> bool {
    name.len() > 1
        && name.starts_with(|c: char| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// Module-level names bound to a mutable container (Python): a list, dict
/// or set literal, empty or not, or a container's constructor.
fn module_containers(src: &Src, root: Node) -> Vec<String> {
    if src.lang != Lang::Python {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut c = root.walk();
    for stmt in root.named_children(&mut c) {
        let Some(a) = stmt.named_child(0).filter(|a| a.kind() == "assignment") else {
            continue;
        };
        let (Some(l), Some(r)) = (
            a.child_by_field_name("left"),
            a.child_by_field_name("right"),
        ) else {
            continue;
        };
        let container = matches!(
            r.kind(),
            "list" | "dictionary" | "set" | "list_comprehension" | "dictionary_comprehension"
        ) || (r.kind() == "call"
            && re_match(
                r"^(collections\.)?(set|dict|list|defaultdict|OrderedDict|Counter|deque)$",
                &src.callee(r),
            ));
        if l.kind() == "identifier" && container {
            out.push(src.text(l).to_string());
        }
    }
    out
}

fn month_number(name: &str) -> Option<i8> {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    MONTHS.iter().position(|m| *m == name).map(|i| i as i8 + 1)
}

fn re_match(pattern: &str, text: &str) -> bool {
    thread_local! {
        static CACHE: std::cell::RefCell<std::collections::HashMap<String, Regex>> =
            std::cell::RefCell::new(std::collections::HashMap::new());
    }
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        c.entry(pattern.to_string())
            .or_insert_with(|| re(pattern))
            .is_match(text)
    })
}

/// The last segment of a callee (`requests.get` → `get`, `TcpListener::bind` → `bind`).
fn last_segment(callee: &str) -> &str {
    callee.rsplit(['.', ':', ' ']).next().unwrap_or(callee)
}

/// The non-loopback host a literal names, if it names one.
pub fn remote_host(value: &str) -> Option<String> {
    let rest = match value.split_once("://") {
        Some((scheme, rest))
            if scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '+') =>
        {
            rest
        }
        Some(_) => return None,
        None => {
            let ipv4 = re_match(r"^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}(:\d+)?$", value);
            if !ipv4 {
                return None;
            }
            value
        }
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = if let Some(h) = authority.strip_prefix('[') {
        h.split(']').next().unwrap_or("")
    } else {
        authority.rsplit_once(':').map_or(authority, |(h, _)| h)
    };
    let host = host.rsplit('@').next().unwrap_or(host);
    let loopback = host.is_empty()
        || host == "localhost"
        || host.ends_with(".localhost")
        || host.starts_with("127.")
        || host == "::1"
        || host == "0.0.0.0";
    (!loopback).then(|| host.to_string())
}
