//! The fake executor: a TOML script that says how each run ends, what it
//! prints and which JUnit report it writes, and what each probe finds.
//! Driven through the real binary by the hidden `--fake-executor SCRIPT`
//! flag, it makes every decision flakelab takes after a run (k of N, exit
//! codes, `--confirm`, the screen design, the ladder, verify, evidence)
//! testable without a runner and without timing.
//!
//! ```toml
//! version = "pytest 9.2.0"        # what a recipe's version command prints
//!
//! [[probe]]                       # probes not listed are taken as applied
//! cell = "netns"                  # a cell name, or `perturbation = "netns"`
//! applied = false
//! reason = "netns: the kernel refused a new namespace"
//!
//! [[run]]                         # the first rule that matches a run answers it
//! cell = "tz=Pacific/Kiritimati"  # optional: the run's cell
//! replicate = 0                   # optional: its replicate
//! seed = 7                        # optional: its seed
//! argv = "::test_b"               # optional: text in its joined argv
//! grouped = true                  # optional: one process of a group (ladder rungs 3, 5)
//! times = 2                       # optional: answers at most 2 runs, then falls through
//! exit = 1                        # or: signal = 9, timeout = true, spawn_error = "…"
//! output = "AssertionError: …"    # the run's log; {seed} {run} {cell} expand
//! junit = "<testsuite>…"          # written to the run's report path; same placeholders
//! duration = "1.5s"               # recorded, never waited for
//! cpu_busy = 0.97                 # the recorded host CPU share
//! subject_cpu = 0.4               # the run's processes' CPU seconds
//! stress_share = 0.02             # each stress thread's share of a CPU
//! stress_error = "…"              # why a stress thread could not be placed
//! interrupt = true                # after this run, flakelab gets SIGINT (as Ctrl-C)
//! processes = [                   # what inspecting its processes found (cells that
//!   { exe = "/bin/sh" },          #   watch them, e.g. faketime; ignored elsewhere):
//!   { exe = "/t/year", parent = 0, static = true },   # each program a process ran,
//!   { exe = "/usr/bin/docker", parent = 1, go = true } # `parent` an index into the list;
//! ]                               # also secure = true, env = { FAKETIME = "+0" },
//!                                 # env_unset = ["LD_PRELOAD"]
//! ```
//!
//! A run no rule matches exits 0 and prints nothing.
//!
//! The measurement window is the run's `duration`, 1 s when none is given.
//! A run with stress beside it whose rule gives no `stress_share` got the
//! whole share its threads can take (`min(1, CPUs / threads)`); a run
//! without stress whose rule gives no `subject_cpu` was not measured.
//!
//! A watched run whose rule
//! lists no processes shows one: the launch's own program, as launched.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde::Deserialize;
use tokio::sync::watch;

use super::inspect::{SeenProcess, Watch};
use super::job::{Job, Measured};
use super::result::{ChildResult, Stop};
use super::stress::StressPlan;
use crate::record::{ProcessEnd, RunCpu, StressCpu};

