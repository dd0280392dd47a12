//! The `openai` backend's author: a [`Author`] whose generator, reviser and adjudicator are
//! models behind an OpenAI-compatible endpoint, asked through one [`Client`] with the prompts of
//! [`crate::prompts`].

use std::sync::Arc;

use critbench_core::author::{Author, AuthorError, Draft, DraftKey, Hint, Writing};
use critbench_core::{Critique, Task};

use crate::prompts::{Prompts, clean_model_text, feedback_block, hints_block, render, task_blocks};
use crate::{CallIdentity, ChatRequest, Client, Message, Role};

/// Drafts and revisions from the generator and reviser models.
pub struct OpenAiAuthor {
    client: Arc<Client>,
    prompts: Prompts,
}

impl OpenAiAuthor {
    /// An author asking `client` with `prompts`.
    pub fn new(client: Arc<Client>, prompts: Prompts) -> OpenAiAuthor {
        OpenAiAuthor { client, prompts }
    }

    fn ask(
        &self,
        role: Role,
        system: &str,
        user: String,
        key: &DraftKey<'_>,
        what: &'static str,
    ) -> Result<Draft, AuthorError> {
        let (request, identity) = chat_of(system, user, key);
        drafted(self.client.chat(role, &request, &identity), key, what)
    }

    /// [`OpenAiAuthor::ask`], awaited.
    fn ask_async<'a>(
        &'a self,
        role: Role,
        system: &'a str,
        user: String,
        key: DraftKey<'a>,
        what: &'static str,
    ) -> Writing<'a> {
        Box::pin(async move {
            let (request, identity) = chat_of(system, user, &key);
            drafted(self.client.chat_async(role, &request, &identity).await, &key, what)
        })
    }

    fn generate_prompt(&self, task: &Task, hints: &[Hint]) -> String {
        let (context, evidence) = task_blocks(task);
        let hints = hints_block(hints);
        render(
            &self.prompts.generator,
            &[("prompt", task.prompt.trim()), ("context", &context), ("evidence", &evidence), ("hints", &hints)],
        )
    }

    fn revise_prompt(&self, task: &Task, draft: &str, critique: Option<&Critique>) -> String {
        let (context, evidence) = task_blocks(task);
        let mut values =
            vec![("prompt", task.prompt.trim()), ("context", &context), ("evidence", &evidence), ("draft", draft)];
        let feedback;
        let template = match critique {
            Some(critique) => {
                feedback = feedback_block(critique, &self.prompts.generic_fix);
                values.push(("feedback", &feedback));
                &self.prompts.reviser_feedback
            }
            None => &self.prompts.reviser_blind,
        };
        render(template, &values)
    }
}

/// The request of one draft and the identity it is cached and seeded by.
fn chat_of(system: &str, user: String, key: &DraftKey<'_>) -> (ChatRequest, CallIdentity) {
    let request = ChatRequest { messages: vec![Message::system(system), Message::user(user)], response_format: None };
    let identity = CallIdentity { task_id: key.task_id.to_string(), epoch: key.epoch, round: key.round, attempt: 1 };
    (request, identity)
}

/// The model's answer as a draft, cleaned; a failure names its round (`what`: generate, revise,
/// adjudicate): the runner records it in `failed_loops`.
fn drafted(
    answer: Result<crate::ChatAnswer, crate::ChatError>,
    key: &DraftKey<'_>,
    what: &'static str,
) -> Result<Draft, AuthorError> {
    let answer =
        answer.map_err(|error| AuthorError::Model { round: key.round, step: what, source: Box::new(error) })?;
    Ok(Draft {
        text: clean_model_text(&answer.content),
        tokens_in: answer.tokens_in,
        tokens_out: answer.tokens_out,
        acted_on_critique: None,
        truncated: Some(answer.truncated),
        truth: None,
    })
}

impl Author for OpenAiAuthor {
    fn awaits(&self) -> bool {
        true
    }

    fn generate(&self, task: &Task, hints: &[Hint], key: &DraftKey<'_>) -> Result<Draft, AuthorError> {
        let user = self.generate_prompt(task, hints);
        self.ask(Role::Generator, &self.prompts.generator_system, user, key, "generate")
    }

    fn generate_async<'a>(&'a self, task: &'a Task, hints: &'a [Hint], key: DraftKey<'a>) -> Writing<'a> {
        let user = self.generate_prompt(task, hints);
        self.ask_async(Role::Generator, &self.prompts.generator_system, user, key, "generate")
    }

    fn revise(
        &self,
        task: &Task,
        draft: &Draft,
        critique: Option<&Critique>,
        key: &DraftKey<'_>,
    ) -> Result<Draft, AuthorError> {
        let user = self.revise_prompt(task, &draft.text, critique);
        self.ask(Role::Reviser, &self.prompts.reviser_system, user, key, "revise")
    }

    fn revise_async<'a>(
        &'a self,
        task: &'a Task,
        draft: &'a Draft,
        critique: Option<&'a Critique>,
        key: DraftKey<'a>,
    ) -> Writing<'a> {
        let user = self.revise_prompt(task, &draft.text, critique);
        self.ask_async(Role::Reviser, &self.prompts.reviser_system, user, key, "revise")
    }

    /// The adjudicator's final pass over a finished loop's draft, cleaned like every
    /// other model text. `None` when no adjudicator model is configured.
    fn adjudicate(
        &self,
        task: &Task,
        draft: &str,
        last_critique: Option<&Critique>,
        key: &DraftKey<'_>,
    ) -> Option<Result<Draft, AuthorError>> {
        if !self.client.has_role(Role::Adjudicator) {
            return None;
        }
        let (context, evidence) = task_blocks(task);
        let feedback = match last_critique {
            Some(critique) => feedback_block(critique, &self.prompts.generic_fix),
            None => format!("- {}\n", self.prompts.generic_fix),
        };
        let user = render(
            &self.prompts.adjudicator,
            &[
                ("prompt", task.prompt.trim()),
                ("context", &context),
                ("evidence", &evidence),
                ("draft", draft),
                ("feedback", &feedback),
            ],
        );
        Some(self.ask(Role::Adjudicator, &self.prompts.adjudicator_system, user, key, "adjudicate"))
    }
}
