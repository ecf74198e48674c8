//! The evergreen dashboard (`flakelab history --dashboard`): one document
//! for a pinned issue or a wiki page, regenerated on a schedule. Per test
//! that failed in the history or sits in the quarantine ledger: its k of N
//! over the last 10 and 50 commits and over all of them, the trend (the
//! last 10 commits against the runs before them, by Fisher's exact test),
//! its last failure with its commit and run (a link to the run's page when
//! `ingest` recorded one), the contexts it fails in, and its ledger entry
//! with owner and expiry. Every value is data: a run's label is escaped and
//! its page is linked only when it is an http(s) URL, percent-encoded so
//! nothing in it leaves the link. Pure: the analyses in, the model and its
//! Markdown or JSON out.

use std::fmt::Write as _;

use serde::Serialize;

use super::text::{md_cell, md_cell_code};
use crate::history::analyse::{Analysis, Fold};
use crate::history::ledger::LedgerEntry;

/// The commit windows, newest first (`None`: every commit).
pub const WINDOWS: [Option<usize>; 3] = [Some(10), Some(50), None];

/// The dashboard.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dashboard {
    /// `flakelab.dashboard/1`.
    pub schema: &'static str,
    /// Reports read.
    pub reports: u64,
    /// The tests, worst recent rate first.
    pub tests: Vec<DashRow>,
}

/// One test's line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DashRow {
    /// The test id.
    pub test: String,
    /// Its k of N per window of [`WINDOWS`].
    pub windows: Vec<Window>,
    /// `worse`, `better`, `steady` (no difference shown) or `new` (no run
    /// before the last 10 commits).
    pub trend: &'static str,
    /// Fisher's exact p of the last 10 commits against the runs before.
    pub trend_p: Option<f64>,
    /// Its last failure, when it failed.
    pub last_failure: Option<LastFailure>,
    /// The contexts it failed in.
    pub fails_in: Vec<String>,
    /// Its quarantine ledger entry.
    pub quarantine: Option<Quarantine>,
}

/// k of N over a window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Window {
    /// The last this many commits (`None`: all).
    pub commits: Option<usize>,
    /// Failures.
    pub k: u64,
    /// Runs.
    pub n: u64,
}

/// The last failing observation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LastFailure {
    /// Its commit, when the report recorded one.
    pub commit: Option<String>,
    /// Its run (the CI provenance `ingest` recorded).
    pub run: Option<String>,
    /// The run's page (an http(s) URL), when `ingest` recorded one.
    pub run_url: Option<String>,
}

/// A ledger entry, as the dashboard shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Quarantine {
    /// Who answers for it.
    pub owner: String,
    /// Its ticket.
    pub ticket: String,
    /// When it ends.
    pub expires: String,
    /// Whether it has ended (`check` fails on it).
    pub expired: bool,
}

/// The dashboard from the analyses of [`WINDOWS`] (in that order), the
/// fold they came from, the ledger, and today's date.
pub fn build(
    windows: &[Analysis],
    fold: &Fold,
    ledger: &[LedgerEntry],
    today: jiff::civil::Date,
) -> Dashboard {
    let all = windows.last().expect("the all-commits analysis");
    let mut tests = Vec::new();
    for t in &all.tests {
        let entry = ledger.iter().find(|e| e.id == t.test);
        if t.k == 0 && entry.is_none() {
            continue;
        }
        let counts: Vec<Window> = WINDOWS
            .iter()
            .zip(windows)
            .map(|(w, a)| {
                let h = a.tests.iter().find(|x| x.test == t.test);
                Window {
                    commits: *w,
                    k: h.map_or(0, |h| h.k),
                    n: h.map_or(0, |h| h.n),
                }
            })
            .collect();
        let (recent, whole) = (&counts[0], &counts[counts.len() - 1]);
        let (ko, no) = (whole.k - recent.k, whole.n - recent.n);
        let (trend, trend_p) = if no == 0 || recent.n == 0 {
            ("new", None)
        } else {
            let p = crate::stats::fisher_exact(recent.k, recent.n - recent.k, ko, no - ko);
            let recent_rate = recent.k as f64 / recent.n as f64;
            let before = ko as f64 / no as f64;
            let word = match p < 0.05 {
                false => "steady",
                true if recent_rate > before => "worse",
                true => "better",
            };
            (word, Some(p))
        };
        let last_failure = fold
            .rows
            .iter()
            .rfind(|r| r.test == t.test && r.counts.bad() > 0)
            .map(|r| {
                let run = r.counts.failing_runs.last().cloned();
                let run_url = (r.last_failing_url.as_deref())
                    .and_then(|u| crate::history::context::run_url(u).ok());
                LastFailure {
                    commit: r.commit.clone(),
                    run,
                    run_url,
                }
            });
        tests.push(DashRow {
            test: t.test.clone(),
            windows: counts,
            trend,
            trend_p,
            last_failure,
            fails_in: t
                .contexts
                .iter()
                .filter(|c| c.k > 0)
                .map(|c| c.context.clone())
                .collect(),
            quarantine: entry.map(|e| Quarantine {
                owner: e.owner.clone(),
                ticket: e.ticket.clone(),
                expires: e.expires.clone(),
                expired: e.expired(today),
            }),
        });
    }
    let rate = |r: &DashRow| {
        let w = &r.windows[0];
        if w.n == 0 {
            0.0
        } else {
            w.k as f64 / w.n as f64
        }
    };
    tests.sort_by(|a, b| {
        rate(b)
            .total_cmp(&rate(a))
            .then_with(|| a.test.cmp(&b.test))
    });
    Dashboard {
        schema: crate::record::schema::DASHBOARD_SCHEMA,
        reports: all.reports,
        tests,
    }
}

