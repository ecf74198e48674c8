//! `flakelab doctor`: one line per capability a perturbation needs (and the
//! survivor guard, which ends a killed flakelab's runs), each `ok` or the
//! reason and the fix. Checks that need a process go through our own
//! `__exec` helper, exactly as a cell would.

use std::fmt::Write as _;
use std::path::Path;

use crate::perturb::{clock, faketime, HostFacts};

/// One capability.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// What is checked.
    pub name: &'static str,
    /// Whether it works here.
    pub ok: bool,
    /// What was found (path, count, kernel reason).
    pub detail: String,
    /// How to fix it, when not ok.
    pub fix: Option<String>,
    /// Whether the `standard` matrix needs it.
    pub needed: bool,
}

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Runs every check.
pub fn run(host: &HostFacts) -> Vec<Check> {
    let mut checks = Vec::new();
    let kiri = host.zoneinfo.join("Pacific/Kiritimati");
    checks.push(Check {
        name: "zoneinfo",
        ok: kiri.is_file(),
        detail: host.zoneinfo.display().to_string(),
        fix: Some(
            "install the time zone database (Debian: `apt-get install tzdata`) or set TZDIR".into(),
        ),
        needed: true,
    });
    let locales = crate::exec::query("locale", &["-a"]).unwrap_or_default();
    let count = locales.lines().count();
    checks.push(Check {
        name: "locales",
        ok: count > 0,
        detail: format!(
            "{count} installed: {}",
            locales.lines().take(6).collect::<Vec<_>>().join(" ")
        ),
        fix: Some("install locales (Debian: `apt-get install locales`, then `locale-gen`)".into()),
        needed: false,
    });
    checks.push(clock_preload(host));
    // libfaketime is optional: used only where FAKETIME_LIB or a recipe
    // chooses it, and needed only then.
    let chosen = host.faketime_override.is_some();
    match faketime::locate(host.faketime_override.as_deref()) {
        Ok(path) => checks.push(Check {
            name: "libfaketime",
            ok: true,
            detail: format!(
                "{} ({})",
                path.display(),
                if chosen {
                    "chosen by FAKETIME_LIB for the clock cells"
                } else {
                    "optional: the clock cells use flakelab's own preload"
                }
            ),
            fix: None,
            needed: chosen,
        }),
        Err(_) => checks.push(Check {
            name: "libfaketime",
            ok: false,
            detail: if chosen {
                "not found where FAKETIME_LIB points".into()
            } else {
                "not installed (optional: the clock cells use flakelab's own preload)".into()
            },
            fix: Some(
                "apt-get install faketime libfaketime (or set FAKETIME_LIB to the library)".into(),
            ),
            needed: chosen,
        }),
    }
    checks.push(user_namespaces());
    checks.push(network_namespace(&host.self_exe));
    checks.push(Check {
        name: "affinity",
        ok: !host.cpus.is_empty(),
        detail: format!(
            "{} CPU(s) usable: {}",
            host.cpus.len(),
            crate::perturb::isolate::cpu_list(&host.cpus)
        ),
        fix: Some("sched_getaffinity failed; cpu-pin cannot work here".into()),
        needed: false,
    });
    checks.push(cgroups());
    checks.push(race_go());
    checks.push(race_rust());
    checks.push(warden(&host.self_exe));
    checks
}

