//! Why reports could not be made: a run that is not there or does not fit together, a question
//! it cannot answer, a file that could not be written.

use std::path::PathBuf;

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
    Gold(#[from] GoldError),
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
        key: crate::keys::LoopKey,
    },
    /// A loop of `outcomes.parquet` whose final round has no row in `trajectories.parquet`.
    #[error("the loop {key} has no row for its final round {round}")]
    NoFinalRound {
        /// The loop.
        key: crate::keys::LoopKey,
        /// The round its outcome names.
        round: u32,
    },
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

/// Why a sample could not be drawn or written, or a labels file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum GoldError {
    /// `--tasks 0`.
    #[error("--tasks must be at least 1: a sample of no tasks labels nothing")]
    NoTasks,
    /// More tasks asked for than the run has.
    #[error(
        "{} has {available} tasks; --tasks {asked} asks for more\n  hint: label every task with --tasks {available}",
        run.display()
    )]
    TooFewTasks {
        /// The run directory.
        run: PathBuf,
        /// Tasks it has.
        available: usize,
        /// Tasks asked for.
        asked: usize,
    },
    /// The run did not finish.
    #[error(
        "{} holds an interrupted run: sample a finished one\n  hint: finish it first with `critbench run EXPERIMENT --resume --out {}`",
        run.display(),
        run.display()
    )]
    Unfinished {
        /// The run directory.
        run: PathBuf,
    },
    /// The run did not store its drafts.
    #[error(
        "{} did not store its drafts, so the answers to label are not in it\n  hint: run the experiment again with \
         them stored: `critbench run EXPERIMENT --store-drafts --out {} --overwrite` (or store_drafts = true in \
         the experiment)",
        run.display(),
        run.display()
    )]
    NoDrafts {
        /// The run directory.
        run: PathBuf,
    },
    /// The sample file exists and `--overwrite` was not given.
    #[error("{} exists\n  hint: pass --overwrite to replace it, or another --out", path.display())]
    Exists {
        /// The sample file.
        path: PathBuf,
    },
    /// The labels file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The labels file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A line of the labels file is bad.
    #[error("{}: line {line}: {message}", path.display())]
    Line {
        /// The labels file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// The labels file as a whole does not fit the run.
    #[error("{}: {message}", path.display())]
    File {
        /// The labels file.
        path: PathBuf,
        /// What does not fit.
        message: String,
    },
    /// The sample file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The sample file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl GoldError {
    /// Everything but a failed write is the user's to fix.
    pub fn is_usage(&self) -> bool {
        !matches!(self, GoldError::Write { .. })
    }
}
