//! The `[policy]` table: each field a value or a list, swept as their cross product.

use super::*;
use crate::limits::{LimitError, MAX_REVISIONS, check_configs};

const POLICY_KEYS: [&str; 6] = ["pass_score", "max_revisions", "stall", "plateau_eps", "dim_target", "final"];

/// The cross product of every `[policy]` field, each a value or a list of values.
pub(super) fn policy_grid(table: &toml::Table) -> Result<Vec<Policy>, String> {
    for key in table.keys() {
        if !POLICY_KEYS.contains(&key.as_str()) {
            return Err(format!("[policy]: unknown key `{key}`; expected one of: {}", POLICY_KEYS.join(", ")));
        }
    }
    let defaults = Policy::default();
    let list = |key: &str| -> Result<Option<Vec<toml::Value>>, String> {
        match table.get(key) {
            None => Ok(None),
            Some(toml::Value::Array(items)) if items.is_empty() => {
                Err(format!("[policy]: `{key}` is an empty list; give at least one value"))
            }
            Some(toml::Value::Array(items)) => Ok(Some(items.clone())),
            Some(value) => Ok(Some(vec![value.clone()])),
        }
    };
    let number = |key: &str, value: &toml::Value| -> Result<f64, String> {
        let n = match value {
            toml::Value::Integer(i) => *i as f64,
            toml::Value::Float(f) => *f,
            other => return Err(format!("[policy]: `{key}` must be a number, found {}", other.type_str())),
        };
        if n.is_finite() { Ok(n) } else { Err(format!("[policy]: `{key}` must be finite")) }
    };
    let numbers = |key: &str, default: f64| -> Result<Vec<f64>, String> {
        match list(key)? {
            None => Ok(vec![default]),
            Some(values) => values.iter().map(|v| number(key, v)).collect(),
        }
    };
    let pass_scores = numbers("pass_score", defaults.pass_score)?;
    let plateau = numbers("plateau_eps", defaults.plateau_eps)?;
    if let Some(eps) = plateau.iter().find(|e| **e < 0.0) {
        return Err(format!("[policy]: `plateau_eps` = {eps} must be ≥ 0 (0 turns plateau detection off)"));
    }
    let caps: Vec<u32> = match list("max_revisions")? {
        None => vec![defaults.max_revisions],
        Some(values) => values
            .iter()
            .map(|v| match v {
                toml::Value::Integer(i) if (0..=i64::from(MAX_REVISIONS)).contains(i) => Ok(*i as u32),
                toml::Value::Integer(i) if *i > 0 => {
                    Err(LimitError::Revisions { what: "[policy]: `max_revisions`", value: *i as u64 }.to_string())
                }
                other => Err(format!(
                    "[policy]: `max_revisions` must be a whole number from 0 to {MAX_REVISIONS}, found {other}"
                )),
            })
            .collect::<Result<_, _>>()?,
    };
    let stalls: Vec<bool> = match list("stall")? {
        None => vec![defaults.stall],
        Some(values) => values
            .iter()
            .map(|v| v.as_bool().ok_or_else(|| format!("[policy]: `stall` must be true or false, found {v}")))
            .collect::<Result<_, _>>()?,
    };
    let targets: Vec<Option<f64>> = match list("dim_target")? {
        None => vec![None],
        Some(values) => values.iter().map(|v| number("dim_target", v).map(Some)).collect::<Result<_, _>>()?,
    };
    let finals: Vec<FinalDraft> = match list("final")? {
        None => vec![FinalDraft::Best],
        Some(values) => values
            .iter()
            .map(|v| match v.as_str() {
                Some("best") => Ok(FinalDraft::Best),
                Some("last") => Ok(FinalDraft::Last),
                _ => Err(format!("[policy]: `final` must be \"best\" or \"last\", found {v}")),
            })
            .collect::<Result<_, _>>()?,
    };
    let lengths = [pass_scores.len(), caps.len(), stalls.len(), plateau.len(), targets.len(), finals.len()];
    check_configs("[policy]", &lengths).map_err(|e| e.to_string())?;
    let grid = PolicyGrid {
        pass_score: pass_scores,
        max_revisions: caps,
        stall: stalls,
        plateau_eps: plateau,
        dim_target: targets,
        final_draft: finals,
    };
    grid.policies()
        .map_err(|repeated| format!("[policy]: the value list repeats a value (config {} twice)", repeated.config_id))
}