/// flakelab's own clock preload: written to the cache directory, and a
/// `date` under it reads the clock a year ahead.
fn clock_preload(host: &HostFacts) -> Check {
    const YEAR: i64 = 365 * 86_400;
    let fix = Some("set XDG_CACHE_HOME to a directory of your own".to_string());
    let lib = match clock::install(host.cache_dir.as_deref()) {
        Ok(lib) => lib,
        Err(e) => {
            return Check {
                name: "clock preload",
                ok: false,
                detail: e.message(),
                fix: Some(e.hint().to_string()),
                needed: true,
            }
        }
    };
    let preload = format!("LD_PRELOAD={}", lib.display());
    let shift = format!("{}={}", clock::CLOCK_VAR, clock::value(Some(YEAR), None));
    let read = crate::exec::query("env", &[&preload, &shift, "date", "+%s"]);
    let now = jiff::Timestamp::now().as_second();
    let seen = read.as_deref().and_then(|t| t.trim().parse::<i64>().ok());
    let ok =
        seen.is_some_and(|s| (s - now - YEAR).abs() <= crate::perturb::probe::CLOCK_TOLERANCE_S);
    Check {
        name: "clock preload",
        ok,
        detail: match seen {
            Some(s) if ok => format!(
                "{}; `date` under it reads {} s ahead",
                lib.display(),
                s - now
            ),
            Some(s) => format!(
                "{}; `date` under it reads {} s from the real clock, expected {YEAR}",
                lib.display(),
                s - now
            ),
            None => format!("{}; `env … date +%s` could not be run", lib.display()),
        },
        fix,
        needed: true,
    }
}

/// Whether `go test -race` can build here: cgo on (`go env CGO_ENABLED`,
/// which reads this environment) and its C compiler on PATH.
fn race_go() -> Check {
    let env = crate::exec::query("go", &["env", "CGO_ENABLED", "CC"]);
    let (ok, detail) = match env.as_deref().map(|t| t.lines().collect::<Vec<_>>()) {
        None => (
            false,
            "go not found on PATH: no go test -race here".to_string(),
        ),
        Some(lines) => {
            let cgo = lines.first().copied().unwrap_or("").trim();
            let cc = lines.get(1).copied().unwrap_or("").trim();
            let compiler = cc.split_whitespace().next().unwrap_or("");
            go_race_verdict(cgo, cc, !compiler.is_empty() && on_path(compiler))
        }
    };
    Check {
        name: "race (go)",
        ok,
        detail,
        fix: Some(
            "race cells for go are not applied here: go test -race needs cgo and a C compiler \
             (unset CGO_ENABLED=0, apt-get install gcc libc6-dev)"
                .into(),
        ),
        needed: false,
    }
}

/// What `go env CGO_ENABLED CC` says about `-race`.
fn go_race_verdict(cgo: &str, cc: &str, cc_found: bool) -> (bool, String) {
    if cgo != "1" {
        return (
            false,
            format!("CGO_ENABLED={cgo}: go test -race requires cgo (`go: -race requires cgo`)"),
        );
    }
    if !cc_found {
        return (
            false,
            format!("CGO_ENABLED=1 but the C compiler `{cc}` is not on PATH: the race runtime cannot be linked"),
        );
    }
    (true, format!("CGO_ENABLED=1, C compiler {cc}"))
}

/// Whether a ThreadSanitizer build of a Rust subject can run here: a
/// nightly `rustc` (the sanitizer and -Zbuild-std are nightly-only) with
/// the rust-src component (the standard library rebuilt instrumented).
fn race_rust() -> Check {
    let version = crate::exec::query("rustc", &["-vV"]);
    let sysroot = crate::exec::query("rustc", &["--print", "sysroot"]);
    let found = version.is_some();
    let (ok, detail) = match version {
        None => (
            false,
            "rustc not found on PATH (needed only by cargo test subjects)".to_string(),
        ),
        Some(v) => {
            let release = v
                .lines()
                .find_map(|l| l.strip_prefix("release: "))
                .unwrap_or("?")
                .trim()
                .to_string();
            let src = sysroot.map(|s| {
                Path::new(s.trim())
                    .join("lib/rustlib/src/rust/library")
                    .is_dir()
            });
            rust_race_verdict(&release, src.unwrap_or(false))
        }
    };
    Check {
        name: "race (rust)",
        ok,
        detail,
        fix: Some(rust_race_fix(found).into()),
        needed: false,
    }
}

