//! Redaction of credential-like values before anything is recorded or
//! printed: a [`Redaction`] value, built once per session from the built-in
//! credential words and the project's `[redact] names` / `FLAKELAB_REDACT`,
//! passed to wherever records and evidence are built. A leaf: it depends on
//! nothing in the crate.
//!
//! Two things are masked. By name: the value of a credential-like variable
//! in an environment delta, a perturbation or a shell line. By value: the
//! values those variables hold (in flakelab's own environment, and as set
//! by cells) wherever they appear in free text: what the subject printed,
//! its JUnit messages, failure signatures, commands — as CI systems mask
//! secrets in job logs.

use std::borrow::Cow;
use std::collections::BTreeMap;

/// The placeholder recorded instead of a credential-like value.
pub const REDACTED: &str = "<redacted>";

/// [`REDACTED`] as XML text, for reports rewritten in place.
pub const REDACTED_XML: &str = "&lt;redacted&gt;";

/// Values shorter than this are not masked in free text (a credential of
/// one to three characters would mask ordinary words and digits
/// everywhere), nor are switches (`true`, `false`, …); they are still
/// redacted by name.
pub const MIN_VALUE_CHARS: usize = 4;

/// Which variable names hold credentials: the built-in words plus the
/// project's extra names (or fragments), matched ignoring case; and the
/// values such variables hold, to mask in free text.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Redaction {
    /// Extra names or fragments, upper-cased, none empty.
    extra: Vec<String>,
    /// Values to mask in free text: distinct, longest first, none shorter
    /// than [`MIN_VALUE_CHARS`].
    values: Vec<String>,
}

impl std::fmt::Debug for Redaction {
    /// Never the values themselves: a debug print must not leak them.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redaction")
            .field("extra", &self.extra)
            .field("values", &format_args!("{} masked", self.values.len()))
            .finish()
    }
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
            values: Vec::new(),
        }
    }

    /// This redaction, also masking in free text the value of every
    /// credential-like variable among `vars` (each line of a value of
    /// several lines too, as a key file has).
    pub fn with_values<K: AsRef<str>, V: AsRef<str>>(
        mut self,
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Redaction {
        for (name, value) in vars {
            if !self.is_secret(name.as_ref()) {
                continue;
            }
            let value = value.as_ref();
            let lines = value.lines().map(str::trim).filter(|l| *l != value);
            for v in std::iter::once(value).chain(lines) {
                if maskable(v) {
                    self.values.push(v.to_string());
                }
            }
        }
        self.values
            .sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        self.values.dedup();
        self
    }

    /// This redaction with the credential-like variables of flakelab's own
    /// environment (those a subject inherits).
    pub fn with_own_environment(self) -> Redaction {
        self.with_values(
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
        )
    }

    /// Whether any value is masked in free text.
    pub fn masks_values(&self) -> bool {
        !self.values.is_empty()
    }

    /// `text` with every masked value replaced by [`REDACTED`].
    pub fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for v in &self.values {
            if out.contains(v.as_str()) {
                out = Cow::Owned(out.replace(v.as_str(), REDACTED));
            }
        }
        out
    }

    /// [`Redaction::text`] in place.
    pub fn scrub(&self, text: &mut String) {
        if let Cow::Owned(clean) = self.text(text) {
            *text = clean;
        }
    }

    /// Bytes (a captured log, which need not be UTF-8) with every masked
    /// value replaced by `with`; `None` when nothing was masked.
    pub fn bytes(&self, bytes: &[u8], with: &str) -> Option<Vec<u8>> {
        let mut out: Option<Vec<u8>> = None;
        for v in &self.values {
            let current = out.as_deref().unwrap_or(bytes);
            if let Some(replaced) = replace_bytes(current, v.as_bytes(), with.as_bytes()) {
                out = Some(replaced);
            }
        }
        out
    }

    /// An XML document with every masked value replaced by
    /// [`REDACTED_XML`], whether written as is or with XML escapes;
    /// `None` when nothing was masked.
    pub fn xml(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        let escaped = Redaction {
            extra: Vec::new(),
            values: self
                .values
                .iter()
                .flat_map(|v| [v.clone(), xml_escape(v, false), xml_escape(v, true)])
                .collect(),
        };
        let mut values = escaped.values;
        values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        values.dedup();
        Redaction {
            extra: Vec::new(),
            values,
        }
        .bytes(bytes, REDACTED_XML)
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

/// Whether a value is masked in free text: not too short, and not a
/// switch (`AUTH_ENABLED=true` holds no credential, and masking `true`
/// would mask it in every log).
fn maskable(v: &str) -> bool {
    const SWITCHES: &[&str] = &["true", "false", "null", "none", "enabled", "disabled"];
    v.chars().count() >= MIN_VALUE_CHARS
        && v != REDACTED
        && !SWITCHES.iter().any(|w| v.eq_ignore_ascii_case(w))
}

/// `hay` with every `needle` replaced by `with`; `None` when there is none.
fn replace_bytes(hay: &[u8], needle: &[u8], with: &[u8]) -> Option<Vec<u8>> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    let mut out = Vec::new();
    let mut last = 0;
    let mut i = 0;
    while i + needle.len() <= hay.len() {
        if &hay[i..i + needle.len()] == needle {
            out.extend_from_slice(&hay[last..i]);
            out.extend_from_slice(with);
            i += needle.len();
            last = i;
        } else {
            i += 1;
        }
    }
    if last == 0 {
        return None;
    }
    out.extend_from_slice(&hay[last..]);
    Some(out)
}

