//! Every attempt for one answer: an endpoint, one HTTP request and how it ended, then another
//! endpoint or a backoff.

use std::borrow::Cow;
use std::time::{Duration, Instant};

use reqwest::header::RETRY_AFTER;
use serde_json::Value;

use super::Client;
use super::answer::{excerpt, parse_answer, parse_native_answer};
use super::endpoint::Endpoint;
use super::headers::{parse_retry_after, rate_limit_pause};
use crate::cache::CachedAnswer;
use crate::chat::ChatError;
use crate::pool::Outcome;
use crate::settings::{MAX_BACKOFF, Role};

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
    /// Every attempt for one answer: an endpoint, the request, its outcome, then at once another
    /// endpoint this call has not tried, or a backoff. The answer and the time its request took;
    /// on failure, [`ChatError::Failed`].
    pub(super) async fn call_model(
        &self,
        role: Role,
        body: &Value,
        text: &[u8],
    ) -> Result<(CachedAnswer, Duration), ChatError> {
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
