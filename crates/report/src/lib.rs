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
//! with inline SVG charts) into the run directory; given a labelled sample of the run's answers
//! (`gold`), also `corrected.csv` and `corrected_comparisons.csv`, the pass rates and differences
//! corrected by the labels.
//! Also `power.csv`: how many tasks each paired comparison needs; and for a sequential run,
//! `sequential.csv`, every look of its confidence sequences (`sequential`).
//!
//! ```no_run
//! let report = critbench_report::write_reports("reports/demo".as_ref()).unwrap();
//! for row in &report.summary {
//!     println!("{} {} {}: {:.1}%", row.config_id, row.critic, row.arm, 100.0 * row.pass_rate);
//! }
//! ```

#![warn(missing_docs)]

pub mod backend;
pub mod compare;
pub mod configs;
pub mod evaluators;
pub mod gold;
mod html;
mod markdown;
pub mod outputs;
pub mod power;
pub mod sequential;
pub mod show;
mod summary;

pub use html::escape as escape_html;
pub use markdown::{GLANCE_HEADER, glance_legend, glance_table, render_markdown, summary_table};
pub use summary::{
    ADJUDICATED_SUFFIX, BOOTSTRAP_RESAMPLES, ComparisonRow, INTERVAL_TASK_BOOTSTRAP, INTERVAL_WILSON, KindReport,
    Report, SummaryRow, TEST_MCNEMAR, TEST_SIGN, build_report, summarize_file, summarize_files,
};

use std::path::{Path, PathBuf};

