//! What one chat call asks and gets back: the messages, the call's identity, the answer (with what
//! a secret in it is replaced by), and why there is none.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::settings::Role;

/// One chat message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The message's text.
    pub content: String,
}

impl Message {
    /// A `system` message.
    pub fn system(content: impl Into<String>) -> Message {
        Message { role: "system".into(), content: content.into() }
    }
    /// A `user` message.
    pub fn user(content: impl Into<String>) -> Message {
        Message { role: "user".into(), content: content.into() }
    }
    /// An `assistant` message.
    pub fn assistant(content: impl Into<String>) -> Message {
        Message { role: "assistant".into(), content: content.into() }
    }
}

/// What to ask: the messages and, optionally, a structured-output request such as
/// `{"type": "json_object"}`. Model and sampling come from the role's settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ChatRequest {
    /// The conversation, in order.
    pub messages: Vec<Message>,
    /// A structured-output request in OpenAI's form, sent in the form each server reads.
    pub response_format: Option<Value>,
}

/// Which call of which loop this is. Part of the cache key and of the request's seed, so that
/// epochs resample, retries of a critique draw again, and a rerun asks exactly the same. The arm
/// is deliberately not part of it: arms are paired (docs/REFERENCE.md, Arms), so round 0 of every arm must be the
/// same draft.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallIdentity {
    /// The task the call is for.
    pub task_id: String,
    /// The loop's epoch.
    pub epoch: u32,
    /// The loop's round.
    pub round: u32,
    /// 1 for the first try; the host's critique retries count up.
    pub attempt: u32,
}

/// A model's answer and what it cost.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatAnswer {
    /// The answer's text, as the model wrote it.
    pub content: String,
    /// Prompt tokens, when the server counted them.
    pub tokens_in: Option<u64>,
    /// Completion tokens, when the server counted them.
    pub tokens_out: Option<u64>,
    /// Served without a model call (from the cache, or shared with an identical request).
    pub cached: bool,
    /// The server cut the answer at the role's `max_tokens` (`finish_reason` `length`): it may end
    /// mid-sentence, or mid-JSON.
    pub truncated: bool,
}

/// What an API key (or a URL's password or query) is replaced by wherever a server echoes it.
pub const REDACTED: &str = "[REDACTED]";

/// Secrets shorter than this are left in model answers: a key of a few characters (`dummy`,
/// `none`, as local servers take) is more likely ordinary text than a leak, and replacing it
/// would corrupt drafts. Messages the client makes are scrubbed of every secret.
pub const MIN_REDACTED_CHARS: usize = 8;

/// Why a chat call produced no answer. The text never contains the API key.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ChatError {
    #[error("no model is configured for the {0} role; add it to [openai] models")]
    /// The role has no model in `[openai] models`.
    NoModel(Role),
    #[error(
        "token cap reached: {used} tokens used of max_tokens_total = {cap}; no new model calls are made in this run"
    )]
    /// The run reached `max_tokens_total`.
    TokenCap {
        /// `max_tokens_total`.
        cap: u64,
        /// Tokens used so far.
        used: u64,
    },
    /// Every attempt failed.
    #[error("{role} call failed after {attempts} attempt(s): {last}")]
    Failed {
        /// The role asked.
        role: Role,
        /// Attempts made.
        attempts: u32,
        /// What the last attempt met (the server's status and message, a timeout, …), the API
        /// key replaced.
        last: String,
    },
    /// The request an identical call waited on was dropped before it had an outcome (a bug).
    #[error("the request was abandoned (internal error)")]
    Abandoned,
}
