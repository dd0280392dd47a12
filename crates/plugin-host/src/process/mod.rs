//! Critics in child processes speaking JSON lines over stdin/stdout (`docs/PROTOCOL.md`): a
//! command critic in any language, or a plugin library hosted by `critbench plugin-worker`.
//!
//! A child that crashes, hangs past the timeout, runs out of its memory limit or writes anything
//! but protocol JSON is killed with its whole process group; the call is an error (the caller
//! retries it, `docs/REFERENCE.md`, Critique) and the next call starts a fresh child. A
//! thread-safe critic gets up to [`Isolation::children`] children, one per concurrent call; any
//! other exactly one. Children die with critbench however it ends ([`crate::process_group`]), and
//! they see their stdin close when the critic is dropped.
//!
//! A child of the simple form answers one request at a time, and an answer is taken only when
//! its id says it answers the request being asked ([`protocol::reply`]).
//!
//! A child of the pipelined form takes several requests at once ([`ProcessCritic::call_many`]):
//! they are written in one go and their answers read as they come, each landing on the request its
//! id names ([`protocol::pipelined_reply`]). When such a child fails, the request charged is the
//! oldest still waiting (the one an in-order child was working on); the others in flight go to a
//! fresh child, not counted as an attempt, so one bad request costs one round. It is also sent
//! each task once: a round of a loop ([`Asked::Round`]) goes to a child as a small request about
//! the task's key, shared by the task's loops in flight ([`ProcessCritic::key_for`]: a variant
//! comparison's arms open the task once per child), and the task is opened on that child first
//! when it is not open there (a fresh child has nothing open, so a task is opened again after a
//! restart), the round written right behind the open. The child must answer the open first: a
//! round answered while its open waits is a protocol error ([`ProtocolError::BeforeOpen`]). The
//! keys whose loops all ended ([`ProcessCritic::loop_ended`]) are closed on the children holding
//! them, in one `close` line before their next batch.

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::ffi::OsString;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError, channel};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use critbench_core::ScoreRange;
use serde::Deserialize;

use crate::info::{CriticInfo, Isolation, IsolationMode};
use crate::library::excerpt;
use crate::process_group;
use crate::protocol::{self, ConfigRefused, Form, ProtocolError, Reply, text_of};
use crate::request::Asked;
use crate::services::{CallScope, Host};
use crate::{CallError, PluginError};

/// Why a read failed when the child closed its stdout (usually: it died).
const CLOSED: &str = "the critic process closed its output";
/// How the message starts when a line could not be written to the child (usually: it died).
const SEND_FAILED: &str = "cannot send";
/// The least time a child gets to say hello and take its config.
const MIN_STARTUP: Duration = Duration::from_secs(30);
/// The longest line read from a child; a longer one is garbage.
const MAX_LINE: usize = 64 << 20;
/// How often a child that is silent is checked for having died.
const EXIT_CHECK: Duration = Duration::from_millis(100);

/// The first line a critic writes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Hello {
    protocol: u32,
    /// The pipelined form; the simple one without.
    #[serde(default)]
    pipelined: bool,
    name: String,
    version: String,
    score_range: [f64; 2],
    #[serde(default)]
    thread_safe: bool,
    #[serde(default)]
    policy_dependent: bool,
    /// The critic's info JSON (`critbench.h`): issue types, required services, hints.
    #[serde(default)]
    info: Option<serde_json::Value>,
}

/// How to start a child.
#[derive(Clone, Debug)]
pub(crate) struct Launch {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub cwd: Option<PathBuf>,
    /// How the critic is named in messages: its command line or library path.
    pub label: String,
}

/// A critic served by child processes.
pub struct ProcessCritic {
    info: Arc<CriticInfo>,
    launch: Launch,
    /// The config sent after the hello.
    config: serde_json::Value,
    timeout: Duration,
    memory_mb: Option<u64>,
    max_children: usize,
    /// The critic's hello chooses the pipelined form: it takes several requests at once and reads
    /// each task once per process, under a key its loops in flight share.
    pipelined: bool,
    /// The next task key ([`ProcessCritic::new_key`]).
    next_key: AtomicU64,
    /// Boxed: a critic is passed around by value, and the pool is most of its size.
    pool: Box<Mutex<Pool>>,
    freed: Condvar,
    /// The run's services, which answer the children's service requests.
    host: Arc<Host>,
}

#[derive(Default)]
struct Pool {
    idle: Vec<Child>,
    /// Children idle or in use.
    live: usize,
    /// Threads waiting for a child.
    waiting: usize,
    /// How many live children hold each task key open.
    held: HashMap<u64, usize>,
    /// The keys whose loops all ended, still open on some child; each child closes its own before
    /// its next batch.
    closing: Vec<u64>,
    /// The key of each task whose loops are in flight, by where its text is (the loops of a task
    /// borrow one text, which lives while they do).
    tasks: HashMap<(usize, usize), SharedKey>,
}

/// A task's key, its text, and how many loops in flight ask about it.
struct SharedKey {
    key: u64,
    task: Arc<str>,
    loops: usize,
}

/// Where the text of `task` is: the same for every loop of a task, which borrow one text.
fn address(task: &str) -> (usize, usize) {
    (task.as_ptr() as usize, task.len())
}

impl Pool {
    /// Accounts for `key` no longer open on one child.
    fn let_go(&mut self, key: u64) {
        if let Some(count) = self.held.get_mut(&key) {
            *count -= 1;
            if *count == 0 {
                self.held.remove(&key);
                self.closing.retain(|&closing| closing != key);
            }
        }
    }
}

struct Child {
    process: std::process::Child,
    stdin: Option<ChildStdin>,
    lines: Lines,
    form: Form,
    /// The id of the next request; the config is 0.
    next_id: u64,
    /// Raised once a child of the pipelined form took its config: its reader then lets several
    /// messages come in one write.
    pipelined: Arc<AtomicBool>,
    /// The task keys open on this process.
    open: HashSet<u64>,
    /// What a [`Nudge`] for this child sends through.
    nudge: Sender<Delivery>,
}

/// A line from the child (or why reading stopped), and when the reader took it from the pipe.
struct Line {
    bytes: Result<Vec<u8>, Broken>,
    arrived: Instant,
}

/// What a child's reader thread hands over: every line that came in one read, together; the end
/// of the child's output. A [`Nudge`] comes the same way.
enum Delivery {
    Lines(Vec<Line>),
    End,
    Nudge,
}

/// The child's lines as its reader thread hands them over: every line that came in one read
/// together, so that a batch of answers costs the host a wake-up or two, not one per answer.
/// Taken one at a time, in order. The end of the child's output reads as the channel's
/// disconnection (the child's [`Nudge`] keeps the channel itself open).
struct Lines {
    from_reader: Receiver<Delivery>,
    ready: std::cell::RefCell<std::collections::VecDeque<Line>>,
    ended: std::cell::Cell<bool>,
}

impl Lines {
    fn new(from_reader: Receiver<Delivery>) -> Lines {
        Lines { from_reader, ready: Default::default(), ended: Default::default() }
    }

    fn try_recv(&self) -> Result<Line, TryRecvError> {
        loop {
            if let Some(line) = self.ready.borrow_mut().pop_front() {
                return Ok(line);
            }
            if self.ended.get() {
                return Err(TryRecvError::Disconnected);
            }
            match self.from_reader.try_recv()? {
                Delivery::Lines(lines) => self.ready.borrow_mut().extend(lines),
                Delivery::End => self.ended.set(true),
                Delivery::Nudge => {}
            }
        }
    }

    /// Whether a line is ready to be taken without waiting.
    fn any_ready(&self) -> bool {
        match self.try_recv() {
            Ok(line) => {
                self.ready.borrow_mut().push_front(line);
                true
            }
            Err(_) => false,
        }
    }

    fn recv_timeout(&self, wait: Duration) -> Result<Line, RecvTimeoutError> {
        let until = Instant::now() + wait;
        loop {
            if let Some(line) = self.recv_or_nudge(until.saturating_duration_since(Instant::now()))? {
                return Ok(line);
            }
        }
    }

    /// The next line, or `None` when a [`Nudge`] comes first.
    fn recv_or_nudge(&self, wait: Duration) -> Result<Option<Line>, RecvTimeoutError> {
        let until = Instant::now() + wait;
        loop {
            if let Some(line) = self.ready.borrow_mut().pop_front() {
                return Ok(Some(line));
            }
            if self.ended.get() {
                return Err(RecvTimeoutError::Disconnected);
            }
            match self.from_reader.recv_timeout(until.saturating_duration_since(Instant::now()))? {
                Delivery::Lines(lines) => self.ready.borrow_mut().extend(lines),
                Delivery::End => self.ended.set(true),
                Delivery::Nudge => return Ok(None),
            }
        }
    }
}

/// Wakes a thread that waits for a child's answers in [`ProcessCritic::call_batches`], so that
/// it takes the batch just made ready without waiting for the next answer
/// ([`Batches::nudge_with`]).
pub struct Nudge(Sender<Delivery>);

impl Nudge {
    /// Wakes the thread, if it waits on this nudge's child; it then looks for a batch ready.
    pub fn nudge(&self) {
        // A child gone has no one waiting on it.
        let _ = self.0.send(Delivery::Nudge);
    }
}

/// Why a child can no longer be used. Its text is the failure a round records, unless the child
/// died, when how it ended says more (`finish`).
#[derive(Debug, thiserror::Error)]
enum Broken {
    #[error("cannot start `{label}`: {source}")]
    Spawn { label: String, source: std::io::Error },
    #[error("cannot start a reader thread: {0}")]
    ReaderThread(std::io::Error),
    #[error("the hello line is not valid: {0}")]
    BadHello(serde_json::Error),
    #[error(
        "the hello line needs a non-empty name and a finite, non-empty score_range; got {name:?} and [{min}, {max}]"
    )]
    HelloRange { name: String, min: f64, max: f64 },
    /// Writing to the child failed: it died or closed its input.
    #[error("{SEND_FAILED} {what}: {source}")]
    Send { what: &'static str, source: std::io::Error },
    #[error("cannot answer a service call: {0}")]
    AnswerService(std::io::Error),
    /// The child's output closed.
    #[error("{CLOSED}")]
    Closed,
    #[error("no answer within {} s", .0.as_secs_f64())]
    Timeout(Duration),
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    #[error("the critic wrote a line after its last answer, unasked: {0}")]
    Unasked(String),
    #[error("the critic wrote more after a message without waiting for critbench: {0}")]
    Hurried(String),
    #[error("the critic wrote a line longer than {} MiB", MAX_LINE >> 20)]
    LineTooLong,
    #[error("the critic wrote bytes that are not valid UTF-8 (at byte {at}): {line}")]
    NotUtf8 { at: usize, line: String },
    #[error("the critic wrote a line that is not protocol JSON: {0}")]
    NotJson(String),
    #[error(
        "the critic wrote a message with the key `{key}` twice (JSON readers disagree on which copy wins; give \
         each key once): {line}"
    )]
    RepeatedKey { key: String, line: String },
}

