//! For the tests of the pipeline's consumers: a pass of made-up chunks through a real consumer,
//! stopped by a signal while two chunks are in flight.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::{Consumer, Intake, Names, Pass, Prepare, Progress, Stopped, drive};
use crate::stop::{Interrupt, StopSignal};

const NAMES: Names = Names {
    reader: "test-reader",
    reader_is: "the test's reader",
    workers: "test-worker",
    done: "done",
    finishes: "it",
};

/// Drives chunks `0..6` into `consumer` on two workers, each made by `chunk(seq, complete)`: chunks
/// 0 and 1 are done at once; the worker of chunk 2 raises SIGINT, waits until the pass stops, and
/// finishes the chunk 300 ms later, within the grace period; the worker of chunk 3 leaves it
/// unfinished once the pass stops. What the pass returns: how it stopped.
pub(crate) fn signal_while_two_chunks_are_in_flight<C>(
    consumer: &mut C,
    chunk: impl Fn(u64, bool) -> <C::Prepare as Prepare>::Recorded + Sync,
) -> Option<Stopped>
where
    C: Consumer,
    C::Error: std::fmt::Debug,
{
    let interrupt = Interrupt::new();
    let progress = Progress::new(true, "the test", "testing", || 6);
    let pass = Pass {
        workers: 2,
        window: 6,
        first_chunk: 0,
        progress: &progress,
        interrupt: Some(&interrupt),
        budget: None,
        names: &NAMES,
    };
    let read = |admit: &mut dyn FnMut(u64) -> bool, _: &AtomicBool| {
        for seq in 0..6 {
            if !admit(seq) {
                break;
            }
        }
        Ok(())
    };
    let until_stopped = |stop: &AtomicBool| {
        while !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(2));
        }
    };
    let work = |intake: &Intake<'_, u64>, deliver: &mut dyn FnMut(<C::Prepare as Prepare>::Recorded) -> bool| {
        while let Some(seq) = intake.next() {
            let complete = match seq {
                2 => {
                    interrupt.raised.store(StopSignal::Interrupt.number(), Ordering::SeqCst);
                    until_stopped(intake.stop());
                    std::thread::sleep(Duration::from_millis(300));
                    true
                }
                3 => {
                    until_stopped(intake.stop());
                    false
                }
                _ => true,
            };
            if !deliver(chunk(seq, complete)) {
                break;
            }
        }
    };
    let ((), stopped) = drive(&pass, read, work, consumer).expect("the pass ends without a failure");
    stopped
}
