//! The errors of writing and reading critbench's tables, in a module of their own so that the
//! writer and the readers both use them without importing each other.

use std::path::{Path, PathBuf};

use crate::schema::SCHEMA_VERSION;

/// Why an output file could not be written or read. Never the user's fault, except a missing or
/// corrupt file given to `report`.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The file could not be opened, created or synced.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// Parquet could not write the file (or read a part's footer to join it).
    #[error("{}: {source}", path.display())]
    Parquet {
        /// The file.
        path: PathBuf,
        /// What Parquet said.
        source: parquet::errors::ParquetError,
    },
    /// A batch of columns did not fit the table's schema.
    #[error("{}: {source}", path.display())]
    Batch {
        /// The file being written.
        path: PathBuf,
        /// What Arrow said.
        source: arrow_schema::ArrowError,
    },
    /// The file is not Parquet, or its footer is damaged.
    #[error("{}: not a readable Parquet file: {source}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What Parquet said.
        source: parquet::errors::ParquetError,
    },
    /// The file's row groups could not be decoded.
    #[error("{}: cannot read: {source}", path.display())]
    Decode {
        /// The file.
        path: PathBuf,
        /// What Arrow said.
        source: arrow_schema::ArrowError,
    },
    /// The file's columns could not be selected for reading.
    #[error("{}: cannot read: {source}", path.display())]
    Projection {
        /// The file.
        path: PathBuf,
        /// What Parquet said.
        source: parquet::errors::ParquetError,
    },
    /// The file's columns or rows are not what critbench writes, or a reader's caller refused a row.
    #[error("{}: {source}", path.display())]
    Table {
        /// The file.
        path: PathBuf,
        /// The column or row at fault.
        source: Box<TableError>,
    },
    /// Part files were to be joined into `path`, and there were none.
    #[error("{}: no part files to join", path.display())]
    NoParts {
        /// The file that would have been written.
        path: PathBuf,
    },
    /// A part file to join has another schema than the first.
    #[error("{}: its schema differs from {}'s", path.display(), first.display())]
    SchemaDiffers {
        /// The part that differs.
        path: PathBuf,
        /// The first part.
        first: PathBuf,
    },
    /// A file that is not a table of this schema version: an earlier development build's, a
    /// later critbench's, or not critbench's at all.
    #[error(
        "{}: {}; this critbench reads tables of schema version {SCHEMA_VERSION} only\n  hint: run the experiment \
         again with this critbench (docs/FORMAT.md's changelog says what changed)",
        path.display(),
        match found {
            Some(version) => format!("written by a critbench whose tables are schema version {version}"),
            None => "not a table critbench wrote (its footer has no critbench.schema_version)".to_string(),
        }
    )]
    OtherVersion {
        /// The file.
        path: PathBuf,
        /// Its footer's `critbench.schema_version`, when it has one.
        found: Option<String>,
    },
}

impl StorageError {
    /// A [`StorageError::Table`] of `path`.
    pub(crate) fn table(path: &Path, source: impl Into<TableError>) -> StorageError {
        StorageError::Table { path: path.into(), source: Box::new(source.into()) }
    }
}

