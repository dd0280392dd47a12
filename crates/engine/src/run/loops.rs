//! Stage 3 of a run: the loops. A worker takes a chunk of admitted tasks and records every loop
//! of each (generate, critique with retries, ask the pure policy, revise), in the plan's unit
//! order. A loop that fails (a backend error, a panic) fails alone: it is reported, and every
//! other loop of the chunk is still recorded.
//!
//! When a critic takes several requests at once (a child process speaking protocol 3), a worker
//! advances up to [`IN_FLIGHT`] loops of its chunk together: each runs until it asks for a
//! critique, then the critiques asked go out in one batch ([`Batch`]). A loop's rounds depend only
//! on its own critiques, so the recording is the same as one loop after another.
//!
//! When the author waits on a model server ([`Author::awaits`](critbench_core::author::Author::awaits)),
//! a worker drives many chunks at once ([`work_together`]): each loop is a future that waits on
//! the model without a thread, and is polled again on the worker when its answer is in. The
//! critiques and the policy still run on the worker, so `--jobs` bounds the CPU work, and the
//! model client's limit bounds the requests in flight.

use std::cell::Cell;
use std::collections::VecDeque;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use critbench_core::{Decision, Policy, RoundScore, Task, decide};
use critbench_plugin_host::request::TaskJson;
use critbench_storage::recorded::RecordedRound;

use crate::run::emit::effective_policy;
use crate::run::pipeline::{Recorded, Taken, panic_text};
use crate::run::plan::{Plan, Scope, Unit};
use crate::run::round::{Batch, Laps, critique_round, recorded_round};
use crate::run::source::Chunk;
use critbench_core::author::Hint;
use critbench_core::author::{Draft, DraftKey};

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

/// The loops a worker advances together when a critic takes several requests at once, in each
/// group of loops whose critiques go out in one batch. A batch costs a pipe write, a read and
/// the wakes of two threads and a process, whatever its size: larger groups pay that less often
/// (docs/performance.md has the measurement), and a loop in flight costs only its own state.
pub const IN_FLIGHT: usize = 256;

type Recording<'a> = Pin<Box<dyn Future<Output = Result<LoopResult, LoopError>> + 'a>>;

/// A worker's way to its batch thread, which sends the batches handed over to their critics, in
/// order, and says each answered, in order: the worker's loops then advance while a batch is out.
/// A batch for one critic alone is written to its process as soon as it is handed over, while the
/// batches before it wait for answers ([`CriticInstance::call_batches`]); one for several critics
/// is sent once those are answered.
///
/// [`CriticInstance::call_batches`]: critbench_plugin_host::CriticInstance::call_batches
pub struct CriticBatches {
    handed: mpsc::Sender<Arc<Batch>>,
    answered: mpsc::Receiver<()>,
    /// Wakes the batch thread while it waits for a critic's answers, for a batch handed over.
    nudge: Arc<Mutex<Option<critbench_plugin_host::Nudge>>>,
}

impl CriticBatches {
    /// Starts a worker's batch thread in `threads`, when one of `critics` takes several requests
    /// at once (a child process speaking protocol 3 or 4). `None` when none does, or when the
    /// thread cannot start: the worker then sends its batches itself, which records the same.
    /// The thread ends when the worker lets go of the value.
    pub fn start<'scope, 'env>(
        threads: &'scope std::thread::Scope<'scope, 'env>,
        critics: &'env [critbench_plugin_host::CriticInstance],
    ) -> Option<CriticBatches> {
        if !critics.iter().any(|critic| critic.pipelined()) {
            return None;
        }
        let (handed, to_send) = mpsc::channel::<Arc<Batch>>();
        let (sent, answered) = mpsc::channel::<()>();
        let nudge = Arc::new(Mutex::new(None));
        let nudge_with = Arc::clone(&nudge);
        std::thread::Builder::new()
            .name("critbench-critic-batches".into())
            .spawn_scoped(threads, move || {
                // A batch taken while others were out, that goes to another critic, or to several.
                let mut stash: Option<Arc<Batch>> = None;
                while let Some(batch) = stash.take().or_else(|| to_send.recv().ok()) {
                    match batch.critic() {
                        Some(critic) => {
                            let mut handed = Handed {
                                to_send: &to_send,
                                sent: &sent,
                                critic,
                                first: Some(batch),
                                out: VecDeque::new(),
                                stash: &mut stash,
                                worker_gone: false,
                                nudge: &nudge_with,
                            };
                            critics[critic].call_batches(&mut handed);
                            *nudge_with.lock().unwrap_or_else(|e| e.into_inner()) = None;
                            if handed.worker_gone {
                                return;
                            }
                        }
                        None => {
                            batch.send(critics);
                            if sent.send(()).is_err() {
                                return;
                            }
                        }
                    }
                }
            })
            .ok()?;
        Some(CriticBatches { handed, answered, nudge })
    }

