//! `flakelab scan --prove`, pure: which findings share a cell (one session
//! per perturbation and runner), how the reached tests are selected through
//! the recipe, and each finding's status from its arms' counts — proven,
//! not shown (with the bound at its N) or unconfirmed (with the reason and
//! the exact command). Running the sessions is `design::prove`'s; a finding is
//! never proven here without counts from those runs.
//!
//! A finding's p is Fisher's two-sided p of its most-flipped reached test
//! (cell against baseline, the cell failing more), times the number of its
//! tests measured (Bonferroni within the finding); Holm over every measured
//! finding of the invocation decides. Controls (`--controls`: the tests no
//! finding reaches, run beside them) are their own Holm family.

use serde::{Deserialize, Serialize};

use super::syntax::Lang;
use super::{Class, Finding};
use crate::catalog::recipe::{argv, Recipe};
use crate::stats;

pub use crate::record::schema::PROVE_SCHEMA;

/// Failures and runs of one test in one arm.
pub type Arm = (u64, u64);

/// What `--prove` concluded about a finding or a control.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// The cell's k of N differs from the baseline's (Holm over the findings).
    Proven,
    /// Measured, and no difference shown at this N.
    NotShown,
    /// Not measured: no runner or selection, not applicable here, or no
    /// perturbation settles it.
    Unconfirmed,
    /// A control (a test no finding reaches) that the cell flips: a site
    /// the scan missed.
    Flips,
}

impl Status {
    /// The status as printed.
    pub fn word(self) -> &'static str {
        match self {
            Status::Proven => "proven",
            Status::NotShown => "not shown",
            Status::Unconfirmed => "unconfirmed",
            Status::Flips => "flips",
        }
    }

    /// The status as the scan's `status` field spells it.
    pub fn key(self) -> &'static str {
        match self {
            Status::Proven => "proven",
            Status::NotShown => "not-shown",
            Status::Unconfirmed => "unconfirmed",
            Status::Flips => "flips",
        }
    }
}

/// One reached test's counts in one prove session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestArms {
    /// The runner's id of the test.
    pub test: String,
    /// Failures and runs under the cell.
    pub cell: Arm,
    /// Failures and runs at baseline.
    pub baseline: Arm,
    /// Failures and runs under the cell's sham, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sham: Option<Arm>,
}

/// A finding's (or a control's) measurement: the session and its tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Measured {
    /// The cell.
    pub cell: String,
    /// The cell's sham, when it has one.
    pub sham: Option<String>,
    /// The prove session.
    pub session: String,
    /// Its reached tests' counts.
    pub tests: Vec<TestArms>,
    /// When none of its session's selected tests was in any run's report:
    /// a few of the ids the reports named instead (ids from another root
    /// than the session's), for the reason. Empty otherwise.
    pub strays: Vec<String>,
}

/// A finding's or a control's proof.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proof {
    /// The status.
    pub status: Status,
    /// The cell it ran under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell: Option<String>,
    /// The cell's sham.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sham: Option<String>,
    /// The prove session (`flakelab report ID` shows it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The test that decided (the most flipped), with its counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<TestArms>,
    /// Fisher's p of the deciding test times the tests measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p: Option<f64>,
    /// Holm over the invocation's measured findings (or controls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adjusted_p: Option<f64>,
    /// The family Holm ran over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<usize>,
    /// Not shown: the cell raises the failure rate by less than this, at
    /// the confidence, at this N.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<f64>,
    /// Confidence of the bound and the level of the test.
    pub confidence: f64,
    /// Unconfirmed: why; otherwise a note (the sham, tests not measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Unconfirmed: the exact command that would prove it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

impl Proof {
    /// Unconfirmed, with why and the command to run.
    pub fn unconfirmed(reason: String, command: String, confidence: f64) -> Proof {
        Proof {
            status: Status::Unconfirmed,
            cell: None,
            sham: None,
            session: None,
            counts: None,
            p: None,
            adjusted_p: None,
            family: None,
            bound: None,
            confidence,
            reason: Some(reason),
            command: Some(command),
        }
    }
}

/// A control: a test no finding reaches, run under a cell beside the
/// findings' tests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Control {
    /// The runner's id of the test.
    pub test: String,
    /// Its proof under that cell (`not-shown`, `flips`, `unconfirmed`).
    pub proof: Proof,
}

/// One finding as a prove session records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProvedSite {
    /// `file:line`.
    pub site: String,
    /// The enclosing symbol.
    pub symbol: String,
    /// The class.
    pub class: Class,
    /// Its proof.
    pub proof: Proof,
}

