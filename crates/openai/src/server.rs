//! Which server software an endpoint runs, and the form structured output takes for it.
//!
//! Critics ask for structured output in OpenAI's form (`response_format` of type `json_schema`
//! with the schema nested under `json_schema.schema`, or `json_object`). Servers read it
//! differently, and some refuse the others' forms:
//! - **OpenAI** (and servers that copy its API): the nested form as it is; it refuses request
//!   fields it does not know (`structured_outputs`, `format`).
//! - **vLLM**: `structured_outputs: {"json": schema}` beside the messages (from v0.10.2; the
//!   `guided_json` it replaced was removed in v0.12, so an older vLLM gets `guided_json`).
//! - **llama.cpp's server**: the schema at the top level, `{"type": "json_object", "schema": …}`;
//!   before it learned OpenAI's form it answered the nested one with HTTP 500 ("response_format
//!   type must be one of \"text\" or \"json_object\"").
//! - **Ollama**: `format: schema` (or `"json"`) on its own `/api/chat`, whose answer carries
//!   `message.content`, `prompt_eval_count` and `eval_count`; its OpenAI-compatible endpoint
//!   ignored `response_format` before v0.5.
//!
//! [`detect`] asks an endpoint at start: `/v1/models` (vLLM and llama.cpp name themselves in
//! `owned_by`; OpenAI's answer carries `openai-*` headers), then llama.cpp's `/props`, then
//! Ollama's `/api/version`. A server none of these recognise gets OpenAI's form. The cache keys
//! a request by its OpenAI form, so replicas of one model behind different software share it.

use std::borrow::Cow;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};

use crate::settings::{EndpointSettings, ServerKind};

/// How structured output is written for one endpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Server {
    /// The server software.
    pub kind: ServerKind,
    /// How the kind was known: `"configured"`, or what detection saw (`"/v1/models owned_by
    /// vllm"`, `"/props"`, …, `"not recognised"`).
    pub detected_by: String,
    /// The version the server reports, when it does (vLLM's `/version`, Ollama's `/api/version`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The model names `/v1/models` lists (at most [`MAX_LISTED_MODELS`]).
    pub models: Vec<String>,
    /// The form a schema is sent in: `response_format.json_schema`, `structured_outputs`,
    /// `guided_json`, `response_format.schema` or `format`.
    pub structured_output: &'static str,
}

/// Model names recorded per endpoint, at most.
pub const MAX_LISTED_MODELS: usize = 100;

impl Server {
    /// A server said in the experiment file, not asked.
    pub fn configured(kind: ServerKind) -> Server {
        Server::of(kind, "configured".into(), None, Vec::new())
    }

    fn of(kind: ServerKind, detected_by: String, version: Option<String>, models: Vec<String>) -> Server {
        let structured_output = match kind {
            ServerKind::Openai => "response_format.json_schema",
            ServerKind::Vllm if version.as_deref().is_some_and(vllm_before_structured_outputs) => "guided_json",
            ServerKind::Vllm => "structured_outputs",
            ServerKind::Llamacpp => "response_format.schema",
            ServerKind::Ollama => "format",
        };
        Server { kind, detected_by, version, models, structured_output }
    }

    /// Whether a request with this body goes to Ollama's own `/api/chat` rather than
    /// `/v1/chat/completions`: only requests that ask for structured output.
    pub fn native_chat(&self, body: &Value) -> bool {
        self.kind == ServerKind::Ollama && structured(body).is_some()
    }

