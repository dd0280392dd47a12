//! Many requests at once ([`ProcessCritic::call_many`], [`ProcessCritic::call_batches`]): one at a
//! time to a child of the simple form, in flight together on a child of the pipelined form, where a
//! batch of requests goes out in one write, the answers are taken by id as they come, each task is
//! opened once per child for the loops that share its key (the rounds right behind the open), and
//! the batches made ready meanwhile go to the same child at once.

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::ErrorKind;
use std::time::Instant;

use super::{Asks, Child, ProcessCritic, asked, scope, written_critique};
use crate::CallError;
use crate::model::ModelPass;
use crate::program::{Broken, Nudge, excerpt, parse_message};
use crate::protocol::{self, Form, ProtocolError, Reply};
use crate::request::Asked;
use crate::services::CallScope;

/// Lines written to a child in one go: `closes` lines without an id, then one message per line
/// with the ids from `first_id` on.
struct Batch {
    text: String,
    first_id: u64,
    closes: usize,
}

impl Batch {
    /// The id of the first message whose line did not go out whole when `written` bytes did.
    fn first_unwritten(&self, written: usize) -> u64 {
        let whole = self.text.as_bytes()[..written].iter().filter(|&&byte| byte == b'\n').count();
        self.first_id + whole.saturating_sub(self.closes) as u64
    }
}

/// Ends request `id`'s key, its calls counted on `scope`.
fn settle(passes: &mut HashMap<u64, Box<dyn ModelPass + '_>>, id: u64, scope: &mut CallScope) {
    if let Some(pass) = passes.remove(&id) {
        super::add_use(scope, pass.close());
    }
}

/// Forgets the messages from id `from` on, which the child never got whole.
fn forget_unwritten(waiting: &mut BTreeMap<u64, Waiting>, opening: &mut HashSet<u64>, from: u64) {
    for (_, waits) in waiting.split_off(&from) {
        if let Waiting::Open { key, .. } = waits {
            opening.remove(&key);
        }
    }
}

/// What a message in flight on a child of the pipelined form waits for.
#[derive(Clone, Copy)]
enum Waiting {
    /// The answer to the request of this index.
    Request(usize),
    /// The answer to the open of task `key`, asked by the round of index `first` (charged with a
    /// failure while the open is the oldest message waiting).
    Open { key: u64, first: usize },
}

impl Waiting {
    /// The request charged when the child fails while this waits.
    fn charged(self) -> usize {
        match self {
            Waiting::Request(index) | Waiting::Open { first: index, .. } => index,
        }
    }
}

/// The batches of [`ProcessCritic::call_batches`]: where they come from, and where their
/// answers go.
pub trait Batches {
    /// The next batch when one is ready now (never waits): each request with the scope of its
    /// critique.
    fn next(&mut self) -> Option<Vec<(Asked, CallScope)>>;
    /// The answers of the oldest batch not yet answered, in its order, each with its scope as the
    /// child's service calls left it.
    fn answered(&mut self, answers: Vec<(Result<String, CallError>, CallScope)>);
    /// What wakes the thread sending the batches while it waits for a child's answers (one per
    /// child it sends to, the last one given the one that counts): nudged after a batch is made
    /// ready, it takes the batch at once. Without, a batch made ready is taken at the next answer.
    fn nudge_with(&mut self, nudge: Nudge) {
        let _ = nudge;
    }
}

/// Where a flight's batches after its first come from, and where its answered batches go.
pub(super) trait Feed<R> {
    /// Adds the next batch to `flight` when one is ready now; whether it did.
    fn more(&mut self, flight: &mut Asks<R>) -> bool;
    /// `child` now takes the batches.
    fn sending_to(&mut self, child: &Child) {
        let _ = child;
    }
    /// Hands back the batches at the front of `flight` that have all their answers.
    fn deliver(&mut self, flight: &mut Asks<R>);
}

/// [`ProcessCritic::call_many`]'s one batch, taken back when all is answered.
pub(super) struct NoMore;

impl<R> Feed<R> for NoMore {
    fn more(&mut self, _: &mut Asks<R>) -> bool {
        false
    }

    fn deliver(&mut self, _: &mut Asks<R>) {}
}

/// [`ProcessCritic::call_batches`]'s batches.
pub(super) struct Fed<'a> {
    pub(super) batches: &'a mut dyn Batches,
    pub(super) critic: &'a ProcessCritic,
}

