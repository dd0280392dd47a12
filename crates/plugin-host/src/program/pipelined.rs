//! A program of the pipelined form: many requests in flight per process. The requests queue for
//! the program; each process has a driver thread that writes what is queued (up to its share of
//! the requests in flight) in one go, reads the answers in any order and hands each to the request
//! its id names, waking whoever awaits it. Each task is sent to a process once, opened under a key
//! the requests about it name, and closed once the process holds more tasks than it has requests
//! in flight. A process that breaks down is stopped and counted; the oldest request still waiting
//! is charged with it (its loop pays, with why), and the others go back to the queue for a fresh
//! process, not charged.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use super::start::{Child, Failure, Starter};
use super::{Answered, Ask, Broken, Nudge, excerpt};
use crate::protocol::{self, ProtocolError, Reply};

/// The processes of one program of the pipelined form, and the requests queued for them.
pub(crate) struct Lanes {
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
    /// The program is being dropped: drivers end once their requests are answered.
    closed: bool,
    /// Drivers started.
    drivers: usize,
    /// Drivers waiting for work with nothing in flight.
    idle: usize,
    /// What wakes each driver that waits on its process's answers.
    nudges: Vec<Option<Nudge>>,
}

/// A request and where its answer goes.
struct Job {
    ask: Ask,
    answer: Arc<Answer>,
}

impl Job {
    fn give(self, result: Result<String, Failure>) {
        self.answer.give((result, self.ask.scope));
    }
}

/// A request's answer, once it has one, and who waits for it.
#[derive(Default)]
pub(crate) struct Answer {
    state: Mutex<(Option<Answered>, Option<Waker>)>,
}

impl Answer {
    fn give(&self, answered: Answered) {
        let mut state = lock(&self.state);
        state.0 = Some(answered);
        if let Some(waker) = state.1.take() {
            waker.wake();
        }
    }
}

/// The future of one request's answer.
pub(crate) struct Awaiting(Arc<Answer>);

impl Future for Awaiting {
    type Output = Answered;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Answered> {
        let mut state = lock(&self.0.state);
        match state.0.take() {
            Some(answered) => Poll::Ready(answered),
            None => {
                if !state.1.as_ref().is_some_and(|waker| waker.will_wake(context.waker())) {
                    state.1 = Some(context.waker().clone());
                }
                Poll::Pending
            }
        }
    }
}

impl Lanes {
    /// The processes of `starter`'s program, `first` already started: up to `most`, with up to
    /// `in_flight` requests in flight across them.
    pub(super) fn new(starter: Starter, first: Child, most: usize, in_flight: usize) -> Lanes {
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
            spawn_driver(shared.starter.launch.role.name, move || drive(&shared, 0, Some(first)))
        };
        Lanes { shared, drivers: Mutex::new(vec![driver]) }
    }

    pub(super) fn starter(&self) -> &Starter {
        &self.shared.starter
    }

    /// Queues `ask`; its answer comes to the future.
    pub(super) fn submit(&self, ask: Ask) -> Awaiting {
        let answer = Arc::new(Answer::default());
        let mut queue = lock(&self.shared.queue);
        let was_empty = queue.jobs.is_empty();
        queue.jobs.push_back(Job { ask, answer: Arc::clone(&answer) });
        if queue.idle == 0 && queue.drivers < self.shared.most {
            let index = queue.drivers;
            queue.drivers += 1;
            queue.nudges.push(None);
            let shared = Arc::clone(&self.shared);
            let driver = spawn_driver(self.shared.starter.launch.role.name, move || drive(&shared, index, None));
            lock(&self.drivers).push(driver);
        }
        drop(queue);
        if was_empty && !held(&self.shared) {
            wake(&self.shared);
        }
        Awaiting(answer)
    }
}

/// Wakes the drivers for the requests queued: one waiting for work, and those waiting on their
/// process's answers, which take the requests now, not at their next answer.
fn wake(shared: &Shared) {
    for nudge in lock(&shared.queue).nudges.iter().flatten() {
        nudge.nudge();
    }
    shared.work.notify_one();
}

thread_local! {
    /// The programs whose drivers are to be woken when this thread's [`Held`] ends, while one lives.
    static HELD: std::cell::RefCell<Option<Vec<Arc<Shared>>>> = const { std::cell::RefCell::new(None) };
}

/// Whether this thread holds its requests ([`hold_requests`]); if so, `shared`'s drivers are woken
/// when the hold ends.
fn held(shared: &Arc<Shared>) -> bool {
    HELD.with_borrow_mut(|held| match held {
        Some(programs) => {
            if !programs.iter().any(|program| Arc::ptr_eq(program, shared)) {
                programs.push(Arc::clone(shared));
            }
            true
        }
        None => false,
    })
}

