//! An OpenAI-compatible chat client for critique→revise loops: `/v1/chat/completions` with a
//! model and sampling per role (generator, reviser, judge, adjudicator), as used against
//! llama.cpp's server, vLLM, Ollama or a hosted API.
//!
//! What it adds over a bare HTTP call, all inside one [`Client::chat`] that worker threads call
//! directly (blocking), or [`Client::chat_async`] that any executor awaits (a request waiting on
//! the server then costs a future, not a thread):
//! - a **response cache** in SQLite, keyed by endpoint, request body (model, messages, sampling,
//!   response format) and the call's identity (role × task × epoch × round × attempt), with
//!   identical requests in flight answered once; errors are never stored;
//! - **several endpoints** (replicas of one model): each request goes to the healthy endpoint
//!   with the fewest in flight; one that fails repeatedly leaves the rotation for a back-off and
//!   is probed back in; a failed attempt is retried at once on another endpoint;
//! - a **concurrency limit** per endpoint that halves on 429/503 and grows back after sustained
//!   success (AIMD), its history kept for the manifest;
//! - **retries** with exponential backoff and jitter on timeouts, connection errors, 5xx, 429
//!   (honouring `Retry-After`) and unparseable bodies, a per-request timeout, and one clear error
//!   after the last attempt;
//! - **token accounting** from `usage`, and a run-wide cap after which calls fail fast;
//! - **money**: each role's tokens at its model's [`Price`] (cached input at its own rate), what
//!   the model calls cost against a [`Budget`] whose flag the run polls before every loop;
//! - **structured output per server**: the critique schema a critic asks for in OpenAI's form is
//!   sent in the form each endpoint's server reads (vLLM, llama.cpp's server, Ollama), the server
//!   configured or detected at start ([`ServerKind`]);
//! - **politeness**: a `Retry-After` or a spent rate-limit budget pauses that endpoint for every
//!   caller; latency percentiles per role and the time spent waiting on the server, queued for a
//!   slot, and backing off;
//! - the **API key** read from the environment variable the settings name, sent as a sensitive
//!   header, never written anywhere: replaced by `[REDACTED]` in every error and in every answer
//!   (a server that echoes it), before the answer is cached, and counted; URLs are shown and
//!   recorded without credentials or query.
//!
//! The experiment file's `[openai]` table is read into [`OpenAiTable`] and validated into
//! [`ClientSettings`] by [`OpenAiTable::resolve`].
//!
//! Beside the client, the model-facing code that uses it: [`prompts`] (what each role is told, and
//! model text cleaned before anyone sees it), [`author`] (the `openai` backend's author, an
//! implementation of [`critbench_core::author::Author`]) and [`usage`] (the client's report, as
//! `manifest.json` records it, typed).
//!
//! ```no_run
//! use std::collections::BTreeMap;
//! use std::time::Duration;
//! use critbench_openai::{
//!     CacheMode, CallIdentity, ChatRequest, Client, ClientSettings, EndpointSettings, Failover, Message, Role,
//!     RoleSettings,
//! };
//!
//! let role = RoleSettings::new("qwen2.5:7b", 0.7, Some(512), 7);
//! let client = Client::new(ClientSettings {
//!     endpoints: vec![EndpointSettings::new("http://127.0.0.1:11434/v1", 4)],
//!     roles: BTreeMap::from([(Role::Generator, role)]),
//!     timeout: Duration::from_secs(60),
//!     max_retries: 4,
//!     retry_base: Duration::from_millis(500),
//!     max_tokens_total: None,
//!     cache: CacheMode::Disk { path: "reports/.critbench-cache.sqlite".into() },
//!     failover: Failover::default(),
//!     currency: None,
//!     track_tasks: false,
//! })
//! .unwrap();
//! let request = ChatRequest { messages: vec![Message::user("Write a haiku about rust.")], response_format: None };
//! let identity = CallIdentity { task_id: "haiku".into(), epoch: 0, round: 0, attempt: 1 };
//! let answer = client.chat(Role::Generator, &request, &identity).unwrap();
//! println!("{} ({:?} tokens out)", answer.content, answer.tokens_out);
//! ```

#![warn(missing_docs)]

pub mod author;
mod cache;
mod chat;
mod client;
mod limiter;
pub mod metered;
#[cfg(any(test, feature = "mock-server"))]
pub mod mock_server;
mod pool;
pub mod prompts;
pub mod server;
mod settings;
mod table;
pub mod usage;

pub use cache::CACHE_FORMAT;
pub use chat::{CallIdentity, ChatAnswer, ChatError, ChatRequest, MIN_REDACTED_CHARS, Message, REDACTED};
pub use client::{Client, ClientError, request_seed};
pub use pool::EndpointStats;
pub use server::Server;
pub use settings::{
    Budget, CacheMode, ClientSettings, EndpointSettings, Failover, MAX_BACKOFF, Price, Role, RoleSettings, ServerKind,
    display_url,
};
pub use table::{
    DEFAULT_CONCURRENCY, DEFAULT_MAX_RETRIES, DEFAULT_RETRY_BASE_MS, DEFAULT_TIMEOUT_S, MAX_CONCURRENCY, OpenAiTable,
    Requirements, SettingsError,
};
pub use usage::{BudgetStop, LimitChange, LimitReason};

#[cfg(test)]
mod author_tests;
#[cfg(test)]
mod client_tests;
#[cfg(test)]
mod test_executor;
