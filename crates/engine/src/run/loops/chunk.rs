//! A chunk's loops ([`run_chunk`]): one after another, or in flight together ([`record_chunk`]),
//! each polled until it waits (for its group's batch of critiques, or for its author), the batch
//! sent, and again, until every loop is recorded; a loop is polled again only when there is news
//! for it.

use std::collections::VecDeque;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use super::in_flight::{IN_FLIGHT, Room};
use super::{ChunkResult, CriticBatches, Driver, LoopError, LoopResult, TaskLoops, record_loop, record_loop_in};
use crate::run::pipeline::panic_text;
use crate::run::plan::{Plan, Scope, Unit};
use crate::run::round::Batch;
use crate::run::source::Chunk;

pub(super) type Recording<'a> = Pin<Box<dyn Future<Output = Result<LoopResult, LoopError>> + 'a>>;

/// Records every loop of a chunk's tasks. When `stop` is raised the rest of the chunk is
/// abandoned (the run is ending and the result will not be written). `batches` is the worker's
/// batch thread ([`CriticBatches::start`]), if it has one.
///
/// When a critic takes several requests at once, the loops are in flight in groups of up to
/// [`IN_FLIGHT`]: every loop of a group is polled until it waits for a critique, the group's batch
/// goes out, and again, until each is recorded ([`record_chunk`]). With `batches`, two groups take
/// turns: one group's batch is out on the batch thread while the other's loops advance, so a
/// critic's process works on one group's requests while the worker records the other's answers
/// and builds its next requests, where with one batch the two would take turns. The batch thread
/// writes a group's batch to the process as soon as it is handed over, even while the other's
/// answers are still coming, so the process goes from one batch to the next without waiting for
/// critbench. Without, one group, whose batch the worker sends itself.
pub fn run_chunk(
    plan: &Plan<'_>,
    chunk: Chunk,
    scope: Scope,
    stop: &AtomicBool,
    batches: Option<&CriticBatches>,
) -> ChunkResult {
    if plan.critics.iter().any(|critic| critic.pipelined()) {
        let recording = std::pin::pin!(record_chunk(plan, chunk, scope, stop, false, batches, None));
        // The loops never wait on anything but their batch, so the recording is done in one poll.
        return match recording.poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(result) => result,
            Poll::Pending => unreachable!("loops that do not await their author only wait for the batch"),
        };
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
                .unwrap_or_else(|payload| Err(LoopError::Panicked(panic_text(payload))));
                results.push((unit, result));
            }
        }
        tasks.push(TaskLoops { task: admitted.task, meta: admitted.meta, loops: results });
    }
    ChunkResult { seq: chunk.seq, progress: chunk.progress, tasks, complete }
}

