//! Stage 3 of a run: the loops. A worker takes a chunk of admitted tasks and records every loop
//! of each (generate, critique with retries, ask the pure policy, revise), in the plan's unit
//! order. A loop that fails (a backend error, a panic) fails alone: it is reported, and every
//! other loop of the chunk is still recorded.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use critbench_core::{Decision, Policy, RoundScore, Task, decide};
use critbench_plugin_host::request::TaskJson;
use critbench_storage::recorded::RecordedRound;

use crate::backend::{Draft, DraftKey};
use crate::emit::effective_policy;
use crate::memory::Hint;
use crate::plan::{Plan, Scope, Unit};
use crate::round::{critique_draft, ms, recorded_round};
use crate::source::Chunk;

/// A recorded loop: every round until each of the unit's policies has stopped.
pub struct LoopResult {
    pub rounds: Vec<RecordedRound>,
    pub scores: Vec<RoundScore>,
    /// The adjudicated final drafts, when the unit's arm adjudicates (one per distinct final
    /// draft of the policies it serves).
    pub adjudications: Vec<crate::adjudicate::Adjudication>,
    /// The held-out evaluators' critiques of the loop's first draft and final answers (none when
    /// no evaluator takes the task).
    pub evaluations: Vec<crate::evaluate::Evaluation>,
}

/// The loops of one task, in unit order. The task travels on to the sink, which drops it: the
/// loop workers spend no time freeing it.
pub struct TaskLoops {
    pub task: Task,
    /// `meta` as JSON text, for the outcome rows.
    pub meta: Option<String>,
    pub loops: Vec<(Unit, Result<LoopResult, String>)>,
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

/// Records every loop of a chunk's tasks. When `stop` is raised the rest of the chunk is
/// abandoned (the run is ending and the result will not be written).
pub fn run_chunk(plan: &Plan<'_>, chunk: Chunk, scope: Scope, stop: &AtomicBool) -> ChunkResult {
    let mut tasks = Vec::with_capacity(chunk.tasks.len());
    let mut complete = true;
    'tasks: for admitted in chunk.tasks {
        let task = &admitted.task;
        let mut results = Vec::new();
        for &critic in &admitted.critics {
            for unit in plan.units(critic, scope) {
                // Checked before every loop, not only every task: one task may hold thousands.
                if stop.load(Ordering::Relaxed) {
                    complete = false;
                    break 'tasks;
                }
                let result = catch_unwind(AssertUnwindSafe(|| {
                    record_loop(plan, task, &admitted.json, admitted.labelled.as_ref(), unit, scope)
                }))
                .unwrap_or_else(|payload| Err(panic_text(payload)));
                results.push((unit, result));
            }
        }
        tasks.push(TaskLoops { task: admitted.task, meta: admitted.meta, loops: results });
    }
    ChunkResult { seq: chunk.seq, progress: chunk.progress, tasks, complete }
}

pub(crate) fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    let detail = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    format!("internal error (please report): {detail}")
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
) -> Result<LoopResult, String> {
    let experiment = plan.experiment;
    let policies: Vec<Policy> = unit
        .policies(experiment.policies.len())
        .map(|index| effective_policy(&experiment.policies[index], unit.arm))
        .collect();
    let longest = policies.iter().map(|p| p.max_revisions).max().unwrap_or(0) as usize + 1;
    let key = |round: u32| DraftKey { seed: experiment.seed, task_id: &task.id, epoch: unit.epoch, round };

    let generated = Instant::now();
    let hints: &[Hint] = if unit.arm.uses_memory() {
        plan.hints.get(&(unit.critic, task.kind.clone())).map(Vec::as_slice).unwrap_or(&[])
    } else {
        &[]
    };
    let mut draft = plan.author.generate(task, hints, &key(0))?;
    let mut gen_ms = ms(generated);
    let mut running = vec![true; policies.len()];
    let mut scores: Vec<RoundScore> = Vec::with_capacity(longest);
    let mut rounds: Vec<RecordedRound> = Vec::with_capacity(longest);
    let adjudicating = scope == Scope::Evaluate && experiment.adjudicate.contains(&unit.arm);
    // The task with its labels when an evaluator takes it: evaluators judge the drafts afterwards.
    let evaluating = labelled.filter(|_| scope == Scope::Evaluate);
    let mut texts: Vec<String> = Vec::new();
    loop {
        let round = rounds.len() as u32;
        let (call, scope, critic_ms) = critique_draft(plan, unit, &task.id, task_json, &draft.text, round);
        scores.push(call.critique.round_score(call.failed()));
        for (policy, running) in policies.iter().zip(running.iter_mut()) {
            if *running && decide(&scores, policy) != Decision::Revise {
                *running = false;
            }
        }
        let draft_text = std::mem::take(&mut draft.text);
        if adjudicating || evaluating.is_some() {
            texts.push(draft_text.clone());
        }
        let next = if running.contains(&true) {
            let revised = Instant::now();
            let shown = unit.arm.shows_critique().then_some(&call.critique);
            let next = plan.author.revise(task, &draft_text, shown, &key(round + 1))?;
            Some((next, ms(revised)))
        } else {
            None
        };
        let written = Draft { text: draft_text, ..draft };
        rounds.push(recorded_round(call, written, experiment.store_drafts, (gen_ms, critic_ms), &scope));
        match next {
            Some((next, next_ms)) => {
                draft = next;
                gen_ms = next_ms;
            }
            None => break,
        }
    }
    let adjudications = if adjudicating {
        crate::adjudicate::adjudicate_loop(plan, task, task_json, unit, &policies, &scores, &rounds, &texts)?
    } else {
        Vec::new()
    };
    let evaluations = match evaluating {
        Some(labelled) => crate::evaluate::evaluate_loop(plan, task, labelled, unit, &policies, &scores, &texts),
        None => Vec::new(),
    };
    Ok(LoopResult { rounds, scores, adjudications, evaluations })
}
