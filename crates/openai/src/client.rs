//! The blocking chat client: cache, token cap, concurrency limit, retries, one HTTP request.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, RETRY_AFTER};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::cache::{CACHE_FORMAT, CachedAnswer, KeyParts, Lookup, ResponseCache};
use crate::pool::{Outcome, Pick, Rotation, Ticket};
use crate::settings::{CacheMode, ClientSettings, EndpointSettings, MAX_BACKOFF, Role, RoleSettings};

/// One chat message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    pub content: String,
}

impl Message {
    pub fn system(content: impl Into<String>) -> Message {
        Message { role: "system".into(), content: content.into() }
    }
    pub fn user(content: impl Into<String>) -> Message {
        Message { role: "user".into(), content: content.into() }
    }
    pub fn assistant(content: impl Into<String>) -> Message {
        Message { role: "assistant".into(), content: content.into() }
    }
}

/// What to ask: the messages and, optionally, a structured-output request such as
/// `{"type": "json_object"}`. Model and sampling come from the role's settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    pub response_format: Option<Value>,
}

/// Which call of which loop this is. Part of the cache key and of the request's seed, so that
/// epochs resample, retries of a critique draw again, and a rerun asks exactly the same. The arm
/// is deliberately not part of it: arms are paired (SPEC §6), so round 0 of every arm must be the
/// same draft.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallIdentity {
    pub task_id: String,
    pub epoch: u32,
    pub round: u32,
    /// 1 for the first try; the host's critique retries count up.
    pub attempt: u32,
}

/// A model's answer and what it cost.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatAnswer {
    pub content: String,
    pub tokens_in: Option<u64>,
    pub tokens_out: Option<u64>,
    /// Served without a model call (from the cache, or shared with an identical request).
    pub cached: bool,
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
    NoModel(Role),
    #[error(
        "token cap reached: {used} tokens used of max_tokens_total = {cap}; no new model calls are made in this run"
    )]
    TokenCap { cap: u64, used: u64 },
    /// `{role} call failed after N attempt(s): {last error}`.
    #[error("{0}")]
    Failed(String),
}

/// Why a client could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(
        "[openai] api_key_env names the environment variable `{0}`, but it is not set (or empty); \
         export it, or remove api_key_env for a server that needs no key"
    )]
    MissingKey(String),
    #[error("[openai] base_url `{0}` is not an http:// or https:// URL")]
    BadUrl(String),
    #[error("[openai] no endpoint: give `base_url`")]
    NoEndpoint,
    #[error(transparent)]
    Cache(#[from] crate::cache::CacheError),
    #[error("cannot start the HTTP client: {0}")]
    Http(String),
}

#[derive(Default)]
struct RoleCounters {
    calls: u64,
    cache_hits: u64,
    shared: u64,
    model_calls: u64,
    failures: u64,
    refused: u64,
    tokens_in: u64,
    tokens_out: u64,
}

#[derive(Default)]
struct HttpCounters {
    requests: u64,
    retries: u64,
    ok: u64,
    status_429: u64,
    status_503: u64,
    status_5xx_other: u64,
    status_4xx_other: u64,
    timeouts: u64,
    connection_errors: u64,
    malformed: u64,
}

/// One server requests may go to.
struct Endpoint {
    /// Where requests are sent, credentials and query included.
    url: String,
    /// The same without credentials or query: what every message and the manifest show.
    display: String,
    /// The `Authorization` header (marked sensitive), when a key is configured.
    headers: HeaderMap,
    http: reqwest::Client,
}

