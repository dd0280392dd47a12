//! The chat client: cache, token cap, concurrency limit, retries, one HTTP request. Asked by
//! blocking threads ([`Client::chat`]) or awaited from any executor ([`Client::chat_async`]):
//! a request waiting on the server costs a future, not a thread.

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::io::Write;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, RETRY_AFTER};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::cache::{CACHE_FORMAT, CachedAnswer, KeyParts, Lookup, ResponseCache};
use crate::pool::{Outcome, Pick, Rotation, Ticket};
use crate::server::{PROBE_TIMEOUT, Probe, Server};
use crate::settings::{
    Budget, CacheMode, ClientSettings, EndpointSettings, MAX_BACKOFF, Role, RoleSettings, ServerKind,
};
use crate::usage::{
    BudgetReport, CacheReport, CallsReport, ConcurrencyReport, CostReport, EndpointReport, HttpReport, LatencyReport,
    RoleCalls, RoleCost, RoleWaiting, ServerReport, TaskRoleReport, TokensReport, UsageReport, WaitingReport,
};

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

/// Why a client could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(
        "[openai] api_key_env names the environment variable `{0}`, but it is not set (or empty); \
         export it, or remove api_key_env for a server that needs no key"
    )]
    /// The environment variable `api_key_env` names is not set.
    MissingKey(String),
    #[error("[openai] base_url `{0}` is not an http:// or https:// URL")]
    /// A `base_url` that is not http(s).
    BadUrl(String),
    #[error("[openai] no endpoint: give `base_url`")]
    /// No endpoint is configured.
    NoEndpoint,
    #[error(transparent)]
    /// The response cache cannot be opened.
    Cache(#[from] crate::cache::CacheError),
    #[error("cannot start the HTTP client: {0}")]
    /// The HTTP client cannot be built (its TLS setup).
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
    /// Of `tokens_in`, those a server said it served from its prompt cache.
    cached_in: u64,
    /// The tokens of the answers the model was asked for: what the run paid for. Money is
    /// computed from these sums, never summed itself, so that it does not depend on the order
    /// answers arrive in.
    paid_in: u64,
    paid_cached_in: u64,
    paid_out: u64,
    /// Time of the HTTP requests that were answered.
    latency: Histogram,
    /// Microseconds callers spent waiting: on the server (every HTTP request, retries included),
    /// for a free slot (the concurrency limit, a paused endpoint), and backing off.
    server_us: u64,
    queue_us: u64,
    backoff_us: u64,
}

/// Durations in buckets 1% wide, so that percentiles are within 1% in constant memory.
#[derive(Default)]
struct Histogram {
    buckets: BTreeMap<u32, u64>,
    count: u64,
    total_us: u64,
}

impl Histogram {
    const RESOLUTION_MS: f64 = 0.01;

    fn add(&mut self, elapsed: Duration) {
        let ms = (elapsed.as_secs_f64() * 1000.0).max(Self::RESOLUTION_MS);
        let bucket = ((ms / Self::RESOLUTION_MS).ln() / 1.01f64.ln()).floor() as u32;
        *self.buckets.entry(bucket).or_default() += 1;
        self.count += 1;
        self.total_us += elapsed.as_micros() as u64;
    }

    /// The `q` quantile in milliseconds (the middle of its bucket); `None` with no value.
    fn quantile(&self, q: f64) -> Option<f64> {
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count.max(1));
        let mut seen = 0;
        for (&bucket, &count) in &self.buckets {
            seen += count;
            if seen >= rank {
                let ms = Self::RESOLUTION_MS * 1.01f64.powf(f64::from(bucket) + 0.5);
                return Some((ms * 100.0).round() / 100.0);
            }
        }
        None
    }

    fn report(&self) -> LatencyReport {
        LatencyReport {
            requests: self.count,
            p50_ms: self.quantile(0.50),
            p95_ms: self.quantile(0.95),
            p99_ms: self.quantile(0.99),
            mean_ms: (self.count > 0).then(|| (self.total_us as f64 / self.count as f64 / 10.0).round() / 100.0),
        }
    }
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

/// One task's distinct requests (`critbench estimate`'s pilot): what a run that asked them with
/// an empty cache would send, however many of them this run found in its cache.
#[derive(Default)]
struct TaskUsage {
    keys: std::collections::HashSet<String>,
    roles: BTreeMap<Role, TaskRole>,
}

#[derive(Default)]
struct TaskRole {
    requests: u64,
    tokens_in: u64,
    cached_in: u64,
    tokens_out: u64,
    /// Time the server took for those of them this run sent.
    server_us: u64,
    /// Of `requests`, those this run sent (the others came from the cache, untimed).
    timed: u64,
}

/// Which budget stopped new work, and what had been spent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BudgetStop {
    /// `max_cost`, or `roles.ROLE`.
    pub budget: String,
    /// The budget's limit.
    pub limit: f64,
    /// What had been spent when it stopped new work.
    pub spent: f64,
}

/// One server requests may go to.
struct Endpoint {
    /// Where requests are sent, credentials and query included; parsed once, not per request.
    url: reqwest::Url,
    /// Ollama's own chat endpoint, for requests in its form.
    native_url: reqwest::Url,
    /// The same without credentials or query: what every message and the manifest show.
    display: String,
    /// The `Authorization` header (marked sensitive), when a key is configured.
    headers: HeaderMap,
    http: reqwest::Client,
    /// The server software, configured or detected at start: the form structured output takes.
    server: Server,
}

