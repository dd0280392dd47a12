//! How many requests may be in flight at one endpoint: an AIMD limit, as promptfoo and Inspect
//! keep one. An overloaded answer (429, 503) halves the limit; a window of successes (as many as
//! the limit) raises it by one, up to the configured concurrency. Every change is kept for the
//! manifest. Pure: the caller passes the time and does the waiting (see `pool`).

use std::time::Duration;

use crate::usage::{ConcurrencyReport, LimitChange, LimitReason};

/// History entries kept at most; later changes are counted but not listed.
const HISTORY_CAP: usize = 10_000;

pub struct Aimd {
    max: u32,
    limit: u32,
    /// Bumped at every change, so that a burst of 429s from requests sent under one limit
    /// halves it once, not once per request.
    generation: u64,
    successes: u32,
    lowest: u32,
    history: Vec<LimitChange>,
    changes: u64,
}

impl Aimd {
    pub fn new(max: u32) -> Aimd {
        let max = max.max(1);
        let start = LimitChange { t_s: 0.0, limit: max, reason: LimitReason::Start };
        Aimd { max, limit: max, generation: 0, successes: 0, lowest: max, history: vec![start], changes: 1 }
    }

    /// Requests in flight at most, now.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// The generation a request is sent under; hand it back with its outcome.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    fn record(&mut self, reason: LimitReason, now: Duration) {
        self.generation += 1;
        self.successes = 0;
        self.changes += 1;
        self.lowest = self.lowest.min(self.limit);
        if self.history.len() < HISTORY_CAP {
            let t_s = (now.as_secs_f64() * 1000.0).round() / 1000.0;
            self.history.push(LimitChange { t_s, limit: self.limit, reason });
        }
    }

    /// A request sent under `generation` was answered.
    pub fn succeeded(&mut self, generation: u64, now: Duration) {
        // Only successes under the current limit show that it is sustainable.
        if generation == self.generation {
            self.successes += 1;
            if self.successes >= self.limit && self.limit < self.max {
                self.limit += 1;
                self.record(LimitReason::Recovered, now);
            }
        }
    }

    /// A request sent under `generation` was refused as too many (429, 503).
    pub fn overloaded(&mut self, generation: u64, now: Duration) {
        if generation == self.generation && self.limit > 1 {
            self.limit = (self.limit / 2).max(1);
            self.record(LimitReason::Overloaded, now);
        } else {
            self.successes = 0;
        }
    }

    /// The limit's story for the manifest.
    pub fn report(&self) -> ConcurrencyReport {
        ConcurrencyReport {
            max: u64::from(self.max),
            last: u64::from(self.limit),
            lowest: u64::from(self.lowest),
            changes: self.changes,
            history: self.history.clone(),
            history_truncated: self.changes > self.history.len() as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overload_halves_once_per_generation_and_success_recovers() {
        let mut aimd = Aimd::new(8);
        let t = Duration::from_millis(5);
        // Eight requests sent under the same limit all come back 429: one halving, not eight.
        let generation = aimd.generation();
        for _ in 0..8 {
            aimd.overloaded(generation, t);
        }
        assert_eq!(aimd.limit(), 4);
        aimd.overloaded(aimd.generation(), t);
        assert_eq!(aimd.limit(), 2);
        for _ in 0..3 {
            aimd.overloaded(aimd.generation(), t);
        }
        assert_eq!(aimd.limit(), 1, "never below one");
        // A window of successes (as many as the limit) raises it by one.
        aimd.succeeded(aimd.generation(), t);
        assert_eq!(aimd.limit(), 2);
        // A success of a request sent under an older limit says nothing about this one.
        aimd.succeeded(aimd.generation() - 1, t);
        aimd.succeeded(aimd.generation(), t);
        assert_eq!(aimd.limit(), 2);
        aimd.succeeded(aimd.generation(), t);
        assert_eq!(aimd.limit(), 3);
        for _ in 0..100 {
            aimd.succeeded(aimd.generation(), t);
        }
        assert_eq!(aimd.limit(), 8, "never above the configured concurrency");
        let report = aimd.report();
        assert_eq!(report.lowest, 1);
        assert_eq!(report.last, 8);
        assert_eq!(report.history[1].t_s, 0.005);
        let reasons: Vec<LimitReason> = report.history.iter().map(|c| c.reason).collect();
        assert_eq!(
            &reasons[..4],
            [LimitReason::Start, LimitReason::Overloaded, LimitReason::Overloaded, LimitReason::Overloaded]
        );
        assert!(reasons[4..].iter().all(|r| *r == LimitReason::Recovered));
    }
}
