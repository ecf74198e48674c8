//! The execution context and provenance of an ingested report, detected
//! from the CI environment and overridden by flags.
//!
//! Context dimensions (what may legitimately change an outcome, low
//! cardinality): `branch`, `os`, `arch`, `runtime`, `runtime_version`,
//! `runner`, `leg` (the matrix leg) and any `--context KEY=VALUE`.
//! Provenance (high cardinality, never a dimension): provider, run id,
//! job, attempt, the run's page (its URL); and the commit, kept beside both.
//!
//! Variables read, per provider (the first of a list that is set wins):
//!
//! | provider | detected by | run | job | attempt | commit | branch | os / arch | runner | leg |
//! |---|---|---|---|---|---|---|---|---|---|
//! | GitHub Actions | `GITHUB_ACTIONS=true` | `GITHUB_RUN_ID` | `GITHUB_JOB` | `GITHUB_RUN_ATTEMPT` | `GITHUB_SHA` | `GITHUB_HEAD_REF`, `GITHUB_REF_NAME` | `RUNNER_OS` / `RUNNER_ARCH` | `RUNNER_ENVIRONMENT` | — (pass `--matrix`) |
//! | GitLab CI | `GITLAB_CI=true` | `CI_PIPELINE_ID` | `CI_JOB_NAME` | `CI_JOB_ID` | `CI_COMMIT_SHA` | `CI_MERGE_REQUEST_SOURCE_BRANCH_NAME`, `CI_COMMIT_REF_NAME` | host | — | `CI_JOB_NAME` of a `parallel:matrix` job (`name: [a, b]`) |
//! | Buildkite | `BUILDKITE=true` | `BUILDKITE_BUILD_ID` | `BUILDKITE_STEP_KEY`, `BUILDKITE_LABEL` | `BUILDKITE_RETRY_COUNT` | `BUILDKITE_COMMIT` | `BUILDKITE_BRANCH` | host | `BUILDKITE_AGENT_META_DATA_QUEUE` | — |
//! | CircleCI | `CIRCLECI=true` | `CIRCLE_WORKFLOW_ID` | `CIRCLE_JOB` | `CIRCLE_BUILD_NUM` | `CIRCLE_SHA1` | `CIRCLE_BRANCH` | host | — | — |
//! | Jenkins | `JENKINS_URL` set | `BUILD_TAG` | `JOB_NAME` | — | `GIT_COMMIT` | `BRANCH_NAME`, `GIT_BRANCH` | host | — | — |
//!
//! The run's page: GitHub `$GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/RUN`
//! (`/attempts/N` after it when the attempt is above 1), GitLab
//! `CI_JOB_URL` (else `CI_PIPELINE_URL`), Buildkite `BUILDKITE_BUILD_URL`;
//! `--run-url` overrides it. Only an `http(s)://` URL is recorded
//! ([`run_url`]): a detected value that is not one is dropped.
//!
//! Outside GitHub Actions, `os` and `arch` are the host's (ingest where the
//! tests ran). The provider's idea of a job is coarser than a matrix leg on
//! GitHub (every leg has the same `GITHUB_JOB`), so a leg must say what it
//! is: `--matrix '${{ toJSON(matrix) }}'`, `--runtime-version`, `--context`.
//!
//! Pure: the environment comes in as a lookup function.

use super::{Context, Provenance};

/// What the user said on the command line, each overriding detection.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// Ignore the CI environment (flags and the host's os/arch only).
    pub no_detect: bool,
    /// `--branch`.
    pub branch: Option<String>,
    /// `--commit`.
    pub commit: Option<String>,
    /// `--os`.
    pub os: Option<String>,
    /// `--arch`.
    pub arch: Option<String>,
    /// `--runtime`.
    pub runtime: Option<String>,
    /// `--runtime-version`.
    pub runtime_version: Option<String>,
    /// `--runner`.
    pub runner: Option<String>,
    /// `--matrix`: a JSON object (`toJSON(matrix)`) or any text.
    pub matrix: Option<String>,
    /// `--context KEY=VALUE`, in order.
    pub extra: Vec<(String, String)>,
    /// `--provider`.
    pub provider: Option<String>,
    /// `--run-id`.
    pub run: Option<String>,
    /// `--job`.
    pub job: Option<String>,
    /// `--attempt`.
    pub attempt: Option<String>,
    /// `--run-url` (checked by [`run_url`]).
    pub run_url: Option<String>,
}

