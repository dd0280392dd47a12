//! A writer program in the simple form: one request in flight per process, the processes started
//! as they are needed up to `processes`.

use std::sync::{Condvar, Mutex};
use std::time::Instant;

use super::start::{Child, Starter, WriteError, answer};
use crate::program::{Broken, parse_message};

/// The processes of one writer program of the simple form.
pub(super) struct Processes {
    starter: Starter,
    most: usize,
    pool: Mutex<Pool>,
    freed: Condvar,
}

#[derive(Default)]
struct Pool {
    idle: Vec<Child>,
    /// Processes idle or in use.
    live: usize,
}

impl Processes {
    /// The processes of `starter`'s program, `first` already started; up to `most` at once.
    pub(super) fn new(starter: Starter, first: Child, most: usize) -> Processes {
        Processes { starter, most, pool: Mutex::new(Pool { idle: vec![first], live: 1 }), freed: Condvar::new() }
    }

    pub(super) fn starter(&self) -> &Starter {
        &self.starter
    }

    /// One draft: `request` (a write request's JSON) to a free process, its answer back. A
    /// process that broke down is stopped, counted and replaced at the next request.
    pub(super) fn write(&self, request: &str) -> Result<String, WriteError> {
        let mut child = match self.take() {
            Some(child) => child,
            None => match self.starter.start() {
                Ok((child, _)) => child,
                Err(error) => {
                    self.release(None);
                    return Err(WriteError::NotStarted(error.into()));
                }
            },
        };
        match self.exchange(&mut child, request) {
            Ok(answer) => {
                self.release(Some(child));
                answer
            }
            Err(broken) => {
                let error = self.starter.stop(child, broken);
                self.release(None);
                Err(error)
            }
        }
    }

    /// An idle process, or `None` when the caller is to start one (counted as live already);
    /// waits while every allowed process is busy.
    fn take(&self) -> Option<Child> {
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(child) = pool.idle.pop() {
                return Some(child);
            }
            if pool.live < self.most {
                pool.live += 1;
                return None;
            }
            pool = self.freed.wait(pool).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Hands a process back, or accounts for one that is gone.
    fn release(&self, child: Option<Child>) {
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        match child {
            Some(child) => pool.idle.push(child),
            None => pool.live -= 1,
        }
        drop(pool);
        self.freed.notify_one();
    }

    /// One request and its answer: `Ok(Ok(draft))`, `Ok(Err(the writer's error))`, or why the
    /// process can no longer be used.
    fn exchange(&self, child: &mut Child, request: &str) -> Result<Result<String, WriteError>, Broken> {
        child.program.refuse_unasked()?;
        let id = child.next_id;
        child.next_id += 1;
        let asked = Instant::now();
        let timeout = self.starter.timeout;
        child
            .program
            .send(&super::start::write_line(id, request))
            .map_err(|source| Broken::Send { what: "the request", source })?;
        let (line, arrived) = child.program.next_line(asked + timeout, timeout)?;
        if arrived < asked {
            return Err(Broken::unasked(&line));
        }
        Ok(answer(&parse_message(&line)?, id)?)
    }
}
