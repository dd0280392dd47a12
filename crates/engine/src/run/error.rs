//! Why a run cannot start, failed, or stopped before its end ([`RunError`]).

use std::path::PathBuf;

use crate::EngineError;
use crate::run::sequential::SequentialError;

/// Why a run cannot start, failed, or stopped before its end: its own refusals and stops, and the
/// failures every command shares ([`EngineError`]). [`RunError::is_usage`] tells the user's
/// mistakes (exit 2) from internal failures (exit 1); a signal and a budget end a run with
/// statuses of their own.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// `--limit 0`: no task would run.
    #[error("--limit 0 leaves no task to run; give a positive number of tasks per file")]
    LimitZero,
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
    Sequential(#[from] SequentialError),
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
    /// What any command can fail with.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

from_common_failures!(RunError);

impl RunError {
    /// Whether the user can fix this by changing their input (exit status 2).
    pub fn is_usage(&self) -> bool {
        match self {
            RunError::LimitZero
            | RunError::NoTaskForAnyCritic { .. }
            | RunError::PolicyDependentSweep { .. }
            | RunError::NoEvaluationTasks
            | RunError::Writer(_)
            | RunError::OpenFiles { .. } => true,
            RunError::Sequential(error) => error.is_usage(),
            RunError::Engine(error) => error.is_usage(),
            RunError::LearningFailed { .. }
            | RunError::ModelReport(_)
            | RunError::NoModelClient
            | RunError::RecordingEndedEarly { .. }
            | RunError::Interrupted { .. }
            | RunError::BudgetReached { .. } => false,
        }
    }
}