/// The OpenAI-compatible client. Safe to share between threads (workers call [`Client::chat`]
/// directly, or poll [`Client::chat_async`]); it owns a small tokio runtime for the HTTP side.
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
    /// Callers waiting for a free slot, woken as requests finish.
    waiters: Mutex<Waiters>,
    cache: ResponseCache,
    tokens_used: AtomicU64,
    cap_reached: AtomicBool,
    cache_write_errors: AtomicU64,
    roles: Mutex<BTreeMap<Role, RoleCounters>>,
    http_counts: Mutex<HttpCounters>,
    started: Instant,
    /// Money a run may spend, and what an interrupted run had spent before this process
    /// resumed it (per role).
    budget: Budget,
    carried: Mutex<BTreeMap<Role, f64>>,
    /// Raised once a budget is reached (the run starts no new loop); `budget_stop` says which.
    budget_flag: Arc<AtomicBool>,
    budget_stop: Mutex<Option<BudgetStop>>,
    tasks: Mutex<BTreeMap<String, TaskUsage>>,
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
    /// cache, starts the runtime, and asks each endpoint whose server is not configured what
    /// it is ([`crate::server`]).
    pub fn new(settings: ClientSettings) -> Result<Client, ClientError> {
        if settings.endpoints.is_empty() {
            return Err(ClientError::NoEndpoint);
        }
        // reqwest is built without a bundled crypto provider; ring is ours. A second install
        // (another client in the same process) is refused harmlessly.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("critbench-http")
            .enable_all()
            .build()
            .map_err(|e| ClientError::Http(e.to_string()))?;
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
        detect_servers(&runtime, &settings.endpoints, &mut endpoints, &secrets);
        let mut displays: Vec<&str> = endpoints.iter().map(|e| e.display.as_str()).collect();
        displays.sort_unstable();
        displays.dedup();
        let cache_endpoint = displays.join(" ");
        let cache = ResponseCache::open(&settings.cache)?;
        let concurrency: Vec<u32> = settings.endpoints.iter().map(|e| e.concurrency).collect();
        Ok(Client {
            rotation: Mutex::new(Rotation::new(&concurrency, settings.failover.clone())),
            waiters: Mutex::new(Waiters::default()),
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
            budget: Budget::default(),
            carried: Mutex::new(BTreeMap::new()),
            budget_flag: Arc::new(AtomicBool::new(false)),
            budget_stop: Mutex::new(None),
            tasks: Mutex::new(BTreeMap::new()),
        })
    }

    /// The same client with a budget: once what its model calls cost reaches one of the
    /// budget's limits, [`Client::budget_flag`] is raised. Calls are never refused for it.
    pub fn with_budget(mut self, budget: Budget) -> Client {
        self.budget = budget;
        self
    }

    /// What an interrupted run had spent, per role, before this process resumed it: counted
    /// toward the budget and in the report's spend.
    pub fn carry_spend(&self, spent: &BTreeMap<Role, f64>) {
        *lock(&self.carried) = spent.clone();
        self.check_budget(&lock(&self.roles));
    }

    /// Raised once a budget is reached; the run polls it before every loop.
    pub fn budget_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.budget_flag)
    }

    /// Which budget was reached, if one was.
    pub fn budget_stop(&self) -> Option<BudgetStop> {
        lock(&self.budget_stop).clone()
    }

    /// The settings the client was made with.
    pub fn settings(&self) -> &ClientSettings {
        &self.settings
    }

    /// Whether `role` has a model.
    pub fn has_role(&self, role: Role) -> bool {
        self.settings.roles.contains_key(&role)
    }

    /// The server each endpoint runs, in the order configured.
    pub fn servers(&self) -> Vec<&Server> {
        self.endpoints.iter().map(|e| &e.server).collect()
    }

    /// Whether the run-wide token cap stopped new calls.
    pub fn cap_reached(&self) -> bool {
        self.cap_reached.load(Ordering::Relaxed)
    }

    fn count(&self, role: Role, update: impl FnOnce(&mut RoleCounters)) {
        update(lock(&self.roles).entry(role).or_default());
    }

    fn count_http(&self, update: impl FnOnce(&mut HttpCounters)) {
        update(&mut lock(&self.http_counts));
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

    /// What `role` has spent: its model calls at its price, plus what an interrupted run had
    /// spent before; `None` when the role has no price.
    fn spent(&self, role: Role, counters: Option<&RoleCounters>, carried: &BTreeMap<Role, f64>) -> Option<f64> {
        let price = self.settings.roles.get(&role)?.price?;
        let paid = counters.map_or(0.0, |c| price.cost(c.paid_in, c.paid_cached_in, c.paid_out));
        Some(paid + carried.get(&role).copied().unwrap_or(0.0))
    }

    /// Raises the budget flag the first time a budget is reached.
    fn check_budget(&self, roles: &BTreeMap<Role, RoleCounters>) {
        if self.budget.is_empty() || self.budget_flag.load(Ordering::Relaxed) {
            return;
        }
        let carried = lock(&self.carried);
        let spent = |role: Role| self.spent(role, roles.get(&role), &carried).unwrap_or(0.0);
        let reached = self
            .budget
            .roles
            .iter()
            .find(|(role, limit)| spent(**role) >= **limit)
            .map(|(role, limit)| BudgetStop { budget: format!("roles.{role}"), limit: *limit, spent: spent(*role) })
            .or_else(|| {
                let total: f64 = Role::ALL.iter().map(|role| spent(*role)).sum();
                let limit = self.budget.max_cost?;
                (total >= limit).then(|| BudgetStop { budget: "max_cost".into(), limit, spent: total })
            });
        if let Some(stop) = reached {
            *lock(&self.budget_stop) = Some(stop);
            self.budget_flag.store(true, Ordering::SeqCst);
        }
    }

    /// Asks `role`'s model. Blocks the calling thread (never call it from inside an async task).
    pub fn chat(&self, role: Role, request: &ChatRequest, identity: &CallIdentity) -> Result<ChatAnswer, ChatError> {
        self.runtime.handle().block_on(self.ask(role, request, identity))
    }

    /// [`Client::chat`] as a future that any executor may poll (it enters the client's runtime
    /// at every poll): waiting for a slot, for an identical request in flight, for the server or
    /// for a backoff blocks no thread. The cache's reads and writes are done in the poll.
    pub fn chat_async<'a>(
        &'a self,
        role: Role,
        request: &'a ChatRequest,
        identity: &'a CallIdentity,
    ) -> impl Future<Output = Result<ChatAnswer, ChatError>> + 'a {
        InRuntime { handle: self.runtime.handle().clone(), future: Box::pin(self.ask(role, request, identity)) }
    }

    async fn ask(&self, role: Role, request: &ChatRequest, identity: &CallIdentity) -> Result<ChatAnswer, ChatError> {
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
        // OpenAI's form: the cache key, whatever form each endpoint is sent.
        let body = request_body(settings, request, role, identity);
        // Serialized once: the text the cache key hashes is the text sent to a server that reads
        // OpenAI's form.
        let text = serde_json::to_vec(&body).expect("a request body serializes");
        let key = cache_key(&self.cache_endpoint, role, identity, &text);
        let parts = KeyParts {
            endpoint: &self.cache_endpoint,
            role: role.as_str(),
            model: &settings.model,
            task_id: &identity.task_id,
            epoch: identity.epoch,
            round: identity.round,
        };
        let mut read_error = None;
        let mut lookup = self.cache.begin(&key, &mut read_error);
        if let Some(error) = read_error {
            self.warn_cache(&format!("cannot read the response cache: {error}"));
        }
        if let Lookup::Follow(following) = lookup {
            lookup = Lookup::Joined(following.result().await);
        }
        let (result, cached, server_time) = match lookup {
            Lookup::Hit(answer) => {
                self.count(role, |c| c.cache_hits += 1);
                // A cache an older critbench wrote may hold an echoed key.
                (Ok(self.redact_answer(answer)), true, None)
            }
            Lookup::Joined(result) => {
                self.count(role, |c| c.shared += 1);
                (result, true, None)
            }
            Lookup::Follow(_) => unreachable!("followed above"),
            Lookup::Lead(leader) => {
                self.count(role, |c| c.model_calls += 1);
                // Redacted before it is cached or shared, so the key is never stored.
                let called = self.call_model(role, &body, &text).await;
                let server_time = called.as_ref().ok().map(|(_, time)| *time);
                let result = called.map(|(answer, _)| self.redact_answer(answer));
                if let Err(error) = leader.finish(&parts, &result) {
                    self.warn_cache(&format!("cannot store an answer in the response cache: {error}"));
                }
                (result, false, server_time)
            }
        };
        match result {
            Ok(answer) => {
                let (tokens_in, tokens_out) = (answer.tokens_in.unwrap_or(0), answer.tokens_out.unwrap_or(0));
                let cached_in = answer.cached_in.unwrap_or(0);
                self.tokens_used.fetch_add(tokens_in + tokens_out, Ordering::Relaxed);
                {
                    let mut roles = lock(&self.roles);
                    let counters = roles.entry(role).or_default();
                    counters.tokens_in += tokens_in;
                    counters.tokens_out += tokens_out;
                    counters.cached_in += cached_in;
                    if !cached {
                        counters.paid_in += tokens_in;
                        counters.paid_cached_in += cached_in;
                        counters.paid_out += tokens_out;
                        self.check_budget(&roles);
                    }
                }
                if self.settings.track_tasks {
                    let mut tasks = lock(&self.tasks);
                    let task = tasks.entry(identity.task_id.clone()).or_default();
                    if task.keys.insert(key) {
                        let usage = task.roles.entry(role).or_default();
                        usage.requests += 1;
                        usage.tokens_in += tokens_in;
                        usage.cached_in += cached_in;
                        usage.tokens_out += tokens_out;
                        if let Some(time) = server_time {
                            usage.server_us += time.as_micros() as u64;
                            usage.timed += 1;
                        }
                    }
                }
                Ok(ChatAnswer {
                    content: answer.content,
                    tokens_in: answer.tokens_in,
                    tokens_out: answer.tokens_out,
                    cached,
                })
            }
            Err(error) => {
                self.count(role, |c| c.failures += 1);
                Err(error)
            }
        }
    }

    fn warn_cache(&self, message: &str) {
        if self.cache_write_errors.fetch_add(1, Ordering::Relaxed) == 0 {
            // A closed standard error is no reason to stop a run.
            let _ =
                writeln!(std::io::stderr(), "warning: {message} (answers are still used; counted in manifest.json)");
        }
    }

    fn now(&self) -> Duration {
        self.started.elapsed()
    }

    fn lock_rotation(&self) -> MutexGuard<'_, Rotation> {
        lock(&self.rotation)
    }

    /// Waits until an endpoint can take the request (see `pool` for which).
    async fn acquire(&self, avoid: &[usize]) -> Ticket {
        let mut queued = Queued { client: self, id: lock(&self.waiters).next_id(), served: false };
        let mut timer: Option<Pin<Box<tokio::time::Sleep>>> = None;
        std::future::poll_fn(|context| {
            let mut rotation = self.lock_rotation();
            match rotation.pick(self.now(), avoid) {
                Pick::Go(ticket) => {
                    drop(rotation);
                    queued.served = true;
                    lock(&self.waiters).leave(queued.id);
                    // Several slots may be free (the limit grew, several requests ended): the
                    // next waiter looks too, and wakes the one after if it gets one.
                    self.wake_waiters();
                    Poll::Ready(ticket)
                }
                Pick::Wait(at_most) => {
                    // Queued under the rotation's lock, which `release` takes before it wakes:
                    // a slot freed after this pick finds this waiter.
                    lock(&self.waiters).join(queued.id, avoid.is_empty(), context.waker());
                    drop(rotation);
                    if let Some(at_most) = at_most {
                        let sleep = timer.insert(Box::pin(tokio::time::sleep(at_most.max(Duration::from_millis(1)))));
                        if sleep.as_mut().poll(context).is_ready() {
                            context.waker().wake_by_ref();
                        }
                    }
                    Poll::Pending
                }
            }
        })
        .await
    }

    fn release(&self, ticket: Ticket, outcome: Outcome) {
        self.lock_rotation().finish(ticket, outcome, self.now());
        self.wake_waiters();
    }

    /// Wakes the first waiter that may take any endpoint, and every waiter that avoids some (a
    /// retry elsewhere): only the latter can be unable to take a slot the first could.
    fn wake_waiters(&self) {
        let woken = lock(&self.waiters).take_next();
        woken.into_iter().for_each(Waker::wake);
    }

    /// Holds every request to `endpoint` for `wait`, as its server asked.
    fn pause(&self, endpoint: usize, wait: Duration) {
        let now = self.now();
        self.lock_rotation().pause(endpoint, now + wait.min(MAX_BACKOFF), now);
    }

    /// Every attempt for one answer: an endpoint, the request, its outcome, then at once another
    /// endpoint this call has not tried, or a backoff. The answer and the time its request took;
    /// on failure, [`ChatError::Failed`].
    async fn call_model(&self, role: Role, body: &Value, text: &[u8]) -> Result<(CachedAnswer, Duration), ChatError> {
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
            let queued = Instant::now();
            let ticket = self.acquire(&tried).await;
            let sent = Instant::now();
            let endpoint = &self.endpoints[ticket.endpoint];
            let (outcome, pause) = self.attempt(endpoint, body, text).await;
            let took = sent.elapsed();
            self.count(role, |c| {
                c.queue_us += sent.duration_since(queued).as_micros() as u64;
                c.server_us += took.as_micros() as u64;
            });
            if let Some(pause) = pause {
                self.pause(ticket.endpoint, pause);
            }
            let (message, wait) = match outcome {
                Attempt::Answer(answer) => {
                    self.release(ticket, Outcome::Success);
                    self.count_http(|c| c.ok += 1);
                    self.count(role, |c| c.latency.add(took));
                    return Ok((answer, took));
                }
                Attempt::Fatal(message) => {
                    self.release(ticket, Outcome::Rejected);
                    return Err(ChatError::Failed { role, attempts: attempt, last: self.scrub(message) });
                }
                Attempt::Retry { message, outcome, wait } => {
                    // The server said when to come back: no caller sends it anything before.
                    if let Some(wait) = wait {
                        self.pause(ticket.endpoint, wait);
                    }
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
            // A server's Retry-After paused the endpoint: the next attempt waits for it there.
            if wait.is_none() {
                let backoff = self.backoff(backoffs).min(MAX_BACKOFF);
                tokio::time::sleep(backoff).await;
                self.count(role, |c| c.backoff_us += backoff.as_micros() as u64);
            }
        };
        Err(ChatError::Failed { role, attempts: attempt, last })
    }

    /// Exponential backoff with jitter: base × 2^(attempt-1), between half and all of it.
    fn backoff(&self, attempt: u32) -> Duration {
        let full = self.settings.retry_base.saturating_mul(1u32 << (attempt - 1).min(16)).min(MAX_BACKOFF);
        // Jitter only spreads retries in time; it never changes an answer, so any source will do.
        let nanos = self.started.elapsed().subsec_nanos() as u64 ^ (attempt as u64).wrapping_mul(0x9E37_79B9);
        let fraction = 0.5 + (nanos % 1000) as f64 / 2000.0;
        full.mul_f64(fraction)
    }

    /// One HTTP request, in the form the endpoint's server reads (`text` is `body` serialized);
    /// also how long the server asked for no further request (a rate-limit budget it reported
    /// spent).
    async fn attempt(&self, endpoint: &Endpoint, body: &Value, text: &[u8]) -> (Attempt, Option<Duration>) {
        self.count_http(|c| c.requests += 1);
        let native = endpoint.server.native_chat(body);
        let bytes = match endpoint.server.shape(body) {
            Cow::Borrowed(_) => text.to_vec(),
            Cow::Owned(shaped) => serde_json::to_vec(&shaped).expect("a request body serializes"),
        };
        let url = if native { &endpoint.native_url } else { &endpoint.url };
        let request = endpoint.http.post(url.clone()).headers(endpoint.headers.clone()).body(bytes);
        let response = match request.send().await {
            Ok(response) => response,
            Err(error) => return (self.transport_error(endpoint, error), None),
        };
        let status = response.status();
        let retry_after = response.headers().get(RETRY_AFTER).and_then(|v| v.to_str().ok()).and_then(parse_retry_after);
        let spent_budget = rate_limit_pause(response.headers());
        let bytes = match response.bytes().await {
            Ok(bytes) => bytes,
            Err(error) => return (self.transport_error(endpoint, error), spent_budget),
        };
        if status.is_success() {
            let parsed = if native { parse_native_answer(&bytes) } else { parse_answer(&bytes) };
            let attempt = match parsed {
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
            return (attempt, spent_budget);
        }
        let message = format!("HTTP {status} from {}: {}", endpoint.display, excerpt(&bytes));
        let attempt = match status.as_u16() {
            429 => {
                self.count_http(|c| c.status_429 += 1);
                Attempt::Retry { message, outcome: Outcome::RateLimited, wait: retry_after.or(spent_budget) }
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
        };
        (attempt, spent_budget)
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

    /// What the manifest records: endpoints and their servers, models, cache, calls, tokens,
    /// money, latency and waiting, the concurrency limit's history. Never a key, a URL's
    /// credentials or its query.
    pub fn report(&self) -> UsageReport {
        let endpoints: Vec<EndpointReport> = {
            let rotation = self.lock_rotation();
            let urls: Vec<String> = self.endpoints.iter().map(|e| e.display.clone()).collect();
            let stats = rotation.stats(&urls, self.now());
            stats
                .into_iter()
                .zip(&self.settings.endpoints)
                .zip(&self.endpoints)
                .enumerate()
                .map(|(i, ((stats, settings), endpoint))| EndpointReport {
                    url: stats.url,
                    calls: stats.calls,
                    failures: stats.failures,
                    times_out: stats.times_out,
                    out_of_rotation_ms: stats.out_of_rotation_ms,
                    in_rotation: stats.in_rotation,
                    pauses: stats.pauses,
                    paused_ms: stats.paused_ms,
                    // A configured key is always set: a missing one stops the client at start.
                    api_key_env: settings.api_key_env.clone(),
                    api_key_set: settings.api_key_env.is_some(),
                    concurrency: rotation.aimd(i).report(),
                    server: ServerReport::from(&endpoint.server),
                })
                .collect()
        };
        // One endpoint: its limit's story, as before there could be several. Several: the sums,
        // each endpoint's story under `endpoints`.
        let concurrency = if endpoints.len() == 1 {
            endpoints[0].concurrency.clone()
        } else {
            let sum = |f: fn(&ConcurrencyReport) -> u64| endpoints.iter().map(|e| f(&e.concurrency)).sum::<u64>();
            ConcurrencyReport {
                max: sum(|c| c.max),
                last: sum(|c| c.last),
                lowest: sum(|c| c.lowest),
                changes: sum(|c| c.changes),
                history: Vec::new(),
                history_truncated: false,
            }
        };
        let roles = lock(&self.roles);
        let http = lock(&self.http_counts);
        let carried = lock(&self.carried).clone();
        let sum = |f: fn(&RoleCounters) -> u64| roles.values().map(f).sum::<u64>();
        let seconds = |us: u64| (us as f64 / 1000.0).round() / 1000.0;
        let per_role: BTreeMap<String, RoleCalls> = roles
            .iter()
            .map(|(role, c)| {
                (
                    role.as_str().to_string(),
                    RoleCalls {
                        calls: c.calls,
                        cache_hits: c.cache_hits,
                        shared_in_flight: c.shared,
                        model_calls: c.model_calls,
                        failures: c.failures,
                        refused_by_token_cap: c.refused,
                        tokens_in: c.tokens_in,
                        tokens_out: c.tokens_out,
                        cached_tokens_in: c.cached_in,
                        model_tokens_in: c.paid_in,
                        model_tokens_out: c.paid_out,
                    },
                )
            })
            .collect();
        // Money, per role that was configured: what its model calls cost, and what every answer
        // it got would have cost had none come from the cache.
        let mut cost_roles = BTreeMap::new();
        let (mut spent_total, mut answers_total, mut priced) = (0.0, 0.0, true);
        for (role, settings) in &self.settings.roles {
            let counters = roles.get(role);
            let spent = self.spent(*role, counters, &carried);
            let answers =
                settings.price.map(|p| counters.map_or(0.0, |c| p.cost(c.tokens_in, c.cached_in, c.tokens_out)));
            spent_total += spent.unwrap_or(0.0);
            answers_total += answers.unwrap_or(0.0);
            priced &= spent.is_some();
            cost_roles.insert(
                role.as_str().to_string(),
                RoleCost {
                    model: settings.model.clone(),
                    priced: spent.is_some(),
                    spent,
                    answers,
                    carried_over: carried.get(role).copied(),
                },
            );
        }
        let any_price = self.settings.roles.values().any(|r| r.price.is_some());
        let latency = roles.iter().map(|(role, c)| (role.as_str().to_string(), c.latency.report())).collect();
        let waiting_by_role = roles
            .iter()
            .map(|(role, c)| {
                (
                    role.as_str().to_string(),
                    RoleWaiting {
                        server_s: seconds(c.server_us),
                        queue_s: seconds(c.queue_us),
                        backoff_s: seconds(c.backoff_us),
                    },
                )
            })
            .collect();
        UsageReport {
            endpoint: self.endpoints.iter().map(|e| e.display.as_str()).collect::<Vec<_>>().join(", "),
            redacted: self.redacted.load(Ordering::Relaxed),
            endpoints,
            api_key_env: self.settings.endpoints[0].api_key_env.clone(),
            api_key_set: self.settings.endpoints[0].api_key_env.is_some(),
            models: self.settings.roles.iter().map(|(r, s)| (r.as_str().to_string(), s.model.clone())).collect(),
            cache: CacheReport {
                mode: match self.settings.cache {
                    CacheMode::Disk { .. } => "disk",
                    CacheMode::Memory => "memory",
                }
                .to_string(),
                path: self.cache.path().map(Path::to_path_buf),
                format: CACHE_FORMAT,
                hits: sum(|c| c.cache_hits),
                shared_in_flight: sum(|c| c.shared),
                misses: sum(|c| c.model_calls),
                errors: self.cache_write_errors.load(Ordering::Relaxed),
            },
            calls: CallsReport {
                total: sum(|c| c.calls),
                model_calls: sum(|c| c.model_calls),
                failures: sum(|c| c.failures),
                by_role: per_role,
            },
            http: HttpReport {
                requests: http.requests,
                ok: http.ok,
                retries: http.retries,
                status_429: http.status_429,
                status_503: http.status_503,
                status_5xx_other: http.status_5xx_other,
                status_4xx: http.status_4xx_other,
                timeouts: http.timeouts,
                connection_errors: http.connection_errors,
                malformed_bodies: http.malformed,
            },
            tokens: TokensReport {
                tokens_in: sum(|c| c.tokens_in),
                tokens_out: sum(|c| c.tokens_out),
                cached_in: sum(|c| c.cached_in),
                total: self.tokens_used.load(Ordering::Relaxed),
                max_tokens_total: self.settings.max_tokens_total,
                cap_reached: self.cap_reached(),
                refused_calls: sum(|c| c.refused),
            },
            cost: CostReport {
                currency: self.settings.currency.clone(),
                priced: any_price && priced,
                spent: any_price.then_some(spent_total),
                answers: any_price.then_some(answers_total),
                saved_by_cache: any_price
                    .then(|| (answers_total - (spent_total - carried.values().sum::<f64>())).max(0.0)),
                by_role: cost_roles,
            },
            latency,
            waiting: WaitingReport {
                server_s: seconds(sum(|c| c.server_us)),
                queue_s: seconds(sum(|c| c.queue_us)),
                backoff_s: seconds(sum(|c| c.backoff_us)),
                by_role: waiting_by_role,
            },
            concurrency,
            budget: (!self.budget.is_empty()).then(|| BudgetReport {
                max_cost: self.budget.max_cost,
                roles: self.budget.roles.iter().map(|(r, v)| (r.as_str().to_string(), *v)).collect(),
                stopped_by: self.budget_stop(),
            }),
            by_task: self.settings.track_tasks.then(|| self.task_report()),
        }
    }

    /// Each task's distinct requests per role: requests, tokens, their cost, the server's time.
    fn task_report(&self) -> BTreeMap<String, BTreeMap<String, TaskRoleReport>> {
        let tasks = lock(&self.tasks);
        tasks
            .iter()
            .map(|(task, usage)| {
                let roles = usage
                    .roles
                    .iter()
                    .map(|(role, r)| {
                        let price = self.settings.roles.get(role).and_then(|s| s.price);
                        let report = TaskRoleReport {
                            requests: r.requests,
                            tokens_in: r.tokens_in,
                            tokens_out: r.tokens_out,
                            cost: price.map(|p| p.cost(r.tokens_in, r.cached_in, r.tokens_out)),
                            server_s: (r.server_us as f64 / 1000.0).round() / 1000.0,
                            timed: r.timed,
                        };
                        (role.as_str().to_string(), report)
                    })
                    .collect();
                (task.clone(), roles)
            })
            .collect()
    }
}

/// A future polled inside the client's runtime context, whoever polls it: reqwest's connections
/// and tokio's timers need that context when they are made and polled.
struct InRuntime<'a, T> {
    handle: tokio::runtime::Handle,
    future: Pin<Box<dyn Future<Output = T> + 'a>>,
}

impl<T> Future for InRuntime<'_, T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<T> {
        let _entered = self.handle.enter();
        self.future.as_mut().poll(context)
    }
}