/// A loaded script and how many runs each rule has answered.
#[derive(Debug)]
pub struct Fake {
    script: Script,
    used: Mutex<Vec<u32>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Script {
    #[serde(default)]
    version: Option<String>,
    /// Whether a recipe's `[per_test] plugin_probe` finds its plugin.
    #[serde(default = "yes")]
    plugins: bool,
    #[serde(default)]
    probe: Vec<ProbeRule>,
    #[serde(default)]
    run: Vec<RunRule>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProbeRule {
    #[serde(default)]
    cell: Option<String>,
    #[serde(default)]
    perturbation: Option<String>,
    #[serde(default = "yes")]
    applied: bool,
    #[serde(default)]
    reason: Option<String>,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunRule {
    #[serde(default)]
    cell: Option<String>,
    #[serde(default)]
    replicate: Option<u32>,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    argv: Option<String>,
    #[serde(default)]
    grouped: Option<bool>,
    #[serde(default)]
    times: Option<u32>,
    #[serde(default)]
    exit: Option<i32>,
    #[serde(default)]
    signal: Option<i32>,
    #[serde(default)]
    timeout: bool,
    #[serde(default)]
    spawn_error: Option<String>,
    #[serde(default)]
    output: Option<String>,
    #[serde(default)]
    junit: Option<String>,
    #[serde(default)]
    duration: Option<String>,
    #[serde(default)]
    cpu_busy: Option<f64>,
    #[serde(default)]
    subject_cpu: Option<f64>,
    #[serde(default)]
    stress_share: Option<f64>,
    #[serde(default)]
    stress_error: Option<String>,
    #[serde(default)]
    interrupt: bool,
    #[serde(default)]
    processes: Option<Vec<FakeProcess>>,
}

/// One program a scripted run's process ran.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FakeProcess {
    exe: String,
    #[serde(default)]
    parent: Option<usize>,
    #[serde(default, rename = "static")]
    static_linked: bool,
    #[serde(default)]
    go: bool,
    #[serde(default)]
    secure: bool,
    /// Watched variables set otherwise than the launch sets them.
    #[serde(default)]
    env: BTreeMap<String, String>,
    /// Watched variables the process does not have.
    #[serde(default)]
    env_unset: Vec<String>,
}

impl FakeProcess {
    fn seen(&self, index: usize, job: &Job, watch: &Watch) -> SeenProcess {
        let mut env: BTreeMap<String, String> = watch
            .env
            .iter()
            .filter_map(|n| Some((n.clone(), job.launch.env_set.get(n)?.clone())))
            .collect();
        for (k, v) in &self.env {
            if watch.env.contains(k) {
                env.insert(k.clone(), v.clone());
            }
        }
        for k in &self.env_unset {
            env.remove(k);
        }
        SeenProcess {
            pid: 1000 + index as i32,
            parent: self.parent,
            exe: Some(self.exe.clone()),
            name: Path::new(&self.exe)
                .file_name()
                .map(|n| n.to_string_lossy().chars().take(15).collect())
                .unwrap_or_default(),
            static_linked: Some(self.static_linked),
            go: Some(self.go),
            secure: Some(self.secure),
            env: Some(env),
        }
    }
}

impl RunRule {
    fn matches(&self, job: &Job) -> bool {
        let argv = job.launch.argv.join(" ");
        self.cell
            .as_ref()
            .is_none_or(|c| c == "*" || *c == job.cell)
            && self.replicate.is_none_or(|r| r == job.replicate)
            && self.seed.is_none_or(|s| s == job.seed)
            && self.argv.as_ref().is_none_or(|a| argv.contains(a.as_str()))
            && self.grouped.is_none_or(|g| g == job.group.is_some())
    }

    fn end(&self) -> ProcessEnd {
        if let Some(message) = &self.spawn_error {
            ProcessEnd::SpawnFailed {
                message: message.clone(),
            }
        } else if self.timeout {
            ProcessEnd::TimedOut { signal: 15 }
        } else if let Some(signal) = self.signal {
            ProcessEnd::Signaled { signal }
        } else {
            ProcessEnd::Exited {
                code: self.exit.unwrap_or(0),
            }
        }
    }
}

impl Fake {
    /// Reads and checks a script; `Err` names the file and the problem.
    pub fn load(path: &Path) -> Result<Fake, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("fake executor script {}: {e}", path.display()))?;
        Fake::parse(&text).map_err(|e| format!("fake executor script {}: {e}", path.display()))
    }

    /// Parses a script's text.
    pub fn parse(text: &str) -> Result<Fake, String> {
        let script: Script = toml::from_str(text).map_err(|e| e.to_string())?;
        for (i, rule) in script.run.iter().enumerate() {
            if let Some(d) = &rule.duration {
                humantime::parse_duration(d)
                    .map_err(|e| format!("[[run]] {}: duration `{d}`: {e}", i + 1))?;
            }
            for (j, p) in rule.processes.iter().flatten().enumerate() {
                if p.parent.is_some_and(|parent| parent >= j) {
                    return Err(format!(
                        "[[run]] {}: processes[{j}]: parent must name an earlier process",
                        i + 1
                    ));
                }
            }
        }
        Ok(Fake {
            used: Mutex::new(vec![0; script.run.len()]),
            script,
        })
    }

    /// The version line a recipe's version command prints.
    pub fn version(&self) -> Option<String> {
        self.script.version.clone()
    }

    /// Whether a recipe's plugin probe finds its plugin (`plugins`, default yes).
    pub fn plugins(&self) -> bool {
        self.script.plugins
    }

