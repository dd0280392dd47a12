//! `faulty`: a critic that misbehaves on demand, so tests can prove the host survives bad
//! plugins — panics, error strings, malformed or out-of-range critiques — without losing rows.
//!
//! Config (every key optional), each naming the task ids to misbehave on:
//! `{"panic_on": ["t1"], "error_on": ["t2"], "malformed_on": ["t3"], "out_of_range_on": ["t4"],
//!   "flaky_on": ["t5"]}`. `flaky_on` fails the first call for a task and round, then answers.
//! Otherwise it scores a draft 0–10 by its length (one point per 40 characters).

#![warn(missing_docs)]

use std::collections::HashSet;
use std::sync::Mutex;

use critbench_abi::{CriticError, CriticPlugin, Host, Request, export_critic};
use serde::Deserialize;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Config {
    #[serde(default)]
    panic_on: Vec<String>,
    #[serde(default)]
    error_on: Vec<String>,
    #[serde(default)]
    malformed_on: Vec<String>,
    #[serde(default)]
    out_of_range_on: Vec<String>,
    #[serde(default)]
    flaky_on: Vec<String>,
}

/// The critic, with the misbehaviour its config asks for.
pub struct Faulty {
    config: Config,
    /// (task, round) pairs that already failed once under `flaky_on`.
    failed_once: Mutex<HashSet<(String, u32)>>,
}

impl CriticPlugin for Faulty {
    const NAME: &'static str = "faulty";
    const VERSION: &'static str = "1.0.0";
    const SCORE_MIN: f64 = 0.0;
    const SCORE_MAX: f64 = 10.0;

    fn create(config: &str, _host: Host) -> Result<Self, CriticError> {
        let config: Config = serde_json::from_str(config).map_err(|e| format!("invalid config: {e}"))?;
        Ok(Faulty { config, failed_once: Mutex::new(HashSet::new()) })
    }

    fn critique(&self, request: &str) -> Result<String, CriticError> {
        let request: Request = serde_json::from_str(request).map_err(|e| format!("bad request: {e}"))?;
        let id = &request.task.id;
        let on = |list: &[String]| list.iter().any(|x| x == id);
        if on(&self.config.panic_on) {
            panic!("deliberate panic on task {id}");
        }
        if on(&self.config.error_on) {
            return Err(format!("deliberate error on task {id}").into());
        }
        if on(&self.config.malformed_on) {
            return Ok("{\"score\": ".to_string());
        }
        if on(&self.config.out_of_range_on) {
            return Ok("{\"score\": 42}".to_string());
        }
        if on(&self.config.flaky_on) {
            let mut failed = self.failed_once.lock().unwrap_or_else(|p| p.into_inner());
            if failed.insert((id.clone(), request.round)) {
                return Err(format!("deliberate first-call failure on task {id}").into());
            }
        }
        let score = (request.draft.chars().count() as f64 / 40.0).min(10.0);
        Ok(serde_json::json!({ "score": score, "issues": [], "fatal_issues": [] }).to_string())
    }
}

export_critic!(Faulty);
