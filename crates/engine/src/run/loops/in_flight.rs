//! How many loops a worker keeps in flight at once: the room its chunks share ([`Room`]), and at
//! most [`IN_FLIGHT`] of one chunk's.

use std::cell::Cell;

/// The loops of one chunk a worker keeps in flight at most, and the room of a worker whose loops
/// await a critic of the pipelined form: the requests of many loops go out to the critic's process
/// in one write and their answers come back in one read, so a pipe write, a read and the wakes of
/// two threads and a process are paid per many critiques (docs/performance.md has the
/// measurement), and a loop in flight costs only its own state.
pub const IN_FLIGHT: usize = 256;

/// A worker's room for loops in flight, shared by its chunks: a chunk holds room for as many
/// loops as it may still have in flight at once, and gives it back as its loops are recorded, so
/// that a chunk waiting for its last loop holds room for that loop alone and the worker starts
/// other chunks' loops in the room the finished ones left.
pub(crate) struct Room {
    at_most: usize,
    held: Cell<usize>,
}

impl Room {
    pub(super) fn new(at_most: usize) -> Room {
        Room { at_most: at_most.max(1), held: Cell::new(0) }
    }

    /// The most loops of one chunk in flight at once.
    pub(super) fn most_per_chunk(&self) -> usize {
        IN_FLIGHT.min(self.at_most)
    }

    /// How many of a chunk's `loops` are in flight at once.
    pub(super) fn per_chunk(&self, loops: usize) -> usize {
        loops.min(self.most_per_chunk())
    }

    pub(super) fn has_room(&self) -> bool {
        self.held.get() < self.at_most
    }

    pub(super) fn take(&self, loops: usize) {
        self.held.set(self.held.get() + self.per_chunk(loops));
    }

    pub(super) fn give_back(&self, loops: usize) {
        self.held.set(self.held.get() - loops);
    }
}
