//! A program of the simple form: one request in flight per process, each asked on the caller's
//! thread, the processes started as they are needed up to a most; and the one request a program of
//! either form is sent on its own, between its hello and its first request.

use std::sync::{Condvar, Mutex};
use std::time::Instant;

use super::start::{Child, Failure, Starter};
use super::{Answered, Ask, Broken};
use crate::protocol::{self, Reply};
use crate::services::CallScope;

/// The processes of one program of the simple form; dropped, each sees its stdin close and goes
/// with its process group.
pub(crate) struct Processes {
    pub(super) starter: Starter,
    most: usize,
    pool: Mutex<Pool>,
    freed: Condvar,
}

struct Pool {
    idle: Vec<Child>,
    /// Processes idle or in use.
    live: usize,
}

impl Processes {
    /// The processes of `starter`'s program, `first` already started; up to `most` at once.
    pub(super) fn new(starter: Starter, first: Child, most: usize) -> Processes {
        let pool = Pool { idle: vec![first], live: 1 };
        Processes { starter, most: most.max(1), pool: Mutex::new(pool), freed: Condvar::new() }
    }

    /// One request to a free process (started when none is), its answer back, with `ask`'s scope
    /// as the program's service calls left it. A process that broke down is stopped, counted and
    /// replaced at the next request.
    pub(super) fn ask(&self, ask: Ask) -> Answered {
        let Ask { body, model, mut scope, .. } = ask;
        let mut child = match self.take() {
            Some(child) => child,
            None => match self.starter.start() {
                Ok(child) => child,
                Err(error) => {
                    self.release(None);
                    return (Err(Failure::NotStarted(error.into())), scope);
                }
            },
        };
        let answer = match self.exchange(&mut child, &body, model.as_deref(), scope.as_mut()) {
            Ok(answer) => {
                self.release(Some(child));
                answer
            }
            Err(broken) => {
                let error = self.starter.stop(child, broken);
                self.release(None);
                Err(error)
            }
        };
        (answer, scope)
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

    /// One request and its answer, serving the program's service calls in between: `Ok(answer)`,
    /// or why the process can no longer be used.
    fn exchange(
        &self,
        child: &mut Child,
        body: &str,
        model: Option<&str>,
        mut scope: Option<&mut CallScope>,
    ) -> Result<Result<String, Failure>, Broken> {
        child.program.refuse_unasked()?;
        let role = self.starter.launch.role;
        let id = child.take_id();
        let mut asked = Instant::now();
        let timeout = self.starter.timeout;
        let line = super::ask::with_model(protocol::request_line(role, id, None, body), model);
        child.program.send(&line).map_err(|source| Broken::Send { what: "the request", source })?;
        let mut deadline = asked + timeout;
        loop {
            let (line, arrived) = child.program.next_line(deadline, timeout)?;
            // A line that arrived before the request was sent answers nothing.
            if arrived < asked {
                return Err(Broken::unasked(&line));
            }
            match protocol::reply(role, &line, id)? {
                Reply::Answer(text) => return Ok(Ok(text)),
                Reply::Error(message) => return Ok(Err(Failure::Answered(message))),
                Reply::Service { name, request } => {
                    let answer = self.starter.serve(&name, &request, scope.as_deref_mut(), &line)?;
                    asked = Instant::now();
                    child.program.send(&protocol::service_answer_line(id, answer)).map_err(Broken::AnswerService)?;
                    // The timeout measures the program, not the host's services.
                    deadline = Instant::now() + timeout;
                }
                Reply::Opened => unreachable!("`reply` refuses an `ok` in the simple form"),
            }
        }
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        let pool = self.pool.get_mut().unwrap_or_else(|e| e.into_inner());
        for child in pool.idle.drain(..) {
            child.program.close();
        }
    }
}