/// Holds the requests this thread asks of programs of the pipelined form until the value is
/// dropped: a caller about to ask many at once (a worker polling its loops) wakes each program's
/// drivers once, so that they go out together, in one write per process, instead of one by one.
/// Waiting for an answer on this thread ([`super::block_on`]) lets them go first.
pub struct Held(());

/// See [`Held`]. A hold that ends lets go of every request this thread held.
pub fn hold_requests() -> Held {
    HELD.with_borrow_mut(|held| {
        held.get_or_insert_with(Vec::new);
    });
    Held(())
}

impl Drop for Held {
    fn drop(&mut self) {
        let programs = HELD.with_borrow_mut(Option::take);
        programs.into_iter().flatten().for_each(|program| wake(&program));
    }
}

/// Wakes the drivers of every program this thread holds requests for (the hold goes on).
pub(super) fn release_held() {
    let programs = HELD.with_borrow_mut(|held| held.as_mut().map(std::mem::take));
    programs.into_iter().flatten().for_each(|program| wake(&program));
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

/// A message written to a process and not answered yet.
struct Sent {
    what: Waits,
    at: Instant,
}

/// What a message in flight waits for.
enum Waits {
    /// The answer to a request, about the task open under the key when it names one.
    Request(Job, Option<u64>),
    /// The answer to the open of the task of this key.
    Open(u64),
}

/// The tasks open on a process: each task's key by where its JSON is (the JSON is held, so no
/// other task's can be there meanwhile), in the order they were opened; and the keys whose open
/// is not answered yet.
#[derive(Default)]
struct Opened {
    keys: HashMap<usize, (u64, Arc<str>)>,
    order: VecDeque<usize>,
    next_key: u64,
    opening: HashSet<u64>,
}

impl Opened {
    /// The key `task` is open under, and whether it is to be opened now (then counted open).
    fn key_for(&mut self, task: &Arc<str>) -> (u64, bool) {
        let at = Arc::as_ptr(task) as *const u8 as usize;
        if let Some((key, _)) = self.keys.get(&at) {
            return (*key, false);
        }
        self.next_key += 1;
        self.keys.insert(at, (self.next_key, Arc::clone(task)));
        self.order.push_back(at);
        self.opening.insert(self.next_key);
        (self.next_key, true)
    }

    /// Forgets the task open under `key` (its open was refused): the next request opens it again.
    fn forget(&mut self, key: u64) {
        self.opening.remove(&key);
        if let Some(at) = self.keys.iter().find_map(|(&at, (open, _))| (*open == key).then_some(at)) {
            self.keys.remove(&at);
            self.order.retain(|&open| open != at);
        }
    }

    /// The `close` line of the oldest tasks past `most`, which are then no longer open.
    fn close_past(&mut self, most: usize) -> Option<String> {
        let mut keys = Vec::new();
        while self.order.len() > most {
            let at = self.order.pop_front().expect("more than most");
            keys.extend(self.keys.remove(&at).map(|(key, _)| key));
        }
        (!keys.is_empty()).then(|| protocol::close_line(&keys))
    }
}

/// Starts a driver thread, named for the program's role (`critbench-critic-driver`).
fn spawn_driver(role: &str, drive: impl FnOnce() + Send + 'static) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new().name(format!("critbench-{role}-driver")).spawn(drive).expect("a driver thread starts")
}

/// Driver `index`: serves the queue on one process at a time (`child`, or one it starts) until
/// the program is dropped and nothing it holds waits for an answer.
fn drive(shared: &Shared, index: usize, child: Option<Child>) {
    let mut waiting: BTreeMap<u64, Sent> = BTreeMap::new();
    let served = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| serve(shared, index, child, &mut waiting)));
    if served.is_err() {
        // A bug here must not leave the requests awaiting these answers waiting forever: each gets
        // an error, and the queue is served by the other drivers (or a fresh one, started as needed).
        lock(&shared.queue).nudges[index] = None;
        for sent in std::mem::take(&mut waiting).into_values() {
            if let Waits::Request(job, _) = sent.what {
                job.give(Err(Failure::DriverFailed));
            }
        }
        lock(&shared.queue).drivers -= 1;
    }
}

