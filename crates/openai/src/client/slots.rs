//! Waiting for an endpoint that can take a request: the rotation picks one, callers without one
//! queue in the order they came and are woken as requests finish or a pause ends.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::MutexGuard;
use std::task::{Poll, Waker};
use std::time::Duration;

use super::{Client, lock};
use crate::pool::{Outcome, Pick, Rotation, Ticket};
use crate::settings::MAX_BACKOFF;

impl Client {
    pub(super) fn lock_rotation(&self) -> MutexGuard<'_, Rotation> {
        lock(&self.rotation)
    }

    /// Waits until an endpoint can take the request (see `pool` for which).
    pub(super) async fn acquire(&self, avoid: &[usize]) -> Ticket {
        let mut queued = Queued { client: self, id: lock(&self.waiters).next_id(), served: false };
        let mut timer: Option<Pin<Box<tokio::time::Sleep>>> = None;
        std::future::poll_fn(|context| {
            let mut rotation = self.lock_rotation();
            match rotation.pick(self.now(), avoid) {
                Pick::Go(ticket) => {
                    drop(rotation);
                    queued.served = true;
                    lock(&self.waiters).leave(queued.id);
                    // Several slots may be free (the limit grew, several requests ended): the
                    // next waiter looks too, and wakes the one after if it gets one.
                    self.wake_waiters();
                    Poll::Ready(ticket)
                }
                Pick::Wait(at_most) => {
                    // Queued under the rotation's lock, which `release` takes before it wakes:
                    // a slot freed after this pick finds this waiter.
                    lock(&self.waiters).join(queued.id, avoid.is_empty(), context.waker());
                    drop(rotation);
                    if let Some(at_most) = at_most {
                        let sleep = timer.insert(Box::pin(tokio::time::sleep(at_most.max(Duration::from_millis(1)))));
                        if sleep.as_mut().poll(context).is_ready() {
                            context.waker().wake_by_ref();
                        }
                    }
                    Poll::Pending
                }
            }
        })
        .await
    }

    pub(super) fn release(&self, ticket: Ticket, outcome: Outcome) {
        self.lock_rotation().finish(ticket, outcome, self.now());
        self.wake_waiters();
    }

    /// Wakes the first waiter that may take any endpoint, and every waiter that avoids some (a
    /// retry elsewhere): only the latter can be unable to take a slot the first could.
    fn wake_waiters(&self) {
        let woken = lock(&self.waiters).take_next();
        woken.into_iter().for_each(Waker::wake);
    }

    /// Holds every request to `endpoint` for `wait`, as its server asked.
    pub(super) fn pause(&self, endpoint: usize, wait: Duration) {
        let now = self.now();
        self.lock_rotation().pause(endpoint, now + wait.min(MAX_BACKOFF), now);
    }
}

/// Callers waiting for a free slot, in the order they came.
#[derive(Default)]
pub(super) struct Waiters {
    next: u64,
    /// Each waiter's id, whether it may take any endpoint, and its waker.
    queue: VecDeque<(u64, bool, Waker)>,
}

impl Waiters {
    fn next_id(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    fn join(&mut self, id: u64, any: bool, waker: &Waker) {
        match self.queue.iter_mut().find(|(queued, ..)| *queued == id) {
            Some((_, _, queued)) => queued.clone_from(waker),
            None => self.queue.push_back((id, any, waker.clone())),
        }
    }

    /// Whether `id` was still queued.
    fn leave(&mut self, id: u64) -> bool {
        let before = self.queue.len();
        self.queue.retain(|(queued, ..)| *queued != id);
        self.queue.len() < before
    }

    fn take_next(&mut self) -> Vec<Waker> {
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

/// A caller's place among the [`Waiters`]: given up when its future is dropped, and a wake it
/// was given but did not use passed on.
struct Queued<'a> {
    client: &'a Client,
    id: u64,
    served: bool,
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        if !self.served && !lock(&self.client.waiters).leave(self.id) {
            self.client.wake_waiters();
        }
    }
}
