//! A child program speaking JSON lines on its stdin and stdout, whatever it is for: its lifecycle
//! ([`child`]: spawned as the leader of a process group that dies with critbench, killed with
//! everything it started, its end told in words), the line reader ([`lines`]: a thread that hands
//! over every line one read brought, each refused when it is no message), and the in-flight table
//! ([`flight`]: the requests written to it and not yet answered, in batches). What the lines say is
//! the caller's: [`crate::process`] speaks the critic protocol (`docs/PROTOCOL.md`) over it.
//!
//! The program is named in messages by its role (`critic`): "the critic process exited with
//! status 3", "the critic wrote a line that is not protocol JSON".

pub(crate) mod child;
mod failure;
pub(crate) mod flight;
pub(crate) mod lines;
pub(crate) mod process_group;

pub(crate) use child::{CommandProblem, Launch, MIN_STARTUP, Program, StartError, command_launch, sha256_of};
pub(crate) use failure::{Broken, Cause};
pub(crate) use flight::Flight;
pub use lines::Nudge;
pub(crate) use lines::{parse_message, text_of};

use std::time::Duration;

/// How often a program that is silent, or does not read, is checked for having died.
const EXIT_CHECK: Duration = Duration::from_millis(100);

/// The start of `text`, for messages: its first 120 characters, and `…` when there is more.
pub(crate) fn excerpt(text: &str) -> String {
    const LIMIT: usize = 120;
    match text.char_indices().nth(LIMIT) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}
