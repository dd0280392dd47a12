//! `llm-judge`: a critic that asks a judge model, through the host's `chat` service, for a
//! structured critique of a draft.
//!
//! The plugin builds the prompt and checks the answer; the host owns the HTTP client, the
//! concurrency limit, the retries and the response cache, and it computes the score (the mean of
//! the dimensions) and decides pass. The lesson — never let the model do arithmetic or
//! threshold checks — is why the model reports only sub-scores: any total it adds is dropped, and
//! its own `passed` is passed through to be recorded as `critic_passed`, never obeyed.
//!
//! Config (the experiment's `config = {...}` for this critic; unknown keys are rejected):
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `dimensions` | accuracy, completeness, clarity | a list of names, or a table name → what it means |
//! | `scale` | `[0, 10]` | the scale the model scores each dimension on; answers are mapped linearly onto 0–10 |
//! | `mode` | `"issues"` | `"issues"` (issues, fatal issues, suggestions) or `"single_fix"` (one most important fix) |
//! | `attempts` | 3 | answers asked for per critique before giving up (a malformed answer is asked again, with the reason) |
//! | `max_items` | 5 | items per list the model may give (longer lists are cut) |
//! | `rubric` | — | extra instructions, appended to the system prompt |
//! | `system` | — | replaces the whole system prompt (the JSON shape is still appended) |
//! | `response_format` | `"json_object"` | or `"json_schema"` (a schema with capped lengths; falls back to `json_object` when the server rejects it) |
//! | `ask_passed` | true | ask for the model's own verdict (recorded as `critic_passed`) |
//! | `show_context` | true | show the task's `context` and `evidence` to the judge |

#![warn(missing_docs)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use critbench_abi::{CriticError, CriticPlugin, Host, Request, ServiceError};
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The score range the host sees: every dimension is mapped onto it.
const RANGE: (f64, f64) = (0.0, 10.0);
/// Longest text kept from one issue, suggestion or fix.
const MAX_ITEM_CHARS: usize = 400;
const MAX_RATIONALE_CHARS: usize = 1000;

#[derive(Deserialize)]
#[serde(untagged)]
enum Dimensions {
    Names(Vec<String>),
    Described(BTreeMap<String, String>),
}

#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Issues,
    SingleFix,
}

#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Format {
    JsonObject,
    JsonSchema,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    #[serde(default)]
    dimensions: Option<Dimensions>,
    #[serde(default)]
    scale: Option<[f64; 2]>,
    #[serde(default)]
    mode: Option<Mode>,
    #[serde(default)]
    attempts: Option<u32>,
    #[serde(default)]
    max_items: Option<usize>,
    #[serde(default)]
    rubric: Option<String>,
    #[serde(default)]
    system: Option<String>,
    #[serde(default)]
    response_format: Option<Format>,
    #[serde(default)]
    ask_passed: Option<bool>,
    #[serde(default)]
    show_context: Option<bool>,
}

/// The critic: the judge's prompt pieces and the host whose `chat` service it calls.
pub struct LlmJudge {
    host: Host,
    /// (name, meaning), in the order given.
    dimensions: Vec<(String, String)>,
    scale: (f64, f64),
    mode: Mode,
    attempts: u32,
    max_items: usize,
    ask_passed: bool,
    show_context: bool,
    system: String,
    schema_format: bool,
    /// Set once the server rejected `json_schema`: later requests use `json_object`.
    schema_rejected: AtomicBool,
}

fn default_dimensions() -> Vec<(String, String)> {
    vec![
        ("accuracy".into(), "every claim is correct and supported; nothing is invented".into()),
        ("completeness".into(), "the draft does everything the task asks, at the length it asks".into()),
        ("clarity".into(), "clear, well organized, easy to read".into()),
    ]
}

impl LlmJudge {
    fn from_config(config: &str, host: Host) -> Result<LlmJudge, ConfigError> {
        let config: Config = serde_json::from_str(config).map_err(ConfigError::Json)?;
        let dimensions = match config.dimensions {
            None => default_dimensions(),
            Some(Dimensions::Names(names)) => names.into_iter().map(|n| (n, String::new())).collect(),
            Some(Dimensions::Described(map)) => map.into_iter().collect(),
        };
        if dimensions.is_empty() {
            return Err(ConfigError::NoDimensions);
        }
        if let Some((name, _)) = dimensions.iter().find(|(n, _)| n.trim().is_empty()) {
            return Err(ConfigError::EmptyDimensionName(name.clone()));
        }
        let [lo, hi] = config.scale.unwrap_or([0.0, 10.0]);
        if !(lo.is_finite() && hi.is_finite() && lo < hi) {
            return Err(ConfigError::Scale { lo, hi });
        }
        let attempts = config.attempts.unwrap_or(3);
        if attempts == 0 {
            return Err(ConfigError::NoAttempts);
        }
        let max_items = config.max_items.unwrap_or(5);
        if max_items == 0 {
            return Err(ConfigError::NoItems);
        }
        let mut judge = LlmJudge {
            host,
            dimensions,
            scale: (lo, hi),
            mode: config.mode.unwrap_or(Mode::Issues),
            attempts,
            max_items,
            ask_passed: config.ask_passed.unwrap_or(true),
            show_context: config.show_context.unwrap_or(true),
            system: String::new(),
            schema_format: config.response_format == Some(Format::JsonSchema),
            schema_rejected: AtomicBool::new(false),
        };
        judge.system = judge.system_prompt(config.system.as_deref(), config.rubric.as_deref());
        Ok(judge)
    }

