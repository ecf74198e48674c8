//! One verdict type and one exit policy for every subcommand that measures
//! (`run`, `replay`, `ladder`, `verify`): what a session found, in one
//! precedence, mapped to the documented exit code (`book/src/stability.md`).

use crate::error::{
    EXIT_DIFFERS, EXIT_INTERRUPTED, EXIT_NOT_APPLIED, EXIT_OK, EXIT_UNDECIDED, EXIT_USAGE,
};

/// What a measuring command concluded, highest precedence first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Ctrl-C or SIGTERM cut it short: what finished is kept and shown.
    Interrupted,
    /// A finding: a cell or a test differs from the baseline, the signature
    /// reproduced, a ladder rung reproduced, or a half of verify's claim
    /// failed on what was measured.
    Differs,
    /// A design stopped before it could decide a pair whose raw counts
    /// differ (a cap, `--max-runs`, the correction over many pairs): not a
    /// finding, and never clean.
    Undecided,
    /// A requested perturbation could not be applied in at least one cell.
    NotApplied,
    /// Nothing was measured: every run errored, timed out or held no
    /// outcome. Never "clean".
    NothingMeasured,
    /// Everything ran, was applied and was measured, and nothing differs.
    Clean,
}

/// The facts a command gathers; [`Verdict::of`] ranks them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Findings {
    /// A stop signal came.
    pub interrupted: bool,
    /// Something differs (or reproduced).
    pub differs: bool,
    /// Some pair's raw counts differ but the design stopped before it could
    /// decide it.
    pub undecided: bool,
    /// Some cell was not applied.
    pub not_applied: bool,
    /// Some run measured something (a pass or a fail).
    pub measured: bool,
}

impl Verdict {
    /// The one precedence: interrupted, differs, undecided, not applied,
    /// nothing measured, clean.
    pub fn of(f: Findings) -> Verdict {
        if f.interrupted {
            Verdict::Interrupted
        } else if f.differs {
            Verdict::Differs
        } else if f.undecided {
            Verdict::Undecided
        } else if f.not_applied {
            Verdict::NotApplied
        } else if !f.measured {
            Verdict::NothingMeasured
        } else {
            Verdict::Clean
        }
    }

    /// The documented exit code.
    pub fn exit_code(self) -> i32 {
        match self {
            Verdict::Interrupted => EXIT_INTERRUPTED,
            Verdict::Differs => EXIT_DIFFERS,
            Verdict::Undecided => EXIT_UNDECIDED,
            Verdict::NotApplied => EXIT_NOT_APPLIED,
            Verdict::NothingMeasured => EXIT_USAGE,
            Verdict::Clean => EXIT_OK,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_precedence_is_interrupted_differs_undecided_not_applied_unmeasured_clean() {
        let all = Findings {
            interrupted: true,
            differs: true,
            undecided: true,
            not_applied: true,
            measured: false,
        };
        assert_eq!(Verdict::of(all).exit_code(), 130);
        let f = Findings {
            interrupted: false,
            ..all
        };
        assert_eq!(Verdict::of(f).exit_code(), 1);
        let f = Findings {
            differs: false,
            ..f
        };
        assert_eq!(Verdict::of(f), Verdict::Undecided);
        assert_eq!(Verdict::of(f).exit_code(), 4);
        let f = Findings {
            undecided: false,
            ..f
        };
        assert_eq!(Verdict::of(f).exit_code(), 3);
        let f = Findings {
            not_applied: false,
            ..f
        };
        assert_eq!(Verdict::of(f), Verdict::NothingMeasured);
        assert_eq!(Verdict::of(f).exit_code(), 2);
        let f = Findings {
            measured: true,
            ..f
        };
        assert_eq!(Verdict::of(f), Verdict::Clean);
        assert_eq!(Verdict::of(f).exit_code(), 0);
    }
}
