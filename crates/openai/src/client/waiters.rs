//! The queue of callers waiting for an endpoint that can take their request, in the order they
//! came ([`Waiters`]).

use std::collections::VecDeque;
use std::task::Waker;

/// Callers waiting for a free slot, in the order they came.
#[derive(Default)]
pub(super) struct Waiters {
    next: u64,
    /// Each waiter's id, whether it may take any endpoint, and its waker.
    queue: VecDeque<(u64, bool, Waker)>,
}

impl Waiters {
    pub(super) fn next_id(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    pub(super) fn join(&mut self, id: u64, any: bool, waker: &Waker) {
        match self.queue.iter_mut().find(|(queued, ..)| *queued == id) {
            Some((_, _, queued)) => queued.clone_from(waker),
            None => self.queue.push_back((id, any, waker.clone())),
        }
    }

    /// Whether `id` was still queued.
    pub(super) fn leave(&mut self, id: u64) -> bool {
        let before = self.queue.len();
        self.queue.retain(|(queued, ..)| *queued != id);
        self.queue.len() < before
    }

    pub(super) fn take_next(&mut self) -> Vec<Waker> {
        let mut woken = Vec::new();
        let mut first = true;
        self.queue.retain(|(_, any, waker)| {
            if *any && !first {
                return true;
            }
            first &= !*any;
            woken.push(waker.clone());
            false
        });
        woken
    }
}
