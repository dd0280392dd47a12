//! The driver's behaviour, with a reader, workers and a consumer of its tests' own: chunks taken
//! in order whatever order they finish in; after a signal, the chunks finished within the grace
//! period taken and committed, up to the first one a worker left unfinished; a failed write ends
//! the pass with its error.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::*;

/// A chunk as the test's workers hand it back.
struct Done {
    seq: u64,
    complete: bool,
}

impl Recorded for Done {
    fn seq(&self) -> u64 {
        self.seq
    }

    fn position(&self) -> u64 {
        self.seq
    }

    fn complete(&self) -> bool {
        self.complete
    }
}

/// Takes chunks, keeping their numbers; `commit` makes what it took so far committed.
#[derive(Default)]
struct Taking {
    taken: Vec<u64>,
    committed: Vec<u64>,
    /// Raises this flag (a signal's) once it took this chunk.
    signal_after: Option<(u64, Arc<AtomicUsize>)>,
    /// Fails to write this chunk.
    fail_at: Option<u64>,
}

impl Consumer for Taking {
    type Prepare = AsRecorded<Done>;
    type Error = EngineError;

    fn preparer(&self) -> AsRecorded<Done> {
        AsRecorded::new()
    }

    fn accept(&mut self, chunk: Done) -> Result<(), EngineError> {
        if self.fail_at == Some(chunk.seq) {
            return Err(EngineError::Io { context: format!("cannot write chunk {}", chunk.seq), source: full_disk() });
        }
        self.taken.push(chunk.seq);
        if let Some((after, flag)) = &self.signal_after
            && *after == chunk.seq
        {
            flag.store(StopSignal::Interrupt.number(), Ordering::SeqCst);
        }
        Ok(())
    }

    fn counts(&self) -> (u64, u64) {
        (self.taken.len() as u64, 0)
    }

    fn commit(&mut self) -> Result<(), EngineError> {
        self.committed.clone_from(&self.taken);
        Ok(())
    }
}

fn full_disk() -> std::io::Error {
    std::io::Error::other("no space left on device")
}

const NAMES: Names = Names {
    reader: "test-reader",
    reader_is: "the test's reader",
    workers: "test-worker",
    done: "done",
    finishes: "it",
};

/// Drives chunks `0..chunks` through `workers` workers, each chunk done by `work`.
fn drive_chunks(
    chunks: u64,
    workers: usize,
    interrupt: Option<&Interrupt>,
    consumer: &mut Taking,
    work: impl Fn(u64, &AtomicBool) -> Done + Sync,
) -> Result<((), Option<Stopped>), EngineError> {
    let progress = Progress::new(true, "the test", "testing", || chunks);
    let pass = Pass {
        workers,
        window: 2 * workers + 2,
        first_chunk: 0,
        progress: &progress,
        interrupt,
        budget: None,
        names: &NAMES,
    };
    let read = |admit: &mut dyn FnMut(u64) -> bool, _: &AtomicBool| {
        for seq in 0..chunks {
            if !admit(seq) {
                break;
            }
        }
        Ok(())
    };
    let worker = |intake: &Intake<'_, u64>, deliver: &mut dyn FnMut(Done) -> bool| {
        while let Some(seq) = intake.next() {
            if !deliver(work(seq, intake.stop())) {
                break;
            }
        }
    };
    drive(&pass, read, worker, consumer)
}

/// Waits until `flag` is raised.
fn until(flag: &AtomicBool) {
    while !flag.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn chunks_are_taken_in_the_readers_order_whatever_order_they_finish_in() {
    let mut taking = Taking::default();
    let done = drive_chunks(40, 4, None, &mut taking, |seq, _| {
        // Later chunks finish first.
        std::thread::sleep(Duration::from_millis((40 - seq) % 7));
        Done { seq, complete: true }
    });
    assert_eq!(done.unwrap().1, None);
    assert_eq!(taking.taken, (0..40).collect::<Vec<_>>());
}

/// The run's behaviour after a signal, and the rescoring's (the one driver is both's): what was
/// taken is committed at once; a chunk its worker finishes within the grace period is taken and
/// committed too; nothing is taken from the first chunk a worker left unfinished on.
#[test]
fn after_a_signal_the_chunks_finished_within_the_grace_period_are_taken_up_to_the_first_unfinished() {
    let interrupt = Interrupt::new();
    let mut taking = Taking { signal_after: Some((1, Arc::clone(&interrupt.raised))), ..Taking::default() };
    let done = drive_chunks(8, 2, Some(&interrupt), &mut taking, |seq, stop| match seq {
        // In flight when the signal comes: chunk 2 finishes a little later, chunk 3 is left.
        2 => {
            until(stop);
            std::thread::sleep(Duration::from_millis(300));
            Done { seq, complete: true }
        }
        3 => {
            until(stop);
            Done { seq, complete: false }
        }
        _ => Done { seq, complete: true },
    });
    assert_eq!(done.unwrap().1, Some(Stopped::Signal(StopSignal::Interrupt)));
    assert_eq!(taking.committed, [0, 1], "what was taken is committed when the signal comes");
    assert_eq!(taking.taken, [0, 1, 2], "the chunk finished after the signal is taken; none after the unfinished one");
    taking.commit().unwrap();
    assert_eq!(taking.committed, [0, 1, 2]);
}

#[test]
fn a_failed_write_ends_the_pass_with_its_error_and_takes_nothing_after_it() {
    let mut taking = Taking { fail_at: Some(5), ..Taking::default() };
    let done = drive_chunks(200, 3, None, &mut taking, |seq, _| Done { seq, complete: true });
    let error = done.unwrap_err().to_string();
    assert_eq!(error, "cannot write chunk 5: no space left on device");
    assert_eq!(taking.taken, [0, 1, 2, 3, 4]);
}

#[test]
fn a_panicking_worker_is_an_error_not_a_hang() {
    let mut taking = Taking::default();
    let done = drive_chunks(500, 2, None, &mut taking, |seq, _| {
        assert!(seq != 4, "chunk 4 goes wrong");
        Done { seq, complete: true }
    });
    let error = done.unwrap_err().to_string();
    assert!(error.contains("internal error (please report): chunk 4 goes wrong"), "{error}");
}
