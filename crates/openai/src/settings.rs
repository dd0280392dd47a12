//! What a [`Client`](crate::Client) is built from: the endpoint, the models and sampling of each
//! role, and the limits. The experiment file's `[openai]` table resolves into these.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

/// The part a model plays in a loop. Each role has its own model and sampling, so no model need
/// grade its own work (seed 004).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Writes the first draft.
    Generator,
    /// Revises a draft, with or without the critique.
    Reviser,
    /// Critiques a draft (asked by the `llm-judge` plugin through the host).
    Judge,
    /// Resolves contradictions in a final draft after the loop.
    Adjudicator,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Generator, Role::Reviser, Role::Judge, Role::Adjudicator];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Generator => "generator",
            Role::Reviser => "reviser",
            Role::Judge => "judge",
            Role::Adjudicator => "adjudicator",
        }
    }

    pub fn parse(name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|role| role.as_str() == name)
    }

    /// The temperature a role samples at unless configured: drafting varies, judging does not,
    /// adjudicating barely (seed 004).
    pub fn default_temperature(self) -> f64 {
        match self {
            Role::Generator | Role::Reviser => 0.7,
            Role::Judge => 0.0,
            Role::Adjudicator => 0.2,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One role's model and sampling parameters.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RoleSettings {
    pub model: String,
    pub temperature: f64,
    /// Sent as `max_tokens`; the server's default when `None`.
    pub max_tokens: Option<u32>,
    /// The base of the per-request seed: every request sends a seed derived from this and the
    /// call's (task, epoch, round, attempt), so epochs resample and reruns repeat.
    pub seed: u64,
}

/// Where responses are cached.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum CacheMode {
    /// A SQLite file shared by every run that names it.
    Disk { path: PathBuf },
    /// In memory for this run only (`--no-cache`): identical requests within the run are still
    /// answered once, so arms stay paired, but nothing is read from or written to disk.
    Memory,
}

/// Everything a client needs. Holds the *name* of the API key's environment variable, never the
/// key itself.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClientSettings {
    /// e.g. `http://127.0.0.1:8080/v1`; requests go to `{base_url}/chat/completions`.
    pub base_url: String,
    pub api_key_env: Option<String>,
    /// Requests in flight at most (the AIMD limit never rises above it).
    pub concurrency: u32,
    pub roles: BTreeMap<Role, RoleSettings>,
    /// Per request, from connecting to the last byte of the body.
    #[serde(serialize_with = "seconds")]
    pub timeout: Duration,
    /// Retries after the first attempt, on timeouts, connection errors, 5xx, 429 and bodies that
    /// do not parse.
    pub max_retries: u32,
    /// The first backoff; doubled at each retry (with jitter), capped at [`MAX_BACKOFF`].
    #[serde(serialize_with = "millis")]
    pub retry_base: Duration,
    /// Tokens (in + out, cached answers included) after which no new call is made.
    pub max_tokens_total: Option<u64>,
    pub cache: CacheMode,
}

/// The longest wait between two attempts, also the cap on a server's `Retry-After`.
pub const MAX_BACKOFF: Duration = Duration::from_secs(120);

fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

fn millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_millis() as u64)
}

impl ClientSettings {
    /// The chat completions URL.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }
}
