//! Proof from the subject's own processes: what the processes a run really
//! started say about the mechanisms of its cell that a program can bypass
//! (DESIGN principle 2). The probe proves a mechanism on a stand-in
//! (`date`); this proves it, or disproves it, on what the subject ran.
//!
//! Two accounts are judged alike. The first is the clock preload's own
//! ([`judge_record`]): every process it loads in announces itself in the
//! run's record, and a preloaded process about to execute a static or Go
//! program names it there before it runs, however briefly it runs; a run
//! whose record holds no announcement is not applied. The second is the
//! `/proc` watch (`exec::inspect`), which also sees what the preload cannot
//! (a static program's children, libfaketime's runs).
//!
//! Only the clock preload (flakelab's, or libfaketime) is checked: a program
//! escapes its `LD_PRELOAD` when it is statically linked (no dynamic loader runs), when it is a Go program
//! (Go reads the clock through the vDSO, not libc, even when dynamically
//! linked), when it starts in secure-execution mode (set-user-ID to another
//! user: the loader ignores preload paths with a slash, and glibc removes
//! `LD_PRELOAD` from what its children inherit), or when its environment no
//! longer names the library or the cell's clock (`FLAKELAB_CLOCK`, or
//! libfaketime's `FAKETIME`). `TZ` is not checked:
//! every runtime tried on a Debian 12 host (glibc dynamic and static, Go,
//! Node, Python, Perl, OpenJDK 17, whose zone rules are its own) honours the
//! zone `TZ` names, so there is nothing to find.
//!
//! Which process ran the tests is decided by [`judge`], from the executables
//! alone: see [`Role`]. Pure: the processes come from `exec::inspect` (or
//! the fake executor's script).

use std::path::{Path, PathBuf};

use super::clock;
use crate::exec::inspect::{SeenProcess, Watch};
use crate::record::{Bypass, BypassWhy, ProcessCheck};

/// A mechanism of a cell that a program the subject runs can bypass, with
/// what shows that it reached a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mechanism {
    /// A clock preload: flakelab's own, or libfaketime.
    Preload {
        /// The perturbation (`faketime=+365d`).
        perturbation: String,
        /// The library flakelab preloads.
        lib: PathBuf,
        /// The variable holding the clock (`FLAKELAB_CLOCK`, `FAKETIME`).
        var: &'static str,
        /// Its value in the cell.
        value: String,
    },
}

impl Mechanism {
    fn perturbation(&self) -> &str {
        match self {
            Mechanism::Preload { perturbation, .. } => perturbation,
        }
    }

    fn env(&self) -> [&'static str; 2] {
        match self {
            Mechanism::Preload { var, .. } => ["LD_PRELOAD", var],
        }
    }

    /// Whether this is flakelab's own preload, which keeps a record.
    fn keeps_record(&self) -> bool {
        matches!(self, Mechanism::Preload { var, .. } if *var == clock::CLOCK_VAR)
    }

    /// Why `p` escapes this mechanism, if it does (the most specific reason).
    fn bypassed_by(&self, p: &SeenProcess) -> Option<BypassWhy> {
        let Mechanism::Preload {
            var, value, lib, ..
        } = self;
        if p.go == Some(true) {
            return Some(BypassWhy::Go);
        }
        if p.static_linked == Some(true) && !is_loader(p.exe.as_deref()) {
            return Some(BypassWhy::Static);
        }
        if p.secure == Some(true) {
            return Some(BypassWhy::SecureExec);
        }
        let env = p.env.as_ref()?;
        let preloaded = env.get("LD_PRELOAD").is_some_and(|list| {
            list.split([':', ' ']).map(Path::new).any(|entry| {
                entry == lib
                    || entry
                        .file_name()
                        .is_some_and(|name| name.to_string_lossy().starts_with("libfaketime"))
            })
        });
        if !preloaded {
            return Some(BypassWhy::NoPreload);
        }
        if env.get(*var) != Some(value) {
            return Some(BypassWhy::FaketimeChanged);
        }
        None
    }
}

/// What the processes need inspected for `mechanisms`, given the programs
/// the launch execs in turn (`execs`); None when nothing is checked.
pub fn watch(mechanisms: &[Mechanism], execs: Vec<String>) -> Option<Watch> {
    if mechanisms.is_empty() {
        return None;
    }
    let mut env: Vec<String> = Vec::new();
    for name in mechanisms.iter().flat_map(Mechanism::env) {
        if !env.iter().any(|n| n == name) {
            env.push(name.to_string());
        }
    }
    Some(Watch { env, execs })
}

