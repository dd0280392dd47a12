//! A writer program in the pipelined form: many requests in flight per process. The requests
//! queue for the program; each process has a driver thread that writes what is queued (up to its
//! share of `in_flight`) in one go, reads the answers in any order and hands each to the request
//! its id names, waking the loop that awaits it. Each task is sent to a process once, opened
//! under a key its requests name (`{"id", "open", "task"}`, then `{"id", "task_key", "write"}`),
//! and closed once the process holds more tasks than it has requests in flight. A process that
//! breaks down is stopped and counted; the oldest request still waiting is charged with it (its
//! loop pays, with why), and the others go back to the queue for a fresh process, not charged.

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use serde_json::Value;

use super::start::{Child, Starter, WriteError, answer};
use crate::program::{Broken, Nudge, excerpt, parse_message};

/// The processes of one writer program of the pipelined form, and the requests queued for them.
pub(super) struct Lanes {
    shared: Arc<Shared>,
    drivers: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

struct Shared {
    starter: Starter,
    /// Processes at most.
    most: usize,
    /// Requests in flight on one process at most.
    per_process: usize,
    queue: Mutex<Queue>,
    work: Condvar,
}

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    /// The writer is being dropped: drivers end once their requests are answered.
    closed: bool,
    /// Drivers started.
    drivers: usize,
    /// Drivers waiting for work with nothing in flight.
    idle: usize,
    /// What wakes each driver that waits on its process's answers.
    nudges: Vec<Option<Nudge>>,
}

/// A request (its `write` without the task), its task's JSON, and where its answer goes.
struct Job {
    request: String,
    task: Arc<str>,
    answer: Arc<Answer>,
}

/// A request's answer, once it has one, and who waits for it.
#[derive(Default)]
pub(super) struct Answer {
    state: Mutex<Answering>,
}

/// A request's draft or error once it came, and the waker of the loop awaiting it meanwhile.
type Answering = (Option<Result<String, WriteError>>, Option<Waker>);

impl Answer {
    fn give(&self, result: Result<String, WriteError>) {
        let mut state = lock(&self.state);
        state.0 = Some(result);
        if let Some(waker) = state.1.take() {
            waker.wake();
        }
    }
}

/// The future of one request's answer.
pub(super) struct Awaiting(Arc<Answer>);

