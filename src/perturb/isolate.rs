//! The `__exec` helper: netns, rlimit and cpu-pin are applied in a fresh,
//! single-threaded copy of our own binary, which then `exec`s the subject
//! (STYLE practice 12). This module builds the helper's argv for a cell and
//! holds the helper's body; the harness never runs this code itself.

use std::os::unix::process::CommandExt as _;

use nix::errno::Errno;
use nix::sched::{sched_getaffinity, sched_setaffinity, unshare, CloneFlags, CpuSet};
use nix::sys::resource::{setrlimit, Resource};
use nix::unistd::{getgid, getuid, Pid};

/// The exit code of the helper when it could not set a perturbation up; the
/// line it prints starts with [`SETUP_FAILED`].
pub const SETUP_EXIT: i32 = 125;
/// The prefix of the helper's failure line.
pub const SETUP_FAILED: &str = "flakelab __exec: setup failed:";

/// What the helper applies before it execs the subject.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Isolation {
    /// A new network namespace with loopback up.
    pub netns: bool,
    /// `(resource, value)` limits, soft and hard.
    pub rlimits: Vec<(String, u64)>,
    /// CPUs the child may run on.
    pub cpus: Option<Vec<usize>>,
}

impl Isolation {
    /// Whether anything needs the helper.
    pub fn is_empty(&self) -> bool {
        !self.netns && self.rlimits.is_empty() && self.cpus.is_none()
    }

    /// The helper's argv prefix (ending in `--`), or nothing.
    pub fn helper_argv(&self, self_exe: &str) -> Vec<String> {
        if self.is_empty() {
            return Vec::new();
        }
        let mut argv = vec![self_exe.to_string(), "__exec".to_string()];
        if self.netns {
            argv.push("--netns".into());
        }
        for (res, v) in &self.rlimits {
            argv.push("--rlimit".into());
            argv.push(format!("{res}:{v}"));
        }
        if let Some(cpus) = &self.cpus {
            argv.push("--cpus".into());
            argv.push(cpu_list(cpus));
        }
        argv.push("--".into());
        argv
    }

    /// The same setup with standard tools, for the repro line: `unshare -rn`
    /// with loopback brought up by `ip`, `taskset`, `prlimit`.
    pub fn repro_prefix(&self) -> Vec<String> {
        let mut words = Vec::new();
        if self.netns {
            words.extend(
                [
                    "unshare",
                    "-rn",
                    "sh",
                    "-c",
                    "ip link set lo up && exec \"$@\"",
                    "sh",
                ]
                .map(String::from),
            );
        }
        if let Some(cpus) = &self.cpus {
            words.extend(["taskset".to_string(), "-c".to_string(), cpu_list(cpus)]);
        }
        if !self.rlimits.is_empty() {
            words.push("prlimit".into());
            for (res, v) in &self.rlimits {
                words.push(format!("--{res}={v}:{v}"));
            }
        }
        words
    }
}

/// `0,1,3`.
pub fn cpu_list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The CPUs this process may run on.
pub fn allowed_cpus() -> Vec<usize> {
    match sched_getaffinity(Pid::from_raw(0)) {
        Ok(set) => (0..CpuSet::count())
            .filter(|&i| set.is_set(i).unwrap_or(false))
            .collect(),
        Err(_) => (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect(),
    }
}

fn resource(name: &str) -> Option<Resource> {
    Some(match name {
        "nofile" => Resource::RLIMIT_NOFILE,
        "nproc" => Resource::RLIMIT_NPROC,
        "as" => Resource::RLIMIT_AS,
        "data" => Resource::RLIMIT_DATA,
        "stack" => Resource::RLIMIT_STACK,
        "fsize" => Resource::RLIMIT_FSIZE,
        "core" => Resource::RLIMIT_CORE,
        "memlock" => Resource::RLIMIT_MEMLOCK,
        "cpu" => Resource::RLIMIT_CPU,
        _ => return None,
    })
}

/// Reads one limit of this process: `(soft, hard)`.
pub fn current_rlimit(name: &str) -> Option<(u64, u64)> {
    nix::sys::resource::getrlimit(resource(name)?).ok()
}

/// The helper's body: applies `iso` to this process, then execs `command`.
/// Returns only on failure, with the reason.
pub fn enter(iso: &Isolation, command: &[String]) -> String {
    if let Err(why) = apply(iso) {
        return why;
    }
    let Some((program, args)) = command.split_first() else {
        return "no command after `--`".into();
    };
    // std's exec, not a bare execvp: like every spawn of a baseline run it
    // restores SIGPIPE (which the Rust runtime of this helper ignores, and
    // an ignored signal survives exec) and clears the signal mask, so the
    // subject starts with the baseline's signal state.
    let e = std::process::Command::new(program).args(args).exec();
    format!("cannot start `{program}`: {e}")
}

fn apply(iso: &Isolation) -> Result<(), String> {
    if iso.netns {
        new_network_namespace()?;
    }
    for (name, value) in &iso.rlimits {
        let res = resource(name).ok_or_else(|| format!("unknown resource `{name}`"))?;
        setrlimit(res, *value, *value)
            .map_err(|e| format!("cannot set rlimit {name} to {value}: {}", e.desc()))?;
    }
    if let Some(cpus) = &iso.cpus {
        let mut set = CpuSet::new();
        for &cpu in cpus {
            set.set(cpu)
                .map_err(|e| format!("CPU {cpu}: {}", e.desc()))?;
        }
        sched_setaffinity(Pid::from_raw(0), &set)
            .map_err(|e| format!("cannot pin to CPUs {}: {}", cpu_list(cpus), e.desc()))?;
    }
    Ok(())
}

/// Enters a new network namespace (inside a new user namespace unless we
/// may create one directly) and brings loopback up.
fn new_network_namespace() -> Result<(), String> {
    let direct = unshare(CloneFlags::CLONE_NEWNET);
    if let Err(first) = direct {
        if first != Errno::EPERM {
            return Err(refused("a network namespace", first));
        }
        let (uid, gid) = (getuid(), getgid());
        unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET)
            .map_err(|e| refused("a user + network namespace", e))?;
        let write = |file: &str, text: String| {
            std::fs::write(format!("/proc/self/{file}"), text)
                .map_err(|e| format!("cannot write /proc/self/{file}: {e}"))
        };
        write("setgroups", "deny".into())?;
        write("uid_map", format!("{uid} {uid} 1"))?;
        write("gid_map", format!("{gid} {gid} 1"))?;
    }
    loopback_up().map_err(|e| {
        format!(
            "cannot bring loopback up in the new namespace: {}",
            e.desc()
        )
    })
}

