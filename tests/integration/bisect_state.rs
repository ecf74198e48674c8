//! The files a polluter left, named by `flakelab bisect` for a runner
//! without a state plugin: a shell suite (a project recipe that reads the
//! order file itself, `how = "listed"`) whose polluter leaves a lock file
//! its victim trips on. The suite empties its scratch folder at its start,
//! as a real suite's setup does, so the victim passes alone.
//!
//! And what passes from one test file to the next with the real jest and
//! vitest (files in sequence, a polluter file then a victim file): the
//! facts the jest and vitest recipes' `[ordered]` notes and the book's
//! bisect page state.

use std::path::Path;

use crate::runner_node::npm_lab;
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

/// A lab with the shell suite `suite` and its recipe, and one recorded
/// failing run of it; returns the lab, the run's id and session.
fn failing_suite(suite: &str) -> (Lab, String, String) {
    let lab = Lab::new();
    let recipes = lab.path().join(".flakelab/recipes");
    std::fs::create_dir_all(&recipes).unwrap();
    std::fs::write(recipes.join("shsuite.toml"), RECIPE).unwrap();
    std::fs::write(lab.path().join("suite.sh"), suite).unwrap();
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
    let id = run["id"].as_str().unwrap().to_string();
    let session = run["session"].as_str().unwrap().to_string();
    (lab, id, session)
}

/// `flakelab bisect --format json --confirm 1 RUN`: its exit code and result.
fn bisected(lab: &Lab, run: &str) -> (Option<i32>, serde_json::Value) {
    let out = lab.run(&["bisect", "--format", "json", "--confirm", "1", run]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let r: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("no JSON ({e}): {stderr}"));
    (out.status.code(), r)
}

/// The result's one state change, every field of it.
fn only_change(r: &serde_json::Value) -> [String; 8] {
    let state = r["state"].as_array().unwrap();
    assert_eq!(state.len(), 1, "{r}");
    let c = &state[0];
    [
        "role",
        "test",
        "kind",
        "verb",
        "target",
        "before",
        "after",
        "victim_reads",
    ]
    .map(|k| match &c[k] {
        serde_json::Value::String(s) => s.clone(),
        v => v.to_string(),
    })
}

#[test]
fn the_file_a_polluter_leaves_is_named_for_a_runner_without_a_plugin() {
    let (lab, id, session) = failing_suite(SUITE);
    let (code, r) = bisected(&lab, &id);
    assert_eq!(code, Some(1), "{r}");
    assert_eq!(r["kind"], "polluted", "{r}");
    assert_eq!(r["polluters"], serde_json::json!(["suite::t_polluter"]));
    // Only the lock: the victim's own log is there after it alone too
    // (the same content, rewritten), and t_b did not run in the culprits'
    // run; the store is not listed.
    assert_eq!(
        only_change(&r),
        [
            "polluter",
            "suite::t_polluter",
            "file",
            "creates",
            "file 'scratch/stale.lock'",
            "absent",
            "6 bytes",
            "true"
        ],
        "{r}"
    );
    assert!(r.get("state_note").is_none(), "{r}");
    // The evidence block of the failing run's session says it in one line.
    let ev = lab.run(&["evidence", "--format", "markdown", &session]);
    let md = String::from_utf8_lossy(&ev.stdout);
    assert!(
        md.contains("state: polluter suite::t_polluter creates file 'scratch/stale.lock' (absent -> 6 bytes); victim suite::t_victim reads it"),
        "{md} {}",
        String::from_utf8_lossy(&ev.stderr)
    );
}

#[test]
fn the_file_a_state_setter_leaves_is_named_for_a_brittle_victim() {
    // The victim needs scratch/ready, which only t_setter (after it in the
    // file order) writes.
    let suite = SUITE
        .replace(
            "tests=\"t_a t_polluter t_b t_victim\"",
            "tests=\"t_a t_victim t_setter t_b\"",
        )
        .replace(
            r#"t_polluter() { echo "pid 1" > scratch/stale.lock; }"#,
            r#"t_setter() { echo "ready" > scratch/ready; }"#,
        )
        .replace(
            r#"[ ! -e scratch/stale.lock ] || { echo "scratch/stale.lock exists: another run holds the lock"; return 1; }"#,
            r#"[ -e scratch/ready ] || { echo "scratch/ready is missing"; return 1; }"#,
        );
    assert_eq!(suite.matches("scratch/ready").count(), 3, "{suite}");
    assert!(suite.contains("t_victim t_setter"), "{suite}");
    let (lab, id, _) = failing_suite(&suite);
    let (code, r) = bisected(&lab, &id);
    assert_eq!(code, Some(1), "{r}");
    assert_eq!(r["kind"], "brittle", "{r}");
    assert_eq!(r["setters"], serde_json::json!(["suite::t_setter"]));
    assert_eq!(
        only_change(&r),
        [
            "state-setter",
            "suite::t_setter",
            "file",
            "creates",
            "file 'scratch/ready'",
            "absent",
            "6 bytes",
            "true"
        ],
        "{r}"
    );
}

/// The polluter file: sets an environment variable, changes the working
/// directory, sets a global, leaves a file, installs fake timers. `{fake}`
/// is the runner's call.
const POLLUTER_JS: &str = r#"
test('polluter', () => {
  process.env.FLAKELAB_LEAK = 'v';
  process.chdir(path.join(dir, 'sub'));
  globalThis.flakelabLeak = 1;
  fs.writeFileSync(path.join(dir, 'left.txt'), 'x');
  {fake};
});
"#;

