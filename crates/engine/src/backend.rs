//! The model side of the loop: who writes the first draft and the revisions.

use critbench_core::{Critique, Rng, SeedKey, Task};

use crate::experiment::BackendKind;

/// A draft and what it cost, when the backend knows.
#[derive(Clone, Debug, PartialEq)]
pub struct Draft {
    pub text: String,
    pub tokens_in: Option<u64>,
    pub tokens_out: Option<u64>,
}

impl Draft {
    fn offline(text: String) -> Draft {
        Draft { text, tokens_in: None, tokens_out: None }
    }
}

/// Which draft of which loop is being written; seeds every random choice.
#[derive(Clone, Copy, Debug)]
pub struct DraftKey<'a> {
    pub seed: u64,
    pub task_id: &'a str,
    pub epoch: u32,
    /// The round this draft will be critiqued in.
    pub round: u32,
}

impl DraftKey<'_> {
    fn rng(&self, purpose: &str) -> Rng {
        Rng::from_key(&SeedKey {
            seed: self.seed,
            task_id: self.task_id,
            epoch: self.epoch,
            round: self.round,
            purpose,
        })
    }
}

/// A writer of drafts. The arm is deliberately not part of the key: every arm of a task draws
/// the same randomness, so arms are paired.
pub enum Backend {
    Sim,
    Scripted,
}

impl Backend {
    pub fn new(kind: BackendKind) -> Result<Backend, String> {
        match kind {
            BackendKind::Sim => Ok(Backend::Sim),
            BackendKind::Scripted => Ok(Backend::Scripted),
            BackendKind::Openai => {
                Err("the openai backend is not part of this build yet; use backend = \"sim\" or \"scripted\""
                    .to_string())
            }
        }
    }

    /// Checks before the run that this backend can write drafts for `task`.
    pub fn check_task(&self, task: &Task) -> Result<(), String> {
        match self {
            Backend::Scripted if task.drafts.is_empty() => {
                Err("field `drafts`: the scripted backend needs at least one draft".to_string())
            }
            _ => Ok(()),
        }
    }

    pub fn generate(&self, task: &Task, key: &DraftKey<'_>) -> Result<Draft, String> {
        match self {
            Backend::Sim => Ok(Draft::offline(critbench_sim::generate(task, &mut key.rng("generate")))),
            Backend::Scripted => scripted(task, key.round),
        }
    }

    /// Revises `draft`; `critique` is `None` when the arm keeps it from the reviser.
    pub fn revise(
        &self,
        task: &Task,
        draft: &str,
        critique: Option<&Critique>,
        key: &DraftKey<'_>,
    ) -> Result<Draft, String> {
        match self {
            Backend::Sim => Ok(Draft::offline(critbench_sim::revise(task, draft, critique, &mut key.rng("revise")))),
            Backend::Scripted => scripted(task, key.round),
        }
    }
}

fn scripted(task: &Task, round: u32) -> Result<Draft, String> {
    task.scripted_draft(round as usize)
        .map(|text| Draft::offline(text.to_string()))
        .ok_or_else(|| format!("task `{}` has no scripted drafts", task.id))
}