    fn hand_over(&self, batch: &Arc<Batch>) {
        self.handed.send(Arc::clone(batch)).expect("the batch thread runs while its worker does");
        // After the send: a thread that looked before it is woken to look again.
        if let Some(nudge) = &*self.nudge.lock().unwrap_or_else(|e| e.into_inner()) {
            nudge.nudge();
        }
    }

    /// Waits until the oldest batch handed over and not yet waited for has its answers.
    fn wait(&self) {
        // The thread ends only when its worker lets it go, or by a panic (which its scope rethrows).
        self.answered.recv().expect("the batch thread runs while its worker does");
    }
}

/// The batches a worker hands its batch thread, as one critic takes them
/// ([`CriticInstance::call_batches`](critbench_plugin_host::CriticInstance::call_batches)): every
/// batch for that critic alone that is ready, in the order they came. A batch for another critic
/// or for several waits in `stash` until the critic has answered those taken.
struct Handed<'a> {
    to_send: &'a mpsc::Receiver<Arc<Batch>>,
    sent: &'a mpsc::Sender<()>,
    critic: usize,
    first: Option<Arc<Batch>>,
    /// The batches taken and not answered, the oldest first.
    out: VecDeque<Arc<Batch>>,
    stash: &'a mut Option<Arc<Batch>>,
    /// The worker let go of its batch thread.
    worker_gone: bool,
    nudge: &'a Mutex<Option<critbench_plugin_host::Nudge>>,
}

impl critbench_plugin_host::Batches for Handed<'_> {
    fn next(&mut self) -> Option<Vec<(critbench_plugin_host::Asked, critbench_plugin_host::services::CallScope)>> {
        let batch = match self.first.take() {
            Some(batch) => batch,
            None if self.stash.is_some() || self.worker_gone => return None,
            None => {
                let batch = self.to_send.try_recv().ok()?;
                if batch.critic() != Some(self.critic) {
                    *self.stash = Some(batch);
                    return None;
                }
                batch
            }
        };
        let requests = batch.take_requests();
        self.out.push_back(batch);
        Some(requests)
    }

    fn answered(
        &mut self,
        answers: Vec<(Result<String, critbench_plugin_host::CallError>, critbench_plugin_host::services::CallScope)>,
    ) {
        let batch = self.out.pop_front().expect("answers come for the batches taken, in order");
        batch.answer(answers);
        if self.sent.send(()).is_err() {
            self.worker_gone = true;
        }
    }

    fn nudge_with(&mut self, nudge: critbench_plugin_host::Nudge) {
        *self.nudge.lock().unwrap_or_else(|e| e.into_inner()) = Some(nudge);
    }
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
async fn record_chunk(
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
fn loops_of(plan: &Plan<'_>, chunk: &Chunk, scope: Scope) -> usize {
    chunk.tasks.iter().flat_map(|admitted| &admitted.critics).map(|&critic| plan.units(critic, scope).len()).sum()
}

/// The chunks a worker has in flight, each a future woken by the answers its loops await.
struct Slot<'a> {
    recording: Pin<Box<dyn Future<Output = ChunkResult> + 'a>>,
    waker: Waker,
}

