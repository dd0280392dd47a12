//! Turns one recorded loop into the rows one policy would have produced: its decisions, its stop,
//! its best draft. Runs (direct or replayed) and `critbench replay` all write through here, so
//! the tables look the same however they were made.

use critbench_core::{Arm, BestDraft, Decision, Drafting, ExitReason, FinalDraft, Policy, RoundScore, decide};
use critbench_storage::recorded::RecordedRound;

use crate::run::adjudicate::Adjudication;
use critbench_storage::tables::{
    OutcomeBatches, OutcomeRow, OutcomeWriter, RowDecision, StorageError, TrajectoryBatches, TrajectoryRow,
    TrajectoryWriter,
};

/// Where [`emit_loop`] puts trajectory rows: a table's writer (a replay), or the batches a loop
/// worker builds of its chunk (a run), appended to the file by the sink.
pub trait PushTrajectory {
    fn push_row(&mut self, row: &TrajectoryRow<'_>) -> Result<(), StorageError>;
}

impl PushTrajectory for TrajectoryWriter {
    fn push_row(&mut self, row: &TrajectoryRow<'_>) -> Result<(), StorageError> {
        self.push(row)
    }
}

impl PushTrajectory for TrajectoryBatches {
    fn push_row(&mut self, row: &TrajectoryRow<'_>) -> Result<(), StorageError> {
        self.push(row);
        Ok(())
    }
}

/// Where [`emit_loop`] puts outcome rows, as [`PushTrajectory`].
pub trait PushOutcome {
    fn push_row(&mut self, row: OutcomeRow) -> Result<(), StorageError>;
}

impl PushOutcome for OutcomeWriter {
    fn push_row(&mut self, row: OutcomeRow) -> Result<(), StorageError> {
        self.push(row)
    }
}

impl PushOutcome for OutcomeBatches {
    fn push_row(&mut self, row: OutcomeRow) -> Result<(), StorageError> {
        self.push(row);
        Ok(())
    }
}

/// What the policy needs from a recorded round.
pub fn round_score(round: &RecordedRound) -> RoundScore {
    round.critique.round_score(round.critic_error.is_some())
}

/// Where `policy` stops on a recording (`rounds` and their `scores`, drafted as `drafting` says:
/// see [`Arm::drafting`]) and why: where the decision rule stops it, or — when it would revise
/// after the last recorded round and the writer wrote no next draft there — on that round, with
/// `writer_error`. `None`: the recording ends before
/// the policy stops (a rescoring's censored loop).
pub fn stop_of(
    rounds: &[RecordedRound],
    scores: &[RoundScore],
    policy: &Policy,
    drafting: Drafting,
) -> Option<(usize, ExitReason)> {
    critbench_core::stop_point_or_writer(scores, policy, drafting, writer_ended(rounds))
}

/// Whether a recording ended because the writer wrote no draft after its last round.
pub fn writer_ended(rounds: &[RecordedRound]) -> bool {
    rounds.last().is_some_and(|round| round.writer_error.is_some())
}

/// The policy a loop of `arm` runs under: the single arm is the loop without revisions.
pub fn effective_policy(policy: &Policy, arm: Arm) -> Policy {
    if arm == Arm::Single { Policy { max_revisions: 0, ..policy.clone() } } else { policy.clone() }
}

/// Identifies the loop in the output rows.
pub struct LoopLabels<'a> {
    pub run_id: &'a str,
    pub critic: &'a str,
    pub arm: Arm,
    pub task_id: &'a str,
    pub kind: Option<&'a str>,
    pub epoch: u32,
    pub meta: Option<&'a str>,
    /// The run's prices, for the loop's `cost`.
    pub prices: &'a crate::run::cost::RolePrices,
}

