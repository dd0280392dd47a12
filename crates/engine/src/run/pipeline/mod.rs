//! The one driver of every pass over chunks of work: a run's (strategy memory's learning pass,
//! the run proper, a sequential run's), and a rescoring's. A reader on a thread of its own hands
//! chunks on, `workers` threads do them, and a [`Consumer`] takes them back in the reader's order
//! on the calling thread.
//!
//! - Memory is bounded by the chunks in flight: the reader hands a chunk on only with a permit
//!   of the [`Window`], which the consumer gives back once it has taken the chunk.
//! - Chunks finish in any order; the consumer takes them in the reader's order, so the tables
//!   hold the same rows in the same order whatever `--jobs` is. What needs no order is done first
//!   on the worker that finished the chunk ([`Prepare`]).
//! - A failed write raises the stop flag: the reader stops reading, the workers leave their
//!   chunks, and the pass ends with the error within a chunk's time.
//! - A signal (the caller's [`Interrupt`]) or a budget reached (the model client's flag) stops
//!   the pass the same way: no new piece of work starts, what was taken is committed at once,
//!   and the chunks the workers finish afterwards are taken and committed as they come, up to the
//!   first chunk a worker left unfinished, so that what is written is every chunk of a prefix.
//!   After a signal the pass waits [`INTERRUPT_GRACE`] for the work in flight, then commits what
//!   came and lets the caller end the process (`Interrupt::abandon`); after a budget it waits
//!   however long the work takes.
//! - Every thread is joined: a panic is an error, never a hang.

mod consumer;
mod progress;
mod window;

pub(crate) use consumer::{AsRecorded, Consumer, Prepare, Recorded};
pub(crate) use progress::Progress;
pub(crate) use window::{Intake, Taken, Window};

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{RecvTimeoutError, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::EngineError;
use crate::stop::{Interrupt, StopSignal};

/// How long a pass stopped by a signal waits for the work in flight before it ends without it.
pub(crate) const INTERRUPT_GRACE: Duration = Duration::from_secs(5);

/// How often the consumer looks at the signal and budget flags while it waits for a chunk.
const LOOK_EVERY: Duration = Duration::from_millis(100);

/// Why a pass stopped before its reader ran out of chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stopped {
    /// A signal.
    Signal(StopSignal),
    /// A `[budget]` was reached (the model client says which).
    Budget,
}

/// How a pass is driven.
pub(crate) struct Pass<'p> {
    /// Worker threads.
    pub workers: usize,
    /// Chunks between the reader and the consumer, at most: see [`Window`].
    pub window: usize,
    /// The first chunk the reader hands on (a resumed pass skips what it wrote).
    pub first_chunk: u64,
    pub progress: &'p Progress,
    /// The caller's signal handling.
    pub interrupt: Option<&'p Interrupt>,
    /// Raised by the model client once a budget is reached.
    pub budget: Option<&'p Arc<AtomicBool>>,
    pub names: &'p Names,
}

/// What a pass calls its threads and its work, in thread names and messages.
pub(crate) struct Names {
    /// The reader thread's name.
    pub reader: &'static str,
    /// The reader thread in an error.
    pub reader_is: &'static str,
    /// The workers' names, numbered from 0.
    pub workers: &'static str,
    /// How the work finished is said in "the loops … so far are committed".
    pub done: &'static str,
    /// What `--resume` finishes: "the run", "the rescoring".
    pub finishes: &'static str,
}

/// A chunk as the worker that finished it hands it to the consumer.
struct Delivered<R> {
    seq: u64,
    position: u64,
    complete: bool,
    /// The consumer's preparation of a complete chunk (an unfinished one is never taken), or
    /// the panic that stopped it ([`EngineError::Panicked`]).
    ready: Result<Option<R>, EngineError>,
}

