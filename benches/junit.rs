//! JUnit reader throughput: a generated report of 100,000 test cases (2%
//! failures with a multi-line message and a 1-2 KB body, 5% skipped,
//! properties, system-out), parsed by `flakelab::results::junit::parse_file` and by
//! Python 3's `xml.etree.ElementTree.parse` in the same run.
//!
//! Run with `cargo bench --bench junit`. Targets (#15): at least 20x
//! Python and 500 MB/s in a release build; the book's performance page has
//! the figures measured and the instruction counts beside them.
//!
//! `cargo bench --bench junit -- parse N` parses the report N times and
//! nothing else (no Python), for profilers (`perf`, `valgrind`).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

const CASES: usize = 100_000;
const PER_SUITE: usize = 250;
const RUNS: usize = 5;

/// A small deterministic generator (xorshift64*), so every run parses the
/// same bytes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn generate(out: &mut impl std::io::Write) -> std::io::Result<(usize, usize, usize)> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut failed, mut skipped) = (0, 0);
    let mut s = String::with_capacity(1 << 20);
    s.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"bench\">\n");
    for suite in 0..CASES / PER_SUITE {
        let class = format!("com.example.module{}.Service{}Test", suite % 17, suite);
        let _ = write!(
            s,
            "  <testsuite name=\"{class}\" tests=\"{PER_SUITE}\" failures=\"0\" errors=\"0\" \
             skipped=\"0\" time=\"12.5\" timestamp=\"2024-05-01T12:00:00\" hostname=\"ci-runner-7\">\n    \
             <properties>\n      <property name=\"java.version\" value=\"17.0.10\"/>\n      \
             <property name=\"os.name\" value=\"Linux\"/>\n      \
             <property name=\"user.dir\" value=\"/home/ci/work/project\"/>\n    </properties>\n"
        );
        for case in 0..PER_SUITE {
            let roll = rng.below(100);
            let _ = writeln!(
                s,
                "    <testcase classname=\"{class}\" name=\"test_case_{case}[param-{}]\" time=\"0.{:03}\" \
                 file=\"src/test/java/com/example/Service{suite}Test.java\" line=\"{}\">",
                case % 7,
                rng.below(1000),
                10 + case * 12
            );
            if roll < 2 {
                failed += 1;
                let _ = writeln!(
                    s,
                    "      <failure message=\"expected: &lt;{}&gt; but was: &lt;{}&gt;&#10;\
                     at line {case}&#10;see the log\" type=\"org.opentest4j.AssertionFailedError\">\
                     org.opentest4j.AssertionFailedError: expected: &lt;1&gt; but was: &lt;2&gt;",
                    rng.below(10),
                    rng.below(10)
                );
                let frames = 15 + rng.below(20);
                for frame in 0..frames {
                    let _ = writeln!(
                        s,
                        "\tat {class}.helper{frame}({}Test.java:{})",
                        class.rsplit('.').next().unwrap_or("X"),
                        frame * 7 + 3
                    );
                }
                s.push_str("      </failure>\n");
            } else if roll < 7 {
                skipped += 1;
                s.push_str("      <skipped message=\"disabled on this platform\"/>\n");
            }
            let _ = write!(
                s,
                "      <properties>\n        <property name=\"attempt\" value=\"1\"/>\n      </properties>\n      \
                 <system-out><![CDATA[[INFO] starting case {case}\n[INFO] fixture ready in {}ms\n]]></system-out>\n    \
                 </testcase>\n",
                rng.below(90)
            );
        }
        s.push_str("    <system-err>log4j: no appenders configured</system-err>\n  </testsuite>\n");
        out.write_all(s.as_bytes())?;
        s.clear();
    }
    s.push_str("</testsuites>\n");
    out.write_all(s.as_bytes())?;
    Ok((CASES, failed, skipped))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

const PYTHON: &str = r#"
import sys, time, xml.etree.ElementTree as ET
runs = []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    tree = ET.parse(sys.argv[1])
    n = sum(1 for _ in tree.iter('testcase'))
    runs.append(time.perf_counter() - t)
runs.sort()
print(n, runs[len(runs) // 2])
"#;

/// (cases counted, median seconds) of Python's ElementTree, if python3 runs.
fn python(path: &Path) -> Option<(usize, f64)> {
    let out = Command::new("python3")
        .arg("-c")
        .arg(PYTHON)
        .arg(path)
        .arg(RUNS.to_string())
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!("python3 failed: {}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut parts = text.split_whitespace();
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

fn main() {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    let (cases, failed, skipped) = {
        let mut w = std::io::BufWriter::new(file.as_file_mut());
        let counts = generate(&mut w).expect("write report");
        w.flush().expect("flush report");
        counts
    };
    let path = file.path().to_path_buf();
    let size = std::fs::metadata(&path).expect("size").len() as f64;
    let mb = size / 1e6;
    println!("report: {cases} cases ({failed} failed, {skipped} skipped), {mb:.1} MB");

    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    if args.next().as_deref() == Some("parse") {
        let n: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(1);
        let t = Instant::now();
        for _ in 0..n {
            let parsed = flakelab::results::junit::parse_file(&path).expect("parse");
            assert_eq!(parsed.cases.len(), cases);
        }
        let each = t.elapsed().as_secs_f64() / n as f64;
        println!(
            "flakelab::results::junit::parse_file   mean of {n}: {:8.1} ms  {:7.1} MB/s",
            each * 1e3,
            mb / each
        );
        return;
    }

    // One warm-up run (page cache), then RUNS timed runs.
    let parsed = flakelab::results::junit::parse_file(&path).expect("parse");
    assert_eq!(parsed.cases.len(), cases);
    let ours = median(
        (0..RUNS)
            .map(|_| {
                let t = Instant::now();
                let parsed = flakelab::results::junit::parse_file(&path).expect("parse");
                let elapsed = t.elapsed().as_secs_f64();
                assert_eq!(parsed.cases.len(), cases);
                elapsed
            })
            .collect(),
    );
    println!(
        "flakelab::results::junit::parse_file   median of {RUNS}: {:8.1} ms  {:7.1} MB/s",
        ours * 1e3,
        mb / ours
    );
    match python(&path) {
        Some((counted, py)) => {
            assert_eq!(counted, cases, "python counted {counted} testcases");
            println!(
                "python3 ElementTree.parse     median of {RUNS}: {:8.1} ms  {:7.1} MB/s",
                py * 1e3,
                mb / py
            );
            println!("ratio: {:.1}x python", py / ours);
        }
        None => println!("python3 not available: no comparison"),
    }
}
