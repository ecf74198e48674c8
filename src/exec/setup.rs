//! A run's isolation — a new network namespace with loopback up, resource
//! limits, CPU affinity — applied inside the run's own process between fork
//! and exec, and checked there before the subject is exec'd.
//!
//! This replaces exec'ing flakelab itself as an `__exec` helper per run
//! (a 7 MB binary, its loader and its runtime before the subject starts).
//! Everything the child needs (paths, map lines, the CPU set, the harness's
//! own namespace) is computed before the fork; between fork and exec the
//! child makes only system calls — no allocation, no lock — as a child of a
//! multi-threaded process must. The child is single-threaded there, so it
//! may create a user namespace too.
//!
//! A `netns` cell's runs inside a session enter the cell's one namespace
//! (`exec::cellns`, two `setns` calls) instead of each creating its own:
//! the kernel's creation and teardown of a network namespace was most of
//! such a run's cost.
//!
//! The proof is per run and comes from the run's own process: after the
//! setup the child reads back its network namespace (`/proc/self/ns/net`
//! must differ from the harness's and, in a cell's namespace, be that
//! namespace), that it reaches loopback and has no route off the machine
//! (a UDP `connect`, which sends nothing, to a documentation address of
//! IPv4 and of IPv6 must fail with "network unreachable"), its limits and
//! its affinity, and
//! refuses to exec the subject when one of them is not what the cell
//! declares. exec keeps all three, so the subject runs with what was read.
//! A failure is reported through a close-on-exec pipe as (step, index,
//! errno) and becomes a spawn failure whose message starts with
//! [`SETUP_FAILED`]; the run is then not applied.
//!
//! The signal state is the baseline's: std's spawn resets the signal mask
//! and SIGPIPE in the child before this setup runs, exactly as for a
//! baseline run.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::MetadataExt as _;
use std::sync::Arc;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::libc;
use nix::sched::{sched_getaffinity, sched_setaffinity, unshare, CloneFlags, CpuSet};
use nix::sys::resource::{getrlimit, setrlimit, Resource};
use nix::unistd::{getgid, getuid, pipe2, Pid};
use serde::{Deserialize, Serialize};

/// The prefix of every setup failure's message.
pub const SETUP_FAILED: &str = "flakelab __exec: setup failed:";

/// What a cell sets up in each run's process before the subject starts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Isolation {
    /// A new network namespace with loopback up.
    pub netns: bool,
    /// `(resource, value)` limits, soft and hard.
    pub rlimits: Vec<(String, u64)>,
    /// CPUs the child may run on.
    pub cpus: Option<Vec<usize>>,
}

impl Isolation {
    /// Whether there is nothing to set up.
    pub fn is_empty(&self) -> bool {
        !self.netns && self.rlimits.is_empty() && self.cpus.is_none()
    }
}