/// One prove session's findings and controls, stored in `proves.jsonl` so
/// that `flakelab report` shows them with the session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProveRecord {
    /// Always [`PROVE_SCHEMA`].
    pub schema: String,
    /// The session.
    pub session: String,
    /// The cell.
    pub cell: String,
    /// The findings it proves.
    pub findings: Vec<ProvedSite>,
    /// The controls it ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub controls: Vec<Control>,
}

impl crate::store::Keyed for ProveRecord {
    fn key(&self) -> std::borrow::Cow<'_, str> {
        std::borrow::Cow::Borrowed(&self.session)
    }
}

impl crate::store::DesignRecord for ProveRecord {
    const FILE: &'static str = crate::store::PROVES_FILE;
    fn session(&self) -> &str {
        &self.session
    }
}

/// `scan --prove`'s records in the store.
impl crate::store::Store {
    /// Appends one record to `proves.jsonl` and flushes it.
    pub fn append_prove(&self, record: &ProveRecord) -> crate::error::Result<()> {
        self.append_record(record)
    }

    /// What `scan --prove` concluded in `session`, if it was a prove session.
    pub fn prove_of(&self, session: &str) -> crate::error::Result<Option<ProveRecord>> {
        Ok(self.records_of(session)?.pop())
    }
}

/// The findings of one runner that share a cell: one prove session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// The cell.
    pub cell: String,
    /// The runner's language ([`runner_lang`]: TypeScript runs as JavaScript).
    pub lang: Lang,
    /// The command the runner's tests run with, before the selection.
    pub command: Vec<String>,
    /// The findings (indexes into the scan's).
    pub findings: Vec<usize>,
    /// Their reached tests (and the tests run beside them), each once, in
    /// order.
    pub tests: Vec<String>,
    /// An order group (a global-state write and the tests it can pollute):
    /// the cell's runs run `tests` first and these after, the baseline's
    /// these first and `tests` last, each through the recipe's `[ordered]`.
    /// Empty for every other group.
    pub beside: Vec<String>,
    /// Sets of tests counted together ([`together`]), each once.
    pub together: Vec<Vec<String>>,
}

/// The tests a finding is measured on as one: a fixed resource's tests and
/// its partners, a run failing when any of them failed (whichever binds
/// second fails, and that differs from run to run). `None`: each test on
/// its own.
pub fn together(f: &Finding) -> Option<Vec<String>> {
    if f.class != Class::HostResource || f.tests.len() + f.beside.len() < 2 {
        return None;
    }
    let mut set: Vec<String> = f.tests.iter().chain(&f.beside).cloned().collect();
    set.sort();
    set.dedup();
    Some(set)
}

/// A test's id as its runner names it from the project root, `id` being
/// the scan's (from the scanned tree, `prefix` its path from the project
/// root, [`super::project_of`]): a pytest node id's file path gains the
/// prefix; Go, Rust and JS ids are test names, the same from anywhere.
pub fn runner_id(lang: Lang, id: &str, prefix: &str) -> String {
    match runner_lang(lang) {
        Lang::Python => format!("{prefix}{id}"),
        _ => id.to_string(),
    }
}

/// `f` with its tests and the tests run beside it named as the runner
/// names them from the project root ([`runner_id`]): what [`plan`] takes.
pub fn for_runner(f: &Finding, prefix: &str) -> Finding {
    let ids =
        |v: &[String]| -> Vec<String> { v.iter().map(|t| runner_id(f.lang, t, prefix)).collect() };
    Finding {
        tests: ids(&f.tests),
        beside: ids(&f.beside),
        ..f.clone()
    }
}

/// The language whose runner runs a file's tests: JavaScript and
/// TypeScript test files run under one JS runner, in one session.
pub fn runner_lang(lang: Lang) -> Lang {
    if lang.is_js() {
        Lang::JavaScript
    } else {
        lang
    }
}

/// The command `--prove` runs a language's tests with from the project
/// root, before the recipe selects the reached tests; `js` is the JS
/// tests' ([`js_command`]), or why they cannot run here; `prefix` the
/// scanned tree's path from the project root (go test's packages).
pub fn runner_command(
    lang: Lang,
    js: &Result<Vec<String>, String>,
    prefix: &str,
) -> Result<Vec<String>, String> {
    let packages = format!("./{prefix}...");
    let words: &[&str] = match runner_lang(lang) {
        Lang::Python => &["python3", "-m", "pytest", "-p", "no:cacheprovider"],
        Lang::Go => &["go", "test", &packages],
        // Every test binary runs even when one fails (cargo stops at the
        // first failing binary otherwise, and the later binaries' reached
        // tests would be in no run's report). `--tests`: the reached tests
        // are `#[test]` functions, never doc-tests, and rustdoc hung under
        // libfaketime here (cargo 1.95, libfaketime 0.9.10).
        Lang::Rust => &["cargo", "test", "--no-fail-fast", "--tests"],
        _ => return js.clone(),
    };
    Ok(words.iter().map(|w| w.to_string()).collect())
}