/// Callers waiting for a free slot, in the order they came.
#[derive(Default)]
struct Waiters {
    next: u64,
    /// Each waiter's id, whether it may take any endpoint, and its waker.
    queue: VecDeque<(u64, bool, Waker)>,
}

impl Waiters {
    fn next_id(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    fn join(&mut self, id: u64, any: bool, waker: &Waker) {
        match self.queue.iter_mut().find(|(queued, ..)| *queued == id) {
            Some((_, _, queued)) => queued.clone_from(waker),
            None => self.queue.push_back((id, any, waker.clone())),
        }
    }

    /// Whether `id` was still queued.
    fn leave(&mut self, id: u64) -> bool {
        let before = self.queue.len();
        self.queue.retain(|(queued, ..)| *queued != id);
        self.queue.len() < before
    }

    fn take_next(&mut self) -> Vec<Waker> {
        let mut woken = Vec::new();
        let mut first = true;
        self.queue.retain(|(_, any, waker)| {
            if *any && !first {
                return true;
            }
            first &= !*any;
            woken.push(waker.clone());
            false
        });
        woken
    }
}

/// A caller's place among the [`Waiters`]: given up when its future is dropped, and a wake it
/// was given but did not use passed on.
struct Queued<'a> {
    client: &'a Client,
    id: u64,
    served: bool,
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        if !self.served && !lock(&self.client.waiters).leave(self.id) {
            self.client.wake_waiters();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Asks every endpoint whose server is not configured what it runs, all at once.
fn detect_servers(
    runtime: &tokio::runtime::Runtime,
    settings: &[EndpointSettings],
    endpoints: &mut [Endpoint],
    secrets: &[String],
) {
    let handles: Vec<Option<tokio::task::JoinHandle<Server>>> = settings
        .iter()
        .zip(endpoints.iter())
        .map(|(settings, endpoint)| {
            if settings.server.is_some() {
                return None;
            }
            let (settings, http, headers) = (settings.clone(), endpoint.http.clone(), endpoint.headers.clone());
            Some(runtime.spawn(async move {
                let get = |url: String| {
                    let (http, headers) = (http.clone(), headers.clone());
                    async move {
                        let response = http.get(&url).headers(headers).timeout(PROBE_TIMEOUT).send().await.ok()?;
                        let status = response.status().as_u16();
                        let headers = response.headers().clone();
                        let bytes = response.bytes().await.ok()?;
                        Some(Probe { status, headers, json: serde_json::from_slice(&bytes).ok() })
                    }
                };
                crate::server::detect(&settings, get).await
            }))
        })
        .collect();
    for (endpoint, handle) in endpoints.iter_mut().zip(handles) {
        if let Some(handle) = handle {
            let mut server = runtime.block_on(handle).unwrap_or_else(|_| Server::configured(ServerKind::Openai));
            // A server that lists a configured secret as a model name is quoting it back.
            for model in &mut server.models {
                for secret in secrets {
                    if model.contains(secret.as_str()) {
                        *model = model.replace(secret.as_str(), REDACTED);
                    }
                }
            }
            endpoint.server = server;
        }
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
    // As many idle connections kept as requests may be in flight: a connection closed when a wave
    // of answers leaves more idle is opened again for the next wave (a TCP handshake per request).
    let idle = usize::try_from(settings.concurrency).unwrap_or(usize::MAX).max(1);
    // critbench's own retries are the only ones, so that each is counted and paced. reqwest's
    // default policy retries HTTP/2 refusals only (this client speaks HTTP/1.1), and copies every
    // request's headers in case it must.
    let no_retries = reqwest::retry::never().max_retries_per_request(0);
    let mut builder = reqwest::Client::builder().timeout(timeout).pool_max_idle_per_host(idle).retry(no_retries);
    if is_loopback(url) {
        // A proxy from the environment must never see traffic meant for this machine.
        builder = builder.no_proxy();
    }
    let http = builder.build().map_err(|e| ClientError::Http(e.to_string()))?;
    let parse = |url: String| {
        reqwest::Url::parse(&url).map_err(|e| ClientError::Http(format!("{}: not a URL ({e})", settings.display_url())))
    };
    let endpoint = Endpoint {
        url: parse(settings.chat_url())?,
        native_url: parse(settings.root_url("api/chat"))?,
        display: settings.display_url(),
        headers,
        http,
        // Replaced by what detection finds when the server is not configured.
        server: Server::configured(settings.server.unwrap_or(ServerKind::Openai)),
    };
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

/// `Retry-After`: seconds, or an HTTP date (how long from now), at most [`MAX_BACKOFF`].
fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds).min(MAX_BACKOFF));
    }
    let at = http_date(value)?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(at.saturating_sub(now)).min(MAX_BACKOFF))
}

