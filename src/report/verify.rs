//! The verdict of `flakelab verify`: each cell's count on both revisions,
//! the three halves of the claim (red before, green after, and the two
//! differing at the confidence: Fisher's exact test on both halves'
//! counts, Holm across the cells), and how many runs would settle a claim
//! not shown. Pure; rendered as a table or as `flakelab.verify/1`.

use std::fmt::Write as _;

use serde::Serialize;

use super::VsBaseline;
use crate::record::RungCount;
use crate::stats;

pub use crate::record::schema::VERIFY_SCHEMA;

/// One revision of the comparison.
#[derive(Debug, Serialize)]
pub struct Revision {
    /// As given.
    pub rev: String,
    /// The full hash.
    pub commit: String,
}

/// One cell on both revisions.
#[derive(Debug, Serialize)]
pub struct CellVerdict {
    /// The cell name (`baseline` without `-p`).
    pub cell: String,
    /// Whether it was applied on both trees.
    pub applied: bool,
    /// Its count before the fix.
    pub before: RungCount,
    /// Its count after the fix.
    pub after: RungCount,
    /// The before half against the after half: Fisher's two-sided test on
    /// their counts, Holm-adjusted across the cells compared (both halves
    /// measured); `null` when either measured nothing.
    pub before_vs_after: Option<VsBaseline>,
}

/// One half of the verdict.
#[derive(Debug, Serialize)]
pub struct Half {
    /// Whether it holds.
    pub holds: bool,
    /// Why, in words.
    pub sentence: String,
}

/// The whole verdict, as printed and as JSON.
#[derive(Debug, Serialize)]
pub struct VerifyReport {
    /// Always [`VERIFY_SCHEMA`].
    pub schema: &'static str,
    /// The session holding the runs on both trees.
    pub session: String,
    /// What counts as reproducing, in words.
    pub criterion: String,
    /// Confidence level.
    pub confidence: f64,
    /// The revision before the fix.
    pub before: Revision,
    /// The revision with the fix.
    pub after: Revision,
    /// One per cell.
    pub cells: Vec<CellVerdict>,
    /// Some cell reproduced before the fix.
    pub negative_control: Half,
    /// No cell reproduced after the fix, and every cell measured there.
    pub fix: Half,
    /// The third condition: the halves differ at the confidence.
    pub difference: Half,
    /// Runs per cell on each revision that would settle a difference not
    /// shown at this N (`-n`), when one would.
    pub runs_to_settle: Option<u64>,
    /// All three hold: red before, green after, and the two differ.
    pub verified: bool,
    /// Whether Ctrl-C cut the session short.
    pub interrupted: bool,
}

/// A count in words: `nothing measured`, `0 of 4 — rate < 0.527`, `4 of 4`.
pub fn words(c: &RungCount) -> String {
    if c.n == 0 {
        "nothing measured".into()
    } else if c.k == 0 {
        format!("0 of {} — {}", c.n, stats::format_bound(c.high))
    } else {
        format!("{} of {}", c.k, c.n)
    }
}

