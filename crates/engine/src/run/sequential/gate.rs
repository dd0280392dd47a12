//! Between the sink, which decides looks, and the source, which admits chunks: a chunk of look
//! L + 2 is admitted once look L is decided to continue, and none past L + 1 once look L stops
//! the run. What a run admits is then fixed by the decisions alone, never by how fast the loops
//! finish, so its tables are the same at every `--jobs`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// How often a waiting source checks whether the run is stopping.
const STOP_CHECK: Duration = Duration::from_millis(50);

/// The looks decided so far, shared by the source thread and the sink.
pub(crate) struct Gate {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Clone, Copy, Debug, Default)]
struct State {
    /// Looks decided so far (every one before the stopping look decided to continue).
    decided: u64,
    /// The look that stopped the run, once one has.
    stopped: Option<u64>,
}

impl State {
    /// Whether the chunks of `look` are admitted (`Some(true)`), never will be (`Some(false)`), or
    /// wait for a decision (`None`).
    fn admits(self, look: u64) -> Option<bool> {
        match self.stopped {
            Some(stopped) => Some(look <= stopped + 1),
            None if look <= self.decided + 2 => Some(true),
            None => None,
        }
    }
}

impl Gate {
    pub(crate) fn new() -> Gate {
        Gate { state: Mutex::new(State::default()), changed: Condvar::new() }
    }

    /// Records the decision of `look`: `stops` when the rule fired there.
    pub(crate) fn decide(&self, look: u64, stops: bool) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.decided = state.decided.max(look);
        if stops && state.stopped.is_none() {
            state.stopped = Some(look);
        }
        self.changed.notify_all();
    }

    /// Whether no chunk of `look` will ever be admitted.
    pub(crate) fn closed(&self, look: u64) -> bool {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).admits(look) == Some(false)
    }

    /// Waits until the chunks of `look` may be admitted: `true` then, `false` when they never will
    /// be or once `stop` is raised (the run is ending).
    pub(crate) fn wait(&self, look: u64, stop: &AtomicBool) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(admitted) = state.admits(look) {
                return admitted;
            }
            if stop.load(Ordering::SeqCst) {
                return false;
            }
            state = self.changed.wait_timeout(state, STOP_CHECK).unwrap_or_else(|e| e.into_inner()).0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn two_looks_go_ahead_and_a_stop_closes_everything_past_the_next_look() {
        let gate = Gate::new();
        let stop = AtomicBool::new(false);
        assert!(gate.wait(1, &stop) && gate.wait(2, &stop));
        assert!(!gate.closed(3));
        gate.decide(1, false);
        assert!(gate.wait(3, &stop));
        gate.decide(2, true);
        assert!(gate.wait(3, &stop), "the look after the deciding one was admitted already");
        assert!(gate.closed(4) && !gate.wait(4, &stop));
        // A later look's decision does not move the stop.
        gate.decide(3, true);
        assert!(gate.closed(4) && !gate.closed(3));
    }

    #[test]
    fn a_waiting_source_wakes_on_the_decision_or_on_stop() {
        let gate = Arc::new(Gate::new());
        let stop = Arc::new(AtomicBool::new(false));
        let waiter = {
            let (gate, stop) = (Arc::clone(&gate), Arc::clone(&stop));
            std::thread::spawn(move || gate.wait(3, &stop))
        };
        std::thread::sleep(Duration::from_millis(20));
        gate.decide(1, false);
        assert!(waiter.join().unwrap());
        let waiter = {
            let (gate, stop) = (Arc::clone(&gate), Arc::clone(&stop));
            std::thread::spawn(move || gate.wait(5, &stop))
        };
        std::thread::sleep(Duration::from_millis(20));
        stop.store(true, Ordering::SeqCst);
        assert!(!waiter.join().unwrap(), "a stopping run does not admit the chunk");
    }
}
