//! Why a client could not be made ([`ClientError`]).

/// Why a client could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(
        "[openai] api_key_env names the environment variable `{0}`, but it is not set (or empty); \
         export it, or remove api_key_env for a server that needs no key"
    )]
    /// The environment variable `api_key_env` names is not set.
    MissingKey(String),
    #[error("[openai] base_url `{0}` is not an http:// or https:// URL")]
    /// A `base_url` that is not http(s).
    BadUrl(String),
    #[error("[openai] no endpoint: give `base_url`")]
    /// No endpoint is configured.
    NoEndpoint,
    #[error(transparent)]
    /// The response cache cannot be opened.
    Cache(#[from] crate::cache::CacheError),
    #[error("cannot start the HTTP client: {0}")]
    /// The HTTP client cannot be built (its TLS setup).
    Http(String),
}
