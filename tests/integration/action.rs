//! The GitHub Action at the repository's root (`action.yml`, issue #37
//! item 3): a workflow that uses it passes both actionlints, and its steps,
//! run here as GitHub runs a composite action's (`bash -eo pipefail`, the
//! inputs through each step's `env:`), run a session as 2 shards and a merge
//! job into a merged report and a step summary.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::fake::{code, json};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn yaml(text: &str) -> yaml_rust2::Yaml {
    yaml_rust2::YamlLoader::load_from_str(text)
        .unwrap()
        .remove(0)
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// What one use of the action left: its steps' output, its outputs
/// (`$GITHUB_OUTPUT`), and the exit status of its last step.
pub(super) struct Used {
    pub out: Output,
    pub outputs: BTreeMap<String, String>,
}

/// Runs the action's `run:` steps in `dir` with the inputs `with` (the
/// others at their defaults) and the variables `vars`, as a runner would:
/// each step's `env:` with `${{ inputs.NAME }}` substituted, under
/// `bash --noprofile --norc -eo pipefail`, with `flakelab` (the binary under
/// test) on PATH; a `uses:` step (the toolchain) is skipped, so `install`
/// must be `none`. Stops at the first step that fails.
pub(super) fn use_action(dir: &Path, with: &[(&str, String)], vars: &[(&str, String)]) -> Used {
    let action = yaml(&std::fs::read_to_string(root().join("action.yml")).unwrap());
    let mut inputs: BTreeMap<String, String> = BTreeMap::new();
    for (name, input) in action["inputs"].as_hash().unwrap() {
        let default = input["default"].as_str().unwrap_or("").to_string();
        inputs.insert(name.as_str().unwrap().to_string(), default);
    }
    for (k, v) in with {
        assert!(inputs.contains_key(*k), "the action has no input `{k}`");
        inputs.insert(k.to_string(), v.clone());
    }
    assert_eq!(inputs["install"], "none", "only `install: none` runs here");
    let output_file = dir.join(".github-output");
    std::fs::write(&output_file, "").unwrap();
    let bin_dir = crate::bin().parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut last = None;
    for step in action["runs"]["steps"].as_vec().unwrap() {
        let Some(script) = step["run"].as_str() else {
            continue;
        };
        assert_eq!(step["shell"].as_str(), Some("bash"));
        let mut c = Command::new("bash");
        crate::scrub(&mut c);
        c.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script])
            .current_dir(dir)
            .env("PATH", &path)
            .env("GITHUB_OUTPUT", &output_file);
        if let Some(env) = step["env"].as_hash() {
            for (k, v) in env {
                let v = v.as_str().unwrap();
                let value = match v
                    .strip_prefix("${{ inputs.")
                    .and_then(|r| r.strip_suffix(" }}"))
                {
                    Some(name) => inputs[name].clone(),
                    None if v == "${{ github.action_path }}" => root().display().to_string(),
                    None => panic!("an expression this runner does not know: {v}"),
                };
                c.env(k.as_str().unwrap(), value);
            }
        }
        for (k, v) in vars {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        let failed = !out.status.success();
        last = Some(out);
        if failed {
            break;
        }
    }
    let outputs = std::fs::read_to_string(&output_file)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Used {
        out: last.expect("the action has run steps"),
        outputs,
    }
}

/// A project whose subject fails under Kiritimati time, every time.
fn project(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("subject.sh"),
        "[ \"$TZ\" != Pacific/Kiritimati ] || { echo \"the date is off\"; exit 1; }\n",
    )
    .unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    for f in crate::files(from) {
        let dst = to.join(f.strip_prefix(from).unwrap());
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::copy(&f, &dst).unwrap();
    }
}

fn github(job: &str) -> Vec<(&'static str, String)> {
    vec![
        ("GITHUB_RUN_ID", "5151".to_string()),
        ("GITHUB_RUN_ATTEMPT", "1".to_string()),
        ("GITHUB_JOB", job.to_string()),
    ]
}

