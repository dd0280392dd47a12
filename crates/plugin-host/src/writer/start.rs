//! A writer program's process started: the program spawned, its hello read (who it is, which form
//! of the protocol it speaks) and its config handed over ([`Starter`]), or why it did not start
//! ([`NotStarted`]); the lines a process of either form is asked and answers with; and why a
//! request brought no draft ([`WriteError`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::process::ChildCounters;
use crate::program::{Broken, Launch, MIN_STARTUP, Program, StartError, excerpt, text_of};
use crate::protocol::{ConfigRefused, PROTOCOL_VERSION, config_answer, config_line};

/// Why a writer process did not start; the message a loop's `writer_error` holds when a fresh
/// process for its request cannot be started.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct NotStarted(Start);

/// [`NotStarted`]'s cases.
#[derive(Debug, thiserror::Error)]
enum Start {
    /// The program did not start, or broke before its hello.
    #[error(transparent)]
    Program(#[from] StartError),
    /// Its hello, or its answer to the config, broke the protocol, and it was stopped: what
    /// [`Program::finish`] says of it.
    #[error("{0}")]
    Stopped(String),
    /// It refused its config, in its own words.
    #[error("rejected its config: {0}")]
    ConfigRejected(String),
}

/// Why a request to a writer program brought no draft. Its message is the loop's `writer_error`
/// (docs/FORMAT.md).
#[derive(Clone, Debug, thiserror::Error)]
pub(crate) enum WriteError {
    /// The writer answered the request with an error, in its own words.
    #[error("{0}")]
    Answered(String),
    /// No process could be started to serve the request (shared by the requests it was to serve).
    #[error(transparent)]
    NotStarted(Arc<NotStarted>),
    /// The process broke down serving it and was stopped: what [`Program::finish`] says of it.
    #[error("{0}; the writer process was stopped and will be restarted")]
    Stopped(String),
    /// The thread that drove the request's process failed.
    #[error("the writer's driver thread failed (a bug in critbench); see stderr")]
    DriverFailed,
}

/// Who a writer program said it is, and the file its hash was taken of, for the manifest.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WriterInfo {
    /// `generate` (both roles when it is the only program) or `revise`.
    pub role: &'static str,
    /// The hello's `name`.
    pub name: String,
    /// The hello's `version`.
    pub version: String,
    /// The command line as the experiment gives it.
    pub command: Vec<String>,
    /// The sha256 of the first argument that names a file (the script), else of the program.
    pub sha256: String,
}

/// The first line a writer writes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Hello {
    protocol: u32,
    pub(super) name: String,
    pub(super) version: String,
    #[serde(default)]
    pub(super) pipelined: bool,
}

/// How a writer program's processes are started: its command, its config and its limits; and
/// what the manifest records of it.
pub(super) struct Starter {
    pub(super) info: WriterInfo,
    pub(super) launch: Launch,
    pub(super) config: Value,
    pub(super) timeout: Duration,
    pub(super) memory_mb: Option<u64>,
    pub(super) trouble: Arc<ChildCounters>,
}

/// A writer's process and the id of its next request (the config's is 0).
pub(super) struct Child {
    pub(super) program: Program,
    pub(super) next_id: u64,
}

impl Starter {
    /// Spawns a process, reads its hello and hands it the config.
    pub(super) fn start(&self) -> Result<(Child, Hello), NotStarted> {
        let (program, hello) =
            Program::start(&self.launch, self.memory_mb, self.timeout).map_err(|e| NotStarted(e.into()))?;
        let fail = |program: Program, broken: Broken| NotStarted(Start::Stopped(program.finish(Some(broken))));
        let hello = match read_hello(hello) {
            Ok(hello) => hello,
            Err(bad) => return Err(fail(program, Broken::Protocol(bad.to_string()))),
        };
        let mut program = program;
        let startup = self.timeout.max(MIN_STARTUP);
        if let Err(source) = program.send(&config_line(&self.config)) {
            return Err(fail(program, Broken::Send { what: "the config", source }));
        }
        let answer = match program.next_message(Instant::now() + startup, startup) {
            Ok((answer, _)) => config_answer(&answer).map_err(|e| Broken::Protocol(e.to_string())),
            Err(broken) => Err(broken),
        };
        match answer {
            Ok(Ok(())) => Ok((Child { program, next_id: 1 }, hello)),
            Ok(Err(ConfigRefused(message))) => {
                program.finish(None);
                Err(NotStarted(Start::ConfigRejected(message)))
            }
            Err(broken) => Err(fail(program, broken)),
        }
    }

    /// Stops a process that broke down, counted, and says why for the loop it costs.
    pub(super) fn stop(&self, child: Child, broken: Broken) -> WriteError {
        self.trouble.stopped(&broken);
        WriteError::Stopped(child.program.finish(Some(broken)))
    }
}

/// Request `id`'s line: `request` (a write request's JSON) as its `write`.
pub(super) fn write_line(id: u64, request: &str) -> String {
    format!("{{\"id\":{id},\"write\":{request}}}")
}

