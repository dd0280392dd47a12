//! The `openai` backend: a [`Author`] whose generator and reviser are models behind an
//! OpenAI-compatible endpoint, and the host's `chat` service through which plugins that require
//! it ask the judge model. Both share one [`critbench_openai::Client`], so the concurrency
//! limit, the cache, the retries and the token cap are the run's, whoever asks.

use std::sync::Arc;

use critbench_core::{Critique, Task};
use critbench_openai::{CallIdentity, ChatRequest, Client, ClientSettings, Message, Role};
use critbench_plugin_host::services::{CallScope, Host, HostService, Reply, ServiceError};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::backend::{Author, Draft, DraftKey, Writing};
use crate::memory::Hint;
use crate::prompts::{Prompts, clean_model_text, feedback_block, hints_block, render, task_blocks};

/// The name plugins call the judge model by (`critbench_host_v1.call`).
pub const CHAT_SERVICE: &str = "chat";

/// A run's model client, offered to its plugins as the `chat` service when it has a judge model
/// ([`plugin_host`]).
pub struct OpenAiSession {
    pub client: Arc<Client>,
}

impl OpenAiSession {
    /// Makes the client (reading the API key from the environment), with the run's budget.
    pub fn start(
        settings: &ClientSettings,
        budget: Option<&critbench_openai::Budget>,
    ) -> Result<OpenAiSession, critbench_openai::ClientError> {
        let client = Client::new(settings.clone())?.with_budget(budget.cloned().unwrap_or_default());
        Ok(OpenAiSession { client: Arc::new(client) })
    }
}

/// The services a run (or `critbench judge`) offers its plugins: `chat`, the judge model, when
/// the experiment names one. Each run has its own; open the run's critics with it.
pub fn plugin_host(session: Option<&OpenAiSession>) -> Arc<Host> {
    let host = Host::new();
    let host = match session {
        Some(session) if session.client.has_role(Role::Judge) => {
            host.offer(CHAT_SERVICE, Arc::new(ChatService { client: Arc::clone(&session.client) }))
        }
        _ => host
            .withhold(CHAT_SERVICE, "it needs a judge model: [openai] models = { judge = \"...\" } in the experiment"),
    };
    Arc::new(host)
}

/// `chat`: `{"messages": [{"role", "content"}...], "response_format": {...}?}` →
/// `{"content": "...", "tokens_in": n, "tokens_out": n, "cached": bool}`, asked of the judge
/// model with the judge's sampling settings.
struct ChatService {
    client: Arc<Client>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChatServiceRequest {
    messages: Vec<Message>,
    #[serde(default)]
    response_format: Option<Value>,
}

impl HostService for ChatService {
    fn call(&self, request: &str, scope: Option<&CallScope>) -> Result<Reply, ServiceError> {
        let request: ChatServiceRequest = serde_json::from_str(request).map_err(|e| {
            ServiceError::BadRequest(format!(
                "chat: bad request ({e}); send {{\"messages\": [{{\"role\": \"user\", \"content\": \"...\"}}], \
                 \"response_format\": {{\"type\": \"json_object\"}}}}"
            ))
        })?;
        if request.messages.is_empty() {
            return Err(ServiceError::BadRequest("chat: `messages` is empty".into()));
        }
        let identity = match scope {
            Some(scope) => CallIdentity {
                task_id: scope.task_id.clone(),
                epoch: scope.epoch,
                round: scope.round,
                attempt: scope.attempt.max(1),
            },
            None => CallIdentity { attempt: 1, ..CallIdentity::default() },
        };
        let chat = ChatRequest { messages: request.messages, response_format: request.response_format };
        let answer = self.client.chat(Role::Judge, &chat, &identity).map_err(|e| ServiceError::Failed(e.into()))?;
        // Counted on the critique's round (`critic_tokens_*`), whatever the plugin does with them.
        Ok(Reply {
            answer: json!({
                "content": answer.content,
                "tokens_in": answer.tokens_in,
                "tokens_out": answer.tokens_out,
                "cached": answer.cached,
            })
            .to_string(),
            tokens_in: answer.tokens_in,
            tokens_out: answer.tokens_out,
        })
    }
}

/// Drafts and revisions from the generator and reviser models.
pub struct OpenAiAuthor {
    client: Arc<Client>,
    prompts: Prompts,
}

impl OpenAiAuthor {
    pub fn new(client: Arc<Client>, prompts: Prompts) -> OpenAiAuthor {
        OpenAiAuthor { client, prompts }
    }

    fn ask(&self, role: Role, system: &str, user: String, key: &DraftKey<'_>, what: &str) -> Result<Draft, String> {
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
        what: &'a str,
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
    answer: Result<critbench_openai::ChatAnswer, critbench_openai::ChatError>,
    key: &DraftKey<'_>,
    what: &str,
) -> Result<Draft, String> {
    let answer = answer.map_err(|error| format!("round {} ({what}): {error}", key.round))?;
    Ok(Draft {
        text: clean_model_text(&answer.content),
        tokens_in: answer.tokens_in,
        tokens_out: answer.tokens_out,
        acted_on_critique: None,
    })
}

impl Author for OpenAiAuthor {
    fn awaits(&self) -> bool {
        true
    }

    fn generate(&self, task: &Task, hints: &[Hint], key: &DraftKey<'_>) -> Result<Draft, String> {
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
        draft: &str,
        critique: Option<&Critique>,
        key: &DraftKey<'_>,
    ) -> Result<Draft, String> {
        let user = self.revise_prompt(task, draft, critique);
        self.ask(Role::Reviser, &self.prompts.reviser_system, user, key, "revise")
    }

    fn revise_async<'a>(
        &'a self,
        task: &'a Task,
        draft: &'a str,
        critique: Option<&'a Critique>,
        key: DraftKey<'a>,
    ) -> Writing<'a> {
        let user = self.revise_prompt(task, draft, critique);
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
    ) -> Option<Result<Draft, String>> {
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
