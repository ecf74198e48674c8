//! The hand-written run-line reader against serde_json: on every line the
//! writer can produce the two agree (and the fast path takes every such
//! line without an escape); on lines it does not fully understand it
//! declines rather than reads something else.

use std::borrow::Cow;
use std::path::PathBuf;

use proptest::prelude::*;

use super::compact::Writer;
use super::compact_tests::arb_run;
use super::fast::run_line;
use super::lines::{RunLine, TestLine};
use crate::record::{
    Bypass, BypassWhy, Outcome, ProcessCheck, ProcessEnd, ProcessRole, RunCpu, RunTopology,
    StressCpu, TestOutcome,
};

/// What serde_json reads, spelled out (`Debug` tells `-0.0` from `0.0`
/// and prints the shortest round-trip form of a float: equal text, equal
/// bits).
fn by_serde(bytes: &[u8]) -> Option<String> {
    serde_json::from_slice::<RunLine>(bytes)
        .ok()
        .map(|l| format!("{l:?}"))
}

fn fast(bytes: &[u8]) -> Option<String> {
    run_line(bytes).map(|l| format!("{l:?}"))
}

/// Strings as they come: plain, any Unicode, and the characters JSON
/// escapes.
fn arb_str() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-zA-Z0-9 :/._<>-]{0,12}",
        2 => any::<String>().prop_map(|s| s.chars().take(8).collect()),
        1 => "[\"\\\\\n\t\u{0}\u{1f}\u{7f}é€\u{2028}😀a]{0,6}",
    ]
}

fn arb_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>().prop_filter("finite", |f| f.is_finite()),
        Just(0.0),
        Just(-0.0),
        Just(1e16),
        Just(5e-324),
        (0u32..100_000).prop_map(|n| f64::from(n) / 1000.0),
    ]
}

fn arb_outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        Just(Outcome::Pass),
        Just(Outcome::Fail),
        Just(Outcome::Timeout),
        Just(Outcome::Error),
        Just(Outcome::NotApplied),
    ]
}

fn arb_end() -> impl Strategy<Value = ProcessEnd> {
    prop_oneof![
        any::<i32>().prop_map(|code| ProcessEnd::Exited { code }),
        any::<i32>().prop_map(|signal| ProcessEnd::Signaled { signal }),
        any::<i32>().prop_map(|signal| ProcessEnd::TimedOut { signal }),
        Just(ProcessEnd::Interrupted),
        arb_str().prop_map(|message| ProcessEnd::SpawnFailed { message }),
        Just(ProcessEnd::NotStarted),
    ]
}

fn arb_cpu() -> impl Strategy<Value = RunCpu> {
    (
        arb_f64(),
        proptest::option::of(arb_f64()),
        proptest::option::of((
            any::<usize>(),
            any::<usize>(),
            arb_f64(),
            proptest::option::of(arb_str()),
        )),
    )
        .prop_map(|(window_s, subject_s, stress)| RunCpu {
            window_s,
            subject_s,
            stress: stress.map(|(threads, cpus, cpu_s, error)| StressCpu {
                threads,
                cpus,
                cpu_s,
                error,
            }),
        })
}

fn arb_test_line() -> impl Strategy<Value = TestLine> {
    (
        any::<u32>(),
        prop_oneof![
            Just(TestOutcome::Pass),
            Just(TestOutcome::Fail),
            Just(TestOutcome::Error),
            Just(TestOutcome::Skip)
        ],
        any::<bool>(),
        prop_oneof![Just(0u32), any::<u32>()],
        proptest::option::of(arb_str()),
        proptest::option::of(arb_str()),
        proptest::option::of(any::<bool>()),
        proptest::option::of(any::<u32>()),
    )
        .prop_map(|(k, o, rr, re, sig, msg, sm, sp)| TestLine {
            k,
            o,
            rr,
            re,
            sig,
            msg,
            sm,
            sp,
        })
}

fn arb_rare() -> impl Strategy<Value = (Option<RunTopology>, Option<ProcessCheck>)> {
    (
        proptest::option::of(
            (
                any::<usize>(),
                any::<u32>(),
                proptest::option::of(arb_str()),
            )
                .prop_map(|(group, copy, wc)| RunTopology {
                    group,
                    copy,
                    working_copy: wc.map(PathBuf::from),
                }),
        ),
        proptest::option::of(
            (
                proptest::collection::vec(arb_str(), 0..3),
                any::<u32>(),
                proptest::collection::vec(arb_str(), 0..2),
                proptest::option::of((arb_str(), any::<i32>())),
            )
                .prop_map(|(checked, seen, tested_by, bypass)| ProcessCheck {
                    checked,
                    seen,
                    tested_by,
                    bypassed: bypass
                        .into_iter()
                        .map(|(exe, pid)| Bypass {
                            perturbation: "faketime=+1d".into(),
                            exe,
                            pid,
                            role: ProcessRole::Test,
                            why: BypassWhy::Static,
                            processes: 1,
                        })
                        .collect(),
                }),
        ),
    )
}

