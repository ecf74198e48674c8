//! CPU stress measured, not assumed: what the stress threads and the
//! subject really got in each run, and the cell applied only when the
//! stressors got their share. The decision is driven through the fake
//! executor's scripted measurements; the measurement itself through real
//! processes, asserting orderings and ratios, never durations.

use serde_json::Value;

use super::fake::{fake, run, script};
use super::{cell, Lab};

/// The stress cell's threads and the CPUs they share, as the report says.
fn threads_and_cpus(c: &Value) -> (u64, u64) {
    let s = &c["cpu"]["stress"];
    (s["threads"].as_u64().unwrap(), s["cpus"].as_u64().unwrap())
}

#[test]
fn stressors_that_got_their_share_leave_the_cell_applied_and_its_row_says_what_they_got() {
    let lab = Lab::new();
    // Stressed, the subject needs its 0.4 s of CPU over 2 s of wall time;
    // at the baseline, 0.25 s over 0.3 s.
    let text = "[[run]]\ncell = \"cpu-stress=2x\"\nstress_share = 0.31\nsubject_cpu = 0.4\nduration = \"2s\"\n\
                [[run]]\ncell = \"baseline\"\nsubject_cpu = 0.25\nduration = \"300ms\"\n";
    let (code, report) = run(&lab, text, &["-n", "3", "-p", "cpu-stress=2x"]);
    assert_eq!(code, 0, "{report}");
    let c = cell(&report, "cpu-stress=2x");
    assert_eq!(
        (c["n"].as_u64(), c["not_applied"].as_u64()),
        (Some(3), Some(0))
    );
    let (threads, cpus) = threads_and_cpus(c);
    assert_eq!(threads, 2 * cpus, "{c}");
    let stress = &c["cpu"]["stress"];
    assert!(
        (stress["share_median"].as_f64().unwrap() - 0.31).abs() < 1e-9,
        "{c}"
    );
    assert_eq!(c["cpu"]["subject_s_median"].as_f64(), Some(0.4));
    assert_eq!(c["cpu"]["subject_share_median"].as_f64(), Some(0.2));
    assert_eq!(
        cell(&report, "baseline")["cpu"]["subject_s_median"].as_f64(),
        Some(0.25)
    );
    // The stressors' part of the run's CPU: 0.31 × threads of 2 s, beside 0.4 s.
    let got = 0.31 * threads as f64 * 2.0;
    let part = stress["part_median"].as_f64().unwrap();
    assert!((part - got / (got + 0.4)).abs() < 1e-9, "{c}");
    assert!(part >= stress["part_needed"].as_f64().unwrap());
    // Every run records what it got.
    for r in super::Lab::runs(&lab)
        .iter()
        .filter(|r| r["cell"] == "cpu-stress=2x")
    {
        assert_eq!(r["outcome"], "pass", "{r}");
        assert_eq!(r["cpu"]["stress"]["threads"].as_u64(), Some(threads), "{r}");
        assert_eq!(r["cpu"]["subject_s"].as_f64(), Some(0.4), "{r}");
    }
    // The table row says it, beside the baseline's CPU time.
    let s = script(&lab, text);
    let out = fake(&lab, &s, &["report"]);
    let table = String::from_utf8_lossy(&out.stdout);
    let row = table
        .lines()
        .find(|l| l.starts_with("cpu-stress=2x"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(
        row.ends_with(&format!(
            "applied; stressors got 31% of a CPU each, {:.0}% of the run's CPU time (median of 3 run(s)); subject 0.40 s CPU per run, on a CPU 20% of its time (baseline 0.25 s, 83%)",
            part * 100.0
        )),
        "{row}"
    );
}

#[test]
fn stressors_that_could_not_run_leave_the_cell_not_applied_with_the_reason_and_exit_3() {
    let lab = Lab::new();
    for (rule, says) in [
        (
            "stress_share = 0.01",
            "of a CPU each over 1.00 s, below 2%: they did not run",
        ),
        (
            "stress_error = \"a stress thread cannot run on CPU 7: Invalid argument\"",
            "cannot run on CPU 7: Invalid argument, so the stress did not reach the child's CPUs",
        ),
        // Beside a subject that keeps a dozen threads busy, the stressors
        // got a sliver of the run's CPU time.
        (
            "stress_share = 0.3\nsubject_cpu = 30.0",
            "the subject's own busy threads swamped them",
        ),
    ] {
        let text = format!("[[run]]\ncell = \"cpu-stress=2x\"\n{rule}\n");
        let (code, report) = run(&lab, &text, &["-n", "3", "-p", "cpu-stress=2x"]);
        assert_eq!(code, 3, "{rule}: {report}");
        let c = cell(&report, "cpu-stress=2x");
        assert_eq!(
            (c["n"].as_u64(), c["not_applied"].as_u64()),
            (Some(0), Some(3)),
            "{c}"
        );
        assert_eq!(c["applied"], false, "{c}");
        assert_eq!(c["not_applied_reason"], Value::Null, "{c}");
        let reason = c["reason"].as_str().unwrap();
        assert!(reason.starts_with("cpu-stress=2x: "), "{reason}");
        assert!(reason.contains(says), "{rule}: {reason}");
        let out = fake(&lab, &script(&lab, &text), &["report"]);
        let table = String::from_utf8_lossy(&out.stdout);
        let row = table
            .lines()
            .find(|l| l.starts_with("cpu-stress=2x"))
            .unwrap();
        assert!(row.contains("NOT APPLIED: cpu-stress=2x: "), "{row}");
        assert_eq!(out.status.code(), Some(3), "{table}");
    }
    // One starved run of three: the other two count, and the row and the
    // exit code say that one was not applied.
    let text = "[[run]]\ncell = \"cpu-stress=2x\"\nreplicate = 1\nstress_share = 0.0\n";
    let (code, report) = run(&lab, text, &["-n", "3", "-p", "cpu-stress=2x"]);
    assert_eq!(code, 3, "{report}");
    let c = cell(&report, "cpu-stress=2x");
    assert_eq!(
        (c["n"].as_u64(), c["not_applied"].as_u64()),
        (Some(2), Some(1)),
        "{c}"
    );
    let why = c["not_applied_reason"].as_str().unwrap();
    assert!(why.contains("did not run"), "{why}");
    assert_eq!(c["cpu"]["stress"]["share_min"].as_f64(), Some(0.0), "{c}");
    let out = fake(&lab, &script(&lab, text), &["report"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("applied in 2 of 3 runs; not applied in 1: cpu-stress=2x: "),
        "{table}"
    );
}

#[test]
fn a_busy_subject_measures_more_cpu_than_an_idle_one_and_stress_threads_never_more_than_a_cpu_each()
{
    let lab = Lab::new();
    let subject = "if [ \"$WORK\" = busy ]; then i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; else sleep 0.2; fi";
    let (code, report) = lab.run_json(&[
        "-n",
        "3",
        "--no-baseline",
        "-p",
        "env=WORK=busy",
        "-p",
        "env=WORK=idle",
        "-p",
        "cpu-stress=1",
        "--",
        "sh",
        "-c",
        subject,
    ]);
    assert!(code == 0 || code == 1, "{report}");
    let runs = lab.runs();
    let subject_s = |cell: &str| -> Vec<f64> {
        runs.iter()
            .filter(|r| r["cell"] == cell)
            .map(|r| {
                r["cpu"]["subject_s"]
                    .as_f64()
                    .unwrap_or_else(|| panic!("{r}"))
            })
            .collect()
    };
    let busy = subject_s("env=WORK=busy");
    let idle = subject_s("env=WORK=idle");
    // Fixed work against none: every busy run used more CPU than any idle
    // one, however loaded the host (runs are measured one at a time).
    let least_busy = busy.iter().copied().fold(f64::INFINITY, f64::min);
    let most_idle = idle.iter().copied().fold(0.0, f64::max);
    assert!(least_busy > most_idle, "busy {busy:?}, idle {idle:?}");
    // The stressed runs (of the idle subject: `sleep`, as `WORK` is unset):
    // a thread's CPU clock never runs faster than the wall clock.
    for r in runs.iter().filter(|r| r["cell"] == "cpu-stress=1") {
        let cpu = &r["cpu"];
        let share = cpu["stress"]["cpu_s"].as_f64().unwrap() / cpu["window_s"].as_f64().unwrap();
        assert!(share > 0.0 && share <= 1.0 + 1e-6, "{r}");
    }
    let c = cell(&report, "cpu-stress=1");
    assert_eq!(threads_and_cpus(c).0, 1, "{c}");
}