    fn number(&self, value: f64) -> String {
        if value.fract() == 0.0 { format!("{}", value as i64) } else { format!("{value}") }
    }

    /// The JSON shape the model must answer in, as an example.
    fn shape(&self) -> String {
        let dims: Vec<String> = self.dimensions.iter().map(|(name, _)| format!("\"{name}\": <number>")).collect();
        let mut fields = vec![format!("\"dimensions\": {{{}}}", dims.join(", "))];
        match self.mode {
            Mode::Issues => {
                fields.push("\"issues\": [\"...\"]".into());
                fields.push("\"fatal_issues\": []".into());
                fields.push("\"suggestions\": [{\"dimension\": \"...\", \"edit\": \"...\"}]".into());
            }
            Mode::SingleFix => {
                fields.push("\"single_critical_fix\": \"...\"".into());
                fields.push("\"fatal_issues\": []".into());
            }
        }
        if self.ask_passed {
            fields.push("\"passed\": false".into());
        }
        fields.push("\"rationale\": \"...\"".into());
        format!("{{{}}}", fields.join(", "))
    }

    fn system_prompt(&self, system: Option<&str>, rubric: Option<&str>) -> String {
        let (lo, hi) = (self.number(self.scale.0), self.number(self.scale.1));
        let mut text = match system {
            Some(system) => system.trim().to_string(),
            None => format!(
                "You are a meticulous reviewer. You grade a draft written for a task: the draft, never the task \
                 itself.\nScore by deduction: for each dimension start at {hi} and deduct only for concrete problems \
                 you can point to in the draft's text. If you find no such problem, give {hi}. Do not compute any \
                 total or average."
            ),
        };
        if let Some(rubric) = rubric.filter(|r| !r.trim().is_empty()) {
            text.push_str("\n\n");
            text.push_str(rubric.trim());
        }
        text.push_str(&format!("\n\nDimensions, each a number from {lo} to {hi}:\n"));
        for (name, meaning) in &self.dimensions {
            if meaning.is_empty() {
                text.push_str(&format!("- {name}\n"));
            } else {
                text.push_str(&format!("- {name}: {meaning}\n"));
            }
        }
        text.push_str(&format!(
            "\nAnswer with only a JSON object, no other text, of exactly this shape:\n{}\n",
            self.shape()
        ));
        let items = self.max_items;
        match self.mode {
            Mode::Issues => text.push_str(&format!(
                "Rules: at most {items} items in each list, each one short sentence naming the part of the draft it \
                 is about; `fatal_issues` only for problems that make the draft unusable (empty, off-topic, invented \
                 sources or facts), otherwise []; each suggestion is one concrete edit."
            )),
            Mode::SingleFix => text.push_str(
                "Rules: `single_critical_fix` is the one change that would improve the draft most, in one or two \
                 sentences naming the part of the draft to change; `fatal_issues` only for problems that make the \
                 draft unusable (empty, off-topic, invented sources or facts), otherwise [].",
            ),
        }
        if self.ask_passed {
            text.push_str(" `passed` is your own verdict: is the draft ready as it is?");
        }
        text
    }

    fn user_prompt(&self, request: &Request) -> String {
        let mut text = format!("Task:\n{}\n\n", request.task.prompt.trim());
        if self.show_context {
            if let Some(context) = request.task.context.as_deref().filter(|c| !c.trim().is_empty()) {
                text.push_str(&format!("Source material:\n{}\n\n", context.trim()));
            }
            if !request.task.evidence.is_empty() {
                text.push_str("Evidence the draft may cite by id:\n");
                for (id, passage) in &request.task.evidence {
                    text.push_str(&format!("[{id}] {}\n", passage.trim()));
                }
                text.push('\n');
            }
        }
        text.push_str(&format!("Draft to grade:\n<<<\n{}\n>>>", request.draft));
        text
    }