/// Why reports could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The directory holds no run, or a sharded one not merged yet.
    #[error("{} is not a run directory: {reason}\n  hint: pass the directory a `critbench run` wrote (it holds outcomes.parquet)", path.display())]
    NotARun {
        /// The directory given.
        path: PathBuf,
        /// What it lacks.
        reason: String,
    },
    /// The manifest cannot be read (the manifest's error is the cause, and the whole message).
    #[error("{0}")]
    Manifest(#[from] critbench_storage::manifest::ManifestError),
    /// A table cannot be read, or a row of it was refused (the storage error is the cause, and the
    /// whole message: it names the file and row).
    #[error("{0}")]
    Storage(#[from] critbench_storage::tables::StorageError),
    /// A table of the run at `path` cannot be read (the cause names the file again, and the row).
    #[error("{}: {source}", path.display())]
    Table {
        /// The file read.
        path: PathBuf,
        /// Why it could not be read.
        #[source]
        source: critbench_storage::tables::StorageError,
    },
    /// What the user asked names what the run does not have, or cannot be answered from it.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// A report file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A table is not the file the run wrote.
    #[error(transparent)]
    Mismatch(#[from] critbench_storage::manifest::TableMismatch),
    /// A file critbench would write over is not one it wrote (or is a link): left alone.
    #[error("{} is {what}; critbench replaces only files it wrote, never through a link: move it or choose another --out", path.display())]
    WouldReplace {
        /// The file.
        path: PathBuf,
        /// What it is (`a symbolic link`, `not a comparison critbench wrote`).
        what: &'static str,
    },
    /// A sample or its labels could not be used.
    #[error(transparent)]
    Gold(#[from] gold::GoldError),
    /// The rows of the tables do not fit together.
    #[error(transparent)]
    Inconsistent(Box<RowError>),
    /// The rows of `name` (a file, or a sharded run's folder) do not fit together.
    #[error("{name}: {source}")]
    Rows {
        /// What was read.
        name: String,
        /// What does not fit.
        #[source]
        source: Box<RowError>,
    },
    /// The rounds of a task could not be read from the trajectories.
    #[error(transparent)]
    TaskRounds(#[from] critbench_storage::task_rounds::TaskRoundsError),
    /// What the writer did with the critiques could not be read from the trajectories.
    #[error(transparent)]
    FeedbackUse(#[from] critbench_storage::feedback_use::FeedbackUseError),
}

/// What a user asked that the run cannot answer: a task, arm, config or loop it does not have,
/// two of the same where two different ones are needed, or runs whose loops do not pair.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// `critbench show --task` names a task the trajectories do not hold.
    #[error("task `{task}` is not in {} (task ids are the dataset's `id`s)", file.display())]
    NoTask {
        /// The task asked for.
        task: String,
        /// The trajectories (a file, or a sharded run's folder).
        file: PathBuf,
    },
    /// The task has no loop with the keys given.
    #[error("task `{task}` has no loop with{}", show_wanted(wanted))]
    NoLoop {
        /// The task.
        task: String,
        /// Each key given, in flag order.
        wanted: Vec<WantedKey>,
    },
    /// `--pairs` names one arm twice.
    #[error("--pairs needs two different arms, not `{0}` twice")]
    SameArmTwice(String),
    /// An arm the run does not have.
    #[error("the run has no arm `{arm}`; its arms are {}", arms.join(", "))]
    NoArm {
        /// The arm asked for.
        arm: String,
        /// The run's arms, in the order first read.
        arms: Vec<String>,
    },
    /// `--configs` names one config twice.
    #[error("--configs needs two different configs, not `{0}` twice")]
    SameConfigTwice(String),
    /// A config the run does not have.
    #[error("the run has no config `{config}`; its configs are {}", configs.join(", "))]
    NoConfig {
        /// The config asked for.
        config: String,
        /// The run's configs.
        configs: Vec<String>,
    },
    /// Two runs compared whose loops of a task cannot be paired one to one.
    #[error(
        "{}: task `{task_id}` appears more than once for config {config_id} × arm {arm} × epoch {epoch}; the runs \
         use different critics on the same task, so loops cannot be paired one to one",
        dir.display()
    )]
    Unpairable {
        /// The run directory where the task's loop appears twice.
        dir: PathBuf,
        /// The task.
        task_id: String,
        /// The config.
        config_id: String,
        /// The arm.
        arm: String,
        /// The epoch.
        epoch: u32,
    },
}

/// One key of a loop a user gave (`--config NAME`), and the values the task has for it when the
/// given one is not among them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WantedKey {
    /// The flag: `--config`, `--critic`, `--arm` or `--epoch`.
    pub flag: &'static str,
    /// The value given.
    pub given: String,
    /// The task's values for the key, when the given one is not one of them.
    pub has: Option<Vec<String>>,
}

/// ` --config a (it has b, c), --arm feedback`: the keys given, for [`QueryError::NoLoop`].
fn show_wanted(wanted: &[WantedKey]) -> String {
    use std::fmt::Write;
    let mut text = String::new();
    let mut sep = " ";
    for key in wanted {
        let _ = write!(text, "{sep}{} {}", key.flag, key.given);
        sep = ", ";
        if let Some(has) = &key.has {
            let _ = write!(text, " (it has {})", has.join(", "));
        }
    }
    text
}

/// What is wrong with the rows of a run's tables that no row alone shows: a loop given twice, a
/// task's rows apart, a verdict twice, a sampled loop without its label.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RowError {
    /// More arms in one config × critic than a loop's arm index holds.
    #[error("more than 65,535 arms")]
    TooManyArms,
    /// More configs than a comparison's config index holds.
    #[error("more than 65,535 configs to compare")]
    TooManyConfigs,
    /// One loop (task × config × critic × arm × epoch) has two rows.
    #[error(
        "the loop of task `{task_id}`, config {config_id}, critic {critic}, arm {arm}, epoch {epoch} appears more than once"
    )]
    LoopTwice {
        /// The task.
        task_id: String,
        /// The config.
        config_id: String,
        /// The critic.
        critic: String,
        /// The arm.
        arm: String,
        /// The epoch.
        epoch: u32,
    },
    /// The rows of a task are not together in `evaluations.parquet`.
    #[error("the rows of task `{task_id}` are not together (evaluations.parquet is written a task at a time)")]
    TaskApart {
        /// The task.
        task_id: String,
    },
    /// A loop has two verdicts of one evaluator on the same draft.
    #[error("task `{task_id}` epoch {epoch} has two {which} verdicts")]
    VerdictTwice {
        /// The task.
        task_id: String,
        /// The epoch.
        epoch: u32,
        /// `final-answer` or `first-draft`.
        which: &'static str,
    },
    /// A loop of a task in the labelled sample has no gold label.
    #[error("the loop {key} of a sampled task has no gold label")]
    NoGoldLabel {
        /// The loop.
        key: critbench_storage::final_answers::LoopKey,
    },
}