/// The blocking OpenAI-compatible client. Safe to share between threads (rayon workers call
/// [`Client::chat`] directly); it owns a small tokio runtime for the HTTP side.
pub struct Client {
    settings: ClientSettings,
    endpoints: Vec<Endpoint>,
    /// What the cache keys name as the endpoint: the display URL, or for several endpoints (one
    /// model served by replicas) their sorted display URLs.
    cache_endpoint: String,
    /// Keys, passwords and queries of the URLs, longest first: replaced by [`REDACTED`] in any
    /// text that leaves the client (answers: only those of [`MIN_REDACTED_CHARS`] or more).
    secrets: Vec<String>,
    /// Secrets replaced so far, in answers and messages.
    redacted: AtomicU64,
    runtime: tokio::runtime::Runtime,
    rotation: Mutex<Rotation>,
    /// Signalled whenever a request finishes, so that waiters for a free slot look again.
    finished: Condvar,
    cache: ResponseCache,
    tokens_used: AtomicU64,
    cap_reached: AtomicBool,
    cache_write_errors: AtomicU64,
    roles: Mutex<BTreeMap<Role, RoleCounters>>,
    http_counts: Mutex<HttpCounters>,
    started: Instant,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let urls: Vec<&str> = self.endpoints.iter().map(|e| e.display.as_str()).collect();
        f.debug_struct("Client").field("endpoints", &urls).finish_non_exhaustive()
    }
}

/// How one HTTP attempt ended.
enum Attempt {
    Answer(CachedAnswer),
    /// Worth another try, after `wait` when the server said so.
    Retry {
        message: String,
        outcome: Outcome,
        wait: Option<Duration>,
    },
    /// Trying again cannot help (400, 401, 404, ...).
    Fatal(String),
}

impl Client {
    /// Makes a client: reads the API key from the environment (if one is named), opens the
    /// cache, starts the runtime.
    pub fn new(settings: ClientSettings) -> Result<Client, ClientError> {
        if settings.endpoints.is_empty() {
            return Err(ClientError::NoEndpoint);
        }
        // reqwest is built without a bundled crypto provider; ring is ours. A second install
        // (another client in the same process) is refused harmlessly.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut endpoints = Vec::new();
        let mut secrets = Vec::new();
        for endpoint in &settings.endpoints {
            let (made, secret) = open_endpoint(endpoint, settings.timeout)?;
            endpoints.push(made);
            secrets.extend(secret);
            secrets.extend(url_secrets(&endpoint.base_url));
        }
        secrets.sort();
        secrets.dedup();
        // Longest first, so that a key containing another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        let mut displays: Vec<&str> = endpoints.iter().map(|e| e.display.as_str()).collect();
        displays.sort_unstable();
        displays.dedup();
        let cache_endpoint = displays.join(" ");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("critbench-http")
            .enable_all()
            .build()
            .map_err(|e| ClientError::Http(e.to_string()))?;
        let cache = ResponseCache::open(&settings.cache)?;
        let concurrency: Vec<u32> = settings.endpoints.iter().map(|e| e.concurrency).collect();
        Ok(Client {
            rotation: Mutex::new(Rotation::new(&concurrency, settings.failover.clone())),
            finished: Condvar::new(),
            settings,
            endpoints,
            cache_endpoint,
            secrets,
            redacted: AtomicU64::new(0),
            runtime,
            cache,
            tokens_used: AtomicU64::new(0),
            cap_reached: AtomicBool::new(false),
            cache_write_errors: AtomicU64::new(0),
            roles: Mutex::new(BTreeMap::new()),
            http_counts: Mutex::new(HttpCounters::default()),
            started: Instant::now(),
        })
    }

    pub fn settings(&self) -> &ClientSettings {
        &self.settings
    }

    pub fn has_role(&self, role: Role) -> bool {
        self.settings.roles.contains_key(&role)
    }

    /// Whether the run-wide token cap stopped new calls.
    pub fn cap_reached(&self) -> bool {
        self.cap_reached.load(Ordering::Relaxed)
    }

    fn count(&self, role: Role, update: impl FnOnce(&mut RoleCounters)) {
        let mut roles = self.roles.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        update(roles.entry(role).or_default());
    }

