//! The experiment file's `[openai]` table as written, and its validation into
//! [`ClientSettings`]. Unknown keys are errors; every message names the key it is about. The
//! caller (the experiment file's reader) adds the file's name.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::Deserialize;

use crate::settings::ServerKind;
use crate::settings::{CacheMode, ClientSettings, EndpointSettings, Failover, Role, RoleSettings, display_url};

/// Defaults of the `[openai]` table.
pub const DEFAULT_CONCURRENCY: u32 = 4;
/// The most requests one endpoint may have in flight: each costs an open connection (a file
/// descriptor), and a run raises its open-file limit to match (`docs/REFERENCE.md`, `[openai]`).
pub const MAX_CONCURRENCY: u32 = 4096;
/// `timeout_s` when the table leaves it out.
pub const DEFAULT_TIMEOUT_S: f64 = 120.0;
/// `max_retries` when the table leaves it out.
pub const DEFAULT_MAX_RETRIES: u32 = 4;
/// `retry_base_ms` when the table leaves it out.
pub const DEFAULT_RETRY_BASE_MS: u64 = 500;

/// The `[openai]` table: one or several OpenAI-compatible endpoints and the model of each role.
/// `models = { role = "name" }` is shorthand for `[openai.role] model = "name"`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenAiTable {
    /// A URL, or a list of URLs of replicas that share the load.
    #[serde(default)]
    base_url: Option<Urls>,
    /// Endpoints with their own key and concurrency (instead of `base_url`).
    #[serde(default)]
    endpoints: Vec<EndpointTable>,
    #[serde(default)]
    api_key_env: Option<String>,
    /// Per endpoint.
    #[serde(default)]
    concurrency: Option<u32>,
    #[serde(default)]
    models: BTreeMap<String, String>,
    #[serde(default)]
    timeout_s: Option<f64>,
    #[serde(default)]
    max_retries: Option<u32>,
    #[serde(default)]
    retry_base_ms: Option<u64>,
    #[serde(default)]
    max_tokens_total: Option<u64>,
    /// Every role's `max_tokens` unless the role sets its own.
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    cache: Option<String>,
    /// `auto` (detected at start), `openai`, `vllm`, `llamacpp` or `ollama`: every endpoint's
    /// unless it names its own.
    #[serde(default)]
    server: Option<String>,
    #[serde(default)]
    generator: Option<RoleTable>,
    #[serde(default)]
    reviser: Option<RoleTable>,
    #[serde(default)]
    judge: Option<RoleTable>,
    #[serde(default)]
    adjudicator: Option<RoleTable>,
}

/// One `[[openai.endpoints]]` table.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EndpointTable {
    base_url: String,
    /// The table's `api_key_env` unless given.
    #[serde(default)]
    api_key_env: Option<String>,
    /// The table's `concurrency` unless given.
    #[serde(default)]
    concurrency: Option<u32>,
    /// The table's `server` unless given.
    #[serde(default)]
    server: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RoleTable {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    temperature: Option<f64>,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    seed: Option<u64>,
}

/// `base_url`: one URL or a list.
#[derive(Clone, Debug)]
enum Urls {
    One(String),
    Many(Vec<String>),
}

