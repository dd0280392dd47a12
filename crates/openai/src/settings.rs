//! What a [`Client`](crate::Client) is built from: the endpoint, the models and sampling of each
//! role, and the limits. The experiment file's `[openai]` table resolves into these.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The part a model plays in a loop. Each role has its own model and sampling, so no model need
/// grade its own work.
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
    /// Every role.
    pub const ALL: [Role; 4] = [Role::Generator, Role::Reviser, Role::Judge, Role::Adjudicator];

    /// The role as the experiment file names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Generator => "generator",
            Role::Reviser => "reviser",
            Role::Judge => "judge",
            Role::Adjudicator => "adjudicator",
        }
    }

    /// The role the experiment file names `name`.
    pub fn parse(name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|role| role.as_str() == name)
    }

    /// The temperature a role samples at unless configured: drafting varies, judging does not,
    /// adjudicating barely.
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
    /// The model name sent with each request.
    pub model: String,
    /// Sampling temperature.
    pub temperature: f64,
    /// Sent as `max_tokens`; the server's default when `None`.
    pub max_tokens: Option<u32>,
    /// The base of the per-request seed: every request sends a seed derived from this and the
    /// call's (task, epoch, round, attempt), so epochs resample and reruns repeat.
    pub seed: u64,
    /// What the model's tokens cost, from the experiment's `[pricing]`; `None` when it has no
    /// price, and then nothing this role does is given a cost (never a cost of zero).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<Price>,
}

impl RoleSettings {
    /// A role of `model` at `temperature` with no price.
    pub fn new(model: impl Into<String>, temperature: f64, max_tokens: Option<u32>, seed: u64) -> RoleSettings {
        RoleSettings { model: model.into(), temperature, max_tokens, seed, price: None }
    }
}

/// What a model's tokens cost, per million tokens, in the run's currency (`[pricing]`). A local
/// server is priced at zero by saying so: `input_per_mtok = 0, output_per_mtok = 0`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Per million input tokens.
    pub input_per_mtok: f64,
    /// Input tokens the server reports it served from its own prompt cache
    /// (`usage.prompt_tokens_details.cached_tokens`); priced as `input_per_mtok` when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_per_mtok: Option<f64>,
    /// Per million output tokens.
    pub output_per_mtok: f64,
}

impl Price {
    /// The cost of one answer: `cached_in` of the `tokens_in` at the cached rate (when set).
    pub fn cost(&self, tokens_in: u64, cached_in: u64, tokens_out: u64) -> f64 {
        let cached = cached_in.min(tokens_in);
        let cached_rate = self.cached_input_per_mtok.unwrap_or(self.input_per_mtok);
        ((tokens_in - cached) as f64 * self.input_per_mtok
            + cached as f64 * cached_rate
            + tokens_out as f64 * self.output_per_mtok)
            / 1e6
    }
}

/// Money a run may spend (`[budget]`): run-wide and per role. When a budget is reached the
/// client raises [`Client::budget_flag`](crate::Client::budget_flag) and the run starts no new
/// loop; calls already under way go on.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Budget {
    /// The most the whole run may spend.
    pub max_cost: Option<f64>,
    /// The most each role may spend.
    pub roles: BTreeMap<Role, f64>,
}

impl Budget {
    /// Whether it sets no limit.
    pub fn is_empty(&self) -> bool {
        self.max_cost.is_none() && self.roles.is_empty()
    }
}

/// Where responses are cached.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum CacheMode {
    /// A SQLite file shared by every run that names it.
    Disk {
        /// The SQLite file.
        path: PathBuf,
    },
    /// In memory for this run only (`--no-cache`): identical requests within the run are still
    /// answered once, so arms stay paired, but nothing is read from or written to disk.
    Memory,
}

/// The server software behind an endpoint, as far as structured output is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerKind {
    /// OpenAI's API, or a server that speaks it exactly.
    Openai,
    /// vLLM.
    Vllm,
    /// llama.cpp's server.
    Llamacpp,
    /// Ollama.
    Ollama,
}

impl ServerKind {
    /// Every kind, in the order the docs list them.
    pub const ALL: [ServerKind; 4] = [ServerKind::Openai, ServerKind::Vllm, ServerKind::Llamacpp, ServerKind::Ollama];

