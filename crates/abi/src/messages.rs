//! The JSON messages a critic receives, for plugins written in Rust.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// The version of the critique request message, task included ([`Request`]).
pub const REQUEST_VERSION: u32 = 1;
/// The version of the request about an opened task (`critique_task`, [`TaskRequest`]): a whole
/// request without its `task`.
pub const TASK_REQUEST_VERSION: u32 = 2;
/// The version of the critique answer (`critique_version`; an answer without one is version 1).
pub const CRITIQUE_VERSION: u32 = 1;

/// A critique request: one draft of one task at one round.
#[derive(Debug, Deserialize)]
pub struct Request {
    /// [`REQUEST_VERSION`] of the host that sent it.
    #[serde(default)]
    pub request_version: u32,
    /// The task the draft answers.
    pub task: RequestTask,
    /// The draft to critique.
    pub draft: String,
    /// The round of the loop: 0 for the first draft.
    pub round: u32,
}

/// The task as a critic sees it (docs/REFERENCE.md, Dataset). Unknown fields are ignored so that later hosts may
/// send more.
#[derive(Debug, Default, Deserialize)]
pub struct RequestTask {
    /// The task's id.
    pub id: String,
    /// What the writer was asked.
    #[serde(default)]
    pub prompt: String,
    /// The task's kind (`paper`, `rag`, …), when it has one.
    #[serde(default)]
    pub kind: Option<String>,
    /// Background the writer was given.
    #[serde(default)]
    pub context: Option<String>,
    /// Evidence passages by id (RAG tasks).
    #[serde(default)]
    pub evidence: BTreeMap<String, String>,
    /// Scripted critiques, one per round (the `scripted` critic).
    #[serde(default)]
    pub critiques: Vec<Value>,
    /// Free-form metadata.
    #[serde(default)]
    pub meta: Option<Value>,
}

/// A request about a task opened before (`critique_task`): one draft at one round.
/// `{"request_version": 2, "round": 0, "draft": "..."}`; the task is the one its handle was opened
/// with.
#[derive(Debug, Deserialize)]
pub struct TaskRequest {
    /// [`TASK_REQUEST_VERSION`] of the host that sent it.
    #[serde(default)]
    pub request_version: u32,
    /// The draft to critique.
    pub draft: String,
    /// The round of the loop: 0 for the first draft.
    pub round: u32,
}
