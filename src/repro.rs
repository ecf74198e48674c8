//! The standalone shell line that reproduces a run without flakelab, and the
//! redaction of credential-like values before anything is recorded.
//! Pure: built from the same argv and environment delta that ran. The one
//! piece of state is the project's extra redaction list ([`configure`]),
//! set once per process before any record is made.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::RwLock;

/// Extra names (or name fragments) to redact, from `[redact] names` in
/// `flakelab.toml` and `FLAKELAB_REDACT`; upper-cased.
static EXTRA_NAMES: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Sets the extra names (or fragments) whose values are redacted, beside the
/// built-in credential words. Empty entries are ignored; matching ignores case.
pub fn configure(names: &[String]) {
    let names: Vec<String> = names
        .iter()
        .map(|n| n.trim().to_ascii_uppercase())
        .filter(|n| !n.is_empty())
        .collect();
    *EXTRA_NAMES.write().unwrap_or_else(|e| e.into_inner()) = names;
}

use crate::record::EnvDelta;

/// The placeholder recorded instead of a credential-like value.
pub const REDACTED: &str = "<redacted>";

/// Whether a variable's name looks like it holds a credential: one of its
/// `_`-separated words is a credential word (`GITHUB_TOKEN`, `DB_PASSWORD`,
/// `AUTH`, `SSH_KEY`), or it holds a credential phrase (`AWS_SECRET_ACCESS_KEY`,
/// `STRIPE_API_KEY`), or it contains one of the [`configure`]d names.
/// `AUTHOR` and `KEYBOARD` are not.
pub fn is_secret_name(name: &str) -> bool {
    let extra = EXTRA_NAMES.read().unwrap_or_else(|e| e.into_inner());
    is_secret_name_with(name, &extra)
}

/// [`is_secret_name`] against an explicit extra list (upper-case fragments).
pub fn is_secret_name_with(name: &str, extra: &[String]) -> bool {
    let upper = name.to_ascii_uppercase();
    if extra.iter().any(|e| upper.contains(e.as_str())) {
        return true;
    }
    const WORDS: &[&str] = &[
        "SECRET",
        "SECRETS",
        "TOKEN",
        "TOKENS",
        "PASSWORD",
        "PASSWD",
        "PASS",
        "PWD_SECRET",
        "CREDENTIAL",
        "CREDENTIALS",
        "APIKEY",
        "KEY",
        "KEYS",
        "AUTH",
        "COOKIE",
        "PRIVATE",
        "SIGNATURE_KEY",
    ];
    const PHRASES: &[&str] = &[
        "API_KEY",
        "ACCESS_KEY",
        "PRIVATE_KEY",
        "SECRET_KEY",
        "SESSION_KEY",
    ];
    upper
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|w| WORDS.contains(&w))
        || PHRASES.iter().any(|p| upper.contains(p))
}

/// A URL with any `user:password@` part replaced by `<redacted>@`.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}{REDACTED}{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_string(),
    }
}

/// The delta as recorded: credential-like values replaced by [`REDACTED`].
pub fn redacted(set: &BTreeMap<String, String>, unset: &[String]) -> EnvDelta {
    EnvDelta {
        set: set
            .iter()
            .map(|(k, v)| {
                let v = if is_secret_name(k) {
                    REDACTED.to_string()
                } else {
                    v.clone()
                };
                (k.clone(), v)
            })
            .collect(),
        unset: unset.to_vec(),
    }
}

/// A shell line with the values of credential-like `NAME=VALUE` words
/// replaced by [`REDACTED`] (for lines recorded before a name was
/// configured). A line that does not split like a shell is returned as is
/// when it holds no such word, else with every word after `=` redacted by
/// pattern.
pub fn redact_line(line: &str) -> String {
    let assignment = |w: &str| -> Option<(String, String)> {
        let (name, value) = w.split_once('=')?;
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        (valid && is_secret_name(name) && value != REDACTED)
            .then(|| (name.to_string(), value.to_string()))
    };
    match shell_words::split(line) {
        Ok(words) if words.iter().any(|w| assignment(w).is_some()) => words
            .iter()
            .map(|w| match assignment(w) {
                Some((name, _)) => format!("{name}={}", quote(REDACTED)),
                None if w == "&&" => w.clone(),
                None => quote(w),
            })
            .collect::<Vec<_>>()
            .join(" "),
        Ok(_) => line.to_string(),
        Err(_) => {
            static ASSIGN: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
            let re = ASSIGN.get_or_init(|| {
                regex::Regex::new(r"\b([A-Za-z_][A-Za-z0-9_]*)=('[^']*'|\S*)")
                    .expect("a valid pattern")
            });
            re.replace_all(line, |c: &regex::Captures| {
                if is_secret_name(&c[1]) {
                    format!("{}={}", &c[1], quote(REDACTED))
                } else {
                    c[0].to_string()
                }
            })
            .into_owned()
        }
    }
}

