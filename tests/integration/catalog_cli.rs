//! The catalog and planning commands, and usage errors.

use super::Lab;

#[test]
fn perturbations_lists_and_shows_the_catalog() {
    let lab = Lab::new();
    let out = String::from_utf8(lab.run(&["perturbations"]).stdout).unwrap();
    assert!(
        out.contains("tz-kiritimati") && out.contains("clock and zone"),
        "{out}"
    );
    assert!(out.contains("standard:"), "{out}");
    let one = lab.run(&["perturbations", "show", "tz-kathmandu"]);
    assert!(String::from_utf8_lossy(&one.stdout).contains("tz=Asia/Kathmandu"));
    let missing = lab.run(&["perturbations", "show", "nope"]);
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn a_project_override_is_used_and_a_typo_in_it_fails_loudly() {
    let lab = Lab::new();
    let dir = lab.path().join(".flakelab/perturbations");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("mine.toml"),
        "[[perturbation]]\nname = \"debug\"\nsummary = \"DEBUG on\"\nsettles = \"process-global contamination\"\nperturb = { kind = \"env\", set = { DEBUG = \"1\" } }\n",
    )
    .unwrap();
    let (_, report) = lab.run_json(&[
        "-n",
        "1",
        "-p",
        "debug",
        "--",
        "sh",
        "-c",
        "test \"$DEBUG\" = 1",
    ]);
    assert_eq!(super::cell(&report, "debug")["k"].as_u64(), Some(0));
    assert_eq!(super::cell(&report, "baseline")["k"].as_u64(), Some(1));
    std::fs::write(
        dir.join("mine.toml"),
        "[[perturbation]]\nname = \"debug\"\nsumary = \"x\"\n",
    )
    .unwrap();
    let out = lab.run(&["run", "-n", "1", "--", "true"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mine.toml") && err.contains("sumary"), "{err}");
}

#[test]
fn plan_prints_runs_needed() {
    let out = Lab::new().run(&["plan", "--rate", "0.01", "--confidence", "0.95"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("299 runs"), "{text}");
}

#[test]
fn usage_errors_exit_2_with_a_hint() {
    let lab = Lab::new();
    for args in [
        vec!["run", "--timeout", "soon", "--", "true"],
        vec!["run", "-p", "warp=9", "--", "true"],
        vec!["run", "--matrix", "nope", "--", "true"],
        vec!["run", "--signature", "(", "--", "true"],
        vec!["run", "-p", "locale=xx_YY.UTF-8", "--", "true"],
    ] {
        let out = lab.run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("hint:"),
            "{args:?}"
        );
    }
    assert!(lab.runs().is_empty());
}
