//! Summaries of a finished run, computed from `outcomes.parquet` alone: pass rates with 95%
//! intervals, rounds used, exit reasons, critic-error rates, and paired comparisons of arms on the
//! same task × epoch.
//!
//! The outcomes are streamed a batch at a time with a column projection and folded into running
//! sums; each task's loops are held only until they have all arrived. A task's epochs are one
//! cluster, and every interval is the one valid at the number of tasks it rests on (computed by
//! `stats`: Wilson or the task-cluster bootstrap on many tasks, Clopper–Pearson and exact paired
//! intervals on few), with the test that is its dual; a difference zero by construction is said to
//! be so. The results depend only on the rows, not on their order.
//!
//! Every rate and comparison is read by each judge the run has (`judges`): the steering critic and
//! each held-out evaluator, in one pass over the outcomes, each file with a `judge` column; the
//! answer (`answer`) leads the terminal and `report.md` by the most independent of them.
//!
//! A [`Report`] is made of its sections, each computed and written by its own module: the summary
//! (`summary`), how many tasks each comparison needs (`power`), what held-out evaluators say of the
//! same answers (`evaluators`), what the backend cannot measure (`backend`) and a sequential run's
//! looks (`sequential`). `report.md` and `report.html` render them all (`markdown`, `html`).
//!
//! Writes `summary.csv`, `summary.json`, `comparisons.csv`, `cost_curves.csv` and
//! `cost_comparisons.csv` (pass rate against spend, and arms at equal spend: `spend`),
//! `config_comparisons.csv` (grid neighbours compared unit by unit), `report.md` and `report.html` (the same
//! with inline SVG charts) into the run directory; given a labelled sample of the run's answers
//! (`gold`), also `corrected.csv` and `corrected_comparisons.csv`, the pass rates and differences
//! corrected by the labels.
//! Also `power.csv`: how many tasks each paired comparison needs; and for a sequential run,
//! `sequential.csv`, every look of its confidence sequences (`sequential`).
//!
//! ```no_run
//! let report = critbench_report::write_reports("reports/demo".as_ref()).unwrap();
//! for row in &report.summary.rows {
//!     println!("{} {} {}: {:.1}%", row.config_id, row.critic, row.arm, 100.0 * row.pass_rate);
//! }
//! ```

#![warn(missing_docs)]

mod answer;
pub mod backend;
pub mod compare;
pub mod configs;
mod csv_files;
mod error;
pub mod evaluators;
mod experiment;
mod format;
pub mod gold;
mod headline;
mod html;
pub mod judges;
mod keys;
pub mod ladder;
mod markdown;
pub mod outputs;
pub mod power;
pub mod queries;
mod report;
mod rows;
mod run_tables;
pub mod sequential;
pub mod show;
pub mod spend;
mod summary;
mod totals;
pub mod trouble;

pub use error::{QueryError, ReportError, RowError, WantedKey};
pub use format::money as format_money;
pub use html::escape as escape_html;
pub use markdown::{GLANCE_HEADER, glance_legend, glance_table, render_markdown, summary_table, terminal};
pub use report::Report;
pub use rows::{ADJUDICATED_SUFFIX, BOOTSTRAP_RESAMPLES, ComparisonRow, IDENTICAL_BY_DESIGN, SummaryRow};
pub use run_tables::{check_tables, table_files};
pub use summary::{KindReport, Partial, Summary};

use std::path::{Path, PathBuf};

use critbench_storage::manifest::Manifest;
use critbench_storage::tables::OutcomeRow;

/// Groups outcomes into the summary and the pairwise comparisons (the rows in memory; the
/// streaming path is [`summarize_file`]).
pub fn build_report(outcomes: &[OutcomeRow], manifest: Option<&Manifest>) -> Result<Report, RowError> {
    summary::summarize_rows(outcomes, manifest).map(Report::summarized)
}

/// Streams `outcomes.parquet` (a projection of the columns summaries need, a batch at a time)
/// into a [`Report`].
pub fn summarize_file(path: &Path, manifest: Option<&Manifest>) -> Result<Report, ReportError> {
    summarize_files(&[path.to_path_buf()], manifest)
}