type Head = (
    String,
    usize,
    Option<String>,
    u32,
    u32,
    u64,
    String,
    f64,
    Outcome,
);

/// Any run line, serialized as the writer serializes it (the writer
/// itself always sets either `x` or `end` with `codes`; the reading does
/// not depend on it).
fn arb_line() -> impl Strategy<Value = String> {
    let head = (
        arb_str(),
        any::<usize>(),
        proptest::option::of(arb_str()),
        any::<u32>(),
        prop_oneof![Just(0u32), any::<u32>()],
        any::<u64>(),
        arb_str(),
        arb_f64(),
        arb_outcome(),
    );
    let ends = (
        proptest::option::of(any::<i32>()),
        proptest::option::of(arb_end()),
        proptest::option::of((
            proptest::option::of(any::<i32>()),
            proptest::option::of(any::<i32>()),
        )),
        proptest::option::of(any::<bool>()),
        proptest::option::of(arb_str()),
        prop_oneof![Just(0u64), any::<u64>()],
        prop_oneof![Just(0u64), any::<u64>()],
        proptest::option::of(arb_f64()),
        proptest::option::of(arb_cpu()),
    );
    let tail = (
        prop_oneof![Just(0u32), any::<u32>()],
        proptest::collection::vec(arb_str(), 0..3),
        proptest::option::of(arb_str()),
        proptest::option::of(arb_str()),
        arb_rare(),
        prop_oneof![Just(0u32), any::<u32>()],
        proptest::collection::vec(any::<u32>(), 0..5),
        proptest::collection::vec(arb_test_line(), 0..4),
        proptest::option::of(any::<u32>()),
    );
    (head, ends, tail).prop_map(|(head, ends, tail)| {
        let (w, i, id, c, r, s, at, d, o): Head = head;
        let (x, end, codes, sm, why, ob, od, busy, cpu) = ends;
        let (strag, warn, tm, fs, (topo, procs), n, ab, t, sp) = tail;
        let line = RunLine {
            schema: Cow::Borrowed(crate::record::RUN_SCHEMA),
            w: Cow::Owned(w),
            i,
            id: id.map(Cow::Owned),
            c,
            r,
            s,
            at: Cow::Owned(at),
            d,
            o,
            x,
            end,
            codes,
            sm,
            why,
            ob,
            od,
            busy,
            cpu: cpu.map(Box::new),
            strag,
            warn,
            tm,
            fs,
            topo: topo.map(Box::new),
            procs: procs.map(Box::new),
            n,
            ab,
            t,
            sp,
        };
        serde_json::to_string(&line).expect("a run line serializes")
    })
}

/// One change to a line: a byte removed, replaced or inserted, from the
/// bytes that matter to JSON.
fn arb_edit() -> impl Strategy<Value = (usize, u8, u8)> {
    (
        any::<usize>(),
        0u8..3,
        prop::sample::select(b"\"\\{}[],:-+.0159eEntfl \x01\xc3\xa9".to_vec()),
    )
}

