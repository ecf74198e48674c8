//! `report --format html` opened in headless Chromium (Debian's
//! `chromium`): every cell and every differing (test, cell) row plotted
//! with the JSON report's bounds, the per-test table sorting and
//! filtering, and no network request made. A screenshot is kept under the
//! target directory. The page is driven by a script appended to a copy of
//! it, which acts and writes what it saw into the DOM that `--dump-dom`
//! prints: no timing window (inline scripts run before the dump).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::fake::{fake, script};
use super::{capable, Lab};

fn suite(cases: &str) -> String {
    format!("<testsuite name='s' tests='3'>{cases}</testsuite>")
}

/// A session with a differing cell, a not-applied cell, two shams and a
/// test that fails once in every cell.
pub(super) fn fixture(lab: &Lab) {
    let ok = "<testcase classname='tests.test_a' name='test_ok'/>";
    let zone_fails =
        "<testcase classname='tests.test_a' name='test_zone'><failure message='offset'/></testcase>";
    let zone = "<testcase classname='tests.test_a' name='test_zone'/>";
    let flaky_fails =
        "<testcase classname='tests.test_a' name='test_flaky'><failure message='race'/></testcase>";
    let flaky = "<testcase classname='tests.test_a' name='test_flaky'/>";
    let text = format!(
        "[[probe]]\ncell = \"netns\"\napplied = false\nreason = \"netns: the kernel refused a new namespace\"\n\
         [[run]]\ncell = \"tz=Pacific/Kiritimati\"\nexit = 1\njunit = \"{}\"\n\
         [[run]]\nreplicate = 3\nexit = 1\njunit = \"{}\"\n\
         [[run]]\njunit = \"{}\"\n",
        suite(&format!("{ok}{zone_fails}{flaky}")),
        suite(&format!("{ok}{zone}{flaky_fails}")),
        suite(&format!("{ok}{zone}{flaky}")),
    );
    let s = script(lab, &text);
    let out = fake(
        lab,
        &s,
        &[
            "run",
            "-n",
            "10",
            "--seed",
            "5",
            "-p",
            "tz=Pacific/Kiritimati",
            "-p",
            "netns",
            "--",
            "subject",
            "--junit={junit}",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

const DRIVER: &str = r#"<script>
(function(){
  var r={};
  r.resources=performance.getEntriesByType('resource').map(function(e){return e.name;});
  r.external=Array.prototype.filter.call(document.querySelectorAll('[src],[href]'),function(e){
    var v=e.getAttribute('src')||e.getAttribute('href');return v&&v.charAt(0)!=='#';}).length;
  r.rows=Array.prototype.map.call(document.querySelectorAll('svg.forest g.row'),function(g){
    var ci=g.querySelector('line.ci');
    return {plot:g.closest('svg').id,cell:g.getAttribute('data-cell'),test:g.getAttribute('data-test'),
      k:+g.getAttribute('data-k'),n:+g.getAttribute('data-n'),
      low:g.getAttribute('data-low'),high:g.getAttribute('data-high'),kind:g.getAttribute('class'),
      label:g.getAttribute('aria-label'),title:g.querySelector('title').textContent,
      x1:ci?+ci.getAttribute('x1'):null,x2:ci?+ci.getAttribute('x2'):null,
      axis_x:+g.closest('svg').getAttribute('data-label-width'),axis_w:+g.closest('svg').getAttribute('data-axis-width')};});
  var table=document.getElementById('tests-table');
  function col(i){return Array.prototype.filter.call(table.tBodies[0].rows,function(tr){return !tr.hidden;})
    .map(function(tr){return tr.cells[i].getAttribute('data-sort');});}
  var rate=table.tHead.rows[0].cells[3].querySelector('button');
  rate.click(); r.asc=col(3); r.asc_sort=table.tHead.rows[0].cells[3].getAttribute('aria-sort');
  rate.click(); r.desc=col(3); r.desc_sort=table.tHead.rows[0].cells[3].getAttribute('aria-sort');
  table.tHead.rows[0].cells[0].querySelector('button').click(); r.by_test=col(0);
  var f=document.getElementById('filter');
  f.value='ZONE'; f.dispatchEvent(new Event('input')); r.filtered=col(0); r.count=document.getElementById('filter-count').textContent;
  f.value=''; f.dispatchEvent(new Event('input'));
  var d=document.getElementById('filter-differs'); d.checked=true; d.dispatchEvent(new Event('change')); r.differing=col(1);
  r.copy_buttons=document.querySelectorAll('button.copy').length;
  r.after=performance.getEntriesByType('resource').length;
  var out=document.createElement('pre'); out.id='driver-result'; out.textContent=JSON.stringify(r); document.body.appendChild(out);
})();
</script>"#;

/// The URL requests a page made, from Chromium's network log: every
/// `URL_REQUEST_START_JOB` but the browser's own (whose initiator is "not
/// an origin": its update and account checks, which the flags do not stop).
fn page_requests(netlog: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(netlog).expect("chromium wrote its network log");
    let log: Value = serde_json::from_str(&text).expect("the network log is JSON");
    let start = &log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"];
    assert!(
        start.is_u64(),
        "no URL_REQUEST_START_JOB in the log's constants"
    );
    log["events"]
        .as_array()
        .unwrap()
        .iter()
        // The begin events carry the URL (the end events only an error).
        .filter(|e| &e["type"] == start && e["params"]["url"].is_string())
        .filter(|e| e["params"]["initiator"] != "not an origin")
        .map(|e| e["params"]["url"].as_str().unwrap().to_string())
        .collect()
}

/// The network check catches a page that fetches something.
#[test]
fn the_network_check_sees_a_page_that_fetches() {
    if !capable("chromium", super::sh_ok("command -v chromium")) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("fetches.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><img src=\"http://127.0.0.1:9/planted.png\" alt=\"\"></body></html>",
    )
    .unwrap();
    let netlog = dir.path().join("netlog.json");
    chromium(&dir.path().join("profile"))
        .arg(format!("--log-net-log={}", netlog.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let seen = page_requests(&netlog);
    assert!(
        seen.iter().any(|u| u.ends_with("/planted.png")),
        "the planted request is not seen: {seen:?}"
    );
}

/// Chromium with the issue's flags and a fresh profile directory.
pub(super) fn chromium(profile: &Path) -> Command {
    let mut c = Command::new("chromium");
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

pub(super) fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// Where artifacts of this test are kept: under the target directory.
pub(super) fn artifact_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html-report");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_html_report_plots_every_cell_and_differing_test_with_the_json_bounds_in_chromium() {
    if !capable("chromium", super::sh_ok("command -v chromium")) {
        return;
    }
    let lab = Lab::new();
    fixture(&lab);
    let json: Value =
        serde_json::from_slice(&lab.run(&["report", "--format", "json"]).stdout).unwrap();
    let html = lab.run(&["report", "--format", "html"]);
    assert_eq!(html.status.code(), Some(1));
    let page = String::from_utf8(html.stdout).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
    for banned in ["http://", "https://", "url(", "@import"] {
        assert!(!page.contains(banned), "the page names `{banned}`");
    }
    let art = artifact_dir();
    std::fs::write(art.join("fixture.html"), &page).unwrap();
    let driven = art.join("fixture-driven.html");
    std::fs::write(
        &driven,
        page.replace("</body>", &format!("{DRIVER}</body>")),
    )
    .unwrap();

    let profile = tempfile::tempdir().unwrap();
    let netlog = profile.path().join("netlog.json");
    let dom = chromium(&profile.path().join("p1"))
        .arg(format!("--log-net-log={}", netlog.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", driven.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&dom.stdout);
    let start = dom
        .find("<pre id=\"driver-result\">")
        .expect("the driver ran")
        + 24;
    let end = start + dom[start..].find("</pre>").unwrap();
    let r: Value = serde_json::from_str(&unescape(&dom[start..end])).unwrap();

    // No network: nothing fetched, nothing linked, and no URL request in
    // Chromium's own network log.
    assert_eq!(r["resources"], serde_json::json!([]), "{r:#}");
    assert_eq!(r["after"], 0);
    assert_eq!(r["external"], 0);
    assert_eq!(page_requests(&netlog), Vec::<String>::new());

    // Every cell is plotted with the JSON report's bounds.
    let rows = r["rows"].as_array().unwrap();
    let cells: Vec<&Value> = rows.iter().filter(|x| x["plot"] == "plot-cells").collect();
    let want = json["cells"].as_array().unwrap();
    assert_eq!(cells.len(), want.len(), "{r:#}");
    for (got, c) in cells.iter().zip(want) {
        assert_eq!(got["cell"], c["name"]);
        assert_eq!(
            (got["k"].as_u64(), got["n"].as_u64()),
            (c["k"].as_u64(), c["n"].as_u64())
        );
        let low: f64 = got["low"].as_str().unwrap().parse().unwrap();
        let high: f64 = got["high"].as_str().unwrap().parse().unwrap();
        assert_eq!(low, c["low"].as_f64().unwrap(), "{got}");
        assert_eq!(high, c["high"].as_f64().unwrap(), "{got}");
        if c["n"].as_u64().unwrap() > 0 {
            // Drawn where the bounds say (the axis starts after the
            // label column, sized to the widest label).
            let (x0, w) = (
                got["axis_x"].as_f64().unwrap(),
                got["axis_w"].as_f64().unwrap(),
            );
            assert!(x0 >= 160.0 && w == 440.0, "{got}");
            assert!(
                (got["x1"].as_f64().unwrap() - (x0 + w * low)).abs() < 0.01,
                "{got}"
            );
            assert!(
                (got["x2"].as_f64().unwrap() - (x0 + w * high)).abs() < 0.01,
                "{got}"
            );
        }
        assert!(got["label"]
            .as_str()
            .unwrap()
            .starts_with(c["name"].as_str().unwrap()));
        let kind = got["kind"].as_str().unwrap();
        if c["sham_of"].is_string() {
            assert!(kind.contains("sham"), "{got}");
        }
        if c["applied"] == false {
            assert!(kind.contains("not-applied"), "{got}");
        }
    }
    // Every (test, cell) row that differs is plotted with its bounds.
    let mut differing = Vec::new();
    for c in want {
        for t in c["tests"].as_array().unwrap() {
            if t["vs_baseline"]["differs"] == true {
                differing.push((c["name"].as_str().unwrap(), t));
            }
        }
    }
    let tests: Vec<&Value> = rows.iter().filter(|x| x["plot"] == "plot-tests").collect();
    assert_eq!(tests.len(), differing.len());
    assert!(!differing.is_empty());
    for (cell, t) in differing {
        let got = tests
            .iter()
            .find(|x| x["cell"] == cell && x["test"] == t["id"])
            .unwrap_or_else(|| panic!("{cell} {} not plotted", t["id"]));
        let low: f64 = got["low"].as_str().unwrap().parse().unwrap();
        let high: f64 = got["high"].as_str().unwrap().parse().unwrap();
        assert_eq!(
            (low, high),
            (t["low"].as_f64().unwrap(), t["high"].as_f64().unwrap())
        );
    }

    // Sorting by rate both ways, then by test; filtering by text and by differing.
    let nums = |v: &Value| -> Vec<f64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().parse().unwrap())
            .collect()
    };
    let asc = nums(&r["asc"]);
    let mut sorted = asc.clone();
    sorted.sort_by(f64::total_cmp);
    assert_eq!(asc, sorted, "{r:#}");
    assert!(
        asc.first() < asc.last(),
        "the fixture has rates to sort: {asc:?}"
    );
    let mut desc = nums(&r["desc"]);
    desc.reverse();
    assert_eq!(desc, sorted);
    assert_eq!(
        (r["asc_sort"].as_str(), r["desc_sort"].as_str()),
        (Some("ascending"), Some("descending"))
    );
    let by_test: Vec<&str> = r["by_test"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    let mut names = by_test.clone();
    names.sort();
    assert_eq!(by_test, names);
    assert_eq!(
        r["filtered"],
        serde_json::json!(["tests.test_a::test_zone"]),
        "{r:#}"
    );
    assert!(r["count"].as_str().unwrap().starts_with("1 of "), "{r:#}");
    assert_eq!(
        r["differing"],
        serde_json::json!(["tz=Pacific/Kiritimati"]),
        "{r:#}"
    );
    assert!(r["copy_buttons"].as_u64().unwrap() >= 1);

    // The screenshot, kept as an artifact.
    let shot = art.join("fixture.png");
    let _ = std::fs::remove_file(&shot);
    let out = chromium(&profile.path().join("p2"))
        .args(["--hide-scrollbars", "--window-size=1200,1600"])
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", art.join("fixture.html").display()))
        .output()
        .unwrap();
    let png = std::fs::read(&shot)
        .unwrap_or_else(|_| panic!("no screenshot: {}", String::from_utf8_lossy(&out.stderr)));
    assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000);
}

#[test]
fn evidence_as_html_adds_classification_and_coverage_to_the_report_page() {
    let lab = Lab::new();
    fixture(&lab);
    let out = lab.run(&["evidence", "--format", "html"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = String::from_utf8(out.stdout).unwrap();
    for id in [
        "id=\"plot-cells\"",
        "id=\"plot-tests\"",
        "id=\"classification\"",
        "id=\"coverage\"",
        "id=\"coverage-table\"",
        "id=\"context\"",
    ] {
        assert!(page.contains(id), "no {id}");
    }
    assert!(page.contains("@media print"));
    assert!(!page.contains("https://"));
}

#[test]
fn github_output_annotates_the_differing_test_and_writes_the_step_summary() {
    let lab = Lab::new();
    fixture(&lab);
    // `--format github` outside Actions: annotations, then the summary, on stdout.
    let out = lab
        .cmd()
        .env_remove("GITHUB_STEP_SUMMARY")
        .args(["report", "--format", "github"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("::error title=flakelab%3A tests.test_a%3A%3Atest_zone differs under tz=Pacific/Kiritimati::"),
        "{text}"
    );
    assert!(
        text.contains("::warning title=flakelab%3A netns not applied::"),
        "{text}"
    );
    assert!(text.contains("### flakelab `"), "{text}");
    // `--summary auto` inside Actions: stdout keeps the JSON; the summary is
    // appended to the file, the annotations go to stderr, the plot and the
    // HTML page are written for upload.
    let summary = lab.path().join("step-summary.md");
    std::fs::write(&summary, "earlier step\n").unwrap();
    let out = lab
        .cmd()
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("GITHUB_SERVER_URL", "https://forge.example")
        .env("GITHUB_REPOSITORY", "o/r")
        .env("GITHUB_RUN_ID", "9")
        .args(["report", "--format", "json", "--summary", "auto"])
        .output()
        .unwrap();
    let json: Value = serde_json::from_slice(&out.stdout).expect("stdout is the JSON report");
    let session = json["session"].as_str().unwrap();
    let written = std::fs::read_to_string(&summary).unwrap();
    assert!(
        written.starts_with("earlier step\n### flakelab `"),
        "{written}"
    );
    assert!(
        written.contains(&format!(
            "[flakelab-report/{session}-forest.svg](https://forge.example/o/r/actions/runs/9#artifacts)"
        )),
        "{written}"
    );
    assert!(
        written.contains("<details><summary>Repro lines"),
        "{written}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("::error title=flakelab%3A tests.test_a"),
        "{stderr}"
    );
    let svg = std::fs::read_to_string(
        lab.path()
            .join(format!("flakelab-report/{session}-forest.svg")),
    )
    .unwrap();
    assert!(
        svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""),
        "{svg}"
    );
    assert!(lab
        .path()
        .join(format!("flakelab-report/{session}.html"))
        .is_file());
    // Without the variable, `--summary auto` writes nothing.
    let out = lab
        .cmd()
        .env_remove("GITHUB_STEP_SUMMARY")
        .current_dir(lab.path().join("flakelab-report"))
        .args([
            "report",
            "--format",
            "json",
            "--summary",
            "auto",
            "-C",
            "..",
        ])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
