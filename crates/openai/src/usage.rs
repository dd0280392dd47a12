//! What the model client did in a run or a judge: its report, one typed struct
//! ([`UsageReport`]) that [`crate::Client::report`] fills, the `openai` object of `manifest.json`
//! records, and every reader of that object reads back, with a one-line rendering for the
//! terminal.
//!
//! Every key is required: a report that lacks one (or names it differently) is refused, naming
//! the key ([`UsageReportError`]), rather than read as zero. A value that may be absent is an
//! `Option` whose key is always written (`null`), except the two sections a run may not have
//! ([`UsageReport::budget`], [`UsageReport::by_task`]), whose keys are left out.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::settings::ServerKind;

/// The model client's report: endpoints and their servers, models, cache, calls, tokens, money,
/// latency and waiting, the concurrency limit's history. Never a key, a URL's credentials or its
/// query. Its keys are written in the order `manifest.json` keeps them (sorted).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsageReport {
    /// The endpoints' URLs (without credentials or query), joined by `, `.
    pub endpoint: String,
    /// Configured secrets (API keys, URL passwords) found in answers or messages and replaced by
    /// `[REDACTED]` before anything was written.
    pub redacted: u64,
    /// Each endpoint, in the order configured.
    pub endpoints: Vec<EndpointReport>,
    /// The first endpoint's API key variable (its name, never its value).
    #[serde(deserialize_with = "Option::deserialize")]
    pub api_key_env: Option<String>,
    /// Whether the first endpoint sends an API key.
    pub api_key_set: bool,
    /// Role → model.
    pub models: BTreeMap<String, String>,
    /// The response cache.
    pub cache: CacheReport,
    /// Calls asked of the client, in all and per role.
    pub calls: CallsReport,
    /// HTTP requests sent and how they ended.
    pub http: HttpReport,
    /// Tokens counted and the run-wide cap.
    pub tokens: TokensReport,
    /// What the model calls cost, when the roles have prices.
    pub cost: CostReport,
    /// Role → how long the server took to answer.
    pub latency: BTreeMap<String, LatencyReport>,
    /// Time spent waiting on the server, queued for a slot and backing off.
    pub waiting: WaitingReport,
    /// The concurrency limit (one endpoint's, or the sums of several).
    pub concurrency: ConcurrencyReport,
    /// The run's `[budget]`, when it has one, and which of it stopped the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetReport>,
    /// Task → role → its distinct requests (`critbench estimate`'s pilot only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_task: Option<BTreeMap<String, BTreeMap<String, TaskRoleReport>>>,
    /// The metered endpoint the run's programs called, when it served any program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metered: Option<MeteredReport>,
}

/// What the manifest records of one endpoint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointReport {
    /// The chat completions URL without credentials or query.
    pub url: String,
    /// HTTP requests sent to it.
    pub calls: u64,
    /// Of which failed: connection errors, timeouts, 5xx, unusable bodies.
    pub failures: u64,
    /// Times it was taken out of the rotation.
    pub times_out: u64,
    /// Milliseconds out of the rotation in all (up to the report, if it is still out).
    pub out_of_rotation_ms: u64,
    /// In the rotation when the report was made.
    pub in_rotation: bool,
    /// Times the server asked for a pause (`Retry-After`, a spent rate-limit budget).
    pub pauses: u64,
    /// How long requests to it were held by those pauses, in milliseconds.
    pub paused_ms: u64,
    /// Its API key variable (its name, never its value).
    #[serde(deserialize_with = "Option::deserialize")]
    pub api_key_env: Option<String>,
    /// Whether it sends an API key.
    pub api_key_set: bool,
    /// Its concurrency limit's story.
    pub concurrency: ConcurrencyReport,
    /// The server behind it.
    pub server: ServerReport,
}