/// [`drive`]'s work: the messages it wrote and awaits answers to are in `waiting`, by id.
fn serve(shared: &Shared, index: usize, mut child: Option<Child>, waiting: &mut BTreeMap<u64, Sent>) {
    let timeout = shared.starter.timeout;
    if let Some(first) = &child {
        lock(&shared.queue).nudges[index] = Some(first.program.nudge());
    }
    let mut opened = Opened::default();
    // When the last answer to the oldest request came: the next oldest is timed from then.
    let mut answered_at = Instant::now();
    // Why the process stopped taking input: nothing more is written to it, and the answers it wrote
    // before are read before the request charged with its end is chosen.
    let mut unwritable: Option<Broken> = None;
    loop {
        if let Some(broken) = unwritable.take_if(|_| waiting.is_empty()) {
            let program = child.take().expect("a process stopped taking input");
            break_down(shared, index, program, broken, waiting);
            opened = Opened::default();
        }
        // Opens count against the room too, so it may be spent already.
        let room = if unwritable.is_some() { 0 } else { shared.per_process.saturating_sub(waiting.len()) };
        let Some(jobs) = take(shared, waiting.is_empty(), room) else {
            break;
        };
        if !jobs.is_empty() {
            let mut program = match child.take() {
                Some(program) => program,
                None => match shared.starter.start() {
                    Ok(program) => {
                        lock(&shared.queue).nudges[index] = Some(program.program.nudge());
                        program
                    }
                    Err(error) => {
                        // A program that cannot start costs the requests it was to serve.
                        let error = Arc::new(error);
                        for job in jobs {
                            job.give(Err(Failure::NotStarted(Arc::clone(&error))));
                        }
                        continue;
                    }
                },
            };
            if waiting.is_empty() {
                // A line written since the last answer answers nothing.
                let unasked = match program.program.line_waiting() {
                    Some(Ok(line)) => Some(Broken::unasked(&line)),
                    Some(Err(broken)) => Some(broken),
                    None => None,
                };
                if let Some(broken) = unasked {
                    // Charged to the request it would have been taken for; the rest go to a fresh process.
                    lock(&shared.queue).nudges[index] = None;
                    let mut jobs = jobs.into_iter();
                    if let Some(first) = jobs.next() {
                        first.give(Err(shared.starter.stop(program, broken)));
                    }
                    requeue(shared, jobs);
                    opened = Opened::default();
                    continue;
                }
            }
            let now = Instant::now();
            if waiting.is_empty() {
                answered_at = now;
            }
            let text = lines(shared, &mut program, &mut opened, jobs, waiting, now);
            if let Err(source) = program.program.write_within(text.as_bytes(), Some(timeout)) {
                unwritable = Some(if source.kind() == std::io::ErrorKind::TimedOut {
                    Broken::Timeout(timeout)
                } else {
                    Broken::Send { what: "the requests", source }
                });
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
                    match read(shared, program, &text, waiting, &mut opened) {
                        Ok(Some(id)) => {
                            if waiting.keys().next().is_none_or(|&oldest| oldest > id) {
                                answered_at = arrived;
                            }
                        }
                        // A service call answered: the program works on.
                        Ok(None) => answered_at = Instant::now(),
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
        // A process that died while critbench wrote to it: how it ended says more than the write.
        let broken = match unwritable.take() {
            Some(write) if !broken.died() => write,
            _ => broken,
        };
        break_down(shared, index, program, broken, waiting);
        opened = Opened::default();
    }
    if let Some(program) = child {
        program.program.close();
    }
}

/// The lines of `jobs` for `program`, each then waiting for its answer: the close of the tasks
/// past what the requests in flight need, then for each request the open of its task when the
/// process does not hold it, and the request.
fn lines(
    shared: &Shared,
    program: &mut Child,
    opened: &mut Opened,
    jobs: Vec<Job>,
    waiting: &mut BTreeMap<u64, Sent>,
    now: Instant,
) -> String {
    let role = shared.starter.launch.role;
    let mut text = String::new();
    // The tasks the requests in flight name stay open; older ones are closed first.
    if let Some(close) = opened.close_past(shared.per_process.max(waiting.len()) + jobs.len()) {
        text.push_str(&close);
        text.push('\n');
    }
    for job in jobs {
        let key = job.ask.task.as_ref().map(|task| {
            let (key, new) = opened.key_for(task);
            if new {
                let id = program.take_id();
                text.push_str(&protocol::open_line(id, key, task));
                text.push('\n');
                waiting.insert(id, Sent { what: Waits::Open(key), at: now });
            }
            key
        });
        let id = program.take_id();
        let line = protocol::request_line(role, id, key, &job.ask.body);
        text.push_str(&super::ask::with_model(line, job.ask.model.as_deref()));
        text.push('\n');
        waiting.insert(id, Sent { what: Waits::Request(job, key), at: now });
    }
    text
}

/// Reads one line of the program's: an answer is handed to its request (`Some(id)`), a service
/// call answered (`None`); `Err` when the line breaks the protocol.
fn read(
    shared: &Shared,
    program: &mut Child,
    line: &[u8],
    waiting: &mut BTreeMap<u64, Sent>,
    opened: &mut Opened,
) -> Result<Option<u64>, Broken> {
    let role = shared.starter.launch.role;
    let first = waiting.keys().next().copied().unwrap_or(program.next_id);
    let (id, reply) = protocol::pipelined_reply(role, line, (first, program.next_id), |id| waiting.contains_key(&id))?;
    let message = || excerpt(String::from_utf8_lossy(line).trim_end());
    let wrong = |what, wrong| ProtocolError::WrongAnswer {
        role: role.name,
        answers: role.answers,
        what,
        id,
        wrong,
        message: message(),
    };
    let sent = waiting.get_mut(&id).expect("the answer's id is waiting");
    let answer = match (&mut sent.what, reply) {
        (Waits::Request(job, _), Reply::Service { name, request }) => {
            let answer = shared.starter.serve(&name, &request, job.ask.scope.as_mut(), line)?;
            program.program.send(&protocol::service_answer_line(id, answer)).map_err(Broken::AnswerService)?;
            return Ok(None);
        }
        // A request is written right after its task's open: a critic's answer to it must not come
        // before the open's, which says whether there is a task to critique.
        (Waits::Request(_, Some(key)), Reply::Answer(_) | Reply::Error(_))
            if role.open_first && opened.opening.contains(&*key) =>
        {
            let key = *key;
            return Err(ProtocolError::BeforeOpen { role: role.name, id, key, message: message() }.into());
        }
        (Waits::Request(..), Reply::Answer(text)) => Some(Ok(text)),
        (Waits::Request(..), Reply::Error(error)) => Some(Err(Failure::Answered(error))),
        (Waits::Request(..), Reply::Opened) => return Err(wrong("request", "`ok`").into()),
        (Waits::Open(_), Reply::Answer(_)) => return Err(wrong("the open of a task", "an answer").into()),
        (Waits::Open(_), Reply::Service { .. }) => return Err(wrong("the open of a task", "a service call").into()),
        (Waits::Open(key), Reply::Opened) => {
            opened.opening.remove(&*key);
            None
        }
        // The task is not open on the process; the requests written behind the open are answered
        // by the program, and the next request about the task opens it again.
        (Waits::Open(key), Reply::Error(_)) => {
            opened.forget(*key);
            None
        }
    };
    let sent = waiting.remove(&id).expect("the answer's id is waiting");
    if let (Waits::Request(job, _), Some(answer)) = (sent.what, answer) {
        job.give(answer);
    }
    Ok(Some(id))
}

/// Up to `room` queued requests; with nothing in flight (`idle`), waits for one. `None`: the
/// program is closed and there is nothing left to do.
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
    // Each driver takes its share of what is queued (every driver is woken for it), so that
    // every process works.
    let share = queue.jobs.len().div_ceil(queue.drivers.max(1));
    let count = room.min(share);
    let jobs: Vec<Job> = queue.jobs.drain(..count).collect();
    let more = !queue.jobs.is_empty();
    drop(queue);
    if more {
        // What is left is another driver's.
        shared.work.notify_one();
    }
    Some(jobs)
}

/// Puts `jobs` back at the front of the queue, in order, for a fresh process.
fn requeue(shared: &Shared, jobs: impl IntoIterator<Item = Job>) {
    let mut queue = lock(&shared.queue);
    for (place, job) in jobs.into_iter().enumerate() {
        queue.jobs.insert(place, job);
    }
    drop(queue);
    shared.work.notify_one();
}

/// Stops a process that broke down: the oldest request waiting is charged with why, the others
/// go back to the front of the queue, in order, for a fresh process.
fn break_down(shared: &Shared, index: usize, program: Child, broken: Broken, waiting: &mut BTreeMap<u64, Sent>) {
    lock(&shared.queue).nudges[index] = None;
    let error = shared.starter.stop(program, broken);
    // The opens waiting go with the process: a fresh one is sent each task again.
    let mut sent = std::mem::take(waiting).into_values().filter_map(|sent| match sent.what {
        Waits::Request(job, _) => Some(job),
        Waits::Open(_) => None,
    });
    if let Some(oldest) = sent.next() {
        oldest.give(Err(error));
    }
    requeue(shared, sent);
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
