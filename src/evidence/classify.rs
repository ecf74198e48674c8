//! Classification: maps the measured cells (and a ladder, when there is one)
//! onto the flake classes. Each class is taken from the evidence that
//! discriminates it, as each perturbation kind's file says
//! (`perturb::kind`): a collision from a concurrency cell whose failures
//! name a contested resource, or that reproduces only beside another
//! process; load-sensitivity from CPU stress, never from workers; an
//! expiring date from a clock past an instant that fails while a clock
//! before it passes; a data race from the race detector's own report.
//! Every class claimed carries the row that discriminates it (which cell or
//! rung differed, k of N against the baseline's k of N, and the
//! Holm-adjusted p); a clean cell argues against its classes only when it
//! had the power to differ at the N it ran, and says its bound; and the
//! coverage lists, per class, what was looked at. Pure: it reads a
//! [`Report`] and a [`LadderRecord`], nothing else.

use serde::Serialize;

use crate::catalog::Kind;
use crate::perturb::kind::{self, Beside, Reading, Role, Seen};

pub use crate::catalog::class::FlakeClass;
use crate::record::{LadderRecord, RungResult, RungStatus};
use crate::report::{short_p, CellReport, Report};
use crate::stats;

/// A count against the baseline's count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Count {
    /// Failures (or reproductions) counted.
    pub k: u64,
    /// Runs measured.
    pub n: u64,
}

/// One row of evidence: a cell or a ladder rung, with its statistic.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvidenceRow {
    /// The cell the row is about (None for a ladder rung).
    pub cell: Option<String>,
    /// The ladder rung: the rung of the session, or the ladder rung itself.
    pub rung: Option<u8>,
    /// The cell's (or rung's) count.
    pub count: Count,
    /// The baseline's count, when there is one to compare with.
    pub baseline: Option<Count>,
    /// The interval or the zero-failure bound, in words.
    pub interval: String,
    /// The p-value of the comparison with the baseline (Holm-adjusted for
    /// cells; Fisher's exact p for a single ladder rung), when compared.
    pub p: Option<f64>,
    /// Whether the row is about timed-out runs rather than failures.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub timeouts: bool,
    /// The whole row in words.
    pub text: String,
}

/// A class claimed or argued against, with its row and what it shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// The class.
    pub class: FlakeClass,
    /// The row that discriminates it.
    pub row: EvidenceRow,
    /// Why this row speaks to this class, in words.
    pub because: String,
}

/// A class the evidence leaves open, and what would settle it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Open {
    /// The class.
    pub class: FlakeClass,
    /// Why it is not determinable from this evidence.
    pub why: String,
}

/// The classification of one session's evidence.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Classification {
    /// Classes the evidence supports, each with its discriminating row.
    pub claimed: Vec<Finding>,
    /// Classes the evidence argues against, each with its clean row.
    pub against: Vec<Finding>,
    /// Classes the evidence leaves open.
    pub not_determinable: Vec<Open>,
    /// Cells that differ but map to no class (an ad-hoc variable), in words.
    pub unmapped: Vec<String>,
    /// What the ladder showed that names no class (rung 1 or 4).
    pub notes: Vec<String>,
}

/// How well one class was looked at.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Coverage {
    /// Cells (or rungs) of this class were measured.
    Checked {
        /// The cells and rungs that examined it.
        cells: Vec<String>,
        /// Runs measured in them, in all.
        n: u64,
        /// Cells of the class that were not applied beside them, with why.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        not_applied: Vec<String>,
    },
    /// Cells of this class were planned but none was proven to apply.
    NotApplied {
        /// Why not.
        reason: String,
    },
    /// Nothing in this session examined the class.
    NotTested {
        /// What would examine it.
        try_with: String,
    },
}

/// One line of the coverage block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CoverageRow {
    /// The class.
    pub class: FlakeClass,
    /// What was looked at.
    #[serde(flatten)]
    pub coverage: Coverage,
}