/// The server behind an endpoint, as far as structured output is concerned
/// ([`crate::Server`], as recorded).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerReport {
    /// The server software.
    pub kind: ServerKind,
    /// How the kind was known: `"configured"`, or what detection saw.
    pub detected_by: String,
    /// The version the server reports; the key is left out when it reports none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The model names `/v1/models` lists.
    pub models: Vec<String>,
    /// The form a schema is sent in (e.g. `response_format.json_schema`).
    pub structured_output: String,
}

impl From<&crate::Server> for ServerReport {
    fn from(server: &crate::Server) -> ServerReport {
        ServerReport {
            kind: server.kind,
            detected_by: server.detected_by.clone(),
            version: server.version.clone(),
            models: server.models.clone(),
            structured_output: server.structured_output.to_string(),
        }
    }
}

/// The concurrency limit, lowered on 429/503 answers and raised again on success.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConcurrencyReport {
    /// The configured concurrency.
    pub max: u64,
    /// The limit when the report was made.
    #[serde(rename = "final")]
    pub last: u64,
    /// The lowest it went.
    pub lowest: u64,
    /// How many times it changed (its start included).
    pub changes: u64,
    /// Its changes, at most the first 10 000 (empty for the sums of several endpoints).
    pub history: Vec<LimitChange>,
    /// Whether changes were left out of `history`.
    pub history_truncated: bool,
}

/// One change of the limit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitChange {
    /// Seconds since the client was made.
    pub t_s: f64,
    /// The limit from then on.
    pub limit: u32,
    /// Why it changed.
    pub reason: LimitReason,
}

/// Why the limit changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LimitReason {
    /// The configured concurrency, at the start.
    Start,
    /// A 429 or 503 lowered it.
    Overloaded,
    /// Sustained success raised it.
    Recovered,
}

/// The response cache.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheReport {
    /// `disk` or `memory`.
    pub mode: String,
    /// The SQLite file (`disk` only).
    #[serde(deserialize_with = "Option::deserialize")]
    pub path: Option<PathBuf>,
    /// The cache's format version ([`crate::CACHE_FORMAT`]).
    pub format: u32,
    /// Calls answered from the cache.
    pub hits: u64,
    /// Identical requests in flight at once, answered by one model call.
    pub shared_in_flight: u64,
    /// Calls the cache could not answer (sent to the model).
    pub misses: u64,
    /// Answers the cache could not store.
    pub errors: u64,
}

/// Calls asked of the client.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallsReport {
    /// Every call the run made, answered from the cache or not.
    pub total: u64,
    /// Calls sent to the model.
    pub model_calls: u64,
    /// Calls that failed after their last attempt.
    pub failures: u64,
    /// Role → its calls.
    pub by_role: BTreeMap<String, RoleCalls>,
}

/// One role's calls and tokens.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleCalls {
    /// Calls asked.
    pub calls: u64,
    /// Of which answered from the cache.
    pub cache_hits: u64,
    /// Of which answered by an identical request in flight.
    pub shared_in_flight: u64,
    /// Of which sent to the model.
    pub model_calls: u64,
    /// Of which failed.
    pub failures: u64,
    /// Of which refused once the token cap was reached.
    pub refused_by_token_cap: u64,
    /// Prompt tokens of every answer.
    pub tokens_in: u64,
    /// Completion tokens of every answer.
    pub tokens_out: u64,
    /// Of `tokens_in`, those the server read from its prompt cache.
    pub cached_tokens_in: u64,
    /// Prompt tokens of the answers the model gave this run (not from the cache).
    pub model_tokens_in: u64,
    /// Completion tokens of the answers the model gave this run.
    pub model_tokens_out: u64,
    /// Answers cut at the role's `max_tokens` (`finish_reason` `length`), cached ones included.
    pub truncated: u64,
}

