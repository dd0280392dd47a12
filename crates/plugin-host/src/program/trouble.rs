//! What went wrong with a critic's child processes over a run: every child stopped because it could
//! no longer be used, by cause, counted as it happens, so that errors a retry hid are still told.

use std::sync::atomic::{AtomicU64, Ordering};

use super::{Broken, Cause};

/// A critic's child processes stopped after a failure, by cause: each was replaced by a fresh child
/// for the next request (a restart), and the request it failed on was retried (or recorded as the
/// conservative failure after its last attempt). `manifest.json` records it per critic and
/// evaluator (`plugins[].process`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChildTrouble {
    /// Children stopped after a failure, each replaced by a fresh one.
    pub restarts: u64,
    /// Of those, the ones that broke the protocol: a line that is not protocol JSON, a second
    /// answer, an answer to another request or to none, bytes after a message written at once.
    pub protocol_errors: u64,
    /// Of those, the ones that gave no answer within the critic's `timeout_s`.
    pub timeouts: u64,
    /// Of those, the ones that died: exited, were killed (a crash, the memory limit) or closed
    /// their output.
    pub exits: u64,
}

/// The counts of one critic's children, shared with whoever reports them.
#[derive(Debug, Default)]
pub struct ChildCounters {
    restarts: AtomicU64,
    protocol_errors: AtomicU64,
    timeouts: AtomicU64,
    exits: AtomicU64,
}

impl ChildCounters {
    /// Counts a child stopped because of `broken`.
    pub(crate) fn stopped(&self, broken: &Broken) {
        self.restarts.fetch_add(1, Ordering::Relaxed);
        let cause = match broken.cause() {
            Cause::Protocol => &self.protocol_errors,
            Cause::Timeout => &self.timeouts,
            Cause::Died => &self.exits,
            Cause::Other => return,
        };
        cause.fetch_add(1, Ordering::Relaxed);
    }

    /// The counts so far.
    pub fn snapshot(&self) -> ChildTrouble {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        ChildTrouble {
            restarts: load(&self.restarts),
            protocol_errors: load(&self.protocol_errors),
            timeouts: load(&self.timeouts),
            exits: load(&self.exits),
        }
    }
}
