//! A program's process started, whatever its role: spawned, its hello read by the role (who it is,
//! which form of the protocol it speaks), its config handed over ([`Starter`]); stopped when it
//! broke, counted by cause; and why a request to it brought no answer ([`Failure`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Broken, ChildCounters, Launch, MIN_STARTUP, Program, StartError, excerpt};
use crate::protocol::{self, ConfigRefused, Form};
use crate::services::{CallScope, Host, ServiceError};

/// Why a program's process did not start.
#[derive(Debug, thiserror::Error)]
pub enum NotStarted {
    /// The program did not start, or broke before or in its hello and was stopped.
    #[error(transparent)]
    #[allow(private_interfaces)]
    Program(#[from] StartError),
    /// It refused its config, in its own words.
    #[error("rejected its config: {0}")]
    ConfigRejected(String),
    /// Its hello says it is another program than the one the run started with (the role's words).
    #[error("{0}")]
    Other(String),
}

/// Why a hello is refused ([`Starter::hello`]).
pub(crate) enum HelloRefused {
    /// It breaks the protocol: the process is stopped with these words.
    Protocol(String),
    /// It is well formed but says the program is another one ([`NotStarted::Other`]).
    Other(String),
}

/// Why a request to a program brought no answer. Its message is what the round records
/// (`critic_error`, `writer_error`), in the role's words.
#[derive(Clone, Debug, thiserror::Error)]
pub(crate) enum Failure {
    /// The program answered the request with an error, in its own words.
    #[error("{0}")]
    Answered(String),
    /// No process could be started to serve the request (shared by the requests it was to serve).
    #[error(transparent)]
    NotStarted(Arc<NotStarted>),
    /// The process broke down serving it and was stopped: what [`Program::finish`] says of it.
    #[error("{0}")]
    Stopped(String),
    /// The thread that drove the request's process failed.
    #[error("the driver thread failed (a bug in critbench); see stderr")]
    DriverFailed,
}

/// Reads a hello: the form of the protocol it chooses, or why it is refused.
pub(crate) type ReadHello = Box<dyn Fn(&Value) -> Result<Form, HelloRefused> + Send + Sync>;

/// How a program's processes are started and stopped: its command, its config, its limits, the
/// services it may call, and the counts of its processes stopped after a failure.
pub(crate) struct Starter {
    pub(crate) launch: Launch,
    pub(crate) config: Value,
    pub(crate) timeout: Duration,
    pub(crate) memory_mb: Option<u64>,
    /// The run's services, which answer the program's service requests; `None`: it may make none.
    pub(crate) host: Option<Arc<Host>>,
    pub(crate) trouble: Arc<ChildCounters>,
    /// How a restarted process's hello is read.
    pub(crate) hello: ReadHello,
}

/// A process of a program: the program, the form its hello chose, and the id of its next message
/// (the config's is 0).
pub(crate) struct Child {
    pub(crate) program: Program,
    pub(crate) form: Form,
    pub(crate) next_id: u64,
}

impl Child {
    /// The id of the next message, taken.
    pub(crate) fn take_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id - 1
    }
}

impl Starter {
    /// Spawns a process, reads its hello ([`Starter::hello`]) and hands it the config.
    pub(crate) fn start(&self) -> Result<Child, NotStarted> {
        self.start_with(|hello| (self.hello)(hello).map(|form| (form, ()))).map(|(child, ())| child)
    }

    /// [`Starter::start`] with the hello read by `read`, which keeps what it needs of it.
    pub(crate) fn start_with<T>(
        &self,
        read: impl FnOnce(&Value) -> Result<(Form, T), HelloRefused>,
    ) -> Result<(Child, T), NotStarted> {
        let (mut program, hello) = Program::start(&self.launch, self.memory_mb, self.timeout)?;
        let fail =
            |program: Program, broken: Broken| NotStarted::Program(StartError::Stopped(program.finish(Some(broken))));
        let (form, kept) = match read(&hello) {
            Ok(read) => read,
            Err(HelloRefused::Protocol(message)) => return Err(fail(program, Broken::Protocol(message))),
            Err(HelloRefused::Other(message)) => {
                program.finish(None);
                return Err(NotStarted::Other(message));
            }
        };
        let startup = self.timeout.max(MIN_STARTUP);
        if let Err(source) = program.send(&protocol::config_line(&self.config)) {
            return Err(fail(program, Broken::Send { what: "the config", source }));
        }
        let answer = match program.next_message(Instant::now() + startup, startup) {
            Ok((answer, _)) => protocol::config_answer(self.launch.role, &answer).map_err(Broken::from),
            Err(broken) => Err(broken),
        };
        match answer {
            Ok(Ok(())) => {
                if form == Form::Pipelined {
                    program.let_several_come();
                }
                Ok((Child { program, form, next_id: 1 }, kept))
            }
            Ok(Err(ConfigRefused(message))) => {
                program.finish(None);
                Err(NotStarted::ConfigRejected(message))
            }
            Err(broken) => Err(fail(program, broken)),
        }
    }

    /// Stops a process that broke down, counted by cause, and says why for the request it costs.
    pub(crate) fn stop(&self, child: Child, broken: Broken) -> Failure {
        self.trouble.stopped(&broken);
        Failure::Stopped(child.program.finish(Some(broken)))
    }

    /// The run's answer to service call `name` with `request`, made for the request of `scope`
    /// (`line`: the call); a program without services breaks the protocol by making one.
    pub(crate) fn serve(
        &self,
        name: &str,
        request: &str,
        scope: Option<&mut CallScope>,
        line: &[u8],
    ) -> Result<Result<String, ServiceError>, Broken> {
        match &self.host {
            Some(host) => Ok(host.dispatch(name, request, scope)),
            None => Err(Broken::Protocol(format!(
                "the {} made a service call, which only a critic can: {}",
                self.launch.role.name,
                excerpt(String::from_utf8_lossy(line).trim_end())
            ))),
        }
    }
}