/// [`summarize_file`] of one table kept in several files (a sharded run's partitions), streamed
/// one after the other.
pub fn summarize_files(paths: &[PathBuf], manifest: Option<&Manifest>) -> Result<Report, ReportError> {
    summary::summarize_files(paths, manifest).map(Report::summarized)
}

/// Reads the run directory's outcomes (streaming, a batch at a time) and manifest (for names,
/// order and how many loops each task has) and writes every summary file, once its tables are
/// checked against its manifest. Returns what it wrote.
pub fn write_reports(run_dir: &Path) -> Result<Report, ReportError> {
    write_reports_with_labels(run_dir, None)
}

/// [`write_reports`], and with `labels` (a sample `critbench sample` drew from this run, every
/// answer labelled) also `corrected.csv`, `corrected_comparisons.csv` and the "Corrected by gold
/// labels" section of `report.md` and `report.html`. The labels are checked before anything is
/// written, so a file that is refused leaves the run directory as it was.
pub fn write_reports_with_labels(run_dir: &Path, labels: Option<&Path>) -> Result<Report, ReportError> {
    table_files(run_dir, "outcomes")?;
    check_tables(run_dir)?;
    write_all(run_dir, labels)
}

/// [`write_reports`] without checking the tables: for the command that has just written them.
pub fn write_reports_trusted(run_dir: &Path) -> Result<Report, ReportError> {
    write_all(run_dir, None)
}

fn write_all(run_dir: &Path, labels: Option<&Path>) -> Result<Report, ReportError> {
    let outcomes = table_files(run_dir, "outcomes")?;
    let manifest = critbench_storage::manifest::Manifest::read(run_dir)?;
    let labels = labels.map(|path| gold::read_labels(run_dir, path)).transpose()?;
    // The summary's pass over the outcomes, the trajectories' passes and the listed pairs' pass do
    // not depend on one another, so they run side by side; their results are used, and their
    // errors returned, in the order the files are written, as if each ran in turn.
    let guessed_arms = summary::first_compared_arms(manifest.as_ref());
    let evaluations = critbench_storage::shards::table_files(run_dir, "evaluations");
    let verdicts = queries::judge_verdicts::JudgeVerdicts::read(&evaluations)
        .map_err(|(path, source)| ReportError::Table { path, source })?;
    let (summarized, trajectories, guessed_pairs) = std::thread::scope(|scope| {
        let trajectories = scope.spawn(|| {
            let backend = backend::Backend::read(run_dir, manifest.as_ref());
            let rounds = html::read_rounds(run_dir);
            (backend, rounds)
        });
        let outcomes = &outcomes;
        let pairs = guessed_arms
            .as_ref()
            .map(|(a, b)| scope.spawn(move || (a, b, show::ListedPairs::read_unordered(outcomes, a, b))));
        // Tokens are counted only where a model wrote or judged: an offline run has none to read.
        // A held-out judge reads what a capped loop answers by the critic's scores of every loop.
        let counted = manifest.as_ref().is_some_and(|m| m.openai.is_some());
        let verdicts = &verdicts;
        let summarized = (|| {
            let spends = if counted || !verdicts.is_empty() {
                let files = critbench_storage::shards::table_files(run_dir, "trajectories");
                let spends = queries::round_spend::read_round_spends(&files, !verdicts.is_empty())
                    .map_err(|source| ReportError::Table { path: files.first().cloned().unwrap_or_default(), source });
                Some(spends?)
            } else {
                None
            };
            summary::summarize_judged(outcomes, manifest.as_ref(), spends, verdicts)
        })();
        (summarized, joined(trajectories), pairs.map(joined))
    });
    let (backend, rounds) = trajectories;
    let (summary, power, held_out) = summarized?;
    let mut report = Report { held_out, ..Report::summarized((summary, power)) };
    let corrected =
        labels.map(|labels| gold::Corrected::compute(&outcomes, manifest.as_ref(), &labels, &report)).transpose()?;
    report.backend = backend?;
    report.sequential = manifest.as_ref().and_then(|m| m.sequential.clone());
    report.trouble = manifest.as_ref().map(trouble::notices).unwrap_or_default();
    report.rescored_by = manifest.as_ref().and_then(trouble::new_rescoring_critic).map(String::from);
    // What the backend cannot measure comes first: it says how to read everything else.
    let mut notes: Vec<String> = report.backend.notices(0.0).iter().map(|n| format::as_note(n)).collect();
    notes.append(&mut report.summary.notes);
    report.summary.notes = notes;
    report.evaluators = evaluators::read(run_dir, manifest.as_ref())?;
    report.config_comparisons = configs::neighbour_comparisons(&outcomes, manifest.as_ref(), &verdicts)?;
    summary::write_files(run_dir, &report.summary, &report.held_out)?;
    csv_files::write_csv(&run_dir.join(outputs::LADDER_CSV), &ladder::rows(&report))?;
    report.write_json(run_dir)?;
    if let Some(evaluated) = &report.evaluators {
        evaluators::write_files(run_dir, evaluated)?;
    }
    let power: Vec<&power::PowerRow> =
        report.power.iter().chain(report.held_out.iter().flat_map(|j| &j.power)).collect();
    power::write_file(run_dir, &power)?;
    if let Some(record) = &report.sequential {
        sequential::write_file(run_dir, record)?;
    }
    configs::write_file(run_dir, &report.config_comparisons)?;
    // The pairs behind the first comparison of two arms as they ran (an adjudicated twin is not an
    // arm of the outcomes file), for a reader to open one by one: those read beside the summary
    // when its arms were the ones guessed, else read now.
    let pairs = match report.summary.comparisons.iter().find(|c| c.between_arms_that_ran()) {
        Some(c) => Some(match guessed_pairs {
            Some((a, b, read)) if (a, b) == (&c.arm_a, &c.arm_b) => read?.ordered(&report),
            _ => show::ListedPairs::read(&outcomes, &report, &c.arm_a, &c.arm_b)?,
        }),
        None => None,
    };
    let markdown = markdown::render_with_sections(&report, pairs.as_ref(), corrected.as_ref());
    let path = run_dir.join(outputs::REPORT_MD);
    critbench_storage::files::write_atomically(&path, markdown.as_bytes())
        .map_err(|source| ReportError::Write { path, source })?;
    html::write_html(run_dir, &report, manifest.as_ref(), rounds?, pairs.as_ref(), corrected.as_ref())?;
    if let Some(corrected) = &corrected {
        corrected.write_files(run_dir)?;
    }
    Ok(report)
}

