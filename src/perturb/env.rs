//! Host checks for the environment kinds: does a zone exist in the zoneinfo
//! database (an unknown `TZ` silently means UTC in libc, so it is refused),
//! and is a locale installed (an unknown `LC_ALL` silently means `C`).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The zoneinfo directory: `$TZDIR` when set, else `/usr/share/zoneinfo`.
pub fn zoneinfo_dir() -> PathBuf {
    std::env::var_os("TZDIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/share/zoneinfo"))
}

/// Checks that `zone` names a TZif file in `zoneinfo` and returns its
/// rules, read from the file the child's C library reads (the offset the
/// zone has at an instant: `perturb::calendar::offset_at`).
pub fn load_zone(zone: &str, zoneinfo: &Path) -> Result<jiff::tz::TimeZone> {
    let unknown = |why: &str| {
        let mut hint = format!(
            "use a zone name from the zoneinfo database ({}), e.g. `Pacific/Kiritimati`; `ls {}` lists them",
            zoneinfo.display(),
            zoneinfo.display()
        );
        if let Some(near) = near_zone(zone, zoneinfo) {
            hint = format!("did you mean `{near}`? {hint}");
        }
        Error::usage(format!("unknown time zone `{zone}`: {why}"), hint)
    };
    let safe = !zone.is_empty()
        && !zone.starts_with('/')
        && zone
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..");
    if !safe {
        return Err(unknown("not a zone name"));
    }
    let path = zoneinfo.join(zone);
    let bytes = std::fs::read(&path).map_err(|_| unknown("no such zone in the database"))?;
    if !bytes.starts_with(b"TZif") {
        return Err(unknown("the file is not a TZif zone"));
    }
    jiff::tz::TimeZone::tzif(zone, &bytes)
        .map_err(|e| unknown(&format!("the zone file does not parse ({e})")))
}

/// Formats an offset in seconds as `+HHMM` / `-HHMM`.
pub fn format_offset(seconds: i32) -> String {
    let sign = if seconds < 0 { '-' } else { '+' };
    let s = seconds.unsigned_abs();
    format!("{sign}{:02}{:02}", s / 3600, (s % 3600) / 60)
}

fn near_zone(zone: &str, zoneinfo: &Path) -> Option<String> {
    let wanted = zone.to_ascii_lowercase().replace(' ', "_");
    let last = wanted.rsplit('/').next().unwrap_or(&wanted).to_string();
    let mut stack = vec![zoneinfo.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).ok()?.flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(zoneinfo).ok()?.display().to_string();
            if path.is_dir() {
                if !rel.starts_with("posix") && !rel.starts_with("right") {
                    stack.push(path);
                }
            } else {
                let lower = rel.to_ascii_lowercase();
                let named = lower == wanted || lower.rsplit('/').next() == Some(last.as_str());
                // Only a zone is a suggestion: the database directory also
                // holds tables (`zone1970.tab`), and the name asked for is
                // no suggestion of itself.
                if named && rel != zone && is_tzif(&path) {
                    return Some(rel);
                }
            }
        }
    }
    None
}

/// Whether `path` starts like a TZif zone file.
fn is_tzif(path: &Path) -> bool {
    use std::io::Read as _;
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| &magic == b"TZif")
}

/// Normalises a locale name the way glibc compares codesets:
/// `de_DE.UTF-8` and `de_DE.utf8` are the same locale.
pub fn normalise_locale(name: &str) -> String {
    match name.split_once('.') {
        Some((lang, rest)) => {
            let (codeset, modifier) = match rest.split_once('@') {
                Some((c, m)) => (c, Some(m)),
                None => (rest, None),
            };
            let codeset: String = codeset
                .chars()
                .filter(|c| c.is_ascii_alphanumeric())
                .map(|c| c.to_ascii_lowercase())
                .collect();
            match modifier {
                Some(m) => format!("{lang}.{codeset}@{m}"),
                None => format!("{lang}.{codeset}"),
            }
        }
        None => name.to_string(),
    }
}

