//! Redaction of credential-like values before anything is recorded or
//! printed: a [`Redaction`] value, built once per session from the built-in
//! credential words and the project's `[redact] names` / `FLAKELAB_REDACT`,
//! passed to wherever records and evidence are built. A leaf: it depends on
//! nothing in the crate.

use std::collections::BTreeMap;

/// The placeholder recorded instead of a credential-like value.
pub const REDACTED: &str = "<redacted>";

/// Which variable names hold credentials: the built-in words plus the
/// project's extra names (or fragments), matched ignoring case.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Redaction {
    /// Extra names or fragments, upper-cased, none empty.
    extra: Vec<String>,
}

impl Redaction {
    /// The built-in words plus `names` (empty entries are ignored).
    pub fn new(names: &[String]) -> Redaction {
        Redaction {
            extra: names
                .iter()
                .map(|n| n.trim().to_ascii_uppercase())
                .filter(|n| !n.is_empty())
                .collect(),
        }
    }

    /// Whether a variable's name looks like it holds a credential: one of its
    /// `_`-separated words is a credential word (`GITHUB_TOKEN`, `DB_PASSWORD`,
    /// `AUTH`, `SSH_KEY`), or it holds a credential phrase
    /// (`AWS_SECRET_ACCESS_KEY`, `STRIPE_API_KEY`), or it contains one of the
    /// extra names. `AUTHOR` and `KEYBOARD` are not.
    pub fn is_secret(&self, name: &str) -> bool {
        let upper = name.to_ascii_uppercase();
        if self.extra.iter().any(|e| upper.contains(e.as_str())) {
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

    /// Variables as recorded: credential-like values replaced by [`REDACTED`].
    pub fn env(&self, set: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        set.iter()
            .map(|(k, v)| {
                let v = if self.is_secret(k) {
                    REDACTED.to_string()
                } else {
                    v.clone()
                };
                (k.clone(), v)
            })
            .collect()
    }

    /// A URL with any `user:password@` part replaced by `<redacted>@`.
    pub fn url(url: &str) -> String {
        match (url.find("://"), url.rfind('@')) {
            (Some(scheme), Some(at)) if at > scheme => {
                format!("{}{REDACTED}{}", &url[..scheme + 3], &url[at..])
            }
            _ => url.to_string(),
        }
    }

    /// A shell line with the values of credential-like `NAME=VALUE` words
    /// replaced by [`REDACTED`] (for lines recorded before a name was
    /// configured). A line that does not split like a shell is returned as
    /// is when it holds no such word, else with every word after `=`
    /// redacted by pattern.
    pub fn line(&self, line: &str) -> String {
        let assignment = |w: &str| -> Option<(String, String)> {
            let (name, value) = w.split_once('=')?;
            let valid = !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            (valid && self.is_secret(name) && value != REDACTED)
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
                    if self.is_secret(&c[1]) {
                        format!("{}={}", &c[1], quote(REDACTED))
                    } else {
                        c[0].to_string()
                    }
                })
                .into_owned()
            }
        }
    }
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

    #[test]
    fn secrets_are_redacted_and_others_kept() {
        let set = BTreeMap::from([
            ("GITHUB_TOKEN".to_string(), "ghp_x".to_string()),
            ("TZ".to_string(), "Asia/Kathmandu".to_string()),
        ]);
        let d = Redaction::default().env(&set);
        assert_eq!(d["GITHUB_TOKEN"], REDACTED);
        assert_eq!(d["TZ"], "Asia/Kathmandu");
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
            assert!(Redaction::default().is_secret(yes), "{yes}");
        }
        for no in [
            "AUTHOR",
            "TZ",
            "PATH",
            "TOKENIZER_MODE",
            "PASSTHROUGH",
            "KEYBOARD",
        ] {
            assert!(!Redaction::default().is_secret(no), "{no}");
        }
        assert!(Redaction::default().is_secret("SSH_KEY"));
    }

    #[test]
    fn configured_fragments_are_secret_whatever_their_case() {
        let extra = Redaction::new(&[" deploy_code ".to_string(), String::new()]);
        assert!(extra.is_secret("deploy_code"));
        assert!(extra.is_secret("MY_DEPLOY_CODE_V2"));
        assert!(!extra.is_secret("DEPLOY"));
        assert!(!Redaction::default().is_secret("DEPLOY_CODE"));
    }

    #[test]
    fn lines_lose_credential_values_and_keep_working_words() {
        let line = "cd /x && env GITHUB_TOKEN=ghp_abc TZ=UTC sh -c 'echo hi'";
        assert_eq!(
            Redaction::default().line(line),
            "cd /x && env GITHUB_TOKEN='<redacted>' TZ=UTC sh -c 'echo hi'"
        );
        // Nothing to redact: the line is left exactly as it was.
        let plain = "cd /x && env TZ=UTC sh -c 'echo  hi'";
        assert_eq!(Redaction::default().line(plain), plain);
        // Already redacted: unchanged.
        let done = "cd /x && env API_TOKEN='<redacted>' true";
        assert_eq!(Redaction::default().line(done), done);
        // A line that does not split like a shell still loses the value.
        let broken = "cd /x && env DB_PASSWORD=hunter2 sh -c 'oops";
        assert!(!Redaction::default().line(broken).contains("hunter2"));
    }

    #[test]
    fn urls_lose_their_credentials() {
        assert_eq!(
            Redaction::url("https://bob:ghp_x@github.com/o/r.git"),
            "https://<redacted>@github.com/o/r.git"
        );
        assert_eq!(
            Redaction::url("git@github.com:o/r.git"),
            "git@github.com:o/r.git"
        );
        assert_eq!(
            Redaction::url("https://github.com/o/r"),
            "https://github.com/o/r"
        );
    }
}
