//! The `[policy]` table: each field a value or a list, swept as their cross product.

use super::*;
use crate::experiment::limits::{LimitError, MAX_REVISIONS, check_configs};

const POLICY_KEYS: [&str; 6] = ["pass_score", "max_revisions", "stall", "plateau_eps", "dim_target", "final"];

/// A `[policy]` table that does not make a grid of policies.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// A key the table does not have.
    #[error("[policy]: unknown key `{key}`; expected one of: {}", POLICY_KEYS.join(", "))]
    UnknownKey {
        /// The key.
        key: String,
    },
    /// A field given as `[]`.
    #[error("[policy]: `{key}` is an empty list; give at least one value")]
    EmptyList {
        /// The field.
        key: &'static str,
    },
    /// A number field given something else.
    #[error("[policy]: `{key}` must be a number, found {found}")]
    NotANumber {
        /// The field.
        key: &'static str,
        /// The TOML type given.
        found: &'static str,
    },
    /// A number field given infinity or NaN.
    #[error("[policy]: `{key}` must be finite")]
    NotFinite {
        /// The field.
        key: &'static str,
    },
    /// A negative `plateau_eps`.
    #[error("[policy]: `plateau_eps` = {0} must be ≥ 0 (0 turns plateau detection off)")]
    NegativePlateau(f64),
    /// A `max_revisions` that is not a whole number in range.
    #[error("[policy]: `max_revisions` must be a whole number from 0 to {MAX_REVISIONS}, found {0}")]
    Revisions(toml::Value),
    /// A `stall` that is not a boolean.
    #[error("[policy]: `stall` must be true or false, found {0}")]
    Stall(toml::Value),
    /// A `final` that is neither `best` nor `last`.
    #[error("[policy]: `final` must be \"best\" or \"last\", found {0}")]
    Final(toml::Value),
    /// Past a bound on what one task's loops may hold (`limits`).
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// A value list that repeats a value, so two configs would be the same.
    #[error("[policy]: the value list repeats a value (config {config_id} twice)")]
    Repeated {
        /// The config that would be there twice.
        config_id: String,
    },
}

/// The cross product of every `[policy]` field, each a value or a list of values.
pub(super) fn policy_grid(table: &toml::Table) -> Result<Vec<Policy>, PolicyError> {
    for key in table.keys() {
        if !POLICY_KEYS.contains(&key.as_str()) {
            return Err(PolicyError::UnknownKey { key: key.clone() });
        }
    }
    let defaults = Policy::default();
    let list = |key: &'static str| -> Result<Option<Vec<toml::Value>>, PolicyError> {
        match table.get(key) {
            None => Ok(None),
            Some(toml::Value::Array(items)) if items.is_empty() => Err(PolicyError::EmptyList { key }),
            Some(toml::Value::Array(items)) => Ok(Some(items.clone())),
            Some(value) => Ok(Some(vec![value.clone()])),
        }
    };
    let number = |key: &'static str, value: &toml::Value| -> Result<f64, PolicyError> {
        let n = match value {
            toml::Value::Integer(i) => *i as f64,
            toml::Value::Float(f) => *f,
            other => return Err(PolicyError::NotANumber { key, found: other.type_str() }),
        };
        if n.is_finite() { Ok(n) } else { Err(PolicyError::NotFinite { key }) }
    };
    let numbers = |key: &'static str, default: f64| -> Result<Vec<f64>, PolicyError> {
        match list(key)? {
            None => Ok(vec![default]),
            Some(values) => values.iter().map(|v| number(key, v)).collect(),
        }
    };
    let pass_scores = numbers("pass_score", defaults.pass_score)?;
    let plateau = numbers("plateau_eps", defaults.plateau_eps)?;
    if let Some(eps) = plateau.iter().find(|e| **e < 0.0) {
        return Err(PolicyError::NegativePlateau(*eps));
    }
    let caps: Vec<u32> = match list("max_revisions")? {
        None => vec![defaults.max_revisions],
        Some(values) => values
            .iter()
            .map(|v| match v {
                toml::Value::Integer(i) if (0..=i64::from(MAX_REVISIONS)).contains(i) => Ok(*i as u32),
                toml::Value::Integer(i) if *i > 0 => {
                    Err(LimitError::Revisions { what: "[policy]: `max_revisions`", value: *i as u64 }.into())
                }
                other => Err(PolicyError::Revisions(other.clone())),
            })
            .collect::<Result<_, _>>()?,
    };
    let stalls: Vec<bool> = match list("stall")? {
        None => vec![defaults.stall],
        Some(values) => {
            values.iter().map(|v| v.as_bool().ok_or_else(|| PolicyError::Stall(v.clone()))).collect::<Result<_, _>>()?
        }
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
                _ => Err(PolicyError::Final(v.clone())),
            })
            .collect::<Result<_, _>>()?,
    };
    let lengths = [pass_scores.len(), caps.len(), stalls.len(), plateau.len(), targets.len(), finals.len()];
    check_configs("[policy]", &lengths)?;
    let grid = PolicyGrid {
        pass_score: pass_scores,
        max_revisions: caps,
        stall: stalls,
        plateau_eps: plateau,
        dim_target: targets,
        final_draft: finals,
    };
    grid.policies().map_err(|repeated| PolicyError::Repeated { config_id: repeated.config_id })
}