    fn count_http(&self, update: impl FnOnce(&mut HttpCounters)) {
        update(&mut self.http_counts.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
    }

    /// Replaces every API key, URL password and query wherever it appears in a message the
    /// client makes (which may quote a server's body or a library's error), in case it is echoed.
    fn scrub(&self, text: String) -> String {
        self.redact(text, 0)
    }

    /// Replaces every secret of at least `min_chars` characters in `text` by [`REDACTED`],
    /// counting each replacement.
    fn redact(&self, mut text: String, min_chars: usize) -> String {
        for secret in self.secrets.iter().filter(|s| s.chars().count() >= min_chars) {
            let found = text.matches(secret.as_str()).count();
            if found > 0 {
                text = text.replace(secret.as_str(), REDACTED);
                self.redacted.fetch_add(found as u64, Ordering::Relaxed);
            }
        }
        text
    }

    /// A model's answer with every secret long enough to be one taken out: what is cached,
    /// stored as a draft or a critique, and shown.
    fn redact_answer(&self, mut answer: CachedAnswer) -> CachedAnswer {
        answer.content = self.redact(answer.content, MIN_REDACTED_CHARS);
        answer
    }

    /// Asks `role`'s model. Blocks the calling thread (never call it from inside an async task).
    pub fn chat(&self, role: Role, request: &ChatRequest, identity: &CallIdentity) -> Result<ChatAnswer, ChatError> {
        let settings = self.settings.roles.get(&role).ok_or(ChatError::NoModel(role))?;
        self.count(role, |c| c.calls += 1);
        if let Some(cap) = self.settings.max_tokens_total {
            let used = self.tokens_used.load(Ordering::Relaxed);
            if used >= cap {
                self.cap_reached.store(true, Ordering::Relaxed);
                self.count(role, |c| c.refused += 1);
                return Err(ChatError::TokenCap { cap, used });
            }
        }
        let body = request_body(settings, request, role, identity);
        let key = cache_key(&self.cache_endpoint, role, identity, &body);
        let parts = KeyParts {
            endpoint: &self.cache_endpoint,
            role: role.as_str(),
            model: &settings.model,
            task_id: &identity.task_id,
            epoch: identity.epoch,
            round: identity.round,
        };
        let mut read_error = None;
        let lookup = self.cache.lookup(&key, &mut read_error);
        if let Some(error) = read_error {
            self.warn_cache(&format!("cannot read the response cache: {error}"));
        }
        let (result, cached) = match lookup {
            Lookup::Hit(answer) => {
                self.count(role, |c| c.cache_hits += 1);
                // A cache an older critbench wrote may hold an echoed key.
                (Ok(self.redact_answer(answer)), true)
            }
            Lookup::Joined(result) => {
                self.count(role, |c| c.shared += 1);
                (result, true)
            }
            Lookup::Lead(leader) => {
                self.count(role, |c| c.model_calls += 1);
                // Redacted before it is cached or shared, so the key is never stored.
                let result = self.call_model(role, &body).map(|answer| self.redact_answer(answer));
                if let Err(error) = leader.finish(&parts, &result) {
                    self.warn_cache(&format!("cannot store an answer in the response cache: {error}"));
                }
                (result, false)
            }
        };
        match result {
            Ok(answer) => {
                let tokens = answer.tokens_in.unwrap_or(0) + answer.tokens_out.unwrap_or(0);
                self.tokens_used.fetch_add(tokens, Ordering::Relaxed);
                self.count(role, |c| {
                    c.tokens_in += answer.tokens_in.unwrap_or(0);
                    c.tokens_out += answer.tokens_out.unwrap_or(0);
                });
                Ok(ChatAnswer {
                    content: answer.content,
                    tokens_in: answer.tokens_in,
                    tokens_out: answer.tokens_out,
                    cached,
                })
            }
            Err(message) => {
                self.count(role, |c| c.failures += 1);
                Err(ChatError::Failed(message))
            }
        }
    }

    fn warn_cache(&self, message: &str) {
        if self.cache_write_errors.fetch_add(1, Ordering::Relaxed) == 0 {
            eprintln!("warning: {message} (answers are still used; counted in manifest.json)");
        }
    }

    fn now(&self) -> Duration {
        self.started.elapsed()
    }

    fn lock_rotation(&self) -> MutexGuard<'_, Rotation> {
        self.rotation.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Blocks until an endpoint can take the request (see `pool` for which).
    fn acquire(&self, avoid: &[usize]) -> Ticket {
        let mut rotation = self.lock_rotation();
        loop {
            match rotation.pick(self.now(), avoid) {
                Pick::Go(ticket) => return ticket,
                Pick::Wait(None) => {
                    rotation = self.finished.wait(rotation).unwrap_or_else(|poisoned| poisoned.into_inner());
                }
                Pick::Wait(Some(at_most)) => {
                    let wait = at_most.max(Duration::from_millis(1));
                    rotation =
                        self.finished.wait_timeout(rotation, wait).unwrap_or_else(|poisoned| poisoned.into_inner()).0;
                }
            }
        }
    }

    fn release(&self, ticket: Ticket, outcome: Outcome) {
        self.lock_rotation().finish(ticket, outcome, self.now());
        self.finished.notify_all();
    }

    /// Every attempt for one answer: an endpoint, the request, its outcome, then at once another
    /// endpoint this call has not tried, or a backoff. On failure, the text of
    /// [`ChatError::Failed`].
    fn call_model(&self, role: Role, body: &Value) -> Result<CachedAnswer, String> {
        let body = serde_json::to_vec(body).expect("a request body serializes");
        // A retry that fails over at once to an untried endpoint is not one of `max_retries`.
        let attempts = self.settings.max_retries + self.endpoints.len() as u32;
        let mut tried: Vec<usize> = Vec::new();
        let mut backoffs = 0;
        let mut attempt = 0;
        let last = loop {
            attempt += 1;
            if attempt > 1 {
                self.count_http(|c| c.retries += 1);
            }
            let ticket = self.acquire(&tried);
            let endpoint = &self.endpoints[ticket.endpoint];
            let outcome = self.runtime.handle().block_on(self.attempt(endpoint, &body));
            let (message, wait) = match outcome {
                Attempt::Answer(answer) => {
                    self.release(ticket, Outcome::Success);
                    self.count_http(|c| c.ok += 1);
                    return Ok(answer);
                }
                Attempt::Fatal(message) => {
                    self.release(ticket, Outcome::Rejected);
                    return Err(format!("{role} call failed after {attempt} attempt(s): {}", self.scrub(message)));
                }
                Attempt::Retry { message, outcome, wait } => {
                    self.release(ticket, outcome);
                    if !tried.contains(&ticket.endpoint) {
                        tried.push(ticket.endpoint);
                    }
                    (self.scrub(message), wait)
                }
            };
            if attempt == attempts {
                break message;
            }
            if self.lock_rotation().has_other(self.now(), &tried) {
                continue;
            }
            if backoffs == self.settings.max_retries {
                break message;
            }
            backoffs += 1;
            std::thread::sleep(wait.unwrap_or_else(|| self.backoff(backoffs)).min(MAX_BACKOFF));
        };
        Err(format!("{role} call failed after {attempt} attempt(s): {last}"))
    }

    /// Exponential backoff with jitter: base × 2^(attempt-1), between half and all of it.
    fn backoff(&self, attempt: u32) -> Duration {
        let full = self.settings.retry_base.saturating_mul(1u32 << (attempt - 1).min(16)).min(MAX_BACKOFF);
        // Jitter only spreads retries in time; it never changes an answer, so any source will do.
        let nanos = self.started.elapsed().subsec_nanos() as u64 ^ (attempt as u64).wrapping_mul(0x9E37_79B9);
        let fraction = 0.5 + (nanos % 1000) as f64 / 2000.0;
        full.mul_f64(fraction)
    }

    async fn attempt(&self, endpoint: &Endpoint, body: &[u8]) -> Attempt {
        self.count_http(|c| c.requests += 1);
        let request = endpoint.http.post(&endpoint.url).headers(endpoint.headers.clone()).body(body.to_vec());
        let response = match request.send().await {
            Ok(response) => response,
            Err(error) => return self.transport_error(endpoint, error),
        };
        let status = response.status();
        let retry_after = response.headers().get(RETRY_AFTER).and_then(|v| v.to_str().ok()).and_then(parse_retry_after);
        let bytes = match response.bytes().await {
            Ok(bytes) => bytes,
            Err(error) => return self.transport_error(endpoint, error),
        };
        if status.is_success() {
            return match parse_answer(&bytes) {
                Ok(answer) => Attempt::Answer(answer),
                Err(message) => {
                    self.count_http(|c| c.malformed += 1);
                    Attempt::Retry {
                        message: format!("{message} from {}", endpoint.display),
                        outcome: Outcome::Failed,
                        wait: None,
                    }
                }
            };
        }
        let message = format!("HTTP {status} from {}: {}", endpoint.display, excerpt(&bytes));
        match status.as_u16() {
            429 => {
                self.count_http(|c| c.status_429 += 1);
                Attempt::Retry { message, outcome: Outcome::RateLimited, wait: retry_after }
            }
            503 => {
                self.count_http(|c| c.status_503 += 1);
                Attempt::Retry { message, outcome: Outcome::Unavailable, wait: retry_after }
            }
            408 | 500..=599 => {
                self.count_http(|c| c.status_5xx_other += 1);
                Attempt::Retry { message, outcome: Outcome::Failed, wait: retry_after }
            }
            _ => {
                self.count_http(|c| c.status_4xx_other += 1);
                Attempt::Fatal(message)
            }
        }
    }

    fn transport_error(&self, endpoint: &Endpoint, error: reqwest::Error) -> Attempt {
        let message = if error.is_timeout() {
            self.count_http(|c| c.timeouts += 1);
            format!("timed out after {:.1} s waiting for {}", self.settings.timeout.as_secs_f64(), endpoint.display)
        } else {
            self.count_http(|c| c.connection_errors += 1);
            // Without the URL: ours is named without its credentials.
            format!("cannot reach {}: {}", endpoint.display, error_chain(&error.without_url()))
        };
        Attempt::Retry { message, outcome: Outcome::Failed, wait: None }
    }

    /// What the manifest records: endpoints, models, cache, calls, tokens, the concurrency
    /// limit's history. Never a key, a URL's credentials or its query.
    pub fn report(&self) -> Value {
        let endpoints: Vec<Value> = {
            let rotation = self.lock_rotation();
            let urls: Vec<String> = self.endpoints.iter().map(|e| e.display.clone()).collect();
            let stats = rotation.stats(&urls, self.now());
            stats
                .into_iter()
                .zip(&self.settings.endpoints)
                .enumerate()
                .map(|(i, (stats, settings))| {
                    // A configured key is always set: a missing one stops the client at start.
                    let mut value = serde_json::to_value(stats).expect("stats serialize");
                    value["api_key_env"] = json!(settings.api_key_env);
                    value["api_key_set"] = json!(settings.api_key_env.is_some());
                    value["concurrency"] = rotation.aimd(i).report();
                    value
                })
                .collect()
        };
        // One endpoint: its limit's story, as before there could be several. Several: the sums,
        // each endpoint's story under `endpoints`.
        let concurrency = if endpoints.len() == 1 {
            endpoints[0]["concurrency"].clone()
        } else {
            let sum = |key: &str| endpoints.iter().map(|e| e["concurrency"][key].as_u64().unwrap_or(0)).sum::<u64>();
            json!({
                "max": sum("max"),
                "final": sum("final"),
                "lowest": sum("lowest"),
                "changes": sum("changes"),
                "history": [],
                "history_truncated": false,
            })
        };
        let roles = self.roles.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let http = self.http_counts.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let sum = |f: fn(&RoleCounters) -> u64| roles.values().map(f).sum::<u64>();
        let per_role: BTreeMap<&str, Value> = roles
            .iter()
            .map(|(role, c)| {
                (
                    role.as_str(),
                    json!({
                        "calls": c.calls,
                        "cache_hits": c.cache_hits,
                        "shared_in_flight": c.shared,
                        "model_calls": c.model_calls,
                        "failures": c.failures,
                        "refused_by_token_cap": c.refused,
                        "tokens_in": c.tokens_in,
                        "tokens_out": c.tokens_out,
                    }),
                )
            })
            .collect();
        json!({
            "endpoint": self.endpoints.iter().map(|e| e.display.as_str()).collect::<Vec<_>>().join(", "),
            "redacted": self.redacted.load(Ordering::Relaxed),
            "endpoints": endpoints,
            "api_key_env": self.settings.endpoints[0].api_key_env,
            "api_key_set": self.settings.endpoints[0].api_key_env.is_some(),
            "models": self.settings.roles.iter().map(|(r, s)| (r.as_str(), s.model.clone())).collect::<BTreeMap<_, _>>(),
            "cache": {
                "mode": match self.settings.cache { CacheMode::Disk { .. } => "disk", CacheMode::Memory => "memory" },
                "path": self.cache.path(),
                "format": CACHE_FORMAT,
                "hits": sum(|c| c.cache_hits),
                "shared_in_flight": sum(|c| c.shared),
                "misses": sum(|c| c.model_calls),
                "errors": self.cache_write_errors.load(Ordering::Relaxed),
            },
            "calls": {
                "total": sum(|c| c.calls),
                "model_calls": sum(|c| c.model_calls),
                "failures": sum(|c| c.failures),
                "by_role": per_role,
            },
            "http": {
                "requests": http.requests,
                "ok": http.ok,
                "retries": http.retries,
                "status_429": http.status_429,
                "status_503": http.status_503,
                "status_5xx_other": http.status_5xx_other,
                "status_4xx": http.status_4xx_other,
                "timeouts": http.timeouts,
                "connection_errors": http.connection_errors,
                "malformed_bodies": http.malformed,
            },
            "tokens": {
                "in": sum(|c| c.tokens_in),
                "out": sum(|c| c.tokens_out),
                "total": self.tokens_used.load(Ordering::Relaxed),
                "max_tokens_total": self.settings.max_tokens_total,
                "cap_reached": self.cap_reached(),
                "refused_calls": sum(|c| c.refused),
            },
            "concurrency": concurrency,
        })
    }
}

/// The HTTP side of one endpoint: its URL, its key's header, a connection pool. Also returns
/// the key, to scrub it from messages.
fn open_endpoint(settings: &EndpointSettings, timeout: Duration) -> Result<(Endpoint, Option<String>), ClientError> {
    let url = settings.base_url.trim();
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(ClientError::BadUrl(settings.display_url()));
    }
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let mut secret = None;
    if let Some(name) = &settings.api_key_env {
        let key = std::env::var(name).ok().filter(|k| !k.trim().is_empty());
        let key = key.ok_or_else(|| ClientError::MissingKey(name.clone()))?;
        let mut value = HeaderValue::from_str(&format!("Bearer {}", key.trim()))
            .map_err(|_| ClientError::Http(format!("the value of `{name}` is not a valid header value")))?;
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
        secret = Some(key.trim().to_string());
    }
    let mut builder = reqwest::Client::builder().timeout(timeout).pool_max_idle_per_host(64);
    if is_loopback(url) {
        // A proxy from the environment must never see traffic meant for this machine.
        builder = builder.no_proxy();
    }
    let http = builder.build().map_err(|e| ClientError::Http(e.to_string()))?;
    let endpoint = Endpoint { url: settings.chat_url(), display: settings.display_url(), headers, http };
    Ok((endpoint, secret))
}

