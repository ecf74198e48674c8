//! `netns`: no network, a network namespace with loopback only (one per
//! cell, `exec::cellns`; entered between fork and exec, `exec::setup`).
//! Probe: our own `__probe net` finds no route to a TEST-NET address and a
//! working loopback. Sham: the setup before exec with a null parameter.
//! Classes: real network.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};

use super::{Expect, Preparing, Reading, Role, Seen, Sham};
use crate::catalog::class::FlakeClass;
use crate::error::Result;
use crate::perturb::HostFacts;

pub(super) const NEEDS_RECIPE: bool = false;
pub(super) const ROLE: Role = Role::Other;

pub(super) fn prepare(label: String, p: &mut Preparing) -> Result<()> {
    p.out.isolation.netns = true;
    let argv = p.own_probe(&["net"]);
    p.out.probes.push(super::Probe {
        perturbation: label,
        argv,
        expect: Expect::NoRoute,
    });
    Ok(())
}

pub(super) fn judge(what: &str, output: &str) -> Result<String, String> {
    let route = output
        .lines()
        .find_map(|l| l.strip_prefix("route: "))
        .unwrap_or("(not reported)");
    let lo = output
        .lines()
        .find_map(|l| l.strip_prefix("loopback: "))
        .unwrap_or("(not reported)");
    if !route.starts_with("unreachable") {
        Err(format!("{what}: the child still has a route out ({route})"))
    } else if lo != "ok" {
        Err(format!(
            "{what}: loopback does not work in the namespace ({lo})"
        ))
    } else {
        Ok(format!(
            "{what}: no route to 192.0.2.1 ({route}); loopback round trip ok"
        ))
    }
}

/// The child's side: `route: …` (a UDP connect to 192.0.2.1, which sends
/// nothing) and `loopback: …` (a TCP round trip over 127.0.0.1).
pub(super) fn child() -> String {
    let route = std::net::UdpSocket::bind("0.0.0.0:0").and_then(|s| s.connect("192.0.2.1:9"));
    let route = match route {
        Ok(()) => "route: reachable".to_string(),
        Err(e) if e.raw_os_error() == Some(nix::libc::ENETUNREACH) => {
            format!("route: unreachable ({e})")
        }
        Err(e) => format!("route: error ({e})"),
    };
    let loopback = match loopback_round_trip() {
        Ok(()) => "loopback: ok".to_string(),
        Err(e) => format!("loopback: failed: {e}"),
    };
    format!("{route}\n{loopback}\n")
}

/// A TCP round trip over 127.0.0.1 (the probe's loopback check; the demo
/// suite's loopback test).
pub fn loopback_round_trip() -> Result<(), String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let server = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut s, _) = listener.accept()?;
        let mut buf = [0u8; 4];
        s.read_exact(&mut buf)?;
        s.write_all(&buf)
    });
    let mut client = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    client.write_all(b"ping").map_err(|e| e.to_string())?;
    let mut back = [0u8; 4];
    client.read_exact(&mut back).map_err(|e| e.to_string())?;
    server
        .join()
        .map_err(|_| "server thread panicked".to_string())?
        .map_err(|e| e.to_string())?;
    (&back == b"ping")
        .then_some(())
        .ok_or("echo mismatch".into())
}

pub(super) fn sham(host: &HostFacts) -> Option<Sham> {
    super::setup_sham(host)
}

pub(super) fn examines() -> Vec<FlakeClass> {
    vec![FlakeClass::RealNetwork]
}

pub(super) fn read(seen: &Seen) -> Vec<Reading> {
    vec![Reading::Claim(
        FlakeClass::RealNetwork,
        format!(
            "without a route off the host (loopback kept), runs fail more than the baseline's: something reaches past the machine.{}",
            seen.combined
        ),
    )]
}
