//! The files a polluter left, named by `flakelab bisect` for a runner
//! without a state plugin: a shell suite (a project recipe that reads the
//! order file itself, `how = "listed"`) whose polluter leaves a lock file
//! its victim trips on. The suite empties its scratch folder at its start,
//! as a real suite's setup does, so the victim passes alone.

use crate::Lab;

const RECIPE: &str = r#"name = "shsuite"
summary = "a shell suite that writes JUnit and runs a listed order"
status = "tested"
checked = "tests/integration/bisect_state.rs"
sources = ["tests/integration/bisect_state.rs"]

[detect]
# `sh` hides the runner: the runs name it with --runner shsuite.
patterns = [["suite.sh"]]

[junit]
args = ["--junit", "{junit}"]

[exit]
failed = [1]

[ordered]
how = "listed"
args = ["--order", "{order}"]
note = "the suite runs exactly the tests listed in the file, in that order"
"#;

/// The suite: `t_a`, `t_polluter` (leaves `scratch/stale.lock`), `t_b`
/// (writes its own log, every run the same), `t_victim` (fails when the
/// lock is there). Ids are `suite::NAME`.
const SUITE: &str = r#"#!/bin/sh
junit=""; order=""
while [ $# -gt 0 ]; do
  case "$1" in
    --junit) junit=$2; shift 2 ;;
    --order) order=$2; shift 2 ;;
    *) shift ;;
  esac
done
rm -rf scratch; mkdir scratch
tests="t_a t_polluter t_b t_victim"
[ -n "$order" ] && tests=$(sed 's/^suite:://' "$order")
t_a() { :; }
t_polluter() { echo "pid 1" > scratch/stale.lock; }
t_b() { echo "b ran" > scratch/b.log; }
t_victim() { echo "v ran" > scratch/victim.log; [ ! -e scratch/stale.lock ] || { echo "scratch/stale.lock exists: another run holds the lock"; return 1; }; }
cases=""; failed=0
for t in $tests; do
  if msg=$($t); then
    cases="$cases<testcase classname=\"suite\" name=\"$t\"/>"
  else
    failed=1
    cases="$cases<testcase classname=\"suite\" name=\"$t\"><failure message=\"$msg\"/></testcase>"
  fi
done
[ -n "$junit" ] && printf '<testsuite name="suite">%s</testsuite>\n' "$cases" > "$junit"
exit $failed
"#;

#[test]
fn the_file_a_polluter_leaves_is_named_for_a_runner_without_a_plugin() {
    let lab = Lab::new();
    let recipes = lab.path().join(".flakelab/recipes");
    std::fs::create_dir_all(&recipes).unwrap();
    std::fs::write(recipes.join("shsuite.toml"), RECIPE).unwrap();
    std::fs::write(lab.path().join("suite.sh"), SUITE).unwrap();
    let out = lab.run(&[
        "run",
        "-n",
        "1",
        "--no-sham",
        "--runner",
        "shsuite",
        "--",
        "sh",
        "suite.sh",
    ]);
    let runs = lab.runs();
    let run = runs
        .last()
        .unwrap_or_else(|| panic!("no run: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(run["outcome"], "fail", "the victim fails in file order");
    let id = run["id"].as_str().unwrap();
    let out = lab.run(&["bisect", "--format", "json", "--confirm", "1", id]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let r: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("no JSON ({e}): {stderr}"));
    assert_eq!(out.status.code(), Some(1), "{r} {stderr}");
    assert_eq!(r["kind"], "polluted", "{r}");
    assert_eq!(r["polluters"], serde_json::json!(["suite::t_polluter"]));
    // Only the lock: the victim's own log is there after it alone too, and
    // t_b did not run in the culprits' run.
    let state = r["state"].as_array().unwrap();
    assert_eq!(state.len(), 1, "{r}");
    let c = &state[0];
    assert_eq!(
        (
            c["role"].as_str(),
            c["test"].as_str(),
            c["kind"].as_str(),
            c["verb"].as_str(),
            c["target"].as_str(),
            c["before"].as_str(),
            c["after"].as_str(),
            c["victim_reads"].as_bool(),
        ),
        (
            Some("polluter"),
            Some("suite::t_polluter"),
            Some("file"),
            Some("creates"),
            Some("file 'scratch/stale.lock'"),
            Some("absent"),
            Some("6 bytes"),
            Some(true),
        ),
        "{r}"
    );
    assert!(r.get("state_note").is_none(), "{r}");
    // The evidence block of the failing run's session says it in one line.
    let session = run["session"].as_str().unwrap();
    let ev = lab.run(&["evidence", "--format", "markdown", session]);
    let md = String::from_utf8_lossy(&ev.stdout);
    assert!(
        md.contains("state: polluter suite::t_polluter creates file 'scratch/stale.lock' (absent -> 6 bytes); victim suite::t_victim reads it"),
        "{md} {}",
        String::from_utf8_lossy(&ev.stderr)
    );
}