    fn response_format(&self) -> Value {
        if !self.schema_format || self.schema_rejected.load(Ordering::Relaxed) {
            return json!({"type": "json_object"});
        }
        let (lo, hi) = self.scale;
        let text = json!({"type": "string", "maxLength": MAX_ITEM_CHARS});
        let list = json!({"type": "array", "items": text, "maxItems": self.max_items});
        let dims: Map<String, Value> = self
            .dimensions
            .iter()
            .map(|(name, _)| (name.clone(), json!({"type": "number", "minimum": lo, "maximum": hi})))
            .collect();
        let names: Vec<&str> = self.dimensions.iter().map(|(n, _)| n.as_str()).collect();
        let mut properties = Map::new();
        properties.insert(
            "dimensions".into(),
            json!({"type": "object", "properties": dims, "required": names, "additionalProperties": false}),
        );
        match self.mode {
            Mode::Issues => {
                properties.insert("issues".into(), list.clone());
                properties.insert("fatal_issues".into(), list.clone());
                properties.insert(
                    "suggestions".into(),
                    json!({"type": "array", "maxItems": self.max_items, "items": {
                        "type": "object",
                        "properties": {"dimension": {"type": "string", "maxLength": 60}, "edit": text},
                        "required": ["dimension", "edit"],
                        "additionalProperties": false,
                    }}),
                );
            }
            Mode::SingleFix => {
                properties.insert("single_critical_fix".into(), text.clone());
                properties.insert("fatal_issues".into(), list.clone());
            }
        }
        if self.ask_passed {
            properties.insert("passed".into(), json!({"type": "boolean"}));
        }
        properties.insert("rationale".into(), json!({"type": "string", "maxLength": MAX_RATIONALE_CHARS}));
        let required: Vec<String> = properties.keys().cloned().collect();
        json!({"type": "json_schema", "json_schema": {"name": "critique", "strict": true, "schema": {
            "type": "object", "properties": properties, "required": required, "additionalProperties": false,
        }}})
    }

    /// One `chat` call through the host: the answer's text, and whether the host says it was cut
    /// at the judge's `max_tokens`.
    fn ask(&self, messages: &[Value]) -> Result<(String, Option<Cut>), ChatError> {
        loop {
            let schema = self.schema_format && !self.schema_rejected.load(Ordering::Relaxed);
            let request = json!({"messages": messages, "response_format": self.response_format()});
            match self.host.call("chat", &request.to_string()) {
                Ok(answer) => {
                    let answer: Value = serde_json::from_str(&answer).map_err(ChatError::NotJson)?;
                    let content = answer["content"].as_str().map(str::to_string).ok_or(ChatError::NoContent)?;
                    let cut = (answer["truncated"] == true).then(|| Cut { max_tokens: answer["max_tokens"].as_u64() });
                    return Ok((content, cut));
                }
                // A server that does not know json_schema says 400; json_object is the fallback.
                Err(error) if schema && error.0.contains("HTTP 400") => {
                    self.schema_rejected.store(true, Ordering::Relaxed);
                }
                Err(error) => return Err(ChatError::Service(error)),
            }
        }
    }

    /// Checks one model answer against the critique contract and turns it into the critique the
    /// host receives: dimensions mapped onto 0–10 and no score (the host computes it).
    fn validate(&self, content: &str) -> Result<Value, AnswerError> {
        let object = extract_json(content)?;
        let dims_source = match object.get("dimensions") {
            Some(Value::Object(map)) => map.clone(),
            Some(_) => return Err(AnswerError::DimensionsNotAnObject),
            // Small models sometimes put the dimensions at the top level.
            None => object.clone(),
        };
        let (lo, hi) = self.scale;
        let mut dimensions = Map::new();
        for (name, _) in &self.dimensions {
            let value = dims_source.get(name).ok_or_else(|| AnswerError::MissingDimension(name.clone()))?;
            let value = number(value)
                .ok_or_else(|| AnswerError::NotANumber { dimension: name.clone(), value: value.clone() })?;
            if !(lo..=hi).contains(&value) {
                let (lo, hi) = (self.number(lo), self.number(hi));
                return Err(AnswerError::OutsideTheScale { dimension: name.clone(), value, lo, hi });
            }
            let mapped = RANGE.0 + (value - lo) / (hi - lo) * (RANGE.1 - RANGE.0);
            dimensions.insert(name.clone(), json!(mapped));
        }
        let mut critique = Map::new();
        critique.insert("dimensions".into(), Value::Object(dimensions));
        let fatal = self.texts(object.get("fatal_issues"), "fatal_issues")?;
        match self.mode {
            Mode::Issues => {
                critique.insert("issues".into(), json!(self.texts(object.get("issues"), "issues")?));
                critique.insert("suggestions".into(), json!(self.suggestions(object.get("suggestions"))?));
            }
            Mode::SingleFix => {
                let fix = object
                    .get("single_critical_fix")
                    .and_then(Value::as_str)
                    .map(|fix| clip(fix.trim(), MAX_ITEM_CHARS))
                    .ok_or(AnswerError::NoSingleFix)?;
                let fixes: Vec<String> = if fix.is_empty() { Vec::new() } else { vec![fix] };
                critique.insert("issues".into(), json!(fixes));
                critique
                    .insert("suggestions".into(), json!(fixes.iter().map(|f| json!({"edit": f})).collect::<Vec<_>>()));
            }
        }
        critique.insert("fatal_issues".into(), json!(fatal));
        if self.ask_passed
            && let Some(passed) = object.get("passed").and_then(boolean)
        {
            critique.insert("passed".into(), json!(passed));
        }
        if let Some(rationale) = object.get("rationale").and_then(Value::as_str).filter(|r| !r.trim().is_empty()) {
            critique.insert("rationale".into(), json!(clip(rationale.trim(), MAX_RATIONALE_CHARS)));
        }
        Ok(Value::Object(critique))
    }