/// `0,1,3`.
pub fn cpu_list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The resource a limit's name (`nofile`, `as`, …) stands for.
pub fn resource(name: &str) -> Option<Resource> {
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

/// The kernel's refusal of a namespace, with the setting that controls it.
pub fn refused(what: &str, e: Errno) -> String {
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

/// A network namespace made once for a cell and entered by each of its
/// runs (`exec::cellns` makes it); the descriptors keep it alive.
#[derive(Debug)]
pub struct CellNetns {
    /// The user namespace that owns it, when the harness could not create
    /// a network namespace in its own.
    pub user: Option<OwnedFd>,
    /// The network namespace.
    pub net: OwnedFd,
    /// Its inode, as `/proc/self/ns/net` shows it to a process inside.
    pub inode: u64,
}

/// The steps of the setup, as the child reports a failed one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
enum Step {
    NetDirect = 1,
    UserNet = 2,
    SetGroups = 3,
    UidMap = 4,
    GidMap = 5,
    Loopback = 6,
    Rlimit = 7,
    Pin = 8,
    ProveNet = 9,
    ProveRlimit = 10,
    ProvePin = 11,
    EnterUser = 12,
    EnterNet = 13,
    ProveCell = 14,
    ProveRoutes = 15,
}

impl Step {
    fn from_u32(n: u32) -> Option<Step> {
        use Step::*;
        [
            NetDirect,
            UserNet,
            SetGroups,
            UidMap,
            GidMap,
            Loopback,
            Rlimit,
            Pin,
            ProveNet,
            ProveRlimit,
            ProvePin,
            EnterUser,
            EnterNet,
            ProveCell,
            ProveRoutes,
        ]
        .into_iter()
        .find(|s| *s as u32 == n)
    }
}

/// One limit, resolved before the fork.
#[derive(Debug, Clone)]
struct Limit {
    name: String,
    resource: Resource,
    value: u64,
}

/// Everything the child needs, computed before the fork.
#[derive(Debug, Clone)]
struct Plan {
    netns: bool,
    /// The harness's own network namespace (inode of `/proc/self/ns/net`).
    host_netns: u64,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    limits: Vec<Limit>,
    cpus: Option<(CpuSet, Vec<usize>)>,
    /// The cell's namespace to enter instead of creating one.
    cell: Option<Arc<CellNetns>>,
}

/// An isolation made ready for one spawn: install it on the command, spawn,
/// then ask [`Armed::failure`] why a failed spawn failed.
#[derive(Debug)]
pub struct Armed {
    plan: Plan,
    /// Read end of the report pipe.
    read: OwnedFd,
    /// Write end, held by the child until its exec closes it.
    write: Option<OwnedFd>,
}

impl Armed {
    /// Resolves `iso` for a spawn, entering `cell`'s network namespace
    /// (when given and `iso` asks for one) instead of creating one; an
    /// isolation that cannot be expressed (an unknown resource, a CPU out
    /// of range) is the message of a setup failure.
    pub fn new(iso: &Isolation, cell: Option<Arc<CellNetns>>) -> Result<Armed, String> {
        let fail = |why: String| format!("{SETUP_FAILED} {why}");
        let mut plan = Plan::new(iso).map_err(fail)?;
        plan.cell = cell.filter(|_| iso.netns);
        let (read, write) = pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK)
            .map_err(|e| fail(format!("cannot create the setup's report pipe: {e}")))?;
        Ok(Armed {
            plan,
            read,
            write: Some(write),
        })
    }

    /// Installs the setup as the command's `pre_exec` step.
    #[expect(
        unsafe_code,
        reason = "pre_exec: the closure makes only system calls on data prepared before the fork"
    )]
    pub fn install(&self, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt as _;
        let plan = self.plan.clone();
        let report = self.write.as_ref().map_or(-1, AsRawFd::as_raw_fd);
        // SAFETY: `in_child` allocates nothing, takes no lock and touches
        // only `plan` (owned by the closure) and the report pipe's fd.
        unsafe {
            cmd.pre_exec(move || in_child(&plan, report));
        }
    }

    /// Whether the setup can run in a child that shares the harness's
    /// memory until its exec (`exec::spawn`): everything but creating a
    /// user namespace, which the kernel refuses to such a child. A `netns`
    /// run without its cell's namespace creates one.
    pub fn may_share_memory(&self) -> bool {
        !self.plan.netns || self.plan.cell.is_some()
    }

    /// Runs the setup in the child, between its clone and its exec: system
    /// calls only on the plan made before. Only for [`Armed::may_share_memory`].
    pub(super) fn in_child(&self) -> io::Result<()> {
        let report = self.write.as_ref().map_or(-1, AsRawFd::as_raw_fd);
        in_child(&self.plan, report)
    }

    /// After the spawn: closes the harness's copy of the write end, and
    /// when the spawn failed in the setup, returns the setup's failure
    /// message (starting with [`SETUP_FAILED`]).
    pub fn failure(mut self, spawn_failed: bool) -> Option<String> {
        drop(self.write.take());
        if !spawn_failed {
            return None;
        }
        let mut buf = [0u8; 12];
        let n = nix::unistd::read(self.read.as_raw_fd(), &mut buf).ok()?;
        if n != buf.len() {
            return None;
        }
        let word = |i: usize| u32::from_ne_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]);
        let step = Step::from_u32(word(0))?;
        let index = word(4) as usize;
        let errno = Errno::from_raw(word(8) as i32);
        Some(format!(
            "{SETUP_FAILED} {}",
            self.plan.explain(step, index, errno)
        ))
    }
}

