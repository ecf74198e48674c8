//! The screen design under workers at its default settings, through the
//! fake executor (`src/exec/fake.rs`): a brittle test failing in every
//! other workers run and a fixed-port collision — two tests that fail in
//! turn, whichever binds the port second — are both confirmed, the
//! collision as one candidate with its partner.

use serde_json::Value;

use crate::fake::{code, fake, json, script};
use crate::Lab;

const PORT: &str = "OSError: [Errno 98] Address already in use";

/// A pytest JUnit report: `test_brittle` and the two port tests failing as
/// asked, `test_ok` passing.
fn junit(brittle: bool, a: bool, b: bool) -> String {
    let case = |class: &str, name: &str, fails: Option<&str>| match fails {
        Some(m) => format!(
            "<testcase classname='{class}' name='{name}'><failure message='{m}'/></testcase>"
        ),
        None => format!("<testcase classname='{class}' name='{name}'/>"),
    };
    let port = |f: bool| f.then_some(PORT);
    format!(
        "<testsuite name='s' tests='4'>{}{}{}{}</testsuite>",
        case(
            "tests.test_a",
            "test_brittle",
            brittle.then_some("AssertionError: 2 results, expected 3")
        ),
        case("tests.test_a", "test_ok", None),
        case("tests.test_ports", "test_port_a", port(a)),
        case("tests.test_ports", "test_port_b", port(b)),
    )
}

/// Workers runs in turn: the brittle test and `test_port_a` fail in one,
/// `test_port_b` in the next (each run, one of the two binds the port
/// second); baseline runs pass. Each rule answers one run, in order.
fn workers_script(lab: &Lab) -> std::path::PathBuf {
    let mut text = String::from("version = \"pytest 9.2.0\"\n");
    for i in 0..60 {
        let first = i % 2 == 0;
        text.push_str(&format!(
            "[[run]]\ncell = \"workers=2\"\ntimes = 1\nexit = 1\noutput = \"created: 2/2 workers\"\njunit = \"{}\"\n",
            junit(first, first, !first)
        ));
    }
    text.push_str(&format!(
        "[[run]]\njunit = \"{}\"\n",
        junit(false, false, false)
    ));
    script(lab, &text)
}

fn row<'a>(report: &'a Value, id: &str) -> &'a Value {
    (report["cells"].as_array().unwrap().iter())
        .flat_map(|c| c["tests"].as_array().unwrap().iter())
        .find(|t| t["id"] == id && t["stage"] == "confirm")
        .unwrap_or_else(|| panic!("no confirmed row {id}: {report:#}"))
}

#[test]
fn a_brittle_test_and_a_port_collision_under_workers_are_confirmed_at_the_defaults() {
    let lab = Lab::new();
    let s = workers_script(&lab);
    let out = fake(
        &lab,
        &s,
        &[
            "run",
            "--format",
            "json",
            "--design",
            "screen",
            "--seed",
            "7",
            "-p",
            "workers=2",
            "--",
            "pytest",
            "tests",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 1, "{stderr}");
    // The collision is one candidate: two in all, no cap line.
    assert!(
        stderr.contains(
            "screen done: 2 candidate (test, cell) pair(s) to confirm, at most 30 run(s) each"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("the cap of"), "{stderr}");
    let report = json(&out);
    let design = &report["design"];
    assert_eq!(design["candidates"], 2, "{design}");
    assert_eq!(design["confirmed"], 2, "{design}");

    // The brittle test: 8 of 15 against 0 of 15 at the cap, decided by the
    // last look's share (p = 0.0011 / 0.2 ≤ 0.05 / 2).
    let brittle = row(&report, "tests.test_a::test_brittle");
    assert_eq!((&brittle["k"], &brittle["n"]), (&8.into(), &15.into()));
    assert_eq!(brittle["vs_baseline"]["differs"], true, "{brittle}");
    let verdict = brittle["verdict"].as_str().unwrap();
    assert!(verdict.starts_with("differs: confirmed"), "{verdict}");
    let last = brittle["looks"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (&last["pair"], &last["decision"]),
        (&15.into(), &"differs".into())
    );
    assert!(brittle["partners"].is_null(), "{brittle}");

    // The collision: test_port_a with its partner test_port_b, a run
    // failing when either did: 4 of 4 against 0 of 4 at the planned look.
    let collision = row(&report, "tests.test_ports::test_port_a");
    assert_eq!(
        collision["partners"],
        serde_json::json!(["tests.test_ports::test_port_b"])
    );
    assert_eq!(collision["vs_baseline"]["differs"], true, "{collision}");
    assert_eq!((&collision["k"], &collision["n"]), (&4.into(), &4.into()));
    let verdict = collision["verdict"].as_str().unwrap();
    assert!(verdict.starts_with("differs: confirmed"), "{verdict}");
    assert!(
        verdict.contains("a collision: it and tests.test_ports::test_port_b fail in turn under workers=2, their failures naming a port they contest"),
        "{verdict}"
    );
    // Its partner is not a candidate of its own: its row points to the
    // collision's.
    let partner_rows: Vec<&Value> = (report["cells"].as_array().unwrap().iter())
        .filter(|c| c["name"] == "workers=2")
        .flat_map(|c| c["tests"].as_array().unwrap().iter())
        .filter(|t| t["id"] == "tests.test_ports::test_port_b")
        .collect();
    assert_eq!(partner_rows.len(), 1, "{partner_rows:?}");
    assert_eq!(partner_rows[0]["stage"], "screen", "{partner_rows:?}");
    assert_eq!(
        partner_rows[0]["verdict"],
        "a partner in the collision confirmed as tests.test_ports::test_port_a: counted in its row (differs)"
    );

    // `report` renders the same verdicts later.
    let table = lab.run(&["report"]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("a collision: it and tests.test_ports::test_port_b"),
        "{text}"
    );
    assert_eq!(code(&table), 1, "{text}");
}