/// The kernel's refusal, with the setting that controls it.
fn refused(what: &str, e: Errno) -> String {
    let hint = match e {
        Errno::EPERM | Errno::EACCES => {
            "unprivileged user namespaces are disabled here: set kernel.unprivileged_userns_clone=1 \
             (Debian) or kernel.apparmor_restrict_unprivileged_userns=0 (Ubuntu 23.10+), or run as root"
        }
        Errno::ENOSPC => {
            "the namespace limit is reached or 0: raise /proc/sys/user/max_net_namespaces \
             and /proc/sys/user/max_user_namespaces"
        }
        Errno::EINVAL => "this kernel lacks namespace support (CONFIG_NET_NS / CONFIG_USER_NS)",
        _ => "see unshare(2)",
    };
    format!("the kernel refused {what}: {} ({e}); {hint}", e.desc())
}

/// SIOCSIFFLAGS on `lo` — the one ioctl nix does not wrap.
#[expect(
    unsafe_code,
    reason = "ioctl(SIOCGIFFLAGS/SIOCSIFFLAGS) on an ifreq we own"
)]
fn loopback_up() -> Result<(), Errno> {
    use nix::libc;
    use std::os::fd::AsRawFd;
    let sock = nix::sys::socket::socket(
        nix::sys::socket::AddressFamily::Inet,
        nix::sys::socket::SockType::Datagram,
        nix::sys::socket::SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    // SAFETY: the fd is a live socket and `req` is a valid ifreq for these requests.
    unsafe {
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) < 0 {
            return Err(Errno::last());
        }
        req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &req) < 0 {
            return Err(Errno::last());
        }
    }
    Ok(())
}

/// The `__exec` helper's body: parses its own arguments (rlimits as
/// `RES:VALUE`, a comma-separated CPU list), applies netns, limits and
/// pinning to this process, then execs `command`. Returns only when it
/// failed, with the line the run's classification looks for
/// ([`SETUP_FAILED`]); the caller prints it and exits [`SETUP_EXIT`].
pub fn helper(netns: bool, rlimits: &[String], cpus: Option<&str>, command: &[String]) -> String {
    let mut iso = Isolation {
        netns,
        ..Default::default()
    };
    let mut failure = None;
    for spec in rlimits {
        match crate::catalog::values::parse_rlimit(spec) {
            Ok(limit) => iso.rlimits.push(limit),
            Err(e) => failure = Some(e),
        }
    }
    if let Some(list) = cpus {
        match list
            .split(',')
            .map(str::parse)
            .collect::<Result<Vec<usize>, _>>()
        {
            Ok(cpus) => iso.cpus = Some(cpus),
            Err(e) => failure = Some(format!("bad CPU list `{list}`: {e}")),
        }
    }
    let why = match failure {
        Some(why) => why,
        None => enter(&iso, command),
    };
    format!("{SETUP_FAILED} {why}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helper_and_repro_words() {
        let iso = Isolation {
            netns: true,
            rlimits: vec![("nofile".into(), 64)],
            cpus: Some(vec![0]),
        };
        assert_eq!(
            iso.helper_argv("/bin/flakelab"),
            [
                "/bin/flakelab",
                "__exec",
                "--netns",
                "--rlimit",
                "nofile:64",
                "--cpus",
                "0",
                "--"
            ]
        );
        let repro = iso.repro_prefix();
        assert_eq!(&repro[..2], ["unshare", "-rn"]);
        assert!(repro.contains(&"taskset".to_string()));
        assert_eq!(repro.last().unwrap(), "--nofile=64:64");
        assert!(Isolation::default().helper_argv("x").is_empty());
    }

    #[test]
    fn refusals_name_the_setting() {
        assert!(refused("x", Errno::EPERM).contains("unprivileged_userns"));
        assert!(refused("x", Errno::ENOSPC).contains("max_net_namespaces"));
    }

    #[test]
    fn this_process_has_cpus_and_limits() {
        assert!(!allowed_cpus().is_empty());
        let (soft, hard) = current_rlimit("nofile").unwrap();
        assert!(soft <= hard);
    }
}