impl<'de> Deserialize<'de> for Urls {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Urls, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Urls;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a URL or a list of URLs")
            }
            fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Urls, E> {
                Ok(Urls::One(value.to_string()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Urls, A::Error> {
                let mut urls = Vec::new();
                while let Some(url) = seq.next_element::<String>()? {
                    urls.push(url);
                }
                Ok(Urls::Many(urls))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// What the rest of the experiment asks of the models.
#[derive(Clone, Debug)]
pub struct Requirements {
    /// The writer is a model (`backend = "openai"`): a generator model is required.
    pub generator: bool,
    /// The experiment's seed: every role's unless it sets its own.
    pub seed: u64,
    /// Where answers are cached (`--no-cache`: in memory).
    pub cache: CacheMode,
}

/// A mistake in the `[openai]` table. The text names the key and never contains a key, a URL's
/// credentials or its query.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SettingsError {
    #[error("[openai] needs `base_url` (a URL, or a list of URLs of replicas) or [[openai.endpoints]] tables")]
    /// Neither `base_url` nor endpoint tables.
    NoEndpoint,
    #[error("[openai] give either `base_url` or [[openai.endpoints]] tables, not both")]
    /// Both `base_url` and endpoint tables.
    BaseUrlAndEndpoints,
    #[error("[openai] base_url is an empty list; give at least one URL")]
    /// `base_url = []`.
    EmptyList,
    #[error("[openai] {key} = \"{url}\" must start with http:// or https://")]
    /// A URL that is not http(s).
    NotHttp {
        /// The key that gives it.
        key: String,
        /// The URL, without credentials or query.
        url: String,
    },
    #[error(
        "[openai] {key} must not carry credentials (user:password@); put the key in the environment variable \
         api_key_env names"
    )]
    /// A URL with `user:password@`.
    Credentials {
        /// The key that gives it.
        key: String,
    },
    #[error("[openai] {key} = \"{url}\" is listed twice")]
    /// An endpoint listed twice.
    Duplicate {
        /// The key that gives it.
        key: String,
        /// The URL, without credentials or query.
        url: String,
    },
    #[error(
        "[openai] {key} must be the *name* of an environment variable (letters, digits and `_`, like \
         OPENAI_API_KEY), not the key itself; the key never goes in a file"
    )]
    /// An `api_key_env` that looks like a key, not a variable's name.
    KeyNotAName {
        /// The key.
        key: String,
    },
    #[error("[openai] {key} = {value} must be from 1 to {MAX_CONCURRENCY}")]
    /// A concurrency outside 1 to [`MAX_CONCURRENCY`].
    Concurrency {
        /// The key.
        key: String,
        /// Its value.
        value: u32,
    },
    #[error("[openai] timeout_s = {0} must be a positive number of seconds")]
    /// A `timeout_s` that is not positive.
    Timeout(f64),
    #[error("[openai] max_retries = {0} is more than 100")]
    /// A `max_retries` over 100.
    TooManyRetries(u32),
    #[error("[openai] max_tokens and max_tokens_total must be at least 1 (leave them out for no limit)")]
    /// A token limit of 0.
    ZeroTokens,
    #[error("[openai] models: unknown role `{0}`; the roles are generator, reviser, judge, adjudicator")]
    /// A role `models` names that critbench does not have.
    UnknownRole(String),
    #[error(
        "[openai] the {role} model is given twice, as \"{in_models}\" in `models` and \"{in_table}\" in [openai.{role}]"
    )]
    /// A role's model given both in `models` and in its own table.
    ModelTwice {
        /// The role.
        role: Role,
        /// The model `models` gives.
        in_models: String,
        /// The model its table gives.
        in_table: String,
    },
    #[error("[openai.{0}] has settings but no `model`")]
    /// A role table without `model`.
    SettingsWithoutModel(Role),
    #[error("[openai] the {0} model name is empty")]
    /// An empty model name.
    EmptyModel(Role),
    #[error("[openai.{role}] temperature = {value} must be from 0 to 2")]
    /// A temperature outside 0 to 2.
    Temperature {
        /// The role.
        role: Role,
        /// Its temperature.
        value: f64,
    },
    #[error("[openai.{0}] max_tokens must be at least 1")]
    /// A role's `max_tokens` of 0.
    RoleZeroTokens(Role),
    #[error("backend = \"openai\" needs a generator model: [openai] models = {{ generator = \"...\" }}")]
    /// `backend = "openai"` without a generator model.
    NoGenerator,
    #[error(
        "[openai] {key} = \"{value}\" is not a server critbench knows; use \"auto\" (ask the server at start), \
         \"openai\", \"vllm\", \"llamacpp\" or \"ollama\""
    )]
    /// A `server` critbench does not know.
    Server {
        /// The key.
        key: String,
        /// Its value.
        value: String,
    },
}

impl OpenAiTable {
    /// `cache`, as written (relative to the experiment file).
    pub fn cache(&self) -> Option<&str> {
        self.cache.as_deref()
    }