    /// What the probe of `perturbation` in `cell` finds.
    pub fn probe(&self, cell: &str, perturbation: &str) -> Result<String, String> {
        let rule = self.script.probe.iter().find(|p| {
            p.cell.as_deref().is_some_and(|c| c == cell)
                || p.perturbation.as_deref().is_some_and(|k| k == perturbation)
        });
        match rule {
            Some(r) if !r.applied => Err(r
                .reason
                .clone()
                .unwrap_or_else(|| format!("{perturbation}: not applied (fake executor)"))),
            _ => Ok(format!("{perturbation}: applied (fake executor)")),
        }
    }

    /// The rule that answers `job`, counting it against the rule's `times`.
    fn answer(&self, job: &Job) -> Option<&RunRule> {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        let (i, rule) = self
            .script
            .run
            .iter()
            .enumerate()
            .find(|(i, r)| r.matches(job) && r.times.is_none_or(|t| used[*i] < t))?;
        used[i] += 1;
        Some(rule)
    }

    /// "Runs" `job`: writes its log and report as the script says.
    pub async fn run(&self, job: &Job, mut stop: watch::Receiver<Stop>) -> (ChildResult, Measured) {
        let mut result = ChildResult {
            end: ProcessEnd::Exited { code: 0 },
            duration: Duration::ZERO,
            output_bytes: 0,
            output_dropped: 0,
            stragglers: 0,
            warnings: Vec::new(),
            processes: None,
            clock_record: None,
        };
        if *stop.borrow() != Stop::Run {
            result.end = ProcessEnd::Interrupted;
            return (result, Measured::default());
        }
        let rule = self.answer(job);
        if let Some(watch) = &job.watch {
            let launched = FakeProcess {
                exe: job.launch.argv.first().cloned().unwrap_or_default(),
                parent: None,
                static_linked: false,
                go: false,
                secure: false,
                env: BTreeMap::new(),
                env_unset: Vec::new(),
            };
            let listed = rule.and_then(|r| r.processes.as_deref());
            let programs = listed.unwrap_or(std::slice::from_ref(&launched));
            result.processes = Some(
                programs
                    .iter()
                    .enumerate()
                    .map(|(i, p)| p.seen(i, job, watch))
                    .collect(),
            );
        }
        let Some(rule) = rule else {
            let cpu = job
                .stress
                .as_ref()
                .map(|s| measured(&RunRule::default(), s));
            return (
                result,
                Measured {
                    cpu,
                    host_busy: None,
                },
            );
        };
        let expand = |text: &str| {
            text.replace("{seed}", &job.seed.to_string())
                .replace("{run}", &job.marker)
                .replace("{cell}", &job.cell)
        };
        result.end = rule.end();
        result.duration = rule
            .duration
            .as_deref()
            .and_then(|d| humantime::parse_duration(d).ok())
            .unwrap_or(Duration::ZERO);
        if let (Some(output), Some(log)) = (&rule.output, &job.log) {
            let text = expand(output);
            if !text.is_empty() {
                write(log, &text, &mut result.warnings);
                result.output_bytes = text.len() as u64;
            }
        }
        if let (Some(junit), Some(path)) = (&rule.junit, &job.junit) {
            write(path, &expand(junit), &mut result.warnings);
        }
        if rule.interrupt {
            // As if Ctrl-C came while this run was finishing: the session's
            // signal watcher turns `stop` to Graceful before this returns.
            let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGINT);
            let _ = stop.wait_for(|s| *s != Stop::Run).await;
        }
        let cpu = match &job.stress {
            Some(plan) => Some(measured(rule, plan)),
            None => rule.subject_cpu.map(|subject| RunCpu {
                window_s: rule.window_s(),
                subject_s: Some(subject),
                stress: None,
            }),
        };
        (
            result,
            Measured {
                cpu,
                host_busy: rule.cpu_busy,
            },
        )
    }
}

impl RunRule {
    fn window_s(&self) -> f64 {
        self.duration
            .as_deref()
            .and_then(|d| humantime::parse_duration(d).ok())
            .map_or(1.0, |d| d.as_secs_f64())
    }
}