/// Any error a reader's caller may refuse a row with; its text is the caller's.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What is wrong with a table a reader decodes: the column or row at fault (the file is named by
/// [`StorageError::Table`]).
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// A column the reader needs is not in the file.
    #[error("missing column `{0}`")]
    MissingColumn(String),
    /// A column holds another Arrow type than critbench writes.
    #[error("column `{column}` is not {expected}")]
    NotOfType {
        /// The column.
        column: String,
        /// What it should hold: `utf8`, `int32`, `a list`, …
        expected: &'static str,
    },
    /// A column critbench never leaves null has a null.
    #[error("column `{0}` has a null")]
    Null(String),
    /// A `list<utf8>` column whose items are not text.
    #[error("column `{0}` holds no strings")]
    NotStrings(String),
    /// A map<utf8, float64> column whose keys are not text.
    #[error("column `{0}` has non-text keys")]
    MapKeys(String),
    /// A map<utf8, float64> column whose values are not float64.
    #[error("column `{0}` has non-float64 values")]
    MapValues(String),
    /// A text column of fixed strings (an arm, a decision, an exit reason) holds another.
    #[error("row {row}: column `{column}` holds `{text}`, which is not {what} ({valid})")]
    NotALabel {
        /// The row, counted from 0 in the file.
        row: usize,
        /// The column.
        column: String,
        /// What it holds.
        text: String,
        /// What it should hold: "an arm", "an exit reason", …
        what: &'static str,
        /// The strings it may hold, `, `-joined.
        valid: String,
    },
    /// A trajectory's `stop` row without an exit reason.
    #[error("row {row}: column `{column}` is null in a `stop` row; expected why the loop stopped ({valid})")]
    StopWithoutExit {
        /// The row, counted from 0 in the file.
        row: usize,
        /// The exit reason's column.
        column: &'static str,
        /// The exit reasons, `, `-joined.
        valid: String,
    },
    /// A trajectory row that is not a stop, with an exit reason.
    #[error("row {row}: column `{column}` holds `{exit_reason}` in a `{decision}` row, which has no exit reason")]
    ExitWithoutStop {
        /// The row, counted from 0 in the file.
        row: usize,
        /// The exit reason's column.
        column: &'static str,
        /// What it holds.
        exit_reason: String,
        /// The row's decision.
        decision: &'static str,
    },
    /// A whole number below 0, in a row.
    #[error("row {row}: `{column}` is negative ({value})")]
    NegativeInRow {
        /// The row, counted from 0 in the file.
        row: usize,
        /// The column.
        column: &'static str,
        /// What it holds.
        value: i32,
    },
    /// A whole number below 0.
    #[error("`{column}` is negative ({value})")]
    Negative {
        /// The column.
        column: &'static str,
        /// What it holds.
        value: i32,
    },
    /// A trajectory row's round below 0 (the round-score query's check).
    #[error("negative round {0}")]
    NegativeRound(i32),
    /// A rescoring's loop whose unknowns are set, or a loop not censored with one of them null.
    #[error(
        "row {row}: column `{column}` is {} a loop that is {}censored",
        if *censored { "set in" } else { "null in" },
        if *censored { "" } else { "not " }
    )]
    Censored {
        /// The row, counted from 0 in the file.
        row: usize,
        /// The column.
        column: &'static str,
        /// Whether the loop is censored.
        censored: bool,
    },
    /// A loop not censored whose outcome has a null (a stats reader's check).
    #[error("row {0}: the loop is not censored but its outcome (`exit_reason`, `passed`, `final_score`) has a null")]
    OutcomeNull(usize),
    /// An evaluation row's `answer` is neither `first` nor `final`.
    #[error("row {row}: `answer` is \"{answer}\", not \"first\", \"final\" or \"round\"")]
    Answer {
        /// The row, counted from 0 in the file.
        row: usize,
        /// What it holds.
        answer: String,
    },
    /// An evaluation row with both a verdict and an error (`error`), or with neither.
    #[error(
        "row {row}: {}",
        if *error {
            "`critic_error` says the evaluator failed, yet `passed` holds a verdict (an error is no verdict: \
             `passed` is null on an error)"
        } else {
            "`passed` is null but `critic_error` is not set (a verdict is missing only when the evaluator failed)"
        }
    )]
    VerdictAndError {
        /// The row, counted from 0 in the file.
        row: usize,
        /// Whether `critic_error` is set.
        error: bool,
    },
    /// A loop's rows that are not together in the file.
    #[error(
        "the rows of loop {task_id} × {arm} × {critic} × epoch {epoch} are not contiguous; expected each loop's rows \
         together, as critbench writes them"
    )]
    NotContiguous {
        /// The loop's task.
        task_id: String,
        /// Its arm.
        arm: String,
        /// Its critic.
        critic: String,
        /// Its epoch.
        epoch: u32,
    },
    /// A loop whose rounds do not run 0, 1, 2, … without a gap.
    #[error(
        "loop {task_id} × {arm} × {critic} × epoch {epoch} has rounds {rounds:?}; expected 0, 1, 2, … without gaps"
    )]
    RoundGaps {
        /// The loop's task.
        task_id: String,
        /// Its arm.
        arm: String,
        /// Its critic.
        critic: String,
        /// Its epoch.
        epoch: u32,
        /// The rounds it has.
        rounds: Vec<u32>,
    },
    /// An outcome whose `final` is neither `best` nor `last`.
    #[error("the loop {key} has `final` = {value:?}; expected \"best\" or \"last\"")]
    FinalDraft {
        /// The loop, named by its config, arm, critic, task and epoch.
        key: String,
        /// What `final` holds.
        value: String,
    },
    /// An outcome whose loop ran no round.
    #[error("a loop with 0 rounds")]
    NoRounds,
    /// A loop with two outcomes.
    #[error("the loop {0} appears more than once")]
    Duplicate(String),
    /// A batch rebuilt with a censored loop's placeholders did not fit its schema.
    #[error("cannot read: {0}")]
    Arrow(#[source] arrow_schema::ArrowError),
    /// A reader's caller refused an outcome row.
    #[error("row {row} (task `{task_id}`): {source}")]
    RefusedRow {
        /// The row, counted from 0 in the file.
        row: usize,
        /// Its task.
        task_id: String,
        /// The caller's error.
        source: BoxError,
    },
    /// A reader's caller refused a verdict.
    #[error("row {row}: {source}")]
    RefusedVerdict {
        /// The row, counted from 0 in the file.
        row: usize,
        /// The caller's error.
        source: BoxError,
    },
    /// A reader's caller refused a loop.
    #[error("{0}")]
    RefusedLoop(#[source] BoxError),
}