/// The loops of a chunk in units of a loop at a time, up to [`IN_FLIGHT`] of them in flight per
/// group of loops: each is polled until it waits (for a critique of its group's batch, or for its
/// author when `awaiting`), the batch goes out, and again, until each is recorded. Pending only
/// while a loop awaits its author.
///
/// With `batches`, the loops are in two groups whose batches take turns there: one is out while
/// the other's loops advance. Without, one group, whose batch the worker sends itself.
///
/// A loop is polled again only when there is news for it: its own waker fired (its author's
/// answer is in), or the batch it asked went out. An answer costs one loop's poll, not a poll of
/// every loop of the chunk.
pub(super) async fn record_chunk(
    plan: &Plan<'_>,
    chunk: Chunk,
    scope: Scope,
    stop: &AtomicBool,
    awaiting: bool,
    batches: Option<&CriticBatches>,
    room: Option<&Room>,
) -> ChunkResult {
    let units: Vec<(usize, Unit)> = (chunk.tasks.iter().enumerate())
        .flat_map(|(at, admitted)| {
            admitted.critics.iter().flat_map(move |&c| plan.units(c, scope)).map(move |u| (at, u))
        })
        .collect();
    let mut done: Vec<Option<Result<LoopResult, LoopError>>> = units.iter().map(|_| None).collect();
    let groups = if batches.is_some() { 2 } else { 1 };
    let batch: Vec<Arc<Batch>> = (0..groups).map(|_| Arc::new(Batch::default())).collect();
    // The groups whose batch is out, the oldest first; at most one between passes.
    let mut out: VecDeque<usize> = VecDeque::with_capacity(groups);
    let most = room.map_or(IN_FLIGHT * groups, Room::most_per_chunk);
    let in_flight = most.min(units.len());
    // Loops recorded: each gives its worker's room back a loop once fewer are left than `most`.
    let mut recorded = 0;
    let woken = Arc::new(LoopsWoken { state: Mutex::new((Vec::with_capacity(in_flight), Waker::noop().clone())) });
    // Places for the loops in flight, each with the waker its loop polls with; a place freed by a
    // recorded loop takes the next.
    let mut places: Vec<Place<'_>> = Vec::with_capacity(in_flight);
    let mut free: Vec<usize> = Vec::new();
    let mut flying = 0;
    // The places to poll in this pass, and those whose loop was left pending in it, by group.
    let mut polling: Vec<usize> = Vec::new();
    let mut pending: Vec<Vec<usize>> = vec![Vec::new(); groups];
    let mut started = 0;
    let mut complete = true;
    std::future::poll_fn(|context| {
        woken.set_waker(context.waker());
        loop {
            while flying < most && started < units.len() {
                // Checked before every loop, not only every task: one task may hold thousands.
                if stop.load(Ordering::Relaxed) {
                    complete = false;
                    break;
                }
                // A new loop joins a group whose batch is not out: its first ask goes with that
                // group's next batch.
                let group = match out.front() {
                    Some(&busy) => (busy + 1) % groups,
                    None => started % groups,
                };
                let (at, unit) = units[started];
                let admitted = &chunk.tasks[at];
                let recording: Recording<'_> = Box::pin(record_loop_in(
                    plan,
                    &admitted.task,
                    &admitted.json,
                    admitted.labelled.as_ref(),
                    unit,
                    scope,
                    Driver { batch: Some(&*batch[group]), awaiting },
                ));
                let place = free.pop().unwrap_or_else(|| {
                    let waker = Arc::new(LoopWaker {
                        place: places.len(),
                        queued: AtomicBool::new(false),
                        woken: Arc::clone(&woken),
                    });
                    places.push(Place { waker: Waker::from(Arc::clone(&waker)), wake: waker, group, flying: None });
                    places.len() - 1
                });
                places[place].group = group;
                places[place].flying = Some((started, recording));
                polling.push(place);
                flying += 1;
                started += 1;
            }
            if flying == 0 || !complete {
                // A batch still out (the run is stopping) is waited for: the next chunk's waits
                // must be for its own batches.
                while out.pop_front().is_some() {
                    batches.expect("a batch is out only on a batch thread").wait();
                }
                return Poll::Ready(());
            }
            polling.append(&mut woken.take());
            if polling.is_empty() && out.is_empty() {
                // Every loop in flight awaits its author: its answer wakes it, and this chunk.
                return Poll::Pending;
            }
            for at in polling.drain(..) {
                let place = &mut places[at];
                // A wake for a loop already recorded, or one polled twice in a pass, is harmless.
                let Some((unit, recording)) = place.flying.as_mut() else { continue };
                let unit = *unit;
                // Cleared before the poll: a wake during or after it queues the loop again.
                place.wake.queued.swap(false, Ordering::AcqRel);
                let context = &mut Context::from_waker(&place.waker);
                match catch_unwind(AssertUnwindSafe(|| recording.as_mut().poll(context))) {
                    Ok(Poll::Pending) => {
                        pending[place.group].push(at);
                        continue;
                    }
                    Ok(Poll::Ready(result)) => done[unit] = Some(result),
                    Err(payload) => done[unit] = Some(Err(LoopError::Panicked(panic_text(payload)))),
                }
                place.flying = None;
                free.push(at);
                flying -= 1;
                recorded += 1;
                if let Some(room) = room
                    && units.len() - recorded < most
                {
                    room.give_back(1);
                }
            }
            match batches {
                None if batch[0].is_waiting() => {
                    batch[0].send(&plan.critics);
                    // The loops that asked are among those left pending in this pass.
                    polling.append(&mut pending[0]);
                }
                // Awaiting their author: their wakers say when.
                None => pending[0].clear(),
                Some(batches) => {
                    for (group, asked) in batch.iter().enumerate() {
                        if !out.contains(&group) && asked.is_waiting() {
                            batches.hand_over(asked);
                            out.push_back(group);
                        }
                    }
                    // The other group's loops were polled while this batch was out.
                    if let Some(group) = out.pop_front() {
                        batches.wait();
                        polling.append(&mut pending[group]);
                    }
                }
            }
        }
    })
    .await;
    drop(places);
    // The loops of a stopped chunk that were never recorded hold no place either.
    if let Some(room) = room {
        room.give_back((units.len() - recorded).min(most));
    }
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

/// A place for a loop in flight in [`record_chunk`]: the loop (its index among the chunk's loops,
/// and its recording) and the waker it is polled with, the same for every loop the place takes.
struct Place<'a> {
    waker: Waker,
    wake: Arc<LoopWaker>,
    /// The group of loops whose batch the place's loop asks in.
    group: usize,
    flying: Option<(usize, Recording<'a>)>,
}

/// The places of a chunk whose loop was woken since the chunk last looked, and the chunk's own
/// waker, woken when the first of them comes.
struct LoopsWoken {
    state: Mutex<(Vec<usize>, Waker)>,
}

impl LoopsWoken {
    fn set_waker(&self, waker: &Waker) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if !state.1.will_wake(waker) {
            state.1.clone_from(waker);
        }
    }

    fn take(&self) -> Vec<usize> {
        std::mem::take(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()).0)
    }
}

struct LoopWaker {
    place: usize,
    /// Set when woken, cleared when polled: a loop woken many times before its poll is queued once.
    queued: AtomicBool,
    woken: Arc<LoopsWoken>,
}

impl Wake for LoopWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.queued.swap(true, Ordering::AcqRel) {
            return;
        }
        let chunk = {
            let mut state = self.woken.state.lock().unwrap_or_else(|e| e.into_inner());
            state.0.push(self.place);
            // Only the first wake since the chunk last looked wakes it: it takes them all.
            (state.0.len() == 1).then(|| state.1.clone())
        };
        if let Some(chunk) = chunk {
            chunk.wake();
        }
    }
}

/// How many loops a chunk holds.
pub(super) fn loops_of(plan: &Plan<'_>, chunk: &Chunk, scope: Scope) -> usize {
    chunk.tasks.iter().flat_map(|admitted| &admitted.critics).map(|&critic| plan.units(critic, scope).len()).sum()
}
