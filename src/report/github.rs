//! The report for GitHub Actions (`--format github`, `--summary auto`): the
//! step summary in GitHub-flavoured Markdown (a compact table of the cells,
//! the tests that differ, a link to the forest plot's SVG artifact, the
//! repro lines in a collapsed block) and one annotation per (test, cell)
//! row that differs. It summarises: at most [`MAX_TESTS`] test rows and
//! [`MAX_ANNOTATIONS`] annotations, then a count of the rest, so a session
//! of any size stays far below GitHub's 1 MiB summary limit. Pure.

use std::fmt::Write as _;

use super::beside::CiHistory;
use super::gha::{self, Level};
use super::markup::{walk, Markup};
use super::per_test::TestRow;
use super::text::{md_block, md_cell_code, md_code, one_line};
use super::{CellReport, Confirmation, Report};

/// Test rows listed in the summary (the rest are counted).
pub const MAX_TESTS: usize = 30;
/// Annotations written (the rest are counted in one notice).
pub const MAX_ANNOTATIONS: usize = 20;
/// Repro lines in the collapsed block.
pub const MAX_REPROS: usize = 20;

/// Where the forest plot's SVG was written, and where a reader finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlotLink {
    /// The file, as the step wrote it (relative to the workspace when it can).
    pub path: String,
    /// The run's artifacts page, when the Actions variables name it.
    pub url: Option<String>,
}

/// The artifacts page of the current workflow run, from Actions' own
/// variables (`GITHUB_SERVER_URL`, `GITHUB_REPOSITORY`, `GITHUB_RUN_ID`).
pub fn artifacts_url(var: impl Fn(&str) -> Option<String>) -> Option<String> {
    Some(format!(
        "{}/{}/actions/runs/{}#artifacts",
        var("GITHUB_SERVER_URL")?.trim_end_matches('/'),
        var("GITHUB_REPOSITORY")?,
        var("GITHUB_RUN_ID")?
    ))
}

/// Text in a table cell or a list item: a line break as a space, other
/// control characters escaped, pipes escaped.
fn cell_md(text: &str) -> String {
    one_line(&text.replace('\n', " ")).replace('|', "\\|")
}

/// A code span a table cell can hold.
fn code(text: &str) -> String {
    md_cell_code(text)
}

fn differs(c: &CellReport) -> bool {
    c.vs_baseline.as_ref().is_some_and(|v| v.differs)
}

/// The file a test id names, when its runner puts one first (pytest's
/// `tests/test_a.py::test_b`, node's `test/a.test.js > name`): the part
/// before `::` or ` > ` when it looks like a path with an extension.
pub fn test_file(id: &str) -> Option<&str> {
    let head = id.split("::").next()?.split(" > ").next()?.trim();
    let name = head.rsplit('/').next()?;
    let (stem, ext) = name.rsplit_once('.')?;
    let path_like = !stem.is_empty()
        && !ext.is_empty()
        && ext.len() <= 5
        && ext.chars().all(|c| c.is_ascii_alphanumeric())
        && !head.contains(' ')
        && head != id;
    path_like.then_some(head)
}

/// The step summary.
pub fn summary(report: &Report, plot: Option<&PlotLink>) -> String {
    let mut summary = Summary {
        out: String::new(),
        plot,
    };
    walk(report, &mut summary);
    summary.out
}

/// The step summary's markup: GitHub-flavoured Markdown, compact (a
/// summary of the report: capped lists, no design sections).
struct Summary<'a> {
    out: String,
    plot: Option<&'a PlotLink>,
}