impl Broken {
    /// Whether the child went silent because it died (its output closed, or it stopped reading).
    fn died(&self) -> bool {
        matches!(self, Broken::Closed | Broken::Send { .. })
    }
}

/// What a message in flight on a child of the pipelined form waits for.
#[derive(Clone, Copy)]
enum Waiting {
    /// The answer to the request of this index.
    Request(usize),
    /// The answer to the open of task `key`, asked by the round of index `first` (charged with a
    /// failure while the open is the oldest message waiting).
    Open { key: u64, first: usize },
}

impl Waiting {
    /// The request charged when the child fails while this waits.
    fn charged(self) -> usize {
        match self {
            Waiting::Request(index) | Waiting::Open { first: index, .. } => index,
        }
    }
}

/// The batches of [`ProcessCritic::call_batches`]: where they come from, and where their
/// answers go.
pub trait Batches {
    /// The next batch when one is ready now (never waits): each request with the scope of its
    /// critique.
    fn next(&mut self) -> Option<Vec<(Asked, CallScope)>>;
    /// The answers of the oldest batch not yet answered, in its order, each with its scope as the
    /// child's service calls left it.
    fn answered(&mut self, answers: Vec<(Result<String, CallError>, CallScope)>);
    /// What wakes the thread sending the batches while it waits for a child's answers (one per
    /// child it sends to, the last one given the one that counts): nudged after a batch is made
    /// ready, it takes the batch at once. Without, a batch made ready is taken at the next answer.
    fn nudge_with(&mut self, nudge: Nudge) {
        let _ = nudge;
    }
}

/// The requests of one [`ProcessCritic::call_many`] or [`ProcessCritic::call_batches`], each
/// known by its index from the first request the flight was given; the requests of batches
/// handed back are gone.
struct Flight<R> {
    /// The requests from index `base` on.
    requests: VecDeque<Asking<R>>,
    base: usize,
    /// The batches not handed back, the oldest first: how many requests each holds, and how many
    /// of those have no answer yet.
    batches: VecDeque<(usize, usize)>,
    /// The number of the oldest batch not handed back (batches are numbered from 0 as they come).
    first_batch: usize,
}

struct Asking<R> {
    request: R,
    scope: CallScope,
    answer: Option<Result<String, CallError>>,
    batch: usize,
}

impl<R> Default for Flight<R> {
    fn default() -> Self {
        Flight { requests: VecDeque::new(), base: 0, batches: VecDeque::new(), first_batch: 0 }
    }
}

impl<R: Borrow<Asked>> Flight<R> {
    fn push_batch(&mut self, batch: impl IntoIterator<Item = (R, CallScope)>) {
        let number = self.first_batch + self.batches.len();
        let before = self.requests.len();
        self.requests.extend(batch.into_iter().map(|(request, scope)| Asking {
            request,
            scope,
            answer: None,
            batch: number,
        }));
        let count = self.requests.len() - before;
        self.batches.push_back((count, count));
    }

    /// The index the next request will have.
    fn len(&self) -> usize {
        self.base + self.requests.len()
    }

    fn request(&self, index: usize) -> &Asked {
        self.requests[index - self.base].request.borrow()
    }

    fn scope(&mut self, index: usize) -> &mut CallScope {
        &mut self.requests[index - self.base].scope
    }

    fn is_answered(&self, index: usize) -> bool {
        index < self.base || self.requests[index - self.base].answer.is_some()
    }

    fn answer(&mut self, index: usize, answer: Result<String, CallError>) {
        let asking = &mut self.requests[index - self.base];
        if asking.answer.is_none() {
            self.batches[asking.batch - self.first_batch].1 -= 1;
        }
        asking.answer = Some(answer);
    }

    /// The requests without an answer, the oldest first.
    fn unanswered(&self) -> Vec<usize> {
        (self.base..self.len()).filter(|&index| !self.is_answered(index)).collect()
    }

    /// The answers of the oldest batch and the scopes of its requests, in its order, once each
    /// has its answer; the batch is then gone.
    fn take_answered(&mut self) -> Option<Vec<(Result<String, CallError>, CallScope)>> {
        let &(count, 0) = self.batches.front()? else { return None };
        self.batches.pop_front();
        self.first_batch += 1;
        self.base += count;
        Some(self.requests.drain(..count).map(|asking| (asking.answer.expect("answered"), asking.scope)).collect())
    }
}

/// Where a flight's batches after its first come from, and where its answered batches go.
trait Feed<R> {
    /// Adds the next batch to `flight` when one is ready now; whether it did.
    fn more(&mut self, flight: &mut Flight<R>) -> bool;
    /// `child` now takes the batches.
    fn sending_to(&mut self, child: &Child) {
        let _ = child;
    }
    /// Hands back the batches at the front of `flight` that have all their answers.
    fn deliver(&mut self, flight: &mut Flight<R>);
}

/// [`ProcessCritic::call_many`]'s one batch, taken back when all is answered.
struct NoMore;

impl<R> Feed<R> for NoMore {
    fn more(&mut self, _: &mut Flight<R>) -> bool {
        false
    }

    fn deliver(&mut self, _: &mut Flight<R>) {}
}

/// [`ProcessCritic::call_batches`]'s batches.
struct Fed<'a> {
    batches: &'a mut dyn Batches,
    critic: &'a ProcessCritic,
}

impl Feed<Asked> for Fed<'_> {
    fn more(&mut self, flight: &mut Flight<Asked>) -> bool {
        // A thread waiting for a child gets this one once the batches taken are answered.
        if self.critic.pool.lock().unwrap_or_else(|p| p.into_inner()).waiting > 0 {
            return false;
        }
        match self.batches.next() {
            Some(batch) => {
                flight.push_batch(batch);
                true
            }
            None => false,
        }
    }

    fn deliver(&mut self, flight: &mut Flight<Asked>) {
        while let Some(answers) = flight.take_answered() {
            self.batches.answered(answers);
        }
    }

    fn sending_to(&mut self, child: &Child) {
        self.batches.nudge_with(Nudge(child.nudge.clone()));
    }
}

/// How one exchange ended.
enum Answer {
    Critique(String),
    Error(String),
}

impl ProcessCritic {
    /// Starts the first child, reads its hello and hands it the config. `path` and `sha256` are
    /// what the manifest records as the critic's file; `command` its command line, if any.
    pub(crate) fn open(
        launch: Launch,
        config_json: &str,
        isolation: &Isolation,
        path: PathBuf,
        command: Option<Vec<String>>,
        sha256: String,
        host: &Arc<Host>,
    ) -> Result<ProcessCritic, PluginError> {
        let config: serde_json::Value = serde_json::from_str(config_json).map_err(|e| PluginError::ConfigRejected {
            plugin: launch.label.clone(),
            config: config_json.to_string(),
            message: format!("the config is not JSON: {e}"),
        })?;
        let mut critic = ProcessCritic {
            info: Arc::new(CriticInfo {
                name: String::new(),
                version: String::new(),
                path,
                command,
                sha256,
                range: ScoreRange { min: 0.0, max: 1.0 },
                thread_safe: false,
                policy_dependent: false,
                declared: Default::default(),
                isolation: IsolationMode::Process,
                builtin: false,
            }),
            launch,
            config,
            timeout: isolation.timeout,
            memory_mb: isolation.memory_mb,
            max_children: 1,
            pipelined: false,
            next_key: AtomicU64::new(1),
            pool: Box::default(),
            freed: Condvar::new(),
            host: Arc::clone(host),
        };
        let (child, hello) = critic.start().map_err(|failure| match failure {
            StartFailure::Rejected { message, .. } => PluginError::ConfigRejected {
                plugin: critic.launch.label.clone(),
                config: config_json.to_string(),
                message,
            },
            StartFailure::Broken(message) => PluginError::Protocol { critic: critic.launch.label.clone(), message },
        })?;
        let info = Arc::make_mut(&mut critic.info);
        info.name = hello.name;
        info.version = hello.version;
        info.range = ScoreRange { min: hello.score_range[0], max: hello.score_range[1] };
        info.thread_safe = hello.thread_safe;
        info.policy_dependent = hello.policy_dependent;
        if let Some(declared) = &hello.info {
            info.declared =
                critbench_abi::PluginInfo::parse(&declared.to_string()).map_err(|message| PluginError::BadInfo {
                    plugin: info.name.clone(),
                    message: format!("the hello line's `info`: {message}"),
                })?;
        }
        critic.max_children = if hello.thread_safe { isolation.children.max(1) } else { 1 };
        critic.pipelined = child.form == Form::Pipelined;
        critic.pool = Box::new(Mutex::new(Pool { idle: vec![child], live: 1, ..Pool::default() }));
        Ok(critic)
    }

    /// What the manifest records about the critic.
    pub fn info(&self) -> &Arc<CriticInfo> {
        &self.info
    }

    /// Records that the child serves a critic compiled into critbench.
    pub(crate) fn mark_builtin(&mut self) {
        Arc::make_mut(&mut self.info).builtin = true;
    }

    /// Whether the critic speaks the pipelined form: it takes several requests at once, so that
    /// [`ProcessCritic::call_many`] is worth a caller's while, and reads a loop's task once per
    /// process, so that a loop's rounds are asked as [`Asked::Round`].
    pub fn pipelined(&self) -> bool {
        self.pipelined
    }