    /// `body` (a chat request in OpenAI's form) in the form this server reads: `body` itself
    /// when that is already the form (no copy: this runs once per model call).
    pub fn shape<'a>(&self, body: &'a Value) -> Cow<'a, Value> {
        let Some(format) = structured(body) else { return Cow::Borrowed(body) };
        // A copy of `body` with `edit` applied.
        let edited = |edit: &dyn Fn(&mut serde_json::Map<String, Value>)| {
            let mut out = body.clone();
            edit(out.as_object_mut().expect("a request body is an object"));
            Cow::Owned(out)
        };
        match (self.kind, format) {
            (ServerKind::Openai, _) | (ServerKind::Vllm | ServerKind::Llamacpp, Format::Json) => Cow::Borrowed(body),
            (ServerKind::Vllm, Format::Schema(schema)) => edited(&|object| {
                object.remove("response_format");
                if self.structured_output == "guided_json" {
                    object.insert("guided_json".into(), schema.clone());
                } else {
                    object.insert("structured_outputs".into(), json!({ "json": schema }));
                }
            }),
            (ServerKind::Llamacpp, Format::Schema(schema)) => edited(&|object| {
                object.insert("response_format".into(), json!({"type": "json_object", "schema": schema}));
            }),
            (ServerKind::Ollama, format) => {
                let object = body.as_object().expect("a request body is an object");
                let mut options = serde_json::Map::new();
                for (from, to) in [("temperature", "temperature"), ("seed", "seed"), ("max_tokens", "num_predict")] {
                    if let Some(value) = object.get(from) {
                        options.insert(to.into(), value.clone());
                    }
                }
                Cow::Owned(json!({
                    "model": object.get("model").cloned().unwrap_or(Value::Null),
                    "messages": object.get("messages").cloned().unwrap_or(Value::Null),
                    "stream": false,
                    "format": match format { Format::Json => json!("json"), Format::Schema(schema) => schema },
                    "options": options,
                }))
            }
        }
    }
}

/// vLLM took `structured_outputs` from v0.10.2; a version before it reads `guided_json`.
fn vllm_before_structured_outputs(version: &str) -> bool {
    let numbers: Vec<u64> =
        version.trim_start_matches('v').split(['.', '+', '-']).take(3).map_while(|part| part.parse().ok()).collect();
    match numbers[..] {
        [major, minor, patch] => (major, minor, patch) < (0, 10, 2),
        [major, minor] => (major, minor) < (0, 10),
        _ => false,
    }
}

/// What a request asks for.
enum Format {
    /// `json_object`: any JSON object.
    Json,
    /// A JSON schema.
    Schema(Value),
}

fn structured(body: &Value) -> Option<Format> {
    let format = body.get("response_format")?;
    match format.get("type").and_then(Value::as_str) {
        Some("json_object") => Some(Format::Json),
        Some("json_schema") => format.pointer("/json_schema/schema").cloned().map(Format::Schema),
        _ => None,
    }
}

/// What a probe saw: a status, headers, and a body when it was JSON.
pub struct Probe {
    /// The HTTP status.
    pub status: u16,
    /// The response headers.
    pub headers: reqwest::header::HeaderMap,
    /// The body, when it was JSON.
    pub json: Option<Value>,
}

/// Asks the endpoint what it is; `get` fetches one URL of it (`None`: no answer).
pub async fn detect<F, Fut>(urls: &EndpointSettings, get: F) -> Server
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = Option<Probe>>,
{
    let models_probe = get(urls.url("models")).await;
    let mut models = Vec::new();
    let mut owners = Vec::new();
    let mut openai_headers = false;
    if let Some(probe) = &models_probe {
        openai_headers = probe.headers.keys().any(|name| name.as_str().starts_with("openai-"));
        if let Some(data) = probe.json.as_ref().and_then(|j| j["data"].as_array()).filter(|_| probe.status == 200) {
            for model in data {
                if let Some(id) = model["id"].as_str().filter(|_| models.len() < MAX_LISTED_MODELS) {
                    models.push(id.to_string());
                }
                if let Some(owner) = model["owned_by"].as_str() {
                    owners.push(owner.to_ascii_lowercase());
                }
            }
        }
    }
    let version_of = |probe: Option<Probe>| {
        probe.filter(|p| p.status == 200).and_then(|p| p.json?.get("version")?.as_str().map(str::to_string))
    };
    if owners.iter().any(|o| o == "vllm") {
        let version = version_of(get(urls.root_url("version")).await);
        return Server::of(ServerKind::Vllm, "/v1/models owned_by vllm".into(), version, models);
    }
    if owners.iter().any(|o| o == "llamacpp") {
        return Server::of(ServerKind::Llamacpp, "/v1/models owned_by llamacpp".into(), None, models);
    }
    if openai_headers {
        return Server::of(ServerKind::Openai, "/v1/models openai-* headers".into(), None, models);
    }
    let props = get(urls.root_url("props")).await;
    if props.is_some_and(|p| {
        p.status == 200
            && p.json.is_some_and(|j| j.get("default_generation_settings").is_some() || j.get("build_info").is_some())
    }) {
        return Server::of(ServerKind::Llamacpp, "/props".into(), None, models);
    }
    if let Some(version) = version_of(get(urls.root_url("api/version")).await) {
        return Server::of(ServerKind::Ollama, "/api/version".into(), Some(version), models);
    }
    let seen = if models_probe.is_some() { "not recognised" } else { "no answer" };
    Server::of(ServerKind::Openai, seen.into(), None, models)
}