/// Drives one pass: `read` on its own thread (handing each chunk to the function it is given,
/// which says `false` once the pass is stopping; the flag it is given is raised then too),
/// `work` on each of `pass.workers` threads (taking chunks from its [`Intake`] and handing each
/// one it finished to the function it is given, which says `false` once no more is wanted), and
/// `consumer` taking the finished chunks in the reader's order on this thread. Returns what the
/// reader returned and what stopped the pass early, if anything did; a failure is the consumer's
/// error (the pipeline's own are [`EngineError`]'s `Threads`, `Panicked` and `LostChunk`).
pub(crate) fn drive<T, R, C>(
    pass: &Pass<'_>,
    read: impl FnOnce(&mut dyn FnMut(T) -> bool, &AtomicBool) -> Result<R, C::Error> + Send,
    work: impl Fn(&Intake<'_, T>, &mut dyn FnMut(<C::Prepare as Prepare>::Recorded) -> bool) + Sync,
    consumer: &mut C,
) -> Result<(R, Option<Stopped>), C::Error>
where
    T: Send,
    R: Send,
    C: Consumer,
{
    let (names, progress, interrupt) = (pass.names, pass.progress, pass.interrupt);
    let jobs = pass.workers;
    let window = Window::stopped_by(pass.window, pass.budget);
    let (chunk_sender, chunk_receiver) = sync_channel::<T>(jobs + 1);
    let chunk_receiver = Mutex::new(chunk_receiver);
    // As many as the window holds: a worker driving many chunks never waits to hand one on.
    let (result_sender, result_receiver) = sync_channel(pass.window);
    let preparer = consumer.preparer();
    std::thread::scope(|threads| {
        let (window, preparer, work, chunks) = (&window, &preparer, &work, &chunk_receiver);
        let reader = std::thread::Builder::new()
            .name(names.reader.into())
            .spawn_scoped(threads, move || {
                let sender = chunk_sender;
                read(&mut |chunk| window.acquire() && sender.send(chunk).is_ok(), window.stop_flag())
            })
            .map_err(|source| EngineError::Threads { what: names.reader_is, source })?;
        let workers: Result<Vec<_>, EngineError> = (0..jobs)
            .map(|index| {
                let results = result_sender.clone();
                let worker = move || {
                    let intake = Intake::new(chunks, window);
                    let deliver = &mut |chunk| results.send(prepared(preparer, chunk)).is_ok();
                    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| work(&intake, deliver))) {
                        // The chunk it held never comes: the pass stops, and the join says why.
                        window.stop();
                        std::panic::resume_unwind(payload);
                    }
                };
                std::thread::Builder::new().name(format!("{}-{index}", names.workers)).spawn_scoped(threads, worker)
            })
            .collect::<Result<_, _>>()
            .map_err(|source| EngineError::Threads { what: "worker threads", source });
        let workers: Vec<_> = match workers {
            Ok(workers) => workers,
            Err(error) => {
                // The reader stops at its next chunk; nothing has been taken yet.
                window.stop();
                let _ = reader.join();
                return Err(error.into());
            }
        };
        drop(result_sender);

        // The consumer: chunks in the reader's order, whatever order they finish in.
        let mut waiting = BTreeMap::new();
        let mut next = pass.first_chunk;
        let mut failure: Option<C::Error> = None;
        let mut stopped: Option<Stopped> = None;
        // Once stopped, nothing is taken from the first chunk a worker left unfinished on, so
        // that what is written is every piece of a prefix of the chunks.
        let mut closed = false;
        let mut signalled_at: Option<Instant> = None;
        loop {
            let received = result_receiver.recv_timeout(LOOK_EVERY);
            if check_budget(pass.budget, &mut stopped, window) {
                if let Err(error) = consumer.commit() {
                    failure.get_or_insert(error);
                }
                progress.note(
                    "critbench: stopping: the run's budget is reached; the loops finished so far are committed, no new \
                     loop starts, and the loops in flight finish",
                );
            }
            if check_interrupt(interrupt, &mut stopped, window) {
                // What is taken becomes durable now, whatever the work in flight does.
                if let Err(error) = consumer.commit() {
                    failure.get_or_insert(error);
                }
                signalled_at = Some(Instant::now());
                let signal = match stopped {
                    Some(Stopped::Signal(signal)) => signal.name(),
                    _ => "a signal",
                };
                progress.note(&format!(
                    "critbench: stopping on {signal}: the loops {} so far are committed; waiting up to {} s for the \
                     loops in flight (a second signal stops at once)",
                    names.done,
                    INTERRUPT_GRACE.as_secs()
                ));
            }
            if let (Some(at), Some(Stopped::Signal(signal)), Some(abandon)) =
                (signalled_at, stopped, interrupt.and_then(|i| i.abandon))
                && at.elapsed() > INTERRUPT_GRACE
            {
                // Work stuck in a critic or a model call cannot be cancelled from here: commit
                // what came meanwhile and let the caller end the process; the pass stays
                // resumable.
                let _ = consumer.commit();
                progress.finish();
                note!(
                    "critbench: loops still in flight after {} s were abandoned; the finished ones are kept: run the \
                     same command with --resume to finish {}",
                    INTERRUPT_GRACE.as_secs(),
                    names.finishes
                );
                abandon(signal);
            }
            let chunk = match received {
                Ok(chunk) => chunk,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => break,
            };
            if failure.is_some() || closed {
                window.release();
                continue;
            }
            waiting.insert(chunk.seq, chunk);
            while let Some(chunk) = waiting.remove(&next) {
                next += 1;
                if !chunk.complete {
                    // An unfinished chunk is not taken at all: the journal counts whole chunks,
                    // so a resumed pass does all of it again.
                    closed = true;
                    window.release();
                    for _ in waiting.values() {
                        window.release();
                    }
                    waiting.clear();
                    break;
                }
                let accepted = match chunk.ready {
                    Ok(ready) => consumer.accept(ready.expect("a complete chunk is prepared")),
                    Err(panic) => Err(panic.into()),
                };
                if let Err(error) = accepted {
                    failure = Some(error);
                    window.stop();
                    waiting.clear();
                    break;
                }
                let (loops, passed) = consumer.counts();
                progress.update(chunk.position, loops, passed);
                window.release();
            }
        }
        let mut worker_panic = None;
        for worker in workers {
            if let Err(payload) = worker.join() {
                worker_panic = Some(panic_text(payload));
            }
        }
        let read = reader.join().unwrap_or_else(|payload| Err(EngineError::Panicked(panic_text(payload)).into()));
        if let Some(error) = failure {
            return Err(error);
        }
        if let Some(panic) = worker_panic {
            return Err(EngineError::Panicked(panic).into());
        }
        if stopped.is_some() {
            // Chunks the workers left leave gaps after `next`: what was taken stands.
            return read.map(|report| (report, stopped));
        }
        if !waiting.is_empty() {
            return Err(EngineError::LostChunk.into());
        }
        read.map(|report| (report, None))
    })
}

