//! `report --format html` fits a 1280 px window: a session with very long
//! test names and a long repro line (made through the fake executor) is
//! opened in headless Chromium at 1280 px, and a script appended to a copy
//! of the page writes into the DOM what `--dump-dom` prints: the document's
//! scroll width, the widest element, every element that clips its content
//! behind a scrollbar, every SVG text's box against its plot (and each row
//! label's against the label column), and the repro lines' text. A page
//! with the old CSS and a label moved into the axis shows the check fails.

use serde_json::Value;

use super::fake::{fake, script};
use super::html_report::{artifact_dir, chromium, unescape};
use super::{capable, Lab};

const VIEWPORT: f64 = 1280.0;

/// A test id with no space in it, longer than any column could hold.
const LONG_CLASS: &str =
    "tests.integration.scheduling.test_nightly_window_scheduler_with_a_very_long_module_name";
const LONG_NAME: &str = "test_the_nightly_job_runs_exactly_once_per_calendar_day_even_when_the_zone_skips_midnight[Pacific_Kiritimati-2024_12_31T23_59_59_plus_14_00-retry_budget_3]";
/// A repro argument without a space, so no line of it breaks by itself.
const LONG_ARG: &str = "--config=/home/ci/builds/acme/monorepo/services/scheduler/config/nightly_window/with_a_deliberately_long_path/settings.local.toml";