/// The dynamic loader run as a program (`ld-linux-x86-64.so.2 ./prog`) has
/// no interpreter itself, yet loads the program and honours `LD_PRELOAD`.
fn is_loader(exe: Option<&str>) -> bool {
    exe.and_then(|e| Path::new(e).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .is_some_and(|n| n.starts_with("ld-linux") || n.starts_with("ld-musl") || n == "ld.so")
}

/// Programs that only start other programs: shells, launchers and build
/// drivers. Their own clock reads are not the tests'.
pub const WRAPPERS: &[&str] = &[
    "sh", "dash", "bash", "zsh", "ksh", "ksh93", "mksh", "fish", "tcsh", "csh", "env", "timeout",
    "nice", "ionice", "nohup", "setsid", "stdbuf", "taskset", "chrt", "unshare", "nsenter",
    "xargs", "time", "flock", "sudo", "su", "make", "gmake", "ninja", "cargo", "rustup",
];

/// What a process was to the run.
pub use crate::record::ProcessRole as Role;

/// The roles of `seen`, index by index.
///
/// - A **wrapper** runs an executable named in [`WRAPPERS`], or flakelab
///   itself (the `__exec` helper).
/// - The **main line** is the run's first process and the programs it
///   exec'd in turn (`flakelab __exec` → `env` → `bash` → `python3.11`).
/// - A **test** process is a program past the wrappers: no program between
///   it and the run's start is anything but a wrapper. When the main line
///   itself reaches a program that is not a wrapper, that program is the
///   test process, and what the wrappers before it ran on the side
///   (`basename`, `readlink` in a version manager's shim) are helpers. A
///   program below a test process that runs the same executable (the
///   runner's own workers) is a test process too. When every program is a
///   wrapper, the main line's last program is the test process.
/// - Every other program is a **helper**: started by a test process (or by
///   the wrappers before the main line's test process) to do something for
///   it.
///
/// A process whose parent was never seen (an orphan reparented to flakelab
/// before the first look) has no known ancestry, so it is a test process
/// unless it is a wrapper: a bypass there is never excused as a helper's.
pub fn roles(seen: &[SeenProcess], self_exe: &Path) -> Vec<Role> {
    let own = self_exe
        .canonicalize()
        .unwrap_or_else(|_| self_exe.to_path_buf());
    let wrapper = |p: &SeenProcess| {
        let Some(exe) = p.exe.as_deref() else {
            return false;
        };
        Path::new(exe) == own
            || Path::new(exe)
                .file_name()
                .is_some_and(|n| WRAPPERS.iter().any(|w| n == *w))
    };
    // Parents always come earlier in the list.
    let parent = |i: usize| seen[i].parent.filter(|&j| j < i);
    let mut on_main = vec![false; seen.len()];
    for i in 0..seen.len() {
        on_main[i] = i == 0 || parent(i).is_some_and(|j| on_main[j] && seen[j].pid == seen[i].pid);
    }
    let main_reaches_test = (0..seen.len()).any(|i| on_main[i] && !wrapper(&seen[i]));
    let mut roles: Vec<Role> = Vec::with_capacity(seen.len());
    for (i, p) in seen.iter().enumerate() {
        let role = if wrapper(p) {
            Role::Wrapper
        } else {
            // The nearest program above that is not a wrapper, and whether
            // the wrappers on the way up belong to the main line.
            let mut up = parent(i);
            let mut via_main = false;
            while let Some(j) = up.filter(|&j| roles[j] == Role::Wrapper) {
                via_main |= on_main[j];
                up = parent(j);
            }
            match up {
                None if on_main[i] || !(via_main && main_reaches_test) => Role::Test,
                None => Role::Helper,
                Some(j)
                    if roles[j] == Role::Test && seen[j].exe.is_some() && seen[j].exe == p.exe =>
                {
                    Role::Test
                }
                Some(_) => Role::Helper,
            }
        };
        roles.push(role);
    }
    if !roles.contains(&Role::Test) {
        if let Some(last) = (0..seen.len()).rev().find(|&i| on_main[i]) {
            roles[last] = Role::Test;
        }
    }
    roles
}

/// What the processes of one run prove.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// The record's `processes` block.
    pub check: ProcessCheck,
    /// Why the run is not applied: a test process bypassed a mechanism.
    pub not_applied: Option<String>,
    /// A helper's or a wrapper's bypass, one line each.
    pub warnings: Vec<String>,
    /// `not_applied` is only the record's silence (no process announced
    /// the preload): a reason that names the program is preferred.
    pub silent: bool,
}

