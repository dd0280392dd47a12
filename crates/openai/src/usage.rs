//! What the model client did in a run or a judge, read from its report (the `openai` object of
//! `manifest.json`) into a typed summary with a one-line rendering for the terminal.

use std::fmt;

use serde::Deserialize;

/// The parts of the model client's report a user sees after a run.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ModelUsage {
    pub endpoint: String,
    pub calls: CallCounts,
    pub cache: CacheCounts,
    pub http: HttpCounts,
    pub tokens: TokenCounts,
    pub concurrency: Concurrency,
    /// Configured secrets (API keys, URL passwords) found in answers or messages and replaced by
    /// `[REDACTED]` before anything was written.
    pub redacted: u64,
    /// What the model calls cost, when the roles have prices.
    pub cost: Cost,
    /// The run's `[budget]`, when it has one, and which of it stopped the run.
    pub budget: Option<BudgetRecord>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Cost {
    pub currency: Option<String>,
    /// Spent on model calls (the whole run's, before a resume too); `None` without prices.
    pub spent: Option<f64>,
    /// Every role has a price.
    pub priced: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct BudgetRecord {
    pub max_cost: Option<f64>,
    pub stopped_by: Option<crate::BudgetStop>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CallCounts {
    /// Every call the run made, answered from the cache or not.
    pub total: u64,
    /// Calls sent to the model.
    pub model_calls: u64,
    pub failures: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CacheCounts {
    pub hits: u64,
    /// Identical requests in flight at once, answered by one model call.
    pub shared_in_flight: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct HttpCounts {
    pub requests: u64,
    pub retries: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct TokenCounts {
    #[serde(rename = "in")]
    pub tokens_in: u64,
    #[serde(rename = "out")]
    pub tokens_out: u64,
    /// The run reached `max_tokens_total`.
    pub cap_reached: bool,
    /// Calls refused once the cap was reached.
    pub refused_calls: u64,
}

/// The concurrency limit, lowered on 429/503 answers and raised again on success.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Concurrency {
    pub max: u64,
    pub lowest: u64,
    #[serde(rename = "final")]
    pub last: u64,
}

impl ModelUsage {
    /// Reads the client's report; a field it lacks counts as zero.
    pub fn from_report(report: &serde_json::Value) -> Result<ModelUsage, serde_json::Error> {
        ModelUsage::deserialize(report)
    }
}

/// One line: calls made, answers from the cache, tokens, and what went wrong.
impl fmt::Display for ModelUsage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let endpoint = if self.endpoint.is_empty() { "?" } else { &self.endpoint };
        write!(
            f,
            "models: {} calls, {} sent to {endpoint} ({} HTTP requests, {} retries), {} from the cache, {} shared in flight; {} tokens in, {} out",
            self.calls.total,
            self.calls.model_calls,
            self.http.requests,
            self.http.retries,
            self.cache.hits,
            self.cache.shared_in_flight,
            self.tokens.tokens_in,
            self.tokens.tokens_out,
        )?;
        if self.calls.failures > 0 {
            write!(f, "; {} calls failed", self.calls.failures)?;
        }
        if let Some(spent) = self.cost.spent {
            let currency = self.cost.currency.as_deref().unwrap_or("");
            write!(f, "; spent {spent:.4} {currency}")?;
            if !self.cost.priced {
                write!(f, " (a model without a price is not counted)")?;
            }
            if let Some(stop) = self.budget.as_ref().and_then(|b| b.stopped_by.as_ref()) {
                write!(f, "; budget {} = {} {currency} reached", stop.budget, stop.limit)?;
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_what_went_wrong_only_when_it_did() {
        let report = serde_json::json!({
            "endpoint": "http://127.0.0.1:9/v1",
            "calls": {"total": 10, "model_calls": 4, "failures": 0, "by_role": {}},
            "cache": {"hits": 6, "shared_in_flight": 1, "mode": "memory"},
            "http": {"requests": 5, "retries": 1},
            "tokens": {"in": 100, "out": 20, "cap_reached": false, "refused_calls": 0},
            "concurrency": {"max": 8, "final": 8, "lowest": 8, "history": []},
        });
        let usage = ModelUsage::from_report(&report).unwrap();
        assert_eq!(
            usage.to_string(),
            "models: 10 calls, 4 sent to http://127.0.0.1:9/v1 (5 HTTP requests, 1 retries), 6 from the cache, 1 shared in flight; 100 tokens in, 20 out"
        );
        let strained = ModelUsage {
            calls: CallCounts { failures: 2, ..usage.calls.clone() },
            tokens: TokenCounts { cap_reached: true, refused_calls: 3, ..usage.tokens.clone() },
            concurrency: Concurrency { max: 8, lowest: 2, last: 4 },
            redacted: 2,
            ..usage.clone()
        };
        assert!(strained.to_string().ends_with(
            "; 2 calls failed; token cap reached (3 calls refused); the server echoed a configured API key (or URL \
             secret) 2 time(s): replaced by [REDACTED] before anything was written; concurrency lowered to 2 on \
             429/503 (ended at 4 of 8)"
        ));
        let priced = ModelUsage::from_report(&serde_json::json!({
            "cost": {"currency": "USD", "spent": 1.23456, "priced": true},
            "budget": {"max_cost": 1.0, "stopped_by": {"budget": "max_cost", "limit": 1.0, "spent": 1.23456}},
        }))
        .unwrap();
        assert!(priced.to_string().ends_with("; spent 1.2346 USD; budget max_cost = 1 USD reached"), "{priced}");
    }
}