/// `text` with XML's special characters escaped (quotes too when
/// `quotes`, as in attributes).
fn xml_escape(text: &str, quotes: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if quotes => out.push_str("&quot;"),
            '\'' if quotes => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// Quotes one word for a POSIX shell: unchanged when it holds only safe
/// characters, else single-quoted (with `'` written as `'\''`).
pub fn quote(word: &str) -> String {
    let mut out = String::with_capacity(word.len() + 2);
    quote_into(&mut out, word);
    out
}

/// [`quote`], written at the end of `out`.
pub fn quote_into(out: &mut String, word: &str) {
    let safe = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./-_".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        out.push_str(word);
    } else {
        out.push('\'');
        for (i, part) in word.split('\'').enumerate() {
            if i > 0 {
                out.push_str("'\\''");
            }
            out.push_str(part);
        }
        out.push('\'');
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
    fn values_of_secret_variables_are_masked_in_free_text_and_bytes() {
        let r = Redaction::new(&["deploy_code".to_string()]).with_values([
            ("MY_TOKEN", "tok-4711"),
            ("DEPLOY_CODE", "a&b<c>\"d"),
            ("TZ", "Asia/Kathmandu"),
            ("API_KEY", "abc"),
            (
                "SSH_PRIVATE_KEY",
                "-----BEGIN-----\nline-one-xyz\n-----END-----",
            ),
        ]);
        assert!(r.masks_values());
        assert_eq!(
            r.text("got tok-4711 and tok-4711 in Asia/Kathmandu"),
            "got <redacted> and <redacted> in Asia/Kathmandu"
        );
        // Too short to mask in free text: `abc` stays, ordinary words too.
        assert_eq!(r.text("abc"), "abc");
        // A switch is no credential: `true` stays true in every log.
        let switch =
            Redaction::default().with_values([("AUTH_ENABLED", "true"), ("SKIP_AUTH", "False")]);
        assert!(!switch.masks_values());
        // Each line of a value of several lines is masked on its own.
        assert_eq!(r.text("key: line-one-xyz"), "key: <redacted>");
        let log = b"\xff binary tok-4711\n".to_vec();
        assert_eq!(
            r.bytes(&log, REDACTED).unwrap(),
            b"\xff binary <redacted>\n".to_vec()
        );
        assert_eq!(r.bytes(b"clean", REDACTED), None);
        // In XML, written as is or escaped: still masked, and still XML.
        let xml = br#"<failure message="a&amp;b&lt;c&gt;&quot;d">tok-4711</failure>"#;
        assert_eq!(
            String::from_utf8(r.xml(xml).unwrap()).unwrap(),
            r#"<failure message="&lt;redacted&gt;">&lt;redacted&gt;</failure>"#
        );
        // The values never show in a debug print.
        assert!(!format!("{r:?}").contains("tok-4711"));
        // A redaction without values masks nothing.
        assert_eq!(Redaction::default().text("tok-4711"), "tok-4711");
    }

    #[test]
    fn a_longer_value_is_masked_before_a_value_it_contains() {
        let r = Redaction::default().with_values([("A_TOKEN", "abcd"), ("B_TOKEN", "abcdefgh")]);
        assert_eq!(r.text("abcdefgh abcd"), "<redacted> <redacted>");
    }

    #[test]
    fn words_are_quoted_only_as_needed() {
        assert_eq!(quote("/bin/true"), "/bin/true");
        assert_eq!(quote("a=b,c@d%e+f:g"), "a=b,c@d%e+f:g");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("my dir"), "'my dir'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("''"), r"''\'''\'''");
        let mut out = "x ".to_string();
        quote_into(&mut out, "a b");
        assert_eq!(out, "x 'a b'");
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
