//! Starting a run's leader that needs no setup between fork and exec: a
//! `clone` that shares our memory until the child execs (as `vfork` and
//! glibc's `posix_spawn` do), with an `envp` built from the environment read
//! once per process, and a pidfd to wait on.
//!
//! std's `Command` rebuilds the whole environment into a map on every spawn
//! once any variable is set (each run sets its own `FLAKELAB_RUN_ID`), and
//! glibc's `posix_spawn` makes about 120 `sigaction` calls in the child to
//! reset every signal's disposition. Here the child resets only the standard
//! signals that have a handler and SIGPIPE, which is all that a signal
//! arriving between the reset and the exec could reach, and the pidfd
//! comes from the clone itself.
//!
//! What the subject gets is what std's spawn gives it: the same argv, the
//! inherited environment with the launch's changes, the program looked up
//! in the child's `PATH`, stdin from `/dev/null`, stdout and stderr on the
//! given descriptors, its own process group, the launch's working
//! directory, an empty signal mask, and every signal's disposition as std
//! leaves it (handled ones and SIGPIPE at their default, ignored ones still
//! ignored). A cell's setup (`exec::setup`: entering the cell's network
//! namespace, limits, affinity, and reading them back) runs in the child
//! after the working directory is set, as std's `pre_exec` step did. Only
//! creating a user namespace needs a real fork (the kernel refuses it to a
//! process that shares its memory); such a launch keeps std's spawn.

#![expect(
    unsafe_code,
    reason = "clone with CLONE_VM: the child makes only system calls on data prepared before the clone"
)]

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::OnceLock;

use nix::libc;
use tokio::io::unix::AsyncFd;

use super::launch::Launch;
use super::setup::Armed;

/// Bytes of the stack the child runs on until it execs.
const STACK: usize = 64 * 1024;

/// What the child needs, prepared before the clone: only pointers into it
/// are used between the clone and the exec.
pub(super) struct Prepared {
    path: CString,
    argv: Vec<CString>,
    /// The inherited entries kept, borrowed from [`inherited`].
    kept: Vec<&'static CString>,
    /// The launch's own entries.
    envp: Vec<CString>,
    cwd: CString,
}

impl Prepared {
    /// Prepares `launch` with `extra` set on top of its variables (the run's
    /// marker when the launch lacks it). A program without a slash is looked
    /// up in the child's `PATH`; not found, it is the error `ENOENT`, as
    /// from std.
    pub(super) fn new(launch: &Launch, extra: Option<(&str, &str)>) -> io::Result<Prepared> {
        let nul = |_| io::Error::from_raw_os_error(libc::EINVAL);
        let (program, _) = launch
            .argv
            .split_first()
            .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))?;
        let argv = launch
            .argv
            .iter()
            .map(|a| CString::new(a.as_bytes()).map_err(nul))
            .collect::<io::Result<Vec<_>>>()?;

        let set = |name: &[u8]| {
            launch.env_set.keys().any(|k| k.as_bytes() == name)
                || extra.is_some_and(|(k, _)| k.as_bytes() == name)
        };
        let unset = |name: &[u8]| launch.env_unset.iter().any(|k| k.as_bytes() == name);
        let mut kept = Vec::with_capacity(inherited().len());
        let mut envp = Vec::with_capacity(launch.env_set.len() + 1);
        let mut path_var: Option<OsString> = None;
        for (name, entry) in inherited() {
            let name = name.as_bytes();
            if set(name) || unset(name) {
                continue;
            }
            if name == b"PATH" {
                path_var = Some(OsStr::from_bytes(&entry.as_bytes()[5..]).to_owned());
            }
            kept.push(entry);
        }
        // `NAME=value`, made without the formatting machinery (once per
        // variable per run).
        let entry = |k: &str, v: &str| {
            let mut e = Vec::with_capacity(k.len() + v.len() + 2);
            e.extend_from_slice(k.as_bytes());
            e.push(b'=');
            e.extend_from_slice(v.as_bytes());
            CString::new(e).map_err(nul)
        };
        for (k, v) in &launch.env_set {
            if k == "PATH" {
                path_var = Some(OsString::from(v));
            }
            envp.push(entry(k, v)?);
        }
        if let Some((k, v)) = extra {
            envp.push(entry(k, v)?);
        }

        let cwd = CString::new(launch.cwd.as_os_str().as_bytes()).map_err(nul)?;
        let path = if program.contains('/') {
            CString::new(program.as_bytes()).map_err(nul)?
        } else {
            lookup(program, path_var.as_deref(), &launch.cwd)?
        };
        Ok(Prepared {
            path,
            argv,
            kept,
            envp,
            cwd,
        })
    }
}

