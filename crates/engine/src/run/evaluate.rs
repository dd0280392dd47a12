//! Held-out evaluators: critics that score a loop's answers and never steer it.
//!
//! The loop optimises the critic that steers it, so that critic's verdict alone cannot tell real
//! improvement from critic-pleasing. An evaluator (`[[evaluators]]`) is asked, once the loop has
//! stopped, about its first draft (round 0) and about the final answer of every policy the
//! recording serves: each distinct round once, however many configs share it. Its request
//! carries the task's gold `labels`, which a critic never sees. Nothing it says reaches the loop:
//! the loop's rows are the same with and without evaluators. An evaluator that fails on an answer
//! (every attempt: a crash, a hang, garbage, another request's answer) gives no verdict: its row's
//! `passed` is null beside the error, never a fail.

use std::time::Instant;

use critbench_core::author::Truth;
use critbench_core::{Drafting, Policy, RoundScore, Task};
use critbench_plugin_host::critique_with_retry;
use critbench_plugin_host::request::{TaskJson, evaluation_request};
use critbench_plugin_host::services::CallScope;
use critbench_storage::critique_columns::CritiqueColumns;
use critbench_storage::evaluations::{EvaluationBatches, EvaluationRow, FINAL, FIRST, ROUND};

use crate::run::adjudicate::final_round;
use crate::run::emit::LoopLabels;
use crate::run::plan::{Plan, Unit};
use crate::run::round::ms;

/// One evaluator's critique of one round's draft.
#[derive(Clone, Debug)]
pub struct Evaluation {
    /// Index into the experiment's evaluators.
    pub evaluator: usize,
    /// The round whose draft it critiqued.
    pub round: usize,
    /// The critique's columns.
    pub critique: CritiqueColumns,
    /// The critique, scored.
    pub score: RoundScore,
    /// Calls made to the evaluator.
    pub attempts: u32,
    /// The last attempt's error, when every attempt failed.
    pub error: Option<String>,
    /// Time spent in the evaluator, in milliseconds.
    pub critic_ms: f64,
}

/// The rounds a loop's evaluators judge: the first draft and every final answer of `policies`,
/// each once, in order.
pub fn evaluated_rounds(
    scores: &[RoundScore],
    policies: &[Policy],
    drafting: Drafting,
    writer_ended: bool,
) -> Vec<usize> {
    let mut rounds: Vec<usize> = std::iter::once(0)
        .chain(
            policies
                .iter()
                .filter_map(|policy| final_round(scores, policy, drafting, writer_ended))
                .map(|(chosen, _)| chosen),
        )
        .collect();
    rounds.sort_unstable();
    rounds.dedup();
    rounds
}

/// The drafts of one loop an evaluator may judge: `texts[k]` is the one critiqued in round `k`,
/// `truths[k]` its hidden truth when the author keeps one (the simulator).
#[derive(Clone, Copy)]
pub struct LoopDrafts<'a> {
    /// Each round's draft.
    pub texts: &'a [String],
    /// Each round's hidden truth, or `None`.
    pub truths: &'a [Option<Truth>],
    /// Whether the loop ended because the writer wrote no next draft.
    pub writer_ended: bool,
}

/// Every evaluator that takes the task on every round [`evaluated_rounds`] names (on every
/// recorded round with `rounds = "all"`) of `drafts`; `labelled` is the task with its gold labels.
pub fn evaluate_loop(
    plan: &Plan<'_>,
    task: &Task,
    labelled: &TaskJson,
    unit: Unit,
    policies: &[Policy],
    scores: &[RoundScore],
    drafts: LoopDrafts<'_>,
) -> Vec<Evaluation> {
    let LoopDrafts { texts, truths, .. } = drafts;
    let experiment = plan.experiment;
    let answers = evaluated_rounds(scores, policies, unit.arm.drafting(), drafts.writer_ended);
    let every: Vec<usize> = (0..texts.len()).collect();
    let mut evaluations = Vec::new();
    for evaluator in plan.evaluators_for(task.kind.as_deref()) {
        let spec = &experiment.evaluators[evaluator];
        let rounds = if spec.all_rounds { &every } else { &answers };
        for &round in rounds {
            let started = Instant::now();
            let truth = truths.get(round).and_then(Option::as_ref);
            let request = evaluation_request(labelled, &texts[round], round as u32, truth);
            let mut scope = CallScope::new(&task.id, unit.epoch, round as u32);
            let call = critique_with_retry(
                &plan.evaluators[evaluator],
                &request,
                spec.spec.weights.as_ref(),
                experiment.critic_attempts,
                &mut scope,
            );
            let score = call.critique.round_score(call.failed());
            evaluations.push(Evaluation {
                evaluator,
                round,
                critique: call.critique.into(),
                score,
                attempts: call.attempts,
                error: call.error,
                critic_ms: ms(started),
            });
        }
    }
    evaluations
}