/// The fix for the Rust race cells: with no `rustc` on PATH, that first
/// (only cargo subjects need it); with one, the nightly and its rust-src.
fn rust_race_fix(rustc_found: bool) -> &'static str {
    if rustc_found {
        "race cells for cargo test are not applied here: a ThreadSanitizer build needs a \
         nightly toolchain with rust-src (rustup toolchain install nightly --component \
         rust-src); RUSTC_BOOTSTRAP=1 on stable does not stand in, it has no library source \
         to rebuild"
    } else {
        "only a cargo test subject's race cells need it: no rustc is on this user's PATH \
         (rustup installs one per user, in ~/.cargo/bin); a Rust project's race cells need \
         rustc there, from a nightly toolchain with rust-src"
    }
}

/// What the toolchain's release and its rust-src say about TSan.
fn rust_race_verdict(release: &str, has_src: bool) -> (bool, String) {
    let nightly = release.contains("nightly") || release.contains("-dev");
    match (nightly, has_src) {
        (true, true) => (true, format!("rustc {release} with rust-src")),
        (true, false) => (false, format!("rustc {release} has no rust-src component: -Zbuild-std cannot rebuild the standard library with the sanitizer")),
        (false, _) => (false, format!("rustc {release} is not nightly: -Zsanitizer=thread and -Zbuild-std are nightly-only")),
    }
}

