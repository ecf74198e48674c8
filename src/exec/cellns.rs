//! One network namespace per `netns` cell of a session, made once and
//! entered by every run of the cell (`setns` between fork and exec, in
//! `exec::setup`), instead of one namespace created and torn down by the
//! kernel per run.
//!
//! The namespace is held by descriptors, not by a process: a short-lived
//! `cat` is spawned with the per-run setup (a new network namespace, inside
//! a new user namespace when unprivileged, loopback up, proven), its
//! `/proc/PID/ns/{user,net}` are opened (close-on-exec), and the `cat` is
//! ended at once by closing its stdin and reaped. Nothing keeps running:
//! the namespace lives as long as the descriptors (and any process still
//! inside), and the kernel closes them when flakelab exits, however it
//! exits (SIGKILL included).
//!
//! The namespaces exist while a [`Held`] scope does (a session holds one
//! from its probes to its end record); dropping the last scope closes
//! every descriptor. Outside a scope, or where the namespace cannot be
//! made this way, runs create their own namespace as before.
//!
//! The runs of one cell share the namespace as the baseline's runs share
//! the host's: a socket one run leaves behind is seen by the next run of
//! the same cell, and by no run of another cell.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt as _;
use std::os::unix::process::CommandExt as _;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use nix::fcntl::OFlag;
use nix::unistd::pipe2;

use super::setup::{Armed, CellNetns, Isolation};

/// The namespaces of the scopes alive now.
static SCOPE: Mutex<Scope> = Mutex::new(Scope {
    depth: 0,
    cells: BTreeMap::new(),
});

#[derive(Debug)]
struct Scope {
    /// How many [`Held`] scopes are alive.
    depth: usize,
    /// By cell key: its namespace, or why it could not be made (then its
    /// runs create their own, and report the kernel's refusal if any).
    cells: BTreeMap<String, Option<Arc<CellNetns>>>,
}

/// While alive, `netns` cells get one namespace each; dropping the last
/// one closes them all.
#[derive(Debug)]
pub struct Held(());

/// Opens a scope (one per session).
pub fn hold() -> Held {
    if let Ok(mut scope) = SCOPE.lock() {
        scope.depth += 1;
    }
    Held(())
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Ok(mut scope) = SCOPE.lock() {
            scope.depth = scope.depth.saturating_sub(1);
            if scope.depth == 0 {
                scope.cells.clear();
            }
        }
    }
}

/// The namespace of the cell `key` (made on first use), or `None` outside
/// a scope or when it cannot be made.
pub fn for_cell(key: &str) -> Option<Arc<CellNetns>> {
    let mut scope = SCOPE.lock().ok()?;
    if scope.depth == 0 {
        return None;
    }
    if let Some(known) = scope.cells.get(key) {
        return known.clone();
    }
    let made = make().ok().map(Arc::new);
    scope.cells.insert(key.to_string(), made.clone());
    made
}

/// The key of a run's cell: its session (the marker up to its first dot)
/// and its cell's name.
pub fn key(marker: &str, cell: &str) -> String {
    let session = marker.split_once('.').map_or(marker, |(s, _)| s);
    format!("{session}\n{cell}")
}

/// Makes a namespace: a `cat` set up as a run would be, whose namespaces
/// are opened before its stdin is closed.
fn make() -> Result<CellNetns, String> {
    let iso = Isolation {
        netns: true,
        ..Default::default()
    };
    let armed = Armed::new(&iso, None)?;
    let (read, write) = pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("pipe: {e}"))?;
    let mut cmd = Command::new("cat");
    cmd.stdin(Stdio::from(read))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .current_dir("/")
        // Not in flakelab's group: a Ctrl-C does not end it early.
        .process_group(0);
    armed.install(&mut cmd);
    let spawned = cmd.spawn();
    drop(cmd);
    if let Some(why) = armed.failure(spawned.is_err()) {
        return Err(why);
    }
    let mut child = spawned.map_err(|e| format!("cannot start cat: {e}"))?;
    let opened = open(child.id());
    // End-of-file on its stdin: `cat` exits; reap it.
    drop(write);
    let _ = child.wait();
    opened
}

/// Opens the namespaces of process `pid`.
fn open(pid: u32) -> Result<CellNetns, String> {
    let ns = |what: &str| {
        File::open(format!("/proc/{pid}/ns/{what}"))
            .map_err(|e| format!("cannot open /proc/{pid}/ns/{what}: {e}"))
    };
    let net = ns("net")?;
    let inode = net.metadata().map_err(|e| e.to_string())?.ino();
    let user = ns("user")?;
    let own_user = std::fs::metadata("/proc/self/ns/user")
        .map_err(|e| e.to_string())?
        .ino();
    let user_inode = user.metadata().map_err(|e| e.to_string())?.ino();
    Ok(CellNetns {
        user: (user_inode != own_user).then(|| OwnedFd::from(user)),
        net: OwnedFd::from(net),
        inode,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::setup::SETUP_FAILED;
    use std::io::{BufRead, BufReader};

    /// A namespace set up by `script` in `unshare -rn`, held by a `cat`
    /// until the returned writer is dropped; None where `unshare` or `ip`
    /// cannot do it here.
    fn made_by(script: &str) -> Option<(CellNetns, std::process::ChildStdin, std::process::Child)> {
        let mut child = Command::new("unshare")
            .args([
                "-rn",
                "sh",
                "-c",
                &format!("{script} && echo ready && exec cat"),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let mut line = String::new();
        let _ = BufReader::new(child.stdout.take()?).read_line(&mut line);
        let stdin = child.stdin.take()?;
        if line.trim() != "ready" {
            drop(stdin);
            let _ = child.wait();
            return None;
        }
        let ns = open(child.id()).ok()?;
        Some((ns, stdin, child))
    }

    /// Spawns `true` entering `ns`; the setup's failure message, if any.
    fn enter(ns: CellNetns) -> Option<String> {
        let iso = Isolation {
            netns: true,
            ..Default::default()
        };
        let armed = Armed::new(&iso, Some(Arc::new(ns))).unwrap();
        let mut cmd = Command::new("true");
        armed.install(&mut cmd);
        let status = cmd.status();
        armed.failure(status.is_err())
    }

    #[test]
    fn a_run_enters_its_cells_namespace_and_refuses_one_with_a_route_off() {
        let Ok(ns) = make() else {
            eprintln!("skipped: no network namespace here");
            return;
        };
        assert_eq!(enter(ns), None);
        // The proof catches a namespace with loopback down, and one where
        // a documentation address is routable.
        let Some((down, stdin, mut child)) = made_by("true") else {
            eprintln!("skipped: no unshare -rn here");
            return;
        };
        let why = enter(down).expect("loopback down is refused");
        assert!(why.starts_with(SETUP_FAILED), "{why}");
        assert!(why.contains("does not reach 127.0.0.1"), "{why}");
        drop(stdin);
        let _ = child.wait();
        let Some((routed, stdin, mut child)) =
            made_by("ip link set lo up && ip route add 192.0.2.0/24 dev lo")
        else {
            eprintln!("skipped: no ip here");
            return;
        };
        let why = enter(routed).expect("a route off is refused");
        assert!(why.contains("has an IPv4 route off the machine"), "{why}");
        drop(stdin);
        let _ = child.wait();
    }

    #[test]
    fn the_key_is_the_session_and_the_cell() {
        assert_eq!(key("20261201-1.7", "netns"), "20261201-1\nnetns");
        assert_eq!(key("s.probe0.1", "netns"), "s\nnetns");
        assert_eq!(key("plain", "c"), "plain\nc");
    }
}
