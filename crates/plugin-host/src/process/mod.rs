//! Critics in child processes speaking JSON lines over stdin/stdout (`docs/PROTOCOL.md`): a
//! command critic in any language, or a plugin library hosted by `critbench plugin-worker`. Each
//! child is a [`Program`] ([`crate::program`]: its lifecycle, line reader and in-flight table);
//! this module speaks the critic protocol over it: the hello and the config ([`start`]), one
//! request at a time ([`simple`]) or many in flight with tasks opened once ([`pipelined`]).
//!
//! A child that crashes, hangs past the timeout, runs out of its memory limit or writes anything
//! but protocol JSON is killed with its whole process group; the call is an error (the caller
//! retries it, `docs/REFERENCE.md`, Critique) and the next call starts a fresh child. A
//! thread-safe critic gets up to [`Isolation::children`](crate::info::Isolation::children)
//! children, one per concurrent call; any other exactly one. Children die with critbench however
//! it ends ([`crate::program::process_group`]), and they see their stdin close when the critic is
//! dropped.
//!
//! A child of the simple form answers one request at a time, and an answer is taken only when
//! its id says it answers the request being asked ([`crate::protocol::reply`]).
//!
//! A child of the pipelined form takes several requests at once ([`ProcessCritic::call_many`]):
//! they are written in one go and their answers read as they come, each landing on the request its
//! id names ([`crate::protocol::pipelined_reply`]). When such a child fails, the request charged is
//! the oldest still waiting (the one an in-order child was working on); the others in flight go to a
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
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use serde::Deserialize;

use crate::CallError;
use crate::info::CriticInfo;
use crate::model::{ModelPass, ModelRole, ModelUse};
use crate::program::{Broken, Flight, Launch, Program};
use crate::protocol::{Form, ProtocolError};
use crate::request::Asked;
use crate::services::{CallScope, Host};

mod pipelined;
mod simple;
mod start;
mod trouble;

pub use pipelined::Batches;
pub use trouble::{ChildCounters, ChildTrouble};

/// What a critic's child process is named by in messages ("the critic wrote …").
pub(crate) const ROLE: &str = "critic";

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
    /// The next task key ([`ProcessCritic::key_for`]).
    next_key: AtomicU64,
    /// Boxed: a critic is passed around by value, and the pool is most of its size.
    pool: Box<Mutex<Pool>>,
    freed: Condvar,
    /// The run's services, which answer the children's service requests.
    host: Arc<Host>,
    /// The children stopped after a failure, by cause.
    trouble: Arc<ChildCounters>,
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

/// A child process of the critic: the program, the form of the protocol its hello chose, and
/// what the protocol keeps about it.
struct Child {
    program: Program,
    form: Form,
    /// The id of the next request; the config is 0.
    next_id: u64,
    /// The task keys open on this process.
    open: HashSet<u64>,
}

/// Adds what a key's calls cost to the critique they were made for.
fn add_use(scope: &mut CallScope, used: ModelUse) {
    if used.calls > 0 {
        scope.add_tokens(Some(used.tokens_in), Some(used.tokens_out));
        scope.truncated = Some(scope.truncated.unwrap_or(0) + u64::from(used.truncated));
    }
}

/// The critique requests of one [`ProcessCritic::call_many`] or [`ProcessCritic::call_batches`],
/// each with the scope of its critique, answered with the critique's text or why there is none.
type Asks<R> = Flight<(R, CallScope), Result<String, CallError>>;

/// The request of index `index` of `asks`.
fn asked<R: Borrow<Asked>>(asks: &Asks<R>, index: usize) -> &Asked {
    asks.request(index).0.borrow()
}

/// The critique scope of request `index` of `asks`.
fn scope<R>(asks: &mut Asks<R>, index: usize) -> &mut CallScope {
    &mut asks.request_mut(index).1
}

/// How one exchange ended.
enum Answer {
    Critique(String),
    Error(String),
}

impl ProcessCritic {
    /// A key for the request of `scope`'s critique when the run meters model access and the
    /// critic is a command (a plugin library's host is never handed one).
    fn model_pass(&self, scope: &CallScope) -> Option<Box<dyn ModelPass + '_>> {
        self.info.command.as_ref()?;
        let access = self.host.model()?;
        Some(access.open(ModelRole::Judge, &scope.task_id, scope.epoch, scope.round))
    }

    /// What the manifest records about the critic.
    pub fn info(&self) -> &Arc<CriticInfo> {
        &self.info
    }

    /// The counts of the children stopped after a failure, as they grow.
    pub fn trouble(&self) -> &Arc<ChildCounters> {
        &self.trouble
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

    /// Stops a child that is no longer usable ([`Program::finish`]), forgets the tasks it held
    /// open and frees its place in the pool.
    fn discard(&self, child: Child, broken: Option<Broken>) -> String {
        if let Some(broken) = &broken {
            self.trouble.stopped(broken);
        }
        let Child { program, open, .. } = child;
        let failure = program.finish(broken);
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
                            child.program.finish(None);
                            self.release(None);
                            Err(error)
                        }
                    },
                    Err(failure) => {
                        self.release(None);
                        Err(CallError::Restart(failure.to_string()))
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
}

impl Drop for ProcessCritic {
    fn drop(&mut self) {
        let pool = std::mem::take(&mut *self.pool.lock().unwrap_or_else(|p| p.into_inner()));
        for child in pool.idle {
            child.program.close();
        }
    }
}

impl From<ProtocolError> for Broken {
    fn from(error: ProtocolError) -> Broken {
        Broken::Protocol(error.to_string())
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

#[cfg(test)]
mod tests;
