//! A run's model client ([`OpenAiSession`]) and the host's `chat` service through which plugins
//! that require it ask the judge model. The `openai` backend's author
//! ([`critbench_openai::author::OpenAiAuthor`]) and the service share the one
//! [`critbench_openai::Client`], so the concurrency limit, the cache, the retries and the token
//! cap are the run's, whoever asks.

use std::sync::{Arc, OnceLock};

use critbench_openai::metered::MeteredEndpoint;
use critbench_openai::usage::UsageReport;
use critbench_openai::{CallIdentity, ChatRequest, Client, ClientSettings, Message, Role};
use critbench_plugin_host::model::{ModelAccess, ModelField, ModelPass, ModelRole, ModelUse, Redact};
use critbench_plugin_host::services::{CallScope, Host, HostService, Reply, ServiceError};
use serde::Deserialize;
use serde_json::{Value, json};

/// The name plugins call the judge model by (`critbench_host.call`).
pub const CHAT_SERVICE: &str = "chat";

/// A run's model client, offered to its plugins as the `chat` service when it has a judge model
/// ([`plugin_host`]).
pub struct OpenAiSession {
    /// The client every `chat` call goes through.
    pub client: Arc<Client>,
    /// The metered endpoint, started when the first program is handed model access.
    metered: OnceLock<Arc<MeteredEndpoint>>,
}

impl OpenAiSession {
    /// Makes the client (reading the API key from the environment), with the run's budget.
    pub fn start(
        settings: &ClientSettings,
        budget: Option<&critbench_openai::Budget>,
    ) -> Result<OpenAiSession, critbench_openai::ClientError> {
        let client = Client::new(settings.clone())?.with_budget(budget.cloned().unwrap_or_default());
        Ok(OpenAiSession { client: Arc::new(client), metered: OnceLock::new() })
    }

    /// Model access for the run's programs through the metered endpoint (started on first use, on
    /// the client's runtime).
    pub fn model_access(&self) -> Result<Arc<dyn ModelAccess>, crate::EngineError> {
        if let Some(endpoint) = self.metered.get() {
            return Ok(Arc::new(Metering(Arc::clone(endpoint), Redaction(Arc::clone(&self.client)))));
        }
        let endpoint = MeteredEndpoint::start(Arc::clone(&self.client)).map_err(|source| crate::EngineError::Io {
            context: "cannot serve the metered endpoint on 127.0.0.1".into(),
            source,
        })?;
        let endpoint = Arc::clone(self.metered.get_or_init(|| Arc::new(endpoint)));
        Ok(Arc::new(Metering(endpoint, Redaction(Arc::clone(&self.client)))))
    }

    /// What takes the run's secrets out of what its programs write: the client's redaction,
    /// counted in its `redacted`.
    pub fn redaction(&self) -> Arc<dyn Redact> {
        Arc::new(Redaction(Arc::clone(&self.client)))
    }

    /// The client's report, with what the metered endpoint served when a program used it.
    pub fn report(&self) -> UsageReport {
        let mut report = self.client.report();
        report.metered = self.metered.get().map(|endpoint| endpoint.report()).filter(|r| r.used());
        report
    }
}

/// The metered endpoint as the programs' model access, and the client's redaction.
struct Metering(Arc<MeteredEndpoint>, Redaction);

/// The client's redaction of what a program wrote ([`Client::redact_output`]).
struct Redaction(Arc<Client>);

impl Redact for Redaction {
    fn redact(&self, text: String) -> String {
        self.0.redact_output(text)
    }
}

impl Redact for Metering {
    fn redact(&self, text: String) -> String {
        self.1.redact(text)
    }
}

impl ModelAccess for Metering {
    fn open(&self, role: ModelRole, task_id: &str, epoch: u32, round: u32) -> Box<dyn ModelPass + '_> {
        let role = match role {
            ModelRole::Generator => Role::Generator,
            ModelRole::Reviser => Role::Reviser,
            ModelRole::Judge => Role::Judge,
        };
        Box::new(MeteredPass(self.0.open(role, task_id, epoch, round)))
    }
}

/// One request's key on the metered endpoint.
struct MeteredPass<'a>(critbench_openai::metered::Pass<'a>);

impl ModelPass for MeteredPass<'_> {
    fn model(&self) -> ModelField<'_> {
        ModelField { base_url: self.0.base_url(), api_key: self.0.api_key() }
    }

    fn close(self: Box<Self>) -> ModelUse {
        let metered = self.0.close();
        ModelUse {
            calls: metered.calls,
            tokens_in: metered.tokens_in,
            tokens_out: metered.tokens_out,
            truncated: metered.truncated,
        }
    }
}

/// The services a run (or `critbench judge`) offers its plugins: `chat`, the judge model, when
/// the experiment names one, and then model access for its command critics through the metered
/// endpoint; with any `[openai]` table, the client's redaction of what critic processes write.
/// Each run has its own; open the run's critics with it.
pub fn plugin_host(session: Option<&OpenAiSession>) -> Result<Arc<Host>, crate::EngineError> {
    let mut host = Host::new();
    if let Some(session) = session {
        host = host.with_redaction(session.redaction());
    }
    let host = match session {
        Some(session) if session.client.has_role(Role::Judge) => host
            .offer(CHAT_SERVICE, Arc::new(ChatService { client: Arc::clone(&session.client) }))
            .with_model(session.model_access()?),
        _ => host
            .withhold(CHAT_SERVICE, "it needs a judge model: [openai] models = { judge = \"...\" } in the experiment"),
    };
    Ok(Arc::new(host))
}

/// `chat`: `{"messages": [{"role", "content"}...], "response_format": {...}?}` →
/// `{"content": "...", "tokens_in": n, "tokens_out": n, "cached": bool, "truncated": bool,
/// "max_tokens": n}`, asked of the judge model with the judge's sampling settings (`truncated`: the
/// answer was cut at `max_tokens`, the judge role's, `null` when the server's default).
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
        let max_tokens = self.client.settings().roles.get(&Role::Judge).and_then(|r| r.max_tokens);
        // Counted on the critique's round (`critic_tokens_*`, `critic_truncated`), whatever the
        // plugin does with them.
        Ok(Reply {
            answer: json!({
                "content": answer.content,
                "tokens_in": answer.tokens_in,
                "tokens_out": answer.tokens_out,
                "cached": answer.cached,
                "truncated": answer.truncated,
                "max_tokens": max_tokens,
            })
            .to_string(),
            tokens_in: answer.tokens_in,
            tokens_out: answer.tokens_out,
            truncated: Some(answer.truncated),
        })
    }
}