/// HTTP requests and how they ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpReport {
    /// Requests sent.
    pub requests: u64,
    /// Answered with a usable body.
    pub ok: u64,
    /// Sent again after a failure.
    pub retries: u64,
    /// Answered 429.
    pub status_429: u64,
    /// Answered 503.
    pub status_503: u64,
    /// Answered with another 5xx.
    pub status_5xx_other: u64,
    /// Answered with a 4xx other than 429.
    pub status_4xx: u64,
    /// Timed out.
    pub timeouts: u64,
    /// Could not connect.
    pub connection_errors: u64,
    /// Answered with a body that was not a chat completion.
    pub malformed_bodies: u64,
}

/// Tokens counted, and the run-wide cap.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokensReport {
    /// Prompt tokens of every answer, from the response cache or not.
    #[serde(rename = "in")]
    pub tokens_in: u64,
    /// Completion tokens of every answer, from the response cache or not.
    #[serde(rename = "out")]
    pub tokens_out: u64,
    /// Of the prompt tokens, those the server read from its prompt cache.
    pub cached_in: u64,
    /// Of `in`, the prompt tokens of the calls sent to the model (not those answered from the
    /// response cache or shared in flight): the tokens `cost.spent` prices, which also counts
    /// what an interrupted run had spent before its resume (`cost.by_role.ROLE.carried_over`).
    pub model_in: u64,
    /// Of `out`, the completion tokens of the calls sent to the model.
    pub model_out: u64,
    /// Tokens counted against the cap.
    pub total: u64,
    /// The cap (`max_tokens_total`), when there is one.
    #[serde(deserialize_with = "Option::deserialize")]
    pub max_tokens_total: Option<u64>,
    /// The run reached `max_tokens_total`.
    pub cap_reached: bool,
    /// Calls refused once the cap was reached.
    pub refused_calls: u64,
}

/// What the model calls cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostReport {
    /// The currency of the prices, when the experiment names one.
    #[serde(deserialize_with = "Option::deserialize")]
    pub currency: Option<String>,
    /// Every role has a price.
    pub priced: bool,
    /// Spent on model calls (the whole run's, before a resume too); `None` without prices.
    #[serde(deserialize_with = "Option::deserialize")]
    pub spent: Option<f64>,
    /// What every answer would have cost had none come from the cache; `None` without prices.
    #[serde(deserialize_with = "Option::deserialize")]
    pub answers: Option<f64>,
    /// What the response cache saved; `None` without prices.
    #[serde(deserialize_with = "Option::deserialize")]
    pub saved_by_cache: Option<f64>,
    /// Role → what its model calls cost.
    pub by_role: BTreeMap<String, RoleCost>,
}

/// What one role's model calls cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleCost {
    /// Its model.
    pub model: String,
    /// Whether it has a price.
    pub priced: bool,
    /// Spent on its model calls, what it carried over included; `None` without a price.
    #[serde(deserialize_with = "Option::deserialize")]
    pub spent: Option<f64>,
    /// What its answers would have cost had none come from the cache; `None` without a price.
    #[serde(deserialize_with = "Option::deserialize")]
    pub answers: Option<f64>,
    /// What an interrupted run it resumes had spent, when it resumes one.
    #[serde(deserialize_with = "Option::deserialize")]
    pub carried_over: Option<f64>,
}

/// How long one role's requests took the server, in milliseconds; `None` before any request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyReport {
    /// Requests timed.
    pub requests: u64,
    /// The median.
    #[serde(deserialize_with = "Option::deserialize")]
    pub p50_ms: Option<f64>,
    /// The 95th percentile.
    #[serde(deserialize_with = "Option::deserialize")]
    pub p95_ms: Option<f64>,
    /// The 99th percentile.
    #[serde(deserialize_with = "Option::deserialize")]
    pub p99_ms: Option<f64>,
    /// The mean.
    #[serde(deserialize_with = "Option::deserialize")]
    pub mean_ms: Option<f64>,
}