/// What a stressed run got, as `rule` scripts it.
fn measured(rule: &RunRule, plan: &StressPlan) -> RunCpu {
    let window_s = rule.window_s();
    let share = rule
        .stress_share
        .unwrap_or_else(|| (plan.usable() as f64 / plan.threads.max(1) as f64).min(1.0));
    RunCpu {
        window_s,
        subject_s: Some(rule.subject_cpu.unwrap_or(0.0)),
        stress: Some(StressCpu {
            threads: plan.threads,
            cpus: plan.usable(),
            cpu_s: share * plan.threads as f64 * window_s,
            error: rule.stress_error.clone(),
        }),
    }
}

fn write(path: &PathBuf, text: &str, warnings: &mut Vec<String>) {
    if let Some(parent) = path.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    if let Err(e) = std::fs::write(path, text) {
        warnings.push(format!(
            "fake executor: cannot write {}: {e}",
            path.display()
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::launch::Launch;

    fn job(cell: &str, replicate: u32, seed: u64) -> Job {
        Job {
            index: 0,
            launch: Launch {
                argv: vec!["pytest".into(), "tests/test_a.py".into()],
                cwd: PathBuf::from("/"),
                env_set: BTreeMap::new(),
                env_unset: Vec::new(),
                isolation: Default::default(),
                netns_cell: None,
                preload_cleanup: None,
                clock_record: false,
            },
            log: None,
            marker: "s.00000".into(),
            stress: None,
            group: None,
            cell: cell.into(),
            replicate,
            seed,
            junit: None,
            watch: None,
        }
    }

    #[tokio::test]
    async fn the_first_matching_rule_answers_and_times_fall_through() {
        let fake = Fake::parse(
            r#"
            [[run]]
            cell = "tz=UTC"
            times = 1
            exit = 3
            [[run]]
            cell = "tz=UTC"
            signal = 9
            [[run]]
            argv = "test_a.py"
            replicate = 1
            timeout = true
            "#,
        )
        .unwrap();
        let (_tx, rx) = watch::channel(Stop::Run);
        let end = |j: Job| {
            let rx = rx.clone();
            let fake = &fake;
            async move { fake.run(&j, rx).await.0.end }
        };
        assert_eq!(
            end(job("tz=UTC", 0, 1)).await,
            ProcessEnd::Exited { code: 3 }
        );
        assert_eq!(
            end(job("tz=UTC", 0, 1)).await,
            ProcessEnd::Signaled { signal: 9 }
        );
        assert_eq!(
            end(job("baseline", 1, 1)).await,
            ProcessEnd::TimedOut { signal: 15 }
        );
        assert_eq!(
            end(job("baseline", 0, 1)).await,
            ProcessEnd::Exited { code: 0 }
        );
    }

    #[tokio::test]
    async fn output_and_report_are_written_with_placeholders() {
        let dir = tempfile::tempdir().unwrap();
        let fake = Fake::parse(
            "[[run]]\nexit = 1\noutput = \"seed {seed} in {cell}\"\njunit = \"<testsuite name='{run}'/>\"\n",
        )
        .unwrap();
        let mut j = job("shuffle", 0, 42);
        j.log = Some(dir.path().join("a.log"));
        j.junit = Some(dir.path().join("r/a.xml"));
        let (_tx, rx) = watch::channel(Stop::Run);
        let (result, _) = fake.run(&j, rx).await;
        assert_eq!(result.output_bytes, 18);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.log")).unwrap(),
            "seed 42 in shuffle"
        );
        assert!(std::fs::read_to_string(dir.path().join("r/a.xml"))
            .unwrap()
            .contains("s.00000"));
    }

    #[test]
    fn probes_are_applied_unless_the_script_says_not_and_bad_scripts_are_refused() {
        let fake = Fake::parse(
            "[[probe]]\nperturbation = \"netns\"\napplied = false\nreason = \"refused\"\n",
        )
        .unwrap();
        assert_eq!(fake.probe("netns", "netns"), Err("refused".into()));
        assert!(fake.probe("tz=UTC", "tz=UTC").is_ok());
        assert!(Fake::parse("[[run]]\nexit = \"one\"\n").is_err());
        assert!(Fake::parse("[[run]]\nbogus = 1\n")
            .unwrap_err()
            .contains("bogus"));
        assert!(Fake::parse("[[run]]\nduration = \"soon\"\n").is_err());
    }
}
