//! Stage 3 of a run: the loops. A worker takes a chunk of admitted tasks and records every loop
//! of each (generate, critique with retries, ask the pure policy, revise), in the plan's unit
//! order. A loop that fails (a backend error, a panic) fails alone: it is reported, and every
//! other loop of the chunk is still recorded.
//!
//! When a critic takes several requests at once (a child process speaking protocol 3), a worker
//! advances up to [`IN_FLIGHT`] loops of its chunk together: each runs until it asks for a
//! critique, then the critiques asked go out in one batch ([`Batch`]). A loop's rounds depend only
//! on its own critiques, so the recording is the same as one loop after another.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use critbench_core::{Decision, Policy, RoundScore, Task, decide};
use critbench_plugin_host::request::TaskJson;
use critbench_storage::recorded::RecordedRound;

use crate::backend::{Draft, DraftKey};
use crate::emit::effective_policy;
use crate::memory::Hint;
use crate::plan::{Plan, Scope, Unit};
use crate::round::{Batch, critique_draft, ms, recorded_round};
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
    if plan.critics.iter().any(|critic| critic.pipelined()) {
        return run_chunk_together(plan, chunk, scope, stop);
    }
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

/// The loops a worker advances together when a critic takes several requests at once.
pub const IN_FLIGHT: usize = 64;

type Recording<'a> = Pin<Box<dyn Future<Output = Result<LoopResult, String>> + 'a>>;

/// [`run_chunk`] with up to [`IN_FLIGHT`] loops in flight: every loop is polled until it waits for
/// a critique, the batch goes out, and again, until each is recorded.
fn run_chunk_together(plan: &Plan<'_>, chunk: Chunk, scope: Scope, stop: &AtomicBool) -> ChunkResult {
    let units: Vec<(usize, Unit)> = (chunk.tasks.iter().enumerate())
        .flat_map(|(at, admitted)| {
            admitted.critics.iter().flat_map(move |&c| plan.units(c, scope)).map(move |u| (at, u))
        })
        .collect();
    let mut done: Vec<Option<Result<LoopResult, String>>> = units.iter().map(|_| None).collect();
    let batch = Batch::default();
    let mut context = Context::from_waker(Waker::noop());
    let mut flying: Vec<(usize, Recording<'_>)> = Vec::with_capacity(IN_FLIGHT);
    let mut started = 0;
    let mut complete = true;
    loop {
        while flying.len() < IN_FLIGHT && started < units.len() {
            // Checked before every loop, not only every task: one task may hold thousands.
            if stop.load(Ordering::Relaxed) {
                complete = false;
                break;
            }
            let (at, unit) = units[started];
            let admitted = &chunk.tasks[at];
            let recording = record_loop_in(
                plan,
                &admitted.task,
                &admitted.json,
                admitted.labelled.as_ref(),
                unit,
                scope,
                Some(&batch),
            );
            flying.push((started, Box::pin(recording)));
            started += 1;
        }
        if flying.is_empty() || !complete {
            break;
        }
        let mut at = 0;
        while at < flying.len() {
            match catch_unwind(AssertUnwindSafe(|| flying[at].1.as_mut().poll(&mut context))) {
                Ok(Poll::Pending) => at += 1,
                Ok(Poll::Ready(result)) => done[flying.swap_remove(at).0] = Some(result),
                Err(payload) => done[flying.swap_remove(at).0] = Some(Err(panic_text(payload))),
            }
        }
        if batch.is_waiting() {
            batch.send(&plan.critics);
        }
    }
    drop(flying);
    // Whole tasks only: a task with a loop left unrecorded is not part of the result.
    let mut done = done.into_iter();
    let mut units = units.into_iter().peekable();
    let mut tasks = Vec::with_capacity(chunk.tasks.len());
    for (at, admitted) in chunk.tasks.into_iter().enumerate() {
        let mut loops = Vec::new();
        while let Some((_, unit)) = units.next_if(|&(of, _)| of == at) {
            loops.extend(done.next().flatten().map(|result| (unit, result)));
        }
        if loops.len() < admitted.critics.iter().map(|&c| plan.units(c, scope).len()).sum::<usize>() {
            complete = false;
            break;
        }
        tasks.push(TaskLoops { task: admitted.task, meta: admitted.meta, loops });
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
    // Without a batch, no critique waits: the recording is done in one poll.
    let recording = std::pin::pin!(record_loop_in(plan, task, task_json, labelled, unit, scope, None));
    match recording.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(result) => result,
        Poll::Pending => unreachable!("a loop without a batch never waits"),
    }
}

/// [`record_loop`], its critiques asked through `batch` when given.
async fn record_loop_in(
    plan: &Plan<'_>,
    task: &Task,
    task_json: &TaskJson,
    labelled: Option<&TaskJson>,
    unit: Unit,
    scope: Scope,
    batch: Option<&Batch>,
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
        let (call, scope, critic_ms) = match batch {
            Some(batch) => batch.critique_draft(plan, unit, &task.id, task_json, &draft.text, round).await,
            None => critique_draft(plan, unit, &task.id, task_json, &draft.text, round),
        };
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
