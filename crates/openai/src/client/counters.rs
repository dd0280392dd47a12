//! What the client counts as calls go: per role, per HTTP outcome, per task, and latencies in a
//! histogram of constant size.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::settings::Role;
use crate::usage::LatencyReport;

#[derive(Default)]
pub(super) struct RoleCounters {
    pub(super) calls: u64,
    pub(super) cache_hits: u64,
    pub(super) shared: u64,
    pub(super) model_calls: u64,
    pub(super) failures: u64,
    pub(super) refused: u64,
    pub(super) tokens_in: u64,
    pub(super) tokens_out: u64,
    /// Of `tokens_in`, those a server said it served from its prompt cache.
    pub(super) cached_in: u64,
    /// Answers cut at `max_tokens` (`finish_reason` `length`), cached ones included.
    pub(super) truncated: u64,
    /// The tokens of the answers the model was asked for: what the run paid for. Money is
    /// computed from these sums, never summed itself, so that it does not depend on the order
    /// answers arrive in.
    pub(super) paid_in: u64,
    pub(super) paid_cached_in: u64,
    pub(super) paid_out: u64,
    /// Time of the HTTP requests that were answered.
    pub(super) latency: Histogram,
    /// Microseconds callers spent waiting: on the server (every HTTP request, retries included),
    /// for a free slot (the concurrency limit, a paused endpoint), and backing off.
    pub(super) server_us: u64,
    pub(super) queue_us: u64,
    pub(super) backoff_us: u64,
}

/// Durations in buckets 1% wide, so that percentiles are within 1% in constant memory.
#[derive(Default)]
pub(super) struct Histogram {
    buckets: BTreeMap<u32, u64>,
    count: u64,
    total_us: u64,
}

impl Histogram {
    const RESOLUTION_MS: f64 = 0.01;

    pub(super) fn add(&mut self, elapsed: Duration) {
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

    pub(super) fn report(&self) -> LatencyReport {
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
pub(super) struct HttpCounters {
    pub(super) requests: u64,
    pub(super) retries: u64,
    pub(super) ok: u64,
    pub(super) status_429: u64,
    pub(super) status_503: u64,
    pub(super) status_5xx_other: u64,
    pub(super) status_4xx_other: u64,
    pub(super) timeouts: u64,
    pub(super) connection_errors: u64,
    pub(super) malformed: u64,
}

/// One task's distinct requests (`critbench estimate`'s pilot): what a run that asked them with
/// an empty cache would send, however many of them this run found in its cache.
#[derive(Default)]
pub(super) struct TaskUsage {
    pub(super) keys: std::collections::HashSet<String>,
    pub(super) roles: BTreeMap<Role, TaskRole>,
}

#[derive(Default)]
pub(super) struct TaskRole {
    pub(super) requests: u64,
    pub(super) tokens_in: u64,
    pub(super) cached_in: u64,
    pub(super) tokens_out: u64,
    /// Time the server took for those of them this run sent.
    pub(super) server_us: u64,
    /// Of `requests`, those this run sent (the others came from the cache, untimed).
    pub(super) timed: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