    /// The kind as `[openai] server` names it.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerKind::Openai => "openai",
            ServerKind::Vllm => "vllm",
            ServerKind::Llamacpp => "llamacpp",
            ServerKind::Ollama => "ollama",
        }
    }

    /// `openai`, `vllm`, `llamacpp` (or `llama.cpp`), `ollama`.
    pub fn parse(name: &str) -> Option<ServerKind> {
        match name {
            "llama.cpp" => Some(ServerKind::Llamacpp),
            _ => ServerKind::ALL.into_iter().find(|kind| kind.as_str() == name),
        }
    }
}

impl fmt::Display for ServerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One server the requests may go to (several replicas of one model share the load).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EndpointSettings {
    /// e.g. `http://127.0.0.1:8080/v1`; requests go to `{base_url}/chat/completions`. Recorded
    /// without credentials or query (see [`display_url`]).
    #[serde(serialize_with = "without_credentials")]
    pub base_url: String,
    /// The name of the environment variable holding this endpoint's API key.
    pub api_key_env: Option<String>,
    /// Requests in flight at most at this endpoint (its AIMD limit never rises above it).
    pub concurrency: u32,
    /// The server software, which decides the form structured output is sent in; `None`:
    /// detected when the client starts (see [`ServerKind`]).
    #[serde(serialize_with = "server_name")]
    pub server: Option<ServerKind>,
}

fn server_name<S: serde::Serializer>(server: &Option<ServerKind>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(server.map_or("auto", ServerKind::as_str))
}

impl EndpointSettings {
    /// An endpoint that needs no key, its server detected at start.
    pub fn new(base_url: impl Into<String>, concurrency: u32) -> EndpointSettings {
        EndpointSettings { base_url: base_url.into(), api_key_env: None, concurrency, server: None }
    }

    /// The same endpoint, its server said rather than detected.
    pub fn serving(self, server: ServerKind) -> EndpointSettings {
        EndpointSettings { server: Some(server), ..self }
    }

    /// `{base_url}/{path}`, credentials and query kept: `models`, `chat/completions`.
    pub fn url(&self, path: &str) -> String {
        let url = self.base_url.trim();
        let (rest, query) = match url.split_once('?') {
            Some((rest, query)) => (rest, Some(query)),
            None => (url, None),
        };
        let mut out = format!("{}/{path}", rest.trim_end_matches('/'));
        if let Some(query) = query {
            out.push('?');
            out.push_str(query);
        }
        out
    }

    /// `path` at the server's root, the base URL without its trailing `/v1`: where llama.cpp's
    /// `/props`, vLLM's `/version` and Ollama's `/api/...` live.
    pub fn root_url(&self, path: &str) -> String {
        let url = self.base_url.trim();
        let (rest, query) = match url.split_once('?') {
            Some((rest, query)) => (rest, Some(query)),
            None => (url, None),
        };
        let rest = rest.trim_end_matches('/');
        let rest = rest.strip_suffix("/v1").unwrap_or(rest);
        let mut out = format!("{rest}/{path}");
        if let Some(query) = query {
            out.push('?');
            out.push_str(query);
        }
        out
    }

    /// The chat completions URL requests are sent to (credentials and query kept).
    pub fn chat_url(&self) -> String {
        self.url("chat/completions")
    }

    /// The chat completions URL as the manifest, the cache and every message show it: no
    /// `user:password@`, no query, no fragment.
    pub fn display_url(&self) -> String {
        display_url(&self.chat_url())
    }
}

/// When an endpoint leaves the rotation and how long it stays out.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Failover {
    /// Failures in a row (connection errors, timeouts, 5xx, unusable bodies) that take an
    /// endpoint out of the rotation.
    pub failures_to_remove: u32,
    /// The first time out; doubled each time the probe that would bring it back fails.
    #[serde(serialize_with = "millis")]
    pub backoff_base: Duration,
    /// The longest time out.
    #[serde(serialize_with = "millis")]
    pub backoff_max: Duration,
}

impl Default for Failover {
    fn default() -> Failover {
        Failover { failures_to_remove: 3, backoff_base: Duration::from_secs(1), backoff_max: Duration::from_secs(60) }
    }
}