impl Future for Awaiting {
    type Output = Result<String, WriteError>;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = lock(&self.0.state);
        match state.0.take() {
            Some(result) => Poll::Ready(result),
            None => {
                state.1 = Some(context.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl Lanes {
    /// The processes of `starter`'s program, `first` already started: up to `most`, with up to
    /// `in_flight` requests in flight across them.
    pub(super) fn new(starter: Starter, first: Child, most: usize, in_flight: usize) -> Lanes {
        first.program.let_several_come();
        let shared = Arc::new(Shared {
            starter,
            most: most.max(1),
            per_process: in_flight.div_ceil(most.max(1)).max(1),
            queue: Mutex::new(Queue { drivers: 1, ..Queue::default() }),
            work: Condvar::new(),
        });
        lock(&shared.queue).nudges.push(None);
        let driver = {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || drive(&shared, 0, Some(first)))
        };
        Lanes { shared, drivers: Mutex::new(vec![driver]) }
    }

    pub(super) fn starter(&self) -> &Starter {
        &self.shared.starter
    }

    /// Queues `request` (a write request's JSON, without its task) about `task` (the task's
    /// JSON); its answer comes to the future.
    pub(super) fn submit(&self, request: String, task: Arc<str>) -> Awaiting {
        let answer = Arc::new(Answer::default());
        let mut queue = lock(&self.shared.queue);
        let was_empty = queue.jobs.is_empty();
        queue.jobs.push_back(Job { request, task, answer: Arc::clone(&answer) });
        if queue.idle == 0 && queue.drivers < self.shared.most {
            let index = queue.drivers;
            queue.drivers += 1;
            queue.nudges.push(None);
            let shared = Arc::clone(&self.shared);
            lock(&self.drivers).push(std::thread::spawn(move || drive(&shared, index, None)));
        }
        if was_empty {
            // A driver waiting on its process's answers takes the request now, not at its next answer.
            for nudge in queue.nudges.iter().flatten() {
                nudge.nudge();
            }
        }
        drop(queue);
        self.shared.work.notify_one();
        Awaiting(answer)
    }
}

impl Drop for Lanes {
    fn drop(&mut self) {
        {
            let mut queue = lock(&self.shared.queue);
            queue.closed = true;
            for nudge in queue.nudges.iter().flatten() {
                nudge.nudge();
            }
        }
        self.shared.work.notify_all();
        for driver in lock(&self.drivers).drain(..) {
            let _ = driver.join();
        }
    }
}

/// A message written to a process and not answered yet: a request, or the open of a task.
struct Sent {
    /// `None` for an open.
    job: Option<Job>,
    at: Instant,
}

/// The tasks open on a process: each task's key by where its JSON is (the JSON is held, so no
/// other task's can be there meanwhile), in the order they were opened.
#[derive(Default)]
struct Opened {
    keys: std::collections::HashMap<usize, (u64, Arc<str>)>,
    order: VecDeque<usize>,
    next_key: u64,
}

impl Opened {
    /// The key `task` is open under, or `None` with the key to open it under (now counted open).
    fn key_for(&mut self, task: &Arc<str>) -> (u64, bool) {
        let at = Arc::as_ptr(task) as *const u8 as usize;
        if let Some((key, _)) = self.keys.get(&at) {
            return (*key, false);
        }
        self.next_key += 1;
        self.keys.insert(at, (self.next_key, Arc::clone(task)));
        self.order.push_back(at);
        (self.next_key, true)
    }

    /// The `close` line of the oldest tasks past `most`, which are then no longer open.
    fn close_past(&mut self, most: usize) -> Option<String> {
        let mut keys = Vec::new();
        while self.order.len() > most {
            let at = self.order.pop_front().expect("more than most");
            keys.extend(self.keys.remove(&at).map(|(key, _)| key.to_string()));
        }
        (!keys.is_empty()).then(|| format!("{{\"close\":[{}]}}", keys.join(",")))
    }
}

/// Driver `index`: serves the queue on one process at a time (`child`, or one it starts) until
/// the writer is dropped and nothing it holds waits for an answer.
fn drive(shared: &Shared, index: usize, child: Option<Child>) {
    let mut waiting: BTreeMap<u64, Sent> = BTreeMap::new();
    let served = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| serve(shared, index, child, &mut waiting)));
    if served.is_err() {
        // A bug here must not leave the loops awaiting these answers waiting forever: each gets an
        // error, and the queue is served by the other drivers (or a fresh one, started as needed).
        lock(&shared.queue).nudges[index] = None;
        for sent in std::mem::take(&mut waiting).into_values() {
            if let Some(job) = sent.job {
                job.answer.give(Err(WriteError::DriverFailed));
            }
        }
        let mut queue = lock(&shared.queue);
        queue.drivers -= 1;
    }
}

/// [`drive`]'s work: the requests it wrote and awaits answers to are in `waiting`.
fn serve(shared: &Shared, index: usize, mut child: Option<Child>, waiting: &mut BTreeMap<u64, Sent>) {
    let timeout = shared.starter.timeout;
    if let Some(first) = &child {
        lock(&shared.queue).nudges[index] = Some(first.program.nudge());
    }
    let mut opened = Opened::default();
    // When the last answer to the oldest request came: the next oldest is timed from then.
    let mut answered_at = Instant::now();
    loop {
        // Opens count against the room too, so it may be spent already.
        let Some(jobs) = take(shared, waiting.is_empty(), shared.per_process.saturating_sub(waiting.len())) else {
            break;
        };
        if !jobs.is_empty() {
            let mut program = match child.take() {
                Some(program) => program,
                None => match shared.starter.start() {
                    Ok((program, _)) => {
                        program.program.let_several_come();
                        lock(&shared.queue).nudges[index] = Some(program.program.nudge());
                        program
                    }
                    Err(error) => {
                        // A writer that cannot start costs the requests it was to serve.
                        let error = Arc::new(error);
                        for job in jobs {
                            job.answer.give(Err(WriteError::NotStarted(Arc::clone(&error))));
                        }
                        continue;
                    }
                },
            };
            let now = Instant::now();
            if waiting.is_empty() {
                answered_at = now;
            }
            let mut text = String::new();
            // The tasks the requests in flight name stay open; older ones are closed first.
            if let Some(close) = opened.close_past(shared.per_process.max(waiting.len()) + jobs.len()) {
                text.push_str(&close);
                text.push('\n');
            }
            for job in jobs {
                let (key, new) = opened.key_for(&job.task);
                if new {
                    let id = program.next_id;
                    program.next_id += 1;
                    text.push_str(&open_line(id, key, &job.task));
                    text.push('\n');
                    waiting.insert(id, Sent { job: None, at: now });
                }
                let id = program.next_id;
                program.next_id += 1;
                text.push_str(&keyed_write_line(id, key, &job.request));
                text.push('\n');
                waiting.insert(id, Sent { job: Some(job), at: now });
            }
            if let Err(unwritten) = program.program.write_within(text.as_bytes(), Some(timeout)) {
                let broken = if unwritten.source.kind() == std::io::ErrorKind::TimedOut {
                    Broken::Timeout(timeout)
                } else {
                    Broken::Send { what: "the requests", source: unwritten.source }
                };
                break_down(shared, index, program, broken, waiting);
                opened = Opened::default();
                continue;
            }
            child = Some(program);
        }
        let Some(program) = child.as_mut() else { continue };
        let Some((_, sent)) = waiting.first_key_value() else { continue };
        let deadline = sent.at.max(answered_at) + timeout;
        let broken = match program.program.next_line_or_nudge(deadline, timeout) {
            Ok(None) => continue,
            // Every answer that came in the same read, before the next requests are taken: they
            // then go out together.
            Ok(Some(first)) => {
                let mut line = Some(first);
                let mut broken = None;
                while let Some((text, arrived)) = line.take() {
                    match read_answer(&text, waiting) {
                        Ok((id, result)) => {
                            let oldest = waiting.keys().next() == Some(&id);
                            let sent = waiting.remove(&id).expect("the answer's id is waiting");
                            // An open's answer (`ok`, or an error: then the writer answers the
                            // requests that name its key as it will) opens nothing more to hand.
                            if let Some(job) = sent.job {
                                job.answer.give(result);
                            }
                            if oldest {
                                answered_at = arrived;
                            }
                        }
                        Err(error) => {
                            broken = Some(error);
                            break;
                        }
                    }
                    if !waiting.is_empty() && program.program.any_line_ready() {
                        match program.program.next_line_or_nudge(deadline, timeout) {
                            Ok(Some(next)) => line = Some(next),
                            Ok(None) => {}
                            Err(error) => broken = Some(error),
                        }
                    }
                }
                match broken {
                    None => continue,
                    Some(broken) => broken,
                }
            }
            Err(broken) => broken,
        };
        let program = child.take().expect("a process answered");
        break_down(shared, index, program, broken, waiting);
        opened = Opened::default();
    }
    if let Some(program) = child {
        program.program.close();
    }
}

/// Up to `room` queued requests; with nothing in flight (`idle`), waits for one. `None`: the
/// writer is closed and there is nothing left to do.
fn take(shared: &Shared, idle: bool, room: usize) -> Option<Vec<Job>> {
    let mut queue = lock(&shared.queue);
    if idle {
        queue.idle += 1;
        while queue.jobs.is_empty() && !queue.closed {
            queue = shared.work.wait(queue).unwrap_or_else(|e| e.into_inner());
        }
        queue.idle -= 1;
        if queue.jobs.is_empty() {
            return None;
        }
    }
    let count = room.min(queue.jobs.len());
    let jobs: Vec<Job> = queue.jobs.drain(..count).collect();
    let more = !queue.jobs.is_empty();
    drop(queue);
    if more {
        // What is left is another driver's.
        shared.work.notify_one();
    }
    Some(jobs)
}

/// Stops a process that broke down: the oldest request waiting is charged with why, the others
/// go back to the front of the queue, in order, for a fresh process.
fn break_down(shared: &Shared, index: usize, program: Child, broken: Broken, waiting: &mut BTreeMap<u64, Sent>) {
    lock(&shared.queue).nudges[index] = None;
    let error = shared.starter.stop(program, broken);
    // The opens waiting go with the process: a fresh one is sent each task again.
    let mut sent = std::mem::take(waiting).into_values().filter_map(|sent| sent.job);
    if let Some(oldest) = sent.next() {
        oldest.answer.give(Err(error));
    }
    let mut queue = lock(&shared.queue);
    for (place, rest) in sent.enumerate() {
        queue.jobs.insert(place, rest);
    }
    drop(queue);
    shared.work.notify_one();
}

/// The usual answer, read without building a JSON tree: an id and a draft, nothing else.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Drafted {
    id: u64,
    draft: String,
}

