//! Templates of the strings a run record repeats with only its own id,
//! session, seed and index changed (argv, environment values, the repro
//! line, the log and report paths). A template replaces those values with
//! `{id}`, `{session}`, `{seed}` and `{index}` and doubles every literal
//! brace, so expanding it with the same values gives back the original
//! string byte for byte, whatever the text. Which occurrences are replaced
//! only decides how often a template repeats (numbers are replaced only
//! where no digit touches them). Pure.

/// The values a template stands in for: one run's.
#[derive(Debug, Clone)]
pub struct Vars<'a> {
    /// The run id (`<session>.<index:05>`).
    pub id: &'a str,
    /// The session id.
    pub session: &'a str,
    /// The run's seed, in decimal.
    pub seed: String,
    /// The run's index, zero-padded to 5 digits.
    pub index: String,
}

impl<'a> Vars<'a> {
    /// The values of the run `id` of `session` with `seed` at `index`.
    pub fn new(id: &'a str, session: &'a str, seed: u64, index: usize) -> Vars<'a> {
        Vars {
            id,
            session,
            seed: seed.to_string(),
            index: {
                let mut text = String::with_capacity(5);
                push_index(&mut text, index);
                text
            },
        }
    }
}

/// Writes `index` in decimal, zero-padded to 5 digits (as `{index:05}`),
/// at the end of `out`, without the formatting machinery (a few times per
/// run: its id, its log's name, its template values).
pub fn push_index(out: &mut String, index: usize) {
    let mut digits = [b'0'; 20];
    let mut n = index;
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let from = at.min(digits.len() - 5);
    out.extend(digits[from..].iter().map(|&d| char::from(d)));
}

/// Seeds shorter than this are left in the text: a short number is too
/// likely to occur by chance (a `-n1`), and keeping it costs only a context.
const MIN_SEED_CHARS: usize = 4;

/// `text` with the run's values replaced by placeholders and braces doubled.
///
/// Only a brace, a digit or the first byte of the id or the session can
/// start anything but a copied character, so the text between such bytes
/// is copied whole (it holds no digit: a digit never precedes the byte
/// after it). The same result, character for character, as trying every
/// placeholder at every character (`tests::make_by_char`).
pub fn make(text: &str, vars: &Vars) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    make_into(text, vars, &mut out);
    out
}

/// Whether [`make`] turns `text` into `template`, without making it.
pub fn makes(text: &str, vars: &Vars, template: &str) -> bool {
    let mut check = Check {
        rest: template,
        same: true,
    };
    make_into(text, vars, &mut check);
    check.same && check.rest.is_empty()
}

/// Where [`make_into`] writes.
trait Sink {
    fn put(&mut self, s: &str);
}

impl Sink for String {
    fn put(&mut self, s: &str) {
        self.push_str(s);
    }
}

/// A template written over an expected one: whether it is the same so far.
struct Check<'t> {
    rest: &'t str,
    same: bool,
}

impl Sink for Check<'_> {
    fn put(&mut self, s: &str) {
        match self.rest.strip_prefix(s).filter(|_| self.same) {
            Some(rest) => self.rest = rest,
            None => self.same = false,
        }
    }
}

fn make_into(text: &str, vars: &Vars, out: &mut impl Sink) {
    let bytes = text.as_bytes();
    // The bytes that can start anything but a copied character, as a table.
    let mut special = [false; 256];
    let firsts = [vars.id, vars.session].map(|s| s.as_bytes().first().copied());
    for b in b"{}0123456789"
        .iter()
        .copied()
        .chain(firsts.into_iter().flatten())
    {
        special[usize::from(b)] = true;
    }
    let special = |b: u8| special[usize::from(b)];
    let mut at = 0;
    let mut after_digit = false;
    while at < bytes.len() {
        // Plain bytes up to the next special one, copied at once. A special
        // byte is ASCII or the first byte of a character (the first byte of
        // a `str`), so `at` stays on a character boundary.
        let plain = bytes[at..]
            .iter()
            .position(|&b| special(b))
            .map_or(bytes.len(), |n| at + n);
        if plain > at {
            out.put(&text[at..plain]);
            at = plain;
            after_digit = false;
            continue;
        }
        let rest = &text[at..];
        let (taken, digit) = step(rest, vars, after_digit, out);
        after_digit = digit;
        at += taken;
    }
}