#[test]
fn the_actions_steps_run_two_shards_and_a_merge_into_a_report_and_a_step_summary() {
    let lab = crate::Lab::new();
    let with = |shard: &str| {
        vec![
            ("install", "none".to_string()),
            ("command", "sh subject.sh".to_string()),
            ("cells", "tz=Pacific/Kiritimati\ntz=Etc/UTC".to_string()),
            ("runs", "6".to_string()),
            ("design", "fixed".to_string()),
            ("shard", shard.to_string()),
            ("shards", "2".to_string()),
            ("args", "--no-sham --timeout '1m'".to_string()),
        ]
    };
    let merge_dir = lab.path().join("merge-job");
    project(&merge_dir);
    for shard in ["1", "2"] {
        let dir = lab.path().join(format!("job-{shard}"));
        project(&dir);
        let used = use_action(&dir, &with(shard), &github("shard"));
        assert!(
            used.out.status.success(),
            "shard {shard}: {}",
            text(&used.out)
        );
        assert_eq!(used.outputs["store"], "flakelab-store");
        assert_eq!(used.outputs["artifact"], format!("flakelab-shard-{shard}"));
        // flakelab's own verdict, kept as an output: 3 of 3 against 0 of 3
        // is no difference at 95% (p = 0.1); the merged 6 of 6 is one.
        assert_eq!(used.outputs["exit-code"], "0", "{}", text(&used.out));
        // The artifact download-artifact gives the merge job.
        copy_dir(
            &dir.join("flakelab-store"),
            &merge_dir.join(format!("shards/flakelab-shard-{shard}")),
        );
    }
    let summary = merge_dir.join("summary.md");
    let mut vars = github("merge");
    vars.push(("GITHUB_STEP_SUMMARY", summary.display().to_string()));
    let used = use_action(
        &merge_dir,
        &[("install", "none".into()), ("mode", "merge".into())],
        &vars,
    );
    assert_eq!(code(&used.out), 1, "{}", text(&used.out));
    assert_eq!(used.outputs["exit-code"], "1");
    let merged = json(
        &Command::new(crate::bin())
            .args(["report", "--format", "json", "--store", "flakelab-store"])
            .current_dir(&merge_dir)
            .output()
            .unwrap(),
    );
    assert_eq!(merged["session"], "github-5151-1-shard");
    assert_eq!(merged["shards"]["present"].as_array().unwrap().len(), 2);
    assert_eq!(merged["recorded"], merged["planned"]);
    let kiri = crate::cell(&merged, "tz=Pacific/Kiritimati");
    assert_eq!(kiri["n"], 6);
    let k = kiri["k"].as_u64().unwrap();
    assert_eq!(k, 6, "{kiri}");
    assert_eq!(crate::cell(&merged, "tz=Etc/UTC")["k"], 0);
    // The step summary holds the merged report; the annotations went out.
    let summary = std::fs::read_to_string(&summary).unwrap();
    assert!(summary.contains(&format!("{k} of 6")), "{summary}");
    assert!(summary.contains("2 of 2 shards present"), "{summary}");
    assert!(text(&used.out).contains("::error"), "{}", text(&used.out));
    let evidence = std::fs::read_to_string(merge_dir.join("flakelab-store.evidence.md")).unwrap();
    assert!(evidence.contains("Kiritimati"), "{evidence}");
}

#[test]
fn a_merge_with_no_shard_store_says_so() {
    let lab = crate::Lab::new();
    let used = use_action(
        lab.path(),
        &[("install", "none".into()), ("mode", "merge".into())],
        &[],
    );
    assert_eq!(code(&used.out), 2);
    assert!(
        text(&used.out).contains("no shard store matches `shards/*`"),
        "{}",
        text(&used.out)
    );
}

/// A repository whose workflow uses the action from its root (`uses: ./`),
/// with `with` as the shard step's inputs; returns the workflow's path.
fn repository_using_the_action(dir: &Path, with: &str) -> PathBuf {
    std::fs::copy(root().join("action.yml"), dir.join("action.yml")).unwrap();
    // actionlint finds the repository (and `./`) by its `.git`.
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    let workflows = dir.join(".github/workflows");
    std::fs::create_dir_all(&workflows).unwrap();
    let workflow = flakelab::onboard::init::github_workflow(
        "./",
        &flakelab::onboard::init::CiSetup::default(),
    )
    .replace(
        "        with:\n          shard:",
        &format!("        with:\n{with}          shard:"),
    );
    assert!(workflow.contains(with), "{workflow}");
    let path = workflows.join("flakelab.yml");
    std::fs::write(&path, workflow).unwrap();
    path
}