/// How long one detection request may take: a server that does not answer costs the start this
/// at most per probe.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

#[cfg(test)]
mod tests {
    use super::*;

    fn schema_request() -> Value {
        json!({
            "model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": 0.0, "seed": 3,
            "stream": false, "max_tokens": 9,
            "response_format": {"type": "json_schema", "json_schema": {"name": "critique", "strict": true,
                "schema": {"type": "object", "properties": {"score": {"type": "number"}}}}},
        })
    }

    #[test]
    fn each_server_gets_the_schema_where_it_reads_it() {
        let body = schema_request();
        let schema = body["response_format"]["json_schema"]["schema"].clone();
        let openai = Server::configured(ServerKind::Openai).shape(&body);
        assert_eq!(*openai, body, "OpenAI's own form is sent as it is");

        let vllm = Server::configured(ServerKind::Vllm).shape(&body);
        assert_eq!(vllm["structured_outputs"], json!({ "json": schema }));
        assert!(vllm.get("response_format").is_none() && vllm.get("guided_json").is_none(), "{vllm}");
        let old = Server::of(ServerKind::Vllm, "t".into(), Some("0.9.2".into()), Vec::new());
        assert_eq!(old.structured_output, "guided_json");
        assert_eq!(old.shape(&body)["guided_json"], schema);
        for version in ["0.10.2", "0.12.0", "v0.11.1rc2", "1.0"] {
            let server = Server::of(ServerKind::Vllm, "t".into(), Some(version.into()), Vec::new());
            assert_eq!(server.structured_output, "structured_outputs", "{version}");
        }

        let llama = Server::configured(ServerKind::Llamacpp).shape(&body);
        assert_eq!(llama["response_format"], json!({"type": "json_object", "schema": schema}));

        let ollama = Server::configured(ServerKind::Ollama);
        assert!(ollama.native_chat(&body));
        let native = ollama.shape(&body);
        assert_eq!(native["format"], schema);
        assert_eq!(native["options"], json!({"temperature": 0.0, "seed": 3, "num_predict": 9}));
        assert_eq!((native["stream"].clone(), native.get("response_format")), (json!(false), None));
    }

    #[test]
    fn plain_and_json_object_requests_keep_their_form_but_for_ollama() {
        let mut body = schema_request();
        body.as_object_mut().unwrap().remove("response_format");
        for kind in ServerKind::ALL {
            let server = Server::configured(kind);
            assert!(matches!(server.shape(&body), Cow::Borrowed(same) if *same == body), "{kind}");
            assert!(!server.native_chat(&body));
        }
        body["response_format"] = json!({"type": "json_object"});
        for kind in [ServerKind::Openai, ServerKind::Vllm, ServerKind::Llamacpp] {
            assert!(matches!(Server::configured(kind).shape(&body), Cow::Borrowed(same) if *same == body), "{kind}");
        }
        assert_eq!(Server::configured(ServerKind::Ollama).shape(&body)["format"], "json");
    }

    #[test]
    fn server_names_parse() {
        for kind in ServerKind::ALL {
            assert_eq!(ServerKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(ServerKind::parse("llama.cpp"), Some(ServerKind::Llamacpp));
        assert_eq!(ServerKind::parse("tgi"), None);
    }
}
