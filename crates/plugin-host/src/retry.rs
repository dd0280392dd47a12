//! The retry rule of a critique: up to `critic_attempts` calls, then the conservative stand-in
//! that never passes (`docs/REFERENCE.md`, Critique).

use std::collections::BTreeMap;

use critbench_core::Critique;

use crate::services::CallScope;
use crate::{CallError, CriticInstance, CriticTask};

/// Attempts per critique, in all, unless configured otherwise (`docs/REFERENCE.md`, Critique).
pub const DEFAULT_ATTEMPTS: u32 = 3;

/// The result of critiquing one draft, after retries.
#[derive(Debug)]
pub struct CritiqueCall {
    /// The critique, or the conservative stand-in when every attempt failed.
    pub critique: Critique,
    /// The attempts made, from 1.
    pub attempts: u32,
    /// The last error when every attempt failed; the critique is then the conservative stand-in.
    pub error: Option<String>,
}

impl CritiqueCall {
    /// Whether every attempt failed.
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }
}

/// Calls the critic up to `attempts` times until it returns a valid critique; after the last
/// failure returns [`Critique::unavailable`], which never passes a draft. Each attempt is made
/// in `scope` with its attempt number; the tokens the host's services spend are added to it.
pub fn critique_with_retry(
    critic: &CriticInstance,
    request: &str,
    weights: Option<&BTreeMap<String, f64>>,
    attempts: u32,
    scope: &mut CallScope,
) -> CritiqueCall {
    let call = async |scope: &mut CallScope| critic.call_in(request, scope);
    crate::program::block_on(retry(critic.info().range, call, weights, attempts, scope))
}

/// [`critique_with_retry`] of `draft` at `round` through a critic with the loop's task open:
/// every attempt goes through `task`, which reads the task once where the critic can, and is
/// awaited where the critic's answers are.
pub async fn critique_task_with_retry(
    task: &mut CriticTask<'_>,
    draft: &str,
    round: u32,
    weights: Option<&BTreeMap<String, f64>>,
    attempts: u32,
    scope: &mut CallScope,
) -> CritiqueCall {
    let range = task.critic().info().range;
    retry(range, async |scope: &mut CallScope| task.ask(draft, round, scope).await, weights, attempts, scope).await
}

/// Up to `attempts` calls of `call` until one answers a valid critique of `range`; else the
/// conservative stand-in.
async fn retry(
    range: critbench_core::ScoreRange,
    mut call: impl AsyncFnMut(&mut CallScope) -> Result<String, CallError>,
    weights: Option<&BTreeMap<String, f64>>,
    attempts: u32,
    scope: &mut CallScope,
) -> CritiqueCall {
    let attempts = attempts.max(1);
    let mut last_error = String::new();
    for attempt in 1..=attempts {
        scope.attempt = attempt;
        match call(scope).await {
            Ok(json) => match Critique::parse(&json, range, weights) {
                Ok(critique) => return CritiqueCall { critique, attempts: attempt, error: None },
                Err(e) => last_error = e.to_string(),
            },
            Err(error) => last_error = error.to_string(),
        }
    }
    CritiqueCall { critique: Critique::unavailable(range), attempts, error: Some(last_error) }
}