    /// The key a loop's rounds of `task` are asked under, and the task's text they carry: the key
    /// of the task's other loops in flight, so that a process opens the task once for all of them,
    /// or a key never given out before. Every key taken is given back by
    /// [`ProcessCritic::loop_ended`].
    pub(crate) fn key_for(&self, task: &str) -> (u64, Arc<str>) {
        let new_key = || self.next_key.fetch_add(1, Ordering::Relaxed);
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        match pool.tasks.entry(address(task)) {
            // The same text at the same place: another loop of the task (the text outlives every
            // loop that borrows it, so no other task's text can be there meanwhile).
            std::collections::hash_map::Entry::Occupied(mut shared) if *shared.get().task == *task => {
                let shared = shared.get_mut();
                shared.loops += 1;
                (shared.key, Arc::clone(&shared.task))
            }
            std::collections::hash_map::Entry::Occupied(_) => (new_key(), Arc::from(task)),
            std::collections::hash_map::Entry::Vacant(place) => {
                let shared = place.insert(SharedKey { key: new_key(), task: Arc::from(task), loops: 1 });
                (shared.key, Arc::clone(&shared.task))
            }
        }
    }

    /// A loop that asked about `task` under `key` ([`ProcessCritic::key_for`]) ended: once no
    /// loop in flight asks about the key, the children that hold it open close it before their
    /// next batch.
    pub(crate) fn loop_ended(&self, key: u64, task: &str) {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        if let std::collections::hash_map::Entry::Occupied(mut shared) = pool.tasks.entry(address(task))
            && shared.get().key == key
        {
            shared.get_mut().loops -= 1;
            if shared.get().loops > 0 {
                return;
            }
            shared.remove();
        }
        if pool.held.contains_key(&key) {
            pool.closing.push(key);
        }
    }

    /// Sends one request to an idle child (starting one if needed), for the critique `scope`
    /// when given (the child's service requests are answered in it); returns the critique JSON or
    /// the reason there is none.
    pub fn call(&self, request: &str, scope: Option<&mut CallScope>) -> Result<String, CallError> {
        let child = self.acquire()?;
        self.call_on(child, request, scope)
    }

    /// Sends every request, each for its critique scope, and returns their answers in order, as
    /// [`ProcessCritic::call`] would one by one: to a child of the pipelined form all at once, to
    /// one of the simple form one at a time. A child that fails costs the request charged with it (the oldest waiting)
    /// its answer; the rest go to a fresh child.
    pub fn call_many(&self, requests: &[&Asked], scopes: &mut [CallScope]) -> Vec<Result<String, CallError>> {
        let mut flight = Flight::default();
        flight.push_batch(requests.iter().copied().zip(scopes.iter_mut().map(std::mem::take)));
        self.drive(&mut flight, &mut NoMore);
        let (answers, done): (Vec<_>, Vec<_>) =
            flight.take_answered().expect("every request has its answer").into_iter().unzip();
        for (scope, done) in scopes.iter_mut().zip(done) {
            *scope = done;
        }
        answers
    }

    /// Sends the batches `batches` hands over, one after another, each answered as
    /// [`ProcessCritic::call_many`] would answer it, and hands back each batch's answers as soon
    /// as it has them all, in the order the batches came. To a critic of the pipelined form, a batch
    /// that comes while earlier ones wait for answers is written to the same process at once, so
    /// the process goes from one batch to the next without waiting for critbench to read its
    /// answers. Returns when every batch handed over is answered and none is ready.
    pub fn call_batches(&self, batches: &mut dyn Batches) {
        let Some(first) = batches.next() else { return };
        let mut flight = Flight::default();
        flight.push_batch(first);
        self.drive(&mut flight, &mut Fed { batches, critic: self });
    }

    /// Answers every request of `flight`, and those `feed` adds while it does.
    fn drive<R: Borrow<Asked>>(&self, flight: &mut Flight<R>, feed: &mut dyn Feed<R>) {
        loop {
            feed.deliver(flight);
            let left = flight.unanswered();
            let Some(&first) = left.first() else {
                if feed.more(flight) {
                    continue;
                }
                return;
            };
            let mut child = match self.acquire() {
                Ok(child) => child,
                Err(error) => {
                    for index in left {
                        flight.answer(index, Err(error.clone()));
                    }
                    continue;
                }
            };
            if child.form == Form::Simple {
                // Only a critic of the pipelined form is asked by rounds; one of the simple form is
                // sent the whole request.
                let whole = flight.request(first).whole().into_owned();
                let answer = self.call_on(child, &whole, Some(flight.scope(first)));
                flight.answer(first, answer);
                continue;
            }
            match self.pipeline(&mut child, flight, &left, feed) {
                Ok(None) => self.release(Some(child)),
                Ok(Some(broken)) => {
                    let failure = self.discard(child, Some(broken));
                    // A child that answered nothing before it failed costs the oldest its
                    // answer, so that a critic failing that way every time cannot loop.
                    if left.iter().all(|&index| !flight.is_answered(index)) {
                        flight.answer(first, Err(CallError::ChildStopped { failure }));
                    }
                }
                Err((charged, broken)) => {
                    let failure = self.discard(child, Some(broken));
                    flight.answer(charged, Err(CallError::ChildStopped { failure }));
                }
            }
        }
    }

    /// One request on `child`, which goes back to the pool unless it failed.
    fn call_on(&self, mut child: Child, request: &str, scope: Option<&mut CallScope>) -> Result<String, CallError> {
        match self.exchange(&mut child, request, scope) {
            Ok(answer) => {
                self.release(Some(child));
                match answer {
                    Answer::Critique(text) => Ok(text),
                    Answer::Error(message) => Err(CallError::Critic(message)),
                }
            }
            Err(broken) => {
                let failure = self.discard(child, Some(broken));
                Err(CallError::ChildStopped { failure })
            }
        }
    }

    /// Stops a child that is no longer usable ([`finish`]), forgets the tasks it held open and
    /// frees its place in the pool.
    fn discard(&self, mut child: Child, broken: Option<Broken>) -> String {
        let open = std::mem::take(&mut child.open);
        let failure = finish(child, broken);
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        for key in open {
            pool.let_go(key);
        }
        drop(pool);
        self.release(None);
        failure
    }

