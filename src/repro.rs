//! The standalone shell line that reproduces a run without flakelab, and the
//! redaction of credential-like values before anything is recorded.
//! Pure: built from the same argv and environment delta that ran.

use std::collections::BTreeMap;
use std::path::Path;

use crate::record::EnvDelta;

/// The placeholder recorded instead of a credential-like value.
pub const REDACTED: &str = "<redacted>";

/// Whether a variable's name looks like it holds a credential: one of its
/// `_`-separated words is a credential word (`GITHUB_TOKEN`, `DB_PASSWORD`,
/// `AUTH`), or it holds a credential phrase (`AWS_SECRET_ACCESS_KEY`,
/// `STRIPE_API_KEY`). `AUTHOR` is not one.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
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
        for no in ["AUTHOR", "TZ", "PATH", "TOKENIZER_MODE", "PASSTHROUGH"] {
            assert!(!is_secret_name(no), "{no}");
        }
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