impl Markup for Summary<'_> {
    fn code(&self, text: &str) -> String {
        code(text)
    }

    fn lead(&mut self, term: &str, rest: &str) {
        let _ = writeln!(self.out, "\n**{term}**{rest}\n");
    }

    fn item(&mut self, text: &str) {
        let _ = writeln!(self.out, "- {}", cell_md(text));
    }

    fn header(&mut self, report: &Report) {
        let out = &mut self.out;
        let pct = (report.confidence * 100.0).round();
        let verdict = match report.exit_code() {
            0 => "no cell differs from the baseline".to_string(),
            1 => super::finding_text(report).to_string(),
            3 => "a perturbation was **not applied**".to_string(),
            2 => "nothing was measured".to_string(),
            4 => undecided_text(report),
            130 => "**interrupted** before it could decide (what ran is below)".to_string(),
            _ => "see the report".to_string(),
        };
        let _ = writeln!(
            out,
            "### flakelab `{}`: {verdict}\n",
            report.session.replace('`', "'")
        );
        let _ = writeln!(
            out,
            "{} · seed {} · {} · {pct}% Clopper–Pearson intervals\n",
            code(&crate::repro::join(&report.command)),
            report.seed,
            super::runs_text(report)
        );
    }

    fn cells(&mut self, report: &Report) {
        let out = &mut self.out;
        let _ = writeln!(
            out,
            "| cell | {} | interval | vs baseline |",
            super::failure_heading(report)
        );
        let _ = writeln!(out, "| --- | ---: | --- | --- |");
        for c in &report.cells {
            let mark = if !c.applied {
                " ⚠ not applied"
            } else if c.sham_of.is_some() {
                " (sham)"
            } else if differs(c) {
                " ❗"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "| {}{mark} | {} of {} | {} | {} |",
                code(&c.name),
                c.k,
                c.n,
                cell_md(&super::interval_text(c)),
                cell_md(&super::versus_text(c))
            );
        }
    }

    fn tests(&mut self, report: &Report) {
        let out = &mut self.out;
        let rows = super::html::test_rows(report);
        if !rows.is_empty() {
            let _ = writeln!(
                out,
                "\n{} (test, cell) row(s) differ from the baseline, largest effect first:\n",
                rows.len()
            );
            let _ = writeln!(out, "| test | cell | failed | baseline |");
            let _ = writeln!(out, "| --- | --- | ---: | ---: |");
            for r in rows.iter().take(MAX_TESTS) {
                let base = report
                    .cells
                    .iter()
                    .find(|c| c.name == "baseline")
                    .and_then(|b| b.tests.iter().find(|t| Some(&t.id) == r.test.as_ref()))
                    .map(|t| format!("{} of {}", t.k, t.n))
                    .unwrap_or_else(|| "—".into());
                let _ = writeln!(
                    out,
                    "| {} | {} | {} of {} | {base} |",
                    code(r.test.as_deref().unwrap_or("")),
                    code(&r.cell),
                    r.k,
                    r.n
                );
            }
            if rows.len() > MAX_TESTS {
                let _ = writeln!(
                    out,
                    "\n…and {} more; `flakelab report --format html` lists them all.",
                    rows.len() - MAX_TESTS
                );
            }
        }
    }

    fn under(&mut self, report: &Report) {
        let (out, plot) = (&mut self.out, self.plot);
        if let Some(p) = plot {
            match &p.url {
                Some(url) => {
                    let _ = writeln!(
                        out,
                        "\nForest plot: [{}]({}) (an artifact of this run, when the workflow uploads it).",
                        one_line(&p.path),
                        one_line(url)
                    );
                }
                None => {
                    let _ = writeln!(out, "\nForest plot: {}.", md_code(&p.path));
                }
            }
        }
        let failures = super::shown_failures(report);
        if !failures.is_empty() {
            let _ = writeln!(
                out,
                "\n<details><summary>Repro lines ({})</summary>\n",
                failures.len()
            );
            for (c, f) in failures.iter().take(MAX_REPROS) {
                let _ = writeln!(
                    out,
                    "First failure in {} (run {}):\n\n{}\n",
                    md_code(&c.name),
                    md_code(&f.run),
                    md_block("sh", [f.repro.as_str()])
                );
            }
            if failures.len() > MAX_REPROS {
                let _ = writeln!(out, "…and {} more.\n", failures.len() - MAX_REPROS);
            }
            let _ = writeln!(out, "</details>");
        }
        let notes = super::notes(report);
        if !notes.is_empty() {
            let _ = writeln!(out);
            for n in notes.iter().take(10) {
                let _ = writeln!(out, "- {}", cell_md(n));
            }
        }
    }

    // The summary leaves the design sections to the full report.
    fn design_chosen(&mut self, _why: &str) {}
    fn prove(&mut self, _lines: &[String]) {}
    fn undecided(&mut self, _rows: &[(&str, &TestRow)]) {}
    fn screen(&mut self, _design: &crate::screen::DesignSummary, _confirmed: &[(&str, &TestRow)]) {}
    fn confirmations(&mut self, _confirmations: &[Confirmation]) {}
    fn history(&mut self, _history: &CiHistory) {}
}