/// An IMF-fixdate (`Wed, 21 Oct 2015 07:28:00 GMT`, the form HTTP servers send) as seconds
/// since the Unix epoch.
fn http_date(value: &str) -> Option<u64> {
    let mut parts = value.split_whitespace();
    let (_weekday, day, month, year, time, zone) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if zone != "GMT" || parts.next().is_some() {
        return None;
    }
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let month = MONTHS.iter().position(|m| *m == month)? as i64 + 1;
    let (day, year): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let clock: Vec<i64> = time.split(':').map(|p| p.parse().ok()).collect::<Option<_>>()?;
    let [hours, minutes, seconds] = clock[..] else { return None };
    // Days from the civil date (Howard Hinnant's algorithm).
    let (y, m) = if month <= 2 { (year - 1, month + 9) } else { (year, month - 3) };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let day_of_year = (153 * m + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    u64::try_from(days * 86_400 + hours * 3600 + minutes * 60 + seconds).ok()
}

/// How long an endpoint asks for no request because a rate-limit budget is spent: a
/// `x-ratelimit-remaining-requests` (or `-tokens`) of 0, until its `x-ratelimit-reset-*`.
fn rate_limit_pause(headers: &HeaderMap) -> Option<Duration> {
    ["requests", "tokens"]
        .iter()
        .filter(|kind| {
            let remaining = headers.get(format!("x-ratelimit-remaining-{kind}"));
            remaining.and_then(|v| v.to_str().ok()).is_some_and(|v| v.trim() == "0")
        })
        .filter_map(|kind| {
            let reset = headers.get(format!("x-ratelimit-reset-{kind}"))?.to_str().ok()?;
            duration_text(reset).or_else(|| parse_retry_after(reset))
        })
        .max()
        .map(|wait| wait.min(MAX_BACKOFF))
}

/// A duration as rate-limit headers write it: `1s`, `6m0s`, `20ms`, `1h2m3.5s`.
fn duration_text(text: &str) -> Option<Duration> {
    let text = text.trim();
    let mut total = 0.0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let seconds = match &rest[..unit_end] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        total += number * seconds;
        rest = &rest[unit_end..];
    }
    (!text.is_empty() && total.is_finite()).then(|| Duration::from_secs_f64(total))
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
/// body (model, messages, sampling parameters, response format) as JSON text (`body`, as
/// serde_json writes the request's `Value`).
fn cache_key(endpoint: &str, role: Role, identity: &CallIdentity, body: &[u8]) -> String {
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
    // Hashed as serialized, without building the texts: this runs once per model call.
    struct Hashing<'a>(&'a mut Sha256);
    impl std::io::Write for Hashing<'_> {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.update(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    serde_json::to_writer(Hashing(&mut hasher), &identity).expect("JSON values serialize");
    hasher.update([0]);
    // serde_json's maps are sorted (no preserve_order), so the text is canonical.
    hasher.update(body);
    critbench_core::hex(&hasher.finalize())
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

#[derive(Default, Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<WireTokenDetails>,
}