/// A worker's room for loops in flight, shared by its chunks: a chunk holds room for as many
/// loops as it may still have in flight at once, and gives it back as its loops are recorded, so
/// that a chunk waiting for its last loop holds room for that loop alone and the worker starts
/// other chunks' loops in the room the finished ones left.
pub(crate) struct Room {
    at_most: usize,
    held: Cell<usize>,
}

impl Room {
    fn new(at_most: usize) -> Room {
        Room { at_most: at_most.max(1), held: Cell::new(0) }
    }

    /// The most loops of one chunk in flight at once.
    fn most_per_chunk(&self) -> usize {
        IN_FLIGHT.min(self.at_most)
    }

    /// How many of a chunk's `loops` are in flight at once.
    fn per_chunk(&self, loops: usize) -> usize {
        loops.min(self.most_per_chunk())
    }

    fn has_room(&self) -> bool {
        self.held.get() < self.at_most
    }

    fn take(&self, loops: usize) {
        self.held.set(self.held.get() + self.per_chunk(loops));
    }

    fn give_back(&self, loops: usize) {
        self.held.set(self.held.get() - loops);
    }
}

/// The chunk futures woken since the worker last looked, and the worker to unpark.
struct Woken {
    slots: Mutex<Vec<usize>>,
    worker: std::thread::Thread,
}

struct SlotWaker {
    slot: usize,
    woken: Arc<Woken>,
}

impl Wake for SlotWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let first = {
            let mut slots = self.woken.slots.lock().unwrap_or_else(|e| e.into_inner());
            slots.push(self.slot);
            slots.len() == 1
        };
        // The worker takes every slot woken at once: only the first since then unparks it.
        if first {
            self.woken.worker.unpark();
        }
    }
}

/// How long a worker with room for more loops sleeps before it looks at its intake again without
/// being woken: a chunk the source hands on wakes no one. A full worker sleeps until woken.
const INTAKE_POLL: Duration = Duration::from_millis(1);

/// A worker whose loops await their author: takes chunks from `intake` (waiting there only when
/// it has nothing in flight) while its chunks hold room ([`Room`]) for fewer than `loops_at_most`
/// loops in flight, drives them all on this thread, and hands each recorded chunk to `deliver`
/// (which says whether to go on). A chunk's loops in flight are at most `loops_at_most`, so with
/// one slot a worker runs one loop at a time, whatever the chunk's size.
pub fn work_together<'a>(
    plan: &'a Plan<'a>,
    scope: Scope,
    stop: &'a AtomicBool,
    loops_at_most: usize,
    mut intake: impl FnMut(bool) -> Taken<Chunk>,
    mut deliver: impl FnMut(ChunkResult) -> bool,
) {
    let woken = Arc::new(Woken { slots: Mutex::new(Vec::new()), worker: std::thread::current() });
    let room = Room::new(loops_at_most);
    let mut slots: Vec<Option<Slot<'_>>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let (mut live, mut open) = (0, true);
    loop {
        while open && room.has_room() {
            match intake(live == 0) {
                Taken::Chunk(chunk) => {
                    let slot = free.pop().unwrap_or_else(|| {
                        slots.push(None);
                        slots.len() - 1
                    });
                    room.take(loops_of(plan, &chunk, scope));
                    let waker = Waker::from(Arc::new(SlotWaker { slot, woken: Arc::clone(&woken) }));
                    let recording = Box::pin(record_chunk(plan, chunk, scope, stop, true, None, Some(&room)));
                    slots[slot] = Some(Slot { recording, waker });
                    woken.slots.lock().unwrap_or_else(|e| e.into_inner()).push(slot);
                    live += 1;
                }
                Taken::Empty => break,
                Taken::Closed => open = false,
            }
        }
        if live == 0 && !open {
            return;
        }
        let ready = std::mem::take(&mut *woken.slots.lock().unwrap_or_else(|e| e.into_inner()));
        if ready.is_empty() {
            if open && room.has_room() {
                std::thread::park_timeout(INTAKE_POLL);
            } else {
                // Nothing to take from the intake: only an answer (a waker) has news.
                std::thread::park();
            }
            continue;
        }
        for slot in ready {
            // A slot woken twice, or after its chunk was done, is looked at once.
            let Some(chunk) = slots[slot].as_mut() else { continue };
            let polled = chunk.recording.as_mut().poll(&mut Context::from_waker(&chunk.waker));
            if let Poll::Ready(result) = polled {
                live -= 1;
                slots[slot] = None;
                free.push(slot);
                if !deliver(result) {
                    return;
                }
            }
        }
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
    // Without a batch, no critique waits: the recording is done in one poll.
    let driver = Driver { batch: None, awaiting: false };
    let recording = std::pin::pin!(record_loop_in(plan, task, task_json, labelled, unit, scope, driver));
    match recording.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(result) => result,
        Poll::Pending => unreachable!("a loop without a batch never waits"),
    }
}

