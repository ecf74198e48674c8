//! Sham controls: for every mechanism that can disturb a subject by being
//! there at all, the same mechanism with a null parameter. A cell that
//! differs from the baseline is attributed to its parameter only when it
//! also differs from its mechanism's sham.
//!
//! | mechanism | its kinds | the sham |
//! | --- | --- | --- |
//! | `TZ` set | `tz` | `tz=` the host's own zone |
//! | the clock preload | `faketime` | `faketime=+0` |
//! | the setup before exec | `netns`, `cpu-pin`, `rlimit` | `cpu-pin=` every CPU the harness may use (the run is forked, pinned to the same set and read back: the same setup with a null parameter) |
//! | exclusive scheduling for busy threads | `cpu-stress` | `cpu-stress=0` (the run is scheduled alone, with no busy thread) |
//!
//! `locale`, `env`, `shuffle` and `workers` have no mechanism beside their
//! parameter: the variable set, or the runner's own option, is the condition.
//! `race` has no null parameter (an instrumented build always detects); its
//! instrumentation also slows the subject, so a `race` cell is read by its
//! failures' signatures: a race report is the detector's finding, any other
//! failure may be the slowdown's.

use std::path::Path;

use super::HostFacts;
use crate::catalog::Kind;

/// A mechanism's sham cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sham {
    /// The mechanism, in words.
    pub mechanism: &'static str,
    /// The sham's cell spec.
    pub spec: String,
}

/// The sham of the mechanism `kind` uses on this host, if it has one.
pub fn of(kind: &Kind, host: &HostFacts) -> Option<Sham> {
    let (mechanism, spec) = match kind {
        Kind::Tz { .. } => ("TZ set", format!("tz={}", host_zone(host)?)),
        Kind::Faketime { .. } => ("the clock preload", "faketime=+0".to_string()),
        Kind::Netns | Kind::CpuPin { .. } | Kind::Rlimit { .. } => (
            "the setup before exec",
            format!("cpu-pin={}", host.cpus.len().max(1)),
        ),
        Kind::CpuStress { .. } => ("a run scheduled alone", "cpu-stress=0".to_string()),
        Kind::Locale { .. }
        | Kind::Env { .. }
        | Kind::Shuffle
        | Kind::Orders
        | Kind::Workers { .. }
        | Kind::Race { .. } => return None,
    };
    Some(Sham { mechanism, spec })
}

/// The zone the host's own processes are in: the harness's `TZ`, else the
/// zone `/etc/localtime` links to, else UTC (glibc's default without it).
/// None when that zone is not in the zoneinfo database (no sham then).
pub fn host_zone(host: &HostFacts) -> Option<String> {
    let zone = match host.tz.as_deref().map(|t| t.trim_start_matches(':')) {
        Some(tz) if !tz.is_empty() => tz.to_string(),
        _ => zone_of_link(Path::new("/etc/localtime")).unwrap_or_else(|| "UTC".into()),
    };
    host.zoneinfo.join(&zone).is_file().then_some(zone)
}

fn zone_of_link(link: &Path) -> Option<String> {
    let target = std::fs::read_link(link).ok()?;
    let text = target.to_string_lossy();
    let at = text.find("zoneinfo/")? + "zoneinfo/".len();
    Some(text[at..].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mechanism_has_a_null_sham_and_parameters_without_one_have_none() {
        let mut host = HostFacts::detect();
        host.tz = Some("Asia/Tokyo".into());
        host.cpus = vec![0, 1, 2];
        let sham = |k: Kind| of(&k, &host).map(|s| s.spec);
        assert_eq!(
            sham(Kind::Tz {
                zone: "Pacific/Kiritimati".into()
            })
            .as_deref(),
            Some("tz=Asia/Tokyo")
        );
        assert_eq!(
            sham(Kind::Faketime {
                clock: "+365d".into()
            })
            .as_deref(),
            Some("faketime=+0")
        );
        assert_eq!(sham(Kind::Netns).as_deref(), Some("cpu-pin=3"));
        assert_eq!(
            sham(Kind::Rlimit {
                resource: "nofile".into(),
                value: 64
            })
            .as_deref(),
            Some("cpu-pin=3")
        );
        assert_eq!(
            sham(Kind::CpuStress {
                amount: "2x".into()
            })
            .as_deref(),
            Some("cpu-stress=0")
        );
        assert_eq!(sham(Kind::Shuffle), None);
        assert_eq!(
            sham(Kind::Locale {
                locale: "C.UTF-8".into()
            }),
            None
        );
        // A harness zone the database does not hold gives no sham.
        host.tz = Some("Mars/Olympus".into());
        assert_eq!(host_zone(&host), None);
    }

    #[test]
    fn the_zone_of_a_localtime_link_is_its_path_below_zoneinfo() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("localtime");
        std::os::unix::fs::symlink("/usr/share/zoneinfo/Europe/Berlin", &link).unwrap();
        assert_eq!(zone_of_link(&link).as_deref(), Some("Europe/Berlin"));
        assert_eq!(zone_of_link(dir.path()), None);
    }
}
