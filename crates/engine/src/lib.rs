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
//! [`EngineError`] is what a run, or any command, fails with: the run-wide cases, and each
//! operation's own refusals, a type kept beside the operation, wrapped.
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

pub mod commands;
pub mod experiment;
pub mod run;
pub mod run_dir;
pub mod stop;

use std::path::PathBuf;

pub use experiment::ExperimentProblem;

// The error of the whole engine lives at its root, above the rooms: each room raises its own
// refusals (a type beside the operation) and returns them wrapped in this one, so no room imports
// another through it.

/// Everything that can stop a run. [`EngineError::is_usage`] tells the user's mistakes (exit 2)
/// from internal failures (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The experiment file cannot be read or its settings do not fit together.
    #[error("{}: {problem}", path.display())]
    Experiment {
        /// The experiment file.
        path: PathBuf,
        /// What is wrong with it.
        problem: ExperimentProblem,
    },
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
    /// The run directory cannot take this run: see [`RunDirError`](crate::run_dir::RunDirError).
    #[error(transparent)]
    RunDir(#[from] crate::run_dir::RunDirError),
    /// `--limit 0`: no task would run.
    #[error("--limit 0 leaves no task to run; give a positive number of tasks per file")]
    LimitZero,
    /// `critbench merge` refused: a shard missing, unfinished or different.
    #[error(transparent)]
    Merge(#[from] crate::run_dir::merge::MergeError),
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
    /// `critbench judge` could not benchmark the critic.
    #[error(transparent)]
    Judge(#[from] critbench_critic_benchmark::JudgeError),
    /// `critbench replay` cannot run.
    #[error(transparent)]
    Replay(#[from] crate::commands::replay::ReplayError),
    /// `critbench rescore` cannot run, or stopped.
    #[error(transparent)]
    Rescore(#[from] crate::commands::rescore::RescoreError),
    /// The model client could not be made from the `[openai]` table.
    #[error(transparent)]
    ModelClient(#[from] critbench_openai::ClientError),
    /// No task's kind is one a critic takes, so no loop would run.
    #[error("no task reaches any critic: the critics take kinds {critic_kinds} but the dataset's tasks have kinds [{}]", task_kinds.join(", "))]
    NoTaskForAnyCritic {
        /// The kinds the critics take, listed.
        critic_kinds: String,
        /// The kinds of the dataset's tasks.
        task_kinds: Vec<String>,
    },
    /// A recorded sweep with a critic whose critiques depend on the policy.
    #[error(
        "critic `{critic}` ({plugin}) says its critiques depend on the loop policy, so one recording cannot serve \
         every config; set sweep = \"direct\" in the experiment"
    )]
    PolicyDependentSweep {
        /// The critic's name in the experiment.
        critic: String,
        /// The plugin that says so.
        plugin: String,
    },
    /// Strategy memory's split left every task to learning.
    #[error(
        "the memory split left no evaluation tasks; lower [memory] learn_fraction or mark some tasks meta.split = \"eval\""
    )]
    NoEvaluationTasks,
    /// Loops of strategy memory's learning pass failed.
    #[error("{count} learning loop(s) failed; first: {first}")]
    LearningFailed {
        /// How many failed.
        count: usize,
        /// The first failure's message.
        first: String,
    },
    /// `critbench judge` cannot be set up from the experiment.
    #[error(transparent)]
    JudgeSetup(#[from] crate::commands::judge::JudgeSetupError),
    /// The model client's report (`manifest.json`'s `openai`) did not read back: a key missing,
    /// renamed or of the wrong type.
    #[error(transparent)]
    ModelReport(#[from] critbench_openai::usage::UsageReportError),
    /// A writer program (`backend = "command"`) that did not start or broke the protocol at
    /// its start.
    #[error(transparent)]
    Writer(#[from] critbench_plugin_host::writer::WriterStartError),
    /// The openai backend was asked for outside `run_experiment`, which makes its client.
    #[error("the openai backend is made from the experiment's [openai] table; run the experiment with run_experiment")]
    NoModelClient,
    /// A thread of the run panicked; the payload's text.
    #[error("{0}")]
    Panicked(String),
    /// A chunk of loops was lost between the workers and the writer (a bug).
    #[error("a chunk of loops never reached the writer")]
    LostChunk,
    /// The open-file limit is below what `concurrency` connections need, and cannot be raised.
    #[error(
        "[openai] concurrency = {concurrency} needs about {needed} open files, but this process may open at most \
         {hard} (RLIMIT_NOFILE, hard limit): lower concurrency to at most {fits}, or raise the hard limit \
         (`ulimit -Hn {needed}` as root, `nofile` in /etc/security/limits.conf, `LimitNOFILE=` for a systemd unit)"
    )]
    OpenFiles {
        /// The `[openai] concurrency` asked for.
        concurrency: u64,
        /// The open files it needs.
        needed: u64,
        /// The process's hard limit.
        hard: u64,
        /// The largest concurrency that fits the limit.
        fits: u64,
    },
    /// The operating system refused a thread the run needs.
    #[error("cannot start {what}: {source}")]
    Threads {
        /// The thread or pool that did not start.
        what: &'static str,
        /// What the system said.
        source: std::io::Error,
    },
    /// A recorded loop ended before a config of the grid stopped: a bug in the loop recorder.
    #[error("the recording of task `{task_id}` ended before config {config_id} stopped")]
    RecordingEndedEarly {
        /// The task whose recording ended.
        task_id: String,
        /// The config that had not stopped.
        config_id: String,
    },
    /// A sequential run that cannot start or go on.
    #[error(transparent)]
    Sequential(#[from] crate::run::sequential::SequentialError),
    /// A signal stopped the run; the loops finished before it are written.
    #[error("interrupted by {signal}: the rows of the {loops} loop(s) finished before it are in {} (readable; manifest.json says status \"interrupted\"); run the same command with --resume to finish the run", out.display())]
    Interrupted {
        /// The signal received.
        signal: crate::stop::StopSignal,
        /// Loops finished and written before it.
        loops: u64,
        /// The run directory.
        out: PathBuf,
    },
    /// The run's `[budget]` was reached: no loop started after it; the loops finished are written.
    #[error(
        "stopped by its budget: {}; the rows of the {loops} loop(s) finished by then are in {} (readable; \
         manifest.json's openai.budget says which budget); raise [budget] and run the same command with --resume to \
         finish the run (answers already paid for come from the response cache)",
        reached.as_ref().map_or_else(
            || "a budget was reached".to_string(),
            |r| format!(
                "[budget] {} = {} {currency} was reached, and {} spent by the end (the loops in flight then \
                 finished)",
                r.budget,
                r.limit,
                critbench_report::format_money(r.spent, Some(currency))
            )
        ),
        out.display()
    )]
    BudgetReached {
        /// Which budget was reached and what was spent when the run ended, when the client says.
        reached: Option<critbench_openai::BudgetStop>,
        /// The currency of the budget.
        currency: String,
        /// Loops finished and written by then.
        loops: u64,
        /// The run directory.
        out: PathBuf,
    },
    /// `critbench estimate` cannot run its pilot, or a run is refused on its estimate.
    #[error(transparent)]
    Estimate(#[from] crate::commands::estimate::EstimateError),
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
            EngineError::Experiment { .. }
            | EngineError::Dataset(_)
            | EngineError::Plugin { .. }
            | EngineError::Writer(_)
            | EngineError::LimitZero
            | EngineError::Merge(_)
            | EngineError::OpenFiles { .. } => true,
            EngineError::RunDir(error) => error.is_usage(),
            EngineError::Report(error) => error.is_usage(),
            EngineError::Rescore(error) => error.is_usage(),
            EngineError::Judge(error) => error.is_usage(),
            EngineError::Sequential(error) => error.is_usage(),
            EngineError::Replay(_)
            | EngineError::NoTaskForAnyCritic { .. }
            | EngineError::PolicyDependentSweep { .. }
            | EngineError::NoEvaluationTasks
            | EngineError::JudgeSetup(_)
            | EngineError::Estimate(_) => true,
            EngineError::LearningFailed { .. }
            | EngineError::ModelReport(_)
            | EngineError::NoModelClient
            | EngineError::Panicked(_)
            | EngineError::LostChunk => false,
            // Bad settings or a missing key are the user's; an HTTP stack that will not start is not.
            EngineError::ModelClient(error) => !matches!(error, critbench_openai::ClientError::Http(_)),
            EngineError::Threads { .. } => false,
            EngineError::Storage(_)
            | EngineError::Io { .. }
            | EngineError::RecordingEndedEarly { .. }
            | EngineError::Interrupted { .. }
            | EngineError::BudgetReached { .. } => false,
        }
    }
}
