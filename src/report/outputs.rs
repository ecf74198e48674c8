//! The outputs that leave stdout: GitHub Actions' step summary and its
//! artifacts (`--format github`, `--summary auto`). The text comes from
//! [`super::github`] and [`super::html`]; this writes the files.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::{self as report, Report};
use crate::cli::SummaryMode;
use crate::redact::Redaction;

/// The directory the plot and the HTML report are written to, for the
/// workflow to upload as an artifact.
pub(crate) const ARTIFACT_DIR: &str = "flakelab-report";

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Writes the forest plot (SVG) and the HTML report into [`ARTIFACT_DIR`];
/// returns the plot's link (None when the directory cannot be written:
/// said on stderr, the summary then goes without it).
fn write_artifacts(report: &Report, redaction: &Redaction) -> Option<report::github::PlotLink> {
    let dir = PathBuf::from(ARTIFACT_DIR);
    let svg = dir.join(format!("{}-forest.svg", report.session));
    let html = dir.join(format!("{}.html", report.session));
    let written = std::fs::create_dir_all(&dir)
        .and_then(|_| {
            std::fs::write(
                &svg,
                redaction
                    .text(&report::html::cells_plot(report, true))
                    .as_bytes(),
            )
        })
        .and_then(|_| {
            std::fs::write(
                &html,
                redaction.text(&report::html::render(report)).as_bytes(),
            )
        });
    match written {
        Ok(()) => Some(report::github::PlotLink {
            path: svg.display().to_string(),
            url: report::github::artifacts_url(var),
        }),
        Err(e) => {
            eprintln!(
                "flakelab: cannot write the report's artifacts to {}: {e} (the summary goes without its plot)",
                dir.display()
            );
            None
        }
    }
}

/// Appends `text` to the step summary file.
fn append(path: &Path, text: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(text.as_bytes())
}

/// `--format github`: the annotations for stdout, and the step summary
/// appended to $GITHUB_STEP_SUMMARY (printed after the annotations when the
/// variable is unset).
pub(crate) fn github(report: &Report, redaction: &Redaction) -> String {
    let plot = write_artifacts(report, redaction);
    let summary = report::github::summary(report, plot.as_ref());
    let mut out = report::github::annotations(report);
    match var("GITHUB_STEP_SUMMARY") {
        Some(path) => {
            if let Err(e) = append(Path::new(&path), &redaction.text(&summary)) {
                eprintln!("flakelab: cannot append to GITHUB_STEP_SUMMARY ({path}): {e}");
            }
        }
        None => {
            out.push('\n');
            out.push_str(&summary);
        }
    }
    out
}

/// `--summary auto` beside another format: when $GITHUB_STEP_SUMMARY is
/// set, the step summary is appended to it and the annotations go to
/// stderr (stdout keeps the format asked for; Actions reads workflow
/// commands from both).
pub(crate) fn auto_summary(report: &Report, mode: SummaryMode, redaction: &Redaction) {
    if mode != SummaryMode::Auto {
        return;
    }
    let Some(path) = var("GITHUB_STEP_SUMMARY") else {
        return;
    };
    let plot = write_artifacts(report, redaction);
    let summary = report::github::summary(report, plot.as_ref());
    if let Err(e) = append(Path::new(&path), &redaction.text(&summary)) {
        eprintln!("flakelab: cannot append to GITHUB_STEP_SUMMARY ({path}): {e}");
    }
    eprint!("{}", redaction.text(&report::github::annotations(report)));
}