/// `text` as a run's page: an `http://` or `https://` URL with a host and
/// no whitespace or control character; anything else is refused, saying
/// why (the value shown escaped).
pub fn run_url(text: &str) -> Result<String, String> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    let Some(rest) = ["https://", "http://"]
        .iter()
        .find_map(|p| lower.strip_prefix(p))
    else {
        return Err(format!("{t:?} is not an http:// or https:// URL"));
    };
    if rest.is_empty() || rest.starts_with(['/', '?', '#']) {
        return Err(format!("{t:?} names no host"));
    }
    if t.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{t:?} holds whitespace or a control character"));
    }
    Ok(t.to_string())
}

/// What a report is recorded with: context, commit, provenance.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recorded {
    /// The execution context.
    pub context: Context,
    /// The commit.
    pub commit: Option<String>,
    /// The provenance.
    pub provenance: Provenance,
}

/// The dimension names flakelab fills itself; `--context` may not reuse
/// them (use the dedicated flag).
pub const DIMENSIONS: &[&str] = &[
    "branch",
    "os",
    "arch",
    "runtime",
    "runtime_version",
    "runner",
    "leg",
];

/// Parses one `--context KEY=VALUE`.
pub fn parse_pair(s: &str) -> Result<(String, String), String> {
    let Some((k, v)) = s.split_once('=') else {
        return Err(format!(
            "--context {s:?} is not KEY=VALUE (for example --context db=postgres16)"
        ));
    };
    let k = k.trim();
    if k.is_empty()
        || !k
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
    {
        return Err(format!(
            "--context key {k:?} must be letters, digits, `_`, `.` or `-`"
        ));
    }
    if DIMENSIONS.contains(&k) {
        // The flag that sets the dimension (the leg's is `--matrix`).
        let flag = match k {
            "leg" => "matrix".to_string(),
            other => other.replace('_', "-"),
        };
        return Err(format!(
            "--context {k}=… names a built-in dimension: use --{flag} instead"
        ));
    }
    Ok((k.to_string(), v.trim().to_string()))
}

/// The matrix leg as one canonical value: a JSON object becomes its
/// `key=value` pairs sorted and joined by `,` (so `{"os":"a","py":"3"}`
/// and `{"py":"3","os":"a"}` are one leg); anything else is kept as typed.
pub fn canonical_matrix(s: &str) -> String {
    if let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(s) {
        let mut pairs: Vec<String> = map
            .iter()
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect();
        pairs.sort();
        return pairs.join(",");
    }
    s.trim().to_string()
}

/// Lower-cases an OS name and maps the host's spellings to GitHub's
/// (`macos`, `linux`, `windows`).
fn norm_os(s: &str) -> String {
    s.trim().to_ascii_lowercase()
}

/// Lower-cases an architecture and maps Rust's spellings to GitHub's
/// (`x86_64` → `x64`, `aarch64` → `arm64`).
fn norm_arch(s: &str) -> String {
    match s.trim().to_ascii_lowercase().as_str() {
        "x86_64" | "amd64" => "x64".to_string(),
        "aarch64" => "arm64".to_string(),
        "x86" | "i686" => "x86".to_string(),
        other => other.to_string(),
    }
}

