//! One critiqued draft as the tables record it, for the loop's rounds and the adjudicator's.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;
use std::time::Instant;

use critbench_plugin_host::request::{TaskJson, critique_request};
use critbench_plugin_host::services::CallScope;
use critbench_plugin_host::{
    Asked, CallError, CriticInstance, CriticTask, CritiqueCall, critique_task_after_first, critique_task_with_retry,
    critique_with_retry,
};
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
/// reads a task once per loop (its descriptor sets the task functions) is sent only the round and the draft. The caller
/// times it ([`Laps`]).
pub(crate) fn critique_round(
    plan: &Plan<'_>,
    unit: Unit,
    task_id: &str,
    critic: &mut CriticTask<'_>,
    text: &str,
    round: u32,
) -> (CritiqueCall, CallScope) {
    let weights = plan.experiment.critics[unit.critic].weights.as_ref();
    let mut scope = CallScope::new(task_id, unit.epoch, round);
    let call = critique_task_with_retry(critic, text, round, weights, plan.experiment.critic_attempts, &mut scope);
    (call, scope)
}

/// The first attempts of critiques asked by loops advancing together, sent to their critics in
/// one go by [`Batch::send`]: a critic in a child process that takes several requests at once
/// (the pipelined form, `docs/PROTOCOL.md`) then costs a pipe round trip per batch, not per critique.
/// A pipelined child is sent each task once: its asks are rounds about the task's key.
///
/// A batch may be sent from another thread than the loops' (`loops::CriticBatches`); its loops
/// are not polled while it is out.
#[derive(Default)]
pub(crate) struct Batch {
    asks: Mutex<Vec<Ask>>,
    next: AtomicU64,
}

struct Ask {
    ticket: u64,
    critic: usize,
    request: Asked,
    scope: CallScope,
    answer: Option<Result<String, CallError>>,
}

impl Batch {
    /// [`critique_round`], its first attempt sent with the batch when the unit's critic takes
    /// several requests at once; the retries, if any, follow one by one as they would have.
    pub(crate) async fn critique_round(
        &self,
        plan: &Plan<'_>,
        unit: Unit,
        task_id: &str,
        critic: &mut CriticTask<'_>,
        text: &str,
        round: u32,
    ) -> (CritiqueCall, CallScope) {
        if !critic.critic().pipelined() {
            return critique_round(plan, unit, task_id, critic, text, round);
        }
        let mut scope = CallScope::new(task_id, unit.epoch, round);
        scope.attempt = 1;
        let ticket = self.next.fetch_add(1, Ordering::Relaxed);
        let request = critic.first_request(text, round);
        self.asks().push(Ask { ticket, critic: unit.critic, request, scope, answer: None });
        let (mut scope, first) = std::future::poll_fn(|_| {
            let mut asks = self.asks();
            match asks.iter().position(|ask| ask.ticket == ticket && ask.answer.is_some()) {
                Some(at) => {
                    let ask = asks.swap_remove(at);
                    Poll::Ready((ask.scope, ask.answer.expect("answered")))
                }
                None => Poll::Pending,
            }
        })
        .await;
        let weights = plan.experiment.critics[unit.critic].weights.as_ref();
        let attempts = plan.experiment.critic_attempts;
        let call = critique_task_after_first(critic, text, round, weights, attempts, &mut scope, first);
        (call, scope)
    }

    /// Sends every request not yet answered to its critic, all of a critic's at once, and keeps
    /// the answers for the loops that asked. Answers nobody took (a loop that panicked) are
    /// dropped first.
    pub(crate) fn send(&self, critics: &[CriticInstance]) {
        let mut asks = self.asks();
        asks.retain(|ask| ask.answer.is_none());
        for (index, critic) in critics.iter().enumerate() {
            let (requests, mut scopes): (Vec<&Asked>, Vec<CallScope>) =
                asks.iter().filter(|ask| ask.critic == index).map(|ask| (&ask.request, ask.scope.clone())).unzip();
            if requests.is_empty() {
                continue;
            }
            let answers = critic.call_many(&requests, &mut scopes);
            let mine = asks.iter_mut().filter(|ask| ask.critic == index);
            for ((ask, answer), scope) in mine.zip(answers).zip(scopes) {
                ask.answer = Some(answer);
                ask.scope = scope;
            }
        }
    }

    /// The one critic that every request not yet answered goes to, if there is one. Answers
    /// nobody took (a loop that panicked) are dropped first.
    pub(crate) fn critic(&self) -> Option<usize> {
        let mut asks = self.asks();
        asks.retain(|ask| ask.answer.is_none());
        let critic = asks.first()?.critic;
        asks.iter().all(|ask| ask.critic == critic).then_some(critic)
    }

    /// The requests not yet answered, each with its scope, taken out to be sent; [`Batch::answer`]
    /// takes their answers, in the same order.
    pub(crate) fn take_requests(&self) -> Vec<(Asked, CallScope)> {
        let mut asks = self.asks();
        asks.retain(|ask| ask.answer.is_none());
        (asks.iter_mut())
            .map(|ask| {
                (std::mem::replace(&mut ask.request, Asked::Whole(String::new())), std::mem::take(&mut ask.scope))
            })
            .collect()
    }

    /// The answers of the requests [`Batch::take_requests`] took, in its order, each with its
    /// scope as the critic's service calls left it.
    pub(crate) fn answer(&self, answers: Vec<(Result<String, CallError>, CallScope)>) {
        let mut asks = self.asks();
        assert_eq!(asks.len(), answers.len(), "an answer for every request taken");
        for (ask, (answer, scope)) in asks.iter_mut().zip(answers) {
            ask.answer = Some(answer);
            ask.scope = scope;
        }
    }

    /// Whether some loop waits for an answer.
    pub(crate) fn is_waiting(&self) -> bool {
        self.asks().iter().any(|ask| ask.answer.is_none())
    }

    fn asks(&self) -> std::sync::MutexGuard<'_, Vec<Ask>> {
        self.asks.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
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