/// How a loop is driven: its critiques asked through `batch` when given; its drafts awaited from
/// the author when `awaiting` (the driver has a waker the author's answers wake), else asked of
/// it on the spot.
#[derive(Clone, Copy)]
struct Driver<'b> {
    batch: Option<&'b Batch>,
    awaiting: bool,
}

/// [`record_loop`], driven as `driver` says.
async fn record_loop_in(
    plan: &Plan<'_>,
    task: &Task,
    task_json: &TaskJson,
    labelled: Option<&TaskJson>,
    unit: Unit,
    scope: Scope,
    driver: Driver<'_>,
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
    let mut draft = if driver.awaiting {
        plan.author.generate_async(task, hints, key(0)).await?
    } else {
        plan.author.generate(task, hints, &key(0))?
    };
    let mut gen_ms = laps.lap();
    let mut running = vec![true; policies.len()];
    let mut scores: Vec<RoundScore> = Vec::with_capacity(longest);
    let mut rounds: Vec<RecordedRound> = Vec::with_capacity(longest);
    let adjudicating = scope == Scope::Evaluate && experiment.adjudicate.contains(&unit.arm);
    // The task with its labels when an evaluator takes it: evaluators judge the drafts afterwards.
    let evaluating = labelled.filter(|_| scope == Scope::Evaluate);
    let mut texts: Vec<String> = Vec::new();
    // The task is shown to the critic once for the loop's rounds (ABI version 2) and closed when
    // the loop is recorded; the adjudicator and the evaluators ask with whole requests.
    let mut critic = plan.critics[unit.critic].open_task(task_json);
    loop {
        let round = rounds.len() as u32;
        let (call, scope) = match driver.batch {
            Some(batch) => batch.critique_round(plan, unit, &task.id, &mut critic, &draft.text, round).await,
            None => critique_round(plan, unit, &task.id, &mut critic, &draft.text, round),
        };
        let critic_ms = laps.lap();
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
            let shown = unit.arm.shows_critique().then_some(&call.critique);
            let next = if driver.awaiting {
                plan.author.revise_async(task, &draft_text, shown, key(round + 1)).await?
            } else {
                plan.author.revise(task, &draft_text, shown, &key(round + 1))?
            };
            Some((next, laps.lap()))
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
    drop(critic);
    let adjudications = if adjudicating {
        crate::run::adjudicate::adjudicate_loop(plan, task, task_json, unit, &policies, &scores, &rounds, &texts)?
    } else {
        Vec::new()
    };
    let evaluations = match evaluating {
        Some(labelled) => crate::run::evaluate::evaluate_loop(plan, task, labelled, unit, &policies, &scores, &texts),
        None => Vec::new(),
    };
    Ok(LoopResult { rounds, scores, adjudications, evaluations })
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
    /// Strategy memory's learning loop ended before its policy stopped (a bug).
    #[error("the learning loop ended before its policy stopped")]
    Unfinished,
    /// A loop panicked: the panic's message, for a bug report.
    #[error("{0}")]
    Panicked(String),
}
