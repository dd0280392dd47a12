//! A writer program's hello: who it is and which form of the protocol it speaks ([`read_hello`]),
//! and what the manifest records of it ([`WriterInfo`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::program::{HelloRefused, excerpt};
use crate::protocol::{Form, PROTOCOL_VERSION};

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
    pipelined: bool,
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

/// A writer's hello and the form it chooses, or what is wrong with it.
pub(super) fn read_hello(hello: &Value) -> Result<(Form, Hello), HelloRefused> {
    let refused = |bad: BadHello| HelloRefused::Protocol(bad.to_string());
    if hello.get("score_range").is_some() {
        return Err(refused(BadHello::Critic { hello: excerpt(&hello.to_string()) }));
    }
    let hello = Hello::deserialize(hello).map_err(|e| refused(BadHello::Json(e)))?;
    if hello.protocol != PROTOCOL_VERSION {
        return Err(refused(BadHello::Protocol(hello.protocol)));
    }
    if hello.name.is_empty() {
        return Err(refused(BadHello::NoName));
    }
    Ok((if hello.pipelined { Form::Pipelined } else { Form::Simple }, hello))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_critic_or_another_version_is_refused_with_what_to_change() {
        let read = |line: &str| read_hello(&serde_json::from_str(line).unwrap());
        let refused = |line: &str| match read(line) {
            Err(HelloRefused::Protocol(message)) => message,
            _ => panic!("{line} is not refused"),
        };
        assert!(read(r#"{"protocol": 2, "name": "w", "version": "1"}"#).is_ok_and(|(form, _)| form == Form::Simple));
        let critic = refused(r#"{"protocol": 2, "name": "c", "version": "1", "score_range": [0, 10]}"#);
        assert!(critic.contains("is a critic's"), "{critic}");
        assert!(refused(r#"{"protocol": 1, "name": "w", "version": "1"}"#).contains("say \"protocol\": 2"));
        let pipelined = read(r#"{"protocol": 2, "name": "w", "version": "1", "pipelined": true}"#);
        assert!(pipelined.is_ok_and(|(form, _)| form == Form::Pipelined));
        assert!(refused(r#"{"protocol": 2, "name": "", "version": "1"}"#).contains("non-empty name"));
    }
}
