//! Stage 3 of a run: the loops. A worker takes a chunk of admitted tasks and records every loop
//! of each (generate, critique with retries, ask the pure policy, revise — shown what the arm
//! shows: the critique, the placebo, the oracle's critique or nothing — or, in the `resample` arm,
//! generate afresh), in the plan's unit order. A loop that fails (a backend error, a panic)
//! fails alone: it is reported, and every other loop of the chunk is still recorded.
//!
//! A loop is one future ([`record_loop_in`]): it awaits its drafts and its critiques, which are
//! ready at once from an author or critic in this process, and wait without a thread for a model
//! server, a writer program or a critic of the pipelined form. When nothing a loop awaits waits, a
//! worker records a chunk's loops one after another ([`run_chunk`]); when something does (the
//! author [`awaits`](critbench_core::author::Author::awaits), or a critic takes many requests at
//! once), a worker drives many chunks at once ([`work_together`]), each loop polled again on the
//! worker when its answer is in. The critiques' retries and the policy still run on the worker, so
//! `--jobs` bounds the CPU work, and the model client's or the program's limit bounds the requests
//! in flight. A loop's rounds depend only on its own answers, so the recording is the same either
//! way.

mod chunk;
mod in_flight;
mod together;

pub use chunk::run_chunk;
pub use in_flight::IN_FLIGHT;
pub use together::work_together;

use critbench_core::{Critique, Decision, Policy, RoundScore, Shown, Task, decide};
use critbench_plugin_host::request::TaskJson;
use critbench_storage::recorded::RecordedRound;

use crate::run::emit::effective_policy;
use crate::run::oracle::oracle_critique;
use crate::run::pipeline::Recorded;
use crate::run::plan::{Plan, Scope, Unit};
use crate::run::round::{Laps, critique_round, recorded_round};
use critbench_core::author::Hint;
use critbench_core::author::{AuthorError, Draft, DraftKey, Truth};

/// A recorded loop: every round until each of the unit's policies has stopped.
pub struct LoopResult {
    pub rounds: Vec<RecordedRound>,
    pub scores: Vec<RoundScore>,
    /// The adjudicated final drafts, when the unit's arm adjudicates (one per distinct final
    /// draft of the policies it serves).
    pub adjudications: Vec<crate::run::adjudicate::Adjudication>,
    /// The held-out evaluators' critiques of the loop's first draft and final answers (none when
    /// no evaluator takes the task).
    pub evaluations: Vec<crate::run::evaluate::Evaluation>,
    /// The keys of the critic's answers it does not read, once per critique that carried each.
    pub unread_keys: Vec<String>,
}

/// The loops of one task, in unit order. The task travels on to the sink, which drops it: the
/// loop workers spend no time freeing it.
pub struct TaskLoops {
    pub task: Task,
    /// `meta` as JSON text, for the outcome rows.
    pub meta: Option<String>,
    pub loops: Vec<(Unit, Result<LoopResult, LoopError>)>,
}

/// A chunk with its loops recorded.
pub struct ChunkResult {
    pub seq: u64,
    pub progress: u64,
    pub tasks: Vec<TaskLoops>,
    /// False when the run stopped before every task of the chunk was done; the tasks it holds
    /// are whole.
    pub complete: bool,
}

impl Recorded for ChunkResult {
    fn seq(&self) -> u64 {
        self.seq
    }

    fn position(&self) -> u64 {
        self.progress
    }

    fn complete(&self) -> bool {
        self.complete
    }
}

/// Records one loop: generate, then critique → revise until every policy the unit serves has
/// stopped. The author never sees the policy, so the recording is the same for all of them.
/// Only an evaluated loop is adjudicated: strategy memory's learning pass needs the loop alone.
pub fn record_loop(
    plan: &Plan<'_>,
    task: &Task,
    task_json: &TaskJson,
    labelled: Option<&TaskJson>,
    unit: Unit,
    scope: Scope,
) -> Result<LoopResult, LoopError> {
    critbench_plugin_host::block_on(record_loop_in(plan, task, task_json, labelled, unit, scope))
}