/// The victim file: writes what it sees to `leak/seen.json`.
const VICTIM_JS: &str = r#"
test('victim', () => {
  const seen = {
    env: process.env.FLAKELAB_LEAK ?? null,
    cwd: path.relative(path.dirname(dir), process.cwd()),
    global: globalThis.flakelabLeak ?? null,
    file: fs.existsSync(path.join(dir, 'left.txt')),
    fakeTimers: {faked},
  };
  fs.writeFileSync(path.join(dir, 'seen.json'), JSON.stringify(seen));
});
"#;

/// Writes `leak/a.test.js` (the polluter) and `leak/b.test.js` (the victim)
/// with `head` (imports and `dir`) and `extra` files; the folder `leak/sub`.
fn write_leak(root: &Path, head: &str, fake: &str, faked: &str, extra: &[(&str, &str)]) {
    let leak = root.join("leak");
    std::fs::create_dir_all(leak.join("sub")).unwrap();
    std::fs::write(
        leak.join("a.test.js"),
        format!("{head}{}", POLLUTER_JS.replace("{fake}", fake)),
    )
    .unwrap();
    std::fs::write(
        leak.join("b.test.js"),
        format!("{head}{}", VICTIM_JS.replace("{faked}", faked)),
    )
    .unwrap();
    for (name, text) in extra {
        std::fs::write(leak.join(name), text).unwrap();
    }
}

/// Runs `node ARGS` in `root` (the network off when it can be), then reads
/// what the victim saw; the file left and the record are removed first.
fn seen(root: &Path, args: &[&str]) -> serde_json::Value {
    let leak = root.join("leak");
    let _ = std::fs::remove_file(leak.join("left.txt"));
    let _ = std::fs::remove_file(leak.join("seen.json"));
    let out = std::process::Command::new("node")
        .args(args)
        .current_dir(root)
        .env_remove("FLAKELAB_LEAK")
        .output()
        .unwrap();
    let text = std::fs::read_to_string(leak.join("seen.json")).unwrap_or_else(|_| {
        panic!(
            "the victim file did not run: {} {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    serde_json::from_str(&text).unwrap()
}

#[test]
fn between_jest_files_only_the_working_directory_and_files_leak() {
    let Some(lab) = npm_lab("jest-project", "jest 30.5.2 (npm install)") else {
        return;
    };
    let seq = "// a.test.js, then b.test.js.
const Sequencer = require('@jest/test-sequencer').default;
module.exports = class ByName extends Sequencer {
  sort(tests) {
    return [...tests].sort((x, y) => x.path.localeCompare(y.path));
  }
};
";
    write_leak(
        lab.path(),
        "const fs = require('fs');\nconst path = require('path');\nconst dir = __dirname;\n",
        "jest.useFakeTimers()",
        "jest.isMockFunction(setTimeout)",
        &[("seq.js", seq)],
    );
    let got = seen(
        lab.path(),
        &[
            "node_modules/jest/bin/jest.js",
            "--runInBand",
            "--testSequencer",
            "./leak/seq.js",
            "leak",
        ],
    );
    // Each file gets its own copy of process.env, its own globals and
    // timers; the process's working directory and the disk are shared.
    assert_eq!(
        got,
        serde_json::json!({"env": null, "cwd": "leak/sub", "global": null, "file": true, "fakeTimers": false})
    );
}

#[test]
fn between_vitest_files_only_files_leak_unless_isolation_is_off() {
    let Some(lab) = npm_lab("vitest-project", "vitest 4.1.12 (npm install)") else {
        return;
    };
    let config = "import { defineConfig } from 'vitest/config';
import { BaseSequencer } from 'vitest/node';
// a.test.js, then b.test.js, one file at a time.
class ByName extends BaseSequencer {
  async sort(files) {
    return [...files].sort((x, y) => x.moduleId.localeCompare(y.moduleId));
  }
}
export default defineConfig({
  test: { maxWorkers: 1, include: ['leak/*.test.js'], sequence: { sequencer: ByName } },
});
";
    write_leak(
        lab.path(),
        "import fs from 'fs';\nimport path from 'path';\nimport { test, vi } from 'vitest';\nconst dir = import.meta.dirname;\n",
        "vi.useFakeTimers()",
        "vi.isFakeTimers()",
        &[("vitest.config.js", config)],
    );
    let run = |more: &[&str]| {
        let mut args = vec![
            "node_modules/vitest/vitest.mjs",
            "run",
            "--config",
            "leak/vitest.config.js",
            "--root",
            ".",
        ];
        args.extend_from_slice(more);
        seen(lab.path(), &args)
    };
    // A process per file (isolate, the default): only the disk is shared.
    assert_eq!(
        run(&[]),
        serde_json::json!({"env": null, "cwd": "", "global": null, "file": true, "fakeTimers": false})
    );
    // --no-isolate: one process and one context for the files in sequence.
    assert_eq!(
        run(&["--no-isolate"]),
        serde_json::json!({"env": "v", "cwd": "leak/sub", "global": 1, "file": true, "fakeTimers": true})
    );
}