/// Sorts one task's loops of a config × critic by `(arm, epoch)` (`key`) and refuses a loop given
/// twice, naming the arm by `arm_name`: every fold over a task's loops relies on both.
pub(crate) fn sort_task_loops<L>(
    loops: &mut [L],
    key: impl Fn(&L) -> (u16, u32),
    (task_id, config_id, critic): (&str, &str, &str),
    arm_name: impl Fn(u16) -> String,
) -> Result<(), RowError> {
    loops.sort_unstable_by_key(&key);
    match loops.windows(2).map(|w| (key(&w[0]), key(&w[1]))).find(|(a, b)| a == b) {
        Some(((arm, epoch), _)) => Err(RowError::LoopTwice {
            task_id: task_id.to_string(),
            config_id: config_id.to_string(),
            critic: critic.to_string(),
            arm: arm_name(arm),
            epoch,
        }),
        None => Ok(()),
    }
}

impl From<RowError> for ReportError {
    fn from(error: RowError) -> ReportError {
        ReportError::Inconsistent(Box::new(error))
    }
}

impl ReportError {
    /// Missing or corrupt inputs are the user's to fix; a failed write is not.
    pub fn is_usage(&self) -> bool {
        match self {
            ReportError::Write { .. } => false,
            ReportError::Gold(error) => error.is_usage(),
            _ => true,
        }
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

/// Checks the tables of the run in `run_dir` against its manifest (see
/// [`critbench_storage::manifest::Manifest::check_tables`]) before anything is read from them.
pub fn check_tables(run_dir: &Path) -> Result<(), ReportError> {
    if let Some(manifest) = critbench_storage::manifest::Manifest::read(run_dir)? {
        manifest.check_tables(run_dir)?;
    }
    Ok(())
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
        let summarized = summarize_files(outcomes, manifest.as_ref());
        (summarized, joined(trajectories), pairs.map(joined))
    });
    let (backend, rounds) = trajectories;
    let mut report = summarized?;
    let corrected =
        labels.map(|labels| gold::Corrected::compute(&outcomes, manifest.as_ref(), &labels, &report)).transpose()?;
    report.backend = backend?;
    report.sequential = manifest.as_ref().and_then(|m| m.sequential.clone());
    // What the backend cannot measure comes first: it says how to read everything else.
    let mut notes: Vec<String> = report.backend.notices(0.0).iter().map(|n| as_note(n)).collect();
    notes.append(&mut report.notes);
    report.notes = notes;
    report.evaluators = evaluators::read(run_dir, manifest.as_ref())?;
    summary::write_files(run_dir, &report)?;
    if let Some(evaluated) = &report.evaluators {
        evaluators::write_files(run_dir, evaluated)?;
    }
    power::write_file(run_dir, &report.power)?;
    if let Some(record) = &report.sequential {
        sequential::write_file(run_dir, record)?;
    }
    let neighbours = configs::neighbour_comparisons(&outcomes, manifest.as_ref())?;
    configs::write_file(run_dir, &neighbours)?;
    // The pairs behind the first comparison of two arms as they ran (an adjudicated twin is not an
    // arm of the outcomes file), for a reader to open one by one: those read beside the summary
    // when its arms were the ones guessed, else read now.
    let pairs = match report.comparisons.iter().find(|c| c.between_arms_that_ran()) {
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

/// A p-value as the reports print it: four decimals, or `< 0.0001` below that.
pub(crate) fn format_p(p: f64) -> String {
    if p < 0.0001 { "< 0.0001".to_string() } else { format!("{p:.4}") }
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