/// A POSIX shell line: `cd DIR && env -u X A=B CMD ARGS…`, every word quoted
/// as needed, from an already redacted delta.
pub fn line(cwd: &Path, env: &EnvDelta, argv: &[String]) -> String {
    let mut text = format!("cd {} &&", quote(&cwd.display().to_string()));
    if !env.set.is_empty() || !env.unset.is_empty() {
        text.push_str(" env");
        for name in &env.unset {
            text.push_str(" -u ");
            text.push_str(&quote(name));
        }
        for (k, v) in &env.set {
            text.push(' ');
            text.push_str(k);
            text.push('=');
            text.push_str(&quote(v));
        }
    }
    for word in argv {
        text.push(' ');
        text.push_str(&quote(word));
    }
    text
}

/// Words joined into one shell line, each quoted as needed.
pub fn join(words: &[String]) -> String {
    words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

/// Quotes one word for a POSIX shell: unchanged when it holds only safe
/// characters, else single-quoted (with `'` written as `'\''`).
pub fn quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./-_".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn secrets_are_redacted_and_others_kept() {
        let set = BTreeMap::from([
            ("GITHUB_TOKEN".to_string(), "ghp_x".to_string()),
            ("TZ".to_string(), "Asia/Kathmandu".to_string()),
        ]);
        let d = redacted(&set, &[]);
        assert_eq!(d.set["GITHUB_TOKEN"], REDACTED);
        assert_eq!(d.set["TZ"], "Asia/Kathmandu");
    }

    #[test]
    fn secret_names_by_word_not_by_substring() {
        for yes in [
            "GITHUB_TOKEN",
            "DB_PASSWORD",
            "AWS_SECRET_ACCESS_KEY",
            "STRIPE_API_KEY",
            "AUTH",
            "npm_token",
        ] {
            assert!(is_secret_name(yes), "{yes}");
        }
        for no in [
            "AUTHOR",
            "TZ",
            "PATH",
            "TOKENIZER_MODE",
            "PASSTHROUGH",
            "KEYBOARD",
        ] {
            assert!(!is_secret_name_with(no, &[]), "{no}");
        }
        assert!(is_secret_name_with("SSH_KEY", &[]));
    }

    #[test]
    fn configured_fragments_are_secret_whatever_their_case() {
        let extra = vec!["DEPLOY_CODE".to_string()];
        assert!(is_secret_name_with("deploy_code", &extra));
        assert!(is_secret_name_with("MY_DEPLOY_CODE_V2", &extra));
        assert!(!is_secret_name_with("DEPLOY", &extra));
        assert!(!is_secret_name_with("DEPLOY_CODE", &[]));
    }

    #[test]
    fn lines_lose_credential_values_and_keep_working_words() {
        let line = "cd /x && env GITHUB_TOKEN=ghp_abc TZ=UTC sh -c 'echo hi'";
        assert_eq!(
            redact_line(line),
            "cd /x && env GITHUB_TOKEN='<redacted>' TZ=UTC sh -c 'echo hi'"
        );
        // Nothing to redact: the line is left exactly as it was.
        let plain = "cd /x && env TZ=UTC sh -c 'echo  hi'";
        assert_eq!(redact_line(plain), plain);
        // Already redacted: unchanged.
        let done = "cd /x && env API_TOKEN='<redacted>' true";
        assert_eq!(redact_line(done), done);
        // A line that does not split like a shell still loses the value.
        let broken = "cd /x && env DB_PASSWORD=hunter2 sh -c 'oops";
        assert!(!redact_line(broken).contains("hunter2"));
    }

    #[test]
    fn urls_lose_their_credentials() {
        assert_eq!(
            redact_url("https://bob:ghp_x@github.com/o/r.git"),
            "https://<redacted>@github.com/o/r.git"
        );
        assert_eq!(
            redact_url("git@github.com:o/r.git"),
            "git@github.com:o/r.git"
        );
        assert_eq!(
            redact_url("https://github.com/o/r"),
            "https://github.com/o/r"
        );
    }

    #[test]
    fn line_quotes_and_orders_env() {
        let env = EnvDelta {
            set: BTreeMap::from([("TZ".to_string(), "Asia/Kathmandu".to_string())]),
            unset: vec!["HOME".into()],
        };
        let argv = vec![
            "sh".to_string(),
            "-c".to_string(),
            "test \"$(date +%z)\" = +0000".to_string(),
        ];
        assert_eq!(
            line(Path::new("/tmp/my dir"), &env, &argv),
            "cd '/tmp/my dir' && env -u HOME TZ=Asia/Kathmandu sh -c 'test \"$(date +%z)\" = +0000'"
        );
    }

    proptest! {
        #[test]
        fn argv_round_trips_through_the_shell_grammar(argv in proptest::collection::vec(".*", 1..5)) {
            let l = line(Path::new("/x"), &EnvDelta::default(), &argv);
            let words = shell_words::split(&l).unwrap();
            prop_assert_eq!(&words[..3], &["cd".to_string(), "/x".to_string(), "&&".to_string()]);
            prop_assert_eq!(&words[3..], &argv[..]);
        }
    }
}