/// Writes the rows `policy` (labelled `config_id`) produces on `rounds` and returns whether the
/// loop passed, with the number of rounds it used and why it stopped. `None` when the recording ends before the
/// policy stops. `adjudications` holds the loop's adjudicated final drafts when its arm
/// adjudicates: the policy's is written as one more row and in the outcome's adjudicated columns.
#[allow(clippy::too_many_arguments)]
pub fn emit_loop(
    labels: &LoopLabels<'_>,
    rounds: &[RecordedRound],
    scores: &[RoundScore],
    adjudications: &[Adjudication],
    grid_policy: &Policy,
    config_id: &str,
    trajectories: &mut impl PushTrajectory,
    outcomes: &mut impl PushOutcome,
) -> Result<Option<(bool, usize, ExitReason)>, StorageError> {
    let policy = effective_policy(grid_policy, labels.arm);
    let drafting = labels.arm.drafting();
    let Some((stop, exit)) = stop_of(rounds, scores, &policy, drafting) else { return Ok(None) };
    let best = critbench_core::best_round(&scores[..=stop]).expect("a stopped loop has a round");
    let mut running_best: Option<BestDraft> = None;
    let mut last_row = None;
    for (index, round) in rounds[..=stop].iter().enumerate() {
        let score = scores[index];
        match &mut running_best {
            None => running_best = Some(BestDraft::first(&score)),
            Some(b) => {
                b.observe(index, &score);
            }
        }
        let decision = if index == stop { Decision::Stop(exit) } else { Decision::Revise };
        // The rule's own decision, but where the writer stopped the loop.
        debug_assert!(
            exit == ExitReason::WriterError && index == stop
                || decide(&scores[..=index], &policy, drafting) == decision
        );
        let writer_error =
            if exit == ExitReason::WriterError && index == stop { round.writer_error.as_deref() } else { None };
        let row = TrajectoryRow {
            run_id: labels.run_id,
            config_id,
            arm: labels.arm,
            critic: labels.critic,
            task_id: labels.task_id,
            kind: labels.kind,
            epoch: labels.epoch,
            round: index as u32,
            revisions: index as u32,
            critique: std::borrow::Cow::Borrowed(&round.critique),
            passed: score.meets_pass_rule(&policy),
            decision: RowDecision::Policy(decision),
            is_best: index == best.round,
            best_score: running_best.map(|b| b.score).unwrap_or(score.score),
            draft_chars: round.draft_chars,
            draft: round.draft.as_deref(),
            gen_ms: round.gen_ms,
            critic_ms: round.critic_ms,
            critic_attempts: round.critic_attempts,
            critic_error: round.critic_error.as_deref(),
            writer_error,
            tokens_in: round.tokens_in,
            tokens_out: round.tokens_out,
            critic_tokens_in: round.critic_tokens_in,
            critic_tokens_out: round.critic_tokens_out,
            cost: labels.prices.round_cost(index, round, labels.arm).ok().flatten(),
            acted_on_critique: round.acted_on_critique,
            draft_truncated: round.draft_truncated,
            critic_truncated: round.critic_truncated,
            edit_share: round.edit_share,
        };
        trajectories.push_row(&row)?;
        last_row = Some(row);
    }
    let final_round = match policy.final_draft {
        FinalDraft::Best => best.round,
        FinalDraft::Last => stop,
    };
    let adjudication = adjudications.iter().find(|a| a.final_round == final_round);
    if let (Some(adjudication), Some(row)) = (adjudication, last_row) {
        trajectories.push_row(&crate::run::adjudicate::trajectory_row(row, adjudication, &policy, stop))?;
    }
    let passed = exit == ExitReason::Pass;
    let outcome = outcome_row(labels, &rounds[..=stop], &scores[..=stop], &policy, config_id, Some(exit), final_round);
    let adjudicated = adjudication.map(|a| (a.score.score, a.score.meets_pass_rule(&policy)));
    outcomes.push_row(OutcomeRow {
        adjudicated_score: adjudicated.map(|(score, _)| score),
        adjudicated_passed: adjudicated.map(|(_, passed)| passed),
        ..outcome
    })?;
    Ok(Some((passed, stop + 1, exit)))
}