/// A session whose differing test has a very long id and whose command
/// gives a long repro line.
fn fixture(lab: &Lab) {
    // The long test, and a second long one beside it, fail in the zone.
    let case = |name: &str, fails: bool| {
        format!(
            "<testcase classname='{LONG_CLASS}' name='{name}'>{}</testcase>",
            if fails {
                "<failure message='offset'/>"
            } else {
                ""
            }
        )
    };
    let suite = |fails: bool| {
        format!(
            "<testsuite name='s' tests='3'><testcase classname='tests.test_a' name='test_ok'/>{}{}</testsuite>",
            case(LONG_NAME, fails),
            case(&format!("{LONG_NAME}_again"), fails)
        )
    };
    let text = format!(
        "[[run]]\ncell = \"tz=Pacific/Kiritimati\"\nexit = 1\njunit = \"{}\"\n[[run]]\njunit = \"{}\"\n",
        suite(true),
        suite(false)
    );
    let s = script(lab, &text);
    let out = fake(
        lab,
        &s,
        &[
            "run",
            "-n",
            "6",
            "--seed",
            "5",
            "-p",
            "tz=Pacific/Kiritimati",
            "--",
            "subject",
            "--junit={junit}",
            LONG_ARG,
            "-k",
            "nightly_window_scheduler_and_every_other_scheduler_that_runs_in_a_zone_far_from_utc",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

const MEASURE: &str = r#"<script>
(function(){
  function name(e){var c=e.getAttribute('class');return e.tagName.toLowerCase()+(e.id?'#'+e.id:'')+(c?'.'+c.trim().replace(/\s+/g,'.'):'');}
  var r={viewport:window.innerWidth,scroll:document.documentElement.scrollWidth,widest:null,widest_right:0,clipped:[],texts:[],repros:[]};
  document.querySelectorAll('body *').forEach(function(e){
    if(e.closest('.sr-only')||e.id==='measure-result')return;
    var b=e.getBoundingClientRect();
    if(b.right>r.widest_right){r.widest_right=b.right;r.widest=name(e);}
    if(!(e instanceof HTMLElement))return;
    var o=getComputedStyle(e).overflowX;
    if(o!=='visible'&&e.scrollWidth>e.clientWidth+1)r.clipped.push(name(e)+' '+e.scrollWidth+' > '+e.clientWidth);
  });
  document.querySelectorAll('svg.forest').forEach(function(svg){
    var vb=svg.viewBox.baseVal;
    svg.querySelectorAll('text').forEach(function(t){
      var b=t.getBBox(),g=t.closest('g.row');
      r.texts.push({plot:svg.id,cls:t.getAttribute('class'),text:t.textContent,
        left:b.x,right:b.x+b.width,top:b.y,bottom:b.y+b.height,width:vb.width,height:vb.height,
        column:+svg.getAttribute('data-label-width'),
        test:g?g.getAttribute('data-test'):null,cell:g?g.getAttribute('data-cell'):null});
    });
  });
  document.querySelectorAll('.repro pre').forEach(function(p){
    r.repros.push({id:p.id,text:p.textContent,height:p.clientHeight,line:parseFloat(getComputedStyle(p).lineHeight)});
  });
  var out=document.createElement('pre');out.id='measure-result';out.hidden=true;out.textContent=JSON.stringify(r);document.body.appendChild(out);
})();
</script>"#;

/// What the page measured at 1280 px in Chromium (`extra` is put into the
/// page's head, `edit` applied to its text first).
fn measure(page: &str, tag: &str, extra: &str, edit: &dyn Fn(&str) -> String) -> Value {
    let page = edit(page)
        .replacen("</head>", &format!("{extra}</head>"), 1)
        .replacen("</body>", &format!("{MEASURE}</body>"), 1);
    let file = artifact_dir().join(format!("{tag}-measured.html"));
    std::fs::write(&file, page).unwrap();
    let profile = tempfile::tempdir().unwrap();
    let out = chromium(profile.path())
        .args(["--hide-scrollbars", "--window-size=1280,900"])
        .arg("--dump-dom")
        .arg(format!("file://{}", file.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    let open = "<pre id=\"measure-result\" hidden=\"\">";
    let start = dom.find(open).unwrap_or_else(|| {
        panic!(
            "the measuring script did not run: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    }) + open.len();
    let end = start + dom[start..].find("</pre>").unwrap();
    serde_json::from_str(&unescape(&dom[start..end])).unwrap()
}

/// Every way the measured page does not fit, in words (empty: it fits).
fn misfits(m: &Value) -> Vec<String> {
    let mut out = Vec::new();
    // Row labels, each plot's in order, each below the one before.
    let labels: Vec<&Value> = (m["texts"].as_array().unwrap().iter())
        .filter(|t| t["cls"] == "label")
        .collect();
    for pair in labels.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if a["plot"] == b["plot"] && b["top"].as_f64() < a["bottom"].as_f64() {
            out.push(format!("row labels overlap: {a} and {b}"));
        }
    }
    let scroll = m["scroll"].as_f64().unwrap();
    if scroll > VIEWPORT {
        out.push(format!(
            "the page scrolls sideways: {scroll} px wide, the widest element {} ends at {}",
            m["widest"], m["widest_right"]
        ));
    }
    for c in m["clipped"].as_array().unwrap() {
        out.push(format!(
            "clipped behind a scrollbar: {}",
            c.as_str().unwrap()
        ));
    }
    for t in m["texts"].as_array().unwrap() {
        let f = |k: &str| t[k].as_f64().unwrap();
        if f("left") < 0.0 || f("right") > f("width") || f("top") < 0.0 || f("bottom") > f("height")
        {
            out.push(format!("SVG text outside its plot: {t}"));
        }
        if t["cls"] == "label" && f("right") > f("column") {
            out.push(format!("row label runs into the axis: {t}"));
        }
    }
    out
}

fn report_page(lab: &Lab) -> String {
    let html = lab.run(&["report", "--format", "html"]);
    assert_eq!(html.status.code(), Some(1));
    String::from_utf8(html.stdout).unwrap()
}

fn chromium_here() -> bool {
    capable("chromium", super::sh_ok("command -v chromium"))
}

#[test]
fn the_html_report_fits_1280_px_with_long_test_names_and_repro_lines() {
    if !chromium_here() {
        return;
    }
    let lab = Lab::new();
    fixture(&lab);
    let json: Value =
        serde_json::from_slice(&lab.run(&["report", "--format", "json"]).stdout).unwrap();
    let page = report_page(&lab);
    std::fs::write(artifact_dir().join("wide-names.html"), &page).unwrap();
    let m = measure(&page, "wide-names", "", &|p| p.to_string());
    assert_eq!(m["viewport"], 1280, "{m:#}");
    assert_eq!(misfits(&m), Vec::<String>::new(), "{m:#}");
    assert!(m["widest_right"].as_f64().unwrap() <= VIEWPORT, "{m:#}");

    // The evidence page (the report's sections and its own) fits too.
    let evidence = lab.run(&["evidence", "--format", "html"]);
    let evidence = String::from_utf8(evidence.stdout).unwrap();
    assert!(evidence.contains("id=\"coverage\""), "{evidence}");
    let e = measure(&evidence, "wide-names-evidence", "", &|p| p.to_string());
    assert_eq!(misfits(&e), Vec::<String>::new(), "{e:#}");

    // The screenshot at 1280 px, kept as an artifact to look at.
    let shot = artifact_dir().join("wide-names.png");
    let _ = std::fs::remove_file(&shot);
    let profile = tempfile::tempdir().unwrap();
    let out = chromium(profile.path())
        .args(["--hide-scrollbars", "--window-size=1280,1400"])
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!(
            "file://{}",
            artifact_dir().join("wide-names.html").display()
        ))
        .output()
        .unwrap();
    let png = std::fs::read(&shot)
        .unwrap_or_else(|_| panic!("no screenshot: {}", String::from_utf8_lossy(&out.stderr)));
    assert!(png.starts_with(b"\x89PNG"));

    // The long names are plotted whole: each test row's label reads the
    // full test id and cell, on more than one line.
    let id = format!("{LONG_CLASS}::{LONG_NAME}");
    let labels: Vec<&Value> = (m["texts"].as_array().unwrap().iter())
        .filter(|t| t["cls"] == "label" && t["test"] == id.as_str())
        .collect();
    assert!(!labels.is_empty(), "the long test is not plotted: {m:#}");
    let rows = |plot: &str| {
        (m["texts"].as_array().unwrap().iter())
            .filter(|t| t["cls"] == "label" && t["plot"] == plot)
            .count()
    };
    assert_eq!((rows("plot-cells"), rows("plot-tests")), (3, 2), "{m:#}");
    for t in labels {
        assert_eq!(
            t["text"].as_str().unwrap(),
            format!("{id} · {}", t["cell"].as_str().unwrap())
        );
        assert!(
            t["bottom"].as_f64().unwrap() - t["top"].as_f64().unwrap() > 28.0,
            "{t}"
        );
    }

    // The repro line is wrapped, not clipped, and still reads (and copies)
    // exactly as the JSON report gives it.
    let want = (json["cells"].as_array().unwrap().iter())
        .find(|c| c["name"] == "tz=Pacific/Kiritimati")
        .and_then(|c| c["first_failure"]["repro"].as_str())
        .expect("the differing cell has a repro line")
        .to_string();
    assert!(want.contains(LONG_ARG) && want.len() > 250, "{want}");
    let repros = m["repros"].as_array().unwrap();
    let shown: Vec<&Value> = repros
        .iter()
        .filter(|p| p["text"] == want.as_str())
        .collect();
    assert!(
        shown.len() >= 2,
        "the table's and the notes' repro lines: {m:#}"
    );
    for p in shown {
        let (h, line) = (p["height"].as_f64().unwrap(), p["line"].as_f64().unwrap());
        assert!(h > 2.5 * line, "a long repro line on one clipped line: {p}");
    }
}

/// The check sees a page that does not fit: the old CSS (cells that do not
/// break long ids, the repro line on one line behind a scrollbar) and a
/// row label moved into the axis.
#[test]
fn the_width_check_sees_the_old_css_and_a_label_in_the_axis() {
    if !chromium_here() {
        return;
    }
    let lab = Lab::new();
    fixture(&lab);
    let page = report_page(&lab);
    let old_css = "<style>code,pre,th,td{overflow-wrap:normal}td .repro pre{white-space:pre;overflow-x:auto;max-width:26rem;word-break:normal}td .repro{min-width:0}</style>";
    // The first row label's first line, moved 296 px right.
    let m = measure(&page, "old-css", old_css, &|p| {
        let at = p.find("<text class=\"label\"").unwrap();
        let (head, tail) = p.split_at(at);
        let p = format!(
            "{head}{}",
            tail.replacen("<tspan x=\"4\"", "<tspan x=\"300\"", 1)
        );
        // And the second test row's label moved 30 px up, onto the first.
        let plot = p.find("id=\"plot-tests\"").unwrap();
        let first = plot + p[plot..].find("<text class=\"label\"").unwrap() + 1;
        let second = first + p[first..].find("<text class=\"label\"").unwrap();
        let (head, tail) = p.split_at(second);
        format!("{head}{}", tail.replacen("dy=\"0\"", "dy=\"-30\"", 1))
    });
    let found = misfits(&m);
    let has = |what: &str| found.iter().any(|f| f.starts_with(what));
    assert!(has("the page scrolls sideways"), "{found:#?}");
    assert!(
        found
            .iter()
            .any(|f| f.starts_with("clipped behind a scrollbar: pre#repro-t")),
        "{found:#?}"
    );
    assert!(has("row label runs into the axis"), "{found:#?}");
    assert!(has("row labels overlap"), "{found:#?}");
}
