use std::path::PathBuf;
use std::process::ExitCode;

/// The exit status of a run stopped by its `[budget]` (docs/REFERENCE.md, Exit status).
pub const EXIT_BUDGET: u8 = 3;

/// A command's failure: a message and the exit status (1 run failed, 2 bad usage or input, 3 the
/// budget stopped the run, 130 and 143 a signal did).
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure { code: 2, message: message.into() }
    }

    pub fn failed(message: impl Into<String>) -> Failure {
        Failure { code: 1, message: message.into() }
    }

    pub fn report(self) -> ExitCode {
        eprintln!("error: {}", self.message);
        ExitCode::from(self.code)
    }
}

impl From<critbench_engine::EngineError> for Failure {
    fn from(error: critbench_engine::EngineError) -> Failure {
        use critbench_engine::{EngineError, RescoreError};
        // A signal's conventional status: 128 + its number.
        let code = match &error {
            EngineError::Interrupted { signal: "SIGTERM", .. }
            | EngineError::Rescore(RescoreError::Interrupted { signal: "SIGTERM", .. }) => 143,
            EngineError::Interrupted { .. } | EngineError::Rescore(RescoreError::Interrupted { .. }) => 130,
            EngineError::BudgetReached { .. } => EXIT_BUDGET,
            error if error.is_usage() => 2,
            _ => 1,
        };
        Failure { code, message: error.to_string() }
    }
}

impl From<critbench_report::ReportError> for Failure {
    fn from(error: critbench_report::ReportError) -> Failure {
        Failure { code: if error.is_usage() { 2 } else { 1 }, message: error.to_string() }
    }
}

/// The experiment file a command was given, or its default when it is present here.
pub fn experiment_file(given: Option<PathBuf>, default: &str, command: &str) -> Result<PathBuf, Failure> {
    if let Some(path) = given {
        return Ok(path);
    }
    let path = PathBuf::from(default);
    if path.is_file() {
        Ok(path)
    } else {
        Err(Failure::usage(format!(
            "no experiment given and {default} is not here; run from the critbench repository root or pass an \
             experiment file: critbench {command} EXPERIMENT.toml (critbench init writes a starter experiment)"
        )))
    }
}

/// `--jobs 0` is not a number of workers.
pub fn check_jobs(jobs: Option<usize>) -> Result<(), Failure> {
    if jobs == Some(0) { Err(Failure::usage("--jobs must be at least 1")) } else { Ok(()) }
}
