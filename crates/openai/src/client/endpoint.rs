//! One server requests may go to: its URL, key and connection pool, made at start, and the
//! software it runs, detected when not configured.

use std::time::Duration;

use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};

use super::ClientError;
use crate::chat::REDACTED;
use crate::server::{PROBE_TIMEOUT, Probe, Server};
use crate::settings::{EndpointSettings, ServerKind};

/// One server requests may go to.
pub(super) struct Endpoint {
    /// Where requests are sent, credentials and query included; parsed once, not per request.
    pub(super) url: reqwest::Url,
    /// Ollama's own chat endpoint, for requests in its form.
    pub(super) native_url: reqwest::Url,
    /// The same without credentials or query: what every message and the manifest show.
    pub(super) display: String,
    /// The `Authorization` header (marked sensitive), when a key is configured.
    pub(super) headers: HeaderMap,
    pub(super) http: reqwest::Client,
    /// The server software, configured or detected at start: the form structured output takes.
    pub(super) server: Server,
}

/// Asks every endpoint whose server is not configured what it runs, all at once.
pub(super) fn detect_servers(
    runtime: &tokio::runtime::Runtime,
    settings: &[EndpointSettings],
    endpoints: &mut [Endpoint],
    secrets: &[String],
) {
    let handles: Vec<Option<tokio::task::JoinHandle<Server>>> = settings
        .iter()
        .zip(endpoints.iter())
        .map(|(settings, endpoint)| {
            if settings.server.is_some() {
                return None;
            }
            let (settings, http, headers) = (settings.clone(), endpoint.http.clone(), endpoint.headers.clone());
            Some(runtime.spawn(async move {
                let get = |url: String| {
                    let (http, headers) = (http.clone(), headers.clone());
                    async move {
                        let response = http.get(&url).headers(headers).timeout(PROBE_TIMEOUT).send().await.ok()?;
                        let status = response.status().as_u16();
                        let headers = response.headers().clone();
                        let bytes = response.bytes().await.ok()?;
                        Some(Probe { status, headers, json: serde_json::from_slice(&bytes).ok() })
                    }
                };
                crate::server::detect(&settings, get).await
            }))
        })
        .collect();
    for (endpoint, handle) in endpoints.iter_mut().zip(handles) {
        if let Some(handle) = handle {
            let mut server = runtime.block_on(handle).unwrap_or_else(|_| Server::configured(ServerKind::Openai));
            // A server that lists a configured secret as a model name is quoting it back.
            for model in &mut server.models {
                for secret in secrets {
                    if model.contains(secret.as_str()) {
                        *model = model.replace(secret.as_str(), REDACTED);
                    }
                }
            }
            endpoint.server = server;
        }
    }
}

/// The HTTP side of one endpoint: its URL, its key's header, a connection pool. Also returns
/// the key, to scrub it from messages.
pub(super) fn open_endpoint(
    settings: &EndpointSettings,
    timeout: Duration,
) -> Result<(Endpoint, Option<String>), ClientError> {
    let url = settings.base_url.trim();
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(ClientError::BadUrl(settings.display_url()));
    }
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let mut secret = None;
    if let Some(name) = &settings.api_key_env {
        let key = std::env::var(name).ok().filter(|k| !k.trim().is_empty());
        let key = key.ok_or_else(|| ClientError::MissingKey(name.clone()))?;
        let mut value = HeaderValue::from_str(&format!("Bearer {}", key.trim()))
            .map_err(|_| ClientError::Http(format!("the value of `{name}` is not a valid header value")))?;
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
        secret = Some(key.trim().to_string());
    }
    // As many idle connections kept as requests may be in flight: a connection closed when a wave
    // of answers leaves more idle is opened again for the next wave (a TCP handshake per request).
    let idle = usize::try_from(settings.concurrency).unwrap_or(usize::MAX).max(1);
    // critbench's own retries are the only ones, so that each is counted and paced. reqwest's
    // default policy retries HTTP/2 refusals only (this client speaks HTTP/1.1), and copies every
    // request's headers in case it must.
    let no_retries = reqwest::retry::never().max_retries_per_request(0);
    let mut builder = reqwest::Client::builder().timeout(timeout).pool_max_idle_per_host(idle).retry(no_retries);
    if is_loopback(url) {
        // A proxy from the environment must never see traffic meant for this machine.
        builder = builder.no_proxy();
    }
    let http = builder.build().map_err(|e| ClientError::Http(e.to_string()))?;
    let parse = |url: String| {
        reqwest::Url::parse(&url).map_err(|e| ClientError::Http(format!("{}: not a URL ({e})", settings.display_url())))
    };
    let endpoint = Endpoint {
        url: parse(settings.chat_url())?,
        native_url: parse(settings.root_url("api/chat"))?,
        display: settings.display_url(),
        headers,
        http,
        // Replaced by what detection finds when the server is not configured.
        server: Server::configured(settings.server.unwrap_or(ServerKind::Openai)),
    };
    Ok((endpoint, secret))
}

/// The parts of a URL that must never be shown: `user:password`, the password alone, the query.
pub(super) fn url_secrets(url: &str) -> Vec<String> {
    let mut secrets = Vec::new();
    let rest = url.trim().split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if let Some((userinfo, _)) = authority.rsplit_once('@') {
        secrets.push(userinfo.to_string());
        if let Some((_, password)) = userinfo.split_once(':') {
            secrets.push(password.to_string());
        }
    }
    if let Some((_, query)) = url.split_once('?') {
        secrets.push(query.split('#').next().unwrap_or("").to_string());
    }
    secrets.retain(|s| s.len() >= 3);
    secrets
}

fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let host = rest.split(['/', '?']).next().unwrap_or("");
    let host = host.rsplit_once('@').map_or(host, |(_, host)| host);
    let host =
        if host.starts_with('[') { host.split(']').next().unwrap_or("") } else { host.split(':').next().unwrap_or("") };
    host == "localhost" || host.starts_with("127.") || host == "[::1" || host == "::1"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_known() {
        assert!(is_loopback("http://127.0.0.1:8080/v1"));
        assert!(is_loopback("http://localhost/v1"));
        assert!(is_loopback("http://[::1]:99/v1"));
        assert!(!is_loopback("https://api.openai.com/v1"));
    }
}
