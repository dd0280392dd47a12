//! Chunks between the reader and the consumer ([`Window`]), and the workers' side of the chunks
//! handed on ([`Intake`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::{Arc, Condvar, Mutex};

/// Chunks between the reader and the consumer, at most: the reader waits for a permit before it
/// hands a chunk on, and the consumer gives the permit back once the chunk is taken.
pub(crate) struct Window {
    free: Mutex<usize>,
    changed: Condvar,
    /// The workers look at it before every piece of work; a budget's flag when the pass has one,
    /// so that no loop starts once the model client has seen the budget reached.
    stop: Arc<AtomicBool>,
}

impl Window {
    /// A window whose `stop` is `flag` when given: a budget's, raised by the model client.
    pub(crate) fn stopped_by(size: usize, flag: Option<&Arc<AtomicBool>>) -> Window {
        let stop = flag.cloned().unwrap_or_default();
        Window { free: Mutex::new(size), changed: Condvar::new(), stop }
    }

    /// Waits for a permit; `false` once the pass is stopping.
    pub(crate) fn acquire(&self) -> bool {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 && !self.stopped() {
            free = self.changed.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        if self.stopped() {
            return false;
        }
        *free -= 1;
        true
    }

    pub(crate) fn release(&self) {
        *self.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.changed.notify_one();
    }

    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        let _guard = self.free.lock().unwrap_or_else(|e| e.into_inner());
        self.changed.notify_all();
    }

    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// The flag the workers look at before every piece of work, and a waiting reader too.
    pub(crate) fn stop_flag(&self) -> &AtomicBool {
        &self.stop
    }
}

/// What a worker finds when it asks for a chunk without waiting.
pub(crate) enum Taken<T> {
    Chunk(T),
    /// None now; ask again later.
    Empty,
    /// None ever again.
    Closed,
}

impl<T> Taken<T> {
    pub(crate) fn map<U>(self, f: impl FnOnce(T) -> U) -> Taken<U> {
        match self {
            Taken::Chunk(chunk) => Taken::Chunk(f(chunk)),
            Taken::Empty => Taken::Empty,
            Taken::Closed => Taken::Closed,
        }
    }
}

/// The chunks the reader handed on, as every worker takes them. A chunk that arrives once the
/// pass is stopping is handed back (its permit returned) without being worked on.
pub(crate) struct Intake<'w, T> {
    chunks: &'w Mutex<Receiver<T>>,
    window: &'w Window,
}

impl<'w, T> Intake<'w, T> {
    pub(crate) fn new(chunks: &'w Mutex<Receiver<T>>, window: &'w Window) -> Intake<'w, T> {
        Intake { chunks, window }
    }

    /// The next chunk, waiting for one; `None` once the reader is done and every chunk taken.
    pub(crate) fn next(&self) -> Option<T> {
        loop {
            // The stop is read while the receiver is held: the chunks kept are those received
            // before it, a prefix of the reader's order, so none before a kept one is dropped.
            let chunks = self.chunks.lock().unwrap_or_else(|e| e.into_inner());
            let chunk = chunks.recv().ok()?;
            if self.window.stopped() {
                drop(chunks);
                self.window.release();
                continue;
            }
            return Some(chunk);
        }
    }

    /// The next chunk for a worker that drives many: waits for one only when `wait` (it has none
    /// in flight), and never waits for another worker that is waiting.
    pub(crate) fn take(&self, wait: bool) -> Taken<T> {
        loop {
            // As in `next`, the stop is read while the receiver is held.
            let (received, stopped) = if wait {
                let chunks = self.chunks.lock().unwrap_or_else(|e| e.into_inner());
                (chunks.recv().map_err(|_| TryRecvError::Disconnected), self.window.stopped())
            } else {
                let chunks = match self.chunks.try_lock() {
                    Ok(chunks) => chunks,
                    Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
                    Err(std::sync::TryLockError::WouldBlock) => return Taken::Empty,
                };
                (chunks.try_recv(), self.window.stopped())
            };
            match received {
                Ok(_) if stopped => self.window.release(),
                Ok(chunk) => return Taken::Chunk(chunk),
                Err(TryRecvError::Empty) => return Taken::Empty,
                Err(TryRecvError::Disconnected) => return Taken::Closed,
            }
        }
    }

    /// The pass's stop flag: work looks at it before each piece (a loop, a critique) and leaves
    /// its chunk unfinished once it is raised.
    pub(crate) fn stop(&self) -> &'w AtomicBool {
        self.window.stop_flag()
    }
}
