//! A recorded loop re-critiqued, and the rows it gives: one trajectory row per row of the run,
//! with the new critique, and one outcome per config of the run's grid, replayed on the new
//! scores wherever the recorded rounds reach and censored where they do not.

use std::collections::HashMap;
use std::path::Path;

use critbench_core::{BestDraft, FinalDraft, Policy, RoundScore};
use critbench_storage::recorded::{LoopWithRows, RecordedRound};
use critbench_storage::tables::{RescoredOutcome, RescoredOutcomeWriter, TrajectoryRow, TrajectoryWriter};

use super::error::RescoreError;
use super::input::{LoopInput, TaskEntry};
use crate::run::emit::{LoopLabels, effective_policy, outcome_row, round_score};
use crate::run::pipeline::Recorded;
use crate::run::round::{Critic, critique_text};
use crate::run_dir::journal::Counts;

/// A recorded loop with the new critic's critiques: its recording's rounds and its rows' own
/// rounds (where a row's draft is not the recording's) carry the new critiques.
pub(super) struct RescoredLoop {
    pub recorded: LoopWithRows,
    pub task: std::sync::Arc<TaskEntry>,
}

/// A chunk of loops as a worker hands it back, re-critiqued.
pub(super) struct Rescored {
    pub seq: u64,
    /// The run's rows read once the chunk is taken, for the progress bar.
    pub position: u64,
    /// Tasks whose loops the chunk holds.
    pub tasks: u64,
    /// False when the rescoring stopped before every loop of the chunk was re-critiqued.
    pub complete: bool,
    /// The chunk's loops, or the first that could not be re-critiqued.
    pub loops: Result<Vec<RescoredLoop>, RescoreError>,
}

impl Recorded for Rescored {
    fn seq(&self) -> u64 {
        self.seq
    }

    fn position(&self) -> u64 {
        self.position
    }

    fn complete(&self) -> bool {
        self.complete
    }
}

/// Re-critiques every draft of `input` with `critic`, as the run critiqued it: the same request
/// (task, draft, round), retries and conservative failure. `table` names the run's file in
/// messages.
pub(super) fn rescore_loop(critic: &Critic<'_>, input: LoopInput, table: &Path) -> Result<RescoredLoop, RescoreError> {
    let LoopInput { mut recorded, task } = input;
    let one = &recorded.recorded;
    let (task_id, epoch) = (one.task_id.clone(), one.epoch);
    let missing = |round: u32| RescoreError::MissingDraft {
        table: table.to_path_buf(),
        task_id: task_id.clone(),
        arm: one.arm,
        critic: one.critic.clone(),
        epoch,
        round,
    };
    let critique = |round: &RecordedRound, index: u32| -> Result<RecordedRound, RescoreError> {
        let draft = round.draft.as_deref().ok_or_else(|| missing(index))?;
        let (call, scope, critic_ms) = critique_text(critic, &task_id, epoch, &task.json, draft, index);
        Ok(RecordedRound {
            critique: call.critique.into(),
            critic_attempts: call.attempts,
            critic_error: call.error,
            critic_ms,
            critic_tokens_in: scope.tokens_in,
            critic_tokens_out: scope.tokens_out,
            critic_truncated: scope.truncated,
            ..round.clone()
        })
    };
    let rounds: Vec<RecordedRound> =
        one.rounds.iter().enumerate().map(|(index, round)| critique(round, index as u32)).collect::<Result<_, _>>()?;
    for row in &mut recorded.rows {
        if let Some(own) = &row.own {
            row.own = Some(critique(own, row.round)?);
        }
    }
    recorded.recorded.rounds = rounds;
    Ok(RescoredLoop { recorded, task })
}

/// The run's grid, for the rows: each config's policy by position and by id, and the run's
/// prices, for each outcome's `cost`.
pub(super) struct Grid {
    pub policies: Vec<Policy>,
    pub config_ids: Vec<String>,
    pub index: HashMap<String, usize>,
    pub prices: crate::run::cost::RolePrices,
}

impl Grid {
    pub fn new(policies: Vec<Policy>, prices: crate::run::cost::RolePrices) -> Grid {
        let config_ids: Vec<String> = policies.iter().map(Policy::config_id).collect();
        let index = config_ids.iter().enumerate().map(|(i, id)| (id.clone(), i)).collect();
        Grid { policies, config_ids, index, prices }
    }
}

