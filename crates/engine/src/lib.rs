//! Runs experiments: reads the experiment file, loads the critics, and runs every loop
//! (task × config × arm × critic × epoch) in parallel, streaming tasks from the datasets and rows
//! to the storage writers at constant memory; and the commands that work on what a run wrote.
//!
//! The loop itself is small: generate, critique (with retries), ask the pure policy of
//! `critbench-core` whether to revise, revise. Everything random is seeded from
//! (seed, task, epoch, round, purpose), so results do not depend on `--jobs`.
//!
//! # The map
//!
//! Four rooms, a folder each, and a small module; each imports only those listed before it:
//!
//! - [`experiment`]: the experiment file, as written (`file`) and resolved against the command
//!   line (`resolve`: the policy grid, `[openai]`, `[pricing]` and `[budget]`, `[sequential]`,
//!   `[memory]`), and [`experiment::limits`], the bounds on what one task's loops may hold.
//! - [`stop`]: how a caller stops a run or a rescoring: the signal, and the flag its handler
//!   raises.
//! - [`run_dir`]: the run directory. Its [`layout`](run_dir::layout) names every file a run
//!   writes, once (the tables by storage, the report's files by the report, the engine's own
//!   there); every writing command [`claim`](run_dir::claim())s its directory first (what it holds,
//!   the lock, what `--overwrite` removes); a run's progress is a journal of committed part files
//!   (`journal`, `parts`: the one part writer, a run's and a rescoring's); and
//!   [`merge`](run_dir::merge) joins a sharded run's shards.
//! - [`run`]: a run, stage by stage: `plan` (critics, grid, the loops of a task) → `source`
//!   (datasets streamed and admitted in file order) → `loops` on the `workers` (each round's
//!   critique in `round`, the `oracle` arm's oracle in `oracle`, the loop's end in
//!   [`adjudicate`](run::adjudicate) and [`evaluate`](run::evaluate)) → `sink` (rows built on
//!   the workers by `emit`, written in order, committed to the journal) → `summarize`
//!   (`manifest.json`, the reports). Strategy memory learns first (`learn`,
//!   [`memory`](run::memory)); a `sequential` run admits tasks in its own order, one look ahead
//!   of its stopping rule. Every pass over the datasets is driven by the one
//!   `pipeline` (a reader thread, workers, the reorder window, the grace period after a signal,
//!   the join), which a rescoring drives too. Beside the stages: the offline authors
//!   ([`backend`](run::backend)), the model client offered to plugins as `chat`
//!   ([`chat`](run::chat)), and what a loop's model calls cost ([`cost`](run::cost)).
//! - [`commands`]: the commands beside `run`, on what a run wrote or will write:
//!   [`rescore`](commands::rescore) (a finished run's drafts critiqued again, on the run's
//!   pipeline), [`replay`](commands::replay) (other policies on the recordings),
//!   [`estimate`](commands::estimate) (a pilot run and its projection) and
//!   [`judge`](commands::judge) (a critic benchmark set up from an experiment).
//!
//! Each command fails with a type of its own, beside it ([`run::RunError`],
//! [`commands::rescore::RescoreError`], [`commands::replay::ReplayError`],
//! [`run_dir::merge::MergeError`], …): its own refusals, and [`EngineError`], the failures every
//! command shares, wrapped.
//!
//! ```no_run
//! use critbench_engine::{experiment::{Experiment, Overrides}, run::run_experiment};
//!
//! let experiment = Experiment::load("experiments/demo.toml".as_ref(), &Overrides::default()).unwrap();
//! let summary = run_experiment(&experiment, &Default::default()).unwrap();
//! println!("{} loops written to {}", summary.loops, summary.out_dir.display());
//! ```

#![warn(missing_docs)]