/// `chunk` prepared by `preparer`, on the worker that finished it.
fn prepared<P: Prepare>(preparer: &P, chunk: P::Recorded) -> Delivered<P::Ready> {
    let (seq, position, complete) = (chunk.seq(), chunk.position(), chunk.complete());
    // A panic here must still reach the consumer, which waits for every chunk in order.
    let ready = catch_unwind(AssertUnwindSafe(|| complete.then(|| preparer.prepare(chunk))))
        .map_err(|payload| EngineError::Panicked(panic_text(payload)));
    Delivered { seq, position, complete, ready }
}

/// Stops the pass at the first sight of a raised interrupt flag; `true` that once. A signal
/// after a budget stop still ends the wait for the work in flight.
fn check_interrupt(interrupt: Option<&Interrupt>, stopped: &mut Option<Stopped>, window: &Window) -> bool {
    if !matches!(stopped, Some(Stopped::Signal(_)))
        && let Some(signal) = interrupt.and_then(Interrupt::signal)
    {
        *stopped = Some(Stopped::Signal(signal));
        window.stop();
        return true;
    }
    false
}

/// Stops the pass at the first sight of the budget's raised flag; `true` that once.
fn check_budget(budget: Option<&Arc<AtomicBool>>, stopped: &mut Option<Stopped>, window: &Window) -> bool {
    if stopped.is_none() && budget.is_some_and(|flag| flag.load(Ordering::SeqCst)) {
        *stopped = Some(Stopped::Budget);
        window.stop();
        return true;
    }
    false
}

/// A panic's message, for a bug report.
pub(crate) fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    let detail = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    format!("internal error (please report): {detail}")
}

#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;