/// A cell's perturbations as kinds (values that do not parse are skipped).
fn kinds(cell: &CellReport) -> Vec<Kind> {
    cell.perturbations
        .iter()
        .filter_map(|p| Kind::parse(p).ok().flatten())
        .collect()
}

/// The classes a perturbation examines (for coverage and for "against"),
/// as its kind's file says (`perturb::kind`).
fn examines(kind: &Kind, start: Option<jiff::Timestamp>) -> Vec<FlakeClass> {
    kind::examines(kind, start)
}

/// The cells of `others` with a perturbation of `role`.
fn of_role<'a>(others: &[&'a CellReport], role: Role) -> Vec<&'a CellReport> {
    others
        .iter()
        .copied()
        .filter(|c| kinds(c).iter().any(|k| kind::role(k) == role))
        .collect()
}

/// The classes a ladder rung examines.
fn rung_examines(rung: u8) -> Vec<FlakeClass> {
    match rung {
        2 => vec![FlakeClass::OrderDependence, FlakeClass::IncompleteLifecycle],
        3 | 5 => vec![FlakeClass::HostResourceCollision],
        _ => vec![],
    }
}

/// The finest verdict the cell has: its whole runs, its timeouts, or one
/// of its tests (sham-controlled where the test also ran in a sham).
fn differs(c: &CellReport) -> bool {
    c.vs_baseline.as_ref().is_some_and(|v| v.differs)
        || c.timeouts_vs_baseline.as_ref().is_some_and(|v| v.differs)
        || differing_test(c).is_some()
}

/// A per-test row of `c` that differs from the baseline (and from its
/// sham, when compared with one): the strongest first.
fn differing_test(c: &CellReport) -> Option<&crate::report::per_test::TestRow> {
    c.tests
        .iter()
        .filter(|t| t.differs())
        .filter(|t| t.vs_sham.as_ref().is_none_or(|v| v.differs))
        .min_by(|a, b| {
            let p = |t: &crate::report::per_test::TestRow| {
                t.vs_baseline.as_ref().map_or(1.0, |v| v.adjusted_p)
            };
            p(a).total_cmp(&p(b))
        })
}

/// Whether the cell had the power to show a difference at the N it ran:
/// had every one of its runs failed (or every run of one of its tests),
/// Fisher's exact test against the baseline's count would reach the
/// confidence level. A baseline whose runs all failed leaves no room
/// (tests that always fail saturate the whole runs, so per-test rows are
/// asked too); 1 of 1 against 1 of 1, or 0 of 3 against 0 of 3, has none.
fn could_show(c: &CellReport, base: Option<&CellReport>, confidence: f64) -> bool {
    let Some(b) = base else {
        return false;
    };
    let alpha = 1.0 - confidence;
    let reach = |n: u64, bk: u64, bn: u64| {
        n > 0 && bk < bn && stats::fisher_exact(n, 0, bk, bn - bk) < alpha
    };
    reach(c.n, b.k, b.n)
        || c.tests.iter().any(|t| {
            b.tests
                .iter()
                .find(|r| r.id == t.id)
                .is_some_and(|bt| reach(t.n, bt.k, bt.n))
        })
}

fn measured(c: &CellReport) -> bool {
    c.applied && c.n + c.timed_out > 0
}

/// Whether a cell's failure rate is above the baseline's.
fn above_baseline(c: &CellReport, base: Option<&CellReport>) -> bool {
    base.is_some_and(|b| b.n > 0 && c.n > 0 && c.k * b.n > b.k * c.n)
}

/// A measured cell that was compared with the baseline, did not differ,
/// and failed no more often than it.
fn quiet(c: &CellReport, base: Option<&CellReport>) -> bool {
    measured(c) && c.vs_baseline.is_some() && !differs(c) && !above_baseline(c, base)
}

