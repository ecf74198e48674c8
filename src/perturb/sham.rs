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
//! Each kind's file under `perturb::kind` declares its sham.
//! `race` has no null parameter (an instrumented build always detects); its
//! instrumentation also slows the subject, so a `race` cell is read by its
//! failures' signatures: a race report is the detector's finding, any other
//! failure may be the slowdown's.

use super::HostFacts;
use crate::catalog::Kind;

pub use super::kind::Sham;

/// The sham of the mechanism `kind` uses on this host, if it has one (each
/// kind's file declares its own).
pub fn of(kind: &Kind, host: &HostFacts) -> Option<Sham> {
    super::kind::sham(kind, host)
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
        assert_eq!(super::super::env::host_zone(&host), None);
    }
}
