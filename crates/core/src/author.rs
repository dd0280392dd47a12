//! Who writes the first draft and the revisions: the [`Author`] interface, with the draft it
//! returns, the key that seeds it and the strategy-memory hints it may be given.
//!
//! A [`Author`] is anything that can write a first draft and revise one: the engine's simulated
//! and scripted authors, the model client's OpenAI author, or a test's. Pure types: nothing here
//! performs I/O; an author that waits on a server returns a future ([`Writing`]).

use std::error::Error;
use std::future::Future;
use std::pin::Pin;

use crate::{Critique, Rng, SeedKey, Task};

/// A strategy hint given to the author before the first draft (from strategy memory): what
/// kind of issue to avoid, and how to say so to a model.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Hint {
    /// The issue type it addresses, e.g. `missing_evidence`.
    pub issue_type: String,
    /// The instruction, e.g. "List the evidence first, then answer."
    pub text: String,
}

/// A draft and what it cost, when the backend knows.
#[derive(Clone, Debug, PartialEq)]
pub struct Draft {
    /// The draft as the critic reads it.
    pub text: String,
    /// Prompt tokens the model counted for it; `None` without a model.
    pub tokens_in: Option<u64>,
    /// Completion tokens the model counted for it; `None` without a model.
    pub tokens_out: Option<u64>,
    /// For a revision shown a critique: whether the author acted on it (`Some(false)`: nothing
    /// in the critique was something it could act on, so it revised blindly, and a comparison of
    /// arms says nothing about that critic). `None` when the author cannot tell (a model) or no
    /// critique was shown. Recorded as `acted_on_critique` (docs/FORMAT.md).
    pub acted_on_critique: Option<bool>,
    /// Whether the model's answer was cut at its `max_tokens` (`finish_reason` `length`), so the
    /// draft may end mid-sentence; `None` without a model. Recorded as `draft_truncated`.
    pub truncated: Option<bool>,
    /// What is really wrong with the draft, as the simulated writer knows it; `None` from every
    /// other author. Never shown to a critic: only held-out evaluators' requests carry it
    /// (docs/PROTOCOL.md, `truth`), for the built-in `sim-truth` evaluator to judge.
    pub truth: Option<Truth>,
}

/// The defects a simulated draft really has, by the names of the issue types its writer
/// documents (`missing_evidence`, `weak_methodology`, …), sorted and each once. Empty: nothing
/// is wrong with the draft.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Truth {
    /// The defects, sorted, each once.
    pub defects: Vec<String>,
}

impl Truth {
    /// A truth of these defects, sorted and each kept once.
    pub fn of<S: Into<String>>(defects: impl IntoIterator<Item = S>) -> Truth {
        let mut defects: Vec<String> = defects.into_iter().map(Into::into).collect();
        defects.sort();
        defects.dedup();
        Truth { defects }
    }

    /// Whether the draft has the defect `name`.
    pub fn has(&self, name: &str) -> bool {
        self.defects.binary_search_by(|d| d.as_str().cmp(name)).is_ok()
    }
}

impl Draft {
    /// A draft written without a model, so without token counts.
    pub fn offline(text: String) -> Draft {
        Draft { text, tokens_in: None, tokens_out: None, acted_on_critique: None, truncated: None, truth: None }
    }
}

/// Which draft of which loop is being written; seeds every random choice. The arm is
/// deliberately not part of it: every arm of a task draws the same randomness, so arms are paired.
#[derive(Clone, Copy, Debug)]
pub struct DraftKey<'a> {
    /// The experiment's seed.
    pub seed: u64,
    /// The task the draft answers.
    pub task_id: &'a str,
    /// The epoch of the loop.
    pub epoch: u32,
    /// The round this draft will be critiqued in.
    pub round: u32,
}

impl DraftKey<'_> {
    /// A generator for one purpose (e.g. `"generate"`, `"revise"`) of this draft.
    pub fn rng(&self, purpose: &str) -> Rng {
        Rng::from_key(&SeedKey {
            seed: self.seed,
            task_id: self.task_id,
            epoch: self.epoch,
            round: self.round,
            purpose,
        })
    }
}