    /// Validates the table into a client's settings: the endpoints, every role's model and
    /// sampling, the limits.
    pub fn resolve(self, needs: Requirements) -> Result<ClientSettings, SettingsError> {
        let concurrency = self.concurrency.unwrap_or(DEFAULT_CONCURRENCY);
        check_concurrency("concurrency", concurrency)?;
        let server = server_of("server", self.server.as_deref())?;
        if let Some(name) = &self.api_key_env {
            check_key_name("api_key_env", name)?;
        }
        let endpoints = self.endpoints(concurrency, server)?;
        let timeout_s = self.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S);
        if !(timeout_s.is_finite() && timeout_s > 0.0 && timeout_s <= 86_400.0) {
            return Err(SettingsError::Timeout(timeout_s));
        }
        let max_retries = self.max_retries.unwrap_or(DEFAULT_MAX_RETRIES);
        if max_retries > 100 {
            return Err(SettingsError::TooManyRetries(max_retries));
        }
        if self.max_tokens_total == Some(0) || self.max_tokens == Some(0) {
            return Err(SettingsError::ZeroTokens);
        }
        let roles = self.roles(needs.seed)?;
        if needs.generator && !roles.contains_key(&Role::Generator) {
            return Err(SettingsError::NoGenerator);
        }
        Ok(ClientSettings {
            endpoints,
            roles,
            timeout: Duration::from_secs_f64(timeout_s),
            max_retries,
            retry_base: Duration::from_millis(self.retry_base_ms.unwrap_or(DEFAULT_RETRY_BASE_MS)),
            max_tokens_total: self.max_tokens_total,
            cache: needs.cache,
            failover: Failover::default(),
            currency: None,
            track_tasks: false,
        })
    }

    fn endpoints(&self, concurrency: u32, server: Option<ServerKind>) -> Result<Vec<EndpointSettings>, SettingsError> {
        let mut endpoints = Vec::new();
        match (&self.base_url, self.endpoints.is_empty()) {
            (Some(_), false) => return Err(SettingsError::BaseUrlAndEndpoints),
            (None, true) => return Err(SettingsError::NoEndpoint),
            (Some(Urls::Many(urls)), true) if urls.is_empty() => return Err(SettingsError::EmptyList),
            (Some(Urls::One(url)), true) => {
                endpoints.push(endpoint("base_url", url, self.api_key_env.clone(), concurrency, server)?);
            }
            (Some(Urls::Many(urls)), true) => {
                for (i, url) in urls.iter().enumerate() {
                    let key = format!("base_url[{i}]");
                    endpoints.push(endpoint(&key, url, self.api_key_env.clone(), concurrency, server)?);
                }
            }
            (None, false) => {
                for (i, table) in self.endpoints.iter().enumerate() {
                    let at = format!("endpoints[{i}]");
                    if let Some(name) = &table.api_key_env {
                        check_key_name(&format!("{at}.api_key_env"), name)?;
                    }
                    let own = table.concurrency.unwrap_or(concurrency);
                    check_concurrency(&format!("{at}.concurrency"), own)?;
                    let key = table.api_key_env.clone().or_else(|| self.api_key_env.clone());
                    let own_server = match &table.server {
                        Some(name) => server_of(&format!("{at}.server"), Some(name))?,
                        None => server,
                    };
                    endpoints.push(endpoint(&format!("{at}.base_url"), &table.base_url, key, own, own_server)?);
                }
            }
        }
        for (i, endpoint) in endpoints.iter().enumerate() {
            let url = endpoint.display_url();
            if endpoints[..i].iter().any(|e| e.display_url() == url) {
                let key = match (&self.base_url, i) {
                    (Some(_), i) => format!("base_url[{i}]"),
                    (None, i) => format!("endpoints[{i}].base_url"),
                };
                return Err(SettingsError::Duplicate { key, url: display_url(&endpoint.base_url) });
            }
        }
        Ok(endpoints)
    }

    fn roles(&self, seed: u64) -> Result<BTreeMap<Role, RoleSettings>, SettingsError> {
        for name in self.models.keys() {
            if Role::parse(name).is_none() {
                return Err(SettingsError::UnknownRole(name.clone()));
            }
        }
        let tables = [
            (Role::Generator, &self.generator),
            (Role::Reviser, &self.reviser),
            (Role::Judge, &self.judge),
            (Role::Adjudicator, &self.adjudicator),
        ];
        let mut roles = BTreeMap::new();
        for (role, table) in tables {
            let table = table.clone().unwrap_or_default();
            let model = match (table.model, self.models.get(role.as_str())) {
                (Some(a), Some(b)) if a != *b => {
                    return Err(SettingsError::ModelTwice { role, in_models: b.clone(), in_table: a });
                }
                (Some(model), _) => Some(model),
                (None, model) => model.cloned(),
            };
            let model = match model {
                Some(model) => model,
                // The reviser is the generator unless told otherwise.
                None if role == Role::Reviser => match roles.get(&Role::Generator) {
                    Some(RoleSettings { model, .. }) => model.clone(),
                    None => continue,
                },
                None => {
                    if table.temperature.is_some() || table.max_tokens.is_some() || table.seed.is_some() {
                        return Err(SettingsError::SettingsWithoutModel(role));
                    }
                    continue;
                }
            };
            if model.trim().is_empty() {
                return Err(SettingsError::EmptyModel(role));
            }
            let temperature = table.temperature.unwrap_or(role.default_temperature());
            if !(temperature.is_finite() && (0.0..=2.0).contains(&temperature)) {
                return Err(SettingsError::Temperature { role, value: temperature });
            }
            if table.max_tokens == Some(0) {
                return Err(SettingsError::RoleZeroTokens(role));
            }
            let max_tokens = table.max_tokens.or(self.max_tokens);
            roles.insert(role, RoleSettings::new(model, temperature, max_tokens, table.seed.unwrap_or(seed)));
        }
        Ok(roles)
    }
}