/// A hello that is not a writer's.
#[derive(Debug, thiserror::Error)]
enum BadHello {
    /// A critic's hello (`hello`: its start).
    #[error(
        "the hello line is a critic's (it gives a `score_range`): a writer says {{\"protocol\": {PROTOCOL_VERSION}, \
         \"name\": ..., \"version\": ...}}; got {hello}"
    )]
    Critic { hello: String },
    #[error("the hello line is not valid: {0}")]
    Json(serde_json::Error),
    /// Another protocol version than this critbench's.
    #[error(
        "the hello says protocol {0}; a writer speaks protocol {PROTOCOL_VERSION}: say \"protocol\": {PROTOCOL_VERSION}"
    )]
    Protocol(u32),
    #[error("the hello line needs a non-empty name")]
    NoName,
}

/// A writer's hello, or what is wrong with it.
fn read_hello(hello: Value) -> Result<Hello, BadHello> {
    if hello.get("score_range").is_some() {
        return Err(BadHello::Critic { hello: excerpt(&hello.to_string()) });
    }
    let hello: Hello = serde_json::from_value(hello).map_err(BadHello::Json)?;
    if hello.protocol != PROTOCOL_VERSION {
        return Err(BadHello::Protocol(hello.protocol));
    }
    if hello.name.is_empty() {
        return Err(BadHello::NoName);
    }
    Ok(hello)
}

/// A message that does not answer the request the writer was asked (`message`: the message's
/// start).
#[derive(Debug, thiserror::Error)]
pub(super) enum BadAnswer {
    #[error("the writer wrote a message without an id while critbench waited for request {id}: {message}")]
    NoId { id: u64, message: String },
    /// An answer to request `got`.
    #[error("the writer wrote a message for request {got} while critbench waited for request {id}: {message}")]
    OtherId { got: Value, id: u64, message: String },
    #[error(
        "the writer wrote a line that is not an answer (an answer is {{\"id\": N, \"draft\": \"...\"}} or {{\"id\": N, \
         \"error\": \"...\"}}): {message}"
    )]
    NotAnAnswer { message: String },
}

impl From<BadAnswer> for Broken {
    fn from(bad: BadAnswer) -> Broken {
        Broken::Protocol(bad.to_string())
    }
}

/// The writer's answer to request `id`: exactly `id` and `draft` (a string), or `id` and `error`.
pub(super) fn answer(message: &Value, id: u64) -> Result<Result<String, WriteError>, BadAnswer> {
    let text = || excerpt(&message.to_string());
    match message.get("id") {
        Some(got) if got.as_u64() == Some(id) => {}
        None => return Err(BadAnswer::NoId { id, message: text() }),
        Some(got) => return Err(BadAnswer::OtherId { got: got.clone(), id, message: text() }),
    }
    let object = message.as_object().expect("a message with an id is an object");
    let keys: Vec<&str> = object.keys().map(String::as_str).filter(|k| *k != "id").collect();
    match (keys.as_slice(), object.get("draft")) {
        (["draft"], Some(Value::String(draft))) => Ok(Ok(draft.clone())),
        (["error"], _) => Ok(Err(WriteError::Answered(text_of(&object["error"])))),
        _ => Err(BadAnswer::NotAnAnswer { message: text() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_a_draft_or_an_error_for_the_request_asked() {
        let read = |line: &str| answer(&serde_json::from_str(line).unwrap(), 4);
        let refused = |line: &str| read(line).unwrap_err().to_string();
        assert_eq!(read(r#"{"id": 4, "draft": "text"}"#).unwrap().unwrap(), "text");
        assert_eq!(read(r#"{"id": 4, "error": "no"}"#).unwrap().unwrap_err().to_string(), "no");
        assert!(
            refused(r#"{"id": 3, "draft": "text"}"#).contains("for request 3 while critbench waited for request 4")
        );
        assert!(refused(r#"{"draft": "text"}"#).contains("without an id"));
        assert!(refused(r#"{"id": 4, "draft": 7}"#).contains("not an answer"));
        assert!(refused(r#"{"id": 4, "draft": "a", "error": "b"}"#).contains("not an answer"));
    }

    #[test]
    fn a_critic_or_another_version_is_refused_with_what_to_change() {
        let read = |line: &str| read_hello(serde_json::from_str(line).unwrap());
        let refused = |line: &str| read(line).unwrap_err().to_string();
        assert!(read(r#"{"protocol": 2, "name": "w", "version": "1"}"#).is_ok());
        let critic = refused(r#"{"protocol": 2, "name": "c", "version": "1", "score_range": [0, 10]}"#);
        assert!(critic.contains("is a critic's"), "{critic}");
        assert!(refused(r#"{"protocol": 1, "name": "w", "version": "1"}"#).contains("say \"protocol\": 2"));
        assert!(read(r#"{"protocol": 2, "name": "w", "version": "1", "pipelined": true}"#).unwrap().pipelined);
        assert!(refused(r#"{"protocol": 2, "name": "", "version": "1"}"#).contains("non-empty name"));
    }
}
