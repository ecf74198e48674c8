//! The standalone shell line that reproduces a run without flakelab, and
//! the environment delta as recorded (credential-like values redacted by a
//! [`Redaction`] built once per session). Pure: built from the same argv and
//! environment delta that ran.

use std::collections::BTreeMap;
use std::path::Path;

use crate::record::EnvDelta;
pub use crate::redact::{quote, quote_into, Redaction};

/// A POSIX shell line: `cd DIR && env -u X A=B CMD ARGS…`, every word quoted
/// as needed, from an already redacted delta.
pub fn line(cwd: &Path, env: &EnvDelta, argv: &[String]) -> String {
    Shape::new(cwd, env, argv, &[]).fill(&[])
}

/// A repro [`line()`] with holes where the values of some variables go: built
/// once for what every run of a cell shares, filled per run with the values
/// that are the run's own (its id, its seed). Filled with the values a
/// delta holds, it is that delta's [`line()`], byte for byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    parts: Vec<Part>,
    /// The length of the text parts together.
    text_len: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    /// The value of `holes[i]`, quoted.
    Hole(usize),
}

impl Shape {
    /// The line of `cwd`, `env` and `argv` with the values of the variables
    /// named in `holes` left out (their values in `env` are not used).
    pub fn new(cwd: &Path, env: &EnvDelta, argv: &[String], holes: &[&str]) -> Shape {
        let mut parts = Vec::new();
        let mut text = String::from("cd ");
        quote_into(&mut text, &cwd.display().to_string());
        text.push_str(" &&");
        if !env.set.is_empty() || !env.unset.is_empty() {
            text.push_str(" env");
            for name in &env.unset {
                text.push_str(" -u ");
                quote_into(&mut text, name);
            }
            for (k, v) in &env.set {
                text.push(' ');
                text.push_str(k);
                text.push('=');
                match holes.iter().position(|h| h == k) {
                    Some(i) => {
                        parts.push(Part::Text(std::mem::take(&mut text)));
                        parts.push(Part::Hole(i));
                    }
                    None => quote_into(&mut text, v),
                }
            }
        }
        for word in argv {
            text.push(' ');
            quote_into(&mut text, word);
        }
        if !text.is_empty() {
            parts.push(Part::Text(text));
        }
        let text_len = parts
            .iter()
            .map(|p| match p {
                Part::Text(t) => t.len(),
                Part::Hole(_) => 0,
            })
            .sum();
        Shape { parts, text_len }
    }

    /// The line with `values[i]` (quoted) as the value of `holes[i]`.
    ///
    /// # Panics
    ///
    /// When `values` is shorter than the `holes` the shape was made with.
    pub fn fill(&self, values: &[&str]) -> String {
        let holes: usize = values.iter().map(|v| v.len() + 2).sum();
        let mut out = String::with_capacity(self.text_len + holes);
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Hole(i) => quote_into(&mut out, values[*i]),
            }
        }
        out
    }
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

    #[test]
    fn a_shape_filled_is_the_line_of_the_values() {
        let env = |id: &str, seed: &str| EnvDelta {
            set: BTreeMap::from([
                ("A".to_string(), "x y".to_string()),
                ("FLAKELAB_RUN_ID".to_string(), id.to_string()),
                ("FLAKELAB_SEED".to_string(), seed.to_string()),
                ("Z".to_string(), "it's".to_string()),
            ]),
            unset: vec!["HOME".into()],
        };
        let argv = vec!["sh".to_string(), "-c".to_string(), "echo $X".to_string()];
        let cwd = Path::new("/srv/a dir");
        let shape = Shape::new(
            cwd,
            &env("ignored", "ignored"),
            &argv,
            &["FLAKELAB_RUN_ID", "FLAKELAB_SEED"],
        );
        // The per-run values still differ between runs filled from one shape.
        let first = shape.fill(&["s.00000", "11"]);
        let second = shape.fill(&["s.00001", "12"]);
        assert_eq!(
            first,
            "cd '/srv/a dir' && env -u HOME A='x y' FLAKELAB_RUN_ID=s.00000 FLAKELAB_SEED=11 Z='it'\\''s' sh -c 'echo $X'"
        );
        assert_eq!(first, line(cwd, &env("s.00000", "11"), &argv));
        assert_eq!(second, line(cwd, &env("s.00001", "12"), &argv));
        // A value that needs quoting is quoted in its hole.
        assert_eq!(
            shape.fill(&["my run", "1"]),
            line(cwd, &env("my run", "1"), &argv)
        );
        // A hole for a variable the delta does not set is no hole.
        let none = Shape::new(cwd, &EnvDelta::default(), &argv, &["FLAKELAB_SEED"]);
        assert_eq!(none.fill(&["1"]), "cd '/srv/a dir' && sh -c 'echo $X'");
    }

    proptest! {
        #[test]
        fn a_shape_filled_equals_the_line(
            vars in proptest::collection::btree_map("[A-Z_]{1,6}", ".*", 0..5),
            unset in proptest::collection::vec("[A-Z]{1,4}", 0..3),
            argv in proptest::collection::vec(".*", 0..4),
            id in ".*",
        ) {
            let mut env = EnvDelta { set: vars, unset };
            let hole = env.set.keys().next().cloned().unwrap_or_default();
            let shape = Shape::new(Path::new("/d"), &env, &argv, &[hole.as_str()]);
            if env.set.contains_key(&hole) {
                env.set.insert(hole.clone(), id.clone());
            }
            prop_assert_eq!(shape.fill(&[id.as_str()]), line(Path::new("/d"), &env, &argv));
        }

        #[test]
        fn argv_round_trips_through_the_shell_grammar(argv in proptest::collection::vec(".*", 1..5)) {
            let l = line(Path::new("/x"), &EnvDelta::default(), &argv);
            let words = shell_words::split(&l).unwrap();
            prop_assert_eq!(&words[..3], &["cd".to_string(), "/x".to_string(), "&&".to_string()]);
            prop_assert_eq!(&words[3..], &argv[..]);
        }
    }
}
