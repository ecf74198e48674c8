//! Progress off a terminal and color: the real binary with stderr and
//! stdout piped. Line shapes and counts only; no assertion on a time.

use std::time::Instant;

use crate::Lab;

/// The progress lines of a stderr: `flakelab: D/T runs (P%) · … · …`.
fn progress_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("flakelab: ") && l.contains(" runs ("))
        .collect()
}

#[test]
fn a_piped_session_writes_a_progress_line_per_tenth_not_per_run() {
    let lab = Lab::new();
    let started = Instant::now();
    // 2 cells × 20 runs, 2 at a time; the env cell fails every run.
    let out = lab.run(&[
        "run",
        "-n",
        "20",
        "-j",
        "2",
        "-p",
        "env=FAIL=1",
        "--",
        "sh",
        "-c",
        "[ -z \"$FAIL\" ]",
    ]);
    let minutes = started.elapsed().as_secs() / 60;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let lines = progress_lines(&stderr);
    // One per 10% step, and one a minute if the machine is that slow.
    assert!(
        (1..=10 + minutes as usize).contains(&lines.len()),
        "{} lines: {stderr}",
        lines.len()
    );
    let shape = regex::Regex::new(
        r"^flakelab: (\d+)/40 runs \((\d+)%\) · (no failures|failed: env=FAIL=1 (\d+)/(\d+)) · (ETA (unknown|<1s|\d+s|\d+m \d\ds|\d+h \d\dm)|done in .+)$",
    )
    .unwrap();
    let mut last = 0;
    for line in &lines {
        let c = shape.captures(line).unwrap_or_else(|| panic!("{line:?}"));
        let done: u64 = c[1].parse().unwrap();
        assert!(done > last, "{stderr}");
        assert_eq!(c[2].parse::<u64>().unwrap(), done * 100 / 40, "{line}");
        // Every run of the env cell failed: its failures equal its runs done.
        if let (Some(k), Some(n)) = (c.get(4), c.get(5)) {
            assert_eq!(k.as_str(), n.as_str(), "{line}");
        }
        last = done;
    }
    assert_eq!(
        lines.last().unwrap().split(" · done in ").next(),
        Some("flakelab: 40/40 runs (100%) · failed: env=FAIL=1 20/20"),
        "{stderr}"
    );
    // The progress went to stderr only: stdout is the report.
    assert!(!String::from_utf8_lossy(&out.stdout).contains("runs ("));
}