/// A quiet cell with the power to differ at its N: a row that argues
/// against its classes.
fn clean(c: &CellReport, base: Option<&CellReport>, confidence: f64) -> bool {
    quiet(c, base) && could_show(c, base, confidence)
}

/// A compared cell that fails more often than the baseline without the
/// difference reaching the confidence level: it argues neither way.
fn leaning(c: &CellReport, base: Option<&CellReport>) -> bool {
    measured(c) && c.vs_baseline.is_some() && !differs(c) && above_baseline(c, base)
}

fn pct(confidence: f64) -> String {
    format!("{}%", (confidence * 100.0).round())
}

/// `0 of N — p < x at c` or `k of N [low, high] at c`.
pub fn count_words(k: u64, n: u64, low: f64, high: f64, confidence: f64) -> String {
    if n == 0 {
        "nothing measured".to_string()
    } else if k == 0 {
        format!(
            "0 of {n} — {} at {}",
            stats::format_bound(high),
            pct(confidence)
        )
    } else {
        format!("{k} of {n} [{low:.3}, {high:.3}] at {}", pct(confidence))
    }
}

fn cell_row(report: &Report, cell: &CellReport, rung: Option<u8>) -> EvidenceRow {
    let base = report.cells.iter().find(|c| c.name == "baseline");
    let at = rung
        .map(|r| format!(" at ladder rung {r}"))
        .unwrap_or_default();
    let hang = cell
        .timeouts_vs_baseline
        .as_ref()
        .filter(|t| t.differs && !cell.vs_baseline.as_ref().is_some_and(|v| v.differs));
    if let (Some(t), Some(b)) = (hang, base) {
        let finished = cell.n + cell.timed_out;
        let base_finished = b.n + b.timed_out;
        return EvidenceRow {
            cell: Some(cell.name.clone()),
            rung,
            count: Count {
                k: cell.timed_out,
                n: finished,
            },
            baseline: Some(Count {
                k: b.timed_out,
                n: base_finished,
            }),
            interval: String::new(),
            p: Some(t.adjusted_p),
            timeouts: true,
            text: format!(
                "`{}`{at}: {} of {finished} runs timed out vs baseline {} of {base_finished}, Holm-adjusted p={}",
                cell.name,
                cell.timed_out,
                b.timed_out,
                short_p(t.adjusted_p)
            ),
        };
    }
    let whole = cell.vs_baseline.as_ref().is_some_and(|v| v.differs);
    if let (false, Some(t)) = (whole, differing_test(cell)) {
        let bt = base.and_then(|b| b.tests.iter().find(|r| r.id == t.id));
        let adjusted = t.vs_baseline.as_ref().map(|v| v.adjusted_p);
        return EvidenceRow {
            cell: Some(cell.name.clone()),
            rung,
            count: Count { k: t.k, n: t.n },
            baseline: bt.map(|b| Count { k: b.k, n: b.n }),
            interval: crate::report::test_interval_text(t),
            p: adjusted,
            timeouts: false,
            text: format!(
                "`{}`{at}, test `{}`: {} vs baseline {}; differs, Holm-adjusted p={}{}",
                cell.name,
                t.id,
                count_words(t.k, t.n, t.low, t.high, report.confidence),
                bt.map_or("not reported".to_string(), |b| count_words(
                    b.k,
                    b.n,
                    b.low,
                    b.high,
                    report.confidence
                )),
                adjusted.map_or("—".to_string(), short_p),
                if t.vs_sham.is_some() {
                    " (and from its sham)"
                } else {
                    ""
                }
            ),
        };
    }
    let words = count_words(cell.k, cell.n, cell.low, cell.high, report.confidence);
    let versus = match (&cell.vs_baseline, base) {
        (Some(v), Some(b)) => format!(
            " vs baseline {}; {}, Holm-adjusted p={}",
            count_words(b.k, b.n, b.low, b.high, report.confidence),
            if v.differs {
                "differs"
            } else if v.undecided.is_some() {
                "undecided (a raw difference the correction leaves short)"
            } else {
                "no difference shown"
            },
            short_p(v.adjusted_p)
        ),
        _ => " (not compared with a baseline)".to_string(),
    };
    EvidenceRow {
        cell: Some(cell.name.clone()),
        rung,
        count: Count {
            k: cell.k,
            n: cell.n,
        },
        baseline: cell
            .vs_baseline
            .as_ref()
            .and(base)
            .map(|b| Count { k: b.k, n: b.n }),
        interval: crate::report::interval_text(cell),
        p: cell.vs_baseline.as_ref().map(|v| v.adjusted_p),
        timeouts: false,
        text: format!("`{}`{at}: {words}{versus}", cell.name),
    }
}