/// Writes the rows of one re-critiqued loop and adds them to `counts`: the run's trajectory rows
/// with the new critique (its `passed`, `is_best` and `best_score` under the new scores; round,
/// decision, exit, draft and the writer's time and tokens as the run recorded them), then one
/// outcome per config of `grid`, in its order.
#[allow(clippy::too_many_arguments)]
pub(super) fn write_loop(
    done: &RescoredLoop,
    run_id: &str,
    critic_name: &str,
    grid: &Grid,
    table: &Path,
    trajectories: &mut TrajectoryWriter,
    outcomes: &mut RescoredOutcomeWriter,
    counts: &mut Counts,
) -> Result<(), RescoreError> {
    let one = &done.recorded.recorded;
    let arm = one.arm;
    let labels = LoopLabels {
        run_id,
        critic: &one.critic,
        arm,
        task_id: &one.task_id,
        kind: one.kind.as_deref(),
        epoch: one.epoch,
        meta: done.task.meta.as_deref(),
        prices: &grid.prices,
    };
    let rows = &done.recorded.rows;
    for config_rows in rows.chunk_by(|a, b| a.config_id == b.config_id) {
        let config_id = &config_rows[0].config_id;
        let Some(&index) = grid.index.get(config_id) else {
            return Err(RescoreError::UnknownConfig {
                table: table.into(),
                config_id: config_id.clone(),
                task_id: one.task_id.clone(),
            });
        };
        let policy = effective_policy(&grid.policies[index], arm);
        let rounds: Vec<&RecordedRound> =
            config_rows.iter().map(|row| row.own.as_ref().unwrap_or(&one.rounds[row.round as usize])).collect();
        let scores: Vec<RoundScore> = rounds.iter().map(|round| round_score(round)).collect();
        let best = critbench_core::best_round(&scores).expect("a config has a row");
        let mut running: Option<BestDraft> = None;
        for (position, ((row, round), score)) in config_rows.iter().zip(&rounds).zip(&scores).enumerate() {
            match &mut running {
                None => running = Some(BestDraft::first(score)),
                Some(b) => {
                    b.observe(position, score);
                }
            }
            trajectories.push(&TrajectoryRow {
                run_id,
                config_id,
                arm,
                critic: &one.critic,
                task_id: &one.task_id,
                kind: one.kind.as_deref(),
                epoch: one.epoch,
                round: row.round,
                revisions: row.revisions,
                critique: std::borrow::Cow::Borrowed(&round.critique),
                passed: score.meets_pass_rule(&policy),
                decision: row.decision,
                is_best: position == best.round,
                best_score: running.map_or(score.score, |b| b.score),
                draft_chars: round.draft_chars,
                draft: round.draft.as_deref(),
                gen_ms: round.gen_ms,
                critic_ms: round.critic_ms,
                critic_attempts: round.critic_attempts,
                critic_error: round.critic_error.as_deref(),
                writer_error: round.writer_error.as_deref(),
                tokens_in: round.tokens_in,
                tokens_out: round.tokens_out,
                critic_tokens_in: round.critic_tokens_in,
                critic_tokens_out: round.critic_tokens_out,
                cost: grid.prices.round_cost(row.round as usize, round, arm).ok().flatten(),
                // The writer acted (or not) on the steering critic's critique: the run's.
                acted_on_critique: round.acted_on_critique,
                draft_truncated: round.draft_truncated,
                critic_truncated: round.critic_truncated,
                edit_share: round.edit_share,
            })?;
        }
        counts.critiques += config_rows.len() as u64;
    }

    let scores: Vec<RoundScore> = one.rounds.iter().map(round_score).collect();
    for (policy, config_id) in grid.policies.iter().zip(&grid.config_ids) {
        let policy = effective_policy(policy, arm);
        let (row, censored) = match crate::run::emit::stop_of(&one.rounds, &scores, &policy, arm.drafting()) {
            Some((stop, exit)) => {
                let best = critbench_core::best_round(&scores[..=stop]).expect("a stopped loop has a round");
                let final_round = match policy.final_draft {
                    FinalDraft::Best => best.round,
                    FinalDraft::Last => stop,
                };
                let used = &one.rounds[..=stop];
                (outcome_row(&labels, used, &scores[..=stop], &policy, config_id, Some(exit), final_round), false)
            }
            // The policy would revise after the last recorded round: what the recording shows,
            // without an exit, a pass or a final draft.
            None => (outcome_row(&labels, &one.rounds, &scores, &policy, config_id, None, 0), true),
        };
        counts.loops += 1;
        counts.passed += u64::from(row.passed && !censored);
        counts.loops_with_critic_errors += u64::from(row.critic_errors > 0);
        outcomes.push(RescoredOutcome { outcome: row, censored })?;
    }
    let critiques = one.rounds.iter().chain(rows.iter().filter_map(|row| row.own.as_ref()));
    let by_critic = counts.critiques_by_critic.entry(critic_name.to_string()).or_default();
    for round in critiques {
        counts.recorded_rounds += 1;
        by_critic.recorded += 1;
        by_critic.retried += u64::from(round.critic_attempts > 1);
        by_critic.failed += u64::from(round.critic_error.is_some());
    }
    Ok(())
}