/// One step of [`make`] at `rest`: the placeholder or character written to
/// `out`, how many bytes it took and whether they end in a digit.
fn step(rest: &str, vars: &Vars, after_digit: bool, out: &mut impl Sink) -> (usize, bool) {
    // A number alone: no digit right before or right after it.
    let number = |n: &str| {
        !after_digit
            && rest.starts_with(n)
            && !rest[n.len()..].starts_with(|c: char| c.is_ascii_digit())
    };
    let taken = if !vars.id.is_empty() && rest.starts_with(vars.id) {
        out.put("{id}");
        vars.id.len()
    } else if !vars.session.is_empty() && rest.starts_with(vars.session) {
        out.put("{session}");
        vars.session.len()
    } else if vars.seed.len() >= MIN_SEED_CHARS && number(&vars.seed) {
        out.put("{seed}");
        vars.seed.len()
    } else if number(&vars.index) {
        out.put("{index}");
        vars.index.len()
    } else {
        let c = rest.chars().next().unwrap_or_default();
        match c {
            '{' => out.put("{{"),
            '}' => out.put("}}"),
            c => out.put(c.encode_utf8(&mut [0; 4])),
        }
        c.len_utf8()
    };
    (taken, rest[..taken].ends_with(|c: char| c.is_ascii_digit()))
}

/// One piece of a compiled template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Id,
    Session,
    Seed,
    Index,
}

/// A template parsed once, expanded per run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compiled(Vec<Piece>);

impl Compiled {
    /// Parses a template; None when it holds a lone brace or an unknown
    /// placeholder.
    pub fn parse(template: &str) -> Option<Compiled> {
        let mut pieces = Vec::new();
        let mut text = String::new();
        let mut rest = template;
        while let Some(c) = rest.chars().next() {
            if let Some(after) = rest.strip_prefix("{{") {
                text.push('{');
                rest = after;
                continue;
            }
            if let Some(after) = rest.strip_prefix("}}") {
                text.push('}');
                rest = after;
                continue;
            }
            if c == '}' {
                return None;
            }
            if c == '{' {
                let end = rest.find('}')?;
                let piece = match &rest[1..end] {
                    "id" => Piece::Id,
                    "session" => Piece::Session,
                    "seed" => Piece::Seed,
                    "index" => Piece::Index,
                    _ => return None,
                };
                if !text.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                }
                pieces.push(piece);
                rest = &rest[end + 1..];
                continue;
            }
            text.push(c);
            rest = &rest[c.len_utf8()..];
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        Some(Compiled(pieces))
    }