/// `server`: `None` (or `auto`) to detect it at start.
fn server_of(key: &str, value: Option<&str>) -> Result<Option<ServerKind>, SettingsError> {
    match value {
        None | Some("auto") => Ok(None),
        Some(name) => ServerKind::parse(name)
            .map(Some)
            .ok_or_else(|| SettingsError::Server { key: key.to_string(), value: name.to_string() }),
    }
}

fn endpoint(
    key: &str,
    url: &str,
    api_key_env: Option<String>,
    concurrency: u32,
    server: Option<ServerKind>,
) -> Result<EndpointSettings, SettingsError> {
    let url = url.trim().to_string();
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(SettingsError::NotHttp { key: key.to_string(), url: display_url(&url) });
    }
    let authority = url.split_once("://").map_or("", |(_, rest)| rest.split('/').next().unwrap_or(""));
    if authority.contains('@') {
        // It would sit in a file that is shared and committed: credentials belong in the environment.
        return Err(SettingsError::Credentials { key: key.to_string() });
    }
    Ok(EndpointSettings { base_url: url, api_key_env, concurrency, server })
}

fn check_concurrency(key: &str, value: u32) -> Result<(), SettingsError> {
    if (1..=MAX_CONCURRENCY).contains(&value) {
        Ok(())
    } else {
        Err(SettingsError::Concurrency { key: key.to_string(), value })
    }
}