/// The command a project's JS tests run with: the runner its package.json
/// names (`vitest`, `jest`, else `node --test`), started from `local`, the
/// project's own installed binary (what `npx` would resolve to, without
/// npx's own start on every run). Without one, why not: npx would fetch
/// the runner from the registry.
pub fn js_command(runner: &str, local: Option<&std::path::Path>) -> Result<Vec<String>, String> {
    if runner != "vitest" && runner != "jest" {
        return Ok(vec!["node".to_string(), "--test".to_string()]);
    }
    let Some(bin) = local else {
        return Err(format!(
            "the project's package.json names {runner}, and it is not installed here (no node_modules/.bin/{runner}): install the project's dependencies, then scan --prove again"
        ));
    };
    let mut argv = vec![bin.display().to_string()];
    if runner == "vitest" {
        argv.push("run".to_string());
    }
    Ok(argv)
}

/// The cells `--prove` does not run on the reached tests alone, with why.
fn not_on_reached_tests(cell: &str) -> Option<&'static str> {
    (cell == "shuffle").then_some(
        "a shuffle cell needs the tests these run beside: order dependence never shows in the reached tests alone (the screen design confirms a shuffle candidate with the whole command too)",
    )
}

/// Groups the findings (their tests named from the project root,
/// [`for_runner`]) into prove sessions, one per (runner, cell), `js` the
/// project's JS test command ([`js_command`]), `prefix` the scanned tree's
/// path from the project root; a finding with several cells is in a
/// session of each. A global-state write with the tests it can pollute is
/// a session of its own (an order group). The rest are unconfirmed now,
/// each with why and the command to run.
pub fn plan(
    findings: &[Finding],
    confidence: f64,
    js: &Result<Vec<String>, String>,
    prefix: &str,
) -> (Vec<Group>, Vec<(usize, Proof)>) {
    let mut groups: Vec<Group> = Vec::new();
    let mut now = Vec::new();
    for (i, f) in findings.iter().enumerate() {
        let Some(cell) = &f.perturbation else {
            let why = f
                .settle
                .clone()
                .unwrap_or_else(|| "no perturbation settles this".into());
            now.push((i, Proof::unconfirmed(why, f.command.clone(), confidence)));
            continue;
        };
        let lang = runner_lang(f.lang);
        let command = match runner_command(lang, js, prefix) {
            Ok(c) => c,
            Err(why) => {
                now.push((i, Proof::unconfirmed(why, f.command.clone(), confidence)));
                continue;
            }
        };
        if let Some(why) = not_on_reached_tests(cell) {
            // pytest runs a given order (flakelab's order plugin); the other
            // runners' recipes give none here.
            if !f.beside.is_empty() && lang == Lang::Python {
                groups.push(Group {
                    cell: cell.clone(),
                    lang,
                    command,
                    findings: vec![i],
                    tests: f.tests.clone(),
                    beside: f.beside.clone(),
                    together: Vec::new(),
                });
                continue;
            }
            let mut whole = command.clone();
            // pytest from the project root: the scanned tree's tests only.
            if lang == Lang::Python && !prefix.is_empty() {
                whole.push(prefix.trim_end_matches('/').to_string());
            }
            let whole = format!(
                "flakelab run -n 20 -p {} -- {}",
                shell_words::quote(cell),
                shell_words::join(&whole)
            );
            now.push((i, Proof::unconfirmed(why.into(), whole, confidence)));
            continue;
        }
        let tests: Vec<&String> = f.tests.iter().chain(&f.beside).collect();
        for cell in std::iter::once(cell).chain(&f.also) {
            let same = |g: &&mut Group| &g.cell == cell && g.lang == lang && g.beside.is_empty();
            let set = together(f);
            match groups.iter_mut().find(same) {
                Some(g) => {
                    g.findings.push(i);
                    for t in &tests {
                        if !g.tests.contains(t) {
                            g.tests.push((*t).clone());
                        }
                    }
                    if let Some(set) = set.filter(|s| !g.together.contains(s)) {
                        g.together.push(set);
                    }
                }
                None => groups.push(Group {
                    cell: cell.clone(),
                    lang,
                    command: command.clone(),
                    findings: vec![i],
                    tests: tests.iter().map(|t| (*t).clone()).collect(),
                    beside: Vec::new(),
                    together: set.into_iter().collect(),
                }),
            }
        }
    }
    (groups, now)
}