/// The parts of a URL that must never be shown: `user:password`, the password alone, the query.
fn url_secrets(url: &str) -> Vec<String> {
    let mut secrets = Vec::new();
    let rest = url.trim().split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if let Some((userinfo, _)) = authority.rsplit_once('@') {
        secrets.push(userinfo.to_string());
        if let Some((_, password)) = userinfo.split_once(':') {
            secrets.push(password.to_string());
        }
    }
    if let Some((_, query)) = url.split_once('?') {
        secrets.push(query.split('#').next().unwrap_or("").to_string());
    }
    secrets.retain(|s| s.len() >= 3);
    secrets
}

fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let host = rest.split(['/', '?']).next().unwrap_or("");
    let host = host.rsplit_once('@').map_or(host, |(_, host)| host);
    let host =
        if host.starts_with('[') { host.split(']').next().unwrap_or("") } else { host.split(':').next().unwrap_or("") };
    host == "localhost" || host.starts_with("127.") || host == "[::1" || host == "::1"
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The first 300 characters of a body, on one line.
fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > 300 { format!("{}…", line.chars().take(300).collect::<String>()) } else { line }
}

/// `Retry-After` in seconds (the HTTP-date form is rare from APIs and falls back to backoff).
fn parse_retry_after(value: &str) -> Option<Duration> {
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds).min(MAX_BACKOFF))
}

