//! The standalone shell line that reproduces a run without flakelab, and
//! the environment delta as recorded (credential-like values redacted by a
//! [`Redaction`] built once per session). Pure: built from the same argv and
//! environment delta that ran.

use std::collections::BTreeMap;
use std::path::Path;

use crate::record::EnvDelta;
pub use crate::redact::{quote, Redaction, REDACTED};

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

/// The delta as recorded: credential-like values replaced by [`REDACTED`].
pub fn recorded_env(
    redaction: &Redaction,
    set: &BTreeMap<String, String>,
    unset: &[String],
) -> EnvDelta {
    EnvDelta {
        set: redaction.env(set),
        unset: unset.to_vec(),
    }
}

/// Words joined into one shell line, each quoted as needed.
pub fn join(words: &[String]) -> String {
    words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
