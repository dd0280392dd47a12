//! The chat client: cache, token cap, concurrency limit, retries, one HTTP request. Asked by
//! blocking threads ([`Client::chat`]) or awaited from any executor ([`Client::chat_async`]):
//! a request waiting on the server costs a future, not a thread.

mod answer;
mod attempt;
mod counters;
mod endpoint;
mod error;
mod headers;
mod report;
mod request;
mod slots;
mod waiters;

use std::collections::BTreeMap;
use std::future::Future;
use std::io::Write;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::cache::{CachedAnswer, KeyParts, Lookup, ResponseCache};
use crate::chat::{CallIdentity, ChatAnswer, ChatError, ChatRequest, MIN_REDACTED_CHARS, REDACTED};
use crate::pool::Rotation;
use crate::server::Server;
use crate::settings::{Budget, ClientSettings, Role};
use crate::usage::BudgetStop;
use counters::{HttpCounters, RoleCounters, TaskUsage};
use endpoint::{Endpoint, detect_servers, open_endpoint, url_secrets};
pub use error::ClientError;
pub use request::request_seed;
use request::{cache_key, request_body};
use waiters::Waiters;

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
    budget_stop: Mutex<Option<Reached>>,
    tasks: Mutex<BTreeMap<String, TaskUsage>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let urls: Vec<&str> = self.endpoints.iter().map(|e| e.display.as_str()).collect();
        f.debug_struct("Client").field("endpoints", &urls).finish_non_exhaustive()
    }
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

    /// Which budget was reached, if one was, and what the calls it counts have cost by now: the
    /// loops in flight when it was reached go on paying after it, so this is what was spent when
    /// asked (at the end of a run, what the run spent), not what had been when it was reached.
    pub fn budget_stop(&self) -> Option<BudgetStop> {
        let roles = lock(&self.roles);
        let carried = lock(&self.carried).clone();
        self.stop_now(&roles, &carried)
    }

    /// [`Client::budget_stop`] with the counters locked already.
    fn stop_now(&self, roles: &BTreeMap<Role, RoleCounters>, carried: &BTreeMap<Role, f64>) -> Option<BudgetStop> {
        let reached = *lock(&self.budget_stop);
        reached.map(|Reached { role, limit }| BudgetStop {
            budget: role.map_or_else(|| "max_cost".to_string(), |role| format!("roles.{role}")),
            limit,
            spent: self.spent_under(role, roles, carried),
        })
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

    /// `text`, written by a program the run started (a draft, a critique), with every secret of
    /// [`MIN_REDACTED_CHARS`] or more replaced by [`REDACTED`] as in a model's answer, each
    /// replacement counted in the report's `redacted`.
    pub fn redact_output(&self, text: String) -> String {
        self.redact(text, MIN_REDACTED_CHARS)
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

    /// What the calls a budget counts have cost: `role`'s (`roles.ROLE`), or every role's
    /// (`max_cost`) when `None`.
    fn spent_under(
        &self,
        role: Option<Role>,
        roles: &BTreeMap<Role, RoleCounters>,
        carried: &BTreeMap<Role, f64>,
    ) -> f64 {
        let spent = |role: Role| self.spent(role, roles.get(&role), carried).unwrap_or(0.0);
        match role {
            Some(role) => spent(role),
            None => Role::ALL.iter().map(|role| spent(*role)).sum(),
        }
    }

    /// Raises the budget flag the first time a budget is reached.
    fn check_budget(&self, roles: &BTreeMap<Role, RoleCounters>) {
        if self.budget.is_empty() || self.budget_flag.load(Ordering::Relaxed) {
            return;
        }
        let carried = lock(&self.carried);
        let reached = self
            .budget
            .roles
            .iter()
            .find(|(role, limit)| self.spent_under(Some(**role), roles, &carried) >= **limit)
            .map(|(role, limit)| Reached { role: Some(*role), limit: *limit })
            .or_else(|| {
                let limit = self.budget.max_cost?;
                (self.spent_under(None, roles, &carried) >= limit).then_some(Reached { role: None, limit })
            });
        if let Some(reached) = reached {
            *lock(&self.budget_stop) = Some(reached);
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

    /// The runtime the client's HTTP side runs on, where the metered endpoint serves too.
    pub(crate) fn handle(&self) -> tokio::runtime::Handle {
        self.runtime.handle().clone()
    }

    pub(crate) async fn ask(
        &self,
        role: Role,
        request: &ChatRequest,
        identity: &CallIdentity,
    ) -> Result<ChatAnswer, ChatError> {
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
                    counters.truncated += u64::from(answer.truncated);
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
                    truncated: answer.truncated,
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
}

/// The budget that was reached: one role's (`roles.ROLE`) or the whole run's (`max_cost`, no
/// role), and its limit.
#[derive(Clone, Copy, Debug)]
struct Reached {
    role: Option<Role>,
    limit: f64,
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

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
