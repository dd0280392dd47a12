//! The JSON messages a critic receives, for plugins written in Rust.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// The version of the critique request message.
pub const REQUEST_VERSION: u32 = 1;

/// A critique request: one draft of one task at one round.
#[derive(Debug, Deserialize)]
pub struct Request {
    #[serde(default)]
    pub request_version: u32,
    pub task: RequestTask,
    pub draft: String,
    pub round: u32,
}

/// The task as a critic sees it (SPEC §3). Unknown fields are ignored so that later hosts may
/// send more.
#[derive(Debug, Default, Deserialize)]
pub struct RequestTask {
    pub id: String,
    #[serde(default)]
    pub prompt: String,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub context: Option<String>,
    #[serde(default)]
    pub evidence: BTreeMap<String, String>,
    #[serde(default)]
    pub critiques: Vec<Value>,
    #[serde(default)]
    pub meta: Option<Value>,
}