/// The annotations: an error per (test, cell) row that differs (on its
/// file when the test id names one), a warning per cell that differs with
/// no test to blame and per cell not applied; at most
/// [`MAX_ANNOTATIONS`], then one notice counting the rest.
pub fn annotations(report: &Report) -> String {
    let mut lines = Vec::new();
    for r in super::html::test_rows(report) {
        let test = r.test.as_deref().unwrap_or("");
        let base = r
            .baseline
            .map(|(rate, _, _)| format!(" (baseline rate {rate:.3})"))
            .unwrap_or_default();
        lines.push(gha::annotation(
            Level::Error,
            test_file(test),
            None,
            &format!("flakelab: {test} differs under {}", r.cell),
            &format!(
                "{test} failed {} of {} runs in cell {}{base}, {:.0}% interval [{:.3}, {:.3}]; session {}",
                r.k,
                r.n,
                r.cell,
                report.confidence * 100.0,
                r.low,
                r.high,
                report.session
            ),
        ));
    }
    for c in &report.cells {
        if !c.applied {
            lines.push(gha::annotation(
                Level::Warning,
                None,
                None,
                &format!("flakelab: {} not applied", c.name),
                &super::applied_text(c, None),
            ));
        } else if differs(c) && !c.tests.iter().any(super::per_test::TestRow::differs) {
            lines.push(gha::annotation(
                Level::Error,
                None,
                None,
                &format!("flakelab: cell {} differs", c.name),
                &format!(
                    "{} of {} runs failed, {}; {}",
                    c.k,
                    c.n,
                    super::interval_text(c),
                    super::versus_text(c)
                ),
            ));
        }
    }
    let mut out = String::new();
    let total = lines.len();
    for l in lines.iter().take(MAX_ANNOTATIONS) {
        out.push_str(l);
        out.push('\n');
    }
    if total > MAX_ANNOTATIONS {
        out.push_str(&gha::annotation(
            Level::Notice,
            None,
            None,
            "flakelab",
            &format!(
                "{} more annotation(s) left out; the step summary and `flakelab report` have every row",
                total - MAX_ANNOTATIONS
            ),
        ));
        out.push('\n');
    }
    out
}

/// Exit 4's header: how many (cell or test, cell) pairs were left
/// undecided, and that their rows say what would settle them.
fn undecided_text(report: &Report) -> String {
    let undecided =
        |v: &Option<super::VsBaseline>| v.as_ref().is_some_and(|v| v.undecided.is_some());
    let pairs: usize = (report.cells.iter())
        .map(|c| {
            usize::from(undecided(&c.vs_baseline))
                + c.tests.iter().filter(|t| undecided(&t.vs_baseline)).count()
        })
        .sum();
    format!(
        "**undecided**: {pairs} pair(s) whose raw counts differ were left undecided (a stop is not a verdict; each row says the runs that would settle it)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_file_reads_a_path_first_id() {
        assert_eq!(
            test_file("tests/test_a.py::test_b[x]"),
            Some("tests/test_a.py")
        );
        assert_eq!(test_file("test/a.test.js > adds"), Some("test/a.test.js"));
        assert_eq!(test_file("zone::report_header_is_utc"), None);
        assert_eq!(test_file("pkg.TestName"), None);
        assert_eq!(test_file("a.py"), None);
    }

    #[test]
    fn artifacts_url_needs_all_three_variables() {
        let vars = |k: &str| match k {
            "GITHUB_SERVER_URL" => Some("https://forge.example/".to_string()),
            "GITHUB_REPOSITORY" => Some("o/r".to_string()),
            "GITHUB_RUN_ID" => Some("42".to_string()),
            _ => None,
        };
        assert_eq!(
            artifacts_url(vars).as_deref(),
            Some("https://forge.example/o/r/actions/runs/42#artifacts")
        );
        assert_eq!(artifacts_url(|_| None), None);
    }
}