fn edited(line: &str, edits: &[(usize, u8, u8)]) -> Vec<u8> {
    let mut bytes = line.as_bytes().to_vec();
    for &(at, how, b) in edits {
        let at = at % (bytes.len() + 1);
        match how {
            0 if at < bytes.len() => {
                bytes.remove(at);
            }
            1 if at < bytes.len() => bytes[at] = b,
            _ => bytes.insert(at, b),
        }
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Every line the writer's serialization makes reads as serde_json
    /// reads it, and one with no escape is never left to serde_json.
    #[test]
    fn fast_path_agrees_with_serde(line in arb_line()) {
        let expected = by_serde(line.as_bytes());
        prop_assert!(expected.is_some(), "serde reads its own line: {}", line);
        let got = fast(line.as_bytes());
        if !line.contains('\\') {
            prop_assert!(got.is_some(), "declined a plain line: {}", line);
        }
        if let Some(got) = got {
            prop_assert_eq!(Some(got), expected);
        }
    }

    /// A line changed anywhere is either declined or read as serde_json
    /// reads it: never read as something else, never read when serde_json
    /// refuses it.
    #[test]
    fn fast_path_declines_what_it_does_not_understand(
        line in arb_line(),
        edits in proptest::collection::vec(arb_edit(), 1..4),
    ) {
        let bytes = edited(&line, &edits);
        if let Some(got) = fast(&bytes) {
            prop_assert_eq!(
                Some(got),
                by_serde(&bytes),
                "{}",
                String::from_utf8_lossy(&bytes)
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// The lines the writer writes for records (tests, ids, escapes in the
    /// strings it keeps) read as serde_json reads them.
    #[test]
    fn writer_lines_read_as_serde_reads_them(
        r in arb_run(),
        texts in proptest::collection::vec(arb_str(), 5),
    ) {
        let mut r = r;
        r.started_at = texts[0].clone();
        r.failure_signature = Some(texts[1].clone());
        r.reason = Some(texts[2].clone());
        r.warnings = vec![texts[3].clone()];
        if let Some(t) = r.tests.first_mut() {
            t.outcome = TestOutcome::Fail;
            t.message = Some(texts[4].clone());
        }
        let w = Writer::new("0123abcd".into(), r.session.clone());
        let text = w.encode(&r).expect("encodes").text;
        let text = String::from_utf8(text).expect("utf-8");
        let line = text.lines().last().expect("a run line");
        prop_assert!(line.starts_with("{\"schema\":\"flakelab.run/2\",\"w\":"), "{}", line);
        let got = fast(line.as_bytes());
        if !line.contains('\\') {
            prop_assert!(got.is_some(), "declined a plain line: {}", line);
        }
        if let Some(got) = got {
            prop_assert_eq!(Some(got), by_serde(line.as_bytes()));
        }
    }
}

const PLAIN: &str = r#"{"schema":"flakelab.run/2","w":"a1b11c42","i":1,"c":1,"s":892374487,"at":"2026-12-01T18:39:34.925Z","d":0.042251748,"o":"fail","x":1,"ob":6,"cpu":{"window_s":0.042449359,"subject_s":0.004425},"fs":"AssertionError: <n> != <n>","n":4,"ab":[3,4],"t":[{"k":1,"o":"fail","sig":"AssertionError: <n> != <n>","msg":"AssertionError: 3 != 4"}]}"#;

#[test]
fn the_documented_line_is_read_by_hand() {
    let line = run_line(PLAIN.as_bytes()).expect("read by hand");
    assert_eq!((line.i, line.c, line.s, line.x), (1, 1, 892374487, Some(1)));
    assert_eq!(line.at, "2026-12-01T18:39:34.925Z");
    assert!(matches!(line.at, Cow::Borrowed(_)));
    assert_eq!(line.d.to_bits(), 0.042251748f64.to_bits());
    assert_eq!(line.o, Outcome::Fail);
    assert_eq!(line.cpu.as_ref().and_then(|c| c.subject_s), Some(0.004425));
    assert_eq!((line.n, line.ab.as_slice()), (4, &[3, 4][..]));
    assert_eq!(line.t[0].msg.as_deref(), Some("AssertionError: 3 != 4"));
    assert_eq!(fast(PLAIN.as_bytes()), by_serde(PLAIN.as_bytes()));
}

#[test]
fn lines_serde_reads_but_the_writer_does_not_write_are_declined() {
    let cases = [
        // An escape in a string.
        PLAIN.replace("<n> != <n>\",\"n\"", "<n> \\u0021= <n>\",\"n\""),
        // Whitespace.
        PLAIN.replace(r#""i":1,"#, r#""i": 1,"#),
        PLAIN.replace('}', " }"),
        // Fields in another order, a field twice, an unknown field.
        PLAIN.replace(r#""i":1,"c":1,"#, r#""c":1,"i":1,"#),
        PLAIN.replace(r#""ob":6,"#, r#""ob":6,"zz":[1,{"a":"}"}],"#),
        PLAIN.replace(r#""k":1,"o":"fail","#, r#""k":1,"o":"fail","new":1,"#),
        // A null where the writer leaves the field out.
        PLAIN.replace(r#""ob":6,"#, r#""ob":6,"why":null,"#),
        // Numbers in forms the writer does not use for the field.
        PLAIN.replace(r#""d":0.042251748"#, r#""d":4.2251748e-0002"#),
        PLAIN.replace(
            r#""d":0.042251748"#,
            r#""d":0.0422517480000000000000000000000000"#,
        ),
    ];
    for line in &cases {
        assert_ne!(line, PLAIN);
        assert!(by_serde(line.as_bytes()).is_some(), "serde reads {line}");
        assert_eq!(fast(line.as_bytes()), None, "{line}");
    }
}

#[test]
fn lines_serde_refuses_are_declined() {
    let cases = [
        PLAIN.replace(r#""i":1,"c":1,"#, r#""i":1,"i":2,"c":1,"#),
        PLAIN.replace(r#""o":"fail""#, r#""o":"failed""#),
        // A control character JSON wants escaped.
        PLAIN.replace("18:39:34", "18:39\u{1}34"),
        PLAIN.replace(r#""c":1,"#, r#""c":-1,"#),
        PLAIN.replace(r#""x":1"#, r#""x":-0"#),
        PLAIN.replace(r#""i":1,"#, r#""i":1.0,"#),
        PLAIN.replace(r#""c":1,"#, r#""c":4294967296,"#),
        PLAIN.replace(r#""d":0.042251748"#, r#""d":1e400"#),
        PLAIN.replace(r#""d":0.042251748"#, r#""d":01.5"#),
        PLAIN.replace(r#""s":892374487,"#, ""),
        format!("{PLAIN}x"),
        PLAIN[..PLAIN.len() - 1].to_string(),
    ];
    for line in &cases {
        assert!(by_serde(line.as_bytes()).is_none(), "serde refuses {line}");
        assert_eq!(fast(line.as_bytes()), None, "{line}");
    }
}