/// The context and provenance of reports ingested now: detection from
/// `env` (unless `no_detect`), then `host` os/arch where CI gave none, then
/// the flags. Empty values are treated as absent.
pub fn detect(
    env: &dyn Fn(&str) -> Option<String>,
    host: (&str, &str),
    flags: &Overrides,
) -> Recorded {
    let get = |names: &[&str]| -> Option<String> {
        names
            .iter()
            .find_map(|n| env(n).filter(|v| !v.trim().is_empty()))
    };
    let is = |name: &str, value: &str| env(name).is_some_and(|v| v.eq_ignore_ascii_case(value));
    let mut d = Detected::default();
    if !flags.no_detect {
        if is("GITHUB_ACTIONS", "true") {
            d.provider = Some("github");
            d.run = get(&["GITHUB_RUN_ID"]);
            d.job = get(&["GITHUB_JOB"]);
            d.attempt = get(&["GITHUB_RUN_ATTEMPT"]);
            d.github_repo = get(&["GITHUB_REPOSITORY"]).map(|repo| {
                let server = get(&["GITHUB_SERVER_URL"]);
                let server = server.as_deref().unwrap_or("https://github.com");
                format!(
                    "{}/{}",
                    server.trim_end_matches('/'),
                    repo.trim_matches('/')
                )
            });
            d.commit = get(&["GITHUB_SHA"]);
            d.branch = get(&["GITHUB_HEAD_REF", "GITHUB_REF_NAME"]);
            d.os = get(&["RUNNER_OS"]);
            d.arch = get(&["RUNNER_ARCH"]);
            d.runner = get(&["RUNNER_ENVIRONMENT"]);
        } else if is("GITLAB_CI", "true") {
            d.provider = Some("gitlab");
            d.run = get(&["CI_PIPELINE_ID"]);
            d.job = get(&["CI_JOB_NAME"]);
            d.attempt = get(&["CI_JOB_ID"]);
            d.url = get(&["CI_JOB_URL", "CI_PIPELINE_URL"]);
            d.commit = get(&["CI_COMMIT_SHA"]);
            d.branch = get(&["CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", "CI_COMMIT_REF_NAME"]);
            d.leg = get(&["CI_JOB_NAME"]).filter(|n| n.contains(": ["));
        } else if is("BUILDKITE", "true") {
            d.provider = Some("buildkite");
            d.run = get(&["BUILDKITE_BUILD_ID"]);
            d.job = get(&["BUILDKITE_STEP_KEY", "BUILDKITE_LABEL"]);
            d.attempt = get(&["BUILDKITE_RETRY_COUNT"]);
            d.url = get(&["BUILDKITE_BUILD_URL"]);
            d.commit = get(&["BUILDKITE_COMMIT"]);
            d.branch = get(&["BUILDKITE_BRANCH"]);
            d.runner = get(&["BUILDKITE_AGENT_META_DATA_QUEUE"]);
        } else if is("CIRCLECI", "true") {
            d.provider = Some("circleci");
            d.run = get(&["CIRCLE_WORKFLOW_ID"]);
            d.job = get(&["CIRCLE_JOB"]);
            d.attempt = get(&["CIRCLE_BUILD_NUM"]);
            d.commit = get(&["CIRCLE_SHA1"]);
            d.branch = get(&["CIRCLE_BRANCH"]);
        } else if get(&["JENKINS_URL"]).is_some() {
            d.provider = Some("jenkins");
            d.run = get(&["BUILD_TAG"]);
            d.job = get(&["JOB_NAME"]);
            d.commit = get(&["GIT_COMMIT"]);
            d.branch = get(&["BRANCH_NAME", "GIT_BRANCH"]);
        }
    }
    let pick = |flag: &Option<String>, detected: Option<String>| {
        flag.clone()
            .filter(|v| !v.trim().is_empty())
            .or(detected)
            .map(|v| v.trim().to_string())
    };
    let mut context = Context::new();
    let mut put = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            context.insert(k.to_string(), v);
        }
    };
    put("branch", pick(&flags.branch, d.branch));
    put(
        "os",
        pick(&flags.os, d.os.or_else(|| Some(host.0.to_string()))).map(|s| norm_os(&s)),
    );
    put(
        "arch",
        pick(&flags.arch, d.arch.or_else(|| Some(host.1.to_string()))).map(|s| norm_arch(&s)),
    );
    put("runtime", pick(&flags.runtime, None));
    put("runtime_version", pick(&flags.runtime_version, None));
    put("runner", pick(&flags.runner, d.runner));
    put(
        "leg",
        pick(&flags.matrix.as_deref().map(canonical_matrix), d.leg),
    );
    for (k, v) in &flags.extra {
        context.insert(k.clone(), v.clone());
    }
    let run = pick(&flags.run, d.run);
    let attempt = pick(&flags.attempt, d.attempt);
    // GitHub's page is the run's (and the attempt's, after the first).
    let github = d.github_repo.zip(run.as_deref()).map(|(repo, run)| {
        let mut url = format!("{repo}/actions/runs/{}", run.trim());
        if let Some(a) = attempt
            .as_deref()
            .filter(|a| a.parse::<u64>().is_ok_and(|n| n > 1))
        {
            url.push_str(&format!("/attempts/{a}"));
        }
        url
    });
    let url = pick(&flags.run_url, d.url.or(github)).and_then(|u| run_url(&u).ok());
    Recorded {
        context,
        commit: pick(&flags.commit, d.commit),
        provenance: Provenance {
            provider: pick(&flags.provider, d.provider.map(str::to_string)),
            run,
            job: pick(&flags.job, d.job),
            attempt,
            url,
            ingested: None,
        },
    }
}

