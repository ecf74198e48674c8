//! A recipe's `[ordered]` section: whether and how its runner runs a given
//! list of tests in a given order and nothing else (what `flakelab bisect`
//! needs for every step). Kept apart from `[select]`, which runs one test.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How the runner can be made to run exactly a list of tests, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OrderHow {
    /// flakelab writes a small pytest plugin into the store (loaded with
    /// `-p` from a directory put on `PYTHONPATH`; nothing is installed into
    /// the user's environment) that reorders the collected tests to the list
    /// in the file `{order}` and deselects the rest.
    PytestPlugin,
    /// The runner itself reads the list in the file `{order}` and runs
    /// exactly those tests in that order.
    Listed,
    /// The runner runs the tests it selects in source order only: a subset
    /// keeps its relative order only when the failing run was not shuffled.
    SourceOrder,
    /// The runner cannot be made to run a given order.
    None,
}

/// `[ordered]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ordered {
    /// How (see [`OrderHow`]).
    pub how: OrderHow,
    /// Arguments added to the command for an ordered run; `{order}` is the
    /// file that lists the tests, one id a line.
    #[serde(default)]
    pub args: Vec<String>,
    /// What the runner allows, and what `bisect` can do instead where it
    /// cannot run a given order (printed by `bisect` and `recipes show`).
    pub note: String,
}

/// The plugin module `how = "pytest-plugin"` loads (`-p flakelab_order`).
pub const PYTEST_PLUGIN_MODULE: &str = "flakelab_order";

impl Ordered {
    /// Checks what serde cannot: the placeholders, and that a plugin
    /// ordering names its list file and loads the plugin.
    pub fn validate(&self) -> Result<(), String> {
        let vars = BTreeMap::from([("order", "X".to_string())]);
        for a in &self.args {
            super::fill(a, &vars).map_err(|e| format!("[ordered] args: {e}"))?;
        }
        if self.note.trim().is_empty() {
            return Err("[ordered] note is empty: say what the runner allows".into());
        }
        match self.how {
            OrderHow::PytestPlugin => {
                if !self.args.iter().any(|a| a.contains("{order}")) {
                    return Err("[ordered] args never use {order}".into());
                }
                if !self.args.iter().any(|a| a == PYTEST_PLUGIN_MODULE) {
                    return Err(format!(
                        "[ordered] args must load the plugin: -p {PYTEST_PLUGIN_MODULE}"
                    ));
                }
            }
            OrderHow::Listed => {
                if !self.args.iter().any(|a| a.contains("{order}")) {
                    return Err("[ordered] args never use {order}".into());
                }
            }
            OrderHow::SourceOrder | OrderHow::None => {
                if !self.args.is_empty() {
                    return Err("[ordered] args are only for how = \"pytest-plugin\"".into());
                }
            }
        }
        Ok(())
    }

    /// The command for an ordered run listing its tests in `order_file`:
    /// the recipe's args appended.
    pub fn argv(&self, command: &[String], order_file: &str) -> Result<Vec<String>, String> {
        let vars = BTreeMap::from([("order", order_file.to_string())]);
        let mut argv = command.to_vec();
        for a in &self.args {
            argv.push(super::fill(a, &vars)?);
        }
        Ok(argv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ordered(how: OrderHow, args: &[&str]) -> Ordered {
        Ordered {
            how,
            args: args.iter().map(|a| a.to_string()).collect(),
            note: "n".into(),
        }
    }

    #[test]
    fn a_plugin_ordering_must_name_its_list_and_load_the_plugin() {
        let good = ordered(
            OrderHow::PytestPlugin,
            &["-p", "flakelab_order", "--flakelab-order={order}"],
        );
        assert_eq!(good.validate(), Ok(()));
        assert_eq!(
            good.argv(&["pytest".into()], "/s/o.txt").unwrap(),
            [
                "pytest",
                "-p",
                "flakelab_order",
                "--flakelab-order=/s/o.txt"
            ]
        );
        let no_list = ordered(OrderHow::PytestPlugin, &["-p", "flakelab_order"]);
        assert!(no_list.validate().unwrap_err().contains("{order}"));
        let listed = ordered(OrderHow::Listed, &["--order", "{order}"]);
        assert_eq!(listed.validate(), Ok(()));
        assert!(ordered(OrderHow::Listed, &["--order"])
            .validate()
            .unwrap_err()
            .contains("{order}"));
        let no_plugin = ordered(OrderHow::PytestPlugin, &["--flakelab-order={order}"]);
        assert!(no_plugin
            .validate()
            .unwrap_err()
            .contains("-p flakelab_order"));
        let typo = ordered(OrderHow::PytestPlugin, &["{oder}", "flakelab_order"]);
        assert!(typo.validate().unwrap_err().contains("unknown placeholder"));
        let go = ordered(OrderHow::SourceOrder, &["-run"]);
        assert!(go.validate().is_err());
    }
}
