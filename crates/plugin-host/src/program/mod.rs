//! A program speaking the protocol (`docs/PROTOCOL.md`) in child processes, whatever its role: a
//! critic or evaluator asked for critiques, a writer asked for drafts ([`crate::protocol::Role`]).
//! Its lifecycle ([`child`]: spawned as the leader of a process group that dies with critbench,
//! killed with everything it started, its end told in words), the line reader ([`lines`]), the
//! start ([`start`]: hello read by the role, config handed over, stopped and counted when it
//! breaks), and the two forms, each in one place: one request in flight per process, asked on the
//! caller's thread ([`simple`]), or many, queued for driver threads and awaited ([`pipelined`]).
//! [`Served`] is either ([`served`]); a role asks it with [`Served::ask`] and reads the answer.
//!
//! The program is named in messages by its role: "the critic process exited with status 3", "the
//! writer wrote a line that is not protocol JSON".

mod ask;
pub(crate) mod child;
mod failure;
pub(crate) mod lines;
mod pipelined;
pub(crate) mod process_group;
mod served;
mod simple;
pub(crate) mod start;
mod trouble;

pub(crate) use ask::{Answered, Ask};
pub use child::BASE_ENV;
pub(crate) use child::{CommandProblem, Launch, MIN_STARTUP, Program, StartError, command_launch, sha256_of};
pub(crate) use failure::{Broken, Cause, excerpt};
pub use lines::Nudge;
pub(crate) use lines::{parse_message, text_of};
pub use pipelined::{Held, hold_requests};
pub(crate) use served::Served;
pub use served::block_on;
pub use start::NotStarted;
pub(crate) use start::{Failure, HelloRefused, Starter};
pub use trouble::{ChildCounters, ChildTrouble};