fn check_key_name(key: &str, name: &str) -> Result<(), SettingsError> {
    // Never echo the value: it may be a key pasted in the wrong place.
    let valid = !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if valid { Ok(()) } else { Err(SettingsError::KeyNotAName { key: key.to_string() }) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs() -> Requirements {
        Requirements { generator: true, seed: 7, cache: CacheMode::Memory }
    }

    fn table(json: serde_json::Value) -> OpenAiTable {
        serde_json::from_value(json).unwrap()
    }

    fn resolve(json: serde_json::Value) -> Result<ClientSettings, SettingsError> {
        table(json).resolve(needs())
    }

    #[test]
    fn one_url_a_list_or_endpoint_tables() {
        let models = serde_json::json!({"generator": "g"});
        let one = resolve(serde_json::json!({"base_url": " http://a/v1 ", "models": models})).unwrap();
        assert_eq!(one.endpoints, [EndpointSettings::new("http://a/v1", DEFAULT_CONCURRENCY)]);
        assert_eq!(one.roles[&Role::Generator].seed, 7);
        assert_eq!(one.concurrency(), DEFAULT_CONCURRENCY);

        let list = resolve(serde_json::json!({
            "base_url": ["http://a/v1", "http://b/v1"], "api_key_env": "K", "concurrency": 2, "models": models,
        }))
        .unwrap();
        let urls: Vec<&str> = list.endpoints.iter().map(|e| e.base_url.as_str()).collect();
        assert_eq!(urls, ["http://a/v1", "http://b/v1"]);
        assert!(list.endpoints.iter().all(|e| e.concurrency == 2 && e.api_key_env.as_deref() == Some("K")));
        assert_eq!(list.concurrency(), 4, "concurrency is per endpoint");

        let tables = resolve(serde_json::json!({
            "endpoints": [
                {"base_url": "http://a/v1", "concurrency": 8, "server": "llama.cpp"},
                {"base_url": "https://b/v1", "api_key_env": "B_KEY"},
            ],
            "api_key_env": "K", "concurrency": 3, "models": models,
        }))
        .unwrap();
        assert_eq!(
            tables.endpoints,
            [
                EndpointSettings {
                    base_url: "http://a/v1".into(),
                    api_key_env: Some("K".into()),
                    concurrency: 8,
                    server: Some(ServerKind::Llamacpp),
                },
                EndpointSettings {
                    base_url: "https://b/v1".into(),
                    api_key_env: Some("B_KEY".into()),
                    concurrency: 3,
                    server: None,
                },
            ]
        );
    }

    #[test]
    fn endpoint_mistakes_name_the_key_and_never_echo_credentials() {
        let models = serde_json::json!({"generator": "g"});
        let error = |json: serde_json::Value| {
            let mut json = json;
            json["models"] = models.clone();
            resolve(json).unwrap_err().to_string()
        };
        assert_eq!(error(serde_json::json!({})), SettingsError::NoEndpoint.to_string());
        assert!(error(serde_json::json!({"base_url": []})).contains("base_url is an empty list"));
        assert!(
            error(serde_json::json!({"base_url": "http://a", "endpoints": [{"base_url": "http://b"}]}))
                .contains("either `base_url` or [[openai.endpoints]]")
        );
        let e = error(serde_json::json!({"base_url": ["http://a/v1", "ftp://me:secret@b/v1?key=hidden"]}));
        assert_eq!(e, "[openai] base_url[1] = \"ftp://b/v1\" must start with http:// or https://");
        let e = error(serde_json::json!({"base_url": ["http://a/v1", "http://me:secret@b/v1"]}));
        assert!(e.starts_with("[openai] base_url[1] must not carry credentials") && !e.contains("secret"), "{e}");
        let e = error(serde_json::json!({"base_url": ["http://a/v1", "http://a/v1/"]}));
        assert_eq!(e, "[openai] base_url[1] = \"http://a/v1/\" is listed twice");
        let e = error(serde_json::json!({"endpoints": [{"base_url": "http://a", "concurrency": 0}]}));
        assert_eq!(e, "[openai] endpoints[0].concurrency = 0 must be from 1 to 4096");
        let e = error(
            serde_json::json!({"endpoints": [{"base_url": "http://a"}, {"base_url": "http://b", "api_key_env": "sk-123"}]}),
        );
        assert!(e.starts_with("[openai] endpoints[1].api_key_env must be the *name*") && !e.contains("sk-123"), "{e}");
        let e = serde_json::from_value::<OpenAiTable>(
            serde_json::json!({"endpoints": [{"base_url": "http://a", "key": "x"}]}),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("unknown field `key`"), "{e}");
        let e = serde_json::from_value::<OpenAiTable>(serde_json::json!({"base_url": 3})).unwrap_err().to_string();
        assert!(e.contains("a URL or a list of URLs"), "{e}");
    }

    #[test]
    fn role_mistakes_are_typed() {
        let base = serde_json::json!({"base_url": "http://a/v1", "models": {"generator": "g"}});
        let with = |key: &str, value: serde_json::Value| {
            let mut json = base.clone();
            json[key] = value;
            resolve(json).unwrap_err()
        };
        assert_eq!(
            with("judge", serde_json::json!({"temperature": 3.0})),
            SettingsError::SettingsWithoutModel(Role::Judge)
        );
        assert_eq!(
            with("generator", serde_json::json!({"model": "h"})),
            SettingsError::ModelTwice { role: Role::Generator, in_models: "g".into(), in_table: "h".into() }
        );
        assert_eq!(with("max_retries", serde_json::json!(101)), SettingsError::TooManyRetries(101));
        assert_eq!(
            with("server", serde_json::json!("tgi")),
            SettingsError::Server { key: "server".into(), value: "tgi".into() }
        );
        let vllm =
            resolve(serde_json::json!({"base_url": "http://a/v1", "server": "vllm", "models": {"generator": "g"}}));
        assert_eq!(vllm.unwrap().endpoints[0].server, Some(ServerKind::Vllm));
        let no_generator = serde_json::json!({"base_url": "http://a/v1"});
        assert_eq!(resolve(no_generator.clone()).unwrap_err(), SettingsError::NoGenerator);
        let settings = table(no_generator).resolve(Requirements { generator: false, ..needs() }).unwrap();
        assert!(settings.roles.is_empty());
    }
}