impl Plan {
    /// Resolves `iso`; one that cannot be expressed (an unknown resource, a
    /// CPU out of range) is the reason.
    fn new(iso: &Isolation) -> Result<Plan, String> {
        let mut limits = Vec::new();
        for (name, value) in &iso.rlimits {
            let resource = resource(name).ok_or_else(|| format!("unknown resource `{name}`"))?;
            limits.push(Limit {
                name: name.clone(),
                resource,
                value: *value,
            });
        }
        let cpus = match &iso.cpus {
            None => None,
            Some(list) => {
                let mut set = CpuSet::new();
                for &cpu in list {
                    set.set(cpu)
                        .map_err(|e| format!("CPU {cpu}: {}", e.desc()))?;
                }
                Some((set, list.clone()))
            }
        };
        let host_netns = if iso.netns {
            std::fs::metadata("/proc/self/ns/net")
                .map_err(|e| format!("cannot read this process's network namespace: {e}"))?
                .ino()
        } else {
            0
        };
        let (uid, gid) = (getuid(), getgid());
        Ok(Plan {
            netns: iso.netns,
            host_netns,
            uid_map: format!("{uid} {uid} 1").into_bytes(),
            gid_map: format!("{gid} {gid} 1").into_bytes(),
            limits,
            cpus,
            cell: None,
        })
    }

    /// The message of a failed step.
    fn explain(&self, step: Step, index: usize, e: Errno) -> String {
        let limit = self.limits.get(index);
        let (name, value) = limit.map_or(("?", 0), |l| (l.name.as_str(), l.value));
        let cpus = self
            .cpus
            .as_ref()
            .map(|(_, l)| cpu_list(l))
            .unwrap_or_default();
        match step {
            Step::NetDirect => refused("a network namespace", e),
            Step::UserNet => refused("a user + network namespace", e),
            Step::SetGroups => format!("cannot write /proc/self/setgroups: {}", e.desc()),
            Step::UidMap => format!("cannot write /proc/self/uid_map: {}", e.desc()),
            Step::GidMap => format!("cannot write /proc/self/gid_map: {}", e.desc()),
            Step::Loopback => format!(
                "cannot bring loopback up in the new namespace: {}",
                e.desc()
            ),
            Step::Rlimit => format!("cannot set rlimit {name} to {value}: {}", e.desc()),
            Step::Pin => format!("cannot pin to CPUs {cpus}: {}", e.desc()),
            Step::ProveNet => {
                "the run's process is still in the harness's network namespace after the setup"
                    .to_string()
            }
            Step::ProveRlimit => format!(
                "the run's process does not have the limit {name} = {value} after the setup"
            ),
            Step::ProvePin => {
                format!("the run's process is not pinned to CPUs {cpus} after the setup")
            }
            Step::EnterUser => format!(
                "cannot enter the cell's user namespace (setns): {}",
                e.desc()
            ),
            Step::EnterNet => format!(
                "cannot enter the cell's network namespace (setns): {}",
                e.desc()
            ),
            Step::ProveCell => {
                "the run's process is not in its cell's network namespace after the setup"
                    .to_string()
            }
            Step::ProveRoutes => {
                let what = ROUTE_CHECKS[index.min(ROUTE_CHECKS.len() - 1)];
                if e == Errno::UnknownErrno {
                    format!("the run's network namespace {what}")
                } else {
                    format!("the run's network namespace {what}: {}", e.desc())
                }
            }
        }
    }
}

/// Applies `iso` to this (single-threaded) process and reads it back: the
/// `__exec` helper's setup. Err is the reason.
pub fn apply_here(iso: &Isolation) -> Result<(), String> {
    let plan = Plan::new(iso)?;
    setup(&plan).map_err(|(step, index, e)| plan.explain(step, index, e))
}

