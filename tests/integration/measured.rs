//! Every cell measured or not applied, with real runners: a cell whose
//! runner lacks the plugin it needs is NOT APPLIED with the runner's own
//! reason, never `0 of 0 … applied`.

use crate::{capable, sh_ok, Lab};

#[test]
fn pytest_without_its_shuffle_plugin_leaves_the_shuffle_cell_not_applied() {
    if !capable(
        "pytest with pytest-randomly",
        sh_ok("python3 -c 'import pytest, pytest_randomly'"),
    ) {
        return;
    }
    let lab = Lab::new();
    std::fs::write(
        lab.path().join("test_a.py"),
        "def test_a():\n    assert True\n",
    )
    .unwrap();
    // The real pytest without pytest-randomly: a path holding every
    // installed package but the plugin, and `python3 -S` (no site-packages).
    let site = String::from_utf8(
        std::process::Command::new("python3")
            .args([
                "-c",
                "import os, pytest; print(os.path.dirname(os.path.dirname(pytest.__file__)))",
            ])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let bare = lab.path().join("bare");
    std::fs::create_dir(&bare).unwrap();
    for entry in std::fs::read_dir(site.trim()).unwrap().flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().contains("randomly") {
            std::os::unix::fs::symlink(entry.path(), bare.join(&name)).unwrap();
        }
    }
    let out = lab
        .cmd()
        .env("PYTHONPATH", &bare)
        .args([
            "run",
            "--format",
            "json",
            "-n",
            "2",
            "-p",
            "shuffle",
            "--runner",
            "pytest",
            "--",
            "python3",
            "-S",
            "-m",
            "pytest",
            "test_a.py",
        ])
        .output()
        .unwrap();
    let report = crate::report_from(&out, 3);
    let cells = report["cells"].as_array().unwrap();
    let shuffle = cells.iter().find(|c| c["name"] == "shuffle").unwrap();
    assert_eq!(shuffle["applied"], false, "{shuffle:#}");
    let reason = shuffle["reason"].as_str().unwrap();
    assert!(reason.contains("pip install pytest-randomly"), "{reason}");
    let baseline = cells.iter().find(|c| c["name"] == "baseline").unwrap();
    assert_eq!(
        (baseline["k"].as_u64(), baseline["n"].as_u64()),
        (Some(0), Some(2))
    );
}
