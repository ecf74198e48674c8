//! The rspec recipe end to end with the real runner (Debian's `ruby-rspec`,
//! and `ruby-rspec-junit-formatter` for the plugin path) on the fixture
//! `tests/fixtures/rspec-project`: an order-dependent pair in
//! `spec/config_spec.rb` ("formats a price" needs the currency "loads the
//! currency" sets), decided by the order alone.

use super::{capable, cell, sh_ok, Lab};

const B: &str = "spec.config_spec::Config formats a price";

fn rspec_available() -> bool {
    capable("rspec (Debian ruby-rspec)", sh_ok("rspec --version"))
}

fn plugin_available() -> bool {
    capable(
        "rspec_junit_formatter (Debian ruby-rspec-junit-formatter)",
        sh_ok("ruby -e \"require 'rspec_junit_formatter'\""),
    )
}

fn test<'a>(c: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    c["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {c}"))
}

/// Shuffle finds the pair and reads every seed back; the baseline (rspec's
/// defined order) never fails. Per-test rows come from `via`.
fn shuffle_finds_the_pair(lab: &Lab, via: &str) {
    let (_, report) = lab.run_json(&["-n", "6", "--seed", "3", "-p", "shuffle", "--", "rspec"]);
    assert_eq!(report["runner"], "rspec", "{report}");
    let base = cell(&report, "baseline");
    assert_eq!(
        (base["n"].as_u64(), base["k"].as_u64()),
        (Some(6), Some(0)),
        "{base}"
    );
    assert_eq!(base["runs_with_tests"].as_u64(), Some(6), "{base}");
    assert_eq!(base["tests"].as_array().unwrap().len(), 4, "{base}");
    let shuffle = cell(&report, "shuffle");
    assert_eq!(
        shuffle["n"].as_u64(),
        Some(6),
        "every seed was read back: {shuffle}"
    );
    let k = test(shuffle, B)["k"].as_u64().unwrap();
    assert!(k >= 1, "{shuffle}");
    assert_eq!(shuffle["k"].as_u64(), Some(k), "only B fails: {shuffle}");
    let runs = lab.runs();
    for r in &runs {
        let argv = super::run_argv(r);
        assert!(argv.iter().any(|a| a == via), "{argv:?}");
        if r["cell"] == "baseline" {
            assert!(
                argv.ends_with(&["--order".into(), "defined".into()]),
                "{argv:?}"
            );
        }
    }
}

#[test]
fn rspec_with_the_junit_plugin_finds_the_order_dependent_pair() {
    if !rspec_available() || !plugin_available() {
        return;
    }
    let lab = Lab::new();
    super::copy_fixture(&lab, "rspec-project");
    shuffle_finds_the_pair(&lab, "RspecJunitFormatter");
}

#[test]
fn rspec_without_the_plugin_reads_its_own_json() {
    if !rspec_available() {
        return;
    }
    let lab = Lab::new();
    super::copy_fixture(&lab, "rspec-project");
    // The plugin is installed here: a project recipe whose probe never
    // finds it stands for a host without it.
    let recipe = flakelab::catalog::recipe::load(None)
        .unwrap()
        .into_iter()
        .find(|r| r.name == "rspec")
        .unwrap();
    let mut text = toml::to_string(&recipe).unwrap();
    text = text.replace(
        "rspec_junit_formatter'; puts 'found'",
        "no_such_plugin_here'",
    );
    assert!(text.contains("no_such_plugin_here"), "{text}");
    std::fs::create_dir_all(lab.store().join("recipes")).unwrap();
    std::fs::write(lab.store().join("recipes/rspec.toml"), text).unwrap();
    shuffle_finds_the_pair(&lab, "json");
    let detect = String::from_utf8(lab.run(&["recipes", "detect", "--", "rspec"]).stdout).unwrap();
    assert!(
        detect.contains("per-test: the runner's own rspec-json output"),
        "{detect}"
    );
}

#[test]
fn rspec_usage_errors_load_errors_and_empty_runs_are_errors() {
    if !rspec_available() {
        return;
    }
    for (args, want) in [
        (
            vec!["rspec", "--no-such-flag"],
            "invalid option: --no-such-flag",
        ),
        (
            vec!["rspec", "spec/nope_spec.rb"],
            "error occurred outside of examples",
        ),
        (
            vec!["rspec", "-e", "no such example"],
            "ran no tests (exit 0)",
        ),
    ] {
        let lab = Lab::new();
        super::copy_fixture(&lab, "rspec-project");
        let mut all = vec!["-n", "1", "--"];
        all.extend(args.iter().copied());
        let (_, report) = lab.run_json(&all);
        let base = cell(&report, "baseline");
        assert_eq!(base["n"].as_u64(), Some(0), "{args:?}: {base}");
        let runs = lab.runs();
        assert_eq!(runs[0]["outcome"], "error", "{args:?}: {:?}", runs[0]);
        let reason = runs[0]["reason"].as_str().unwrap_or_default();
        assert!(reason.contains(want), "{args:?}: {reason}");
    }
}