/// The child's side, between fork and exec: only system calls.
fn in_child(plan: &Plan, report: RawFd) -> io::Result<()> {
    match setup(plan) {
        Ok(()) => Ok(()),
        Err((step, index, errno)) => {
            let mut buf = [0u8; 12];
            buf[..4].copy_from_slice(&(step as u32).to_ne_bytes());
            buf[4..8].copy_from_slice(&(index as u32).to_ne_bytes());
            buf[8..].copy_from_slice(&(errno as i32).to_ne_bytes());
            write_all(report, &buf);
            // A proof that failed has no errno of its own.
            let code = if errno == Errno::UnknownErrno {
                libc::EPERM
            } else {
                errno as i32
            };
            Err(io::Error::from_raw_os_error(code))
        }
    }
}

type Failed = (Step, usize, Errno);

fn setup(plan: &Plan) -> Result<(), Failed> {
    let at = |step: Step| move |e: Errno| (step, 0, e);
    if plan.netns {
        match &plan.cell {
            Some(ns) => enter(ns)?,
            None => new_network_namespace(plan)?,
        }
    }
    for (i, limit) in plan.limits.iter().enumerate() {
        setrlimit(limit.resource, limit.value, limit.value).map_err(|e| (Step::Rlimit, i, e))?;
    }
    if let Some((set, _)) = &plan.cpus {
        sched_setaffinity(Pid::from_raw(0), set).map_err(at(Step::Pin))?;
    }
    prove(plan)
}

/// Reads back, in this process, what the setup did.
fn prove(plan: &Plan) -> Result<(), Failed> {
    let unknown = Errno::UnknownErrno;
    if plan.netns {
        let own = own_netns()?;
        if own == plan.host_netns {
            return Err((Step::ProveNet, 0, unknown));
        }
        if plan.cell.as_ref().is_some_and(|ns| ns.inode != own) {
            return Err((Step::ProveCell, 0, unknown));
        }
        only_loopback()?;
    }
    for (i, limit) in plan.limits.iter().enumerate() {
        let got = getrlimit(limit.resource).map_err(|e| (Step::ProveRlimit, i, e))?;
        if got != (limit.value, limit.value) {
            return Err((Step::ProveRlimit, i, unknown));
        }
    }
    if let Some((set, _)) = &plan.cpus {
        let got = sched_getaffinity(Pid::from_raw(0)).map_err(|e| (Step::ProvePin, 0, e))?;
        if got != *set {
            return Err((Step::ProvePin, 0, unknown));
        }
    }
    Ok(())
}

/// The inode of this process's network namespace.
#[expect(unsafe_code, reason = "stat(2) into a stat buffer we own")]
fn own_netns() -> Result<u64, Failed> {
    // SAFETY: all-zero is a valid `stat`; the path is NUL-terminated.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let path = c"/proc/self/ns/net";
    // SAFETY: valid path and buffer.
    if unsafe { libc::stat(path.as_ptr(), &mut st) } < 0 {
        return Err((Step::ProveNet, 0, Errno::last()));
    }
    Ok(st.st_ino)
}

/// Joins the cell's namespace: its user namespace first (which gives this
/// process the capability to join the network namespace it owns).
#[expect(unsafe_code, reason = "setns(2) on descriptors the plan owns")]
fn enter(ns: &CellNetns) -> Result<(), Failed> {
    if let Some(user) = &ns.user {
        // SAFETY: a live descriptor of a user namespace.
        if unsafe { libc::setns(user.as_raw_fd(), libc::CLONE_NEWUSER) } < 0 {
            return Err((Step::EnterUser, 0, Errno::last()));
        }
    }
    // SAFETY: a live descriptor of a network namespace.
    if unsafe { libc::setns(ns.net.as_raw_fd(), libc::CLONE_NEWNET) } < 0 {
        return Err((Step::EnterNet, 0, Errno::last()));
    }
    Ok(())
}

/// What each check of [`only_loopback`] found wrong, by index.
const ROUTE_CHECKS: [&str; 3] = [
    "does not reach 127.0.0.1 (loopback is down)",
    "has an IPv4 route off the machine (192.0.2.1 is routable)",
    "has an IPv6 route off the machine (2001:db8::1 is routable)",
];