/// The request a line answers, among those `waiting`, and its draft or error.
fn read_answer(line: &[u8], waiting: &BTreeMap<u64, Sent>) -> Result<(u64, Result<String, WriteError>), Broken> {
    if let Ok(Drafted { id, draft }) = serde_json::from_slice::<Drafted>(line)
        && waiting.get(&id).is_some_and(|sent| sent.job.is_some())
    {
        return Ok((id, Ok(draft)));
    }
    // Anything else — an open's answer, an error answer, or what is wrong with the line — the way
    // every program's message is read.
    let message: Value = parse_message(line)?;
    let id = message.get("id").and_then(Value::as_u64);
    match id.and_then(|id| Some((id, waiting.get(&id)?))) {
        Some((id, Sent { job: None, .. })) => match opened(&message) {
            // An open is answered `{"id": N, "ok": true}`, or refused with an error.
            Some(answer) => Ok((id, answer)),
            None => Err(Broken::Protocol(format!(
                "the writer answered the open of a task (request {id}) with something other than {{\"id\": {id}, \
                 \"ok\": true}}: {}",
                excerpt(&message.to_string())
            ))),
        },
        Some((id, _)) => Ok((id, answer(&message, id)?)),
        _ => {
            let first = waiting.keys().next().copied().unwrap_or_default();
            let last = waiting.keys().next_back().copied().unwrap_or_default();
            let named = message.get("id").map_or_else(|| "without an id".to_string(), |id| format!("for request {id}"));
            Err(Broken::Protocol(format!(
                "the writer wrote a message {named}, which is not one of the requests waiting for an answer \
                 ({first}–{last}): {}",
                excerpt(&message.to_string())
            )))
        }
    }
}

/// An open's answer: `{"id", "ok": true}` (`Ok`) or `{"id", "error"}`; `None` for anything else.
fn opened(message: &Value) -> Option<Result<String, WriteError>> {
    let object = message.as_object()?;
    match (object.len(), object.get("ok"), object.get("error")) {
        (2, Some(Value::Bool(true)), None) => Some(Ok(String::new())),
        (2, None, Some(error)) => Some(Err(WriteError::Answered(crate::program::text_of(error)))),
        _ => None,
    }
}

/// The open of `task` (its JSON) as key `key`, message `id`.
fn open_line(id: u64, key: u64, task: &str) -> String {
    format!("{{\"id\":{id},\"open\":{key},\"task\":{task}}}")
}

/// Request `id` about the task open as `key`: `request` is the write request without its task.
fn keyed_write_line(id: u64, key: u64, request: &str) -> String {
    format!("{{\"id\":{id},\"task_key\":{key},\"write\":{request}}}")
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