fn rung_row(rung: &RungResult, confidence: f64) -> EvidenceRow {
    let words = count_words(rung.k, rung.n, rung.low, rung.high, confidence);
    let p = rung
        .baseline
        .map(|b| stats::fisher_exact(rung.k, rung.n - rung.k, b.k, b.n - b.k));
    let versus = match (rung.baseline, p) {
        (Some(b), Some(p)) => format!(
            " vs baseline {} at the same rung, Fisher p={}",
            count_words(b.k, b.n, b.low, b.high, confidence),
            short_p(p)
        ),
        _ => String::new(),
    };
    EvidenceRow {
        cell: None,
        rung: Some(rung.rung),
        count: Count {
            k: rung.k,
            n: rung.n,
        },
        baseline: rung.baseline.map(|b| Count { k: b.k, n: b.n }),
        interval: if rung.k == 0 {
            stats::format_bound(rung.high)
        } else {
            format!("[{:.3}, {:.3}]", rung.low, rung.high)
        },
        p,
        timeouts: false,
        text: format!(
            "ladder rung {} ({}: {}): reproductions {words}{versus}",
            rung.rung, rung.name, rung.topology
        ),
    }
}

/// What the evidence says about each class.
pub fn classify(
    report: &Report,
    session_rung: Option<u8>,
    ladder: Option<&LadderRecord>,
    start: Option<jiff::Timestamp>,
) -> Classification {
    use FlakeClass::*;
    let mut out = Classification::default();
    let base = report.cells.iter().find(|c| c.name == "baseline");
    // A sham applies no declared condition: it can show no class (it only
    // tells whether the mechanism alone moves the outcome).
    let others: Vec<&CellReport> = report
        .cells
        .iter()
        .filter(|c| c.name != "baseline" && c.sham_of.is_none())
        .collect();
    let zone_cells = of_role(&others, Role::Zone);
    let load_cells = of_role(&others, Role::Load);
    let beside = |cells: &[&'_ CellReport]| -> (bool, Option<String>, bool) {
        (
            !cells.is_empty(),
            cells
                .iter()
                .find(|c| clean(c, base, report.confidence))
                .map(|c| c.name.clone()),
            cells.iter().any(|c| differs(c)),
        )
    };
    let zone = beside(&zone_cells);
    let load = beside(&load_cells);
    // The clock cells that ran clean with power: what a clock past an
    // instant is told against.
    let clean_clocks: Vec<(String, String)> = of_role(&others, Role::Clock)
        .into_iter()
        .filter(|c| clean(c, base, report.confidence))
        .flat_map(|c| {
            kinds(c).into_iter().filter_map(|k| {
                if let Kind::Faketime { clock } = k {
                    Some((c.name.clone(), clock))
                } else {
                    None
                }
            })
        })
        .collect();
    let baseline_clean = base.is_some_and(|b| b.n > 0 && b.k == 0);

    let claim = |out: &mut Classification, class, row: EvidenceRow, because: String| {
        if !out
            .claimed
            .iter()
            .any(|f| f.class == class && f.row.cell == row.cell && f.row.rung == row.rung)
        {
            out.claimed.push(Finding {
                class,
                row,
                because,
            });
        }
    };
    let open = |out: &mut Classification, class, why: String| {
        if !out.not_determinable.iter().any(|o| o.class == class) {
            out.not_determinable.push(Open { class, why });
        }
    };

    for cell in others.iter().filter(|c| differs(c)) {
        let ks = kinds(cell);
        let combined = if ks.len() > 1 {
            " The cell combines several perturbations: this row cannot say which one owns the difference."
        } else {
            ""
        };
        let row = || cell_row(report, cell, session_rung);
        let text = row().text;
        // What the failures say: the cell's signatures, then its
        // differing test's.
        let failures: Vec<String> = cell
            .signatures
            .iter()
            .chain(differing_test(cell).into_iter().flat_map(|t| &t.signatures))
            .map(|s| s.signature.clone())
            .collect();
        let seen = Seen {
            cell: &cell.name,
            start,
            combined,
            baseline_clean,
            zone: Beside {
                clean: zone.1.as_deref(),
                differs: zone.2,
            },
            load: Beside {
                clean: load.1.as_deref(),
                differs: load.2,
            },
            clean_clocks: &clean_clocks,
            failures: &failures,
            row: &text,
        };
        let mut mapped = false;
        for k in &ks {
            for reading in kind::read(k, &seen) {
                mapped = true;
                match reading {
                    Reading::Claim(class, because) => claim(&mut out, class, row(), because),
                    Reading::Open(class, why) => open(&mut out, class, why),
                }
            }
        }
        if !mapped {
            out.unmapped.push(format!(
                "`{}` differs from the baseline, but its perturbation names no flake class: {}",
                cell.name,
                cell_row(report, cell, session_rung).text
            ));
        }
    }

    if let Some(ladder) = ladder {
        for rung in &ladder.rungs {
            if rung.status != RungStatus::Reproduced {
                continue;
            }
            let row = rung_row(rung, ladder.confidence);
            match rung.rung {
                2 => {
                    let shuffle = of_role(&others, Role::Order);
                    let tell = if shuffle.is_empty() {
                        " A shuffle cell would tell the two apart."
                    } else {
                        ""
                    };
                    claim(&mut out, OrderDependence, row.clone(), format!(
                        "it reproduces with its neighbours under one runner and not alone (rung 1): tests interfere when scheduled together.{tell}"
                    ));
                    claim(&mut out, IncompleteLifecycle, row, format!(
                        "it reproduces with its neighbours under one runner and not alone: an earlier test's children, servers or callbacks may outlive its teardown.{tell}"
                    ));
                }
                3 | 5 => {
                    claim(&mut out, HostResourceCollision, row, format!(
                        "separate runner processes reproduce it while one invocation did not: the contested thing is on the host, not in one process's state ({})",
                        rung.shows
                    ));
                }
                1 => out.notes.push(format!(
                    "{}: the failure needs no concurrency; the owner is the product, the platform, or a wait that never observes readiness",
                    row.text
                )),
                _ => out.notes.push(format!(
                    "{}: {}; which resource is contended is not determined",
                    row.text, rung.shows
                )),
            }
        }
    }

    // Unseeded randomness: the baseline itself.
    let randomness_claimed = out.claimed.iter().any(|f| f.class == UnseededRandomness);
    if !randomness_claimed {
        match base {
            Some(b) if b.n > 0 && b.k > 0 => {
                let any_differs = others.iter().any(|c| differs(c));
                if !any_differs && b.signatures.len() >= 2 {
                    let mut row = cell_row(report, b, session_rung);
                    row.text = format!(
                        "`baseline`: {} with {} distinct failure signatures and no cell differing",
                        count_words(b.k, b.n, b.low, b.high, report.confidence),
                        b.signatures.len()
                    );
                    out.claimed.push(Finding {
                        class: UnseededRandomness,
                        row,
                        because: "the unperturbed command fails at a rate, no perturbation moves that rate, and the failures do not repeat one signature: a candidate, to be settled by seeding the generator".into(),
                    });
                } else {
                    open(
                        &mut out,
                        UnseededRandomness,
                        format!(
                            "the baseline fails {} of its {} runs{}, but {}",
                            b.k,
                            b.n,
                            match session_rung {
                                // A group of processes is one run of the ladder's table.
                                Some(r @ (3 | 5)) => format!(
                                    " at ladder rung {r} (each process a run; the ladder's table counts groups of processes started together)"
                                ),
                                Some(r) => format!(" at ladder rung {r}"),
                                None => String::new(),
                            },
                            if any_differs {
                                "a perturbed cell differs, which explains failures better"
                            } else {
                                "every failure has the same signature"
                            }
                        ),
                    );
                }
            }
            Some(b) if b.n > 0 => {
                let mut row = cell_row(report, b, session_rung);
                row.text = format!(
                    "`baseline`: {}",
                    count_words(b.k, b.n, b.low, b.high, report.confidence)
                );
                out.against.push(Finding {
                    class: UnseededRandomness,
                    row,
                    because: "a random outcome would show in the unperturbed runs too; none failed"
                        .into(),
                });
            }
            _ => open(
                &mut out,
                UnseededRandomness,
                "no baseline runs were measured".into(),
            ),
        }
    }

    // A cell that differs from the baseline but not from its sham proves
    // nothing about its parameter: what it would claim stays open.
    let by_mechanism: Vec<&CellReport> = others
        .iter()
        .copied()
        .filter(|c| {
            c.sham.is_some()
                && differs(c)
                && !crate::report::sham::attributed(c)
                && differing_test(c).is_none()
        })
        .collect();
    for cell in by_mechanism {
        let sham = cell.sham.as_deref().unwrap_or("");
        let (k, n) = report
            .cells
            .iter()
            .find(|c| c.name == sham)
            .map_or((0, 0), |s| (s.k, s.n));
        let (moved, kept): (Vec<Finding>, Vec<Finding>) = std::mem::take(&mut out.claimed)
            .into_iter()
            .partition(|f| f.row.cell.as_deref() == Some(cell.name.as_str()));
        out.claimed = kept;
        for f in moved {
            open(&mut out, f.class, format!(
                "{} differs from the baseline but not from its sham `{sham}` ({k} of {n}): the mechanism alone may reproduce it",
                cell.name
            ));
        }
    }

    // Against: clean cells and clean rungs of classes nothing claimed.
    let claimed: Vec<FlakeClass> = out.claimed.iter().map(|f| f.class).collect();
    for cell in others.iter().filter(|c| leaning(c, base)) {
        let mut classes: Vec<FlakeClass> = kinds(cell)
            .iter()
            .flat_map(|k| examines(k, start))
            .collect();
        classes.dedup();
        for class in classes {
            if claimed.contains(&class) {
                continue;
            }
            let why = format!(
                "{}; the difference does not reach {} confidence: more runs would settle it",
                cell_row(report, cell, session_rung).text,
                pct(report.confidence)
            );
            out.not_determinable.push(Open { class, why });
        }
    }
    for cell in others
        .iter()
        .filter(|c| quiet(c, base) && !could_show(c, base, report.confidence))
    {
        for class in kinds(cell).iter().flat_map(|k| examines(k, start)) {
            if claimed.contains(&class) || class == UnseededRandomness {
                continue;
            }
            open(&mut out, class, format!(
                "{}: at this N no outcome of the cell could differ from the baseline at {} confidence, so it argues against nothing; more runs would",
                cell_row(report, cell, session_rung).text,
                pct(report.confidence)
            ));
        }
    }
    for cell in others.iter().filter(|c| clean(c, base, report.confidence)) {
        let mut classes: Vec<FlakeClass> = kinds(cell)
            .iter()
            .flat_map(|k| examines(k, start))
            .collect();
        classes.dedup();
        for class in classes {
            if claimed.contains(&class) || class == UnseededRandomness {
                continue;
            }
            out.against.push(Finding {
                class,
                row: cell_row(report, cell, session_rung),
                because: format!(
                    "this cell applies what {} would react to, and it shows no difference from the baseline at an N that could have shown one ({})",
                    class.label(),
                    count_words(cell.k, cell.n, cell.low, cell.high, report.confidence)
                ),
            });
        }
    }
    if let Some(ladder) = ladder {
        for rung in ladder
            .rungs
            .iter()
            .filter(|r| r.status == RungStatus::Clean)
        {
            // Beside the rung's own baseline, only with the power to
            // differ at its N (without one, as the ladder judged it).
            let alpha = 1.0 - ladder.confidence;
            let power = rung.baseline.is_none_or(|b| {
                rung.n > 0 && b.k < b.n && stats::fisher_exact(rung.n, 0, b.k, b.n - b.k) < alpha
            });
            for class in rung_examines(rung.rung) {
                if claimed.contains(&class) {
                    continue;
                }
                let row = rung_row(rung, ladder.confidence);
                if !power {
                    open(&mut out, class, format!(
                        "{}: at this N no count of the rung could differ from its baseline at {} confidence, so it argues against nothing; more runs would",
                        row.text,
                        pct(ladder.confidence)
                    ));
                    continue;
                }
                out.against.push(Finding {
                    class,
                    row,
                    because: format!(
                        "this topology is where {} would reproduce, and it ran clean ({})",
                        class.label(),
                        count_words(rung.k, rung.n, rung.low, rung.high, ladder.confidence)
                    ),
                });
            }
        }
    }
    if let Some(h) = &report.ci_history {
        from_history(&mut out, h, report.confidence);
    }
    // A class both claimed elsewhere and open is claimed.
    out.not_determinable
        .retain(|o| !out.claimed.iter().any(|f| f.class == o.class));
    out.claimed.sort_by_key(|f| f.class);
    out.against.sort_by_key(|f| f.class);
    out.not_determinable.sort_by_key(|o| o.class);
    out
}

