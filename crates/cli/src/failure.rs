use std::process::ExitCode;

/// A command's failure: a message and the exit status (1 run failed, 2 bad usage or input).
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
        Failure { code: if error.is_usage() { 2 } else { 1 }, message: error.to_string() }
    }
}

impl From<critbench_report::ReportError> for Failure {
    fn from(error: critbench_report::ReportError) -> Failure {
        Failure { code: if error.is_usage() { 2 } else { 1 }, message: error.to_string() }
    }
}