/// Time spent, in seconds: waiting on the server, queued for a slot, and backing off.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaitingReport {
    /// Waiting on the server's answers.
    pub server_s: f64,
    /// Queued for a slot under the concurrency limit.
    pub queue_s: f64,
    /// Backing off before a retry.
    pub backoff_s: f64,
    /// Role → the same, for its calls.
    pub by_role: BTreeMap<String, RoleWaiting>,
}

/// One role's time spent, in seconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleWaiting {
    /// Waiting on the server's answers.
    pub server_s: f64,
    /// Queued for a slot.
    pub queue_s: f64,
    /// Backing off before a retry.
    pub backoff_s: f64,
}

/// The run's `[budget]` and which of it stopped the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetReport {
    /// `max_cost`, when set.
    #[serde(deserialize_with = "Option::deserialize")]
    pub max_cost: Option<f64>,
    /// Role → its own limit.
    pub roles: BTreeMap<String, f64>,
    /// The budget that stopped new work, when one did.
    #[serde(deserialize_with = "Option::deserialize")]
    pub stopped_by: Option<BudgetStop>,
}

/// Which budget stopped new work, and what the calls it counts cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BudgetStop {
    /// `max_cost`, or `roles.ROLE`.
    pub budget: String,
    /// The budget's limit.
    pub limit: f64,
    /// What the calls the budget counts had cost when the run ended: past `limit` by what the loops
    /// in flight when it was reached spent after it (docs/REFERENCE.md, `[budget]`).
    pub spent: f64,
}

/// One task's distinct requests of one role (`critbench estimate`'s pilot).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskRoleReport {
    /// Distinct requests.
    pub requests: u64,
    /// Their prompt tokens.
    pub tokens_in: u64,
    /// Their completion tokens.
    pub tokens_out: u64,
    /// What they cost at the role's price; `None` without one.
    #[serde(deserialize_with = "Option::deserialize")]
    pub cost: Option<f64>,
    /// The server's time for those this run sent, in seconds.
    pub server_s: f64,
    /// Of `requests`, those this run sent (the others came from the cache, untimed).
    pub timed: u64,
}

/// A report that is not the model client's: a key missing, renamed or of the wrong type.
#[derive(Debug, thiserror::Error)]
#[error("manifest.json: key `{key}`: {source}")]
pub struct UsageReportError {
    /// The key, from the manifest's top (`openai.cache.hits`; `openai.cache` when a key inside
    /// it is missing, which `source` names).
    pub key: String,
    /// What serde found there.
    #[source]
    pub source: serde_json::Error,
}

impl UsageReport {
    /// Reads the `openai` object of `manifest.json`; every key must be there.
    pub fn from_manifest(openai: &Value) -> Result<UsageReport, UsageReportError> {
        serde_path_to_error::deserialize(openai).map_err(|error| {
            let path = error.path().to_string();
            let key = if path == "." { "openai".to_string() } else { format!("openai.{path}") };
            UsageReportError { key, source: error.into_inner() }
        })
    }

    /// The report as `manifest.json` records it.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a usage report serializes")
    }
}

