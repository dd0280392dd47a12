//! Summaries of a finished run, computed from `outcomes.parquet` alone: pass rates with 95%
//! intervals, rounds used, exit reasons, critic-error rates, and paired comparisons of arms on the
//! same task × epoch.
//!
//! The outcomes are streamed a batch at a time with a column projection and folded into running
//! sums; each task's loops are held only until they have all arrived. A task's epochs are one
//! cluster: with one epoch the intervals are Wilson's and the test is McNemar's exact test; with
//! several, intervals are a task-cluster bootstrap and the test an exact sign test on tasks. The
//! results depend only on the rows, not on their order.
//!
//! Writes `summary.csv`, `summary.json`, `comparisons.csv`, `config_comparisons.csv` (grid
//! neighbours compared unit by unit), `report.md` and `report.html` (the same
//! with inline SVG charts) into the run directory.
//!
//! ```no_run
//! let report = critbench_report::write_reports("reports/demo".as_ref()).unwrap();
//! for row in &report.summary {
//!     println!("{} {} {}: {:.1}%", row.config_id, row.critic, row.arm, 100.0 * row.pass_rate);
//! }
//! ```

pub mod backend;
pub mod compare;
pub mod configs;
mod html;
mod markdown;
pub mod show;
pub mod stats;
mod summary;

pub use html::escape as escape_html;
pub use markdown::{glance_table, render_markdown, summary_table};
pub use summary::{
    ADJUDICATED_SUFFIX, BOOTSTRAP_RESAMPLES, ComparisonRow, INTERVAL_TASK_BOOTSTRAP, INTERVAL_WILSON, KindReport,
    Report, SummaryRow, TEST_MCNEMAR, TEST_SIGN, build_report, summarize_file, summarize_files,
};

use std::path::{Path, PathBuf};

/// Why reports could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{} is not a run directory: {reason}\n  hint: pass the directory a `critbench run` wrote (it holds outcomes.parquet)", path.display())]
    NotARun { path: PathBuf, reason: String },
    #[error("{0}")]
    Corrupt(String),
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
}

impl ReportError {
    /// Missing or corrupt inputs are the user's to fix; a failed write is not.
    pub fn is_usage(&self) -> bool {
        !matches!(self, ReportError::Write { .. })
    }
}

/// The files of `table` (`"outcomes"`, `"trajectories"`) of the run in `run_dir`, whether it was
/// run in one piece or in shards (then merged): an error when there are none, or when the shards
/// are not merged yet.
pub fn table_files(run_dir: &Path, table: &str) -> Result<Vec<PathBuf>, ReportError> {
    if !run_dir.is_dir() {
        return Err(ReportError::NotARun { path: run_dir.into(), reason: "no such directory".into() });
    }
    if let Some(reason) = critbench_storage::manifest::unmerged(run_dir) {
        return Err(ReportError::NotARun { path: run_dir.into(), reason });
    }
    let files = critbench_storage::shards::table_files(run_dir, table);
    if files.is_empty() {
        return Err(ReportError::NotARun { path: run_dir.into(), reason: format!("{table}.parquet is missing") });
    }
    Ok(files)
}

/// Reads the run directory's outcomes (streaming, a batch at a time) and manifest (for names,
/// order and how many loops each task has) and writes every summary file. Returns what it wrote.
pub fn write_reports(run_dir: &Path) -> Result<Report, ReportError> {
    let outcomes = table_files(run_dir, "outcomes")?;
    let manifest =
        critbench_storage::manifest::Manifest::read(run_dir).map_err(|e| ReportError::Corrupt(e.to_string()))?;
    let mut report = summarize_files(&outcomes, manifest.as_ref())?;
    report.backend = backend::Backend::read(run_dir, manifest.as_ref())?;
    // What the backend cannot measure comes first: it says how to read everything else.
    let mut notes: Vec<String> = report.backend.notices(0.0).iter().map(|n| as_note(n)).collect();
    notes.append(&mut report.notes);
    report.notes = notes;
    summary::write_files(run_dir, &report)?;
    let neighbours = configs::neighbour_comparisons(&outcomes, manifest.as_ref())?;
    configs::write_file(run_dir, &neighbours)?;
    // The pairs behind the first comparison of two arms as they ran (an adjudicated twin is not an
    // arm of the outcomes file), for a reader to open one by one.
    let pairs = match report.comparisons.iter().find(|c| c.between_arms_that_ran()) {
        Some(c) => Some(show::ListedPairs::read(run_dir, &report, &c.arm_a, &c.arm_b)?),
        None => None,
    };
    let markdown = markdown::render_with_pairs(&report, pairs.as_ref());
    let path = run_dir.join("report.md");
    std::fs::write(&path, markdown).map_err(|source| ReportError::Write { path, source })?;
    html::write_html(run_dir, &report, manifest.as_ref(), pairs.as_ref())?;
    Ok(report)
}

/// A notice as a note of the reports: a sentence.
fn as_note(notice: &str) -> String {
    let mut chars = notice.chars();
    let first: String = chars.next().map(|c| c.to_uppercase().collect()).unwrap_or_default();
    format!("{first}{}.", chars.as_str())
}

/// The values in the order they first appear, each once (tables and charts list configs, critics
/// and arms so; the lists are short, so a scan beats hashing).
pub(crate) fn unique<T: PartialEq>(values: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut seen: Vec<T> = Vec::new();
    for value in values {
        if !seen.contains(&value) {
            seen.push(value);
        }
    }
    seen
}