/// Whether `program` is a path to a file or names one on PATH.
fn on_path(program: &str) -> bool {
    if program.contains('/') {
        return Path::new(program).is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// Whether a killed flakelab's runs are ended here (`exec::warden`).
fn warden(self_exe: &Path) -> Check {
    let (ok, detail) = match crate::exec::warden::check(self_exe) {
        Ok(detail) => (true, detail),
        Err(why) => (false, why),
    };
    Check {
        name: "survivor guard",
        ok,
        detail,
        fix: Some(
            "without it a flakelab killed by SIGKILL or the OOM killer leaves its runs' processes \
             running (sessions say so in a warning); unset FLAKELAB_TEST_NO_WARDEN, and mount /proc \
             without hidepid so that a process's environment can be read"
                .into(),
        ),
        needed: false,
    }
}

fn user_namespaces() -> Check {
    let max = read_trim("/proc/sys/user/max_user_namespaces");
    let clone = read_trim("/proc/sys/kernel/unprivileged_userns_clone");
    let apparmor = read_trim("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
    let root = nix::unistd::geteuid().is_root();
    let mut problems = Vec::new();
    if max.as_deref() == Some("0") {
        problems.push("user.max_user_namespaces is 0 (set it above 0)".to_string());
    }
    if !root && clone.as_deref() == Some("0") {
        problems.push("kernel.unprivileged_userns_clone is 0 (set it to 1)".to_string());
    }
    if !root && apparmor.as_deref() == Some("1") {
        problems
            .push("kernel.apparmor_restrict_unprivileged_userns is 1 (set it to 0)".to_string());
    }
    Check {
        name: "user namespaces",
        ok: problems.is_empty(),
        detail: format!(
            "max_user_namespaces={}{}",
            max.unwrap_or_else(|| "?".into()),
            if root { ", running as root" } else { "" }
        ),
        fix: Some(problems.join("; ")),
        needed: !root,
    }
}

fn network_namespace(self_exe: &Path) -> Check {
    let exe = self_exe.display().to_string();
    let (ok, detail) = match crate::exec::query::query_all(
        &exe,
        &["__exec", "--netns", "--", &exe, "__probe", "net"],
    ) {
        Ok((success, text)) => {
            let ok =
                success && text.contains("route: unreachable") && text.contains("loopback: ok");
            (
                ok,
                text.lines().map(str::trim).collect::<Vec<_>>().join("; "),
            )
        }
        Err(e) => (false, format!("cannot run the helper: {e}")),
    };
    Check {
        name: "network namespaces",
        ok,
        detail,
        fix: Some("see the reason above; namespaces need CONFIG_NET_NS and CONFIG_USER_NS and may be limited by sysctls".into()),
        needed: true,
    }
}

fn cgroups() -> Check {
    let v2 = read_trim("/sys/fs/cgroup/cgroup.controllers");
    let own = read_trim("/proc/self/cgroup").unwrap_or_default();
    let detail = if let Some(controllers) = v2 {
        let path = own
            .lines()
            .find_map(|l| l.strip_prefix("0::"))
            .unwrap_or("/");
        let quota =
            read_trim(&format!("/sys/fs/cgroup{path}/cpu.max")).unwrap_or_else(|| "max".into());
        Some(format!(
            "v2, controllers: {controllers}; this cgroup's cpu.max: {quota}"
        ))
    } else if Path::new("/sys/fs/cgroup/cpu").is_dir() {
        let quota = read_trim("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").unwrap_or_else(|| "?".into());
        Some(format!(
            "v1, cpu controller mounted; cpu.cfs_quota_us: {quota}"
        ))
    } else {
        None
    };
    Check {
        name: "cgroups",
        ok: detail.is_some(),
        detail: detail.unwrap_or_else(|| "no cgroup hierarchy at /sys/fs/cgroup".into()),
        fix: Some("informational: a CPU quota limits what cpu-stress can load".into()),
        needed: false,
    }
}

/// One line per check.
pub fn render(checks: &[Check]) -> String {
    let mut out = String::new();
    let w = checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
    for c in checks {
        let status = if c.ok {
            "ok"
        } else if c.needed {
            "MISSING"
        } else {
            "unavailable"
        };
        let _ = writeln!(out, "{:<w$}  {status:<11}  {}", c.name, c.detail);
        if !c.ok {
            if let Some(fix) = c.fix.as_ref().filter(|f| !f.is_empty()) {
                let _ = writeln!(out, "{:<w$}  {:<11}  fix: {fix}", "", "");
            }
        }
    }
    if checks.iter().any(|c| c.needed && !c.ok) {
        let _ = writeln!(out, "\nthe `standard` matrix needs what is MISSING above; its cells will be refused or not applied");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_rustc_the_fix_says_so_before_any_nightly() {
        let missing = rust_race_fix(false);
        assert!(
            missing.contains("no rustc is on this user's PATH"),
            "{missing}"
        );
        assert!(
            missing.starts_with("only a cargo test subject"),
            "{missing}"
        );
        let found = rust_race_fix(true);
        assert!(found.contains("nightly toolchain with rust-src"), "{found}");
        assert!(!found.contains("PATH"), "{found}");
    }

    #[test]
    fn race_verdicts_name_what_is_missing() {
        let (ok, why) = go_race_verdict("0", "gcc", true);
        assert!(!ok);
        assert!(
            why.starts_with("CGO_ENABLED=0: go test -race requires cgo"),
            "{why}"
        );
        let (ok, why) = go_race_verdict("1", "gcc", false);
        assert!(!ok);
        assert!(why.contains("`gcc` is not on PATH"), "{why}");
        assert_eq!(
            go_race_verdict("1", "gcc", true),
            (true, "CGO_ENABLED=1, C compiler gcc".into())
        );
        let (ok, why) = rust_race_verdict("1.95.0", false);
        assert!(!ok);
        assert!(why.contains("is not nightly"), "{why}");
        let (ok, why) = rust_race_verdict("1.97.0-nightly", false);
        assert!(!ok);
        assert!(why.contains("no rust-src"), "{why}");
        assert!(rust_race_verdict("1.97.0-nightly", true).0);
    }

    #[test]
    fn render_marks_missing_needs_and_fixes() {
        let checks = vec![
            Check {
                name: "libfaketime",
                ok: false,
                detail: "not found".into(),
                fix: Some("apt-get install faketime libfaketime".into()),
                needed: true,
            },
            Check {
                name: "affinity",
                ok: true,
                detail: "2 CPU(s)".into(),
                fix: None,
                needed: false,
            },
        ];
        let text = render(&checks);
        assert!(text.contains("libfaketime  MISSING"), "{text}");
        assert!(
            text.contains("fix: apt-get install faketime libfaketime"),
            "{text}"
        );
        assert!(text.contains("affinity     ok"), "{text}");
        assert!(text.contains("standard` matrix needs"), "{text}");
    }
}