    fn texts(&self, value: Option<&Value>, field: &'static str) -> Result<Vec<String>, AnswerError> {
        let items = match value {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::Array(items)) => items,
            Some(Value::String(text)) => return Ok(clean_items([text.as_str()], self.max_items)),
            Some(other) => return Err(AnswerError::NotAListOfStrings { field, found: other.clone() }),
        };
        let texts: Vec<&str> = items
            .iter()
            .filter_map(|item| match item {
                Value::String(text) => Some(text.as_str()),
                Value::Object(map) => map.get("text").or_else(|| map.get("issue")).and_then(Value::as_str),
                _ => None,
            })
            .collect();
        Ok(clean_items(texts, self.max_items))
    }

    fn suggestions(&self, value: Option<&Value>) -> Result<Vec<Value>, AnswerError> {
        let items = match value {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::Array(items)) => items,
            Some(other) => return Err(AnswerError::SuggestionsNotAList(other.clone())),
        };
        let mut out = Vec::new();
        for item in items.iter().take(self.max_items) {
            let (edit, dimension, target) = match item {
                Value::String(edit) => (Some(edit.as_str()), None, None),
                Value::Object(map) => (
                    map.get("edit").and_then(Value::as_str),
                    map.get("dimension").and_then(Value::as_str),
                    map.get("target").and_then(Value::as_str),
                ),
                _ => (None, None, None),
            };
            let Some(edit) = edit.map(str::trim).filter(|e| !e.is_empty()) else { continue };
            let mut suggestion = Map::new();
            suggestion.insert("edit".into(), json!(clip(edit, MAX_ITEM_CHARS)));
            if let Some(dimension) = dimension.map(str::trim).filter(|d| !d.is_empty()) {
                suggestion.insert("dimension".into(), json!(clip(dimension, 60)));
            }
            if let Some(target) = target.map(str::trim).filter(|t| !t.is_empty()) {
                suggestion.insert("target".into(), json!(clip(target, 120)));
            }
            out.push(Value::Object(suggestion));
        }
        Ok(out)
    }
}

fn clean_items<'a>(texts: impl IntoIterator<Item = &'a str>, max: usize) -> Vec<String> {
    texts.into_iter().map(str::trim).filter(|t| !t.is_empty()).take(max).map(|t| clip(t, MAX_ITEM_CHARS)).collect()
}

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

/// A number, or a string holding one ("7", "7/10" is not accepted: ambiguous scales are errors).
fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    }
    .filter(|n| n.is_finite())
}

