//! `flakelab verify` end to end on a git repository made from
//! `tests/fixtures/ladder-project`: a broken commit, a fixing commit, and a
//! revert of the fix; each half of the verdict can fail and is named.

use std::process::Command;

use crate::{capable, copy_fixture, git, sh_ok, Lab};

fn verify(lab: &Lab, before: &str, after: &str) -> (Option<i32>, serde_json::Value) {
    let out = lab.run(&[
        "verify",
        "--format",
        "json",
        "--before",
        before,
        "--after",
        after,
        "-n",
        "4",
        "-p",
        "tz=Pacific/Kiritimati",
        "--test",
        "tests/test_zone.py::test_invoice_header_offset",
        "--",
        "python3",
        "-m",
        "pytest",
        "tests/test_zone.py",
    ]);
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), json)
}

#[test]
fn a_fix_is_verified_only_when_red_before_and_green_after() {
    if !capable(
        "pytest and git",
        sh_ok("python3 -c 'import pytest' && git --version"),
    ) {
        return;
    }
    let lab = Lab::new();
    copy_fixture(&lab, "ladder-project");
    git(
        lab.path(),
        "git init -q && git add . && git commit -qm broken && \
         sed -i 's/timedelta(hours=12)/timedelta(hours=14)/' tests/test_zone.py && \
         git commit -qam fix && git tag fixed && git revert --no-edit HEAD >/dev/null",
    );
    // broken → fix: both halves hold, and 4 of 4 against 0 of 4 is the
    // fewest runs whose difference Fisher shows at 95% (p = 0.029).
    let (code, json) = verify(&lab, "fixed~1", "fixed");
    assert_eq!(code, Some(0), "{json}");
    assert_eq!(json["schema"], "flakelab.verify/1");
    assert_eq!(json["negative_control"]["holds"], true, "{json}");
    assert_eq!(json["fix"]["holds"], true, "{json}");
    assert_eq!(json["verified"], true, "{json}");
    let cell = &json["cells"][0];
    assert_eq!(
        (cell["before"]["k"].as_u64(), cell["before"]["n"].as_u64()),
        (Some(4), Some(4))
    );
    assert_eq!(
        (cell["after"]["k"].as_u64(), cell["after"]["n"].as_u64()),
        (Some(0), Some(4))
    );
    assert_eq!(cell["before_vs_after"]["differs"], true, "{json}");
    // broken → the fix reverted: the fix half fails, and says so.
    let (code, json) = verify(&lab, "fixed~1", "HEAD");
    assert_eq!(code, Some(1), "{json}");
    assert_eq!(json["negative_control"]["holds"], true, "{json}");
    assert_eq!(json["fix"]["holds"], false, "{json}");
    assert!(json["fix"]["sentence"]
        .as_str()
        .unwrap()
        .contains("still reproduces"));
    // fixed → fixed: nothing was red before, so the negative control fails.
    let out = lab.run(&[
        "verify",
        "--before",
        "fixed",
        "--after",
        "fixed",
        "-n",
        "2",
        "-p",
        "tz=Pacific/Kiritimati",
        "--",
        "python3",
        "-m",
        "pytest",
        "tests/test_zone.py",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("negative control does NOT hold"), "{text}");
    assert!(
        text.contains("Not verified: the negative control failed"),
        "{text}"
    );
    // Every worktree is gone again.
    let list = Command::new("git")
        .args(["worktree", "list"])
        .current_dir(lab.path())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&list.stdout).lines().count(), 1);
    // A revision that does not exist is a usage error naming it.
    let out = lab.run(&[
        "verify", "--before", "nope", "--after", "fixed", "--", "true",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`nope` names no commit"));
}
