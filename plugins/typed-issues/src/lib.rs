//! `typed-issues`: a critic for tests whose issue types are its own, declared with their memory
//! hints in its info JSON, so that a run shows strategy memory working for a critic the engine
//! has never heard of.
//!
//! The critique depends only on the round: round 0 has the issues `opening_unclear` and
//! `claims_unsupported`, round 1 only `claims_unsupported`, and from round 2 on the draft passes
//! with score 9 (of 0–10). A feedback loop with `pass_score` 8 and two revisions or more thus
//! passes after fixing both types.
//!
//! Config: `{}`, or `{"ask": "SERVICE"}` to call that host service with `{"draft": ...}` during
//! every critique and put its answer in the rationale (for tests of the host's services).
//!
//! ```
//! use critbench_abi::{CriticPlugin, Host};
//! use critbench_typed_issues::TypedIssues;
//!
//! let critic = TypedIssues::create("{}", Host::none()).unwrap();
//! let request = r#"{"task": {"id": "t", "prompt": "p"}, "draft": "d", "round": 1}"#;
//! let critique: serde_json::Value = serde_json::from_str(&critic.critique(request).unwrap()).unwrap();
//! assert_eq!(critique["issues"][0]["type"], "claims_unsupported");
//! ```

#![warn(missing_docs)]

use critbench_abi::{CriticError, CriticPlugin, Host, Request, export_critic};
use serde_json::{Value, json};

/// The critic; `ask` names a host service to call during every critique.
pub struct TypedIssues {
    ask: Option<String>,
    host: Host,
}

impl CriticPlugin for TypedIssues {
    const NAME: &'static str = "typed-issues";
    const VERSION: &'static str = "1.0.0";
    const SCORE_MIN: f64 = 0.0;
    const SCORE_MAX: f64 = 10.0;
    const INFO: &'static str = r#"{
        "info_version": 1,
        "issue_types": [
            {"name": "opening_unclear", "hint": "Open with a one-sentence statement of the answer."},
            {"name": "claims_unsupported", "hint": "Give a source for every claim you make."}
        ],
        "hints": {"not_found": "typed-issues is a test plugin: build it with `cargo build -p critbench-typed-issues`"}
    }"#;

    fn create(config: &str, host: Host) -> Result<Self, CriticError> {
        let config: Value = if config.trim().is_empty() {
            json!({})
        } else {
            serde_json::from_str(config).map_err(|e| format!("config is not JSON: {e}"))?
        };
        let Value::Object(entries) = config else { return Err("config must be a JSON object".into()) };
        let mut ask = None;
        for (key, value) in entries {
            match (key.as_str(), value) {
                ("ask", Value::String(service)) => ask = Some(service),
                (key, _) => return Err(format!("unknown config key `{key}` (known: ask, a service name)").into()),
            }
        }
        Ok(TypedIssues { ask, host })
    }

    fn critique(&self, request: &str) -> Result<String, CriticError> {
        let request: Request = serde_json::from_str(request).map_err(|e| format!("bad request: {e}"))?;
        let mut issues = Vec::new();
        if request.round == 0 {
            issues.push(json!({"text": "the opening does not say what the answer is", "type": "opening_unclear"}));
        }
        if request.round <= 1 {
            issues.push(json!({"text": "claims without a source", "type": "claims_unsupported"}));
        }
        let score = [2.0, 6.0].get(request.round as usize).copied().unwrap_or(9.0);
        let rationale = match &self.ask {
            Some(service) => self.host.call(service, &json!({ "draft": request.draft }).to_string())?,
            None => format!("round {}", request.round),
        };
        Ok(json!({"critique_version": 1, "score": score, "issues": issues, "rationale": rationale}).to_string())
    }
}

export_critic!(TypedIssues);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_declares_every_type_the_critiques_carry() {
        let info = critbench_abi::PluginInfo::parse(TypedIssues::INFO).unwrap();
        let critic = TypedIssues::create("{}", Host::none()).unwrap();
        let request = r#"{"task": {"id": "t", "prompt": "p"}, "draft": "d", "round": 0}"#;
        let critique: Value = serde_json::from_str(&critic.critique(request).unwrap()).unwrap();
        let types: Vec<&str> =
            critique["issues"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap()).collect();
        assert_eq!(types, ["opening_unclear", "claims_unsupported"]);
        for name in types {
            assert!(info.issue_hint(name).is_some(), "`{name}` is not declared");
        }
        assert!(TypedIssues::create(r#"{"x": 1}"#, Host::none()).is_err());
        let asking = TypedIssues::create(r#"{"ask": "chat"}"#, Host::none()).unwrap();
        assert!(asking.critique(request).unwrap_err().to_string().contains("no services"));
    }
}