fn boolean(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(*b),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "pass" | "passed" => Some(true),
            "false" | "no" | "fail" | "failed" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// The JSON object in a model's answer: the whole text, or inside a ```json fence, or from the
/// first `{` to the last `}` (small models wrap JSON in prose even when told not to).
fn extract_json(content: &str) -> Result<Map<String, Value>, AnswerError> {
    let trimmed = content.trim();
    if trimmed.is_empty() {
        return Err(AnswerError::Empty);
    }
    let mut candidates = vec![trimmed.to_string()];
    if let Some(start) = trimmed.find("```") {
        let after = &trimmed[start + 3..];
        let after = after.strip_prefix("json").unwrap_or(after);
        if let Some(end) = after.find("```") {
            candidates.push(after[..end].trim().to_string());
        }
    }
    if let (Some(start), Some(end)) = (trimmed.find('{'), trimmed.rfind('}'))
        && start < end
    {
        candidates.push(trimmed[start..=end].to_string());
    }
    let mut first_error = None;
    for candidate in candidates {
        match serde_json::from_str::<Value>(&candidate) {
            Ok(Value::Object(map)) => return Ok(map),
            Ok(other) => first_error.get_or_insert_with(|| AnswerError::NotAnObject(clip(&other.to_string(), 80))),
            Err(e) => first_error.get_or_insert(AnswerError::NotJson(e)),
        };
    }
    Err(first_error.unwrap_or(AnswerError::NoObject))
}

/// Why the config is refused.
#[derive(Debug, thiserror::Error)]
enum ConfigError {
    /// The config does not parse as the keys this critic takes.
    #[error("llm-judge config: {0}")]
    Json(#[source] serde_json::Error),
    /// `dimensions` names none.
    #[error("llm-judge config: `dimensions` is empty; name at least one")]
    NoDimensions,
    /// A dimension whose name is blank.
    #[error("llm-judge config: dimension name `{0}` is empty")]
    EmptyDimensionName(String),
    /// `scale` is not two finite numbers, low first.
    #[error("llm-judge config: `scale` = [{lo}, {hi}] must be two finite numbers, low < high")]
    Scale {
        /// The low end given.
        lo: f64,
        /// The high end given.
        hi: f64,
    },
    /// `attempts = 0`.
    #[error("llm-judge config: `attempts` must be at least 1")]
    NoAttempts,
    /// `max_items = 0`.
    #[error("llm-judge config: `max_items` must be at least 1")]
    NoItems,
}

/// Why the host's `chat` service gave no answer to read.
#[derive(Debug, thiserror::Error)]
enum ChatError {
    /// The service refused; its message.
    #[error(transparent)]
    Service(ServiceError),
    /// Its answer is not JSON.
    #[error("the host's chat answer is not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// Its answer has no `content` text.
    #[error("the host's chat answer has no `content`")]
    NoContent,
}

/// A judge answer the host says was cut at the judge role's `max_tokens` (`finish_reason`
/// `length`); `max_tokens` is the limit, when one was set (else the server's default applied).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Cut {
    max_tokens: Option<u64>,
}

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let limit = self.max_tokens.map_or_else(|| "unset: the server's default".to_string(), |n| n.to_string());
        write!(
            f,
            "the judge model's answer was cut at its token limit (finish_reason \"length\"; max_tokens = {limit}) \
             before it was a whole critique: raise the judge's max_tokens ([openai.judge] max_tokens, or [openai] \
             max_tokens for every role)"
        )
    }
}

/// Why a model's answer is not a usable critique (shown to the model when it is asked again).
#[derive(Debug, thiserror::Error)]
enum AnswerError {
    /// The answer was cut at `max_tokens` and is not a usable critique (`why`).
    #[error("{cut} ({why})")]
    Cut {
        /// The limit it was cut at.
        cut: Cut,
        /// What the cut answer lacks.
        why: Box<AnswerError>,
    },
    /// Nothing but whitespace.
    #[error("the answer is empty")]
    Empty,
    /// JSON, but not an object (its text, cut short).
    #[error("the answer is JSON but not an object: {0}")]
    NotAnObject(String),
    /// No candidate parses.
    #[error("the answer is not valid JSON ({0})")]
    NotJson(#[source] serde_json::Error),
    /// No candidate at all.
    #[error("the answer holds no JSON object")]
    NoObject,
    /// `dimensions` is there but not an object.
    #[error("`dimensions` must be an object of numbers")]
    DimensionsNotAnObject,
    /// A configured dimension is missing.
    #[error("dimension `{0}` is missing")]
    MissingDimension(String),
    /// A dimension's value is not a number.
    #[error("dimension `{dimension}` is not a number: {value}")]
    NotANumber {
        /// The dimension.
        dimension: String,
        /// Its value as given.
        value: Value,
    },
    /// A dimension's value is outside the configured scale.
    #[error("dimension `{dimension}` = {value} is outside the scale {lo} to {hi}")]
    OutsideTheScale {
        /// The dimension.
        dimension: String,
        /// Its value.
        value: f64,
        /// The scale's low end, as the prompt writes it.
        lo: String,
        /// The scale's high end, as the prompt writes it.
        hi: String,
    },
    /// A list field holds something else.
    #[error("`{field}` must be a list of strings, found {found}")]
    NotAListOfStrings {
        /// The field.
        field: &'static str,
        /// What it holds.
        found: Value,
    },
    /// `suggestions` is not a list.
    #[error("`suggestions` must be a list, found {0}")]
    SuggestionsNotAList(Value),
    /// Single-fix mode without its fix.
    #[error("`single_critical_fix` is missing or not a string")]
    NoSingleFix,
}

/// Why a critique could not be made.
#[derive(Debug, thiserror::Error)]
enum CritiqueError {
    /// The request does not parse.
    #[error("bad request: {0}")]
    BadRequest(#[source] serde_json::Error),
    /// Every answer the judge gave was unusable; the last one's reason.
    #[error("the judge's answer was not a valid critique after {attempts} attempt(s): {last}")]
    NoValidAnswer {
        /// Answers asked for.
        attempts: u32,
        /// Why the last one was not usable.
        #[source]
        last: AnswerError,
    },
}

impl CriticPlugin for LlmJudge {
    const NAME: &'static str = "llm-judge";
    const VERSION: &'static str = "1.0.0";
    const SCORE_MIN: f64 = RANGE.0;
    const SCORE_MAX: f64 = RANGE.1;
    const INFO: &'static str = r#"{
        "info_version": 1,
        "requires": ["chat"],
        "hints": {
            "requires": "llm-judge asks a judge model through the host's `chat` service: name one in the experiment's [openai] table, e.g. models = { judge = \"gpt-4o-mini\" }"
        }
    }"#;

