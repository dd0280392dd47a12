//! A writer program's process started: the program spawned, its hello read (who it is, which form
//! of the protocol it speaks) and its config handed over ([`Starter`]); and the lines a process of
//! either form is asked and answers with.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::process::ChildCounters;
use crate::program::{Broken, Launch, MIN_STARTUP, Program, excerpt, text_of};
use crate::protocol::{ConfigRefused, PROTOCOL_VERSION, config_answer, config_line};

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
    /// Spawns a process, reads its hello and hands it the config; the error in words.
    pub(super) fn start(&self) -> Result<(Child, Hello), String> {
        let (program, hello) = Program::start(&self.launch, self.memory_mb, self.timeout)?;
        let fail = |program: Program, broken: Broken| program.finish(Some(broken));
        let hello = match read_hello(hello) {
            Ok(hello) => hello,
            Err(message) => return Err(fail(program, Broken::Protocol(message))),
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
                Err(format!("rejected its config: {message}"))
            }
            Err(broken) => Err(fail(program, broken)),
        }
    }

    /// Stops a process that broke down, counted, and says why for the loop it costs.
    pub(super) fn stop(&self, child: Child, broken: Broken) -> String {
        self.trouble.stopped(&broken);
        let message = child.program.finish(Some(broken));
        format!("{message}; the writer process was stopped and will be restarted")
    }
}

/// Request `id`'s line: `request` (a write request's JSON) as its `write`.
pub(super) fn write_line(id: u64, request: &str) -> String {
    format!("{{\"id\":{id},\"write\":{request}}}")
}

/// A writer's hello, or what is wrong with it.
fn read_hello(hello: Value) -> Result<Hello, String> {
    if hello.get("score_range").is_some() {
        return Err(format!(
            "the hello line is a critic's (it gives a `score_range`): a writer says {{\"protocol\": {PROTOCOL_VERSION}, \
             \"name\": ..., \"version\": ...}}; got {}",
            excerpt(&hello.to_string())
        ));
    }
    let hello: Hello = serde_json::from_value(hello).map_err(|e| format!("the hello line is not valid: {e}"))?;
    if hello.protocol != PROTOCOL_VERSION {
        return Err(format!(
            "the hello says protocol {}; a writer speaks protocol {PROTOCOL_VERSION}: say \"protocol\": {PROTOCOL_VERSION}",
            hello.protocol
        ));
    }
    if hello.name.is_empty() {
        return Err("the hello line needs a non-empty name".into());
    }
    Ok(hello)
}

/// The writer's answer to request `id`: exactly `id` and `draft` (a string), or `id` and `error`.
pub(super) fn answer(message: &Value, id: u64) -> Result<Result<String, String>, String> {
    let text = || excerpt(&message.to_string());
    match message.get("id") {
        Some(got) if got.as_u64() == Some(id) => {}
        None => {
            return Err(format!(
                "the writer wrote a message without an id while critbench waited for request {id}: {}",
                text()
            ));
        }
        Some(got) => {
            return Err(format!(
                "the writer wrote a message for request {got} while critbench waited for request {id}: {}",
                text()
            ));
        }
    }
    let object = message.as_object().expect("a message with an id is an object");
    let keys: Vec<&str> = object.keys().map(String::as_str).filter(|k| *k != "id").collect();
    match (keys.as_slice(), object.get("draft")) {
        (["draft"], Some(Value::String(draft))) => Ok(Ok(draft.clone())),
        (["error"], _) => Ok(Err(text_of(&object["error"]))),
        _ => Err(format!(
            "the writer wrote a line that is not an answer (an answer is {{\"id\": N, \"draft\": \"...\"}} or {{\"id\": N, \
             \"error\": \"...\"}}): {}",
            text()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_a_draft_or_an_error_for_the_request_asked() {
        let read = |line: &str| answer(&serde_json::from_str(line).unwrap(), 4);
        assert_eq!(read(r#"{"id": 4, "draft": "text"}"#), Ok(Ok("text".into())));
        assert_eq!(read(r#"{"id": 4, "error": "no"}"#), Ok(Err("no".into())));
        assert!(
            read(r#"{"id": 3, "draft": "text"}"#)
                .unwrap_err()
                .contains("for request 3 while critbench waited for request 4")
        );
        assert!(read(r#"{"draft": "text"}"#).unwrap_err().contains("without an id"));
        assert!(read(r#"{"id": 4, "draft": 7}"#).unwrap_err().contains("not an answer"));
        assert!(read(r#"{"id": 4, "draft": "a", "error": "b"}"#).unwrap_err().contains("not an answer"));
    }

    #[test]
    fn a_critic_or_another_version_is_refused_with_what_to_change() {
        let read = |line: &str| read_hello(serde_json::from_str(line).unwrap());
        assert!(read(r#"{"protocol": 2, "name": "w", "version": "1"}"#).is_ok());
        let critic = read(r#"{"protocol": 2, "name": "c", "version": "1", "score_range": [0, 10]}"#).unwrap_err();
        assert!(critic.contains("is a critic's"), "{critic}");
        assert!(read(r#"{"protocol": 1, "name": "w", "version": "1"}"#).unwrap_err().contains("say \"protocol\": 2"));
        assert!(read(r#"{"protocol": 2, "name": "w", "version": "1", "pipelined": true}"#).unwrap().pipelined);
        assert!(read(r#"{"protocol": 2, "name": "", "version": "1"}"#).unwrap_err().contains("non-empty name"));
    }
}