#[derive(Default)]
struct Detected {
    provider: Option<&'static str>,
    run: Option<String>,
    job: Option<String>,
    attempt: Option<String>,
    commit: Option<String>,
    branch: Option<String>,
    os: Option<String>,
    arch: Option<String>,
    runner: Option<String>,
    leg: Option<String>,
    /// The run's page, when the provider names it whole.
    url: Option<String>,
    /// GitHub's server and repository (`https://github.com/OWNER/REPO`).
    github_repo: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn github_actions_is_detected_and_flags_override() {
        let e = env(&[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_RUN_ID", "77"),
            ("GITHUB_JOB", "test"),
            ("GITHUB_RUN_ATTEMPT", "2"),
            ("GITHUB_SHA", "abc"),
            ("GITHUB_HEAD_REF", ""),
            ("GITHUB_REF_NAME", "main"),
            ("RUNNER_OS", "Linux"),
            ("RUNNER_ARCH", "ARM64"),
            ("RUNNER_ENVIRONMENT", "github-hosted"),
        ]);
        let flags = Overrides {
            matrix: Some(r#"{"python":"3.12","os":"ubuntu"}"#.into()),
            runtime: Some("python".into()),
            ..Overrides::default()
        };
        let r = detect(&e, ("linux", "x86_64"), &flags);
        assert_eq!(
            super::super::context_name(&r.context),
            "arch=arm64,branch=main,leg=os=ubuntu,python=3.12,os=linux,runner=github-hosted,runtime=python"
        );
        assert_eq!(r.commit.as_deref(), Some("abc"));
        assert_eq!(r.provenance.provider.as_deref(), Some("github"));
        assert_eq!(r.provenance.run.as_deref(), Some("77"));
        assert_eq!(r.provenance.job.as_deref(), Some("test"));
        assert_eq!(r.provenance.attempt.as_deref(), Some("2"));
        // No repository: no page.
        assert_eq!(r.provenance.url, None);
        // Provenance never enters the context.
        assert!(!r.context.values().any(|v| v == "77" || v == "test"));
        let over = Overrides {
            branch: Some("feature".into()),
            os: Some("macOS".into()),
            attempt: Some("3".into()),
            ..Overrides::default()
        };
        let r = detect(&e, ("linux", "x86_64"), &over);
        assert_eq!(r.context["branch"], "feature");
        assert_eq!(r.context["os"], "macos");
        assert_eq!(r.provenance.attempt.as_deref(), Some("3"));
    }

    #[test]
    fn each_provider_is_detected() {
        type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str, &'a str);
        let cases: &[Case] = &[
            (
                &[
                    ("GITLAB_CI", "true"),
                    ("CI_PIPELINE_ID", "9"),
                    ("CI_COMMIT_SHA", "c1"),
                    ("CI_COMMIT_REF_NAME", "dev"),
                    ("CI_JOB_NAME", "test: [3.11]"),
                ],
                "gitlab",
                "9",
                "dev",
            ),
            (
                &[
                    ("BUILDKITE", "true"),
                    ("BUILDKITE_BUILD_ID", "b"),
                    ("BUILDKITE_COMMIT", "c1"),
                    ("BUILDKITE_BRANCH", "dev"),
                ],
                "buildkite",
                "b",
                "dev",
            ),
            (
                &[
                    ("CIRCLECI", "true"),
                    ("CIRCLE_WORKFLOW_ID", "w"),
                    ("CIRCLE_SHA1", "c1"),
                    ("CIRCLE_BRANCH", "dev"),
                ],
                "circleci",
                "w",
                "dev",
            ),
            (
                &[
                    ("JENKINS_URL", "http://j"),
                    ("BUILD_TAG", "jenkins-x-4"),
                    ("GIT_COMMIT", "c1"),
                    ("GIT_BRANCH", "dev"),
                ],
                "jenkins",
                "jenkins-x-4",
                "dev",
            ),
        ];
        for (vars, provider, run, branch) in cases {
            let r = detect(&env(vars), ("linux", "aarch64"), &Overrides::default());
            assert_eq!(r.provenance.provider.as_deref(), Some(*provider));
            assert_eq!(r.provenance.run.as_deref(), Some(*run));
            assert_eq!(r.context["branch"], *branch);
            assert_eq!(r.context["arch"], "arm64");
            assert_eq!(r.commit.as_deref(), Some("c1"));
        }
        let gitlab = detect(&env(cases[0].0), ("linux", "x86_64"), &Overrides::default());
        assert_eq!(gitlab.context["leg"], "test: [3.11]");
        let none = detect(
            &env(&[("GITHUB_ACTIONS", "true"), ("GITHUB_RUN_ID", "1")]),
            ("linux", "x86_64"),
            &Overrides {
                no_detect: true,
                ..Overrides::default()
            },
        );
        assert_eq!(none.provenance, Provenance::default());
        assert_eq!(
            super::super::context_name(&none.context),
            "arch=x64,os=linux"
        );
    }

    #[test]
    fn the_runs_page_is_detected_per_provider_and_only_http_is_kept() {
        let github = |attempt: &str, server: Option<&str>| {
            let mut vars = vec![
                ("GITHUB_ACTIONS", "true"),
                ("GITHUB_RUN_ID", "4242"),
                ("GITHUB_RUN_ATTEMPT", attempt),
                ("GITHUB_REPOSITORY", "acme/shop"),
            ];
            if let Some(s) = server {
                vars.push(("GITHUB_SERVER_URL", s));
            }
            detect(&env(&vars), ("linux", "x86_64"), &Overrides::default())
                .provenance
                .url
        };
        assert_eq!(
            github("1", Some("https://github.com")).as_deref(),
            Some("https://github.com/acme/shop/actions/runs/4242")
        );
        assert_eq!(
            github("3", Some("https://ghe.example/")).as_deref(),
            Some("https://ghe.example/acme/shop/actions/runs/4242/attempts/3")
        );
        assert_eq!(
            github("1", None).as_deref(),
            Some("https://github.com/acme/shop/actions/runs/4242")
        );
        // A hostile server variable is no link.
        assert_eq!(github("1", Some("javascript:alert(1)//")), None);
        let url = |vars: &[(&str, &str)]| {
            detect(&env(vars), ("linux", "x86_64"), &Overrides::default())
                .provenance
                .url
        };
        assert_eq!(
            url(&[
                ("GITLAB_CI", "true"),
                ("CI_PIPELINE_URL", "https://gl.example/p/-/pipelines/9"),
                ("CI_JOB_URL", "https://gl.example/p/-/jobs/77"),
            ])
            .as_deref(),
            Some("https://gl.example/p/-/jobs/77")
        );
        assert_eq!(
            url(&[
                ("GITLAB_CI", "true"),
                ("CI_PIPELINE_URL", "https://gl.example/p/-/pipelines/9"),
            ])
            .as_deref(),
            Some("https://gl.example/p/-/pipelines/9")
        );
        assert_eq!(
            url(&[
                ("BUILDKITE", "true"),
                (
                    "BUILDKITE_BUILD_URL",
                    "https://buildkite.com/acme/shop/builds/5"
                ),
            ])
            .as_deref(),
            Some("https://buildkite.com/acme/shop/builds/5")
        );
        // The flag wins, and works outside CI.
        let by_hand = detect(
            &env(&[]),
            ("linux", "x86_64"),
            &Overrides {
                no_detect: true,
                run_url: Some("http://ci.local/run/1".into()),
                ..Overrides::default()
            },
        );
        assert_eq!(
            by_hand.provenance.url.as_deref(),
            Some("http://ci.local/run/1")
        );
    }

    #[test]
    fn only_an_http_url_is_a_runs_page() {
        assert_eq!(
            run_url(" HTTPS://ci.example/r/1 ").unwrap(),
            "HTTPS://ci.example/r/1"
        );
        assert!(run_url("javascript:alert(1)")
            .unwrap_err()
            .contains("not an http"));
        assert!(run_url("ftp://x/y").unwrap_err().contains("not an http"));
        assert!(run_url("https:///path").unwrap_err().contains("no host"));
        assert!(run_url("https://").unwrap_err().contains("no host"));
        assert!(run_url("https://a/b c")
            .unwrap_err()
            .contains("whitespace or a control"));
        let err = run_url("https://a/b\n)<script>").unwrap_err();
        assert!(!err.contains('\n'), "shown escaped: {err}");
    }

    #[test]
    fn context_pairs_are_checked() {
        assert_eq!(parse_pair("db=pg16").unwrap(), ("db".into(), "pg16".into()));
        assert!(parse_pair("db").unwrap_err().contains("KEY=VALUE"));
        assert!(parse_pair("os=linux").unwrap_err().contains("--os"));
        // The hint names the flag `flakelab ingest` has: the leg's is --matrix.
        assert!(parse_pair("leg=x")
            .unwrap_err()
            .contains("use --matrix instead"));
        assert!(parse_pair("runtime_version=3")
            .unwrap_err()
            .contains("use --runtime-version instead"));
        assert!(parse_pair("a b=c").unwrap_err().contains("letters"));
    }
}