fn kn(w: &Window) -> String {
    match w.n {
        0 => "no run".to_string(),
        n => format!("{} of {n} ({:.0}%)", w.k, 100.0 * w.k as f64 / n as f64),
    }
}

/// The Markdown document.
pub fn markdown(d: &Dashboard) -> String {
    let mut s = String::from("## Flaky tests: flakelab dashboard\n\n");
    s.push_str("<!-- Regenerated by `flakelab history --format markdown --dashboard`: edits are overwritten. -->\n\n");
    let quarantined = d.tests.iter().filter(|t| t.quarantine.is_some()).count();
    let _ = writeln!(
        s,
        "{} test(s) failed in the history of {} report(s) or are quarantined ({quarantined} quarantined). Rates are k of N runs over the last 10 and 50 commits each test ran on, and over all; the trend compares the last 10 commits with the runs before them (Fisher's exact test, 5%).\n",
        d.tests.len(),
        d.reports
    );
    if d.tests.is_empty() {
        s.push_str("No test failed.\n");
        return s;
    }
    s.push_str("| test | last 10 commits | last 50 commits | all | trend | last failure | fails in | quarantine |\n");
    s.push_str("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for t in &d.tests {
        let trend = match t.trend_p {
            Some(p) => format!("{} ({})", t.trend, crate::stats::p_text(p)),
            None => t.trend.to_string(),
        };
        let last = match &t.last_failure {
            Some(f) => {
                let mut parts = Vec::new();
                if let Some(c) = &f.commit {
                    parts.push(md_cell_code(&c.chars().take(12).collect::<String>()));
                }
                match (&f.run, &f.run_url) {
                    (Some(r), Some(u)) => parts.push(md_link(r, u)),
                    (Some(r), None) => parts.push(md_cell(r)),
                    (None, _) => {}
                }
                if parts.is_empty() {
                    "commit unknown".to_string()
                } else {
                    parts.join(" · ")
                }
            }
            None => "—".to_string(),
        };
        let quarantine = match &t.quarantine {
            Some(q) => format!(
                "{} · {} · {} {}",
                md_cell(&q.owner),
                md_cell(&q.ticket),
                if q.expired { "**expired**" } else { "until" },
                q.expires
            ),
            None => "—".to_string(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {trend} | {last} | {} | {quarantine} |",
            md_cell_code(&t.test),
            kn(&t.windows[0]),
            kn(&t.windows[1]),
            kn(&t.windows[2]),
            md_cell(&t.fails_in.join("; ")),
        );
    }
    s
}

/// `[text](url)` for a table cell: every ASCII punctuation character of
/// the text backslash-escaped (no markup, HTML or cell break survives), and
/// every byte of the URL outside the characters a URL needs
/// percent-encoded (no `(`, `)`, `<`, `>`, `|`, quote or space).
fn md_link(text: &str, url: &str) -> String {
    let mut t = String::new();
    for c in super::text::one_line(text).chars() {
        if c.is_ascii_punctuation() {
            t.push('\\');
        }
        t.push(c);
    }
    let mut u = String::new();
    for b in url.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~:/?#@!$&*+,;=%".contains(&b) {
            u.push(b as char);
        } else {
            let _ = write!(u, "%{b:02X}");
        }
    }
    format!("[{t}]({u})")
}