/// A finding's proof from its measurements under each of its cells
/// (`decided`, in cell order): proven when any cell proved it (the
/// smallest adjusted p), else the smallest p; the other cells' outcomes
/// are noted in its reason.
pub fn best(decided: Vec<Proof>) -> Option<Proof> {
    let key = |p: &Proof| {
        (
            p.status != Status::Proven,
            p.status == Status::Unconfirmed,
            p.adjusted_p.unwrap_or(f64::INFINITY),
        )
    };
    let i = (0..decided.len()).min_by(|&a, &b| {
        key(&decided[a])
            .partial_cmp(&key(&decided[b]))
            .unwrap_or(std::cmp::Ordering::Equal)
    })?;
    let others: Vec<String> = (decided.iter().enumerate())
        .filter(|(j, _)| *j != i)
        .map(|(_, p)| {
            let cell = p.cell.as_deref().unwrap_or("its other cell");
            match &p.session {
                Some(s) => format!("under {cell}: {} (session {s})", p.status.word()),
                None => format!("under {cell}: {}", p.status.word()),
            }
        })
        .collect();
    let mut proof = decided[i].clone();
    if !others.is_empty() {
        let also = format!("also tried {}", others.join("; "));
        proof.reason = Some(match proof.reason {
            Some(r) => format!("{r}; {also}"),
            None => also,
        });
    }
    Some(proof)
}

/// The ids handed to the recipe's `[select]` for `ids`: each id when the
/// recipe repeats its selection; one regex alternation when its template
/// anchors `{id_re}` as a regex (`^{id_re}$`, go test's `-run`) and no id is a
/// subtest path; otherwise why not.
pub fn selection(
    ids: &[String],
    repeats: bool,
    template: &[String],
) -> Result<Vec<String>, String> {
    if ids.len() <= 1 || repeats {
        return Ok(ids.to_vec());
    }
    let regex = template.iter().any(|a| a.contains("^{id_re}$"));
    if regex && ids.iter().all(|i| !i.contains('/')) {
        let alternation: Vec<String> = ids.iter().map(|i| regex::escape(i)).collect();
        return Ok(vec![format!("({})", alternation.join("|"))]);
    }
    Err("the recipe selects one test per run, and these findings reach several".into())
}

/// The command selecting `ids` through the recipe's `[select]`
/// ([`selection`]). libtest (the `cargo-test` recipe) takes every free
/// word after `--` as a filter, `--exact` once applying to them all (given
/// twice, libtest refuses it): its several tests are the recipe's
/// selection of the first, the others appended.
pub fn select_argv(
    recipe: &Recipe,
    command: &[String],
    ids: &[String],
    dir: &std::path::Path,
) -> Result<Vec<String>, String> {
    let Some(select) = &recipe.select else {
        return Err(format!("the {} recipe has no [select]", recipe.name));
    };
    if recipe.name == "cargo-test" && ids.len() > 1 {
        let mut argv = argv::select(recipe, command, &ids[0], dir)?;
        argv.extend(ids[1..].iter().cloned());
        return Ok(argv);
    }
    let sel = selection(ids, select.repeats, &select.args)?;
    match sel.as_slice() {
        // One alternation of escaped ids: a pattern, put in as it is.
        [pattern] if ids.len() > 1 => argv::select_pattern(recipe, command, pattern, dir),
        _ => argv::select_many(recipe, command, &sel, dir),
    }
}

/// The two-sided Fisher p of `cell` against `baseline`, when the cell
/// fails more (1 otherwise: a perturbation that makes a test pass proves
/// no flake source).
fn flip_p(cell: Arm, baseline: Arm) -> f64 {
    let ((kc, nc), (kb, nb)) = (cell, baseline);
    if nc == 0 || nb == 0 || kc * nb <= kb * nc {
        return 1.0;
    }
    stats::fisher_exact(kc, nc - kc, kb, nb - kb)
}

