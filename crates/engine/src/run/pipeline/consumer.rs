//! What a pass's consumer is to the driver: it takes the chunks in the reader's order
//! ([`Consumer`]), after the work that needs no order was done on the worker that did the chunk
//! ([`Prepare`]).

use std::marker::PhantomData;

use crate::EngineError;

/// A chunk as a worker hands it back.
pub(crate) trait Recorded: Send {
    /// Its place in the reader's order.
    fn seq(&self) -> u64;
    /// How far the pass is once it is taken, in the progress bar's unit.
    fn position(&self) -> u64;
    /// Whether all of it was done: a worker leaves a chunk unfinished once the pass stops, and
    /// an unfinished chunk is never taken.
    fn complete(&self) -> bool;
}

/// Takes chunks in the reader's order.
pub(crate) trait Consumer {
    /// The consumer's work on a chunk that needs no order.
    type Prepare: Prepare;

    /// What the pass fails with: its command's error, which holds the pipeline's own failures
    /// (threads, panics, a chunk lost) as it holds every command's.
    type Error: From<EngineError> + Send;

    /// That work, shared by the workers: each does it on the chunks it finishes, before the
    /// chunks wait for their turn.
    fn preparer(&self) -> Self::Prepare;

    /// Takes the next chunk in order, as the worker prepared it.
    fn accept(&mut self, chunk: Ready<Self>) -> Result<(), Self::Error>;

    /// Loops taken and loops passed so far, for the progress bar.
    fn counts(&self) -> (u64, u64);

    /// Makes what was taken so far durable, when the consumer keeps anything.
    fn commit(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// What a consumer takes of a chunk: its preparer's work.
pub(crate) type Ready<C> = <<C as Consumer>::Prepare as Prepare>::Ready;

/// A consumer's work on a finished chunk that needs no order (building its rows, freeing its
/// tasks), done on the worker that finished it, so that the one thread that takes the chunks in
/// order does only what must be done in order.
pub(crate) trait Prepare: Sync {
    /// The chunks the workers hand back.
    type Recorded: Recorded;
    /// What the consumer then takes.
    type Ready: Send;

    fn prepare(&self, chunk: Self::Recorded) -> Self::Ready;
}

/// Hands a chunk on as it was recorded: for a consumer whose work is all in order.
pub(crate) struct AsRecorded<R>(PhantomData<fn() -> R>);

impl<R> AsRecorded<R> {
    pub(crate) fn new() -> AsRecorded<R> {
        AsRecorded(PhantomData)
    }
}

impl<R: Recorded> Prepare for AsRecorded<R> {
    type Recorded = R;
    type Ready = R;

    fn prepare(&self, chunk: R) -> R {
        chunk
    }
}