#[test]
fn a_workflow_using_the_action_passes_both_actionlints_and_an_unknown_input_does_not() {
    let lab = crate::Lab::new();
    let good = lab.path().join("good");
    std::fs::create_dir_all(&good).unwrap();
    let path = repository_using_the_action(&good, "");
    let bad = lab.path().join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    let broken = repository_using_the_action(&bad, "          shardz: 3\n");
    for (name, mut c) in super::shard::linters() {
        let mut ok = Command::new(c.get_program());
        ok.args(c.get_args()).arg(&path).current_dir(&good);
        let out = ok.output().unwrap();
        assert!(out.status.success(), "{name}: {}", text(&out));
        // Only the native actionlint reads the local action's inputs.
        if name == "actionlint" {
            let out = c.arg(&broken).current_dir(&bad).output().unwrap();
            assert!(!out.status.success(), "{name} passed an unknown input");
            assert!(text(&out).contains("shardz"), "{name}: {}", text(&out));
        }
    }
}

#[test]
fn every_input_reaches_its_step_and_every_output_is_set() {
    let action = yaml(&std::fs::read_to_string(root().join("action.yml")).unwrap());
    let steps = action["runs"]["steps"].as_vec().unwrap();
    let env_of_steps: String = steps
        .iter()
        .filter_map(|s| s["env"].as_hash())
        .flat_map(|h| h.values().map(|v| v.as_str().unwrap().to_string()))
        .collect::<Vec<_>>()
        .join("\n");
    for (name, _) in action["inputs"].as_hash().unwrap() {
        let name = name.as_str().unwrap();
        assert!(
            env_of_steps.contains(&format!("${{{{ inputs.{name} }}}}")),
            "input `{name}` reaches no step"
        );
    }
    let session = steps
        .iter()
        .find(|s| s["id"].as_str() == Some("session"))
        .unwrap();
    let script = session["run"].as_str().unwrap();
    for (name, _) in action["outputs"].as_hash().unwrap() {
        let name = name.as_str().unwrap();
        assert!(
            script.contains(&format!("echo \"{name}=")),
            "output `{name}` is never set"
        );
    }
}

#[test]
fn init_ci_advises_on_the_file_it_wrote_and_sets_up_the_detected_runner() {
    let lab = crate::Lab::new();
    std::fs::write(
        lab.path().join("flakelab.toml"),
        "[lane]\ncommand = \"python3 -m pytest -q tests\"\n",
    )
    .unwrap();
    let out = lab.run(&["init", "--ci", "github"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("change `matrix.shard` and SHARDS together"),
        "{said}"
    );
    assert!(
        !said.contains("parallel:"),
        "GitHub advice names GitLab's key: {said}"
    );
    assert!(said.contains("set up for pytest"), "{said}");
    assert!(said.contains(flakelab::onboard::init::ACTION), "{said}");
    let workflow =
        std::fs::read_to_string(lab.path().join(".github/workflows/flakelab.yml")).unwrap();
    assert!(
        workflow.contains("python -m pip install pytest pytest-randomly pytest-xdist"),
        "{workflow}"
    );
    let out = lab.run(&["init", "--ci", "gitlab"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let said = text(&out);
    assert!(said.contains("change `parallel:`"), "{said}");
    assert!(
        !said.contains("matrix.shard"),
        "GitLab advice names GitHub's key: {said}"
    );
    assert!(said.contains("flakelab.gitlab-ci.yml"), "{said}");
    assert!(said.contains("set up for pytest"), "{said}");
    assert!(said.contains("python:3-bookworm"), "{said}");
    assert!(said.contains("flakelab-build"), "{said}");
    let pipeline = std::fs::read_to_string(lab.path().join("flakelab.gitlab-ci.yml")).unwrap();
    assert!(
        pipeline.contains("    - python -m pip install pytest pytest-randomly pytest-xdist\n"),
        "{pipeline}"
    );
    assert!(
        !pipeline.contains("cargo install --locked flakelab"),
        "{pipeline}"
    );
}
