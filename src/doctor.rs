//! `flakelab doctor`: one line per capability a perturbation needs (and the
//! survivor guard, which ends a killed flakelab's runs), each `ok` or the
//! reason and the fix. Checks that need a process go through our own
//! `__exec` helper, exactly as a cell would.

use std::fmt::Write as _;
use std::path::Path;

use crate::perturb::{faketime, HostFacts};

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
    match faketime::locate(host.faketime_override.as_deref()) {
        Ok(path) => checks.push(Check {
            name: "libfaketime",
            ok: true,
            detail: path.display().to_string(),
            fix: None,
            needed: true,
        }),
        Err(_) => checks.push(Check {
            name: "libfaketime",
            ok: false,
            detail: "not found".into(),
            fix: Some(
                "apt-get install faketime libfaketime (or set FAKETIME_LIB to the library)".into(),
            ),
            needed: true,
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
    checks.push(warden(&host.self_exe));
    checks
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