/// One line: calls made, answers from the cache, tokens, and what went wrong. Tokens and money
/// are said over the same calls: those sent to the model (paid, what `cost.spent` prices) apart
/// from those answered from the response cache or shared in flight (not paid).
impl fmt::Display for UsageReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let endpoint = if self.endpoint.is_empty() { "?" } else { &self.endpoint };
        write!(
            f,
            "models: {} calls, {} sent to {endpoint} ({} HTTP requests, {} retries), {} from the cache, {} shared in flight; paid (the calls sent): {} tokens in, {} out",
            self.calls.total,
            self.calls.model_calls,
            self.http.requests,
            self.http.retries,
            self.cache.hits,
            self.cache.shared_in_flight,
            self.tokens.model_in,
            self.tokens.model_out,
        )?;
        let currency = self.cost.currency.as_deref().map_or(String::new(), |c| format!(" {c}"));
        // `cost.spent` counts what an interrupted run had spent before its resume too, whose
        // tokens are not in this report's: said apart, so that the paid figures are of one set
        // of calls.
        let carried: f64 =
            (self.cost.by_role.values()).filter(|role| role.spent.is_some()).filter_map(|role| role.carried_over).sum();
        if let Some(spent) = self.cost.spent {
            write!(f, ", {:.4}{currency}", (spent - carried).max(0.0))?;
            if !self.cost.priced {
                write!(f, " (a model without a price is not counted)")?;
            }
        }
        write!(
            f,
            "; not paid (from the cache or shared in flight): {} tokens in, {} out",
            self.tokens.tokens_in.saturating_sub(self.tokens.model_in),
            self.tokens.tokens_out.saturating_sub(self.tokens.model_out),
        )?;
        if self.calls.failures > 0 {
            write!(f, "; {} calls failed", self.calls.failures)?;
        }
        if let Some(spent) = self.cost.spent {
            if carried > 0.0 {
                write!(f, "; spent {spent:.4}{currency} in all, {carried:.4} of it before the run was resumed")?;
            }
            if let Some(stop) = self.budget.as_ref().and_then(|b| b.stopped_by.as_ref()) {
                write!(f, "; budget {} = {}{currency} reached", stop.budget, stop.limit)?;
            }
        }
        let cut: Vec<String> = (self.calls.by_role.iter())
            .filter(|(_, calls)| calls.truncated > 0)
            .map(|(role, calls)| format!("{role} {} of {}", calls.truncated, calls.calls - calls.failures))
            .collect();
        if !cut.is_empty() {
            write!(
                f,
                "; answers cut at max_tokens (finish_reason \"length\"): {} (raise that role's max_tokens in \
                 [openai.ROLE])",
                cut.join(", ")
            )?;
        }
        if self.tokens.cap_reached {
            write!(f, "; token cap reached ({} calls refused)", self.tokens.refused_calls)?;
        }
        if self.redacted > 0 {
            write!(
                f,
                "; the server echoed a configured API key (or URL secret) {} time(s): replaced by {} before anything \
                 was written",
                self.redacted,
                crate::REDACTED
            )?;
        }
        let limit = &self.concurrency;
        if limit.lowest != limit.max {
            write!(
                f,
                "; concurrency lowered to {} on 429/503 (ended at {} of {})",
                limit.lowest, limit.last, limit.max
            )?;
        }
        Ok(())
    }
}

/// What the endpoint served, as `manifest.json` records it (`openai.metered`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeteredReport {
    /// Calls answered with a completion.
    pub calls: u64,
    /// Calls refused because their key belonged to no request in flight (HTTP 401).
    pub refused_keys: u64,
    /// Calls refused for what they asked: streaming, a field not served, a body that is not a
    /// chat request (HTTP 400).
    pub refused_requests: u64,
    /// Calls the run's client could not answer (HTTP 502: every attempt failed, the token cap).
    pub failed: u64,
    /// Calls that finished after the request their key belonged to was answered: served, but
    /// counted on no round.
    pub late: u64,
}