#[test]
fn color_follows_the_flag_then_no_color_then_clicolor_force() {
    let lab = Lab::new();
    let out = lab.run(&[
        "run",
        "-n",
        "6",
        "-p",
        "env=FAIL=1",
        "--",
        "sh",
        "-c",
        "[ -z \"$FAIL\" ]",
    ]);
    let plain = out.stdout;
    assert!(String::from_utf8_lossy(&plain).contains("differs"));
    assert!(!plain.contains(&0x1b), "piped output is plain");
    let report = |args: &[&str], env: &[(&str, &str)]| {
        let mut c = lab.cmd();
        c.arg("report").args(args);
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let strip = |bytes: &[u8]| {
        let ansi = regex::Regex::new(r"\x1b\[[0-9;]*m").unwrap();
        ansi.replace_all(&String::from_utf8_lossy(bytes), "")
            .into_owned()
    };
    let colored = report(&["--color", "always"], &[("NO_COLOR", "1")]);
    let text = String::from_utf8_lossy(&colored);
    assert!(text.contains("\x1b[1;31mdiffers\x1b[0m (p="), "{text}");
    assert_eq!(strip(&colored).as_bytes(), plain.as_slice());
    let forced = report(&[], &[("CLICOLOR_FORCE", "1")]);
    assert_eq!(forced, colored);
    for (args, env) in [
        (
            &["--color", "auto"][..],
            &[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")][..],
        ),
        (&["--color", "never"][..], &[("CLICOLOR_FORCE", "1")][..]),
        (&["--color=always", "--format", "json"][..], &[][..]),
    ] {
        assert!(!report(args, env).contains(&0x1b), "{args:?} {env:?}");
    }
    let plain_again = report(&["--color", "never"], &[]);
    assert_eq!(plain_again, plain);
    // clap's own help follows --color too.
    let help = |when: &str| lab.run(&["--color", when, "run", "--help"]).stdout;
    assert!(help("always").contains(&0x1b));
    assert!(!help("never").contains(&0x1b));
}

#[test]
fn a_progress_line_names_a_failing_cell_without_the_value_it_sets() {
    let lab = Lab::new();
    let secret = "tok-progress-5521";
    let cell = format!("env=API_TOKEN={secret}");
    let out = lab.run(&[
        "run",
        "-n",
        "2",
        "-p",
        &cell,
        "--",
        "sh",
        "-c",
        "[ -z \"$API_TOKEN\" ]",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = *progress_lines(&stderr).last().expect("a progress line");
    assert!(
        last.starts_with(
            "flakelab: 4/4 runs (100%) · failed: env=API_TOKEN=<redacted> 2/2 · done in "
        ),
        "{stderr}"
    );
    assert!(!stderr.contains(secret), "{stderr}");
}

#[test]
fn a_screen_confirmation_shows_one_progress_across_its_blocks() {
    let lab = Lab::new();
    let suite = |zone: &str| {
        format!(
            "<testsuite name='s' tests='2'><testcase classname='t' name='test_zone'>{zone}</testcase>\
             <testcase classname='t' name='test_ok'/></testsuite>"
        )
    };
    let script = super::fake::script(
        &lab,
        &format!(
            "[[run]]\ncell = \"tz=UTC\"\nexit = 1\njunit = \"{}\"\n[[run]]\njunit = \"{}\"\n",
            suite("<failure message='offset'/>"),
            suite("")
        ),
    );
    let out = super::fake::fake(
        &lab,
        &script,
        &[
            "run",
            "--design",
            "screen",
            "--seed",
            "3",
            "-p",
            "tz=UTC",
            "--",
            "subject",
            "--junit={junit}",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // Each session's display: its lines from a count of 1 on (or a first
    // tenth) to its end, one total, a count that only grows.
    let shape = regex::Regex::new(r"^flakelab: (?:stopped at )?(\d+)/(\d+) runs").unwrap();
    let mut displays: Vec<Vec<(u64, u64)>> = Vec::new();
    for line in progress_lines(&stderr) {
        let c = shape.captures(line).unwrap_or_else(|| panic!("{line:?}"));
        let (done, total): (u64, u64) = (c[1].parse().unwrap(), c[2].parse().unwrap());
        match displays.last_mut() {
            Some(d) if d.last().is_some_and(|&(k, t)| t == total && k < done) => {
                d.push((done, total))
            }
            _ => displays.push(vec![(done, total)]),
        }
    }
    assert!(
        displays.len() >= 2,
        "a screen, then a confirmation: {stderr}"
    );
    for d in &displays {
        assert!(d.len() <= 11, "{stderr}");
    }
    // The confirmation runs block after block; its display spans them all,
    // and says where it stopped when it decided before its last block.
    assert!(
        displays.iter().any(|d| d[0].1 > 2 && d.len() > 2),
        "{stderr}"
    );
    for d in displays.iter().filter(|d| d[0].1 > 2) {
        let &(done, total) = d.last().unwrap();
        assert!(
            done == total || stderr.contains(&format!("flakelab: stopped at {done}/{total} runs")),
            "{stderr}"
        );
    }
    let stopped = regex::Regex::new(r"^flakelab: stopped at (\d+)/(\d+) runs").unwrap();
    for line in progress_lines(&stderr) {
        if let Some(c) = stopped.captures(line) {
            assert!(
                c[1].parse::<u64>().unwrap() < c[2].parse().unwrap(),
                "{line}"
            );
        }
    }
}