#[derive(Deserialize)]
struct WireTokenDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// A successful HTTP answer whose body is not a usable chat answer.
#[derive(Debug, thiserror::Error)]
enum MalformedAnswer {
    #[error("malformed chat completion ({source}; body starts: {start})")]
    Unparseable { start: String, source: serde_json::Error },
    #[error("a chat completion without choices")]
    NoChoices,
    #[error("a chat completion whose message has no content")]
    NoContent,
    #[error("malformed Ollama chat answer ({source}; body starts: {start})")]
    NativeUnparseable { start: String, source: serde_json::Error },
    #[error("an Ollama chat answer whose message has no content")]
    NativeNoContent,
}

fn parse_answer(bytes: &[u8]) -> Result<CachedAnswer, MalformedAnswer> {
    let wire: WireAnswer = serde_json::from_slice(bytes)
        .map_err(|source| MalformedAnswer::Unparseable { start: excerpt(&bytes[..bytes.len().min(200)]), source })?;
    let choice = wire.choices.into_iter().next().ok_or(MalformedAnswer::NoChoices)?;
    let content = choice.message.content.ok_or(MalformedAnswer::NoContent)?;
    let usage = wire.usage.unwrap_or_default();
    Ok(CachedAnswer {
        content,
        tokens_in: usage.prompt_tokens,
        tokens_out: usage.completion_tokens,
        cached_in: usage.prompt_tokens_details.and_then(|d| d.cached_tokens),
    })
}