/// The drafts an evaluator's rows under one config are about, as (`answer`, round, the steering
/// critic's verdict on it under the config): the first draft, the final answer `policy` returns
/// (`passed`: whether the loop passed) and, for an evaluator of every round, each other draft the
/// config used. Empty when `policy` does not stop within `scores`.
pub fn judged_answers(
    scores: &[RoundScore],
    policy: &Policy,
    drafting: Drafting,
    all_rounds: bool,
    passed: bool,
    writer_ended: bool,
) -> Vec<(&'static str, usize, bool)> {
    let Some((final_answer, stop)) = final_round(scores, policy, drafting, writer_ended) else { return Vec::new() };
    // The rounds this config used: up to where it stopped.
    let used = stop + 1;
    let mut answers = vec![(FIRST, 0, scores[0].meets_pass_rule(policy)), (FINAL, final_answer, passed)];
    if all_rounds {
        // Every other draft the config used, beside its verdict under the config's pass rule.
        answers.extend(
            (1..used)
                .filter(|&round| round != final_answer)
                .map(|round| (ROUND, round, scores[round].meets_pass_rule(policy))),
        );
    }
    answers
}

/// Writes the evaluation rows of one loop under one config: for each evaluator, its verdict on
/// the first draft and on the final answer `policy` returns (and, with `rounds = "all"`, on every
/// other draft the config used: `answer = "round"`), each beside the steering critic's
/// (`scores` are the loop's rounds, `evaluations` what [`evaluate_loop`] found for them, and
/// `passed` whether the loop passed).
#[allow(clippy::too_many_arguments)]
pub fn emit_evaluations(
    plan: &Plan<'_>,
    labels: &LoopLabels<'_>,
    config_id: &str,
    policy: &Policy,
    scores: &[RoundScore],
    evaluations: &[Evaluation],
    passed: bool,
    writer_ended: bool,
    rows: &mut EvaluationBatches,
) {
    if evaluations.is_empty() {
        return;
    }
    for (index, spec) in plan.experiment.evaluators.iter().enumerate() {
        let rule = spec.pass_rule();
        let drafting = labels.arm.drafting();
        for (answer, round, steering_passed) in
            judged_answers(scores, policy, drafting, spec.all_rounds, passed, writer_ended)
        {
            let Some(evaluation) = evaluations.iter().find(|e| e.evaluator == index && e.round == round) else {
                continue;
            };
            rows.push(EvaluationRow {
                run_id: labels.run_id.to_string(),
                config_id: config_id.to_string(),
                arm: labels.arm,
                critic: labels.critic.to_string(),
                task_id: labels.task_id.to_string(),
                kind: labels.kind.map(str::to_string),
                epoch: labels.epoch,
                evaluator: spec.spec.name.clone(),
                answer: answer.to_string(),
                round: round as u32,
                critique: evaluation.critique.clone(),
                // An evaluator that failed on the answer gave no verdict, not a fail.
                passed: evaluation.error.is_none().then(|| evaluation.score.meets_pass_rule(&rule)),
                pass_score: rule.pass_score,
                dim_target: rule.dim_target,
                steering_passed,
                critic_attempts: evaluation.attempts,
                critic_error: evaluation.error.clone(),
                critic_ms: evaluation.critic_ms,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use critbench_core::FinalDraft;

    fn scores(values: &[f64]) -> Vec<RoundScore> {
        values.iter().map(|&score| RoundScore::new(score)).collect()
    }

    #[test]
    fn the_first_draft_and_every_distinct_final_answer_are_judged_once() {
        // Rises to 9 at round 2, then drops: pass 8 stops at 2; pass 10 with a cap of 3 runs to
        // the end and returns its best (round 2) or its last (round 3).
        let recorded = scores(&[4.0, 6.0, 9.0, 7.0]);
        let pass = |pass_score: f64, final_draft: FinalDraft| Policy {
            pass_score,
            max_revisions: 3,
            stall: false,
            final_draft,
            ..Policy::default()
        };
        let policies = [pass(8.0, FinalDraft::Best), pass(10.0, FinalDraft::Best), pass(10.0, FinalDraft::Last)];
        assert_eq!(evaluated_rounds(&recorded, &policies, Drafting::Revisions, false), vec![0, 2, 3]);
        assert_eq!(
            evaluated_rounds(&recorded[..1], &[pass(1.0, FinalDraft::Best)], Drafting::Revisions, false),
            vec![0]
        );
    }
}