/// The classes only CI history speaks to: a test of the session split by
/// context on one commit claims a platform or entry-path mismatch (the
/// failing contexts' runs against the passing ones'); reports with trouble
/// outside any test case claim runner infrastructure (reports with it
/// against all reports).
fn from_history(out: &mut Classification, h: &crate::report::beside::CiHistory, confidence: f64) {
    for m in &h.mismatches {
        let k: u64 = m.failing.iter().map(|(_, n)| n).sum();
        let n: u64 = m.passing.iter().map(|(_, n)| n).sum();
        let p = stats::proportion(k, k, confidence);
        out.claimed.push(Finding {
            class: FlakeClass::PlatformOrEntryPath,
            row: EvidenceRow {
                cell: None,
                rung: None,
                count: Count { k, n: k },
                baseline: Some(Count { k: 0, n }),
                interval: count_words(k, k, p.low, p.high, confidence),
                p: m.concentrated.as_ref().map(|a| a.p),
                timeouts: false,
                text: crate::report::beside::mismatch_text(m),
            },
            because: "on one commit (the same code and the same test command) one context failed in every run and another passed in every run: the outcome follows the platform or the entry path, deterministic within each, not chance".to_string(),
        });
    }
    if !h.infrastructure.is_empty() {
        let k = h.infrastructure.len() as u64;
        out.claimed.push(Finding {
            class: FlakeClass::RunnerInfrastructure,
            row: EvidenceRow {
                cell: None,
                rung: None,
                count: Count { k, n: h.reports },
                baseline: None,
                interval: String::new(),
                p: None,
                timeouts: false,
                text: format!(
                    "CI history: {k} of {} report(s) show trouble outside any test case: {}",
                    h.reports,
                    h.infrastructure.join("; ")
                ),
            },
            because: "direct evidence in the ingested reports: an unreadable report, or an error no test case holds, is the runner's or the harness's, not a test's".to_string(),
        });
    }
}