/// The seed sent with a request: the role's base seed mixed with the call's identity, in the
/// positive 31-bit range every server accepts.
pub fn request_seed(base: u64, role: Role, identity: &CallIdentity) -> u64 {
    let mut hasher = Sha256::new();
    hasher.update(base.to_le_bytes());
    hasher.update(role.as_str().as_bytes());
    hasher.update([0]);
    hasher.update(identity.task_id.as_bytes());
    hasher.update([0]);
    hasher.update(identity.epoch.to_le_bytes());
    hasher.update(identity.round.to_le_bytes());
    hasher.update(identity.attempt.max(1).to_le_bytes());
    let digest = hasher.finalize();
    u64::from(u32::from_le_bytes([digest[0], digest[1], digest[2], digest[3]]) & 0x7fff_ffff)
}

fn request_body(settings: &RoleSettings, request: &ChatRequest, role: Role, identity: &CallIdentity) -> Value {
    let mut body = json!({
        "model": settings.model,
        "messages": request.messages,
        "temperature": settings.temperature,
        "seed": request_seed(settings.seed, role, identity),
        "stream": false,
    });
    if let Some(max_tokens) = settings.max_tokens {
        body["max_tokens"] = json!(max_tokens);
    }
    if let Some(format) = &request.response_format {
        body["response_format"] = format.clone();
    }
    body
}