impl MeteredReport {
    /// Whether a program called the endpoint at all (a key handed out and never used is not).
    pub fn used(&self) -> bool {
        self.calls + self.refused_keys + self.refused_requests + self.failed + self.late > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report of ten calls to one endpoint, as the client writes it.
    fn report() -> Value {
        serde_json::json!({
            "endpoint": "http://127.0.0.1:9/v1",
            "redacted": 0,
            "endpoints": [],
            "api_key_env": null,
            "api_key_set": false,
            "models": {"generator": "g"},
            "cache": {"mode": "memory", "path": null, "format": 1, "hits": 6, "shared_in_flight": 1, "misses": 4,
                      "errors": 0},
            "calls": {"total": 10, "model_calls": 4, "failures": 0, "by_role": {}},
            "http": {"requests": 5, "ok": 4, "retries": 1, "status_429": 0, "status_503": 0, "status_5xx_other": 1,
                     "status_4xx": 0, "timeouts": 0, "connection_errors": 0, "malformed_bodies": 0},
            "tokens": {"in": 100, "out": 20, "cached_in": 0, "model_in": 40, "model_out": 8, "total": 120,
                       "max_tokens_total": null,
                       "cap_reached": false, "refused_calls": 0},
            "cost": {"currency": null, "priced": false, "spent": null, "answers": null, "saved_by_cache": null,
                     "by_role": {}},
            "latency": {},
            "waiting": {"server_s": 0.5, "queue_s": 0.0, "backoff_s": 0.0, "by_role": {}},
            "concurrency": {"max": 8, "final": 8, "lowest": 8, "changes": 1,
                            "history": [{"t_s": 0.0, "limit": 8, "reason": "start"}], "history_truncated": false},
        })
    }

    #[test]
    fn the_line_says_what_went_wrong_only_when_it_did() {
        let usage = UsageReport::from_manifest(&report()).unwrap();
        assert_eq!(
            usage.to_string(),
            "models: 10 calls, 4 sent to http://127.0.0.1:9/v1 (5 HTTP requests, 1 retries), 6 from the cache, 1 shared in flight; paid (the calls sent): 40 tokens in, 8 out; not paid (from the cache or shared in flight): 60 tokens in, 12 out"
        );
        let mut strained = usage.clone();
        let judge = serde_json::json!({"calls": 8, "cache_hits": 0, "shared_in_flight": 0, "model_calls": 8,
            "failures": 1, "refused_by_token_cap": 0, "tokens_in": 80, "tokens_out": 16, "cached_tokens_in": 0,
            "model_tokens_in": 80, "model_tokens_out": 16, "truncated": 3});
        strained.calls.by_role.insert("judge".into(), serde_json::from_value(judge).unwrap());
        strained.calls.failures = 2;
        (strained.tokens.cap_reached, strained.tokens.refused_calls) = (true, 3);
        (strained.concurrency.lowest, strained.concurrency.last) = (2, 4);
        strained.redacted = 2;
        assert!(strained.to_string().ends_with(
            "; 2 calls failed; answers cut at max_tokens (finish_reason \"length\"): judge 3 of 7 (raise that role's \
             max_tokens in [openai.ROLE]); token cap reached (3 calls refused); the server echoed a configured API key (or URL \
             secret) 2 time(s): replaced by [REDACTED] before anything was written; concurrency lowered to 2 on \
             429/503 (ended at 4 of 8)"
        ));
        let mut priced = report();
        priced["cost"] = serde_json::json!({"currency": "USD", "spent": 1.23456, "priced": true, "answers": 2.0,
                                            "saved_by_cache": 0.8, "by_role": {}});
        priced["budget"] = serde_json::json!({"max_cost": 1.0, "roles": {},
                                              "stopped_by": {"budget": "max_cost", "limit": 1.0, "spent": 1.23456}});
        let priced = UsageReport::from_manifest(&priced).unwrap();
        assert!(
            priced.to_string().ends_with(
                "; paid (the calls sent): 40 tokens in, 8 out, 1.2346 USD; not paid (from the cache or shared in \
                 flight): 60 tokens in, 12 out; budget max_cost = 1 USD reached"
            ),
            "{priced}"
        );
    }

    #[test]
    fn the_paid_tokens_and_money_are_of_the_same_calls() {
        // A run served wholly from the cache: nothing paid, every token from the cache.
        let mut cached = report();
        cached["calls"]["model_calls"] = 0.into();
        cached["tokens"]["model_in"] = 0.into();
        cached["tokens"]["model_out"] = 0.into();
        cached["cost"] = serde_json::json!({"currency": "EUR", "priced": true, "spent": 0.0, "answers": 0.5,
                                            "saved_by_cache": 0.5, "by_role": {}});
        let line = UsageReport::from_manifest(&cached).unwrap().to_string();
        assert!(
            line.ends_with(
                "; paid (the calls sent): 0 tokens in, 0 out, 0.0000 EUR; not paid (from the cache or shared in \
                 flight): 100 tokens in, 20 out"
            ),
            "{line}"
        );

        // A resumed run: its tokens are this process's calls, so its paid money is too; what the
        // interrupted run spent is said apart.
        let mut resumed = report();
        let role = |spent: f64, carried: f64| {
            serde_json::json!({"model": "g", "priced": true, "spent": spent, "answers": spent,
                               "carried_over": carried})
        };
        resumed["cost"] = serde_json::json!({"currency": "EUR", "priced": true, "spent": 1.5, "answers": 1.25,
                                             "saved_by_cache": 0.0,
                                             "by_role": {"generator": role(1.0, 0.25), "judge": role(0.5, 0.0)}});
        let line = UsageReport::from_manifest(&resumed).unwrap().to_string();
        assert!(
            line.ends_with(
                "; paid (the calls sent): 40 tokens in, 8 out, 1.2500 EUR; not paid (from the cache or shared in \
                 flight): 60 tokens in, 12 out; spent 1.5000 EUR in all, 0.2500 of it before the run was resumed"
            ),
            "{line}"
        );

        // Without a currency the money has no unit, and no trailing space.
        let mut bare = report();
        bare["cost"] = serde_json::json!({"currency": null, "priced": false, "spent": 0.125, "answers": 0.125,
                                          "saved_by_cache": 0.0, "by_role": {}});
        let line = UsageReport::from_manifest(&bare).unwrap().to_string();
        assert!(line.contains(" 8 out, 0.1250 (a model without a price is not counted); not paid"), "{line}");
    }

    #[test]
    fn a_report_reads_back_to_the_same_json() {
        let mut full = report();
        full["budget"] = serde_json::json!({"max_cost": null, "roles": {"judge": 0.5}, "stopped_by": null});
        full["by_task"] = serde_json::json!({"t1": {"generator": {"requests": 2, "tokens_in": 10, "tokens_out": 4,
                                             "cost": null, "server_s": 0.25, "timed": 1}}});
        for value in [report(), full] {
            assert_eq!(UsageReport::from_manifest(&value).unwrap().to_value(), value);
        }
    }

    #[test]
    fn a_missing_or_renamed_key_is_an_error_naming_it() {
        let mut missing = report();
        missing["cache"].as_object_mut().unwrap().remove("hits");
        let error = UsageReport::from_manifest(&missing).unwrap_err();
        assert_eq!(error.to_string(), "manifest.json: key `openai.cache`: missing field `hits`");

        let mut renamed = report();
        let tokens = renamed["tokens"].as_object_mut().unwrap();
        let cap = tokens.remove("cap_reached").unwrap();
        tokens.insert("token_cap_reached".into(), cap);
        let error = UsageReport::from_manifest(&renamed).unwrap_err().to_string();
        assert!(error.starts_with("manifest.json: key `openai.tokens"), "{error}");
        assert!(error.contains("token_cap_reached"), "{error}");

        // A nullable value's key must be there too: missing is not `null`.
        let mut no_spent = report();
        no_spent["cost"].as_object_mut().unwrap().remove("spent");
        let error = UsageReport::from_manifest(&no_spent).unwrap_err();
        assert_eq!(error.to_string(), "manifest.json: key `openai.cost`: missing field `spent`");

        let mut wrong_type = report();
        wrong_type["calls"]["total"] = serde_json::json!("ten");
        let error = UsageReport::from_manifest(&wrong_type).unwrap_err().to_string();
        assert!(error.starts_with("manifest.json: key `openai.calls.total`: invalid type"), "{error}");
    }
}
