//! Why a child program can no longer be used ([`Broken`]), in words that name it by its role.

use std::time::Duration;

/// How the message starts when a line could not be written to the program (usually: it died).
const SEND_FAILED: &str = "cannot send";

/// The longest line read from a program; a longer one is garbage ([`Broken::LineTooLong`]).
pub(crate) const MAX_LINE: usize = 64 << 20;

/// The start of `text`, for messages: its first 120 characters, and `…` when there is more.
pub(crate) fn excerpt(text: &str) -> String {
    const LIMIT: usize = 120;
    match text.char_indices().nth(LIMIT) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// Why a program can no longer be used. Its words ([`Broken::describe`]) are the failure a caller
/// records, unless the program died, when how it ended says more ([`super::Program::finish`]).
#[derive(Debug)]
pub(crate) enum Broken {
    /// Writing to the program failed: it died or closed its input.
    Send {
        what: &'static str,
        source: std::io::Error,
    },
    AnswerService(std::io::Error),
    /// The program's output closed.
    Closed,
    Timeout(Duration),
    /// A line that arrived after the last answer and before the next request was written.
    Unasked(String),
    /// More bytes after a message, in the same write, from a program that answers one at a time.
    Hurried(String),
    LineTooLong,
    NotUtf8 {
        at: usize,
        line: String,
    },
    NotJson(String),
    /// A message that gives `key` twice.
    RepeatedKey {
        key: String,
        line: String,
    },
    /// The program broke the rules of what it speaks: the caller's words.
    Protocol(String),
}

/// Why a program was stopped, as its counts tell it ([`Broken::cause`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cause {
    /// It wrote something the protocol does not allow.
    Protocol,
    /// It gave no answer in time, or stopped reading.
    Timeout,
    /// It died: exited, was killed or closed its output.
    Died,
    /// Critbench's side failed (a write of a service's answer).
    Other,
}

impl Broken {
    /// Why the program was stopped, for the counts a run reports.
    pub(crate) fn cause(&self) -> Cause {
        match self {
            Broken::Unasked(_)
            | Broken::Hurried(_)
            | Broken::LineTooLong
            | Broken::NotUtf8 { .. }
            | Broken::NotJson(_)
            | Broken::RepeatedKey { .. }
            | Broken::Protocol(_) => Cause::Protocol,
            Broken::Timeout(_) => Cause::Timeout,
            Broken::Closed | Broken::Send { .. } => Cause::Died,
            Broken::AnswerService(_) => Cause::Other,
        }
    }

    /// A line that answers nothing: it came after the last answer, before the next request.
    pub(crate) fn unasked(line: &[u8]) -> Broken {
        Broken::Unasked(excerpt(String::from_utf8_lossy(line).trim_end()))
    }

    /// Whether the program went silent because it died (its output closed, or it stopped reading).
    pub(crate) fn died(&self) -> bool {
        matches!(self, Broken::Closed | Broken::Send { .. })
    }

    /// What went wrong, naming the program by its `role` ("the critic wrote …").
    pub(crate) fn describe(&self, role: &str) -> String {
        match self {
            Broken::Send { what, source } => format!("{SEND_FAILED} {what}: {source}"),
            Broken::AnswerService(source) => format!("cannot answer a service call: {source}"),
            Broken::Closed => format!("the {role} process closed its output"),
            Broken::Timeout(timeout) => format!("no answer within {} s", timeout.as_secs_f64()),
            Broken::Unasked(line) => format!("the {role} wrote a line after its last answer, unasked: {line}"),
            Broken::Hurried(line) => {
                format!("the {role} wrote more after a message without waiting for critbench: {line}")
            }
            Broken::LineTooLong => format!("the {role} wrote a line longer than {} MiB", MAX_LINE >> 20),
            Broken::NotUtf8 { at, line } => {
                format!("the {role} wrote bytes that are not valid UTF-8 (at byte {at}): {line}")
            }
            Broken::NotJson(line) => format!("the {role} wrote a line that is not protocol JSON: {line}"),
            Broken::RepeatedKey { key, line } => format!(
                "the {role} wrote a message with the key `{key}` twice (JSON readers disagree on which copy wins; \
                 give each key once): {line}"
            ),
            Broken::Protocol(message) => message.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_names_the_program_by_its_role() {
        let line = Broken::unasked(b"{\"id\": 3}\n");
        assert_eq!(line.describe("critic"), "the critic wrote a line after its last answer, unasked: {\"id\": 3}");
        assert_eq!(line.describe("writer"), "the writer wrote a line after its last answer, unasked: {\"id\": 3}");
        assert_eq!(Broken::Closed.describe("critic"), "the critic process closed its output");
        assert_eq!(Broken::Timeout(Duration::from_millis(2500)).describe("critic"), "no answer within 2.5 s");
        assert_eq!(Broken::Protocol("its own words".into()).describe("critic"), "its own words");
        assert!(Broken::Closed.died() && !Broken::LineTooLong.died());
        assert_eq!((Broken::LineTooLong.cause(), Broken::Closed.cause()), (Cause::Protocol, Cause::Died));
        assert_eq!(Broken::Timeout(Duration::from_secs(1)).cause(), Cause::Timeout);
    }
}
