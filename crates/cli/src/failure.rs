//! How a command ends: the exit statuses, and a failure's message and status.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use critbench_engine::stop::StopSignal;

/// critbench's exit statuses, each with its meaning (docs/REFERENCE.md, Exit status; a test holds
/// the two to each other).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    /// The command did what it was asked.
    Success,
    /// The run failed: an internal error, an output that could not be written, loops that failed,
    /// or a critic that failed on every critique.
    Failed,
    /// Bad usage or bad input; the message names the file, line or row, and field.
    Usage,
    /// The run's `[budget]` stopped it.
    Budget,
    /// A signal stopped it: 128 + the signal's number, 130 for SIGINT and 143 for SIGTERM.
    Signal(StopSignal),
}

impl ExitStatus {
    /// The status the process exits with.
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Failed => 1,
            ExitStatus::Usage => 2,
            ExitStatus::Budget => 3,
            ExitStatus::Signal(signal) => 128 + signal.number() as u8,
        }
    }
}

/// A command's failure: a message and the status it exits with.
#[derive(Debug)]
pub struct Failure {
    pub status: ExitStatus,
    pub message: String,
}

impl Failure {
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure { status: ExitStatus::Usage, message: message.into() }
    }

    pub fn failed(message: impl Into<String>) -> Failure {
        Failure { status: ExitStatus::Failed, message: message.into() }
    }

    pub fn report(self) -> ExitCode {
        // A closed standard error leaves nowhere to say it, and is no reason to panic.
        let _ = writeln!(std::io::stderr(), "error: {}", self.message);
        ExitCode::from(self.status.code())
    }
}

/// The exit status an error ends its command with. Every error a command returns is mapped here
/// and nowhere else: the user's mistakes exit 2, internal failures 1, a run stopped by its budget
/// 3 and one stopped by a signal 128 + its number, wherever in the command's error they are.
pub trait Exit: std::fmt::Display {
    /// The status the command exits with.
    fn status(&self) -> ExitStatus;
}

impl<E: Exit> From<E> for Failure {
    fn from(error: E) -> Failure {
        Failure { status: error.status(), message: error.to_string() }
    }
}

/// [`ExitStatus::Usage`] when the user can fix it, else [`ExitStatus::Failed`].
fn usage_or_failed(is_usage: bool) -> ExitStatus {
    if is_usage { ExitStatus::Usage } else { ExitStatus::Failed }
}

impl Exit for critbench_engine::EngineError {
    fn status(&self) -> ExitStatus {
        usage_or_failed(self.is_usage())
    }
}

impl Exit for critbench_engine::experiment::ExperimentError {
    fn status(&self) -> ExitStatus {
        usage_or_failed(self.is_usage())
    }
}

impl Exit for critbench_engine::run_dir::RunDirError {
    fn status(&self) -> ExitStatus {
        usage_or_failed(self.is_usage())
    }
}

impl Exit for critbench_engine::run::RunError {
    fn status(&self) -> ExitStatus {
        use critbench_engine::run::RunError;
        match self {
            RunError::Interrupted { signal, .. } => ExitStatus::Signal(*signal),
            RunError::BudgetReached { .. } => ExitStatus::Budget,
            error => usage_or_failed(error.is_usage()),
        }
    }
}

impl Exit for critbench_engine::commands::estimate::EstimateError {
    fn status(&self) -> ExitStatus {
        use critbench_engine::commands::estimate::EstimateError;
        match self {
            // The pilot is a run: a signal stops it as it stops one.
            EstimateError::Pilot(error) => error.status(),
            error => usage_or_failed(error.is_usage()),
        }
    }
}

impl Exit for critbench_engine::commands::rescore::RescoreError {
    fn status(&self) -> ExitStatus {
        use critbench_engine::commands::rescore::RescoreError;
        match self {
            RescoreError::Interrupted { signal, .. } => ExitStatus::Signal(*signal),
            error => usage_or_failed(error.is_usage()),
        }
    }
}

impl Exit for critbench_engine::commands::replay::ReplayError {
    fn status(&self) -> ExitStatus {
        usage_or_failed(self.is_usage())
    }
}

impl Exit for critbench_engine::run_dir::merge::MergeError {
    fn status(&self) -> ExitStatus {
        usage_or_failed(self.is_usage())
    }
}

impl Exit for critbench_engine::commands::judge::JudgeSetupError {
    fn status(&self) -> ExitStatus {
        ExitStatus::Usage
    }
}

impl Exit for critbench_engine::commands::judge::JudgeRunError {
    fn status(&self) -> ExitStatus {
        usage_or_failed(self.is_usage())
    }
}

impl Exit for crate::shard::ShardError {
    fn status(&self) -> ExitStatus {
        ExitStatus::Usage
    }
}

impl Exit for critbench_view::ViewError {
    fn status(&self) -> ExitStatus {
        usage_or_failed(self.is_usage())
    }
}

impl Exit for critbench_report::ReportError {
    fn status(&self) -> ExitStatus {
        usage_or_failed(self.is_usage())
    }
}

/// The experiment file a command was given, else the first of `defaults` present here (for `run`:
/// `experiment.toml` in the working directory, as cargo finds `Cargo.toml`, then the demo).
pub fn experiment_file(given: Option<PathBuf>, defaults: &[&str], command: &str) -> Result<PathBuf, Failure> {
    if let Some(path) = given {
        return Ok(path);
    }
    if let Some(found) = defaults.iter().map(PathBuf::from).find(|path| path.is_file()) {
        return Ok(found);
    }
    Err(Failure::usage(format!(
        "no experiment given and {} here; pass an experiment file: critbench {command} EXPERIMENT.toml \
         (critbench init writes a starter {LOCAL_EXPERIMENT} here)",
        match defaults {
            [one] => format!("{one} is not"),
            many => format!("none of {} is", many.join(", ")),
        }
    )))
}

/// The experiment a command runs when none is named and the working directory holds one.
pub const LOCAL_EXPERIMENT: &str = "experiment.toml";

/// `--jobs 0` is not a number of workers.
pub fn check_jobs(jobs: Option<usize>) -> Result<(), Failure> {
    if jobs == Some(0) { Err(Failure::usage("--jobs must be at least 1")) } else { Ok(()) }
}
