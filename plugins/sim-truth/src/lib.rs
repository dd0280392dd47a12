//! The `sim-truth` evaluator: judges a simulated draft by the defects it really has.
//!
//! The offline writer keeps, beside every draft, its hidden truth: the defects it knows the draft
//! has (`critbench_sim::truth`). No critic can read it; only a held-out evaluator's request about
//! a simulated draft carries it, as `"truth": {"defects": [...]}` (docs/PROTOCOL.md). This
//! evaluator scores 10 for a draft with no defect and 2.5 less for each one (never below 0), names
//! each defect as an issue of that type, and passes (`passed`) only a draft with none. A request
//! without a truth — a critic's, a draft of another backend, a rescoring of stored drafts — is an
//! error: there is nothing to judge. Config: `{}`.
//!
//! ```
//! use critbench_abi::{CriticPlugin, Host};
//! use critbench_sim_truth::SimTruth;
//!
//! let evaluator = SimTruth::create("{}", Host::none()).unwrap();
//! let request = r#"{"round": 0, "draft": "…", "truth": {"defects": ["missing_evidence"]},
//!                   "task": {"id": "t", "prompt": "What does RAG add?"}}"#;
//! let critique: serde_json::Value = serde_json::from_str(&evaluator.critique(request).unwrap()).unwrap();
//! assert_eq!(critique["score"], 7.5);
//! assert_eq!(critique["passed"], false);
//! assert_eq!(critique["issues"][0]["type"], "missing_evidence");
//! ```

#![warn(missing_docs)]

use critbench_abi::{CriticError, CriticPlugin, Host};
use serde_json::{Value, json};

/// The `sim-truth` evaluator (see the crate's docs).
#[derive(Debug)]
pub struct SimTruth;

/// What each defect costs of the score.
const PER_DEFECT: f64 = 2.5;

impl CriticPlugin for SimTruth {
    const NAME: &'static str = "sim-truth";
    const VERSION: &'static str = "1.0.0";
    const SCORE_MIN: f64 = 0.0;
    const SCORE_MAX: f64 = 10.0;
    const THREAD_SAFE: bool = true;

    fn create(config: &str, _host: Host) -> Result<Self, CriticError> {
        match config.trim() {
            "" | "null" | "{}" => Ok(SimTruth),
            other => Err(SimTruthError::Config(other.to_string()).into()),
        }
    }

    fn critique(&self, request: &str) -> Result<String, CriticError> {
        let request: Value = serde_json::from_str(request).map_err(SimTruthError::MalformedRequest)?;
        let defects = request["truth"]["defects"].as_array().ok_or(SimTruthError::NoTruth)?;
        let mut issues = Vec::with_capacity(defects.len());
        for defect in defects {
            let name = defect.as_str().ok_or_else(|| SimTruthError::NotAName(defect.clone()))?;
            issues.push(json!({ "text": format!("the draft really has the defect `{name}`"), "type": name }));
        }
        let score = (Self::SCORE_MAX - PER_DEFECT * issues.len() as f64).max(Self::SCORE_MIN);
        let rationale = if issues.is_empty() {
            "the simulated writer knows of no defect in this draft".to_string()
        } else {
            format!("the simulated writer knows of {} defect(s) in this draft", issues.len())
        };
        Ok(json!({ "score": score, "passed": issues.is_empty(), "issues": issues, "rationale": rationale }).to_string())
    }
}

/// Why the evaluator refuses its config or a request (its text is what the host records).
#[derive(Debug, thiserror::Error)]
enum SimTruthError {
    #[error("sim-truth takes no config (`{{}}`), got {0}")]
    Config(String),
    #[error("the request is not JSON: {0}")]
    MalformedRequest(serde_json::Error),
    #[error(
        "the request carries no `truth`: sim-truth judges the simulator's hidden truth, which only a held-out \
         evaluator's request about a draft of the `sim` backend carries (not a critic's, another backend's or a \
         rescoring's)"
    )]
    NoTruth,
    #[error("`truth.defects` holds {0}, not a defect's name")]
    NotAName(Value),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge(request: &str) -> Result<Value, String> {
        let evaluator = SimTruth::create("{}", Host::none()).unwrap();
        evaluator.critique(request).map(|c| serde_json::from_str(&c).unwrap()).map_err(|e| e.to_string())
    }

    #[test]
    fn a_draft_without_defects_passes_with_full_marks_and_each_defect_costs_its_share() {
        let clean = judge(r#"{"round":0,"draft":"x","truth":{"defects":[]},"task":{"id":"t","prompt":"p"}}"#).unwrap();
        assert_eq!((clean["score"].as_f64(), clean["passed"].as_bool()), (Some(10.0), Some(true)));
        let five =
            r#"{"round":1,"draft":"x","truth":{"defects":["a","b","c","d","e"]},"task":{"id":"t","prompt":"p"}}"#;
        let five = judge(five).unwrap();
        assert_eq!((five["score"].as_f64(), five["passed"].as_bool()), (Some(0.0), Some(false)));
        assert_eq!(five["issues"].as_array().unwrap().len(), 5);
    }

    #[test]
    fn a_request_without_a_truth_is_an_error_not_a_verdict() {
        let error = judge(r#"{"round":0,"draft":"x","task":{"id":"t","prompt":"p"}}"#).unwrap_err();
        assert!(error.contains("carries no `truth`"), "{error}");
        let error =
            judge(r#"{"round":0,"draft":"x","truth":{"defects":[3]},"task":{"id":"t","prompt":"p"}}"#).unwrap_err();
        assert!(error.contains("not a defect's name"), "{error}");
        assert!(SimTruth::create(r#"{"strict": true}"#, Host::none()).is_err());
    }
}
