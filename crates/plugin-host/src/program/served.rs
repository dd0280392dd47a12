//! A program's processes in the form its hello chose ([`Served`]), asked one way whatever the form:
//! a request's answer is a future ([`Asking`]), ready at once from the simple form and awaited
//! from the pipelined; [`block_on`] waits for it where nothing awaits.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::ask::{Answered, Ask};
use super::start::{Child, Starter};
use super::{pipelined, simple};
use crate::protocol::Form;

/// A program's processes, in the form its hello chose.
pub(crate) enum Served {
    Simple(Box<simple::Processes>),
    Pipelined(pipelined::Lanes),
}

impl Served {
    /// Serves requests with `starter`'s program, `first` its first process: up to `most` processes,
    /// and of the pipelined form up to `in_flight` requests in flight across them.
    pub(crate) fn new(starter: Starter, first: Child, most: usize, in_flight: usize) -> Served {
        match first.form {
            Form::Simple => Served::Simple(Box::new(simple::Processes::new(starter, first, most))),
            Form::Pipelined => Served::Pipelined(pipelined::Lanes::new(starter, first, most, in_flight)),
        }
    }

    pub(crate) fn starter(&self) -> &Starter {
        match self {
            Served::Simple(processes) => &processes.starter,
            Served::Pipelined(lanes) => lanes.starter(),
        }
    }

    /// Whether the program takes many requests at once, and holds tasks open.
    pub(crate) fn pipelined(&self) -> bool {
        matches!(self, Served::Pipelined(_))
    }

    /// One request: to a program of the simple form asked on this thread, which waits; to one of
    /// the pipelined form queued, its answer awaited.
    pub(crate) fn ask(&self, ask: Ask) -> Asking {
        match self {
            Served::Simple(processes) => Asking::Ready(Some(processes.ask(ask))),
            Served::Pipelined(lanes) => Asking::Waiting(lanes.submit(ask)),
        }
    }
}

/// The future of a request's answer ([`Served::ask`]).
pub(crate) enum Asking {
    Ready(Option<Answered>),
    Waiting(pipelined::Awaiting),
}

impl Future for Asking {
    type Output = Answered;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Answered> {
        match self.get_mut() {
            Asking::Ready(answered) => Poll::Ready(answered.take().expect("an answer is taken once")),
            Asking::Waiting(awaiting) => Pin::new(awaiting).poll(context),
        }
    }
}

/// Runs `future` on this thread to its end: a program's answer asked where nothing awaits, woken
/// by the driver thread that reads it.
pub fn block_on<T>(future: impl Future<Output = T>) -> T {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut context = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(value) = future.as_mut().poll(&mut context) {
            return value;
        }
        // The answer may wait on requests this thread holds.
        super::pipelined::release_held();
        std::thread::park();
    }
}