/// Loopback answers and nothing else is routable: a UDP `connect` (a
/// route lookup; no packet is sent) to 127.0.0.1 succeeds, and to the
/// documentation addresses 192.0.2.1 and 2001:db8::1 fails with
/// ENETUNREACH (IPv6 may also be absent altogether).
fn only_loopback() -> Result<(), Failed> {
    let at = |i: usize| move |e: Errno| (Step::ProveRoutes, i, e);
    udp_connect_v4([127, 0, 0, 1]).map_err(at(0))?;
    match udp_connect_v4([192, 0, 2, 1]) {
        Err(Errno::ENETUNREACH) => {}
        Ok(()) => return Err((Step::ProveRoutes, 1, Errno::UnknownErrno)),
        Err(e) => return Err((Step::ProveRoutes, 1, e)),
    }
    let mut v6 = [0u8; 16];
    v6[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
    v6[15] = 1;
    match udp_connect_v6(v6) {
        Err(Errno::ENETUNREACH | Errno::EAFNOSUPPORT | Errno::EADDRNOTAVAIL) => Ok(()),
        Ok(()) => Err((Step::ProveRoutes, 2, Errno::UnknownErrno)),
        Err(e) => Err((Step::ProveRoutes, 2, e)),
    }
}

#[expect(unsafe_code, reason = "socket + connect on a sockaddr_in we own")]
fn udp_connect_v4(addr: [u8; 4]) -> Result<(), Errno> {
    // SAFETY: sockaddr_in is plain old data; all-zero is valid.
    let mut sa: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    sa.sin_family = libc::AF_INET as libc::sa_family_t;
    sa.sin_port = 9u16.to_be();
    sa.sin_addr.s_addr = u32::from_ne_bytes(addr);
    udp_connect(
        libc::AF_INET,
        (&raw const sa).cast(),
        std::mem::size_of::<libc::sockaddr_in>(),
    )
}

#[expect(unsafe_code, reason = "socket + connect on a sockaddr_in6 we own")]
fn udp_connect_v6(addr: [u8; 16]) -> Result<(), Errno> {
    // SAFETY: sockaddr_in6 is plain old data; all-zero is valid.
    let mut sa: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
    sa.sin6_family = libc::AF_INET6 as libc::sa_family_t;
    sa.sin6_port = 9u16.to_be();
    sa.sin6_addr.s6_addr = addr;
    udp_connect(
        libc::AF_INET6,
        (&raw const sa).cast(),
        std::mem::size_of::<libc::sockaddr_in6>(),
    )
}

#[expect(unsafe_code, reason = "socket(2), connect(2), close(2) on our own fd")]
fn udp_connect(family: i32, sa: *const libc::sockaddr, len: usize) -> Result<(), Errno> {
    // SAFETY: plain socket(2); the fd is closed below.
    let sock = unsafe { libc::socket(family, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if sock < 0 {
        return Err(Errno::last());
    }
    // SAFETY: `sa` points to a sockaddr of `len` bytes owned by the caller.
    let rc = unsafe { libc::connect(sock, sa, len as libc::socklen_t) };
    let result = if rc < 0 { Err(Errno::last()) } else { Ok(()) };
    // SAFETY: ours, closed once.
    unsafe { libc::close(sock) };
    result
}

/// Enters a new network namespace (inside a new user namespace unless we
/// may create one directly) and brings loopback up.
fn new_network_namespace(plan: &Plan) -> Result<(), Failed> {
    if let Err(first) = unshare(CloneFlags::CLONE_NEWNET) {
        if first != Errno::EPERM {
            return Err((Step::NetDirect, 0, first));
        }
        unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET)
            .map_err(|e| (Step::UserNet, 0, e))?;
        write_file(c"/proc/self/setgroups", b"deny").map_err(|e| (Step::SetGroups, 0, e))?;
        write_file(c"/proc/self/uid_map", &plan.uid_map).map_err(|e| (Step::UidMap, 0, e))?;
        write_file(c"/proc/self/gid_map", &plan.gid_map).map_err(|e| (Step::GidMap, 0, e))?;
    }
    loopback_up().map_err(|e| (Step::Loopback, 0, e))
}

/// open, one write, close.
#[expect(unsafe_code, reason = "open/write/close on a path and bytes we own")]
fn write_file(path: &std::ffi::CStr, text: &[u8]) -> Result<(), Errno> {
    // SAFETY: a NUL-terminated path.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(Errno::last());
    }
    // SAFETY: `text` is valid for its length; `fd` is ours.
    let n = unsafe { libc::write(fd, text.as_ptr().cast(), text.len()) };
    let result = if n < 0 {
        Err(Errno::last())
    } else if n as usize != text.len() {
        Err(Errno::EIO)
    } else {
        Ok(())
    };
    // SAFETY: `fd` is ours and closed once.
    unsafe { libc::close(fd) };
    result
}

#[expect(unsafe_code, reason = "write(2) of a buffer we own")]
fn write_all(fd: RawFd, buf: &[u8]) {
    if fd < 0 {
        return;
    }
    // SAFETY: `buf` is valid for its length. A short or failed write only
    // loses the detail of the failure, never the failure itself.
    let _ = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
}

/// SIOCSIFFLAGS on `lo` — the one ioctl nix does not wrap.
#[expect(
    unsafe_code,
    reason = "socket + ioctl(SIOCGIFFLAGS/SIOCSIFFLAGS) on an ifreq we own"
)]
pub fn loopback_up() -> Result<(), Errno> {
    // SAFETY: plain socket(2); the fd is closed below.
    let sock = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if sock < 0 {
        return Err(Errno::last());
    }
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    // SAFETY: the fd is a live socket and `req` is a valid ifreq for these requests.
    let result = unsafe {
        if libc::ioctl(sock, libc::SIOCGIFFLAGS, &mut req) < 0 {
            Err(Errno::last())
        } else {
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            if libc::ioctl(sock, libc::SIOCSIFFLAGS, &req) < 0 {
                Err(Errno::last())
            } else {
                Ok(())
            }
        }
    };
    // SAFETY: ours, closed once.
    unsafe { libc::close(sock) };
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn spawn(iso: &Isolation, script: &str) -> Result<String, String> {
        let armed = Armed::new(iso, None)?;
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script]);
        armed.install(&mut cmd);
        let out = cmd.output();
        if let Some(why) = armed.failure(out.is_err()) {
            return Err(why);
        }
        let out = out.map_err(|e| e.to_string())?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    #[test]
    fn limits_and_affinity_reach_the_subject() {
        let mine = sched_getaffinity(Pid::from_raw(0)).unwrap();
        let cpu = (0..CpuSet::count())
            .find(|&i| mine.is_set(i).unwrap_or(false))
            .unwrap();
        let iso = Isolation {
            netns: false,
            rlimits: vec![("nofile".into(), 77)],
            cpus: Some(vec![cpu]),
        };
        let out = spawn(&iso, "ulimit -n; grep Cpus_allowed_list /proc/self/status").unwrap();
        assert_eq!(out, format!("77\nCpus_allowed_list:\t{cpu}\n"));
    }

    #[test]
    fn a_limit_the_kernel_refuses_is_a_setup_failure_naming_it() {
        // Raising the hard limit of open files past the kernel's maximum
        // is refused (EPERM without privilege, else the kernel's own cap).
        let iso = Isolation {
            rlimits: vec![("nofile".into(), u64::MAX - 1)],
            ..Default::default()
        };
        let why = spawn(&iso, "echo ran").unwrap_err();
        assert!(why.starts_with(SETUP_FAILED), "{why}");
        assert!(why.contains("cannot set rlimit nofile"), "{why}");
    }

    #[test]
    fn an_unknown_resource_fails_before_the_fork() {
        let iso = Isolation {
            rlimits: vec![("bogus".into(), 1)],
            ..Default::default()
        };
        let why = Armed::new(&iso, None).unwrap_err();
        assert!(why.contains("unknown resource `bogus`"), "{why}");
    }

    #[test]
    fn step_codes_round_trip() {
        for n in 0..20 {
            if let Some(step) = Step::from_u32(n) {
                assert_eq!(step as u32, n);
            }
        }
        assert_eq!(Step::from_u32(9), Some(Step::ProveNet));
    }
}