impl Feed<Asked> for Fed<'_> {
    fn more(&mut self, flight: &mut Asks<Asked>) -> bool {
        // A thread waiting for a child gets this one once the batches taken are answered.
        if self.critic.pool.lock().unwrap_or_else(|p| p.into_inner()).waiting > 0 {
            return false;
        }
        match self.batches.next() {
            Some(batch) => {
                flight.push_batch(batch);
                true
            }
            None => false,
        }
    }

    fn deliver(&mut self, flight: &mut Asks<Asked>) {
        while let Some(answers) = flight.take_answered() {
            self.batches.answered(answers.into_iter().map(|(answer, (_, scope))| (answer, scope)).collect());
        }
    }

    fn sending_to(&mut self, child: &Child) {
        self.batches.nudge_with(child.program.nudge());
    }
}

impl ProcessCritic {
    /// Sends every request, each for its critique scope, and returns their answers in order, as
    /// [`ProcessCritic::call`] would one by one: to a child of the pipelined form all at once, to
    /// one of the simple form one at a time. A child that fails costs the request charged with it
    /// (the oldest waiting) its answer; the rest go to a fresh child.
    pub fn call_many(&self, requests: &[&Asked], scopes: &mut [CallScope]) -> Vec<Result<String, CallError>> {
        let mut asks = Asks::default();
        asks.push_batch(requests.iter().copied().zip(scopes.iter_mut().map(std::mem::take)));
        self.drive(&mut asks, &mut NoMore);
        let (answers, done): (Vec<_>, Vec<_>) =
            asks.take_answered().expect("every request has its answer").into_iter().unzip();
        for (scope, (_, done)) in scopes.iter_mut().zip(done) {
            *scope = done;
        }
        answers
    }

    /// Sends the batches `batches` hands over, one after another, each answered as
    /// [`ProcessCritic::call_many`] would answer it, and hands back each batch's answers as soon
    /// as it has them all, in the order the batches came. To a critic of the pipelined form, a batch
    /// that comes while earlier ones wait for answers is written to the same process at once, so
    /// the process goes from one batch to the next without waiting for critbench to read its
    /// answers. Returns when every batch handed over is answered and none is ready.
    pub fn call_batches(&self, batches: &mut dyn Batches) {
        let Some(first) = batches.next() else { return };
        let mut asks = Asks::default();
        asks.push_batch(first);
        self.drive(&mut asks, &mut Fed { batches, critic: self });
    }

    /// Answers every request of `flight`, and those `feed` adds while it does.
    fn drive<R: Borrow<Asked>>(&self, flight: &mut Asks<R>, feed: &mut dyn Feed<R>) {
        loop {
            feed.deliver(flight);
            let left = flight.unanswered();
            let Some(&first) = left.first() else {
                if feed.more(flight) {
                    continue;
                }
                return;
            };
            let mut child = match self.acquire() {
                Ok(child) => child,
                Err(error) => {
                    for index in left {
                        flight.answer(index, Err(error.clone()));
                    }
                    continue;
                }
            };
            if child.form == Form::Simple {
                // Only a critic of the pipelined form is asked by rounds; one of the simple form is
                // sent the whole request.
                let whole = asked(flight, first).whole().into_owned();
                let answer = self.call_on(child, &whole, Some(scope(flight, first)));
                flight.answer(first, answer);
                continue;
            }
            match self.pipeline(&mut child, flight, &left, feed) {
                Ok(None) => self.release(Some(child)),
                Ok(Some(broken)) => {
                    let failure = self.discard(child, Some(broken));
                    // A child that answered nothing before it failed costs the oldest its
                    // answer, so that a critic failing that way every time cannot loop.
                    if left.iter().all(|&index| !flight.is_answered(index)) {
                        flight.answer(first, Err(CallError::ChildStopped { failure }));
                    }
                }
                Err((charged, broken)) => {
                    let failure = self.discard(child, Some(broken));
                    flight.answer(charged, Err(CallError::ChildStopped { failure }));
                }
            }
        }
    }