/// Everything a client needs. Holds the *name* of each API key's environment variable, never the
/// key itself.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClientSettings {
    /// At least one; requests go to the healthy one with the fewest in flight.
    pub endpoints: Vec<EndpointSettings>,
    /// The model and sampling of each role that has one.
    pub roles: BTreeMap<Role, RoleSettings>,
    /// Per request, from connecting to the last byte of the body.
    #[serde(serialize_with = "seconds")]
    pub timeout: Duration,
    /// Retries after the first attempt, on timeouts, connection errors, 5xx, 429 and bodies that
    /// do not parse. With several endpoints, a retry sent at once to an endpoint the call has not
    /// tried yet is not counted: a call makes at most `max_retries + endpoints` attempts.
    pub max_retries: u32,
    /// The first backoff; doubled at each retry (with jitter), capped at [`MAX_BACKOFF`].
    #[serde(serialize_with = "millis")]
    pub retry_base: Duration,
    /// Tokens (in + out, cached answers included) after which no new call is made.
    pub max_tokens_total: Option<u64>,
    /// Where answers are cached.
    pub cache: CacheMode,
    /// When an endpoint leaves the rotation and is probed back in.
    pub failover: Failover,
    /// The currency of every role's price (`[pricing] currency`), for the report.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    /// Keep what each task's calls cost, by task (`critbench estimate`'s pilot projects from it);
    /// its memory grows with the tasks, so a run never sets it.
    #[serde(skip)]
    pub track_tasks: bool,
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
    /// Requests in flight at most, over every endpoint.
    pub fn concurrency(&self) -> u32 {
        self.endpoints.iter().map(|e| e.concurrency).sum()
    }
}

fn without_credentials<S: serde::Serializer>(url: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&display_url(url))
}

/// A URL without `user:password@`, query or fragment: what may be written down.
pub fn display_url(url: &str) -> String {
    let url = url.trim();
    let url = url.split(['?', '#']).next().unwrap_or("");
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = match rest.find('/') {
                Some(at) => rest.split_at(at),
                None => (rest, ""),
            };
            let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
            format!("{scheme}://{host}{path}")
        }
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_price_is_per_million_tokens_with_cached_input_at_its_own_rate() {
        let price = Price { input_per_mtok: 3.0, cached_input_per_mtok: Some(0.3), output_per_mtok: 15.0 };
        assert!((price.cost(1_000_000, 0, 0) - 3.0).abs() < 1e-12);
        assert!((price.cost(1_000, 400, 200) - (600.0 * 3.0 + 400.0 * 0.3 + 200.0 * 15.0) / 1e6).abs() < 1e-15);
        assert_eq!(price.cost(10, 50, 0), price.cost(10, 10, 0), "never more cached than sent");
        let flat = Price { cached_input_per_mtok: None, ..price };
        assert_eq!(flat.cost(1_000, 400, 0), flat.cost(1_000, 0, 0), "cached input at the input rate");
        let free = Price { input_per_mtok: 0.0, cached_input_per_mtok: None, output_per_mtok: 0.0 };
        assert_eq!(free.cost(123, 4, 56), 0.0);
    }

    #[test]
    fn urls_are_shown_without_credentials_or_query() {
        assert_eq!(display_url("http://user:secret@127.0.0.1:9/v1"), "http://127.0.0.1:9/v1");
        assert_eq!(display_url("https://a@b@host/v1?key=secret#x"), "https://host/v1");
        assert_eq!(display_url("http://host:1"), "http://host:1");
        assert_eq!(display_url(" http://host/v1/ "), "http://host/v1/");
        let endpoint = EndpointSettings::new("http://u:p@h:1/v1/?api-version=2", 1);
        assert_eq!(endpoint.chat_url(), "http://u:p@h:1/v1/chat/completions?api-version=2");
        assert_eq!(endpoint.root_url("props"), "http://u:p@h:1/props?api-version=2");
        assert_eq!(EndpointSettings::new("http://h:1", 1).root_url("api/chat"), "http://h:1/api/chat");
        assert_eq!(endpoint.display_url(), "http://h:1/v1/chat/completions");
        let json = serde_json::to_string(&endpoint).unwrap();
        assert!(json.contains("\"base_url\":\"http://h:1/v1/\"") && !json.contains("u:p"), "{json}");
    }
}