/// Decides every measured item (a finding's or a control's tests in its
/// prove session) at `confidence`, Holm over the items measured. A control
/// that differs is [`Status::Flips`], a finding [`Status::Proven`].
pub fn decide(items: &[Measured], confidence: f64, controls: bool) -> Vec<Proof> {
    let alpha = 1.0 - confidence;
    // The deciding test and the finding's p, for the items measured.
    let mut raw: Vec<Option<(usize, f64, usize)>> = Vec::new();
    for m in items {
        let measured: Vec<(usize, &TestArms)> = (m.tests.iter().enumerate())
            .filter(|(_, t)| t.cell.1 > 0 && t.baseline.1 > 0)
            .collect();
        let best = measured
            .iter()
            .map(|(i, t)| (*i, flip_p(t.cell, t.baseline)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        raw.push(best.map(|(i, p)| {
            let p = (p * measured.len() as f64).min(1.0);
            (i, p, m.tests.len() - measured.len())
        }));
    }
    let ps: Vec<f64> = raw
        .iter()
        .map(|r| r.map_or(f64::NAN, |(_, p, _)| p))
        .collect();
    let adjusted = stats::holm(&ps);
    let family = ps.iter().filter(|p| !p.is_nan()).count();
    items
        .iter()
        .zip(raw)
        .zip(adjusted)
        .map(|((m, r), adj)| {
            let base = Proof {
                status: Status::Unconfirmed,
                cell: Some(m.cell.clone()),
                sham: m.sham.clone(),
                session: Some(m.session.clone()),
                counts: None,
                p: None,
                adjusted_p: None,
                family: None,
                bound: None,
                confidence,
                reason: None,
                command: None,
            };
            let Some((i, p, unmeasured)) = r else {
                let mut why = "its tests are in none of the cell's or the baseline's run reports: the selection measured nothing".to_string();
                if !m.strays.is_empty() {
                    let asked: Vec<&str> = m.tests.iter().map(|t| t.test.as_str()).collect();
                    why.push_str(&format!(
                        "; the reports name {} where the scan selected {}: the runner names its tests from another directory than the project root the session ran in (pytest: its rootdir, where its ini file is)",
                        m.strays.join(", "),
                        asked.join(", ")
                    ));
                }
                return Proof {
                    reason: Some(why),
                    command: Some(format!("flakelab report {}", m.session)),
                    ..base
                };
            };
            let t = &m.tests[i];
            let mut notes = Vec::new();
            if unmeasured > 0 {
                notes.push(format!(
                    "{unmeasured} of its {} tests were in no run's report",
                    m.tests.len()
                ));
            }
            let sham_fails = t
                .sham
                .is_some_and(|s| s.1 > 0 && flip_p(s, t.baseline) <= alpha);
            let differs = adj <= alpha;
            let status = match (differs, sham_fails) {
                (true, false) if controls => Status::Flips,
                (true, false) => Status::Proven,
                (true, true) => {
                    notes.push(format!(
                        "its sham {} fails it too ({} of {}): the mechanism alone makes the signal",
                        m.sham.as_deref().unwrap_or("cell"),
                        t.sham.map_or(0, |s| s.0),
                        t.sham.map_or(0, |s| s.1)
                    ));
                    Status::Unconfirmed
                }
                (false, _) => Status::NotShown,
            };
            let bound = (status == Status::NotShown).then(|| {
                let c = stats::proportion(t.cell.0, t.cell.1, confidence);
                let b = stats::proportion(t.baseline.0, t.baseline.1, confidence);
                (c.high - b.low).clamp(0.0, 1.0)
            });
            Proof {
                status,
                counts: Some(t.clone()),
                p: Some(p),
                adjusted_p: Some(adj),
                family: Some(family),
                bound,
                reason: (!notes.is_empty()).then(|| notes.join("; ")),
                command: (status == Status::Unconfirmed)
                    .then(|| format!("flakelab report {}", m.session)),
                ..base
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(cell: Arm, baseline: Arm, sham: Option<Arm>) -> Measured {
        Measured {
            cell: "tz=X".into(),
            sham: sham.map(|_| "tz=Etc/UTC".into()),
            session: "s1".into(),
            tests: vec![TestArms {
                test: "t".into(),
                cell,
                baseline,
                sham,
            }],
            strays: Vec::new(),
        }
    }

    #[test]
    fn four_of_four_against_none_is_p_0_029_and_proves_alone_but_not_under_holm_over_six() {
        let one = decide(&[item((4, 4), (0, 4), None)], 0.95, false);
        assert_eq!(one[0].status, Status::Proven);
        assert!((one[0].p.unwrap() - 2.0 / 70.0).abs() < 1e-12);
        // Six findings measured, two flipped 4 of 4: Holm needs p ≤ 0.05/6.
        let mut six = vec![item((4, 4), (0, 4), None), item((4, 4), (0, 4), None)];
        six.extend((0..4).map(|_| item((0, 4), (0, 4), None)));
        let got = decide(&six, 0.95, false);
        assert_eq!(got[0].status, Status::NotShown);
        // Six runs per arm: p = 2/924 = 0.0022 survives Holm over six.
        let mut six = vec![item((6, 6), (0, 6), None), item((6, 6), (0, 6), None)];
        six.extend((0..4).map(|_| item((0, 6), (0, 6), None)));
        let got = decide(&six, 0.95, false);
        let statuses: Vec<Status> = got.iter().map(|p| p.status).collect();
        assert_eq!(
            statuses,
            [
                Status::Proven,
                Status::Proven,
                Status::NotShown,
                Status::NotShown,
                Status::NotShown,
                Status::NotShown
            ]
        );
        assert_eq!(got[0].family, Some(6));
        assert!((got[0].adjusted_p.unwrap() - 6.0 * 2.0 / 924.0).abs() < 1e-12);
    }

    #[test]
    fn not_shown_carries_the_bound_at_its_n_and_a_silent_selection_is_unconfirmed() {
        let got = decide(
            &[item((0, 6), (0, 6), None), item((0, 0), (0, 6), None)],
            0.95,
            false,
        );
        assert_eq!(got[0].status, Status::NotShown);
        // 0 of 6: the rate is below 1 - 0.05^(1/6) = 0.393.
        assert!((got[0].bound.unwrap() - (1.0 - 0.05f64.powf(1.0 / 6.0))).abs() < 1e-9);
        assert_eq!(got[1].status, Status::Unconfirmed);
        assert!(got[1].reason.as_ref().unwrap().contains("measured nothing"));
        assert_eq!(got[0].family, Some(1), "the unmeasured item is no test");
    }

    #[test]
    fn a_sham_that_flips_too_and_a_cell_that_only_heals_prove_nothing() {
        let got = decide(&[item((6, 6), (0, 6), Some((6, 6)))], 0.95, false);
        assert_eq!(got[0].status, Status::Unconfirmed);
        assert!(got[0].reason.as_ref().unwrap().contains("sham tz=Etc/UTC"));
        let healed = decide(&[item((0, 6), (6, 6), None)], 0.95, false);
        assert_eq!(
            (healed[0].status, healed[0].p),
            (Status::NotShown, Some(1.0))
        );
        let control = decide(&[item((6, 6), (0, 6), Some((0, 6)))], 0.95, true);
        assert_eq!(control[0].status, Status::Flips);
    }

    fn finding(lang: Lang, cell: Option<&str>, tests: &[&str]) -> Finding {
        Finding {
            file: "t.py".into(),
            line: 1,
            symbol: "s".into(),
            class: Class::Clock,
            kind: "calendar-read".into(),
            bucket: "calendar-read".into(),
            tests: tests.iter().map(|t| t.to_string()).collect(),
            reach: "static".into(),
            perturbation: cell.map(String::from),
            also: Vec::new(),
            beside: Vec::new(),
            resource: None,
            settle: cell
                .is_none()
                .then(|| "no perturbation settles this: why".into()),
            status: "unconfirmed".into(),
            command: "flakelab run -n 20 -- x".into(),
            fix: String::new(),
            detail: String::new(),
            lang,
            proof: None,
        }
    }

    #[test]
    fn findings_sharing_a_cell_and_a_runner_are_one_session_and_the_rest_say_why_not() {
        let tz = Some("tz=Pacific/Kiritimati");
        let findings = [
            finding(Lang::Python, tz, &["a.py::t1"]),
            finding(Lang::Python, Some("netns"), &["a.py::t2"]),
            finding(Lang::Python, tz, &["a.py::t1", "b.py::t3"]),
            finding(Lang::Go, tz, &["TestA"]),
            finding(Lang::Python, None, &["a.py::t4"]),
            finding(Lang::Python, Some("shuffle"), &["a.py::t5"]),
            finding(Lang::JavaScript, tz, &["labels today"]),
            finding(Lang::TypeScript, tz, &["frozen today"]),
            finding(Lang::Rust, Some("netns"), &["remote"]),
        ];
        let vitest = std::path::Path::new("/p/node_modules/.bin/vitest");
        let (groups, now) = plan(&findings, 0.95, &js_command("vitest", Some(vitest)), "");
        type Row<'a> = (&'a str, Lang, String, Vec<usize>, Vec<&'a str>);
        let got: Vec<Row> = groups
            .iter()
            .map(|g| {
                (
                    g.cell.as_str(),
                    g.lang,
                    g.command.join(" "),
                    g.findings.clone(),
                    g.tests.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        let pytest = "python3 -m pytest -p no:cacheprovider".to_string();
        assert_eq!(
            got,
            [
                (
                    "tz=Pacific/Kiritimati",
                    Lang::Python,
                    pytest.clone(),
                    vec![0, 2],
                    vec!["a.py::t1", "b.py::t3"]
                ),
                ("netns", Lang::Python, pytest, vec![1], vec!["a.py::t2"]),
                (
                    "tz=Pacific/Kiritimati",
                    Lang::Go,
                    "go test ./...".into(),
                    vec![3],
                    vec!["TestA"]
                ),
                // JavaScript and TypeScript tests share the JS runner's session.
                (
                    "tz=Pacific/Kiritimati",
                    Lang::JavaScript,
                    "/p/node_modules/.bin/vitest run".into(),
                    vec![6, 7],
                    vec!["labels today", "frozen today"]
                ),
                (
                    "netns",
                    Lang::Rust,
                    "cargo test --no-fail-fast --tests".into(),
                    vec![8],
                    vec!["remote"]
                ),
            ]
        );
        let why: Vec<(usize, &str)> = now
            .iter()
            .map(|(i, p)| (*i, p.reason.as_deref().unwrap()))
            .collect();
        assert_eq!(why[0], (4, "no perturbation settles this: why"));
        assert!(why[1].1.starts_with("a shuffle cell needs the tests"));
        assert_eq!(why.len(), 2);
        assert_eq!(
            now[1].1.command.as_deref(),
            Some("flakelab run -n 20 -p shuffle -- python3 -m pytest -p no:cacheprovider")
        );
        assert!(now.iter().all(|(_, p)| p.status == Status::Unconfirmed));
        // The project's runner not installed: npx would fetch it.
        let (groups, now) = plan(&findings[6..7], 0.95, &js_command("vitest", None), "");
        assert!(groups.is_empty());
        let why = now[0].1.reason.as_deref().unwrap();
        assert!(why.contains("no node_modules/.bin/vitest"), "{why}");
    }

    #[test]
    fn a_finding_with_two_zones_is_in_both_sessions_and_proven_when_either_flips_it() {
        let mut date = finding(Lang::Python, Some("tz=Pacific/Kiritimati"), &["a.py::t1"]);
        date.also = vec!["tz=Pacific/Pago_Pago".into()];
        let mut port = finding(Lang::Python, Some("workers=2x"), &["a.py::p1"]);
        port.class = Class::HostResource;
        port.beside = vec!["a.py::p2".into()];
        let mut writer = finding(Lang::Python, Some("shuffle"), &["a.py::w"]);
        writer.class = Class::GlobalState;
        writer.beside = vec!["a.py::r1".into(), "a.py::r2".into()];
        let mut go_writer = finding(Lang::Go, Some("shuffle"), &["TestW"]);
        go_writer.beside = vec!["TestR".into()];
        let (groups, now) = plan(&[date, port, writer, go_writer], 0.95, &Ok(Vec::new()), "");
        type Row<'a> = (&'a str, Vec<usize>, Vec<&'a str>, usize, usize);
        let got: Vec<Row> = groups
            .iter()
            .map(|g| {
                (
                    g.cell.as_str(),
                    g.findings.clone(),
                    g.tests.iter().map(String::as_str).collect(),
                    g.beside.len(),
                    g.together.len(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("tz=Pacific/Kiritimati", vec![0], vec!["a.py::t1"], 0, 0),
                ("tz=Pacific/Pago_Pago", vec![0], vec!["a.py::t1"], 0, 0),
                ("workers=2x", vec![1], vec!["a.py::p1", "a.py::p2"], 0, 1),
                ("shuffle", vec![2], vec!["a.py::w"], 2, 0),
            ]
        );
        // Go runs no given order here: the whole shuffle command instead.
        assert_eq!(now.len(), 1);
        assert!(now[0]
            .1
            .reason
            .as_deref()
            .unwrap()
            .starts_with("a shuffle cell"));
        // The pair counts as one: whichever binds second fails.
        let mut pair = finding(Lang::Python, None, &["b"]);
        pair.class = Class::HostResource;
        pair.beside = vec!["a".into()];
        assert_eq!(
            together(&pair),
            Some(vec!["a".to_string(), "b".to_string()])
        );
        pair.beside.clear();
        assert_eq!(together(&pair), None);

        let decided = decide(
            &[item((0, 6), (0, 6), None), item((6, 6), (0, 6), None)],
            0.95,
            false,
        );
        let mut cells = decided.clone();
        cells[0].cell = Some("tz=Pacific/Kiritimati".into());
        cells[1].cell = Some("tz=Pacific/Pago_Pago".into());
        let best = best(cells).unwrap();
        assert_eq!(best.status, Status::Proven);
        assert_eq!(best.cell.as_deref(), Some("tz=Pacific/Pago_Pago"));
        assert_eq!(
            best.reason.as_deref(),
            Some("also tried under tz=Pacific/Kiritimati: not shown (session s1)")
        );
        // Neither flips it: not shown, never proven.
        let neither = decide(
            &[item((0, 6), (0, 6), None), item((1, 6), (0, 6), None)],
            0.95,
            false,
        );
        assert_eq!(super::best(neither).unwrap().status, Status::NotShown);
        assert!(super::best(Vec::new()).is_none());
    }

    #[test]
    fn several_rust_tests_are_libtest_filters_after_one_exact_and_js_runs_its_own_binary() {
        let recipes = crate::catalog::recipe::load(None).unwrap();
        let recipe = |name: &str| recipes.iter().find(|r| r.name == name).unwrap();
        let ids: Vec<String> = ["a", "b"].iter().map(|s| s.to_string()).collect();
        let dir = std::path::Path::new("/");
        let cargo = runner_command(Lang::Rust, &Ok(Vec::new()), "").unwrap();
        assert_eq!(
            select_argv(recipe("cargo-test"), &cargo, &ids, dir)
                .unwrap()
                .join(" "),
            // `--exact` twice: libtest refuses it.
            "cargo test --no-fail-fast --tests -- --exact a b"
        );
        let local = std::path::Path::new("/p/node_modules/.bin/vitest");
        let vitest = js_command("vitest", Some(local)).unwrap();
        assert_eq!(vitest.join(" "), "/p/node_modules/.bin/vitest run");
        assert_eq!(
            select_argv(recipe("vitest"), &vitest, &ids, dir)
                .unwrap()
                .join(" "),
            "/p/node_modules/.bin/vitest run -t ^(a|b)$"
        );
        let jest = js_command(
            "jest",
            Some(std::path::Path::new("/p/node_modules/.bin/jest")),
        );
        assert_eq!(jest.unwrap().join(" "), "/p/node_modules/.bin/jest");
        assert_eq!(js_command("node", None).unwrap().join(" "), "node --test");
    }

    #[test]
    fn a_subdirectorys_tests_are_named_and_run_from_the_project_root() {
        // Scanned `tests/sub` of a project: pytest ids gain the path, the
        // other runners' names do not; go test runs the subtree's packages.
        let prefix = "tests/sub/";
        assert_eq!(
            runner_id(Lang::Python, "test_a.py::TestK::test_b", prefix),
            "tests/sub/test_a.py::TestK::test_b"
        );
        assert_eq!(runner_id(Lang::Go, "TestA", prefix), "TestA");
        assert_eq!(
            runner_id(Lang::TypeScript, "labels today", prefix),
            "labels today"
        );
        assert_eq!(runner_id(Lang::Rust, "clock_today", prefix), "clock_today");
        let mut port = finding(Lang::Python, Some("workers=2x"), &["test_p.py::a"]);
        port.class = Class::HostResource;
        port.beside = vec!["test_p.py::b".into()];
        let mut writer = finding(Lang::Python, Some("shuffle"), &["test_w.py::w"]);
        writer.class = Class::GlobalState;
        let findings = [
            for_runner(&port, prefix),
            for_runner(&writer, prefix),
            for_runner(&finding(Lang::Go, Some("netns"), &["TestA"]), prefix),
        ];
        assert_eq!(findings[0].tests, ["tests/sub/test_p.py::a"]);
        assert_eq!(findings[0].beside, ["tests/sub/test_p.py::b"]);
        assert_eq!(
            findings[0].command, port.command,
            "the printed command stays"
        );
        let (groups, now) = plan(&findings, 0.95, &Ok(Vec::new()), prefix);
        assert_eq!(
            groups[0].together,
            [vec!["tests/sub/test_p.py::a", "tests/sub/test_p.py::b"]]
        );
        assert_eq!(groups[1].command.join(" "), "go test ./tests/sub/...");
        assert_eq!(
            runner_command(Lang::Go, &Ok(Vec::new()), "")
                .unwrap()
                .join(" "),
            "go test ./..."
        );
        // The whole shuffle command runs the scanned tree's tests only.
        assert_eq!(
            now[0].1.command.as_deref(),
            Some(
                "flakelab run -n 20 -p shuffle -- python3 -m pytest -p no:cacheprovider tests/sub"
            )
        );
    }

    #[test]
    fn ids_the_reports_name_from_another_root_leave_the_finding_unmeasured_and_say_so() {
        let mut m = item((0, 0), (0, 0), None);
        m.tests[0].test = "tests/sub/test_a.py::test_b".into();
        m.strays = vec!["sub/test_a.py::test_b".into()];
        let got = decide(&[m], 0.95, false);
        assert_eq!(got[0].status, Status::Unconfirmed);
        assert_eq!(got[0].p, None, "nothing measured, no p");
        let why = got[0].reason.as_deref().unwrap();
        assert!(
            why.contains("the reports name sub/test_a.py::test_b where the scan selected tests/sub/test_a.py::test_b"),
            "{why}"
        );
        assert_eq!(got[0].command.as_deref(), Some("flakelab report s1"));
    }

    #[test]
    fn several_go_tests_select_as_one_anchored_alternation() {
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let go = ids(&["-count=1", "-run", "^{id_re}$"]);
        assert_eq!(
            selection(&ids(&["TestA", "TestB"]), false, &go).unwrap(),
            ["(TestA|TestB)"]
        );
        assert_eq!(selection(&ids(&["TestA"]), false, &go).unwrap(), ["TestA"]);
        assert!(selection(&ids(&["TestA/x", "TestB"]), false, &go).is_err());
        assert!(selection(&ids(&["a", "b"]), false, &ids(&["--only", "{id}"])).is_err());
        assert_eq!(
            selection(&ids(&["a", "b"]), true, &ids(&["{id}"])).unwrap(),
            ["a", "b"]
        );
    }
}
