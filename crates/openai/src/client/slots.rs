//! Waiting for an endpoint that can take a request: the rotation picks one, callers without one
//! queue in the order they came and are woken as requests finish or a pause ends.

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

/// A caller's place among the [`Waiters`](super::Waiters): given up when its future is dropped, and a wake it
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
