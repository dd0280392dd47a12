//! A worker whose loops await their answers (from a model server, a writer program or a critic of
//! the pipelined form) drives many chunks at once ([`work_together`]), each a future woken by the
//! answers its loops await, within the worker's room for loops in flight ([`Room`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use super::ChunkResult;
use super::chunk::{loops_of, record_chunk};
use super::in_flight::Room;
use crate::run::pipeline::Taken;
use crate::run::plan::{Plan, Scope};
use crate::run::source::Chunk;

/// The chunks a worker has in flight, each a future woken by the answers its loops await.
struct Slot<'a> {
    recording: Pin<Box<dyn Future<Output = ChunkResult> + 'a>>,
    waker: Waker,
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

/// A worker whose loops await their answers: takes chunks from `intake` (waiting there only when
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
                    let recording = Box::pin(record_chunk(plan, chunk, scope, stop, &room));
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
        // The requests the loops ask in this pass go out together, in one write per process.
        let _held = critbench_plugin_host::hold_requests();
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