    fn acquire(&self) -> Result<Child, CallError> {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(child) = pool.idle.pop() {
                return Ok(child);
            }
            if pool.live < self.max_children {
                pool.live += 1;
                drop(pool);
                return match self.start() {
                    Ok((child, hello)) => match self.same_critic(&hello) {
                        Ok(()) => Ok(child),
                        Err(error) => {
                            finish(child, None);
                            self.release(None);
                            Err(error)
                        }
                    },
                    Err(failure) => {
                        self.release(None);
                        Err(CallError::Restart(failure.message().to_string()))
                    }
                };
            }
            pool.waiting += 1;
            pool = self.freed.wait(pool).unwrap_or_else(|p| p.into_inner());
            pool.waiting -= 1;
        }
    }

    /// Returns a healthy child to the pool, or accounts for a dead one.
    fn release(&self, child: Option<Child>) {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        match child {
            Some(child) => pool.idle.push(child),
            None => pool.live -= 1,
        }
        drop(pool);
        self.freed.notify_one();
    }

    /// A restarted child must be the critic the run started with.
    fn same_critic(&self, hello: &Hello) -> Result<(), CallError> {
        let info = &self.info;
        if hello.name != info.name
            || hello.version != info.version
            || hello.score_range != [info.range.min, info.range.max]
        {
            return Err(CallError::OtherCritic {
                found: format!(
                    "{} {} with range {}–{}",
                    hello.name, hello.version, hello.score_range[0], hello.score_range[1]
                ),
                expected: format!("{} {} with range {}", info.name, info.version, info.range),
            });
        }
        Ok(())
    }

    /// Spawns a child, reads its hello and sends the config.
    fn start(&self) -> Result<(Child, Hello), StartFailure> {
        let mut command = Command::new(&self.launch.program);
        command.args(&self.launch.args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        if let Some(cwd) = &self.launch.cwd {
            command.current_dir(cwd);
        }
        let mut process = process_group::spawn(command, self.memory_mb).map_err(|source| {
            StartFailure::Broken(Broken::Spawn { label: self.launch.label.clone(), source }.to_string())
        })?;
        let stdout = process.stdout.take().expect("stdout is piped");
        let stdin = process.stdin.take();
        if let Some(stdin) = &stdin {
            // Writes wait in `write_by`, which gives up at a deadline, never in the kernel.
            // SAFETY: F_GETFL/F_SETFL on a descriptor the ChildStdin owns.
            unsafe {
                let flags = libc::fcntl(stdin.as_raw_fd(), libc::F_GETFL);
                libc::fcntl(stdin.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
            }
        }
        let (sender, lines) = channel();
        let nudge = sender.clone();
        let pipelined = Arc::new(AtomicBool::new(false));
        let several = Arc::clone(&pipelined);
        let reader = std::thread::Builder::new()
            .name("critbench-critic-reader".into())
            .spawn(move || read_lines(stdout, sender, &several));
        let lines = Lines::new(lines);
        let mut child =
            Child { process, stdin, lines, form: Form::Simple, next_id: 1, pipelined, open: HashSet::new(), nudge };
        if let Err(e) = reader {
            return Err(StartFailure::Broken(finish(child, Some(Broken::ReaderThread(e)))));
        }
        // Starting an interpreter or loading a library can be slow on a busy machine.
        let startup = self.timeout.max(MIN_STARTUP);
        let hello = match next_message(&child, Instant::now() + startup, startup) {
            Ok((hello, _)) => hello,
            Err(broken) => return Err(StartFailure::Broken(finish(child, Some(broken)))),
        };
        if let Some(message) = hello.get("error") {
            let message = text_of(message);
            finish(child, None);
            return Err(StartFailure::Broken(message));
        }
        let hello: Hello = match serde_json::from_value(hello) {
            Ok(hello) => hello,
            Err(e) => return Err(StartFailure::Broken(finish(child, Some(Broken::BadHello(e))))),
        };
        child.form = match Form::from_hello(hello.protocol, hello.pipelined) {
            Ok(form) => form,
            Err(error) => return Err(StartFailure::Broken(finish(child, Some(error.into())))),
        };
        let [min, max] = hello.score_range;
        if hello.name.is_empty() || !(min.is_finite() && max.is_finite() && min < max) {
            let broken = Broken::HelloRange { name: hello.name, min, max };
            return Err(StartFailure::Broken(finish(child, Some(broken))));
        }
        let config_line = protocol::config_line(&self.config);
        if let Err(e) = send(&mut child, &config_line) {
            return Err(StartFailure::Broken(finish(child, Some(Broken::Send { what: "the config", source: e }))));
        }
        let answer = match next_message(&child, Instant::now() + startup, startup) {
            Ok((answer, _)) => protocol::config_answer(&answer).map_err(Broken::from),
            Err(broken) => Err(broken),
        };
        match answer {
            Ok(Ok(())) => {
                child.pipelined.store(child.form == Form::Pipelined, Ordering::Relaxed);
                Ok((child, hello))
            }
            Ok(Err(ConfigRefused(message))) => {
                finish(child, None);
                Err(StartFailure::Rejected { message })
            }
            Err(broken) => Err(StartFailure::Broken(finish(child, Some(broken)))),
        }
    }

    /// One request and its answer, serving the child's host-service calls in between. An `Err`
    /// means the child is no longer usable.
    fn exchange(&self, child: &mut Child, request: &str, mut scope: Option<&mut CallScope>) -> Result<Answer, Broken> {
        // A line written since the last answer answers nothing; read after this request is sent,
        // it would be taken for this request's answer.
        match child.lines.try_recv() {
            Ok(Line { bytes: Ok(line), .. }) => return Err(unasked(&line)),
            Ok(Line { bytes: Err(broken), .. }) => return Err(broken),
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => {}
        }
        let id = child.next_id;
        child.next_id += 1;
        let mut asked = Instant::now();
        send(child, &protocol::request_line(id, request))
            .map_err(|source| Broken::Send { what: "the request", source })?;
        let mut deadline = Instant::now() + self.timeout;
        loop {
            let (message, line) = self.answer_to(child, asked, deadline)?;
            match protocol::reply(&message, id)? {
                Reply::Service { name, request } => {
                    let answer = self.host.dispatch(&name, &request, scope.as_deref_mut());
                    asked = Instant::now();
                    send(child, &protocol::service_answer_line(id, answer)).map_err(Broken::AnswerService)?;
                    // The timeout measures the critic, not the host's services.
                    deadline = Instant::now() + self.timeout;
                }
                Reply::Critique(text) => return Ok(Answer::Critique(written_critique(&line).unwrap_or(text))),
                Reply::Error(message) => return Ok(Answer::Error(message)),
                // `reply` reads only requests' answers; an `ok` is not one.
                Reply::Opened => {
                    let message = excerpt(&message.to_string());
                    return Err(ProtocolError::WrongAnswer { what: "request", id, wrong: "`ok`", message }.into());
                }
            }
        }
    }

    /// The requests `left` (indices into `flight`) on a child of the pipelined form, written at
    /// once (after the closes of ended tasks this child holds, and the opens of tasks it does not
    /// hold, each round right behind its task's open); each answer is stored as it comes, and the
    /// batches `feed` makes ready meanwhile are written the same way, each before the host waits
    /// for the child again. An `Err` names the request charged with the child's failure (the oldest
    /// still waiting) and why; the child is then no longer usable. `Ok(Some(why))`: every request
    /// written was answered, but some could not be written: the child is no longer usable, and
    /// those are left unanswered.
    fn pipeline<R: Borrow<Asked>>(
        &self,
        child: &mut Child,
        flight: &mut Flight<R>,
        left: &[usize],
        feed: &mut dyn Feed<R>,
    ) -> Result<Option<Broken>, (usize, Broken)> {
        let oldest_first = left[0];
        // A line written since the last answer answers nothing (as in `exchange`).
        match child.lines.try_recv() {
            Ok(Line { bytes: Ok(line), .. }) => return Err((oldest_first, unasked(&line))),
            Ok(Line { bytes: Err(broken), .. }) => return Err((oldest_first, broken)),
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => {}
        }
        feed.sending_to(child);
        let first_id = child.next_id;
        // What each message in flight waits for, by id: the oldest first.
        let mut waiting: BTreeMap<u64, Waiting> = BTreeMap::new();
        // The keys whose open was written and not answered yet.
        let mut opening: HashSet<u64> = HashSet::new();
        // Why writing to the child stopped working (a failed write may leave part of a line).
        let mut unwritable: Option<Broken> = None;
        let batch = self.batch_lines(child, flight, left, &mut waiting, &mut opening);
        write_by(child, batch.as_bytes(), Some(Instant::now() + self.timeout))
            .map_err(|source| (oldest_first, self.unwritable(source)))?;
        // Each request gets the timeout from when the child could start on it: its sending, or
        // the answer before it.
        let mut deadline = Instant::now() + self.timeout;
        loop {
            // Before waiting for the child: the next batch, when one is ready.
            if unwritable.is_none() && (waiting.is_empty() || !child.lines.any_ready()) {
                let from_id = child.next_id;
                let nothing_in_flight = waiting.is_empty();
                let from = flight.len();
                let lines = if feed.more(flight) {
                    let more: Vec<usize> = (from..flight.len()).collect();
                    self.batch_lines(child, flight, &more, &mut waiting, &mut opening)
                } else {
                    String::new()
                };
                if nothing_in_flight && !lines.is_empty() {
                    // Nothing was in flight: the oldest of these is timed from now.
                    deadline = Instant::now() + self.timeout;
                }
                if !lines.is_empty()
                    && let Err(source) = write_by(child, lines.as_bytes(), Some(Instant::now() + self.timeout))
                {
                    // The child died or stopped reading while it worked on a request written
                    // before these: that request is charged when its answer fails to come, and
                    // these go to a fresh child, not counted as an attempt.
                    unwritable = Some(self.unwritable(source));
                    waiting.retain(|&id, _| id < from_id);
                }
            }
            let Some((&oldest, charged)) = waiting.first_key_value() else { break };
            let charged = charged.charged();
            let Some((line, _)) =
                next_line_or_nudge(child, deadline, self.timeout).map_err(|broken| (charged, broken))?
            else {
                // A batch was made ready: it goes out before the wait goes on.
                continue;
            };
            let in_flight = |id| waiting.contains_key(&id);
            let (id, reply) = match protocol::fast_pipelined_reply(&line, in_flight) {
                Some(read) => read,
                None => {
                    let message = parse_message(&line).map_err(|broken| (charged, broken))?;
                    let ids = (first_id.min(oldest), child.next_id);
                    match protocol::pipelined_reply(&message, ids, in_flight)
                        .map_err(|error| (charged, error.into()))?
                    {
                        (id, Reply::Critique(text)) => (id, Reply::Critique(written_critique(&line).unwrap_or(text))),
                        read => read,
                    }
                }
            };
            let wrong = |what, wrong| {
                // The line was read as JSON already; its excerpt is the message as the full path shows it.
                let message =
                    parse_message(&line).map_or_else(|_| String::new(), |message| excerpt(&message.to_string()));
                (charged, Broken::Protocol(ProtocolError::WrongAnswer { what, id, wrong, message }))
            };
            // A round is written right after its task's open: its answer must not come before the
            // open's, which says whether there is a task to critique.
            if let (Waiting::Request(index), Reply::Critique(_) | Reply::Error(_)) = (waiting[&id], &reply)
                && !opening.is_empty()
                && let Asked::Round(round) = flight.request(index)
                && opening.contains(&round.key)
            {
                let message = excerpt(String::from_utf8_lossy(&line).trim_end());
                return Err((charged, Broken::Protocol(ProtocolError::BeforeOpen { id, key: round.key, message })));
            }
            match (waiting[&id], reply) {
                (waits, Reply::Service { name, request }) => {
                    let answer = self.host.dispatch(&name, &request, Some(flight.scope(waits.charged())));
                    write_by(child, format!("{}\n", protocol::service_answer_line(id, answer)).as_bytes(), None)
                        .map_err(|e| (charged, Broken::AnswerService(e)))?;
                    // The timeout measures the critic, not the host's services.
                    deadline = Instant::now() + self.timeout;
                    continue;
                }
                (Waiting::Request(index), Reply::Critique(text)) => flight.answer(index, Ok(text)),
                (Waiting::Request(index), Reply::Error(message)) => {
                    flight.answer(index, Err(CallError::Critic(message)));
                }
                (Waiting::Request(_), Reply::Opened) => return Err(wrong("request", "`ok`")),
                (Waiting::Open { .. }, Reply::Critique(_)) => return Err(wrong("the open of a task", "a critique")),
                (Waiting::Open { key, .. }, Reply::Error(_)) => {
                    // The task is not open on the child; the rounds written behind the open are
                    // answered by the child, and the next round of the key opens it again.
                    opening.remove(&key);
                }
                (Waiting::Open { key, .. }, Reply::Opened) => {
                    opening.remove(&key);
                    child.open.insert(key);
                    *self.pool.lock().unwrap_or_else(|p| p.into_inner()).held.entry(key).or_default() += 1;
                }
            }
            waiting.remove(&id);
            deadline = Instant::now() + self.timeout;
            // The batches answered whole go back as soon as they are.
            feed.deliver(flight);
        }
        Ok(unwritable)
    }

    /// The lines of the requests `indices` of `flight` for `child`, each then waiting for its
    /// answer: after the close of ended tasks this child holds, a round's open when the child
    /// neither holds its task nor is opening it (the round follows the open at once), then the
    /// round; a whole request as it is.
    fn batch_lines<R: Borrow<Asked>>(
        &self,
        child: &mut Child,
        flight: &Flight<R>,
        indices: &[usize],
        waiting: &mut BTreeMap<u64, Waiting>,
        opening: &mut HashSet<u64>,
    ) -> String {
        let mut batch = String::new();
        if let Some(line) = self.take_closes(child) {
            batch.push_str(&line);
            batch.push('\n');
        }
        for &index in indices {
            let id = child.next_id;
            match flight.request(index) {
                Asked::Round(round) => {
                    if !child.open.contains(&round.key) && opening.insert(round.key) {
                        waiting.insert(id, Waiting::Open { key: round.key, first: index });
                        batch.push_str(&protocol::open_line(id, round.key, &round.task));
                        batch.push('\n');
                        child.next_id += 1;
                    }
                    let id = child.next_id;
                    waiting.insert(id, Waiting::Request(index));
                    batch.push_str(&protocol::round_line(id, round.key, &round.request()));
                }
                asked => {
                    waiting.insert(id, Waiting::Request(index));
                    batch.push_str(&protocol::request_line(id, &asked.whole()));
                }
            }
            child.next_id += 1;
            batch.push('\n');
        }
        batch
    }

    /// Why a write to the child failed: it stopped reading (the timeout), or it died.
    fn unwritable(&self, source: std::io::Error) -> Broken {
        if source.kind() == ErrorKind::TimedOut {
            Broken::Timeout(self.timeout)
        } else {
            Broken::Send { what: "the requests", source }
        }
    }

    /// The `close` line of the ended loops' keys that `child` holds open, if any; they are then
    /// no longer open on it.
    fn take_closes(&self, child: &mut Child) -> Option<String> {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        let mine: Vec<u64> = pool.closing.iter().copied().filter(|key| child.open.contains(key)).collect();
        if mine.is_empty() {
            return None;
        }
        for &key in &mine {
            child.open.remove(&key);
            pool.let_go(key);
        }
        Some(protocol::close_line(&mine))
    }

    /// The child's next message, which must answer what critbench sent at `asked`: a line that
    /// arrived before then answers nothing.
    fn answer_to(
        &self,
        child: &Child,
        asked: Instant,
        deadline: Instant,
    ) -> Result<(serde_json::Value, Vec<u8>), Broken> {
        let (line, arrived) = next_line(child, deadline, self.timeout)?;
        if arrived < asked {
            return Err(unasked(&line));
        }
        Ok((parse_message(&line)?, line))
    }
}

impl Drop for ProcessCritic {
    fn drop(&mut self) {
        let pool = std::mem::take(&mut *self.pool.lock().unwrap_or_else(|p| p.into_inner()));
        for mut child in pool.idle {
            // A closed stdin is the protocol's way to say goodbye; the kill makes sure, for the
            // child and whatever it started.
            child.stdin.take();
            let pid = child.process.id();
            process_group::kill(pid);
            let _ = child.process.wait();
            process_group::forget(pid);
        }
    }
}

enum StartFailure {
    /// The critic refused its config.
    Rejected {
        message: String,
    },
    Broken(String),
}

impl StartFailure {
    fn message(&self) -> &str {
        match self {
            StartFailure::Rejected { message } => message,
            StartFailure::Broken(message) => message,
        }
    }
}

fn send(child: &mut Child, line: &str) -> std::io::Result<()> {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    write_by(child, &bytes, None)
}

/// Writes all of `bytes` to the child's stdin (non-blocking), waiting for room in the pipe until
/// `deadline` (`ErrorKind::TimedOut` then: the child stopped reading), or for as long as it takes.
fn write_by(child: &mut Child, mut bytes: &[u8], deadline: Option<Instant>) -> std::io::Result<()> {
    let stdin = child.stdin.as_mut().ok_or_else(|| std::io::Error::other("stdin is closed"))?;
    while !bytes.is_empty() {
        match stdin.write(bytes) {
            Ok(0) => return Err(std::io::Error::from(ErrorKind::WriteZero)),
            Ok(written) => bytes = &bytes[written..],
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                let wait = match deadline {
                    Some(deadline) => {
                        let left = deadline.saturating_duration_since(Instant::now());
                        if left.is_zero() {
                            return Err(std::io::Error::new(
                                ErrorKind::TimedOut,
                                "the critic stopped reading its input",
                            ));
                        }
                        left.min(EXIT_CHECK)
                    }
                    None => EXIT_CHECK,
                };
                let mut ready = libc::pollfd { fd: stdin.as_raw_fd(), events: libc::POLLOUT, revents: 0 };
                // SAFETY: one valid pollfd; a failed or interrupted poll just loops.
                unsafe { libc::poll(&mut ready, 1, wait.as_millis().max(1) as libc::c_int) };
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn unasked(line: &[u8]) -> Broken {
    Broken::Unasked(excerpt(String::from_utf8_lossy(line).trim_end()))
}

/// The next line from the child and when it arrived.
fn next_line(child: &Child, deadline: Instant, timeout: Duration) -> Result<(Vec<u8>, Instant), Broken> {
    loop {
        if let Some(line) = next_line_or_nudge(child, deadline, timeout)? {
            return Ok(line);
        }
    }
}

/// [`next_line`], or `None` when the child's [`Nudge`] comes first.
fn next_line_or_nudge(
    child: &Child,
    deadline: Instant,
    timeout: Duration,
) -> Result<Option<(Vec<u8>, Instant)>, Broken> {
    let received = |line: Line| match line {
        Line { bytes: Ok(line), arrived } => Ok(Some((line, arrived))),
        Line { bytes: Err(broken), .. } => Err(broken),
    };
    loop {
        let wait = deadline.saturating_duration_since(Instant::now());
        match child.lines.recv_or_nudge(wait.min(EXIT_CHECK)) {
            Ok(Some(line)) => return received(line),
            Ok(None) => return Ok(None),
            Err(RecvTimeoutError::Disconnected) => return Err(Broken::Closed),
            Err(RecvTimeoutError::Timeout) if wait <= EXIT_CHECK => return Err(Broken::Timeout(timeout)),
            // A process the child started can hold its output open after the child died, so
            // the output never closes: the child's own end is what says it died.
            Err(RecvTimeoutError::Timeout) if process_group::has_exited(child.process.id()) => {
                // What it wrote just before it died may still be on its way.
                return match child.lines.recv_timeout(EXIT_CHECK) {
                    Ok(line) => received(line),
                    Err(_) => Err(Broken::Closed),
                };
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
}

/// The next line from the child as a JSON object, and when it arrived.
fn next_message(child: &Child, deadline: Instant, timeout: Duration) -> Result<(serde_json::Value, Instant), Broken> {
    let (line, arrived) = next_line(child, deadline, timeout)?;
    Ok((parse_message(&line)?, arrived))
}

/// A line as a JSON object.
fn parse_message(line: &[u8]) -> Result<serde_json::Value, Broken> {
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(e) => {
            let line = excerpt(String::from_utf8_lossy(line).trim_end());
            return Err(Broken::NotUtf8 { at: e.valid_up_to(), line });
        }
    };
    match serde_json::from_str::<Message>(text) {
        Ok(Message { repeated: Some(key), .. }) => Err(Broken::RepeatedKey { key, line: excerpt(text.trim_end()) }),
        Ok(Message { object, .. }) => Ok(serde_json::Value::Object(object)),
        _ => Err(Broken::NotJson(excerpt(text.trim_end()))),
    }
}

/// A message line's object, and the first of its keys that it gives twice, if any: such a line
/// says two things at once (JSON readers disagree on which copy wins), so it is refused.
struct Message {
    object: serde_json::Map<String, serde_json::Value>,
    repeated: Option<String>,
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Message, D::Error> {
        struct Object;
        impl<'de> serde::de::Visitor<'de> for Object {
            type Value = Message;

            fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                formatter.write_str("a JSON object")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut access: A) -> Result<Message, A::Error> {
                let mut message = Message { object: serde_json::Map::new(), repeated: None };
                while let Some(key) = access.next_key::<String>()? {
                    let value = access.next_value()?;
                    if message.object.contains_key(&key) {
                        message.repeated.get_or_insert(key);
                    } else {
                        message.object.insert(key, value);
                    }
                }
                Ok(message)
            }
        }
        deserializer.deserialize_map(Object)
    }
}

/// The critique of a message line as the critic wrote it (the content of a string critique),
/// so that a critique reads the same whatever the protocol: its own repeated keys, say, are then
/// refused as a plugin's are, not resolved by a JSON tree. `None` when the line has no
/// `critique` to read that way.
fn written_critique(line: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Critique<'a> {
        #[serde(borrow)]
        critique: &'a serde_json::value::RawValue,
    }
    let Critique { critique } = serde_json::from_slice(line).ok()?;
    if critique.get().starts_with('"') {
        serde_json::from_str(critique.get()).ok()
    } else {
        Some(critique.get().to_string())
    }
}

fn read_lines(stdout: std::process::ChildStdout, sender: Sender<Delivery>, pipelined: &AtomicBool) {
    // Room for a batch's answers in one read.
    let mut reader = BufReader::with_capacity(1 << 16, stdout);
    loop {
        // Every complete line the last read brought, handed over together.
        let mut lines = Vec::new();
        let ended = loop {
            let mut line = Vec::new();
            let read = Read::by_ref(&mut reader).take(MAX_LINE as u64).read_until(b'\n', &mut line);
            let arrived = Instant::now();
            let bytes = match read {
                Ok(0) | Err(_) => break true,
                Ok(_) if line.last() != Some(&b'\n') && line.len() >= MAX_LINE => {
                    lines.push(Line { bytes: Err(Broken::LineTooLong), arrived });
                    break true;
                }
                Ok(_) if line.iter().all(u8::is_ascii_whitespace) => None,
                // Every message waits for critbench's next line, so nothing may follow it yet;
                // bytes already here are an answer to nothing, which would be taken for the next.
                // (The pipelined form answers several requests in flight, so several messages may come
                // at once.)
                Ok(_) if !pipelined.load(Ordering::Relaxed) && !reader.buffer().iter().all(u8::is_ascii_whitespace) => {
                    Some(Err(Broken::Hurried(excerpt(String::from_utf8_lossy(&line).trim_end()))))
                }
                Ok(_) => Some(Ok(line)),
            };
            lines.extend(bytes.map(|bytes| Line { bytes, arrived }));
            if !reader.buffer().contains(&b'\n') {
                break false;
            }
        };
        if !lines.is_empty() && sender.send(Delivery::Lines(lines)).is_err() {
            return;
        }
        if ended {
            let _ = sender.send(Delivery::End);
            return;
        }
    }
}

/// Stops a child that is no longer usable, with its whole process group, and says why:
/// `broken`, or — when the child went silent because it died (its output closed, or it stopped
/// reading) — how the process ended. A child that wrote something wrong keeps that as the reason
/// even if it exited right after.
fn finish(mut child: Child, broken: Option<Broken>) -> String {
    child.stdin.take();
    let pid = child.process.id();
    let died = broken.as_ref().is_some_and(Broken::died);
    let mut exited = process_group::has_exited(pid);
    if !exited && died {
        // It is exiting right now: give it a moment to end on its own.
        let grace = Instant::now() + Duration::from_secs(2);
        while !exited && Instant::now() < grace {
            std::thread::sleep(Duration::from_millis(2));
            exited = process_group::has_exited(pid);
        }
    }
    // Before the child is reaped, while its pid still names its group.
    process_group::kill(pid);
    let status = child.process.wait();
    process_group::forget(pid);
    match status {
        Ok(status) if died && exited => describe_exit(status),
        _ => broken.map(|broken| broken.to_string()).unwrap_or_default(),
    }
}

/// How a child process ended, in words.
fn describe_exit(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(signal) = status.signal() {
        let name = match signal {
            libc::SIGSEGV => " (SIGSEGV: a crash)",
            libc::SIGABRT => " (SIGABRT: an abort)",
            libc::SIGKILL => " (SIGKILL)",
            libc::SIGBUS => " (SIGBUS: a crash)",
            libc::SIGFPE => " (SIGFPE: a crash)",
            libc::SIGILL => " (SIGILL: a crash)",
            _ => "",
        };
        format!("the critic process was killed by signal {signal}{name}")
    } else {
        format!("the critic process exited with status {}", status.code().unwrap_or(-1))
    }
}

/// The program of a command critic: a path with a `/` is taken relative to `base_dir`; a bare
/// name is looked up on `PATH`.
pub(crate) fn resolve_program(program: &str, base_dir: Option<&Path>) -> Option<PathBuf> {
    if program.contains('/') {
        let path = PathBuf::from(program);
        return Some(match base_dir {
            Some(base) if path.is_relative() => base.join(path),
            _ => path,
        });
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths).map(|dir| dir.join(program)).find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    //! Real child processes (small Python critics) against the rules of `docs/PROTOCOL.md`: an
    //! answer lands on its own request or is an error that restarts the child.

    use super::*;
    use crate::services::{HostService, Reply as ServiceReply};
    use crate::{CriticInstance, CriticTask};
    use serde_json::json;

    /// What every test critic starts with: `send`, `read` and `wait_for_input` (which returns once
    /// critbench's next line is in the pipe, without reading it).
    const PRELUDE: &str = r#"
import json, os, select, subprocess, sys, time
def send(message):
    sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
def read():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    return json.loads(line)
def wait_for_input():
    select.select([sys.stdin], [], [])
"#;

    /// Greets in `form` and takes the config.
    fn hello(form: Form) -> String {
        let pipelined = if form == Form::Pipelined { "True" } else { "False" };
        format!(
            "send({{\"protocol\": 2, \"pipelined\": {pipelined}, \"name\": \"t\", \"version\": \"1\", \
             \"score_range\": [0, 10]}})\nconfig = read()\nsend({{\"id\": 0, \"ok\": True}})\n"
        )
    }

    struct Echo;

    impl HostService for Echo {
        fn call(
            &self,
            request: &str,
            _scope: Option<&CallScope>,
        ) -> Result<ServiceReply, crate::services::ServiceError> {
            Ok(ServiceReply::text(format!("echo {request}")))
        }
    }

    /// A critic running `body` after the prelude and the hello, with a host offering `echo`.
    fn open(form: Form, body: &str) -> (tempfile::TempDir, ProcessCritic) {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("critic.py");
        std::fs::write(&script, format!("{PRELUDE}{}{body}", hello(form))).unwrap();
        let launch = Launch {
            program: resolve_program("python3", None).expect("python3 is on PATH").into_os_string(),
            args: vec![script.clone().into_os_string()],
            cwd: Some(dir.path().to_path_buf()),
            label: "test critic".into(),
        };
        let isolation = Isolation {
            mode: IsolationMode::Process,
            timeout: Duration::from_secs(20),
            memory_mb: None,
            children: 1,
            worker: None,
        };
        let host = Arc::new(Host::new().offer("echo", Arc::new(Echo)));
        let critic = ProcessCritic::open(launch, "{}", &isolation, script, None, "0".repeat(64), &host)
            .unwrap_or_else(|e| panic!("{e}"));
        (dir, critic)
    }

    fn request(task: &str) -> String {
        format!(r#"{{"request_version":1,"round":0,"draft":"d","task":{{"id":"{task}","prompt":"p"}}}}"#)
    }

    /// Asserts a call failed with `expected` in its message and the child was stopped.
    fn assert_refused(result: Result<String, CallError>, expected: &str) {
        let error = result.expect_err("the line must not be taken as an answer");
        assert!(matches!(&error, CallError::ChildStopped { failure } if failure.contains(expected)), "{error:?}");
        let error = error.to_string();
        assert!(error.ends_with("; the critic process was stopped and will be restarted"), "{error}");
    }

    #[test]
    fn an_answer_to_an_earlier_request_is_refused_while_the_next_one_waits() {
        // Answers request 1, then — once request 2 is in its pipe — answers request 1 again.
        // (Had the stray line come in one read with the answer to 2, both would be refused as
        // one write of two messages.)
        let (_dir, critic) = open(
            Form::Simple,
            r#"
first = read()
send({"id": first["id"], "critique": {"score": 1, "rationale": first["request"]["task"]["id"]}})
wait_for_input()
send({"id": first["id"], "critique": {"score": 9, "rationale": "stray"}})
# Alone in the pipe, not in one read with the next answer.
time.sleep(0.5)
while True:
    message = read()
    send({"id": message["id"], "critique": {"score": 2, "rationale": message["request"]["task"]["id"]}})
"#,
        );
        assert_eq!(meaning(&critic.call(&request("a"), None).unwrap()), json!({"rationale": "a", "score": 1}));
        assert_refused(critic.call(&request("b"), None), "for request 1 while critbench waited for request 2");
        // A fresh child, numbering afresh, answers its first request.
        assert_eq!(meaning(&critic.call(&request("c"), None).unwrap()), json!({"rationale": "c", "score": 1}));
    }

    #[test]
    fn a_second_answer_between_requests_is_refused_at_the_next() {
        let (_dir, critic) = open(
            Form::Simple,
            r#"
first = read()
send({"id": first["id"], "critique": {"score": 1}})
time.sleep(0.2)
send({"id": first["id"], "critique": {"score": 9}})
while True:
    message = read()
    send({"id": message["id"], "critique": {"score": 2}})
"#,
        );
        assert_eq!(meaning(&critic.call(&request("a"), None).unwrap()), json!({"score": 1}));
        std::thread::sleep(Duration::from_secs(1));
        assert_refused(critic.call(&request("b"), None), "the critic wrote a line after its last answer, unasked");
    }

    #[test]
    fn a_message_with_a_wrong_or_no_id_is_refused() {
        for (reply, expected) in [
            (r#"{"id": 5, "critique": {"score": 1}}"#, "for request 5 while critbench waited for request 1"),
            (r#"{"critique": {"score": 1}}"#, "without an id"),
            (r#"{"id": 5, "service": "echo", "request": "hi"}"#, "for request 5 while critbench waited for request 1"),
        ] {
            let (_dir, critic) = open(Form::Simple, &format!("read()\nsend({reply})\nread()\n"));
            assert_refused(critic.call(&request("a"), None), expected);
        }
    }

    #[test]
    fn a_service_call_carries_its_request_id_and_so_does_its_answer() {
        let (_dir, critic) = open(
            Form::Simple,
            r#"
while True:
    message = read()
    send({"id": message["id"], "service": "echo", "request": "hi"})
    answer = read()
    ok = answer["id"] == message["id"]
    send({"id": message["id"], "critique": {"score": 5, "rationale": answer["answer"] if ok else "wrong id"}})
"#,
        );
        for task in ["a", "b", "c"] {
            assert_eq!(
                meaning(&critic.call(&request(task), None).unwrap()),
                json!({"rationale": "echo hi", "score": 5})
            );
        }
    }

    /// A critic of the pipelined form answering each request in order (score 1, its task id as rationale),
    /// except that on the task named `bad` it does `misbehave` instead.
    fn pipelined(misbehave: &str) -> (tempfile::TempDir, ProcessCritic) {
        open(
            Form::Pipelined,
            &format!(
                r#"
while True:
    message = read()
    task = message["request"]["task"]["id"]
    if task == "bad":
{misbehave}
    send({{"id": message["id"], "critique": {{"score": 1, "rationale": task}}}})
"#
            ),
        )
    }

    /// What a critique's JSON text says, whatever its spacing and key order: a pipelined
    /// critic's critique is passed on as the critic wrote it.
    fn meaning(critique: &str) -> serde_json::Value {
        serde_json::from_str(critique).expect("a critique is JSON")
    }

    /// `tasks` all in flight at once through `call_many`.
    fn call_many(critic: &ProcessCritic, tasks: &[&str]) -> Vec<Result<String, CallError>> {
        let requests: Vec<Asked> = tasks.iter().map(|task| Asked::Whole(request(task))).collect();
        let requests: Vec<&Asked> = requests.iter().collect();
        let mut scopes: Vec<CallScope> = tasks.iter().map(|task| CallScope::new(task, 0, 0)).collect();
        critic.call_many(&requests, &mut scopes)
    }

    #[test]
    fn a_pipelined_critic_takes_many_requests_at_once_and_its_answers_land_by_id() {
        // Answers the requests of each batch in reverse order: the ids say which is which.
        let (_dir, critic) = open(
            Form::Pipelined,
            r#"
import select
while True:
    batch = [read()]
    while select.select([sys.stdin], [], [], 0.2)[0]:
        batch.append(read())
    for message in reversed(batch):
        send({"id": message["id"], "critique": {"score": 1, "rationale": message["request"]["task"]["id"]}})
"#,
        );
        assert!(critic.pipelined());
        let tasks = ["a", "b", "c", "d"];
        let answers = call_many(&critic, &tasks);
        for (task, answer) in tasks.iter().zip(answers) {
            assert_eq!(meaning(&answer.unwrap()), json!({"rationale": task, "score": 1}));
        }
    }

    #[test]
    fn a_pipelined_critic_that_fails_on_one_request_in_flight_loses_that_request_only() {
        for (misbehave, expected) in [
            ("        os._exit(3)", "the critic process exited with status 3"),
            ("        print('not json', flush=True)", "the critic wrote a line that is not protocol JSON: not json"),
            ("        time.sleep(600)", "no answer within 2 s"),
            (
                "        send({\"id\": 999, \"critique\": {\"score\": 1}})",
                "the critic wrote a message for request 999, which is not one of the requests waiting",
            ),
            ("        send({\"critique\": {\"score\": 1}})", "the critic wrote a message without an id"),
        ] {
            let (_dir, mut critic) = pipelined(misbehave);
            critic.timeout = Duration::from_secs(2);
            let answers = call_many(&critic, &["a", "b", "bad", "c", "d"]);
            for (task, answer) in ["a", "b", "c", "d"].iter().zip(answers.iter().take(2).chain(answers.iter().skip(3)))
            {
                assert_eq!(answer.as_deref().map(meaning), Ok(json!({"rationale": task, "score": 1})), "{expected}");
            }
            assert_refused(answers[2].clone(), expected);
            // The next batch goes to the fresh child as well.
            assert!(call_many(&critic, &["e", "f"]).iter().all(Result::is_ok), "{expected}");
        }
    }

    #[test]
    fn a_critique_reaches_the_host_as_written_and_a_message_with_a_key_twice_is_refused() {
        let body = r#"
while True:
    message = read()
    task = message["request"]["task"]["id"]
    if task == "inner":
        sys.stdout.write('{"id": %d, "critique": {"score": 1, "score": 9}}\n' % message["id"])
    elif task == "string":
        sys.stdout.write('{"id": %d, "critique": "{\\"score\\": 2, \\"score\\": 8}"}\n' % message["id"])
    else:
        sys.stdout.write('{"id": %d, "critique": {"score": 1}, "critique": {"score": 9}}\n' % message["id"])
    sys.stdout.flush()
"#;
        let twice = "the critic wrote a message with the key `critique` twice";
        for form in [Form::Simple, Form::Pipelined] {
            // One request at a time (both forms), then all at once (the pipelined form).
            let (_dir, critic) = open(form, body);
            let one = |task: &str| critic.call(&request(task), None);
            // A tree would keep one of the two scores; the critique's reader refuses both.
            assert_eq!(one("inner").unwrap(), r#"{"score": 1, "score": 9}"#, "{form:?}");
            assert_eq!(one("string").unwrap(), r#"{"score": 2, "score": 8}"#, "{form:?}");
            assert_refused(one("outer"), twice);
            if form == Form::Pipelined {
                let answers = call_many(&critic, &["inner", "string", "outer"]);
                assert_eq!(answers[0].as_deref().unwrap(), r#"{"score": 1, "score": 9}"#);
                assert_eq!(answers[1].as_deref().unwrap(), r#"{"score": 2, "score": 8}"#);
                assert_refused(answers[2].clone(), twice);
            }
        }
    }

    /// Batches of task ids for `call_batches`: the first ready at once, each next one when the
    /// test sends it, with a nudge.
    struct Sent {
        ready: std::sync::mpsc::Receiver<Vec<&'static str>>,
        nudge: Arc<Mutex<Option<Nudge>>>,
        answered: Vec<Vec<Result<String, CallError>>>,
    }

    impl Batches for Sent {
        fn next(&mut self) -> Option<Vec<(Asked, CallScope)>> {
            let tasks = self.ready.try_recv().ok()?;
            Some(tasks.into_iter().map(|task| (Asked::Whole(request(task)), CallScope::new(task, 0, 0))).collect())
        }

        fn answered(&mut self, answers: Vec<(Result<String, CallError>, CallScope)>) {
            self.answered.push(answers.into_iter().map(|(answer, _)| answer).collect());
        }

        fn nudge_with(&mut self, nudge: Nudge) {
            *self.nudge.lock().unwrap() = Some(nudge);
        }
    }

    /// `batches` through `call_batches`, each sent `after` the one before, and the answers of
    /// each batch.
    fn call_batches(
        critic: &ProcessCritic,
        batches: &[&[&'static str]],
        after: Duration,
    ) -> Vec<Vec<Result<String, CallError>>> {
        let (send, ready) = std::sync::mpsc::channel();
        let nudge = Arc::new(Mutex::new(None::<Nudge>));
        send.send(batches[0].to_vec()).unwrap();
        let mut sent = Sent { ready, nudge: Arc::clone(&nudge), answered: Vec::new() };
        std::thread::scope(|threads| {
            threads.spawn(|| {
                for batch in &batches[1..] {
                    std::thread::sleep(after);
                    send.send(batch.to_vec()).unwrap();
                    if let Some(nudge) = &*nudge.lock().unwrap() {
                        nudge.nudge();
                    }
                }
            });
            // Every batch is sent before the first is answered (the critic below waits for all
            // four requests), so one call takes them all.
            critic.call_batches(&mut sent);
        });
        sent.answered
    }

    /// A critic of the pipelined form that answers nothing until it has read four requests (or, with
    /// `crash`, until no more input came for 2 s), then answers all it read, with its process id.
    /// With `crash`, the first process (the one that finds no `crashed` file) answers its first
    /// request and exits, leaving in `crashed` how many requests it had read.
    fn four_at_once(crash: bool) -> (tempfile::TempDir, ProcessCritic) {
        open(
            Form::Pipelined,
            &format!(
                r#"
crash = {crash} and not os.path.exists("crashed")
pending = b""
def take(patience):
    # The next message, read straight from the pipe (a buffered reader would hide from select
    # what it read ahead); None when nothing more came for `patience` seconds.
    global pending
    while b"\n" not in pending:
        if not select.select([0], [], [], patience)[0]:
            return None
        chunk = os.read(0, 1 << 16)
        if not chunk:
            sys.exit(0)
        pending += chunk
    line, pending = pending.split(b"\n", 1)
    return json.loads(line)
while True:
    batch = [take(None)]
    while len(batch) < 4:
        message = take(2 if {crash} else None)
        if message is None:
            break
        batch.append(message)
    for message in batch:
        send({{"id": message["id"], "critique": {{"score": 1, "rationale": message["request"]["task"]["id"], "pid": os.getpid()}}}})
        if crash:
            open("crashed", "w").write(str(len(batch)))
            sys.exit(3)
"#,
                crash = if crash { "True" } else { "False" }
            ),
        )
    }

    /// The task and the process id of a critique of `four_at_once`.
    fn task_and_pid(answer: &Result<String, CallError>) -> (String, u64) {
        let critique = meaning(answer.as_ref().unwrap_or_else(|e| panic!("{e}")));
        (critique["rationale"].as_str().unwrap().to_string(), critique["pid"].as_u64().unwrap())
    }

    #[test]
    fn a_batch_made_ready_while_another_is_out_goes_to_the_same_process_at_once() {
        let (_dir, critic) = four_at_once(false);
        // The second batch comes while the thread waits for the first one's answers: only the
        // nudge makes it write the batch (the critic answers nothing before it has both).
        let answered = call_batches(&critic, &[&["a", "b"], &["c", "d"]], Duration::from_millis(300));
        let answered: Vec<Vec<(String, u64)>> =
            answered.iter().map(|batch| batch.iter().map(task_and_pid).collect()).collect();
        let pid = answered[0][0].1;
        let tasks = |batch: &[(String, u64)]| batch.iter().map(|(task, _)| task.clone()).collect::<Vec<_>>();
        assert_eq!(answered.len(), 2, "{answered:?}");
        assert_eq!(tasks(&answered[0]), ["a", "b"]);
        assert_eq!(tasks(&answered[1]), ["c", "d"]);
        assert!(answered.iter().flatten().all(|&(_, of)| of == pid), "one process: {answered:?}");
    }

    #[test]
    fn a_process_that_dies_with_two_batches_out_costs_the_oldest_request_waiting_only() {
        let (dir, critic) = four_at_once(true);
        let answered = call_batches(&critic, &[&["a", "b"], &["c", "d"]], Duration::ZERO);
        let read = std::fs::read_to_string(dir.path().join("crashed")).unwrap();
        assert_eq!(read, "4", "both batches were out on the process that died");
        assert_eq!(answered.len(), 2);
        let (first, second) = (&answered[0], &answered[1]);
        assert_eq!(first.len(), 2);
        let (task, crashed) = task_and_pid(&first[0]);
        assert_eq!(task, "a");
        let error = first[1].as_ref().expect_err("b was the oldest waiting when the process died");
        assert!(
            matches!(error, CallError::ChildStopped { failure } if failure.contains("exited with status 3")),
            "{error:?}"
        );
        // c and d, out on the process that died, go to a fresh one, not counted as an attempt.
        let second: Vec<(String, u64)> = second.iter().map(task_and_pid).collect();
        assert_eq!(second.iter().map(|(task, _)| task.as_str()).collect::<Vec<_>>(), ["c", "d"]);
        assert!(second.iter().all(|&(_, pid)| pid != crashed), "{second:?}");
    }

    #[test]
    fn a_pipelined_service_call_is_answered_in_the_scope_of_the_request_it_serves() {
        let (_dir, critic) = open(
            Form::Pipelined,
            r#"
while True:
    message = read()
    send({"id": message["id"], "service": "echo", "request": message["request"]["task"]["id"]})
    answer = read()
    while "request" in answer:
        # A request critbench wrote before it read the call: the answer to the call follows.
        answer = read()
    send({"id": message["id"], "critique": {"score": 1, "rationale": answer["answer"]}})
"#,
        );
        // One request at a time here (the critic above reads ahead only to skip requests).
        for task in ["a", "b"] {
            assert_eq!(
                call_many(&critic, &[task])[0].as_deref().map(meaning),
                Ok(json!({"rationale": format!("echo {task}"), "score": 1}))
            );
        }
    }

    /// A critic of the pipelined form that reads tasks once. It keeps the keys open on its process
    /// and answers a round with `"TASK rROUND opens=N closed=[KEYS]"` (N: the opens of that key on
    /// this process; KEYS: the keys closed on it so far), or with an error for a key not open on
    /// it. On the task named `bad` it does `at_open` when opening it and `at_round` at its rounds;
    /// `message` is the line read.
    fn by_task(at_open: &str, at_round: &str) -> (tempfile::TempDir, ProcessCritic) {
        open(
            Form::Pipelined,
            &format!(
                r#"
opened, opens, closed = {{}}, {{}}, []
while True:
    message = read()
    if "close" in message:
        for key in message["close"]:
            closed.append(key)
            del opened[key]
        continue
    if "open" in message and message["task"]["id"] == "bad":
{at_open}
    if "open" in message:
        key = message["open"]
        opened[key] = message["task"]["id"]
        opens[key] = opens.get(key, 0) + 1
        send({{"id": message["id"], "ok": True}})
        continue
    key = message["task_key"]
    if key not in opened:
        send({{"id": message["id"], "error": "key %d is not open here" % key}})
        continue
    task = opened[key]
    if task == "bad":
{at_round}
    rationale = "%s r%d opens=%d closed=%s" % (task, message["request"]["round"], opens[key], sorted(closed))
    send({{"id": message["id"], "critique": {{"score": 1, "rationale": rationale}}}})
"#
            ),
        )
    }

    /// The task `id` as critics see it.
    fn task_json(id: &str) -> crate::request::TaskJson {
        crate::request::TaskJson::new(&critbench_core::Task { id: id.into(), prompt: "p".into(), ..Default::default() })
    }

    /// Round `round` of each loop, all in flight at once; each answer's rationale, or its error.
    fn rounds(instance: &CriticInstance, loops: &[&CriticTask<'_>], round: u32) -> Vec<Result<String, String>> {
        let asked: Vec<Asked> = loops.iter().map(|task| task.first_request("d", round)).collect();
        let asked: Vec<&Asked> = asked.iter().collect();
        let mut scopes: Vec<CallScope> = loops.iter().map(|_| CallScope::new("t", 0, round)).collect();
        let answers = instance.call_many(&asked, &mut scopes);
        answers
            .into_iter()
            .map(|answer| match answer {
                Ok(text) => {
                    let critique: serde_json::Value = serde_json::from_str(&text).unwrap();
                    Ok(critique["rationale"].as_str().unwrap_or(&text).to_string())
                }
                Err(error) => Err(error.to_string()),
            })
            .collect()
    }

    #[test]
    fn a_task_is_opened_once_per_process_for_its_loops_and_closed_when_they_end() {
        let (_dir, critic) = by_task("        pass", "        os._exit(3)");
        let instance = CriticInstance::Process(critic);
        let (a, b, bad) = (task_json("a"), task_json("b"), task_json("bad"));
        // Two loops of `a` (its two arms, say) and one of `b`.
        let (first, twin, second) = (instance.open_task(&a), instance.open_task(&a), instance.open_task(&b));
        assert!(first.reads_task_once());
        let ok = |text: &str| Ok(text.to_string());
        assert_eq!(
            rounds(&instance, &[&first, &twin, &second], 0),
            [ok("a r0 opens=1 closed=[]"), ok("a r0 opens=1 closed=[]"), ok("b r0 opens=1 closed=[]")],
            "the loops of `a` share its one open"
        );
        // Asked again, neither is opened again; a retry alone goes through the same key.
        assert_eq!(
            rounds(&instance, &[&first, &second], 1),
            [ok("a r1 opens=1 closed=[]"), ok("b r1 opens=1 closed=[]")]
        );
        let mut retried = instance.open_task(&a);
        let mut scope = CallScope::new("a", 0, 0);
        let alone = retried.call_in("d", 0, &mut scope).unwrap();
        assert!(alone.contains("a r0 opens=1 closed=[]"), "{alone}");
        // `a`'s loops end: its key (1) is closed with the next batch, once the last one has.
        drop(first);
        drop(twin);
        assert_eq!(rounds(&instance, &[&second], 2), [ok("b r2 opens=1 closed=[]")], "a loop of `a` is in flight");
        drop(retried);
        assert_eq!(rounds(&instance, &[&second], 3), [ok("b r3 opens=1 closed=[1]")]);
        // The child crashes on a round: that round fails, and the fresh child, which holds nothing
        // open, is sent the task again before the next round.
        let crashing = instance.open_task(&bad);
        let answers = rounds(&instance, &[&crashing, &second], 4);
        assert!(answers[0].as_ref().unwrap_err().contains("the critic process exited with status 3"), "{answers:?}");
        // `b`'s round, behind `bad`'s, went to the fresh child, not counted as an attempt.
        assert_eq!(answers[1], ok("b r4 opens=1 closed=[]"), "re-opened on the fresh child");
        // A key that ended on a child that died is not closed on the fresh one.
        drop(crashing);
        assert_eq!(rounds(&instance, &[&second], 5), [ok("b r5 opens=1 closed=[]")]);
        let CriticInstance::Process(critic) = &instance else { unreachable!() };
        let pool = critic.pool.lock().unwrap();
        assert_eq!((pool.closing.len(), pool.held.len()), (0, 1), "only the open loop's key is held");
    }

    #[test]
    fn a_refused_open_costs_its_tasks_rounds_only_and_the_next_round_opens_it_again() {
        let (_dir, critic) =
            by_task(r#"        send({"id": message["id"], "error": "no such task"}); continue"#, "        pass");
        let instance = CriticInstance::Process(critic);
        let (a, bad, c) = (task_json("a"), task_json("bad"), task_json("c"));
        let loops = [instance.open_task(&a), instance.open_task(&bad), instance.open_task(&c)];
        let loops: Vec<&CriticTask<'_>> = loops.iter().collect();
        for round in 0..2 {
            let answers = rounds(&instance, &loops, round);
            assert_eq!(answers[0], Ok(format!("a r{round} opens=1 closed=[]")));
            // The round written behind the refused open is the critic's to answer: it holds no task.
            assert_eq!(answers[1], Err("key 2 is not open here".to_string()));
            assert_eq!(answers[2], Ok(format!("c r{round} opens=1 closed=[]")), "the same process goes on");
        }
    }

    #[test]
    fn a_critic_that_breaks_the_pipelined_form_loses_that_round_only() {
        let pass = "        pass";
        let twice = "        send({\"id\": message[\"id\"], \"critique\": {\"score\": 1}})\n        \
                     send({\"id\": message[\"id\"], \"critique\": {\"score\": 2}})\n        continue";
        // The round charged: `bad`'s (2), except that a second answer to `bad`'s round is charged
        // to the message the child works on next (`c`'s open, charged to `c`'s round, 3).
        for (at_open, at_round, expected, charged) in [
            (pass, "        os._exit(3)", "the critic process exited with status 3", 2),
            (pass, "        print('not json', flush=True)", "the critic wrote a line that is not protocol JSON", 2),
            (
                pass,
                "        send({\"id\": 999, \"critique\": {\"score\": 1}})",
                "the critic wrote a message for request 999, which is not one of the requests waiting",
                2,
            ),
            (pass, twice, "which is not one of the requests waiting", 3),
            (pass, "        send({\"id\": message[\"id\"], \"ok\": True}); continue", "the critic answered request", 2),
            (
                "        send({\"id\": message[\"id\"], \"critique\": {\"score\": 1}}); continue",
                pass,
                "the critic answered the open of a task",
                2,
            ),
        ] {
            let (_dir, critic) = by_task(at_open, at_round);
            let instance = CriticInstance::Process(critic);
            let tasks: Vec<_> = ["a", "b", "bad", "c", "d"].iter().map(|id| task_json(id)).collect();
            let loops: Vec<CriticTask<'_>> = tasks.iter().map(|task| instance.open_task(task)).collect();
            let loops: Vec<&CriticTask<'_>> = loops.iter().collect();
            let answers = rounds(&instance, &loops, 0);
            let error = answers[charged].as_ref().expect_err(expected);
            assert!(error.contains(expected), "{expected}: {error}");
            assert!(error.ends_with("the critic process was stopped and will be restarted"), "{error}");
            for (at, task) in [(0, "a"), (1, "b"), (3, "c"), (4, "d")].into_iter().filter(|&(at, _)| at != charged) {
                assert!(
                    answers[at].as_ref().is_ok_and(|text| text.starts_with(&format!("{task} r0"))),
                    "{expected}: {answers:?}"
                );
            }
            let good = [loops[0], loops[1], loops[3], loops[4]];
            let next = rounds(&instance, &good, 1);
            assert!(next.iter().all(Result::is_ok), "{expected}: {next:?}");
        }
    }

    /// The processes (not zombies) whose process group is `group`.
    fn members_of(group: u32) -> Vec<u32> {
        let mut members = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            let fields: Vec<&str> =
                stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
            // After the command: state, parent, process group.
            if fields.first() != Some(&"Z") && fields.get(2).and_then(|g| g.parse().ok()) == Some(group) {
                members.push(pid);
            }
        }
        members
    }

    /// Waits (up to 5 s) for the group to be empty.
    fn assert_group_gone(group: u32) {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let members = members_of(group);
            if members.is_empty() {
                return;
            }
            assert!(Instant::now() < deadline, "processes of the critic's group survived: {members:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A critic that starts a child, which starts a grandchild, writes the critic's pid to
    /// `group` and then does `then`.
    fn forking(then: &str) -> String {
        format!(
            r#"
child = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); time.sleep(600)"])
with open("group.tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename("group.tmp", "group")
{then}
"#
        )
    }

    fn group_of(dir: &Path) -> u32 {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(text) = std::fs::read_to_string(dir.join("group")) {
                let group: u32 = text.parse().unwrap();
                // The child and the grandchild have started too.
                if members_of(group).len() >= 3 {
                    return group;
                }
            }
            assert!(Instant::now() < deadline, "the critic's children did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn a_critic_that_times_out_is_killed_with_everything_it_started() {
        let (dir, mut critic) = open(Form::Simple, &forking("read()\ntime.sleep(600)"));
        critic.timeout = Duration::from_secs(2);
        let group = group_of(dir.path());
        assert_refused(critic.call(&request("a"), None), "no answer within 2 s");
        assert_group_gone(group);
    }

    #[test]
    fn a_critic_that_breaks_the_protocol_is_killed_with_everything_it_started() {
        let (dir, critic) = open(Form::Simple, &forking("read()\nprint('not json', flush=True)\ntime.sleep(600)"));
        let group = group_of(dir.path());
        assert_refused(critic.call(&request("a"), None), "the critic wrote a line that is not protocol JSON: not json");
        assert_group_gone(group);
    }

    #[test]
    fn a_dropped_critic_takes_its_process_group_with_it() {
        let (dir, critic) = open(Form::Simple, &forking("while True:\n    read()"));
        let group = group_of(dir.path());
        drop(critic);
        assert_group_gone(group);
    }

    #[test]
    fn a_critic_that_crashes_leaves_no_child_behind() {
        let (dir, critic) = open(Form::Simple, &forking("read()\nos._exit(3)"));
        let group = group_of(dir.path());
        assert_refused(critic.call(&request("a"), None), "the critic process exited with status 3");
        assert_group_gone(group);
    }
}