/// The first two halves: the negative control (some cell reproduced
/// before the fix) and the fix (no cell reproduced after it, every cell
/// measured there).
pub fn halves(verdicts: &[CellVerdict], confidence: f64) -> (Half, Half) {
    let reproduced: Vec<&CellVerdict> = verdicts.iter().filter(|v| v.before.k > 0).collect();
    let negative_control = if reproduced.is_empty() {
        Half {
            holds: false,
            sentence: format!(
                "does NOT hold: before the fix nothing reproduced ({}), so the after runs cannot show the fix changed anything; raise -n or choose the cell that fails",
                verdicts
                    .iter()
                    .map(|v| format!("{}: {}", v.cell, words(&v.before)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    } else {
        Half {
            holds: true,
            sentence: format!(
                "holds: before the fix it reproduced ({})",
                reproduced
                    .iter()
                    .map(|v| format!("{}: {}", v.cell, words(&v.before)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    };
    let still: Vec<&CellVerdict> = verdicts.iter().filter(|v| v.after.k > 0).collect();
    let unmeasured = verdicts.iter().any(|v| v.after.n == 0);
    let fix = if !still.is_empty() {
        Half {
            holds: false,
            sentence: format!(
                "does NOT hold: after the fix it still reproduces ({})",
                still
                    .iter()
                    .map(|v| format!("{}: {}", v.cell, words(&v.after)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    } else if unmeasured {
        Half {
            holds: false,
            sentence: "cannot be shown: a cell measured nothing after the fix".into(),
        }
    } else {
        Half {
            holds: true,
            sentence: format!(
                "holds: after the fix nothing reproduced ({}, bounds at {}% confidence)",
                verdicts
                    .iter()
                    .map(|v| format!("{}: {}", v.cell, words(&v.after)))
                    .collect::<Vec<_>>()
                    .join(", "),
                (confidence * 100.0).round()
            ),
        }
    };
    (negative_control, fix)
}

/// Fisher's exact test of each cell's before half against its after half,
/// Holm across the cells whose halves both measured something and failed at
/// all. A cell that failed in neither half has p = 1 whatever the runs say
/// (Fisher's test conditions on the failures seen, here none), so it can
/// never differ and is left out of Holm's family rather than weakening the
/// others (Tarone's rule for discrete tests).
pub fn compare_halves(cells: &mut [CellVerdict], confidence: f64) {
    let measured = |c: &CellVerdict| c.before.n > 0 && c.after.n > 0;
    let family: Vec<usize> = (0..cells.len())
        .filter(|&i| measured(&cells[i]) && cells[i].before.k + cells[i].after.k > 0)
        .collect();
    let raw: Vec<f64> = family
        .iter()
        .map(|&i| {
            let (b, a) = (&cells[i].before, &cells[i].after);
            stats::fisher_exact(b.k, b.n - b.k, a.k, a.n - a.k)
        })
        .collect();
    let alpha = 1.0 - confidence;
    for c in cells.iter_mut().filter(|c| measured(c)) {
        c.before_vs_after = Some(VsBaseline {
            fisher_p: 1.0,
            adjusted_p: 1.0,
            differs: false,
            effect: None,
            undecided: None,
        });
    }
    for ((&i, &p), &adj) in family.iter().zip(&raw).zip(&stats::holm(&raw)) {
        cells[i].before_vs_after = Some(VsBaseline {
            fisher_p: p,
            adjusted_p: adj,
            differs: adj < alpha,
            effect: None,
            undecided: None,
        });
    }
}

/// A cell's two halves in words: `4 of 4 before, 0 of 4 after, Fisher
/// p=0.029, Holm-adjusted p=0.029`.
fn halves_words(c: &CellVerdict) -> String {
    let mut s = format!(
        "{}: {} of {} before, {} of {} after",
        c.cell, c.before.k, c.before.n, c.after.k, c.after.n
    );
    if let Some(v) = &c.before_vs_after {
        s.push_str(&format!(
            ", Fisher {}, Holm-adjusted {}",
            stats::p_text(v.fisher_p),
            stats::p_text(v.adjusted_p)
        ));
    }
    s
}

/// The third half: every cell that reproduced before differs from its
/// after half at the confidence. When one does not, the runs per cell on
/// each revision that would show it at the rate it reproduced before.
pub fn difference(
    cells: &[CellVerdict],
    control: &Half,
    fix: &Half,
    confidence: f64,
) -> (Half, Option<u64>) {
    let pct = (confidence * 100.0).round();
    let reproduced: Vec<&CellVerdict> = cells.iter().filter(|c| c.before.k > 0).collect();
    if !control.holds || reproduced.is_empty() {
        return (
            Half {
                holds: false,
                sentence: "cannot be shown: nothing reproduced before the fix".into(),
            },
            None,
        );
    }
    let words = reproduced
        .iter()
        .map(|c| halves_words(c))
        .collect::<Vec<_>>()
        .join("; ");
    let unshown: Vec<&&CellVerdict> = reproduced
        .iter()
        .filter(|c| !c.before_vs_after.as_ref().is_some_and(|v| v.differs))
        .collect();
    if unshown.is_empty() {
        return (
            Half {
                holds: true,
                sentence: format!("holds: the halves differ at {pct}% confidence ({words})"),
            },
            None,
        );
    }
    // Holm's strictest step is Bonferroni over the cells in its family.
    let compared = cells
        .iter()
        .filter(|c| c.before_vs_after.is_some() && c.before.k + c.after.k > 0)
        .count()
        .max(1);
    let alpha = (1.0 - confidence) / compared as f64;
    let settle = unshown
        .iter()
        .filter(|c| c.before.n > 0)
        .map(|c| crate::plan::runs_to_separate(c.before.k as f64 / c.before.n as f64, alpha))
        .collect::<Option<Vec<u64>>>()
        .and_then(|n| n.into_iter().max())
        .filter(|_| fix.holds);
    let how = match settle {
        Some(n) => format!(
            "; at the rate it reproduced before, about {n} runs per cell on each revision would settle it (`-n {n}`)"
        ),
        None if fix.holds => "; it reproduced too rarely before for any number of runs up to 100,000 to settle it: raise the rate first (a cell that fails more often)".into(),
        None => String::new(),
    };
    (
        Half {
            holds: false,
            sentence: format!("is not shown at {pct}% confidence ({words}){how}"),
        },
        settle,
    )
}

/// The verdict as a table and sentences.
pub fn render(v: &VerifyReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "verify · session {} · {}% confidence · reproducing means {}",
        v.session,
        (v.confidence * 100.0).round(),
        v.criterion
    );
    let _ = writeln!(out, "before: {} ({})", v.before.rev, v.before.commit);
    let _ = writeln!(out, "after:  {} ({})\n", v.after.rev, v.after.commit);
    let rows: Vec<[String; 4]> = std::iter::once([
        "cell".to_string(),
        "before the fix".to_string(),
        "after the fix".to_string(),
        "before vs after".to_string(),
    ])
    .chain(v.cells.iter().map(|c| {
        [
            if c.applied {
                c.cell.clone()
            } else {
                format!("{} (NOT APPLIED)", c.cell)
            },
            words(&c.before),
            words(&c.after),
            match &c.before_vs_after {
                None => "not compared".into(),
                Some(x) if x.differs => format!("differs ({})", stats::p_text(x.adjusted_p)),
                Some(x) => format!("no difference shown ({})", stats::p_text(x.adjusted_p)),
            },
        ]
    }))
    .collect();
    let w: Vec<usize> = (0..4)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for r in &rows {
        let _ = writeln!(
            out,
            "{:<w0$}  {:<w1$}  {:<w2$}  {}",
            r[0],
            r[1],
            r[2],
            r[3],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2]
        );
    }
    let pct = (v.confidence * 100.0).round();
    let _ = writeln!(out, "\nnegative control {}", v.negative_control.sentence);
    let _ = writeln!(out, "fix {}", v.fix.sentence);
    let _ = writeln!(out, "difference {}", v.difference.sentence);
    let verdict = match (v.negative_control.holds, v.fix.holds, v.difference.holds) {
        (true, true, true) => format!(
            "The fix is verified: red before, green after, and the two differ at {pct}% confidence."
        ),
        (true, true, false) => match v.runs_to_settle {
            Some(n) => format!(
                "Not verified: red before and green after, but too few runs to tell the two apart at {pct}% confidence; run again with `-n {n}`."
            ),
            None => format!(
                "Not verified: red before and green after, but the two are not told apart at {pct}% confidence."
            ),
        },
        (false, true, _) => {
            "Not verified: the negative control failed (nothing was red before).".to_string()
        }
        (true, false, _) => "Not verified: the fix half failed (still red after).".to_string(),
        (false, false, _) => "Not verified: neither half holds.".to_string(),
    };
    let _ = writeln!(out, "\n{verdict}");
    out
}

/// The verdict as `flakelab.verify/1` JSON, one document and a newline.
pub fn render_json(v: &VerifyReport) -> String {
    let mut t = serde_json::to_string_pretty(v).unwrap_or_default();
    t.push('\n');
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(k: u64, n: u64) -> RungCount {
        let p = stats::proportion(k, n, 0.95);
        RungCount {
            n,
            k,
            low: p.low,
            high: p.high,
            timeouts: 0,
        }
    }

    /// `(k, n)` before and after, per cell.
    type Halves = [((u64, u64), (u64, u64))];

    fn cells(halves: &Halves) -> Vec<CellVerdict> {
        let mut out: Vec<CellVerdict> = halves
            .iter()
            .enumerate()
            .map(|(i, &((bk, bn), (ak, an)))| CellVerdict {
                cell: format!("c{i}"),
                applied: true,
                before: count(bk, bn),
                after: count(ak, an),
                before_vs_after: None,
            })
            .collect();
        compare_halves(&mut out, 0.95);
        out
    }

    fn verdict(halves: &Halves) -> (bool, bool, Half, Option<u64>) {
        let c = cells(halves);
        let (control, fix) = super::halves(&c, 0.95);
        let (diff, settle) = difference(&c, &control, &fix, 0.95);
        (control.holds, fix.holds, diff, settle)
    }

    #[test]
    fn one_run_each_way_is_red_and_green_but_not_a_verified_fix() {
        let (control, fix, diff, settle) = verdict(&[((1, 1), (0, 1))]);
        assert!(control && fix);
        assert!(!diff.holds, "{}", diff.sentence);
        assert!(
            diff.sentence
                .contains("1 of 1 before, 0 of 1 after, Fisher p=1.000"),
            "{}",
            diff.sentence
        );
        assert_eq!(settle, Some(4));
        let (_, _, diff, settle) = verdict(&[((4, 4), (0, 4))]);
        assert!(diff.holds, "{}", diff.sentence);
        assert_eq!(settle, None);
    }

    #[test]
    fn every_cell_that_reproduced_must_differ_and_holm_spans_the_cells() {
        // 4 of 4 alone differs (p = 0.029); beside a second cell that failed
        // too, Holm doubles the smaller p to 0.057: not shown.
        let (_, _, diff, settle) = verdict(&[((4, 4), (0, 4)), ((1, 4), (0, 4))]);
        assert!(!diff.holds, "{}", diff.sentence);
        // The runs that settle both: Bonferroni over the two at the rarer
        // rate (1 of 4), which needs the most.
        assert!(settle.unwrap() > 20, "{settle:?}");
        // A cell that failed in neither half cannot differ and is left out
        // of the family: it costs the other nothing.
        let (_, _, diff, _) = verdict(&[((4, 4), (0, 4)), ((0, 4), (0, 4))]);
        assert!(diff.holds, "{}", diff.sentence);
        // Still red after: the difference is no settling matter.
        let (_, fix, diff, settle) = verdict(&[((4, 4), (1, 4))]);
        assert!(!fix && !diff.holds);
        assert_eq!(settle, None);
        // Nothing red before: nothing to show.
        let (control, _, diff, _) = verdict(&[((0, 4), (0, 4))]);
        assert!(!control && !diff.holds);
        assert!(diff.sentence.contains("nothing reproduced before"));
    }
}