/// Checks that `locale` is installed (listed by `locale -a`; `C` and `POSIX`
/// always are).
pub fn check_locale(locale: &str) -> Result<()> {
    if locale == "C" || locale == "POSIX" {
        return Ok(());
    }
    let listed = crate::exec::query("locale", &["-a"]).ok_or_else(|| {
        Error::usage(
            format!("cannot check locale `{locale}`: `locale -a` did not run"),
            "install the C library's locale tools (Debian: package `locales`)",
        )
    })?;
    let wanted = normalise_locale(locale);
    if listed.lines().any(|l| normalise_locale(l.trim()) == wanted) {
        return Ok(());
    }
    Err(Error::usage(
        format!("locale `{locale}` is not installed on this host (`locale -a` does not list it)"),
        format!(
            "install it (Debian: `apt-get install locales`, add `{locale}` to /etc/locale.gen, run `locale-gen`), or pick one `locale -a` lists"
        ),
    ))
}

/// The zone the host's own processes are in: the harness's `TZ`, else the
/// zone `/etc/localtime` links to, else UTC (glibc's default without it).
/// None when that zone is not in the zoneinfo database (no sham then).
pub fn host_zone(host: &super::HostFacts) -> Option<String> {
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
    fn known_zones_give_their_offset() {
        let dir = zoneinfo_dir();
        let now = jiff::Timestamp::now();
        let offset =
            |zone: &str| format_offset(load_zone(zone, &dir).unwrap().to_offset(now).seconds());
        assert_eq!(offset("Asia/Kathmandu"), "+0545");
        assert_eq!(offset("Pacific/Kiritimati"), "+1400");
        assert_eq!(offset("UTC"), "+0000");
    }

    #[test]
    fn unknown_zones_and_paths_are_refused_with_a_suggestion() {
        let dir = zoneinfo_dir();
        let err = load_zone("kathmandu", &dir).unwrap_err().to_string();
        assert!(err.contains("did you mean `Asia/Kathmandu`"), "{err}");
        assert!(load_zone("../../etc/passwd", &dir).is_err());
        assert!(load_zone("/etc/passwd", &dir).is_err());
        assert!(load_zone("Asia", &dir).is_err());
    }

    #[test]
    fn a_file_of_the_database_that_is_no_zone_is_not_suggested_back() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("zone1970.tab"), "# tz zone descriptions\n").unwrap();
        std::fs::create_dir(dir.path().join("Asia")).unwrap();
        let utc = std::fs::read(zoneinfo_dir().join("UTC")).unwrap();
        std::fs::write(dir.path().join("Asia/Kathmandu"), &utc).unwrap();
        std::fs::write(dir.path().join("Asia/notes.tab"), "x\n").unwrap();
        let err = load_zone("zone1970.tab", dir.path())
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a TZif zone"), "{err}");
        assert!(!err.contains("did you mean"), "{err}");
        // A table under another directory is no suggestion either; a zone is.
        let err = load_zone("notes.tab", dir.path()).unwrap_err().to_string();
        assert!(!err.contains("did you mean"), "{err}");
        let err = load_zone("kathmandu", dir.path()).unwrap_err().to_string();
        assert!(err.contains("did you mean `Asia/Kathmandu`"), "{err}");
    }

    #[test]
    fn offsets_format_like_date() {
        assert_eq!(format_offset(-11 * 3600), "-1100");
        assert_eq!(format_offset(-(3 * 3600 + 1800)), "-0330");
        assert_eq!(format_offset(0), "+0000");
    }

    #[test]
    fn locale_codesets_compare_like_glibc() {
        assert_eq!(
            normalise_locale("de_DE.UTF-8"),
            normalise_locale("de_DE.utf8")
        );
        assert_eq!(normalise_locale("C.UTF-8"), "C.utf8");
        assert_ne!(
            normalise_locale("de_DE.UTF-8"),
            normalise_locale("de_AT.UTF-8")
        );
    }

    #[test]
    fn missing_locale_is_a_usage_error_naming_the_fix() {
        assert!(check_locale("C").is_ok());
        assert!(check_locale("C.UTF-8").is_ok());
        let err = check_locale("xx_YY.UTF-8").unwrap_err().to_string();
        assert!(err.contains("not installed"), "{err}");
        assert!(err.contains("locale-gen"), "{err}");
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
