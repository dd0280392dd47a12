//! One critiqued draft as the tables record it, for the loop's rounds and the adjudicator's.

use std::time::Instant;

use critbench_plugin_host::request::{TaskJson, critique_request};
use critbench_plugin_host::services::CallScope;
use critbench_plugin_host::{CritiqueCall, critique_with_retry};
use critbench_storage::recorded::RecordedRound;

use crate::backend::Draft;
use crate::plan::{Plan, Unit};

/// The unit's critic on `text` as round `round` of the loop, with retries: the call, its scope
/// (the tokens the critic's host services spent) and how long it took (ms). Host services (the
/// judge model's cache) key their answers by the scope, the critique's identity.
pub(crate) fn critique_draft(
    plan: &Plan<'_>,
    unit: Unit,
    task_id: &str,
    task_json: &TaskJson,
    text: &str,
    round: u32,
) -> (CritiqueCall, CallScope, f64) {
    let started = Instant::now();
    let request = critique_request(task_json, text, round);
    let mut scope = CallScope::new(task_id, unit.epoch, round);
    let weights = plan.experiment.critics[unit.critic].weights.as_ref();
    let call =
        critique_with_retry(&plan.critics[unit.critic], &request, weights, plan.experiment.critic_attempts, &mut scope);
    (call, scope, ms(started))
}

/// Milliseconds since `since`.
pub(crate) fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

/// A critiqued draft as the tables record it: the critique and its call, the draft (its text only
/// when drafts are stored), the author's and the critic's times (ms) and tokens.
pub(crate) fn recorded_round(
    call: CritiqueCall,
    draft: Draft,
    store_drafts: bool,
    (gen_ms, critic_ms): (f64, f64),
    scope: &CallScope,
) -> RecordedRound {
    RecordedRound {
        critique: call.critique.into(),
        critic_attempts: call.attempts,
        critic_error: call.error,
        draft_chars: draft.text.chars().count() as u64,
        draft: store_drafts.then_some(draft.text),
        gen_ms,
        critic_ms,
        tokens_in: draft.tokens_in,
        tokens_out: draft.tokens_out,
        critic_tokens_in: scope.tokens_in,
        critic_tokens_out: scope.tokens_out,
        acted_on_critique: draft.acted_on_critique,
    }
}