/// Ollama's own chat answer: `{"message": {"content": …}, "prompt_eval_count": n, "eval_count": n}`.
#[derive(Deserialize)]
struct NativeAnswer {
    message: WireMessage,
    #[serde(default)]
    prompt_eval_count: Option<u64>,
    #[serde(default)]
    eval_count: Option<u64>,
}

fn parse_native_answer(bytes: &[u8]) -> Result<CachedAnswer, MalformedAnswer> {
    let wire: NativeAnswer = serde_json::from_slice(bytes).map_err(|source| MalformedAnswer::NativeUnparseable {
        start: excerpt(&bytes[..bytes.len().min(200)]),
        source,
    })?;
    let content = wire.message.content.ok_or(MalformedAnswer::NativeNoContent)?;
    Ok(CachedAnswer { content, tokens_in: wire.prompt_eval_count, tokens_out: wire.eval_count, cached_in: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cache_key_is_the_sha256_of_the_identity_and_the_request_as_json_text() {
        // The key's bytes are what makes a cache file from an earlier run answer this one.
        let identity = CallIdentity { task_id: "t\"1".into(), epoch: 2, round: 1, attempt: 0 };
        let body = json!({"model": "m", "messages": [{"role": "user", "content": "é\n"}], "temperature": 0.5});
        let text = format!("[{CACHE_FORMAT},\"http://x/v1\",\"judge\",\"t\\\"1\",2,1,1]\u{0}{body}");
        let expected: String = Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        let body = serde_json::to_vec(&body).unwrap();
        assert_eq!(cache_key("http://x/v1", Role::Judge, &identity, &body), expected);
    }

    #[test]
    fn answers_parse_with_and_without_usage() {
        let answer = parse_answer(
            br#"{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}"#,
        )
        .unwrap();
        assert_eq!((answer.content.as_str(), answer.tokens_in, answer.tokens_out), ("hi", Some(5), Some(2)));
        assert_eq!(parse_answer(br#"{"choices":[{"message":{"content":"x"}}]}"#).unwrap().tokens_in, None);
        assert!(parse_answer(br#"{"choices":[]}"#).unwrap_err().to_string().contains("without choices"));
        let no_content = parse_answer(br#"{"choices":[{"message":{"content":null}}]}"#).unwrap_err();
        assert!(no_content.to_string().contains("no content"));
        let malformed = parse_answer(b"{\"choices\":[{\"mess").unwrap_err().to_string();
        assert!(
            malformed.starts_with("malformed chat completion") && malformed.contains("body starts: {"),
            "{malformed}"
        );
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
    fn cached_input_tokens_and_ollamas_own_answers_parse() {
        let answer = parse_answer(
            br#"{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":50,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":32}}}"#,
        )
        .unwrap();
        assert_eq!((answer.tokens_in, answer.cached_in), (Some(50), Some(32)));
        let native =
            parse_native_answer(br#"{"model":"m","message":{"role":"assistant","content":"{}"},"done":true,"prompt_eval_count":7,"eval_count":3}"#)
                .unwrap();
        assert_eq!((native.content.as_str(), native.tokens_in, native.tokens_out), ("{}", Some(7), Some(3)));
        assert!(
            parse_native_answer(br#"{"choices":[]}"#)
                .unwrap_err()
                .to_string()
                .starts_with("malformed Ollama chat answer")
        );
    }

    #[test]
    fn rate_limit_headers_say_how_long_to_hold_off() {
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut map = HeaderMap::new();
            for (name, value) in pairs {
                map.insert(*name, HeaderValue::from_static(value));
            }
            map
        };
        assert_eq!(rate_limit_pause(&headers(&[("x-ratelimit-remaining-requests", "3")])), None);
        let spent = headers(&[("x-ratelimit-remaining-requests", "0"), ("x-ratelimit-reset-requests", "1.5s")]);
        assert_eq!(rate_limit_pause(&spent), Some(Duration::from_millis(1500)));
        let both = headers(&[
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", "20ms"),
            ("x-ratelimit-remaining-tokens", "0"),
            ("x-ratelimit-reset-tokens", "6m0s"),
        ]);
        assert_eq!(rate_limit_pause(&both), Some(Duration::from_secs(120)), "the longer, at most MAX_BACKOFF");
        assert_eq!(duration_text("1h2m3.5s"), Some(Duration::from_secs_f64(3723.5)));
        assert_eq!(duration_text("3 parsecs"), None);
        assert_eq!(http_date("Wed, 21 Oct 2015 07:28:00 GMT"), Some(1_445_412_480));
        assert_eq!(http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(http_date("21 Oct 2015"), None);
    }

    #[test]
    fn latency_quantiles_are_within_a_percent() {
        let mut histogram = Histogram::default();
        for ms in 1..=1000u64 {
            histogram.add(Duration::from_millis(ms));
        }
        for (q, exact) in [(0.5, 500.0), (0.95, 950.0), (0.99, 990.0)] {
            let got = histogram.quantile(q).unwrap();
            assert!((got - exact).abs() / exact < 0.011, "q{q}: {got} against {exact}");
        }
        assert_eq!(Histogram::default().quantile(0.5), None);
        assert_eq!(histogram.report().requests, 1000);
        assert_eq!(histogram.report().mean_ms, Some(500.5));
    }

    #[test]
    fn retry_after_and_loopback() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after(" 0.5 "), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("100000"), Some(MAX_BACKOFF));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), Some(Duration::ZERO), "a date in the past");
        assert!(is_loopback("http://127.0.0.1:8080/v1"));
        assert!(is_loopback("http://localhost/v1"));
        assert!(is_loopback("http://[::1]:99/v1"));
        assert!(!is_loopback("https://api.openai.com/v1"));
    }
}
