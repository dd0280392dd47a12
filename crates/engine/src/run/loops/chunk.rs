//! A chunk's loops ([`run_chunk`]): one after another, or in flight together ([`record_chunk`]),
//! each polled until it waits (for its author or its critic), and again when its answer is in,
//! until every loop is recorded.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use super::in_flight::Room;
use super::{ChunkResult, LoopError, LoopResult, TaskLoops, record_loop, record_loop_in};
use crate::run::pipeline::panic_text;
use crate::run::plan::{Plan, Scope, Unit};
use crate::run::source::Chunk;

pub(super) type Recording<'a> = Pin<Box<dyn Future<Output = Result<LoopResult, LoopError>> + 'a>>;

/// Records every loop of a chunk's tasks, one after another, each on this thread to its end. When
/// `stop` is raised the rest of the chunk is abandoned (the run is ending and the result will not be
/// written).
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
                .unwrap_or_else(|payload| Err(LoopError::Panicked(panic_text(payload))));
                results.push((unit, result));
            }
        }
        tasks.push(TaskLoops { task: admitted.task, meta: admitted.meta, loops: results });
    }
    ChunkResult { seq: chunk.seq, progress: chunk.progress, tasks, complete }
}

/// The loops of a chunk in flight together, as many at once as `room` lets the chunk hold: each is
/// polled until it waits for its author or its critic, and again when its own waker fires (its
/// answer is in), until each is recorded; an answer costs one loop's poll, not a poll of every loop
/// of the chunk. Pending while every loop in flight waits.
pub(super) async fn record_chunk(
    plan: &Plan<'_>,
    chunk: Chunk,
    scope: Scope,
    stop: &AtomicBool,
    room: &Room,
) -> ChunkResult {
    let units: Vec<(usize, Unit)> = (chunk.tasks.iter().enumerate())
        .flat_map(|(at, admitted)| {
            admitted.critics.iter().flat_map(move |&c| plan.units(c, scope)).map(move |u| (at, u))
        })
        .collect();
    let mut done: Vec<Option<Result<LoopResult, LoopError>>> = units.iter().map(|_| None).collect();
    let most = room.most_per_chunk();
    let in_flight = most.min(units.len());
    // Loops recorded: each gives its worker's room back a loop once fewer are left than `most`.
    let mut recorded = 0;
    let woken = Arc::new(LoopsWoken { state: Mutex::new((Vec::with_capacity(in_flight), Waker::noop().clone())) });
    // Places for the loops in flight, each with the waker its loop polls with; a place freed by a
    // recorded loop takes the next.
    let mut places: Vec<Place<'_>> = Vec::with_capacity(in_flight);
    let mut free: Vec<usize> = Vec::new();
    let mut flying = 0;
    // The places to poll in this pass.
    let mut polling: Vec<usize> = Vec::new();
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
                let (at, unit) = units[started];
                let admitted = &chunk.tasks[at];
                let recording: Recording<'_> = Box::pin(record_loop_in(
                    plan,
                    &admitted.task,
                    &admitted.json,
                    admitted.labelled.as_ref(),
                    unit,
                    scope,
                ));
                let place = free.pop().unwrap_or_else(|| {
                    let waker = Arc::new(LoopWaker {
                        place: places.len(),
                        queued: AtomicBool::new(false),
                        woken: Arc::clone(&woken),
                    });
                    places.push(Place { waker: Waker::from(Arc::clone(&waker)), wake: waker, flying: None });
                    places.len() - 1
                });
                places[place].flying = Some((started, recording));
                polling.push(place);
                flying += 1;
                started += 1;
            }
            if flying == 0 || !complete {
                return Poll::Ready(());
            }
            polling.append(&mut woken.take());
            if polling.is_empty() {
                // Every loop in flight awaits an answer: the answer wakes it, and this chunk.
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
                    Ok(Poll::Pending) => continue,
                    Ok(Poll::Ready(result)) => done[unit] = Some(result),
                    Err(payload) => done[unit] = Some(Err(LoopError::Panicked(panic_text(payload)))),
                }
                place.flying = None;
                free.push(at);
                flying -= 1;
                recorded += 1;
                if units.len() - recorded < most {
                    room.give_back(1);
                }
            }
        }
    })
    .await;
    drop(places);
    // The loops of a stopped chunk that were never recorded hold no place either.
    room.give_back((units.len() - recorded).min(most));
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