/// The result of a scoped thread; its panic, if it panicked, goes on in this one.
fn joined<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

#[cfg(test)]
mod tests {
    use std::error::Error;

    use super::*;

    /// A table that is not Parquet: the report's error says what storage said, word for word, and
    /// keeps storage's error (and Parquet's beneath it) as its cause.
    #[test]
    fn a_storage_cause_is_reachable_through_source() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("outcomes.parquet");
        std::fs::write(&path, b"not parquet").unwrap();
        let error = summarize_file(&path, None).unwrap_err();
        let cause = error.source().expect("a cause");
        let storage = cause.downcast_ref::<critbench_storage::tables::StorageError>().expect("storage's error");
        assert!(matches!(storage, critbench_storage::tables::StorageError::Unreadable { .. }), "{storage:?}");
        assert_eq!(error.to_string(), storage.to_string());
        assert!(error.to_string().starts_with(&format!("{}: not a readable Parquet file", path.display())), "{error}");
        assert!(cause.source().is_some(), "Parquet's error beneath storage's");
    }

    /// What the user asked that the run cannot answer is its own kind of error, still exit 2.
    #[test]
    fn a_query_the_run_cannot_answer_is_not_corruption() {
        let error = ReportError::from(QueryError::NoArm { arm: "single".into(), arms: vec!["feedback".into()] });
        assert_eq!(error.to_string(), "the run has no arm `single`; its arms are feedback");
        assert!(error.is_usage());
        let wanted = |flag, given: &str, has: Option<&[&str]>| WantedKey {
            flag,
            given: given.into(),
            has: has.map(|has| has.iter().map(|v| v.to_string()).collect()),
        };
        let error = QueryError::NoLoop {
            task: "t1".into(),
            wanted: vec![wanted("--config", "c9", Some(&["c1", "c2"])), wanted("--arm", "feedback", None)],
        };
        assert_eq!(error.to_string(), "task `t1` has no loop with --config c9 (it has c1, c2), --arm feedback");
    }
}
