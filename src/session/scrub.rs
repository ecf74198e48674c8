//! Masking, by value, of every byte a session writes: the credential
//! values of the session's [`Redaction`] (those in flakelab's environment
//! and those its cells set) are replaced by `<redacted>` in the session,
//! run and ladder records, in each run's captured log (rewritten once the
//! run has ended) and in the harness-owned JUnit reports in the store. The
//! records' names-based redaction (environment deltas, perturbations)
//! happens where they are built; this is the net under it, for what the
//! subject printed.

use std::path::{Path, PathBuf};

use crate::record::{LadderRecord, RunRecord, SessionRecord};
use crate::redact::{Redaction, REDACTED};

fn path(r: &Redaction, p: &mut PathBuf) {
    if let Some(text) = p.to_str() {
        if let std::borrow::Cow::Owned(clean) = r.text(text) {
            *p = PathBuf::from(clean);
        }
    }
}

fn all(r: &Redaction, texts: &mut [String]) {
    for t in texts {
        r.scrub(t);
    }
}

fn some(r: &Redaction, text: &mut Option<String>) {
    if let Some(t) = text {
        r.scrub(t);
    }
}

/// A run record with every masked value replaced, in every text field.
pub fn run(r: &Redaction, record: &mut RunRecord) {
    if !r.masks_values() {
        return;
    }
    r.scrub(&mut record.cell);
    all(r, &mut record.perturbations);
    some(r, &mut record.reason);
    all(r, &mut record.argv);
    path(r, &mut record.cwd);
    for v in record.env.set.values_mut() {
        r.scrub(v);
    }
    r.scrub(&mut record.repro);
    some(r, &mut record.repro_note);
    all(r, &mut record.warnings);
    some(r, &mut record.tests_missing);
    some(r, &mut record.failure_signature);
    for t in &mut record.tests {
        r.scrub(&mut t.id);
        some(r, &mut t.family);
        some(r, &mut t.signature);
        some(r, &mut t.message);
    }
}

/// A session record with every masked value replaced: its command and
/// directory, its cells (names, perturbations, reasons, probe lines) and
/// the names in its plan.
pub fn session(r: &Redaction, record: &mut SessionRecord) {
    if !r.masks_values() {
        return;
    }
    all(r, &mut record.command);
    path(r, &mut record.cwd);
    for c in &mut record.cells {
        r.scrub(&mut c.name);
        all(r, &mut c.perturbations);
        some(r, &mut c.reason);
        all(r, &mut c.probes);
    }
    all(r, &mut record.plan.cells);
    some(r, &mut record.runner_note);
    all(r, &mut record.left_out);
    some(r, &mut record.junit);
    some(r, &mut record.signature);
    all(r, &mut record.signatures);
}

/// A ladder record with every masked value replaced.
pub fn ladder(r: &Redaction, record: &mut LadderRecord) {
    if !r.masks_values() {
        return;
    }
    all(r, &mut record.command);
    path(r, &mut record.cwd);
    if let Some(lane) = &mut record.lane {
        all(r, lane);
    }
    some(r, &mut record.test);
    some(r, &mut record.signature);
    r.scrub(&mut record.cell);
    for rung in &mut record.rungs {
        some(r, &mut rung.reason);
        all(r, &mut rung.argv);
        if let Some((_, line)) = &mut rung.first_reproduction {
            r.scrub(line);
        }
    }
}

/// A screen record with every masked value replaced (test ids and the
/// selections that ran them).
pub fn screen(r: &Redaction, record: &mut crate::screen::ScreenRecord) {
    if !r.masks_values() {
        return;
    }
    for c in &mut record.confirmations {
        r.scrub(&mut c.candidate.cell);
        r.scrub(&mut c.candidate.test);
        r.scrub(&mut c.selection);
        some(r, &mut c.note);
    }
}

/// The captured log at `path`, masked: rewritten in place when it held a
/// masked value. Returns its (masked) bytes, or the problem that left it
/// unreadable or unmasked.
pub fn log_file(r: &Redaction, path: &Path) -> Result<Vec<u8>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    match r.bytes(&bytes, REDACTED) {
        None => Ok(bytes),
        Some(clean) => {
            rewrite(path, &clean)?;
            Ok(clean)
        }
    }
}

/// The JUnit report at `path`, masked (in place when `in_store`), or
/// `None` when it holds no masked value (or cannot be read: the parser
/// then says why).
pub fn junit_file(r: &Redaction, path: &Path, in_store: bool) -> Result<Option<Vec<u8>>, String> {
    if !r.masks_values() {
        return Ok(None);
    }
    let Ok(bytes) = std::fs::read(path) else {
        return Ok(None);
    };
    let Some(clean) = r.xml(&bytes) else {
        return Ok(None);
    };
    if in_store {
        rewrite(path, &clean)?;
    }
    Ok(Some(clean))
}

/// Replaces the file at `path` by `bytes` (a sibling written, then renamed
/// over it, so no reader sees half of either).
fn rewrite(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".masking");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!(
                "cannot rewrite {} with its credentials masked: {e}",
                path.display()
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redaction() -> Redaction {
        Redaction::default().with_values([("MY_TOKEN", "tok-4711")])
    }

    #[test]
    fn a_log_is_rewritten_only_when_it_held_a_value() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("00000.log");
        std::fs::write(&log, b"token tok-4711\n").unwrap();
        assert_eq!(log_file(&redaction(), &log).unwrap(), b"token <redacted>\n");
        assert_eq!(std::fs::read(&log).unwrap(), b"token <redacted>\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        std::fs::write(&log, b"clean\n").unwrap();
        assert_eq!(log_file(&redaction(), &log).unwrap(), b"clean\n");
    }

    #[test]
    fn a_report_is_masked_in_place_only_in_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let xml = dir.path().join("r.xml");
        let text =
            r#"<testsuite><testcase name="t"><failure message="tok-4711"/></testcase></testsuite>"#;
        std::fs::write(&xml, text).unwrap();
        let clean = junit_file(&redaction(), &xml, false).unwrap().unwrap();
        assert!(String::from_utf8(clean)
            .unwrap()
            .contains("&lt;redacted&gt;"));
        assert_eq!(std::fs::read_to_string(&xml).unwrap(), text);
        junit_file(&redaction(), &xml, true).unwrap().unwrap();
        assert!(!std::fs::read_to_string(&xml).unwrap().contains("tok-4711"));
        assert_eq!(junit_file(&redaction(), &xml, true).unwrap(), None);
    }
}