/// The harness's environment as `NAME=value` entries, read once: flakelab
/// never changes its own environment.
fn inherited() -> &'static [(OsString, CString)] {
    static ENV: OnceLock<Vec<(OsString, CString)>> = OnceLock::new();
    ENV.get_or_init(|| {
        std::env::vars_os()
            .filter_map(|(k, v)| {
                let mut entry = k.clone().into_vec();
                entry.push(b'=');
                entry.extend_from_slice(v.as_bytes());
                Some((k, CString::new(entry).ok()?))
            })
            .collect()
    })
}

/// The first executable `dir/program` along `path` (default `/bin:/usr/bin`
/// as glibc's `execvp`); an empty entry is the child's working directory.
/// Not found is `ENOENT`; found only without the right to run it is
/// `EACCES`, as from `execvp`.
fn lookup(program: &str, path: Option<&OsStr>, cwd: &Path) -> io::Result<CString> {
    let path = path.unwrap_or(OsStr::new("/bin:/usr/bin"));
    let mut denied = false;
    for dir in path.as_bytes().split(|&b| b == b':') {
        let dir = if dir.is_empty() {
            cwd
        } else {
            Path::new(OsStr::from_bytes(dir))
        };
        let candidate = cwd.join(dir).join(program);
        let Ok(c) = CString::new(candidate.into_os_string().into_vec()) else {
            continue;
        };
        if !std::fs::metadata(OsStr::from_bytes(c.as_bytes())).is_ok_and(|m| m.is_file()) {
            continue;
        }
        // SAFETY: `c` is a valid NUL-terminated string.
        if unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0 {
            return Ok(c);
        }
        denied = true;
    }
    let errno = if denied { libc::EACCES } else { libc::ENOENT };
    Err(io::Error::from_raw_os_error(errno))
}

/// `/dev/null`, opened once (close-on-exec; the child dup2s it onto fd 0).
fn dev_null() -> io::Result<RawFd> {
    static NULL: OnceLock<Result<OwnedFd, i32>> = OnceLock::new();
    match NULL.get_or_init(|| {
        std::fs::File::open("/dev/null")
            .map(OwnedFd::from)
            .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
    }) {
        Ok(fd) => Ok(fd.as_raw_fd()),
        Err(errno) => Err(io::Error::from_raw_os_error(*errno)),
    }
}

/// What the child reads: raw pointers into a [`Prepared`] and the
/// descriptors, and where it leaves the errno of a failed step.
struct ChildArgs {
    path: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    cwd: *const libc::c_char,
    fds: [RawFd; 3],
    /// The cell's setup, run after the working directory is set.
    setup: Option<*const Armed>,
    errno: AtomicI32,
}

/// A started leader, waited for through its pidfd.
pub(super) struct Leader {
    pid: libc::pid_t,
    pidfd: AsyncFd<OwnedFd>,
    status: Option<ExitStatus>,
}

