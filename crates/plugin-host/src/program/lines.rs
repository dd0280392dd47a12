//! The line reader of a child program: a thread that reads its stdout and hands over every
//! complete line one read brought, together, with when it arrived; and a line read as one JSON
//! object, refused when it is not one or gives a key twice.

use std::io::{BufRead, BufReader, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::failure::MAX_LINE;
use super::{Broken, excerpt};

/// A line from the program (or why reading stopped), and when the reader took it from the pipe.
pub(super) struct Line {
    pub(super) bytes: Result<Vec<u8>, Broken>,
    pub(super) arrived: Instant,
}

/// What a program's reader thread hands over: every line that came in one read, together; the end
/// of the program's output. A [`Nudge`] comes the same way.
pub(super) enum Delivery {
    Lines(Vec<Line>),
    End,
    Nudge,
}

/// The program's lines as its reader thread hands them over: every line that came in one read
/// together, so that a batch of answers costs the host a wake-up or two, not one per answer.
/// Taken one at a time, in order. The end of the program's output reads as the channel's
/// disconnection (the program's [`Nudge`] keeps the channel itself open).
pub(super) struct Lines {
    from_reader: Receiver<Delivery>,
    ready: std::cell::RefCell<std::collections::VecDeque<Line>>,
    ended: std::cell::Cell<bool>,
}

impl Lines {
    pub(super) fn new(from_reader: Receiver<Delivery>) -> Lines {
        Lines { from_reader, ready: Default::default(), ended: Default::default() }
    }

    pub(super) fn try_recv(&self) -> Result<Line, TryRecvError> {
        loop {
            if let Some(line) = self.ready.borrow_mut().pop_front() {
                return Ok(line);
            }
            if self.ended.get() {
                return Err(TryRecvError::Disconnected);
            }
            match self.from_reader.try_recv()? {
                Delivery::Lines(lines) => self.ready.borrow_mut().extend(lines),
                Delivery::End => self.ended.set(true),
                Delivery::Nudge => {}
            }
        }
    }

    /// Whether a line is ready to be taken without waiting.
    pub(super) fn any_ready(&self) -> bool {
        match self.try_recv() {
            Ok(line) => {
                self.ready.borrow_mut().push_front(line);
                true
            }
            Err(_) => false,
        }
    }

    pub(super) fn recv_timeout(&self, wait: Duration) -> Result<Line, RecvTimeoutError> {
        let until = Instant::now() + wait;
        loop {
            if let Some(line) = self.recv_or_nudge(until.saturating_duration_since(Instant::now()))? {
                return Ok(line);
            }
        }
    }

    /// The next line, or `None` when a [`Nudge`] comes first.
    pub(super) fn recv_or_nudge(&self, wait: Duration) -> Result<Option<Line>, RecvTimeoutError> {
        let until = Instant::now() + wait;
        loop {
            if let Some(line) = self.ready.borrow_mut().pop_front() {
                return Ok(Some(line));
            }
            if self.ended.get() {
                return Err(RecvTimeoutError::Disconnected);
            }
            match self.from_reader.recv_timeout(until.saturating_duration_since(Instant::now()))? {
                Delivery::Lines(lines) => self.ready.borrow_mut().extend(lines),
                Delivery::End => self.ended.set(true),
                Delivery::Nudge => return Ok(None),
            }
        }
    }
}

/// Wakes a thread that waits for a program's lines, so that it does what it was nudged for (a
/// batch made ready, say) without waiting for the next line.
pub struct Nudge(pub(super) Sender<Delivery>);

impl Nudge {
    /// Wakes the thread, if it waits on this nudge's program.
    pub fn nudge(&self) {
        // A program gone has no one waiting on it.
        let _ = self.0.send(Delivery::Nudge);
    }
}

/// Reads the program's `stdout` until it closes, handing `sender` every complete line each read
/// brought. Unless `several` is raised, a message must be alone in its write: the program waits
/// for critbench's next line after each, so bytes already behind one answer nothing (and would be
/// taken for the next answer).
pub(super) fn read_lines(stdout: std::process::ChildStdout, sender: Sender<Delivery>, several: &AtomicBool) {
    // Room for a batch's answers in one read.
    let mut reader = BufReader::with_capacity(1 << 16, stdout);
    loop {
        // Every complete line the last read brought, handed over together.
        let mut lines = Vec::new();
        let ended = loop {
            let mut line = Vec::new();
            let read = Read::by_ref(&mut reader).take(MAX_LINE as u64).read_until(b'\n', &mut line);
            let arrived = Instant::now();
            let bytes = match read {
                Ok(0) | Err(_) => break true,
                Ok(_) if line.last() != Some(&b'\n') && line.len() >= MAX_LINE => {
                    lines.push(Line { bytes: Err(Broken::LineTooLong), arrived });
                    break true;
                }
                Ok(_) if line.iter().all(u8::is_ascii_whitespace) => None,
                Ok(_) if !several.load(Ordering::Relaxed) && !reader.buffer().iter().all(u8::is_ascii_whitespace) => {
                    Some(Err(Broken::Hurried(excerpt(String::from_utf8_lossy(&line).trim_end()))))
                }
                Ok(_) => Some(Ok(line)),
            };
            lines.extend(bytes.map(|bytes| Line { bytes, arrived }));
            if !reader.buffer().contains(&b'\n') {
                break false;
            }
        };
        if !lines.is_empty() && sender.send(Delivery::Lines(lines)).is_err() {
            return;
        }
        if ended {
            let _ = sender.send(Delivery::End);
            return;
        }
    }
}

/// An error message: a string, or whatever JSON the program put there.
pub(crate) fn text_of(value: &serde_json::Value) -> String {
    value.as_str().map(str::to_string).unwrap_or_else(|| value.to_string())
}

/// A line as a JSON object.
pub(crate) fn parse_message(line: &[u8]) -> Result<serde_json::Value, Broken> {
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(e) => {
            let line = excerpt(String::from_utf8_lossy(line).trim_end());
            return Err(Broken::NotUtf8 { at: e.valid_up_to(), line });
        }
    };
    match serde_json::from_str::<Message>(text) {
        Ok(Message { repeated: Some(key), .. }) => Err(Broken::RepeatedKey { key, line: excerpt(text.trim_end()) }),
        Ok(Message { object, .. }) => Ok(serde_json::Value::Object(object)),
        _ => Err(Broken::NotJson(excerpt(text.trim_end()))),
    }
}

/// A message line's object, and the first of its keys that it gives twice, if any: such a line
/// says two things at once (JSON readers disagree on which copy wins), so it is refused.
struct Message {
    object: serde_json::Map<String, serde_json::Value>,
    repeated: Option<String>,
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Message, D::Error> {
        struct Object;
        impl<'de> serde::de::Visitor<'de> for Object {
            type Value = Message;

            fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                formatter.write_str("a JSON object")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut access: A) -> Result<Message, A::Error> {
                let mut message = Message { object: serde_json::Map::new(), repeated: None };
                while let Some(key) = access.next_key::<String>()? {
                    let value = access.next_value()?;
                    if message.object.contains_key(&key) {
                        message.repeated.get_or_insert(key);
                    } else {
                        message.object.insert(key, value);
                    }
                }
                Ok(message)
            }
        }
        deserializer.deserialize_map(Object)
    }
}
