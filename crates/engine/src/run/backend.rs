//! The offline authors: the simulated one and the scripted one. Each implements
//! [`critbench_core::author::Author`], as the model client's OpenAI author and a test's do; any
//! of them is handed to [`crate::run::run_experiment_with`].

use critbench_core::author::{Author, AuthorError, Draft, DraftKey, Hint};
use critbench_core::{Critique, Task};

/// The built-in deterministic simulated author (`critbench-sim`).
pub struct SimAuthor;

impl Author for SimAuthor {
    fn generate(&self, task: &Task, hints: &[Hint], key: &DraftKey<'_>) -> Result<Draft, AuthorError> {
        let types: Vec<&str> = hints.iter().map(|h| h.issue_type.as_str()).collect();
        let text = critbench_sim::generate_with_hints(task, &types, &mut key.rng("generate"));
        let truth = critbench_sim::truth::of(task, &text);
        Ok(Draft { truth: Some(truth), ..Draft::offline(text) })
    }

    fn revise(
        &self,
        task: &Task,
        draft: &Draft,
        critique: Option<&Critique>,
        key: &DraftKey<'_>,
    ) -> Result<Draft, AuthorError> {
        let revision = critbench_sim::revise(task, &draft.text, critique, &mut key.rng("revise"));
        // The truth is the text's alone, whatever the critique said.
        let truth = critbench_sim::truth::of(task, &revision.text);
        Ok(Draft { acted_on_critique: revision.acted_on_critique, truth: Some(truth), ..Draft::offline(revision.text) })
    }

    /// The simulated adjudicator answers like a model, residue and all; the output clean-up
    /// every model answer goes through strips it.
    fn adjudicate(
        &self,
        task: &Task,
        draft: &str,
        concerns: Option<&Critique>,
        key: &DraftKey<'_>,
    ) -> Option<Result<Draft, AuthorError>> {
        let answer = critbench_sim::adjudicate(task, draft, concerns, &mut key.rng("adjudicate"));
        Some(Ok(Draft::offline(critbench_openai::prompts::clean_model_text(&answer))))
    }
}

/// Drafts from each task's `drafts` field: round k uses `drafts[min(k, len - 1)]`; a fresh
/// first draft after round 0 (the `resample` arm's) is the task's `samples[k - 1]`.
pub struct ScriptedAuthor {
    /// The fresh drafts a task must have: the most rounds after the first a resampled loop may
    /// draw (0 when no arm resamples).
    pub samples_needed: u32,
}

impl Author for ScriptedAuthor {
    fn check_task(&self, task: &Task) -> Result<(), AuthorError> {
        if task.drafts.is_empty() {
            return Err(AuthorError::MissingField {
                field: "drafts",
                needs: "the scripted backend needs at least one draft",
            });
        }
        if task.samples.len() < self.samples_needed as usize {
            return Err(AuthorError::TooFewSamples { have: task.samples.len(), need: self.samples_needed });
        }
        Ok(())
    }

    fn generate(&self, task: &Task, _hints: &[Hint], key: &DraftKey<'_>) -> Result<Draft, AuthorError> {
        if key.round == 0 {
            return scripted(task, 0);
        }
        let have = task.samples.len();
        task.samples
            .get(key.round as usize - 1)
            .map(|text| Draft::offline(text.clone()))
            .ok_or(AuthorError::TooFewSamples { have, need: key.round })
    }

    fn revise(
        &self,
        task: &Task,
        _draft: &Draft,
        _critique: Option<&Critique>,
        key: &DraftKey<'_>,
    ) -> Result<Draft, AuthorError> {
        scripted(task, key.round)
    }
}

fn scripted(task: &Task, round: u32) -> Result<Draft, AuthorError> {
    task.scripted_draft(round as usize)
        .map(|text| Draft::offline(text.to_string()))
        .ok_or_else(|| AuthorError::NoScriptedDrafts { task_id: task.id.clone() })
}