    /// The template with this run's values.
    pub fn expand(&self, vars: &Vars) -> String {
        // The common case, no placeholder: one copy.
        if let [Piece::Text(t)] = self.0.as_slice() {
            return t.clone();
        }
        let text = |piece: &'_ Piece| -> usize {
            match piece {
                Piece::Text(t) => t.len(),
                Piece::Id => vars.id.len(),
                Piece::Session => vars.session.len(),
                Piece::Seed => vars.seed.len(),
                Piece::Index => vars.index.len(),
            }
        };
        // One allocation, of the expanded length.
        let mut out = String::with_capacity(self.0.iter().map(text).sum());
        for piece in &self.0 {
            out.put(match piece {
                Piece::Text(t) => t,
                Piece::Id => vars.id,
                Piece::Session => vars.session,
                Piece::Seed => &vars.seed,
                Piece::Index => &vars.index,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn vars() -> Vars<'static> {
        Vars::new(
            "20250101-000000-abcd.00042",
            "20250101-000000-abcd",
            712848796,
            42,
        )
    }

    #[test]
    fn replaces_the_run_values_and_escapes_braces() {
        let v = vars();
        let t = make(
            "FLAKELAB_RUN_ID=20250101-000000-abcd.00042 seed=712848796 junit/20250101-000000-abcd/00042.xml {run} 100042 7128487960",
            &v,
        );
        assert_eq!(
            t,
            "FLAKELAB_RUN_ID={id} seed={seed} junit/{session}/{index}.xml {{run}} 100042 7128487960"
        );
        let other = Vars::new(
            "20250102-000000-ffff.00007",
            "20250102-000000-ffff",
            99999,
            7,
        );
        assert_eq!(
            Compiled::parse(&t).unwrap().expand(&other),
            "FLAKELAB_RUN_ID=20250102-000000-ffff.00007 seed=99999 junit/20250102-000000-ffff/00007.xml {run} 100042 7128487960"
        );
    }

    #[test]
    fn makes_tells_whether_a_text_gives_a_template() {
        let v = vars();
        let text = "out/20250101-000000-abcd.00042/{x} 712848796";
        assert!(makes(text, &v, "out/{id}/{{x}} {seed}"));
        assert!(!makes(text, &v, "out/{id}/{x} {seed}"));
        assert!(!makes(text, &v, "out/{id}/{{x}} {seed} "));
        assert!(!makes(text, &v, "out/{id}/{{x}}"));
        assert!(!makes(text, &v, ""));
        assert!(makes("", &v, ""));
        // The same text with another run's values: the same template.
        let other = Vars::new(
            "20250101-000000-abcd.00043",
            "20250101-000000-abcd",
            5151,
            43,
        );
        assert!(makes(
            "out/20250101-000000-abcd.00043/{x} 5151",
            &other,
            "out/{id}/{{x}} {seed}"
        ));
    }

    #[test]
    fn an_index_is_padded_to_five_digits_as_format_pads_it() {
        for index in [0, 7, 42, 9_999, 99_999, 100_000, 1_234_567, usize::MAX] {
            let mut text = "x".to_string();
            push_index(&mut text, index);
            assert_eq!(text, format!("x{index:05}"));
        }
    }

    #[test]
    fn short_seeds_stay_in_the_text() {
        let v = Vars::new("s.00001", "s", 7, 1);
        assert_eq!(make("-n7 s.00001", &v), "-n7 {id}");
    }

    #[test]
    fn malformed_templates_are_refused() {
        for bad in ["{", "}", "{nope}", "a{id", "x}y", "{sess}"] {
            assert_eq!(Compiled::parse(bad), None, "{bad}");
        }
    }

    /// The character-by-character `make` the fast one must equal.
    fn make_by_char(text: &str, vars: &Vars) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        let mut after_digit = false;
        // A number alone: no digit right before or right after it.
        let number = |rest: &str, n: &str, after_digit: bool| {
            !after_digit
                && rest.starts_with(n)
                && !rest[n.len()..].starts_with(|c: char| c.is_ascii_digit())
        };
        while let Some(c) = rest.chars().next() {
            let taken = if !vars.id.is_empty() && rest.starts_with(vars.id) {
                out.push_str("{id}");
                vars.id.len()
            } else if !vars.session.is_empty() && rest.starts_with(vars.session) {
                out.push_str("{session}");
                vars.session.len()
            } else if vars.seed.len() >= MIN_SEED_CHARS && number(rest, &vars.seed, after_digit) {
                out.push_str("{seed}");
                vars.seed.len()
            } else if number(rest, &vars.index, after_digit) {
                out.push_str("{index}");
                vars.index.len()
            } else {
                match c {
                    '{' => out.push_str("{{"),
                    '}' => out.push_str("}}"),
                    c => out.push(c),
                }
                c.len_utf8()
            };
            after_digit = rest[..taken].ends_with(|c: char| c.is_ascii_digit());
            rest = &rest[taken..];
        }
        out
    }

    #[test]
    fn make_equals_trying_every_character() {
        let v = vars();
        for text in [
            "",
            "{}",
            "20250101-000000-abcd",
            "x20250101-000000-abcd.000421",
            "é2025ü{id}712848796 7128487961 00042 000420 100042",
            "2 20 2025 20250101-000000-abcd.00041",
        ] {
            assert_eq!(make(text, &v), make_by_char(text, &v), "{text}");
        }
    }

    proptest! {
        #[test]
        fn expanding_a_template_gives_the_text_back(
            text in "[{}a-z0-9. ]{0,40}",
            seed in any::<u64>(),
            index in 0usize..200_000,
        ) {
            let id = format!("s-1.{index:05}");
            let v = Vars::new(&id, "s-1", seed, index);
            // Plant the values so the placeholders are exercised.
            let text = format!("{text}{id}{text}{seed}{index:05}{text}");
            let t = make(&text, &v);
            prop_assert_eq!(&make_by_char(&text, &v), &t);
            prop_assert_eq!(Compiled::parse(&t).unwrap().expand(&v), text);
        }

        #[test]
        fn make_equals_trying_every_character_on_any_text(
            text in "(\\PC|[{}0-9]|s-1|s-1\\.|00|1234){0,30}",
            seed in 1000u64..1300,
            index in 0usize..3,
        ) {
            let id = format!("s-1.{index:05}");
            let v = Vars::new(&id, "s-1", seed, index);
            let made = make(&text, &v);
            prop_assert_eq!(&made, &make_by_char(&text, &v));
            prop_assert!(makes(&text, &v, &made));
            let longer = format!("{made}x");
            prop_assert!(!makes(&text, &v, &longer));
        }
    }
}