/// Per class: which cells and rungs examined it, with how many runs; which
/// were planned but not applied; or that nothing did.
pub fn coverage(
    report: &Report,
    ladder: Option<&LadderRecord>,
    start: Option<jiff::Timestamp>,
) -> Vec<CoverageRow> {
    FlakeClass::ALL
        .iter()
        .map(|&class| {
            if class.history_only() {
                let coverage = match &report.ci_history {
                    Some(h) => Coverage::Checked {
                        cells: vec![format!("CI history ({} report(s))", h.reports)],
                        n: h.reports,
                        not_applied: Vec::new(),
                    },
                    None => Coverage::NotTested {
                        try_with: class.how_to_test().to_string(),
                    },
                };
                return CoverageRow { class, coverage };
            }
            let mut cells = Vec::new();
            let mut n = 0;
            let mut not_applied = Vec::new();
            for c in &report.cells {
                let examined = if c.name == "baseline" {
                    class == FlakeClass::UnseededRandomness
                } else if c.sham_of.is_some() {
                    // A sham applies no condition a class would react to.
                    false
                } else {
                    kinds(c).iter().any(|k| examines(k, start).contains(&class))
                };
                if !examined {
                    continue;
                }
                if measured(c) {
                    cells.push(c.name.clone());
                    n += c.n + c.timed_out;
                } else {
                    let why = if c.applied {
                        "nothing was measured (every run errored)".to_string()
                    } else {
                        c.reason
                            .clone()
                            .unwrap_or_else(|| "no reason recorded".into())
                    };
                    not_applied.push(format!("`{}`: {why}", c.name));
                }
            }
            if let Some(ladder) = ladder {
                for r in ladder
                    .rungs
                    .iter()
                    .filter(|r| rung_examines(r.rung).contains(&class))
                {
                    match r.status {
                        RungStatus::Clean | RungStatus::Reproduced => {
                            cells.push(format!("ladder rung {}", r.rung));
                            n += r.n;
                        }
                        RungStatus::NotRun => {}
                        _ => not_applied.push(format!(
                            "ladder rung {}: {}",
                            r.rung,
                            r.reason.as_deref().unwrap_or("not measured")
                        )),
                    }
                }
            }
            let coverage = if !cells.is_empty() {
                Coverage::Checked {
                    cells,
                    n,
                    not_applied,
                }
            } else if !not_applied.is_empty() {
                Coverage::NotApplied {
                    reason: not_applied.join("; "),
                }
            } else {
                Coverage::NotTested {
                    try_with: class.how_to_test().to_string(),
                }
            };
            CoverageRow { class, coverage }
        })
        .collect()
}

/// The coverage status in words: `checked (cells, N)`, `not applied
/// (reason)` or `not tested`.
pub fn coverage_text(c: &Coverage) -> String {
    match c {
        Coverage::Checked {
            cells,
            n,
            not_applied,
        } => format!(
            "checked ({}; N = {n}){}",
            cells
                .iter()
                .map(
                    |c| if c.starts_with("ladder") || c.starts_with("CI history") {
                        c.clone()
                    } else {
                        format!("`{c}`")
                    }
                )
                .collect::<Vec<_>>()
                .join(", "),
            if not_applied.is_empty() {
                String::new()
            } else {
                format!("; not applied: {}", not_applied.join("; "))
            }
        ),
        Coverage::NotApplied { reason } => format!("not applied ({reason})"),
        Coverage::NotTested { try_with } => format!("not tested — try {try_with}"),
    }
}

#[cfg(test)]
#[path = "classify_tests.rs"]
pub(super) mod tests;
