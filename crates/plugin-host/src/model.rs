//! Model access for the programs a run starts: the `model` a writer's request carries (a base URL
//! and a key valid for that request alone, docs/PROTOCOL.md, Model access), and what the calls
//! made with it cost, and the redaction of the run's secrets from what a program writes
//! ([`Redact`]). The run's metered endpoint implements [`ModelAccess`]; this crate only hands the
//! key over, takes the tally back and has what a program wrote redacted before it is stored.

use serde::Serialize;

/// Which of the run's models a request's calls are asked of, and counted under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelRole {
    /// First drafts (and the fresh drafts of `resample`).
    Generator,
    /// Revisions.
    Reviser,
    /// Critiques.
    Judge,
}

/// What takes the run's secrets (its upstream model key, and every key, password or query of its
/// model URLs) out of what a program wrote, before it is stored.
pub trait Redact: Send + Sync {
    /// `text` with every secret replaced by `[REDACTED]`, each replacement counted in the run's
    /// `openai.redacted`.
    fn redact(&self, text: String) -> String;
}

/// Keys for the requests of a run's programs, and the redaction of what they write.
pub trait ModelAccess: Redact {
    /// A key for one request of `role`, whose calls count on round `round` of `task_id`'s loop in
    /// `epoch`.
    fn open(&self, role: ModelRole, task_id: &str, epoch: u32, round: u32) -> Box<dyn ModelPass + '_>;
}

/// One request's key: valid until closed or dropped.
pub trait ModelPass: Send {
    /// What the request's `model` field carries.
    fn model(&self) -> ModelField<'_>;
    /// Ends the key and tallies its calls.
    fn close(self: Box<Self>) -> ModelUse;
}

/// A request's `model`: `{"base_url": "...", "api_key": "..."}`.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct ModelField<'a> {
    /// Where an OpenAI client points (`http://127.0.0.1:PORT/v1`).
    pub base_url: &'a str,
    /// The request's key.
    pub api_key: &'a str,
}

/// What the calls made with one key cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ModelUse {
    /// Calls answered.
    pub calls: u32,
    /// Prompt tokens.
    pub tokens_in: u64,
    /// Completion tokens.
    pub tokens_out: u64,
    /// Whether an answer was cut at its `max_tokens`.
    pub truncated: bool,
}