/// The outcome row of the loop that ran `used` (its rounds and their scores) under `policy`
/// (already the arm's) and stopped on the last of them with `exit`: the draft it returns is that
/// of `final_round`. With `exit` `None` the loop has no stop yet (a rescoring's censored loop):
/// its exit ([`critbench_storage::tables::CENSORED_EXIT`]), pass and final score are placeholders
/// the caller writes as unknown. Not adjudicated.
pub fn outcome_row(
    labels: &LoopLabels<'_>,
    used: &[RecordedRound],
    scores: &[RoundScore],
    policy: &Policy,
    config_id: &str,
    exit: Option<ExitReason>,
    final_round: usize,
) -> OutcomeRow {
    let stop = used.len() - 1;
    let best = critbench_core::best_round(scores).expect("a loop has a round");
    OutcomeRow {
        run_id: labels.run_id.to_string(),
        config_id: config_id.to_string(),
        arm: labels.arm,
        critic: labels.critic.to_string(),
        task_id: labels.task_id.to_string(),
        kind: labels.kind.map(str::to_string),
        epoch: labels.epoch,
        pass_score: policy.pass_score,
        max_revisions: policy.max_revisions,
        stall: policy.stall,
        plateau_eps: policy.plateau_eps,
        dim_target: policy.dim_target,
        final_draft: policy.final_draft.as_str().to_string(),
        rounds: used.len() as u32,
        revisions: stop as u32,
        exit_reason: exit.unwrap_or(critbench_storage::tables::CENSORED_EXIT),
        passed: exit == Some(ExitReason::Pass),
        first_score: used[0].critique.score,
        last_score: used[stop].critique.score,
        final_score: used[final_round].critique.score,
        best_score: best.score,
        best_round: best.round as u32,
        critic_errors: used.iter().filter(|r| r.critic_error.is_some()).count() as u32,
        critic_disagreements: used
            .iter()
            .zip(scores)
            .filter(|(round, score)| {
                round.critique.critic_passed.is_some_and(|own| own != score.meets_pass_rule(policy))
            })
            .count() as u32,
        tokens_in: sum_tokens(used.iter().map(|r| r.tokens_in)),
        tokens_out: sum_tokens(used.iter().map(|r| r.tokens_out)),
        wall_ms: used.iter().map(|r| r.gen_ms + r.critic_ms).sum(),
        meta: labels.meta.map(str::to_string),
        adjudicated_score: None,
        adjudicated_passed: None,
        // The adjudicator's pass is not in it, as its tokens are not in `tokens_in`/`tokens_out`
        // nor the critic's score of its draft in `critic_tokens_in`/`critic_tokens_out`.
        cost: labels.prices.loop_cost(used, labels.arm),
        critic_tokens_in: sum_tokens(used.iter().map(|r| r.critic_tokens_in)),
        critic_tokens_out: sum_tokens(used.iter().map(|r| r.critic_tokens_out)),
    }
}

fn sum_tokens(values: impl Iterator<Item = Option<u64>>) -> Option<u64> {
    values.fold(None, |total, value| match (total, value) {
        (None, v) => v,
        (Some(t), Some(v)) => Some(t + v),
        (t, None) => t,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::cost::RolePrices;
    use critbench_openai::Price;

    use crate::run::cost::tests::round;

    /// The outcome of a loop that used `rounds` and ran out of revisions there.
    fn outcome(rounds: &[RecordedRound], prices: &RolePrices) -> OutcomeRow {
        let labels = LoopLabels {
            run_id: "r",
            critic: "judge",
            arm: Arm::Feedback,
            task_id: "t",
            kind: None,
            epoch: 0,
            meta: None,
            prices,
        };
        let scores: Vec<RoundScore> = rounds.iter().map(round_score).collect();
        outcome_row(&labels, rounds, &scores, &Policy::default(), "c", Some(ExitReason::Budget), 0)
    }

    #[test]
    fn a_loops_writer_and_critic_tokens_are_summed_apart_over_the_rounds_it_used() {
        // A critic that counted no tokens on one round (an answer without `usage`) leaves it out.
        let rounds =
            [round(Some((10, 2)), Some((100, 20))), round(Some((30, 4)), None), round(Some((50, 6)), Some((300, 60)))];
        let per_token =
            |price: f64| Some(Price { input_per_mtok: price, cached_input_per_mtok: None, output_per_mtok: price });
        let prices = RolePrices { generator: per_token(1e6), reviser: per_token(2e6), judge: per_token(3e6) };
        let whole = outcome(&rounds, &prices);
        assert_eq!((whole.tokens_in, whole.tokens_out), (Some(90), Some(12)), "the writer's");
        assert_eq!((whole.critic_tokens_in, whole.critic_tokens_out), (Some(400), Some(80)), "the critic's");
        // The cost prices both: the generator's 12, the reviser's 90 and the judge's 480 tokens.
        assert_eq!(whole.cost, Some(12.0 + 2.0 * 90.0 + 3.0 * 480.0));
        let first = outcome(&rounds[..1], &prices);
        assert_eq!((first.critic_tokens_in, first.critic_tokens_out), (Some(100), Some(20)), "its rounds only");
        // A critic that asks no model: null, never 0, as the writer's columns.
        let offline = outcome(&[round(Some((10, 2)), None), round(None, None)], &RolePrices::default());
        assert_eq!((offline.critic_tokens_in, offline.critic_tokens_out), (None, None));
        assert_eq!(offline.tokens_in, Some(10));
    }
}