/// Why an author wrote no draft. Its text is what the run records of the loop
/// (`failed_loops` in `manifest.json`) or of the dataset row it refuses.
#[derive(Debug, thiserror::Error)]
pub enum AuthorError {
    /// The task lacks a field this author needs (found by [`Author::check_task`] before the run).
    #[error("field `{field}`: {needs}")]
    MissingField {
        /// The task's field.
        field: &'static str,
        /// What the author needs of it.
        needs: &'static str,
    },
    /// The scripted author was asked for more fresh drafts (the `resample` arm's) than the task's
    /// `samples` hold.
    #[error(
        "field `samples`: the resample arm on the scripted backend draws a fresh draft each round after the \
         first, {need} in all at the largest `max_revisions`, from `samples`; this task has {have}"
    )]
    TooFewSamples {
        /// The task's samples.
        have: usize,
        /// The samples a loop may draw.
        need: u32,
    },
    /// The scripted author was asked for a draft of a task that has none.
    #[error("task `{task_id}` has no scripted drafts")]
    NoScriptedDrafts {
        /// The task.
        task_id: String,
    },
    /// The model was asked and did not answer.
    #[error("round {round} ({step}): {source}")]
    Model {
        /// The round the draft was for.
        round: u32,
        /// `generate`, `revise` or `adjudicate`.
        step: &'static str,
        /// The model client's error.
        #[source]
        source: Box<dyn Error + Send + Sync>,
    },
    /// A writer program (`backend = "command"`) wrote no draft: it answered with an error, or
    /// broke down (died, timed out, broke the protocol) and was stopped, to be restarted for the
    /// next request.
    #[error("round {round} ({step}): {message}")]
    Writer {
        /// The round the draft was for.
        round: u32,
        /// `generate` or `revise`.
        step: &'static str,
        /// What the writer said, or how it broke down.
        message: String,
    },
    /// An author of the caller's own, failing in its own way.
    #[error(transparent)]
    Other(Box<dyn Error + Send + Sync>),
}

/// A draft being written by an author that waits on a model server ([`Author::awaits`]).
pub type Writing<'a> = Pin<Box<dyn Future<Output = Result<Draft, AuthorError>> + 'a>>;

/// Writes and revises drafts. Implementations must be deterministic in (task, key, inputs) so
/// that results do not depend on scheduling.
pub trait Author: Sync {
    /// Whether drafts come from a model server: the loops then await
    /// [`Author::generate_async`] and [`Author::revise_async`], many loops to a worker thread,
    /// so that a loop waiting on the server costs a future, not a thread.
    fn awaits(&self) -> bool {
        false
    }

    /// [`Author::generate`] as a future; an author that [`Author::awaits`] makes it wait without
    /// blocking the thread.
    fn generate_async<'a>(&'a self, task: &'a Task, hints: &'a [Hint], key: DraftKey<'a>) -> Writing<'a> {
        Box::pin(std::future::ready(self.generate(task, hints, &key)))
    }

    /// [`Author::revise`] as a future (see [`Author::generate_async`]).
    fn revise_async<'a>(
        &'a self,
        task: &'a Task,
        draft: &'a Draft,
        critique: Option<&'a Critique>,
        key: DraftKey<'a>,
    ) -> Writing<'a> {
        Box::pin(std::future::ready(self.revise(task, draft, critique, &key)))
    }

    /// Checks before the run that this author can serve `task`.
    fn check_task(&self, _task: &Task) -> Result<(), AuthorError> {
        Ok(())
    }

    /// The first draft; `hints` is empty unless the arm uses strategy memory.
    fn generate(&self, task: &Task, hints: &[Hint], key: &DraftKey<'_>) -> Result<Draft, AuthorError>;

    /// A revision of `draft` (as this author wrote it: its text, and its truth when it keeps
    /// one); `critique` is `None` when the arm keeps it from the reviser.
    fn revise(
        &self,
        task: &Task,
        draft: &Draft,
        critique: Option<&Critique>,
        key: &DraftKey<'_>,
    ) -> Result<Draft, AuthorError>;

    /// The adjudicator's final pass over a finished loop's draft: contradictions
    /// resolved, conversational residue stripped. `concerns` is the critique of that draft.
    /// `None` when this author has no adjudicator (the experiment refuses `adjudicate` then).
    fn adjudicate(
        &self,
        _task: &Task,
        _draft: &str,
        _concerns: Option<&Critique>,
        _key: &DraftKey<'_>,
    ) -> Option<Result<Draft, AuthorError>> {
        None
    }
}
