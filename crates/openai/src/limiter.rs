//! How many requests may be in flight: an AIMD limit, as promptfoo and Inspect keep one. An
//! overloaded answer (429, 503) halves the limit; a window of successes (as many as the limit)
//! raises it by one, up to the configured concurrency. Every change is kept for the manifest.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Instant;

use serde::Serialize;

/// One change of the limit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LimitChange {
    /// Seconds since the client was made.
    pub t_s: f64,
    pub limit: u32,
    /// `start`, `overloaded` (a 429 or 503 lowered it) or `recovered` (sustained success raised it).
    pub reason: &'static str,
}

/// History entries kept at most; later changes are counted but not listed.
const HISTORY_CAP: usize = 10_000;

struct State {
    limit: u32,
    in_flight: u32,
    /// Bumped at every change, so that a burst of 429s from requests sent under one limit
    /// halves it once, not once per request.
    generation: u64,
    successes: u32,
    lowest: u32,
    history: Vec<LimitChange>,
    changes: u64,
}

pub struct Limiter {
    max: u32,
    started: Instant,
    state: Mutex<State>,
    freed: Condvar,
}

/// A slot in flight. Report how the request went with [`Permit::succeeded`] or
/// [`Permit::overloaded`]; dropping it otherwise frees the slot without changing the limit.
pub struct Permit<'a> {
    limiter: &'a Limiter,
    generation: u64,
    released: bool,
}

impl Limiter {
    pub fn new(max: u32) -> Limiter {
        let max = max.max(1);
        let start = LimitChange { t_s: 0.0, limit: max, reason: "start" };
        Limiter {
            max,
            started: Instant::now(),
            state: Mutex::new(State {
                limit: max,
                in_flight: 0,
                generation: 0,
                successes: 0,
                lowest: max,
                history: vec![start],
                changes: 1,
            }),
            freed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Blocks until a slot is free under the current limit.
    pub fn acquire(&self) -> Permit<'_> {
        let mut state = self.lock();
        while state.in_flight >= state.limit {
            state = self.freed.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        state.in_flight += 1;
        Permit { limiter: self, generation: state.generation, released: false }
    }

    fn record(&self, state: &mut State, reason: &'static str) {
        state.generation += 1;
        state.successes = 0;
        state.changes += 1;
        state.lowest = state.lowest.min(state.limit);
        if state.history.len() < HISTORY_CAP {
            let t_s = (self.started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
            state.history.push(LimitChange { t_s, limit: state.limit, reason });
        }
    }

    fn release(&self, generation: u64, outcome: Outcome) {
        let mut state = self.lock();
        state.in_flight = state.in_flight.saturating_sub(1);
        match outcome {
            // Only successes under the current limit show that it is sustainable.
            Outcome::Success if generation == state.generation => {
                state.successes += 1;
                if state.successes >= state.limit && state.limit < self.max {
                    state.limit += 1;
                    self.record(&mut state, "recovered");
                }
            }
            Outcome::Overloaded => {
                if generation == state.generation && state.limit > 1 {
                    state.limit = (state.limit / 2).max(1);
                    self.record(&mut state, "overloaded");
                } else {
                    state.successes = 0;
                }
            }
            Outcome::Success | Outcome::Neutral => {}
        }
        drop(state);
        self.freed.notify_all();
    }

    /// The limit's story for the manifest.
    pub fn report(&self) -> serde_json::Value {
        let state = self.lock();
        serde_json::json!({
            "max": self.max,
            "final": state.limit,
            "lowest": state.lowest,
            "changes": state.changes,
            "history": state.history,
            "history_truncated": state.changes > state.history.len() as u64,
        })
    }

    #[cfg(test)]
    pub fn limit(&self) -> u32 {
        self.lock().limit
    }
}

enum Outcome {
    Success,
    Overloaded,
    Neutral,
}

impl Permit<'_> {
    pub fn succeeded(mut self) {
        self.released = true;
        self.limiter.release(self.generation, Outcome::Success);
    }

    pub fn overloaded(mut self) {
        self.released = true;
        self.limiter.release(self.generation, Outcome::Overloaded);
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if !self.released {
            self.limiter.release(self.generation, Outcome::Neutral);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overload_halves_once_per_generation_and_success_recovers() {
        let limiter = Limiter::new(8);
        let permits: Vec<Permit<'_>> = (0..8).map(|_| limiter.acquire()).collect();
        // Eight requests sent under the same limit all come back 429: one halving, not eight.
        for permit in permits {
            permit.overloaded();
        }
        assert_eq!(limiter.limit(), 4);
        limiter.acquire().overloaded();
        assert_eq!(limiter.limit(), 2);
        limiter.acquire().overloaded();
        limiter.acquire().overloaded();
        limiter.acquire().overloaded();
        assert_eq!(limiter.limit(), 1, "never below one");
        // A window of successes (as many as the limit) raises it by one.
        limiter.acquire().succeeded();
        assert_eq!(limiter.limit(), 2);
        limiter.acquire().succeeded();
        limiter.acquire().succeeded();
        assert_eq!(limiter.limit(), 3);
        for _ in 0..100 {
            limiter.acquire().succeeded();
        }
        assert_eq!(limiter.limit(), 8, "never above the configured concurrency");
        let report = limiter.report();
        assert_eq!(report["lowest"], 1);
        assert_eq!(report["final"], 8);
        let reasons: Vec<&str> =
            report["history"].as_array().unwrap().iter().map(|c| c["reason"].as_str().unwrap()).collect();
        assert_eq!(&reasons[..4], ["start", "overloaded", "overloaded", "overloaded"]);
        assert!(reasons[4..].iter().all(|r| *r == "recovered"));
    }

    #[test]
    fn acquire_waits_for_a_free_slot() {
        let limiter = std::sync::Arc::new(Limiter::new(1));
        let first = limiter.acquire();
        let other = std::sync::Arc::clone(&limiter);
        let waiter = std::thread::spawn(move || {
            let started = Instant::now();
            other.acquire().succeeded();
            started.elapsed()
        });
        std::thread::sleep(std::time::Duration::from_millis(100));
        drop(first);
        assert!(waiter.join().unwrap() >= std::time::Duration::from_millis(90));
    }
}