/// Judges the programs a run's processes ran against the mechanisms of its
/// cell. `self_exe` is flakelab's own executable (the `__exec` helper).
pub fn judge(mechanisms: &[Mechanism], seen: &[SeenProcess], self_exe: &Path) -> Judgement {
    let roles = roles(seen, self_exe);
    let mut tested_by: Vec<String> = Vec::new();
    for (p, role) in seen.iter().zip(&roles) {
        if *role == Role::Test && !tested_by.contains(&p.label()) {
            tested_by.push(p.label());
        }
    }
    let mut bypassed: Vec<Bypass> = Vec::new();
    for mechanism in mechanisms {
        for (p, role) in seen.iter().zip(&roles) {
            let Some(why) = mechanism.bypassed_by(p) else {
                continue;
            };
            let exe = p.label();
            match bypassed.iter_mut().find(|b| {
                b.perturbation == mechanism.perturbation()
                    && b.exe == exe
                    && b.role == *role
                    && b.why == why
            }) {
                Some(b) => b.processes += 1,
                None => bypassed.push(Bypass {
                    perturbation: mechanism.perturbation().to_string(),
                    exe,
                    pid: p.pid,
                    role: *role,
                    why,
                    processes: 1,
                }),
            }
        }
    }
    let tests: Vec<&Bypass> = bypassed.iter().filter(|b| b.role == Role::Test).collect();
    let not_applied = tests.first().map(|first| {
        let mut reason = format!(
            "{}: the process that ran the tests, {} (pid {}), {}",
            first.perturbation,
            first.exe,
            first.pid,
            first.why.explain()
        );
        if tests.len() > 1 {
            let others: Vec<String> = tests[1..]
                .iter()
                .map(|b| format!("{} ({})", b.exe, b.why.as_str()))
                .collect();
            reason.push_str(&format!("; also {}", others.join(", ")));
        }
        reason
    });
    let warnings = bypassed
        .iter()
        .filter(|b| b.role != Role::Test)
        .map(|b| {
            format!(
                "{}: a {} process of the run, {}{}, {}; the processes that ran the tests ({}) were not affected",
                b.perturbation,
                b.role.as_str(),
                b.exe,
                if b.processes > 1 {
                    format!(" ({} processes)", b.processes)
                } else {
                    String::new()
                },
                b.why.explain(),
                tested_by.join(", ")
            )
        })
        .collect();
    Judgement {
        check: ProcessCheck {
            checked: mechanisms
                .iter()
                .map(|m| m.perturbation().to_string())
                .collect(),
            seen: u32::try_from(seen.len()).unwrap_or(u32::MAX),
            tested_by,
            bypassed,
        },
        not_applied,
        warnings,
        silent: false,
    }
}

/// Judges a run's clock record, the preload's own account of the run
/// (`exec` reads it back when the run has ended): None when no mechanism of
/// the cell keeps one. A record without a single announcement is not
/// applied: no process of the run read the shifted clock through the C
/// library.
pub fn judge_record(mechanisms: &[Mechanism], text: &str, self_exe: &Path) -> Option<Judgement> {
    let mechanism = mechanisms.iter().find(|m| m.keeps_record())?;
    let Mechanism::Preload {
        perturbation,
        lib,
        value,
        ..
    } = mechanism;
    let lines = clock::parse_record(text);
    let seen = clock::seen_from_record(&lines, lib, value);
    let mut judged = judge(std::slice::from_ref(mechanism), &seen, self_exe);
    let announced = lines
        .iter()
        .any(|l| matches!(l, clock::Line::Loaded { .. }));
    if !announced && judged.not_applied.is_none() {
        judged.silent = true;
        judged.not_applied = Some(format!(
            "{perturbation}: no process of the run loaded flakelab's clock preload (the program the run started is statically linked, a Go program, set-user-ID, or LD_PRELOAD was removed before it), so nothing read the shifted clock"
        ));
    }
    Some(judged)
}