/// Writes a line to standard error without ever panicking (`eprintln!` panics when the stream is
/// closed, as under `critbench run 2>&1 | head`): a line nobody can read is dropped, the run goes on.
macro_rules! note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `From` each failure [`EngineError`] wraps, for a command's error that wraps [`EngineError`]
/// (`Engine(#[from] EngineError)`), so that `?` takes them there through it.
macro_rules! from_common_failures {
    (@each $error:ty: $($failure:ty),*) => {
        $(
            impl From<$failure> for $error {
                fn from(failure: $failure) -> $error {
                    <$error>::from(crate::EngineError::from(failure))
                }
            }
        )*
    };
    ($error:ty) => {
        from_common_failures!(@each $error:
            critbench_storage::dataset::DatasetError,
            critbench_storage::tables::StorageError,
            crate::run_dir::RunDirError,
            critbench_report::ReportError,
            critbench_openai::ClientError,
            critbench_plugin_host::OpenCriticError
        );
    };
}

pub mod commands;
pub mod experiment;
pub mod run;
pub mod run_dir;
pub mod stop;

pub use experiment::ExperimentProblem;

// The failures every command shares live at the root, above the rooms; each command's own
// refusals are a type beside the command, which wraps these.

/// What any command can fail with: the failures of what the commands share (datasets, plugins,
/// the run directory and its tables, the reports, the model client, the pipeline's threads). Each
/// command's error wraps it beside the command's own refusals ([`RunError`](run::RunError),
/// [`RescoreError`](commands::rescore::RescoreError), …). [`EngineError::is_usage`] tells the
/// user's mistakes (exit 2) from internal failures (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A dataset file cannot be read or holds a bad task.
    #[error(transparent)]
    Dataset(#[from] critbench_storage::dataset::DatasetError),
    /// A critic's plugin could not be loaded or instantiated.
    #[error("critic `{critic}`: {source}")]
    Plugin {
        /// The critic's name in the experiment.
        critic: String,
        /// Why the plugin host refused it.
        source: critbench_plugin_host::PluginError,
    },
    /// The run directory cannot take what the command writes: see
    /// [`RunDirError`](crate::run_dir::RunDirError).
    #[error(transparent)]
    RunDir(#[from] crate::run_dir::RunDirError),
    /// Writing a table of the run directory failed.
    #[error(
        "writing the run directory failed: {0}\n  hint: every loop committed before this is kept; fix the cause (disk space, permissions) and run the same command with --resume"
    )]
    Storage(#[from] critbench_storage::tables::StorageError),
    /// A file or directory operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, and on which path.
        context: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// The reports could not be computed or written.
    #[error(transparent)]
    Report(#[from] critbench_report::ReportError),
    /// The model client could not be made from the `[openai]` table.
    #[error(transparent)]
    ModelClient(#[from] critbench_openai::ClientError),
    /// The operating system refused a thread a pass needs.
    #[error("cannot start {what}: {source}")]
    Threads {
        /// The thread or pool that did not start.
        what: &'static str,
        /// What the system said.
        source: std::io::Error,
    },
    /// A thread of a pass panicked; the payload's text.
    #[error("{0}")]
    Panicked(String),
    /// A chunk was lost between a pass's workers and its writer (a bug).
    #[error("a chunk of loops never reached the writer")]
    LostChunk,
}

impl From<critbench_plugin_host::OpenCriticError> for EngineError {
    fn from(error: critbench_plugin_host::OpenCriticError) -> EngineError {
        EngineError::Plugin { critic: error.critic, source: error.source }
    }
}

impl EngineError {
    /// Whether the user can fix this by changing their input (exit status 2).
    pub fn is_usage(&self) -> bool {
        match self {
            EngineError::Dataset(_) | EngineError::Plugin { .. } => true,
            EngineError::RunDir(error) => error.is_usage(),
            EngineError::Report(error) => error.is_usage(),
            // Bad settings or a missing key are the user's; an HTTP stack that will not start is not.
            EngineError::ModelClient(error) => !matches!(error, critbench_openai::ClientError::Http(_)),
            EngineError::Storage(_)
            | EngineError::Io { .. }
            | EngineError::Threads { .. }
            | EngineError::Panicked(_)
            | EngineError::LostChunk => false,
        }
    }
}