/// The JSON document.
pub fn json(d: &Dashboard) -> String {
    let mut s = serde_json::to_string_pretty(d).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_id_with_pipes_and_backticks_stays_in_its_cell() {
        let d = Dashboard {
            schema: "flakelab.dashboard/1",
            reports: 1,
            tests: vec![DashRow {
                test: "a|b`c\nd".into(),
                windows: WINDOWS
                    .iter()
                    .map(|w| Window {
                        commits: *w,
                        k: 1,
                        n: 2,
                    })
                    .collect(),
                trend: "new",
                trend_p: None,
                last_failure: Some(LastFailure {
                    commit: Some("0123456789abcdef".into()),
                    run: Some("run | 7".into()),
                    run_url: None,
                }),
                fails_in: vec!["os=linux".into()],
                quarantine: None,
            }],
        };
        let md = markdown(&d);
        let row = md.lines().last().unwrap();
        let cells = row.replace("\\|", "").matches('|').count();
        assert_eq!(cells, 9, "{row}");
        assert!(row.contains("0123456789ab"), "{row}");
        assert!(!row.contains("0123456789abc"), "a short commit: {row}");
        assert!(row.contains("1 of 2 (50%)"), "{row}");
    }

    #[test]
    fn a_hostile_run_label_and_page_stay_inside_their_link() {
        let link = md_link(
            "run 7](javascript:x) <script>alert(1)</script>\n| x",
            "https://ci.example/a)b](c)<script>\n|\"'`x\\y",
        );
        assert_eq!(
            link,
            "[run 7\\]\\(javascript\\:x\\) \\<script\\>alert\\(1\\)\\<\\/script\\>\\\\n\\| x]\
             (https://ci.example/a%29b%5D%28c%29%3Cscript%3E%0A%7C%22%27%60x%5Cy)"
        );
        // One link: the only unescaped brackets are its own.
        let unescaped = |c: char| {
            let b = link.as_bytes();
            (0..b.len())
                .filter(|&i| b[i] == c as u8 && (i == 0 || b[i - 1] != b'\\'))
                .count()
        };
        assert_eq!((unescaped('['), unescaped(']')), (1, 1), "{link}");
        assert_eq!((unescaped('('), unescaped(')')), (1, 1), "{link}");
        assert!(!link.contains('\n') && !link.contains(" |"), "{link}");
    }

    /// The dashboard of reports of test `t` on commit `c1`, each from run
    /// 77 with its page and outcome.
    fn board(reports: &[(&str, crate::record::CaseOutcome)]) -> Dashboard {
        let mut fold = Fold::new();
        for (i, (url, outcome)) in reports.iter().enumerate() {
            let r = crate::history::ReportRecord {
                schema: crate::history::REPORT_SCHEMA.into(),
                key: format!("k{i}"),
                context: Default::default(),
                commit: Some("c1".into()),
                provenance: crate::history::Provenance {
                    run: Some("77".into()),
                    url: Some(url.to_string()),
                    ..Default::default()
                },
                path: "j.xml".into(),
                digest: "d".into(),
                n: 1,
                infra: Vec::new(),
            };
            let obs = [crate::history::Observation {
                test: "t".into(),
                outcome: *outcome,
                retried: false,
                rep: 0,
                file: None,
                line: None,
            }];
            fold.add(crate::history::Item::Report(&r, &obs));
        }
        let windows: Vec<Analysis> = WINDOWS
            .iter()
            .map(|w| {
                let opts = crate::history::analyse::Options {
                    commits: *w,
                    ..Default::default()
                };
                crate::history::analyse::analyse(&fold, &opts)
            })
            .collect();
        build(&windows, &fold, &[], "2026-12-07".parse().unwrap())
    }

    #[test]
    fn the_last_failure_links_its_run_only_to_an_http_page() {
        use crate::record::CaseOutcome::{Failed, Passed};
        let page = "https://github.com/acme/shop/actions/runs/77";
        let ok = board(&[(page, Failed)]);
        let last = ok.tests[0].last_failure.as_ref().unwrap();
        assert_eq!(last.run_url.as_deref(), Some(page));
        let md = markdown(&ok);
        assert!(md.contains(&format!("[run 77]({page})")), "{md}");
        assert!(json(&ok).contains(&format!("\"run_url\": \"{page}\"")));
        // Another job of the same run that passed, with its own page: the
        // link stays the failing job's.
        let jobs = board(&[
            ("https://gl.example/p/-/jobs/1", Failed),
            ("https://gl.example/p/-/jobs/2", Passed),
        ]);
        let last = jobs.tests[0].last_failure.as_ref().unwrap();
        assert_eq!(
            last.run_url.as_deref(),
            Some("https://gl.example/p/-/jobs/1")
        );
        // A page that is not http(s) (a store edited by hand) is no link.
        let bad = board(&[("javascript:alert(1)", Failed)]);
        assert_eq!(bad.tests[0].last_failure.as_ref().unwrap().run_url, None);
        let md = markdown(&bad);
        assert!(
            md.contains(" run 77 |") && !md.contains("javascript"),
            "{md}"
        );
    }
}
