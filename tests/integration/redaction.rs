//! Credentials the subject prints: the values of secret-looking variables
//! (inherited by flakelab, set by a cell, named in `[redact] names` or
//! `FLAKELAB_REDACT`) reach no file of the store and no output, even when
//! the subject echoes them, writes them into its JUnit report's failure
//! message, names a test after one, or the command line holds one.

use std::path::{Path, PathBuf};

use crate::{files, Lab};

/// The secrets, and the parts of each that would survive a signature's
/// normalisation (digits become `<n>`) if it were masked too late.
const SECRETS: [(&str, &str); 4] = [
    ("s3cret-inherited-4711", "cret-inherited"),
    ("s3cret-given-4712", "cret-given"),
    ("s3cret-configured-4713", "cret-configured"),
    ("s3cret-listed-4714", "cret-listed"),
];

/// The subject: passes at baseline, printing the inherited token and
/// naming a test after it; fails in the cell that sets DEPLOY_CODE, printing
/// every value and writing them into its report's failure message.
const SUBJECT: &str = r#": the command line holds s3cret-inherited-4711 too
echo "starting with $MY_TOKEN"
if [ -n "$DEPLOY_CODE" ]; then
  echo "AssertionError: login failed for $MY_TOKEN / $DEPLOY_CODE / $BUILD_PIN" >&2
  printf '<testsuite><testcase classname="auth" name="test_login"><failure message="bad token %s &amp; %s">%s</failure></testcase><testcase classname="auth" name="test_%s"/></testsuite>' \
    "$MY_TOKEN" "$DEPLOY_CODE" "$BUILD_PIN" "$MY_TOKEN" > "$REPORT"
  exit 1
fi
printf '<testsuite><testcase classname="auth" name="test_login"/><testcase classname="auth" name="test_%s"/></testsuite>' "$MY_TOKEN" > "$REPORT"
"#;

#[test]
fn values_the_subject_prints_reach_no_file_of_the_store_and_no_output() {
    let lab = Lab::new();
    std::fs::write(
        lab.path().join("flakelab.toml"),
        "[redact]\nnames = [\"DEPLOY_CODE\"]\n",
    )
    .unwrap();
    let given = format!("env=MY_TOKEN={}", SECRETS[1].0);
    let configured = format!("env=DEPLOY_CODE={}", SECRETS[2].0);
    let listed = format!("env=BUILD_PIN={}", SECRETS[3].0);
    let cell = format!("{given}+{configured}+{listed}");
    let script = format!("REPORT='{{junit}}'\n{SUBJECT}");
    let flakelab = |args: &[&str]| {
        lab.cmd()
            .env("MY_TOKEN", SECRETS[0].0)
            .env("FLAKELAB_REDACT", "build_pin, OTHER")
            .args(args)
            .output()
            .unwrap()
    };
    let run = flakelab(&[
        "run",
        "-n",
        "4",
        "--seed",
        "7",
        "--runner",
        "none",
        "--keep-junit",
        "-p",
        &cell,
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert_eq!(
        run.status.code(),
        Some(1),
        "{}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let outputs = super::with_every_reader(run, flakelab);
    let texts = super::everything_written(&outputs, &lab.store());
    let written = files(&lab.store());
    let logs: Vec<&PathBuf> = written
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    let reports: Vec<&PathBuf> = written
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "xml"))
        .collect();
    // Every run printed and wrote a report: with --keep-junit the reports
    // are kept (masked); without, they are deleted once read.
    assert_eq!((logs.len(), reports.len()), (8, 8), "{written:?}");
    for (name, text) in &texts {
        for (secret, part) in SECRETS {
            assert!(
                !text.contains(secret),
                "{secret} leaked into {name}:\n{text}"
            );
            assert!(!text.contains(part), "{part} leaked into {name}:\n{text}");
        }
    }
    // The masks are where the values were: in a log, a report, a failure
    // signature, a test id and the session's command.
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    assert!(logs
        .iter()
        .any(|l| read(l).contains("login failed for <redacted> / <redacted> / <redacted>")));
    assert!(reports
        .iter()
        .any(|r| read(r).contains("bad token &lt;redacted&gt;")));
    let runs = lab.runs();
    let failed = runs
        .iter()
        .find(|r| r["outcome"] == "fail")
        .expect("a failed run");
    assert_eq!(
        failed["failure_signature"].as_str(),
        Some("bad token <redacted> & <redacted>"),
        "{failed:#}"
    );
    assert!(
        failed["tests"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["id"] == "auth::test_<redacted>"),
        "{failed:#}"
    );
    let sessions = read(&lab.store().join("sessions.jsonl"));
    assert!(
        sessions.contains("the command line holds <redacted> too"),
        "{sessions}"
    );
    // A run whose command was masked is not replayed with the mask for a token.
    let baseline = runs.iter().find(|r| r["cell"] == "baseline").unwrap();
    let id = baseline["id"].as_str().unwrap();
    let replay = flakelab(&["replay", id]);
    assert_eq!(replay.status.code(), Some(2), "{replay:?}");
    assert!(String::from_utf8_lossy(&replay.stderr).contains("held a credential value"));
}
