//! A recipe's `[retries]`: how the runner's own output says it retried
//! tests, for a runner whose report may keep no trace of the attempts
//! before the last (pytest-rerunfailures before 16.6.1 leaves only a test's
//! last attempt in pytest's JUnit). When the output says tests were retried
//! and the run's per-test records hold no retry, the first attempts are not
//! in the counts: the run says so with the recipe's hint, never silently.

use serde::{Deserialize, Serialize};

/// How the warning of [`Retries::unseen`] starts.
pub const UNSEEN: &str = "the runner retried ";

/// `[retries]` of a recipe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Retries {
    /// A regex on the run's output whose first group is the number of
    /// attempts the runner retried (pytest's summary: `3 rerun`).
    pub seen_regex: String,
    /// What to do about a report that keeps no retry.
    pub hint: String,
}

impl Retries {
    /// Whether `seen_regex` compiles and has a group.
    pub fn validate(&self) -> Result<(), String> {
        let re = regex::Regex::new(&self.seen_regex)
            .map_err(|e| format!("[retries] seen_regex: {e}"))?;
        if re.captures_len() < 2 {
            return Err("[retries] seen_regex needs a group: the number of retries".into());
        }
        Ok(())
    }

    /// The warning for a run whose `output` says the runner retried tests
    /// while its per-test records hold `retries_recorded` retries: None
    /// when the output says none, or the records hold them.
    pub fn unseen(&self, output: &str, retries_recorded: u64) -> Option<String> {
        let re = regex::Regex::new(&self.seen_regex).ok()?;
        let seen: u64 = re
            .captures_iter(output)
            .filter_map(|c| c.get(1)?.as_str().parse::<u64>().ok())
            .sum();
        (seen > 0 && retries_recorded == 0).then(|| {
            format!(
                "{UNSEEN}{seen} attempt(s) but its report keeps none of them: those tests' first attempts are not in the counts ({})",
                self.hint
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pytest() -> Retries {
        let recipes = super::super::load(None).unwrap();
        let r = recipes.iter().find(|r| r.name == "pytest").unwrap();
        r.retries
            .clone()
            .expect("the pytest recipe declares [retries]")
    }

    #[test]
    fn a_rerun_the_report_does_not_hold_is_said() {
        let r = pytest();
        r.validate().unwrap();
        // pytest-rerunfailures 16.6 and before: only the last attempt in
        // the report, the reruns counted in the summary line.
        let out = "F.\n=========== 1 failed, 2 passed, 3 rerun in 0.04s ===========\n";
        let w = r.unseen(out, 0).unwrap();
        assert!(w.starts_with("the runner retried 3 attempt(s)"), "{w}");
        assert!(w.contains("pytest-rerunfailures"), "{w}");
        // `-q`'s summary has no rule around it.
        assert!(r.unseen("1 failed, 1 rerun in 0.02s\n", 0).is_some());
        // The report holds them (16.6.1 and later): nothing to say.
        assert_eq!(r.unseen(out, 3), None);
        // No rerun, or a test's own words that only look like one.
        assert_eq!(r.unseen("===== 3 passed in 0.01s =====\n", 0), None);
        assert_eq!(r.unseen("log: 2 rerun requested by the user\n", 0), None);
    }
}