/// Starts `prepared` with stdout and stderr on `out` and `err`, in a process
/// group of its own, after `setup` (one that [`Armed::may_share_memory`])
/// when given. Returns once the child has exec'd; a failure of any step
/// before the exec (the working directory, the setup, the exec itself) is
/// that step's error, and the child is reaped.
pub(super) fn spawn(
    prepared: &Prepared,
    out: RawFd,
    err: RawFd,
    setup: Option<&Armed>,
) -> io::Result<Leader> {
    reap_abandoned();
    let null = dev_null()?;
    let argv: Vec<*const libc::c_char> = prepared
        .argv
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let envp: Vec<*const libc::c_char> = prepared
        .kept
        .iter()
        .map(|a| a.as_ptr())
        .chain(prepared.envp.iter().map(|a| a.as_ptr()))
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let args = ChildArgs {
        path: prepared.path.as_ptr(),
        argv: argv.as_ptr(),
        envp: envp.as_ptr(),
        cwd: prepared.cwd.as_ptr(),
        fds: [null, out, err],
        setup: setup.map(|a| a as *const Armed),
        errno: AtomicI32::new(0),
    };

    thread_local! {
        static STACK_MEM: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let mut pidfd: libc::c_int = -1;
    let pid = STACK_MEM.with(|stack| {
        let mut stack = stack.borrow_mut();
        if stack.len() < STACK {
            stack.resize(STACK, 0);
        }
        // The stack grows down; keep the top 16-byte aligned.
        let top = (stack.as_mut_ptr() as usize + STACK) & !15;
        let mut all = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
        let mut old = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
        // SAFETY: the child runs `child_main` on its own stack, reads only
        // `args` (alive until the clone returns: CLONE_VFORK suspends this
        // thread until the child has exec'd or exited) and makes only
        // system calls. All signals stay blocked across the clone so no
        // handler of ours runs in the child before it resets them.
        unsafe {
            libc::sigfillset(all.as_mut_ptr());
            libc::pthread_sigmask(libc::SIG_SETMASK, all.as_ptr(), old.as_mut_ptr());
            let pid = libc::clone(
                child_main,
                top as *mut libc::c_void,
                libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD | libc::SIGCHLD,
                std::ptr::addr_of!(args) as *mut libc::c_void,
                std::ptr::addr_of_mut!(pidfd),
            );
            let clone_errno = io::Error::last_os_error();
            libc::pthread_sigmask(libc::SIG_SETMASK, old.as_ptr(), std::ptr::null_mut());
            if pid < 0 {
                Err(clone_errno)
            } else {
                Ok(pid)
            }
        }
    })?;
    // SAFETY: the kernel wrote a new pidfd, which nothing else owns.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
    let errno = args.errno.load(Ordering::Acquire);
    if errno != 0 {
        let mut status = 0;
        // SAFETY: reaps our own child, which has exited.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        return Err(io::Error::from_raw_os_error(errno));
    }
    // SAFETY: the AsyncFd owns the pidfd, which stays open and unchanged
    // until it is dropped.
    let pidfd = unsafe { AsyncFd::register_with_interest(pidfd, tokio::io::Interest::READABLE) }?;
    Ok(Leader {
        pid,
        pidfd,
        status: None,
    })
}

/// The child, between the clone and the exec: system calls only.
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` points at the parent's `ChildArgs`, alive and unchanged
    // while the parent is suspended.
    let args = unsafe { &*(arg as *const ChildArgs) };
    let fail = |args: &ChildArgs| -> ! {
        // SAFETY: reads this thread's errno; `_exit` runs no handler.
        unsafe {
            let errno = *libc::__errno_location();
            args.errno.store(
                if errno == 0 { libc::EIO } else { errno },
                Ordering::Release,
            );
            libc::_exit(127)
        }
    };
    // SAFETY: plain system calls on descriptors and strings prepared by the
    // parent.
    unsafe {
        if libc::setpgid(0, 0) != 0 {
            fail(args);
        }
        for (target, &fd) in args.fds.iter().enumerate() {
            let target = target as RawFd;
            if fd == target {
                if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                    fail(args);
                }
            } else if libc::dup2(fd, target) < 0 {
                fail(args);
            }
        }
        if libc::chdir(args.cwd) != 0 {
            fail(args);
        }
        if let Some(setup) = args.setup {
            if let Err(err) = (*setup).in_child() {
                *libc::__errno_location() = err.raw_os_error().unwrap_or(libc::EPERM);
                fail(args);
            }
        }
        // A handler of ours must not run here (we share the parent's
        // memory), and SIGPIPE, which Rust programs ignore, goes back to
        // its default as std's spawn does. Real-time signals have no
        // handler in flakelab.
        let mut action: libc::sigaction = std::mem::zeroed();
        for sig in 1..32 {
            if sig == libc::SIGKILL || sig == libc::SIGSTOP {
                continue;
            }
            if libc::sigaction(sig, std::ptr::null(), &mut action) != 0 {
                continue;
            }
            let handled =
                action.sa_sigaction != libc::SIG_DFL && action.sa_sigaction != libc::SIG_IGN;
            if handled || sig == libc::SIGPIPE {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(sig, &default, std::ptr::null_mut());
            }
        }
        let mut empty = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
        libc::sigemptyset(empty.as_mut_ptr());
        libc::pthread_sigmask(libc::SIG_SETMASK, empty.as_ptr(), std::ptr::null_mut());
        libc::execve(args.path, args.argv, args.envp);
    }
    fail(args)
}

impl Leader {
    /// The leader's process id.
    pub(super) fn id(&self) -> u32 {
        self.pid as u32
    }

    /// Waits for the leader to end and reaps it; later calls return the
    /// same status.
    pub(super) async fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.status {
                return Ok(status);
            }
            let mut raw = 0;
            // SAFETY: our own child, not yet reaped (only this handle reaps it).
            let reaped = unsafe { libc::waitpid(self.pid, &mut raw, libc::WNOHANG) };
            match reaped {
                0 => {
                    let mut ready = self.pidfd.readable().await?;
                    ready.clear_ready();
                }
                pid if pid == self.pid => {
                    self.status = Some(ExitStatus::from_raw(raw));
                }
                _ => {
                    let err = io::Error::last_os_error();
                    if err.kind() != io::ErrorKind::Interrupted {
                        return Err(err);
                    }
                }
            }
        }
    }

    /// Sends SIGKILL to the leader unless it has been reaped (through its
    /// pidfd: never a recycled pid).
    pub(super) fn start_kill(&mut self) -> io::Result<()> {
        if self.status.is_some() {
            return Ok(());
        }
        // SAFETY: a signal through our own pidfd.
        let sent = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.pidfd.as_raw_fd(),
                libc::SIGKILL,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
        if sent == 0 {
            Ok(())
        } else {
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::ESRCH) {
                Ok(())
            } else {
                Err(err)
            }
        }
    }
}

impl Drop for Leader {
    /// Reaps a leader that has already ended; one still running (its run
    /// abandoned) is left to the sweep's group kill and reaped, without
    /// waiting, at a later spawn ([`reap_abandoned`]).
    fn drop(&mut self) {
        if self.status.is_none() {
            let mut raw = 0;
            // SAFETY: our own child, not yet reaped.
            if unsafe { libc::waitpid(self.pid, &mut raw, libc::WNOHANG) } == 0 {
                // SAFETY: duplicates the pidfd we own; the copy is owned here.
                let copy = unsafe { libc::dup(self.pidfd.as_raw_fd()) };
                if copy >= 0 {
                    // SAFETY: a new descriptor nothing else owns.
                    abandoned().push(unsafe { OwnedFd::from_raw_fd(copy) });
                }
            }
        }
    }
}

/// Pidfds of the leaders dropped while still running. A pidfd names one
/// process, never a later one with the same pid, so reaping through it
/// cannot take another child's status (the sweep may have reaped it first).
fn abandoned() -> std::sync::MutexGuard<'static, Vec<OwnedFd>> {
    static ABANDONED: std::sync::Mutex<Vec<OwnedFd>> = std::sync::Mutex::new(Vec::new());
    ABANDONED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Reaps the abandoned leaders that have ended since, without waiting for
/// the others: none stays a zombie until flakelab ends. One reaped
/// elsewhere is forgotten.
fn reap_abandoned() {
    let mut list = abandoned();
    if list.is_empty() {
        return;
    }
    list.retain(|pidfd| {
        // SAFETY: waitid on a pidfd we own, into a zeroed siginfo.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let done = unsafe {
            libc::waitid(
                libc::P_PIDFD,
                pidfd.as_raw_fd() as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG,
            )
        };
        // Still running: waitid returns 0 with no pid filled in.
        // SAFETY: reads the pid field waitid filled in (or left zeroed).
        done == 0 && unsafe { info.si_pid() } == 0
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::io::Read as _;

    fn launch(argv: &[&str], set: &[(&str, &str)], unset: &[&str]) -> Launch {
        Launch {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            cwd: std::env::temp_dir(),
            env_set: set
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
            env_unset: unset.iter().map(|s| s.to_string()).collect(),
            isolation: Default::default(),
            netns_cell: None,
            preload_cleanup: None,
            clock_record: false,
        }
    }

    /// Runs `launch` to its end and returns its status and output.
    fn run(launch: &Launch, extra: Option<(&str, &str)>) -> io::Result<(ExitStatus, String)> {
        let prepared = Prepared::new(launch, extra)?;
        let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut leader = spawn(&prepared, write.as_raw_fd(), write.as_raw_fd(), None)?;
            drop(write);
            let mut out = String::new();
            std::fs::File::from(read).read_to_string(&mut out).unwrap();
            Ok((leader.wait().await?, out))
        })
    }

    #[test]
    fn the_child_gets_the_launch_environment_cwd_group_and_default_signals() {
        let home = std::env::var("HOME").unwrap_or_default();
        let l = launch(
            &[
                "sh",
                "-c",
                "echo \"$A|$B|${HOME-unset}|$(pwd)\"; ps -o pgid= -p $$; ps -o pid= -p $$; \
                 read x; echo \"stdin:$x\"",
            ],
            &[("A", "1")],
            &["HOME"],
        );
        let (status, out) = run(&l, Some(("B", "2"))).unwrap();
        assert!(status.success(), "{out}");
        let lines: Vec<&str> = out.lines().collect();
        let tmp = std::env::temp_dir().canonicalize().unwrap();
        assert_eq!(lines[0], format!("1|2|unset|{}", tmp.display()), "{home}");
        // Its own process group: pgid == pid.
        assert_eq!(lines[1].trim(), lines[2].trim(), "{out}");
        // stdin is /dev/null: read gets end-of-file at once.
        assert_eq!(lines.last().unwrap(), &"stdin:", "{out}");
        // SIGPIPE not ignored (the harness ignores it), nothing blocked. Read
        // by the exec'd program itself: a shell blocks every signal around
        // each fork, so a child reading the shell's status races with that.
        let l = launch(
            &["grep", "-E", "^Sig(Ign|Blk)", "/proc/self/status"],
            &[],
            &[],
        );
        let (status, out) = run(&l, None).unwrap();
        assert!(status.success(), "{out}");
        let lines: Vec<&str> = out.lines().collect();
        let sig_blk = lines.iter().find(|l| l.starts_with("SigBlk")).unwrap();
        assert!(sig_blk.ends_with("0000000000000000"), "{out}");
        let sig_ign = lines.iter().find(|l| l.starts_with("SigIgn")).unwrap();
        let ign = u64::from_str_radix(sig_ign.split_whitespace().nth(1).unwrap(), 16).unwrap();
        assert_eq!(ign & (1 << (libc::SIGPIPE - 1)), 0, "{out}");
    }

    #[test]
    fn the_variables_set_are_name_equals_value_and_a_nul_is_refused() {
        let p = Prepared::new(
            &launch(&["/bin/true"], &[("A", "1=2")], &[]),
            Some(("B", "")),
        )
        .unwrap();
        let envp: Vec<&[u8]> = p.envp.iter().map(|e| e.as_bytes()).collect();
        assert_eq!(envp, [&b"A=1=2"[..], &b"B="[..]]);
        let err = Prepared::new(&launch(&["/bin/true"], &[("A", "x\0y")], &[]), None).err();
        assert_eq!(err.and_then(|e| e.raw_os_error()), Some(libc::EINVAL));
    }

    /// The state letter of process `pid` (`Z` for a zombie), if it exists.
    fn state_of(pid: libc::pid_t) -> Option<char> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat.rsplit_once(") ")?.1.chars().next()
    }

    #[test]
    fn a_leader_dropped_while_running_is_reaped_once_it_ended() {
        let l = launch(&["sleep", "1000"], &[], &[]);
        let prepared = Prepared::new(&l, None).unwrap();
        let null = dev_null().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let pid = rt.block_on(async {
            let leader = spawn(&prepared, null, null, None).unwrap();
            leader.pid
            // dropped here, still running
        });
        let held = || abandoned().iter().any(|fd| pidfd_pid(fd) == Some(pid));
        assert!(held());
        // SAFETY: signals our own child, which is not reaped (its pid is ours).
        assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
        // Readiness, not a pause: the kernel has made it a zombie (or
        // another test's spawn has reaped it already).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while state_of(pid).is_some_and(|state| state != 'Z') {
            assert!(std::time::Instant::now() < deadline, "{pid} never ended");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        reap_abandoned();
        assert_eq!(state_of(pid), None, "{pid} is still a zombie");
        assert!(!held());
    }

    /// The pid a pidfd names, from its fdinfo.
    fn pidfd_pid(fd: &OwnedFd) -> Option<libc::pid_t> {
        let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd())).ok()?;
        let line = info.lines().find(|l| l.starts_with("Pid:"))?;
        line[4..].trim().parse().ok()
    }

    #[test]
    fn exit_codes_and_signals_come_back_as_std_reports_them() {
        let (status, _) = run(&launch(&["sh", "-c", "exit 3"], &[], &[]), None).unwrap();
        assert_eq!(status.code(), Some(3));
        let (status, _) = run(&launch(&["sh", "-c", "kill -TERM $$"], &[], &[]), None).unwrap();
        assert_eq!(status.signal(), Some(libc::SIGTERM));
    }

    #[test]
    fn a_missing_program_or_directory_is_the_os_error_std_gives() {
        let err = run(&launch(&["no-such-program-flakelab"], &[], &[]), None).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
        let err = run(&launch(&["/nonexistent/prog"], &[], &[]), None).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
        let mut l = launch(&["true"], &[], &[]);
        l.cwd = "/nonexistent-dir-flakelab".into();
        let err = run(&l, None).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
        // Found along the child's PATH, not ours.
        let dir = tempfile::tempdir().unwrap();
        let prog = dir.path().join("only-here");
        std::fs::write(&prog, "#!/bin/sh\necho found\n").unwrap();
        std::fs::set_permissions(&prog, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let path = format!("{}:/usr/bin:/bin", dir.path().display());
        let (status, out) = run(&launch(&["only-here"], &[("PATH", &path)], &[]), None).unwrap();
        assert!(status.success());
        assert_eq!(out, "found\n");
        // Found, but not executable: permission denied, not "not found".
        std::fs::set_permissions(&prog, std::os::unix::fs::PermissionsExt::from_mode(0o644))
            .unwrap();
        let err = run(&launch(&["only-here"], &[("PATH", &path)], &[]), None).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EACCES));
    }
}