/// The preload's account and the `/proc` watch's as one: every bypass and
/// warning either found (once), the first account's reason first.
pub fn merge(first: Judgement, second: Judgement) -> Judgement {
    let mut check = first.check;
    // The watch's tree is whole (the record misses forks without an exec,
    // whose programs it cannot place): its test processes when it saw any.
    if !second.check.tested_by.is_empty() {
        check.tested_by = second.check.tested_by;
    }
    for b in second.check.bypassed {
        let same = |a: &Bypass| {
            a.perturbation == b.perturbation && a.exe == b.exe && a.role == b.role && a.why == b.why
        };
        match check.bypassed.iter_mut().find(|a| same(a)) {
            Some(a) => a.processes = a.processes.max(b.processes),
            None => check.bypassed.push(b),
        }
    }
    check.seen = check.seen.max(second.check.seen);
    let mut warnings = first.warnings;
    for w in second.warnings {
        if !warnings.contains(&w) {
            warnings.push(w);
        }
    }
    let not_applied = match (first.silent, second.not_applied) {
        (true, Some(named)) => Some(named),
        (_, second) => first.not_applied.or(second),
    };
    Judgement {
        check,
        not_applied,
        warnings,
        silent: false,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    const LIB: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

    fn clock() -> Vec<Mechanism> {
        vec![Mechanism::Preload {
            perturbation: "faketime=+365d".into(),
            lib: LIB.into(),
            var: "FAKETIME",
            value: "+31536000".into(),
        }]
    }

    fn proc(pid: i32, parent: Option<usize>, exe: &str) -> SeenProcess {
        SeenProcess {
            pid,
            parent,
            exe: Some(exe.into()),
            name: Path::new(exe).file_name().unwrap().to_string_lossy().into(),
            static_linked: Some(false),
            go: Some(false),
            secure: Some(false),
            env: Some(BTreeMap::from([
                ("LD_PRELOAD".to_string(), LIB.to_string()),
                ("FAKETIME".to_string(), "+31536000".to_string()),
            ])),
        }
    }

    fn stat(mut p: SeenProcess) -> SeenProcess {
        p.static_linked = Some(true);
        p
    }

    fn go(mut p: SeenProcess) -> SeenProcess {
        p.static_linked = Some(true);
        p.go = Some(true);
        p
    }

    const ME: &str = "/opt/flakelab/bin/flakelab";

    fn judged(seen: &[SeenProcess]) -> Judgement {
        judge(&clock(), seen, Path::new(ME))
    }

    #[test]
    fn a_static_program_run_directly_is_not_applied_with_its_name() {
        let j = judged(&[stat(proc(10, None, "/t/year"))]);
        let reason = j.not_applied.unwrap();
        assert!(reason.contains("/t/year (pid 10)"), "{reason}");
        assert!(reason.contains("statically linked"), "{reason}");
        assert_eq!(j.check.tested_by, ["/t/year"]);
        assert_eq!(j.check.bypassed[0].why, BypassWhy::Static);
        assert_eq!(j.check.bypassed[0].role, Role::Test);
    }

    #[test]
    fn a_program_past_shells_and_the_helper_ran_the_tests() {
        // flakelab __exec → sh → sh (fork) → Go program
        let seen = [
            proc(10, None, ME),
            proc(10, Some(0), "/usr/bin/dash"),
            proc(11, Some(1), "/usr/bin/dash"),
            go(proc(11, Some(2), "/t/year-go")),
        ];
        assert_eq!(
            roles(&seen, Path::new(ME)),
            [Role::Wrapper, Role::Wrapper, Role::Wrapper, Role::Test]
        );
        let reason = judged(&seen).not_applied.unwrap();
        assert!(reason.contains("/t/year-go (pid 11)"), "{reason}");
        assert!(reason.contains("Go program"), "{reason}");
    }

    #[test]
    fn a_helper_of_the_test_process_only_warns() {
        // python runs the tests and calls a Go tool; its own workers are tests.
        let seen = [
            proc(10, None, "/usr/bin/python3.11"),
            go(proc(11, Some(0), "/usr/bin/docker")),
            proc(12, Some(0), "/usr/bin/python3.11"),
            proc(13, Some(2), "/usr/bin/dash"),
            stat(proc(14, Some(3), "/usr/bin/busybox")),
            stat(proc(15, Some(3), "/usr/bin/busybox")),
        ];
        assert_eq!(
            roles(&seen, Path::new(ME)),
            [
                Role::Test,
                Role::Helper,
                Role::Test,
                Role::Wrapper,
                Role::Helper,
                Role::Helper
            ]
        );
        let j = judged(&seen);
        assert_eq!(j.not_applied, None);
        assert_eq!(j.check.tested_by, ["/usr/bin/python3.11"]);
        assert_eq!(j.warnings.len(), 2, "{:?}", j.warnings);
        assert!(j.warnings[0].contains("helper process of the run, /usr/bin/docker"));
        assert!(j.warnings[1].contains("(2 processes)"), "{}", j.warnings[1]);
        assert_eq!(j.check.bypassed[1].processes, 2);
    }

    #[test]
    fn a_shim_hands_over_to_the_test_process_and_its_side_programs_are_helpers() {
        // env → bash (shim) runs basename and readlink, then execs python.
        let seen = [
            proc(10, None, "/usr/bin/env"),
            proc(10, Some(0), "/usr/bin/bash"),
            proc(11, Some(1), "/usr/bin/basename"),
            stat(proc(12, Some(1), "/usr/local/bin/static-tool")),
            proc(10, Some(1), "/usr/bin/python3.11"),
            stat(proc(13, Some(4), "/t/helper")),
        ];
        assert_eq!(
            roles(&seen, Path::new(ME)),
            [
                Role::Wrapper,
                Role::Wrapper,
                Role::Helper,
                Role::Helper,
                Role::Test,
                Role::Helper
            ]
        );
        let j = judged(&seen);
        assert_eq!(j.not_applied, None);
        assert_eq!(j.check.tested_by, ["/usr/bin/python3.11"]);
        // A script's main line stays a shell: what it runs is the test.
        let script = [
            proc(10, None, "/usr/bin/dash"),
            proc(11, Some(0), "/usr/bin/basename"),
            stat(proc(12, Some(0), "/t/year")),
        ];
        assert_eq!(
            roles(&script, Path::new(ME)),
            [Role::Wrapper, Role::Test, Role::Test]
        );
    }

    #[test]
    fn an_orphan_is_never_excused_as_a_helper() {
        let seen = [
            proc(10, None, "/usr/bin/python3.11"),
            stat(proc(30, None, "/t/daemon")),
        ];
        assert!(judged(&seen).not_applied.unwrap().contains("/t/daemon"));
    }

    #[test]
    fn shells_alone_make_the_leader_the_test_process() {
        let seen = [
            proc(10, None, "/usr/bin/dash"),
            proc(11, Some(0), "/usr/bin/dash"),
        ];
        assert_eq!(roles(&seen, Path::new(ME)), [Role::Test, Role::Wrapper]);
        let mut static_sh = stat(proc(10, None, "/bin/busybox-sh"));
        static_sh.exe = Some("/bin/sh".into());
        let j = judged(&[static_sh]);
        assert!(j.not_applied.unwrap().contains("/bin/sh"));
    }

    #[test]
    fn secure_execution_a_dropped_preload_and_a_changed_clock_are_bypasses() {
        let mut setuid = proc(11, Some(0), "/t/sdate");
        setuid.secure = Some(true);
        let mut child = proc(12, Some(1), "/usr/bin/date");
        child.env.as_mut().unwrap().remove("LD_PRELOAD");
        let seen = [proc(10, None, "/usr/bin/dash"), setuid, child];
        let j = judged(&seen);
        let whys: Vec<BypassWhy> = j.check.bypassed.iter().map(|b| b.why).collect();
        assert_eq!(whys, [BypassWhy::SecureExec, BypassWhy::NoPreload]);
        assert!(j.not_applied.unwrap().contains("secure-execution"));

        let mut other = proc(10, None, "/usr/bin/date");
        other
            .env
            .as_mut()
            .unwrap()
            .insert("FAKETIME".into(), "+0".into());
        assert_eq!(
            judged(&[other]).check.bypassed[0].why,
            BypassWhy::FaketimeChanged
        );
        let mut unknown = proc(10, None, "/usr/bin/date");
        unknown.env = None;
        unknown.secure = None;
        assert_eq!(judged(&[unknown]).not_applied, None);
    }

    #[test]
    fn a_dynamic_program_and_the_loader_itself_apply() {
        let j = judged(&[proc(10, None, "/usr/bin/date")]);
        assert_eq!(j.not_applied, None);
        assert!(j.check.bypassed.is_empty());
        assert_eq!(j.check.seen, 1);
        assert_eq!(j.check.checked, ["faketime=+365d"]);
        let loader = stat(proc(10, None, "/usr/lib64/ld-linux-x86-64.so.2"));
        assert_eq!(judged(&[loader]).not_applied, None);
    }

    #[test]
    fn nothing_is_watched_without_a_mechanism() {
        assert_eq!(watch(&[], vec!["true".into()]), None);
        let w = watch(&clock(), vec!["true".into()]).unwrap();
        assert_eq!(w.env, ["LD_PRELOAD", "FAKETIME"]);
    }

    fn own() -> Vec<Mechanism> {
        vec![Mechanism::Preload {
            perturbation: "faketime=+365d".into(),
            lib: "/c/clock-1.so".into(),
            var: clock::CLOCK_VAR,
            value: "+31536000".into(),
        }]
    }

    #[test]
    fn the_record_names_a_static_program_a_script_ran_and_silence_is_not_applied() {
        let me = Path::new(ME);
        let text = "A 10 1 /usr/bin/dash\nX 11 10 static /t/stat\nA 12 10 /usr/bin/date\n";
        let j = judge_record(&own(), text, me).unwrap();
        let reason = j.not_applied.unwrap();
        assert!(reason.contains("/t/stat (pid 11)"), "{reason}");
        assert!(reason.contains("statically linked"), "{reason}");
        // A Go program the test process runs on the side only warns.
        let text = "A 10 1 /usr/bin/python3\nX 11 10 go /t/tool\n";
        let j = judge_record(&own(), text, me).unwrap();
        assert_eq!(j.not_applied, None);
        assert_eq!(j.check.tested_by, ["/usr/bin/python3"]);
        assert!(j.warnings[0].contains("/t/tool"), "{:?}", j.warnings);
        // Nothing announced: not applied.
        let j = judge_record(&own(), "", me).unwrap();
        assert!(j
            .not_applied
            .unwrap()
            .contains("no process of the run loaded"));
        // A process whose clock variable the preload could not read.
        let j = judge_record(&own(), "A 10 1 off /usr/bin/date\n", me).unwrap();
        assert_eq!(j.check.bypassed[0].why, BypassWhy::FaketimeChanged);
        // libfaketime keeps no record.
        assert_eq!(judge_record(&clock(), "", me), None);
        // All dynamic: applied.
        let j = judge_record(&own(), "A 10 1 /usr/bin/dash\nA 11 10 /usr/bin/date\n", me).unwrap();
        assert_eq!(j.not_applied, None);
        assert_eq!(j.check.tested_by, ["/usr/bin/date"]);
    }

    #[test]
    fn the_two_accounts_merge_without_counting_a_bypass_twice() {
        let me = Path::new(ME);
        let record =
            judge_record(&own(), "A 10 1 /usr/bin/dash\nX 11 10 static /t/stat\n", me).unwrap();
        let mut watched = proc(10, None, "/usr/bin/dash");
        watched.env = None;
        let mut stat_seen = stat(proc(11, Some(0), "/t/stat"));
        stat_seen.env = None;
        let procfs = judge(&own(), &[watched, stat_seen], me);
        let merged = merge(record.clone(), procfs);
        assert_eq!(merged.check.bypassed.len(), 1);
        assert_eq!(merged.not_applied, record.not_applied);
        let clean = judge(&own(), &[], me);
        assert_eq!(merge(clean, record.clone()).not_applied, record.not_applied);
        // Silence in the record gives way to the watch's named program.
        let silent = judge_record(&own(), "", me).unwrap();
        let named = judge(&own(), &[stat(proc(10, None, "/t/year"))], me);
        let merged = merge(silent.clone(), named);
        assert!(merged.not_applied.unwrap().contains("/t/year (pid 10)"));
        let alone = merge(silent, judge(&own(), &[], me));
        assert!(alone
            .not_applied
            .unwrap()
            .contains("no process of the run loaded"));
    }
}