/// SHA-256 over the cache format, endpoint, role, the call's identity and the whole request
/// body (model, messages, sampling parameters, response format).
fn cache_key(endpoint: &str, role: Role, identity: &CallIdentity, body: &Value) -> String {
    let mut hasher = Sha256::new();
    let identity = json!([
        CACHE_FORMAT,
        endpoint,
        role.as_str(),
        identity.task_id,
        identity.epoch,
        identity.round,
        identity.attempt.max(1)
    ]);
    hasher.update(identity.to_string().as_bytes());
    hasher.update([0]);
    // serde_json's maps are sorted (no preserve_order), so the text is canonical.
    hasher.update(body.to_string().as_bytes());
    hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(Deserialize)]
struct WireAnswer {
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WireChoice {
    message: WireMessage,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

fn parse_answer(bytes: &[u8]) -> Result<CachedAnswer, String> {
    let wire: WireAnswer = serde_json::from_slice(bytes).map_err(|e| {
        format!("malformed chat completion ({e}; body starts: {})", excerpt(&bytes[..bytes.len().min(200)]))
    })?;
    let choice = wire.choices.into_iter().next().ok_or("a chat completion without choices")?;
    let content = choice.message.content.ok_or("a chat completion whose message has no content")?;
    let usage = wire.usage.unwrap_or(WireUsage { prompt_tokens: None, completion_tokens: None });
    Ok(CachedAnswer { content, tokens_in: usage.prompt_tokens, tokens_out: usage.completion_tokens })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse_with_and_without_usage() {
        let answer = parse_answer(
            br#"{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}"#,
        )
        .unwrap();
        assert_eq!((answer.content.as_str(), answer.tokens_in, answer.tokens_out), ("hi", Some(5), Some(2)));
        assert_eq!(parse_answer(br#"{"choices":[{"message":{"content":"x"}}]}"#).unwrap().tokens_in, None);
        assert!(parse_answer(br#"{"choices":[]}"#).unwrap_err().contains("without choices"));
        assert!(parse_answer(br#"{"choices":[{"message":{"content":null}}]}"#).unwrap_err().contains("no content"));
        assert!(parse_answer(b"{\"choices\":[{\"mess").unwrap_err().starts_with("malformed chat completion"));
    }

    #[test]
    fn seeds_differ_by_epoch_and_attempt_but_not_by_anything_else() {
        let at = |epoch, attempt| CallIdentity { task_id: "t".into(), epoch, round: 0, attempt };
        let seed = |identity: &CallIdentity| request_seed(7, Role::Generator, identity);
        assert_eq!(seed(&at(0, 1)), seed(&at(0, 1)));
        assert_ne!(seed(&at(0, 1)), seed(&at(1, 1)));
        assert_ne!(seed(&at(0, 1)), seed(&at(0, 2)));
        assert!(seed(&at(3, 1)) <= 0x7fff_ffff);
    }

    #[test]
    fn retry_after_and_loopback() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after(" 0.5 "), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("100000"), Some(MAX_BACKOFF));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert!(is_loopback("http://127.0.0.1:8080/v1"));
        assert!(is_loopback("http://localhost/v1"));
        assert!(is_loopback("http://[::1]:99/v1"));
        assert!(!is_loopback("https://api.openai.com/v1"));
    }
}
