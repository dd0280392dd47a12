//! A critic's child process started: the program spawned, its hello read (who it is, which form
//! of the protocol it speaks) and its config handed over.

use std::time::Instant;

use serde::Deserialize;

use super::{Child, ProcessCritic};
use crate::program::{Broken, MIN_STARTUP, Program, StartError};
use crate::protocol::{self, ConfigRefused, Form};

/// The first line a critic writes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Hello {
    pub(super) protocol: u32,
    /// The pipelined form; the simple one without.
    #[serde(default)]
    pub(super) pipelined: bool,
    pub(super) name: String,
    pub(super) version: String,
    pub(super) score_range: [f64; 2],
    #[serde(default)]
    pub(super) thread_safe: bool,
    #[serde(default)]
    pub(super) policy_dependent: bool,
    /// The critic's info JSON (`critbench.h`): issue types, required services, hints.
    #[serde(default)]
    pub(super) info: Option<serde_json::Value>,
}

/// A hello that does not say who the critic is.
#[derive(Debug, thiserror::Error)]
enum BadHello {
    #[error("the hello line is not valid: {0}")]
    Json(serde_json::Error),
    #[error(
        "the hello line needs a non-empty name and a finite, non-empty score_range; got {name:?} and [{min}, {max}]"
    )]
    Range { name: String, min: f64, max: f64 },
}

impl From<BadHello> for Broken {
    fn from(bad: BadHello) -> Broken {
        Broken::Protocol(bad.to_string())
    }
}

/// Why a child did not start.
#[derive(Debug, thiserror::Error)]
pub(super) enum StartFailure {
    /// The critic refused its config.
    #[error("{message}")]
    Rejected { message: String },
    /// It did not start, or broke the protocol while starting and was stopped.
    #[error(transparent)]
    Broken(#[from] StartError),
}

impl ProcessCritic {
    /// Spawns a child, reads its hello and sends the config.
    pub(super) fn start(&self) -> Result<(Child, Hello), StartFailure> {
        let (program, hello) = Program::start(&self.launch, self.memory_mb, self.timeout)?;
        let fail =
            |program: Program, broken: Broken| StartFailure::Broken(StartError::Stopped(program.finish(Some(broken))));
        let hello: Hello = match serde_json::from_value(hello) {
            Ok(hello) => hello,
            Err(e) => return Err(fail(program, BadHello::Json(e).into())),
        };
        let form = match Form::from_hello(hello.protocol, hello.pipelined) {
            Ok(form) => form,
            Err(error) => return Err(fail(program, error.into())),
        };
        let [min, max] = hello.score_range;
        if hello.name.is_empty() || !(min.is_finite() && max.is_finite() && min < max) {
            return Err(fail(program, BadHello::Range { name: hello.name, min, max }.into()));
        }
        let mut program = program;
        let startup = self.timeout.max(MIN_STARTUP);
        if let Err(source) = program.send(&protocol::config_line(&self.config)) {
            return Err(fail(program, Broken::Send { what: "the config", source }));
        }
        let answer = match program.next_message(Instant::now() + startup, startup) {
            Ok((answer, _)) => protocol::config_answer(&answer).map_err(Broken::from),
            Err(broken) => Err(broken),
        };
        match answer {
            Ok(Ok(())) => {
                if form == Form::Pipelined {
                    program.let_several_come();
                }
                Ok((Child { program, form, next_id: 1, open: Default::default() }, hello))
            }
            Ok(Err(ConfigRefused(message))) => {
                program.finish(None);
                Err(StartFailure::Rejected { message })
            }
            Err(broken) => Err(fail(program, broken)),
        }
    }
}