    /// The requests `left` (indices into `flight`) on a child of the pipelined form, written at
    /// once (after the closes of ended tasks this child holds, and the opens of tasks it does not
    /// hold, each round right behind its task's open); each answer is stored as it comes, and the
    /// batches `feed` makes ready meanwhile are written the same way, each before the host waits
    /// for the child again. An `Err` names the request charged with the child's failure (the oldest
    /// still waiting) and why; the child is then no longer usable. `Ok(Some(why))`: every request
    /// written was answered, but some could not be written: the child is no longer usable, and
    /// those are left unanswered.
    pub(super) fn pipeline<R: Borrow<Asked>>(
        &self,
        child: &mut Child,
        flight: &mut Asks<R>,
        left: &[usize],
        feed: &mut dyn Feed<R>,
    ) -> Result<Option<Broken>, (usize, Broken)> {
        let oldest_first = left[0];
        // A line written since the last answer answers nothing (as in `exchange`).
        match child.program.line_waiting() {
            Some(Ok(line)) => return Err((oldest_first, Broken::unasked(&line))),
            Some(Err(broken)) => return Err((oldest_first, broken)),
            None => {}
        }
        feed.sending_to(child);
        let first_id = child.next_id;
        // What each message in flight waits for, by id: the oldest first.
        let mut waiting: BTreeMap<u64, Waiting> = BTreeMap::new();
        // The keys whose open was written and not answered yet.
        let mut opening: HashSet<u64> = HashSet::new();
        // Why writing to the child stopped working (a failed write may leave part of a line).
        let mut unwritable: Option<Broken> = None;
        // The keys of the requests in flight to a command critic, by message id.
        let mut passes: HashMap<u64, Box<dyn ModelPass + '_>> = HashMap::new();
        let sent = Instant::now();
        let batch = self.batch_lines(child, flight, left, &mut waiting, &mut opening, &mut passes);
        if let Err(unwritten) = child.program.write_within(batch.text.as_bytes(), Some(self.timeout)) {
            // The child stopped reading: the requests it has whole are answered or timed out, the
            // rest go to a fresh child, not counted as an attempt.
            forget_unwritten(&mut waiting, &mut opening, batch.first_unwritten(unwritten.written));
            unwritable = Some(self.unwritable(unwritten.source));
        }
        // Each request gets the timeout from when the child could start on it: its sending, or
        // the arrival of the answer before it.
        let mut deadline = sent + self.timeout;
        loop {
            // Before waiting for the child: the next batch, when one is ready.
            if unwritable.is_none() && (waiting.is_empty() || !child.program.any_line_ready()) {
                let nothing_in_flight = waiting.is_empty();
                let from = flight.len();
                if feed.more(flight) {
                    let more: Vec<usize> = (from..flight.len()).collect();
                    let batch = self.batch_lines(child, flight, &more, &mut waiting, &mut opening, &mut passes);
                    if nothing_in_flight {
                        // Nothing was in flight: the oldest of these is timed from now.
                        deadline = Instant::now() + self.timeout;
                    }
                    if let Err(unwritten) = child.program.write_within(batch.text.as_bytes(), Some(self.timeout)) {
                        // The child died or stopped reading while it worked on a request written
                        // before these: that request is charged when its answer fails to come;
                        // those of these it has whole are answered or timed out, and the rest go
                        // to a fresh child, not counted as an attempt.
                        forget_unwritten(&mut waiting, &mut opening, batch.first_unwritten(unwritten.written));
                        unwritable = Some(self.unwritable(unwritten.source));
                    }
                }
            }
            let Some((&oldest, charged)) = waiting.first_key_value() else { break };
            let charged = charged.charged();
            let Some((line, arrived)) =
                child.program.next_line_or_nudge(deadline, self.timeout).map_err(|broken| (charged, broken))?
            else {
                // A batch was made ready: it goes out before the wait goes on.
                continue;
            };
            let in_flight = |id| waiting.contains_key(&id);
            let (id, reply) = match protocol::fast_pipelined_reply(&line, in_flight) {
                Some(read) => read,
                None => {
                    let message = parse_message(&line).map_err(|broken| (charged, broken))?;
                    let ids = (first_id.min(oldest), child.next_id);
                    match protocol::pipelined_reply(&message, ids, in_flight)
                        .map_err(|error| (charged, error.into()))?
                    {
                        (id, Reply::Critique(text)) => (id, Reply::Critique(written_critique(&line).unwrap_or(text))),
                        read => read,
                    }
                }
            };
            let wrong = |what, wrong| {
                // The line was read as JSON already; its excerpt is the message as the full path shows it.
                let message =
                    parse_message(&line).map_or_else(|_| String::new(), |message| excerpt(&message.to_string()));
                (charged, ProtocolError::WrongAnswer { what, id, wrong, message }.into())
            };
            // A round is written right after its task's open: its answer must not come before the
            // open's, which says whether there is a task to critique.
            if let (Waiting::Request(index), Reply::Critique(_) | Reply::Error(_)) = (waiting[&id], &reply)
                && !opening.is_empty()
                && let Asked::Round(round) = asked(flight, index)
                && opening.contains(&round.key)
            {
                let message = excerpt(String::from_utf8_lossy(&line).trim_end());
                return Err((charged, ProtocolError::BeforeOpen { id, key: round.key, message }.into()));
            }
            match (waiting[&id], reply) {
                (waits, Reply::Service { name, request }) => {
                    let answer = self.host.dispatch(&name, &request, Some(scope(flight, waits.charged())));
                    (child.program.send(&protocol::service_answer_line(id, answer)))
                        .map_err(|e| (charged, Broken::AnswerService(e)))?;
                    // The timeout measures the critic, not the host's services.
                    deadline = Instant::now() + self.timeout;
                    continue;
                }
                (Waiting::Request(index), Reply::Critique(text)) => {
                    settle(&mut passes, id, scope(flight, index));
                    flight.answer(index, Ok(text));
                }
                (Waiting::Request(index), Reply::Error(message)) => {
                    settle(&mut passes, id, scope(flight, index));
                    flight.answer(index, Err(CallError::Critic(message)));
                }
                (Waiting::Request(_), Reply::Opened) => return Err(wrong("request", "`ok`")),
                (Waiting::Open { .. }, Reply::Critique(_)) => return Err(wrong("the open of a task", "a critique")),
                (Waiting::Open { key, .. }, Reply::Error(_)) => {
                    // The task is not open on the child; the rounds written behind the open are
                    // answered by the child, and the next round of the key opens it again.
                    opening.remove(&key);
                }
                (Waiting::Open { key, .. }, Reply::Opened) => {
                    opening.remove(&key);
                    child.open.insert(key);
                    *self.pool.lock().unwrap_or_else(|p| p.into_inner()).held.entry(key).or_default() += 1;
                }
            }
            waiting.remove(&id);
            if id == oldest {
                // The next oldest could start on its own when this answer came (the host may read
                // it later, busy writing). An answer to a later request leaves the oldest's clock
                // running: a child that answers out of order must not keep a request it never
                // answers alive by answering others.
                deadline = arrived + self.timeout;
            }
            // The batches answered whole go back as soon as they are.
            feed.deliver(flight);
        }
        Ok(unwritable)
    }