/// [`record_loop`] as a future.
pub(super) async fn record_loop_in(
    plan: &Plan<'_>,
    task: &Task,
    task_json: &TaskJson,
    labelled: Option<&TaskJson>,
    unit: Unit,
    scope: Scope,
) -> Result<LoopResult, LoopError> {
    let experiment = plan.experiment;
    let policies: Vec<Policy> = unit
        .policies(experiment.policies.len())
        .map(|index| effective_policy(&experiment.policies[index], unit.arm))
        .collect();
    let longest = policies.iter().map(|p| p.max_revisions).max().unwrap_or(0) as usize + 1;
    let key = |round: u32| DraftKey { seed: experiment.seed, task_id: &task.id, epoch: unit.epoch, round };

    // The first draft's time, then each critique's and each revision's, back to back.
    let mut laps = Laps::start();
    let hints: &[Hint] = if unit.arm.uses_memory() {
        plan.hints.get(&(unit.critic, task.kind.clone())).map(Vec::as_slice).unwrap_or(&[])
    } else {
        &[]
    };
    let mut draft = plan.author.generate_async(task, hints, key(0)).await?;
    let mut gen_ms = laps.lap();
    // How much the draft about to be critiqued changed the one before it: none for the first.
    let mut edit: Option<f64> = None;
    let mut running = vec![true; policies.len()];
    let mut scores: Vec<RoundScore> = Vec::with_capacity(longest);
    let mut rounds: Vec<RecordedRound> = Vec::with_capacity(longest);
    let adjudicating = scope == Scope::Evaluate && experiment.adjudicate.contains(&unit.arm);
    // The task with its labels when an evaluator takes it: evaluators judge the drafts afterwards.
    let evaluating = labelled.filter(|_| scope == Scope::Evaluate);
    let mut texts: Vec<String> = Vec::new();
    let mut unread_keys: Vec<String> = Vec::new();
    // Each of those drafts' hidden truth, when the author keeps one (the simulator).
    let mut truths: Vec<Option<Truth>> = Vec::new();
    // The task is shown to the critic once for the loop's rounds (when its descriptor sets the task functions) and closed when
    // the loop is recorded; the adjudicator and the evaluators ask with whole requests.
    let mut critic = plan.critics[unit.critic].open_task(task_json);
    loop {
        let round = rounds.len() as u32;
        let (call, scope) = critique_round(plan, unit, &task.id, &mut critic, &draft.text, round).await;
        let critic_ms = laps.lap();
        unread_keys.extend(call.critique.unread_keys.iter().cloned());
        scores.push(call.critique.round_score(call.failed()));
        for (policy, running) in policies.iter().zip(running.iter_mut()) {
            if *running && decide(&scores, policy, unit.arm.drafting()) != Decision::Revise {
                *running = false;
            }
        }
        if adjudicating || evaluating.is_some() {
            texts.push(draft.text.clone());
            truths.push(draft.truth.clone());
        }
        let next = if running.contains(&true) {
            let written = if unit.arm.resamples() {
                // A fresh first draft under the next round's seed: no draft, critique or hint.
                plan.author.generate_async(task, &[], key(round + 1)).await
            } else {
                // What the reviser reads of the round: the critic's critique, or in its place the
                // placebo or the oracle's critique of the draft, or nothing.
                let oracle;
                let shown = match unit.arm.reviser_sees() {
                    Shown::Critique => Some(&call.critique),
                    Shown::Placebo => Some(Critique::placebo()),
                    Shown::Oracle => {
                        oracle = oracle_critique(plan, task, labelled, unit, &draft, round)?;
                        Some(&oracle)
                    }
                    Shown::Nothing => None,
                };
                plan.author.revise_async(task, &draft, shown, key(round + 1)).await
            };
            match written {
                Ok(mut next) => {
                    if !unit.arm.shows_critique() {
                        // `acted_on_critique` is about the steering critic's critique: a reviser
                        // shown the placebo (nothing to act on by design) or the oracle's critique
                        // did nothing with the critic's feedback.
                        next.acted_on_critique = None;
                    }
                    // A revision's size against the draft it revised; a fresh draft revised nothing.
                    let edit = (!unit.arm.resamples()).then(|| critbench_core::edit_share(&draft.text, &next.text));
                    Some(Ok((next, laps.lap(), edit)))
                }
                // A writer program that wrote no draft ends the loop on the drafts it has
                // (`writer_error`); any other author's failure fails the loop.
                Err(error @ AuthorError::Writer { .. }) => Some(Err(error.to_string())),
                Err(error) => return Err(error.into()),
            }
        } else {
            None
        };
        let written = std::mem::replace(&mut draft, Draft::offline(String::new()));
        let mut recorded = recorded_round(call, written, experiment.store_drafts, (gen_ms, critic_ms), &scope, edit);
        match next {
            Some(Ok((next, next_ms, next_edit))) => {
                rounds.push(recorded);
                draft = next;
                gen_ms = next_ms;
                edit = next_edit;
            }
            Some(Err(writer_error)) => {
                recorded.writer_error = Some(writer_error);
                rounds.push(recorded);
                break;
            }
            None => {
                rounds.push(recorded);
                break;
            }
        }
    }
    drop(critic);
    let adjudications = if adjudicating {
        crate::run::adjudicate::adjudicate_loop(plan, task, task_json, unit, &policies, &scores, &rounds, &texts)?
    } else {
        Vec::new()
    };
    let evaluations = match evaluating {
        Some(labelled) => {
            let writer_ended = crate::run::emit::writer_ended(&rounds);
            let drafts = crate::run::evaluate::LoopDrafts { texts: &texts, truths: &truths, writer_ended };
            crate::run::evaluate::evaluate_loop(plan, task, labelled, unit, &policies, &scores, drafts)
        }
        None => Vec::new(),
    };
    Ok(LoopResult { rounds, scores, adjudications, evaluations, unread_keys })
}

/// Why a loop has no rows. Its text is recorded in `failed_loops` (`manifest.json`), after
/// the loop it names.
#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    /// The author wrote no draft.
    #[error(transparent)]
    Author(#[from] critbench_core::author::AuthorError),
    /// The loop's final draft could not be adjudicated.
    #[error(transparent)]
    Adjudicate(#[from] crate::run::adjudicate::AdjudicateError),
    /// The `oracle` arm's oracle gave no critique of a draft to revise.
    #[error(transparent)]
    Oracle(#[from] crate::run::oracle::OracleError),
    /// Strategy memory's learning loop ended before its policy stopped (a bug).
    #[error("the learning loop ended before its policy stopped")]
    Unfinished,
    /// A loop panicked: the panic's message, for a bug report.
    #[error("{0}")]
    Panicked(String),
}
