//! One critiqued draft as the tables record it, for the loop's rounds and the adjudicator's.

use std::collections::BTreeMap;
use std::time::Instant;

use critbench_plugin_host::request::{TaskJson, critique_request};
use critbench_plugin_host::services::CallScope;
use critbench_plugin_host::{CriticInstance, CriticTask, CritiqueCall, critique_task_with_retry, critique_with_retry};
use critbench_storage::recorded::RecordedRound;

use crate::run::plan::{Plan, Unit};
use critbench_core::author::Draft;

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
    let critic = Critic {
        instance: &plan.critics[unit.critic],
        weights: plan.experiment.critics[unit.critic].weights.as_ref(),
        attempts: plan.experiment.critic_attempts,
    };
    critique_text(&critic, task_id, unit.epoch, task_json, text, round)
}

/// [`critique_draft`] through `critic`, the unit's critic with the loop's task open: a critic that
/// reads a task once per loop (its descriptor sets the task functions, or a child of the pipelined
/// form) is sent only the round and the draft. Awaited where the critic's answers are; the caller
/// times it ([`Laps`]).
pub(crate) async fn critique_round(
    plan: &Plan<'_>,
    unit: Unit,
    task_id: &str,
    critic: &mut CriticTask<'_>,
    text: &str,
    round: u32,
) -> (CritiqueCall, CallScope) {
    let weights = plan.experiment.critics[unit.critic].weights.as_ref();
    let mut scope = CallScope::new(task_id, unit.epoch, round);
    let attempts = plan.experiment.critic_attempts;
    let call = critique_task_with_retry(critic, text, round, weights, attempts, &mut scope).await;
    (call, scope)
}

/// A critic as a critique is asked of it: the instance, the weights of its dimensions and the
/// attempts before the conservative failure.
pub(crate) struct Critic<'a> {
    pub instance: &'a CriticInstance,
    pub weights: Option<&'a BTreeMap<String, f64>>,
    pub attempts: u32,
}

/// `critic` on `text` as round `round` of the loop of `task_id` × `epoch`, with retries: the call,
/// its scope and how long it took (ms). The run's rounds and `critbench rescore` ask here.
pub(crate) fn critique_text(
    critic: &Critic<'_>,
    task_id: &str,
    epoch: u32,
    task_json: &TaskJson,
    text: &str,
    round: u32,
) -> (CritiqueCall, CallScope, f64) {
    let started = Instant::now();
    let request = critique_request(task_json, text, round);
    let mut scope = CallScope::new(task_id, epoch, round);
    let call = critique_with_retry(critic.instance, &request, critic.weights, critic.attempts, &mut scope);
    (call, scope, ms(started))
}

/// Milliseconds since `since`.
pub(crate) fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

/// Times a loop's steps one after another: each lap ends where the next begins, so a step costs
/// one reading of the clock instead of two (a loop reads it once per draft and per critique).
pub(crate) struct Laps(Instant);

impl Laps {
    pub(crate) fn start() -> Laps {
        Laps(Instant::now())
    }

    /// Milliseconds since the last lap ended (or since the start), and a new lap begun.
    pub(crate) fn lap(&mut self) -> f64 {
        let now = Instant::now();
        let ms = now.duration_since(self.0).as_secs_f64() * 1000.0;
        self.0 = now;
        ms
    }
}

/// A critiqued draft as the tables record it: the critique and its call, the draft (its text only
/// when drafts are stored), the author's and the critic's times (ms) and tokens.
pub(crate) fn recorded_round(
    call: CritiqueCall,
    draft: Draft,
    store_drafts: bool,
    (gen_ms, critic_ms): (f64, f64),
    scope: &CallScope,
    edit_share: Option<f64>,
) -> RecordedRound {
    RecordedRound {
        critique: call.critique.into(),
        critic_attempts: call.attempts,
        critic_error: call.error,
        writer_error: None,
        draft_chars: draft.text.chars().count() as u64,
        draft: store_drafts.then_some(draft.text),
        gen_ms,
        critic_ms,
        tokens_in: draft.tokens_in,
        tokens_out: draft.tokens_out,
        critic_tokens_in: scope.tokens_in,
        critic_tokens_out: scope.tokens_out,
        acted_on_critique: draft.acted_on_critique,
        draft_truncated: draft.truncated,
        critic_truncated: scope.truncated,
        edit_share,
    }
}