    /// The lines of the requests `indices` of `flight` for `child`, each then waiting for its
    /// answer: after the close of ended tasks this child holds, a round's open when the child
    /// neither holds its task nor is opening it (the round follows the open at once), then the
    /// round; a whole request as it is.
    fn batch_lines<'c, R: Borrow<Asked>>(
        &'c self,
        child: &mut Child,
        flight: &Asks<R>,
        indices: &[usize],
        waiting: &mut BTreeMap<u64, Waiting>,
        opening: &mut HashSet<u64>,
        passes: &mut HashMap<u64, Box<dyn ModelPass + 'c>>,
    ) -> Batch {
        let mut batch = String::new();
        let first_id = child.next_id;
        let closes = self.take_closes(child);
        if let Some(line) = &closes {
            batch.push_str(line);
            batch.push('\n');
        }
        for &index in indices {
            let id = child.next_id;
            match asked(flight, index) {
                Asked::Round(round) => {
                    if !child.open.contains(&round.key) && opening.insert(round.key) {
                        waiting.insert(id, Waiting::Open { key: round.key, first: index });
                        batch.push_str(&protocol::open_line(id, round.key, &round.task));
                        batch.push('\n');
                        child.next_id += 1;
                    }
                    let id = child.next_id;
                    waiting.insert(id, Waiting::Request(index));
                    let line = protocol::round_line(id, round.key, &round.request());
                    batch.push_str(&self.metered(line, id, &flight.request(index).1, passes));
                }
                asked => {
                    waiting.insert(id, Waiting::Request(index));
                    let line = protocol::request_line(id, &asked.whole());
                    batch.push_str(&self.metered(line, id, &flight.request(index).1, passes));
                }
            }
            child.next_id += 1;
            batch.push('\n');
        }
        Batch { text: batch, first_id, closes: usize::from(closes.is_some()) }
    }

    /// Request `id`'s `line` with a key of its own when the run meters model access (kept in
    /// `passes` until its answer comes).
    fn metered<'c>(
        &'c self,
        line: String,
        id: u64,
        scope: &CallScope,
        passes: &mut HashMap<u64, Box<dyn ModelPass + 'c>>,
    ) -> String {
        match self.model_pass(scope) {
            Some(pass) => {
                let line = protocol::with_model(line, pass.model());
                passes.insert(id, pass);
                line
            }
            None => line,
        }
    }

    /// Why a write to the child failed: it stopped reading (the timeout), or it died.
    fn unwritable(&self, source: std::io::Error) -> Broken {
        if source.kind() == ErrorKind::TimedOut {
            Broken::Timeout(self.timeout)
        } else {
            Broken::Send { what: "the requests", source }
        }
    }

    /// The `close` line of the ended tasks' keys that `child` holds open, if any; they are then
    /// no longer open on it.
    fn take_closes(&self, child: &mut Child) -> Option<String> {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        let mine: Vec<u64> = pool.closing.iter().copied().filter(|key| child.open.contains(key)).collect();
        if mine.is_empty() {
            return None;
        }
        for &key in &mine {
            child.open.remove(&key);
            pool.let_go(key);
        }
        Some(protocol::close_line(&mine))
    }
}