    fn create(config: &str, host: Host) -> Result<Self, CriticError> {
        Ok(LlmJudge::from_config(config, host)?)
    }

    fn critique(&self, request: &str) -> Result<String, CriticError> {
        let request: Request = serde_json::from_str(request).map_err(CritiqueError::BadRequest)?;
        let mut messages = vec![
            json!({"role": "system", "content": self.system}),
            json!({"role": "user", "content": self.user_prompt(&request)}),
        ];
        let mut reason = None;
        for attempt in 1..=self.attempts {
            let (content, cut) = self.ask(&messages)?;
            match self.validate(&content) {
                Ok(critique) => return Ok(critique.to_string()),
                Err(why) => {
                    if attempt < self.attempts {
                        // Ask again, saying what was wrong: a new question, so never a cached
                        // copy of the bad answer.
                        let told = match cut {
                            Some(_) => format!(
                                "That answer was cut off at the length limit before it was complete ({why}). Answer \
                                 again with only the JSON object, shorter, exactly in the shape asked for."
                            ),
                            None => format!(
                                "That answer is not usable: {why}. Answer again with only the JSON object, exactly in \
                                 the shape asked for."
                            ),
                        };
                        messages.push(json!({"role": "assistant", "content": clip(&content, 1500)}));
                        messages.push(json!({"role": "user", "content": told}));
                    }
                    // A cut answer fails for being cut: the fix is a larger max_tokens.
                    reason = Some(match cut {
                        Some(cut) => AnswerError::Cut { cut, why: Box::new(why) },
                        None => why,
                    });
                }
            }
        }
        let last = reason.expect("attempts is at least 1, and each failed");
        Err(CritiqueError::NoValidAnswer { attempts: self.attempts, last }.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_requires_the_chat_service() {
        let info = critbench_abi::PluginInfo::parse(LlmJudge::INFO).unwrap();
        assert_eq!(info.requires, ["chat"]);
        assert!(info.hint("requires").unwrap().contains("models = { judge"));
    }

    fn judge(config: &str) -> LlmJudge {
        LlmJudge::from_config(config, Host::none()).unwrap()
    }

    #[test]
    fn config_is_checked() {
        let error = |config: &str| LlmJudge::from_config(config, Host::none()).err().unwrap().to_string();
        assert!(error(r#"{"dimension": ["a"]}"#).contains("unknown field `dimension`"));
        assert!(error(r#"{"dimensions": []}"#).contains("`dimensions` is empty"));
        assert!(error(r#"{"scale": [10, 1]}"#).contains("`scale`"));
        assert!(error(r#"{"attempts": 0}"#).contains("`attempts`"));
        assert!(error(r#"{"mode": "vibes"}"#).contains("unknown variant"));
        let custom = judge(r#"{"dimensions": {"tone": "polite"}, "scale": [0, 100], "rubric": "Be strict."}"#);
        assert!(custom.system.contains("- tone: polite") && custom.system.contains("from 0 to 100"));
        assert!(custom.system.contains("Be strict.") && custom.system.contains("start at 100"));
    }

    #[test]
    fn answers_become_critiques_without_a_score() {
        let judge = judge(r#"{"scale": [0, 100]}"#);
        let critique = judge
            .validate(
                "Sure! ```json\n{\"dimensions\": {\"accuracy\": 90, \"completeness\": \"50\", \"clarity\": 100}, \
                 \"score\": 99, \"issues\": [\"too short\", \"\", {\"text\": \"no example\"}], \"fatal_issues\": null, \
                 \"suggestions\": [{\"dimension\": \"completeness\", \"edit\": \"add an example\"}, \"cut the intro\"], \
                 \"passed\": \"yes\"}\n```",
            )
            .unwrap();
        assert_eq!(critique["dimensions"], json!({"accuracy": 9.0, "completeness": 5.0, "clarity": 10.0}));
        assert!(critique.get("score").is_none(), "the model's total is dropped: the host computes the score");
        assert_eq!(critique["issues"], json!(["too short", "no example"]));
        assert_eq!(critique["fatal_issues"], json!([]));
        assert_eq!(critique["suggestions"][1], json!({"edit": "cut the intro"}));
        assert_eq!(critique["passed"], true);
    }

    #[test]
    fn malformed_answers_say_why() {
        let judge = judge("{}");
        let why = |content: &str| judge.validate(content).unwrap_err().to_string();
        assert!(why("").contains("empty"));
        assert!(why("../../../../").contains("not valid JSON"));
        assert!(why("[1, 2]").contains("not an object"));
        assert!(why(r#"{"dimensions": {"accuracy": 5, "completeness": 5}}"#).contains("`clarity` is missing"));
        assert!(
            why(r#"{"dimensions": {"accuracy": 11, "completeness": 5, "clarity": 5}}"#)
                .contains("outside the scale 0 to 10")
        );
        assert!(
            why(r#"{"dimensions": {"accuracy": "high", "completeness": 5, "clarity": 5}}"#).contains("not a number")
        );
        // Dimensions at the top level are accepted.
        assert!(judge.validate(r#"{"accuracy": 5, "completeness": 5, "clarity": 5}"#).is_ok());
    }

    #[test]
    fn single_fix_mode_turns_the_fix_into_an_issue_and_a_suggestion() {
        let judge = judge(r#"{"mode": "single_fix", "dimensions": ["accuracy"], "ask_passed": false}"#);
        assert!(judge.system.contains("single_critical_fix") && !judge.system.contains("passed"));
        let critique = judge
            .validate(r#"{"dimensions": {"accuracy": 4}, "single_critical_fix": "Cite a source.", "passed": true}"#)
            .unwrap();
        assert_eq!(critique["issues"], json!(["Cite a source."]));
        assert_eq!(critique["suggestions"], json!([{"edit": "Cite a source."}]));
        assert!(critique.get("passed").is_none(), "not asked, not recorded");
        assert!(
            judge
                .validate(r#"{"dimensions": {"accuracy": 4}}"#)
                .unwrap_err()
                .to_string()
                .contains("single_critical_fix")
        );
    }

    #[test]
    fn the_schema_caps_lengths_and_names_every_dimension() {
        let judge = judge(r#"{"response_format": "json_schema", "max_items": 2}"#);
        let format = judge.response_format();
        assert_eq!(format["type"], "json_schema");
        let schema = &format["json_schema"]["schema"];
        assert_eq!(schema["properties"]["issues"]["maxItems"], 2);
        assert_eq!(schema["properties"]["issues"]["items"]["maxLength"], MAX_ITEM_CHARS);
        assert_eq!(schema["properties"]["dimensions"]["required"], json!(["accuracy", "completeness", "clarity"]));
        judge.schema_rejected.store(true, Ordering::Relaxed);
        assert_eq!(judge.response_format(), json!({"type": "json_object"}));
    }

    /// A host whose `chat` service answers every request with the text `context` points to
    /// (a `&'static str`), `HTTP 500` when it starts so.
    unsafe extern "C" fn chat(
        context: *mut std::ffi::c_void,
        _service: critbench_abi::Str,
        _request: critbench_abi::Str,
        out: *mut critbench_abi::Buffer,
    ) -> i32 {
        // SAFETY: `context` is the `&'static str` the test put in the table.
        let answer: &str = unsafe { *(context as *const &'static str) };
        // SAFETY: `out` is the plugin's valid out-pointer.
        unsafe { *out = critbench_abi::Buffer::from_vec(answer.as_bytes().to_vec()) };
        if answer.starts_with("HTTP 500") { critbench_abi::STATUS_ERROR } else { critbench_abi::STATUS_OK }
    }

    /// What the host records, through the same glue a plugin library exports: the create
    /// error, or the critique's error, with `answer` as every chat answer.
    fn recorded(config: &str, answer: &'static &'static str) -> String {
        let host = critbench_abi::HostTable {
            abi_version: critbench_abi::ABI_VERSION,
            size: std::mem::size_of::<critbench_abi::HostTable>() as u32,
            context: answer as *const &str as *mut std::ffi::c_void,
            call: chat,
            free_buffer: critbench_abi::glue::free_buffer,
        };
        let (mut instance, mut out) = (std::ptr::null_mut(), critbench_abi::Buffer::EMPTY);
        let request = r#"{"request_version": 1, "task": {"id": "t", "prompt": "p"}, "draft": "d", "round": 0}"#;
        // SAFETY: valid strings and out-pointers for each call; the instance is destroyed once.
        unsafe {
            let glue = critbench_abi::glue::create::<LlmJudge, false>;
            let status = glue(critbench_abi::Str::new(config), &host, &mut instance, &mut out);
            if status == critbench_abi::STATUS_OK {
                let status =
                    critbench_abi::glue::critique::<LlmJudge>(instance, critbench_abi::Str::new(request), &mut out);
                assert_eq!(status, critbench_abi::STATUS_ERROR);
                critbench_abi::glue::destroy::<LlmJudge>(instance);
            }
            let text = String::from_utf8(out.to_vec()).unwrap();
            out.free();
            text
        }
    }

    #[test]
    fn refusals_are_recorded_word_for_word() {
        let fine = &"{}";
        let not_json = serde_json::from_str::<Value>("{").unwrap_err();
        assert_eq!(recorded("{", fine), format!("llm-judge config: {not_json}"));
        assert_eq!(
            recorded(r#"{"dimensions": []}"#, fine),
            "llm-judge config: `dimensions` is empty; name at least one"
        );
        assert_eq!(recorded(r#"{"dimensions": [" "]}"#, fine), "llm-judge config: dimension name ` ` is empty");
        assert_eq!(
            recorded(r#"{"scale": [10, 1.5]}"#, fine),
            "llm-judge config: `scale` = [10, 1.5] must be two finite numbers, low < high"
        );
        assert_eq!(recorded(r#"{"attempts": 0}"#, fine), "llm-judge config: `attempts` must be at least 1");
        assert_eq!(recorded(r#"{"max_items": 0}"#, fine), "llm-judge config: `max_items` must be at least 1");
        assert_eq!(recorded("{}", &"HTTP 500 from the server"), "HTTP 500 from the server");
        let not_json = serde_json::from_str::<Value>("nope").unwrap_err();
        assert_eq!(recorded("{}", &"nope"), format!("the host's chat answer is not JSON: {not_json}"));
        assert_eq!(recorded("{}", &"{}"), "the host's chat answer has no `content`");
        let after = |attempts: u32, why: &str| {
            format!("the judge's answer was not a valid critique after {attempts} attempt(s): {why}")
        };
        assert_eq!(recorded(r#"{"attempts": 2}"#, &r#"{"content": " "}"#), after(2, "the answer is empty"));
        let bad = serde_json::from_str::<Value>("{no").unwrap_err();
        assert_eq!(
            recorded("{}", &r#"{"content": "{no"}"#),
            after(3, &format!("the answer is not valid JSON ({bad})"))
        );
        assert_eq!(recorded("{}", &r#"{"content": "[1]"}"#), after(3, "the answer is JSON but not an object: [1]"));
        let content = |answer: &str| -> &'static &'static str {
            let chat = json!({"content": answer}).to_string();
            Box::leak(Box::new(&*Box::leak(chat.into_boxed_str())))
        };
        let cases = [
            (r#"{"dimensions": 3}"#, "`dimensions` must be an object of numbers"),
            (r#"{"dimensions": {"accuracy": 5}}"#, "dimension `completeness` is missing"),
            (r#"{"accuracy": [1], "completeness": 5, "clarity": 5}"#, "dimension `accuracy` is not a number: [1]"),
            (
                r#"{"accuracy": 10.5, "completeness": 5, "clarity": 5}"#,
                "dimension `accuracy` = 10.5 is outside the scale 0 to 10",
            ),
            (
                r#"{"accuracy": 5, "completeness": 5, "clarity": 5, "issues": 3}"#,
                "`issues` must be a list of strings, found 3",
            ),
            (
                r#"{"accuracy": 5, "completeness": 5, "clarity": 5, "suggestions": {"a": 1}}"#,
                "`suggestions` must be a list, found {\"a\":1}",
            ),
        ];
        for (answer, why) in cases {
            assert_eq!(recorded("{}", content(answer)), after(3, why), "{answer}");
        }
        // An answer cut at max_tokens says so, and what to raise.
        let bad = serde_json::from_str::<Value>("{\"accuracy\": 7, \"compl").unwrap_err();
        assert_eq!(
            recorded(
                r#"{"attempts": 1}"#,
                &r#"{"content": "{\"accuracy\": 7, \"compl", "truncated": true, "max_tokens": 12}"#
            ),
            after(
                1,
                &format!(
                    "the judge model's answer was cut at its token limit (finish_reason \"length\"; max_tokens = 12) \
                     before it was a whole critique: raise the judge's max_tokens ([openai.judge] max_tokens, or \
                     [openai] max_tokens for every role) (the answer is not valid JSON ({bad}))"
                )
            )
        );
        let single = r#"{"mode": "single_fix", "attempts": 1}"#;
        assert_eq!(
            recorded(single, content(r#"{"accuracy": 5, "completeness": 5, "clarity": 5}"#)),
            after(1, "`single_critical_fix` is missing or not a string")
        );
        let bad_request = serde_json::from_str::<Request>("{}").unwrap_err();
        let judge = judge("{}");
        let error = judge.critique("{}").unwrap_err();
        assert_eq!((error.to_string(), error.source().is_some()), (format!("bad request: {bad_request}"), true));
    }

    #[test]
    fn without_the_chat_service_the_critique_is_an_error() {
        let judge = judge("{}");
        let request = r#"{"request_version": 1, "task": {"id": "t", "prompt": "p"}, "draft": "d", "round": 0}"#;
        assert!(judge.critique(request).unwrap_err().to_string().contains("no services"));
    }
}
