//! The wires behind the provider seam (`leash-protocol`'s [`Provider`]):
//! OpenAI's Chat Completions and Responses, Anthropic's Messages, Gemini,
//! Amazon Bedrock, Vertex AI and Azure OpenAI, over one HTTP driver
//! (retries, the shared rate gate, redaction). Each turns one request into
//! a stream of [`StreamEvent`]s and knows nothing of turns, tools or hooks.
//!
//! A provider must never panic on what a server sends, never let the API key
//! reach an event or an error message, and must stop all I/O as soon as its
//! stream is dropped (that is how abort works).

#![warn(missing_docs)]

pub mod anthropic;
pub mod azure;
pub mod bedrock;
pub mod catalog;
pub mod content;
pub mod driver;
pub mod gemini;
pub mod http;
pub mod openai;
pub mod openai_responses;
#[cfg(test)]
mod options_tests;
#[cfg(test)]
mod shared_endings_tests;
pub mod sse;
/// The SSE builders the unit and integration tests share; test builds only.
#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub mod testing;
pub mod token;
pub mod vertex;

use leash_protocol::StreamEvent;
pub use leash_protocol::provider::{
    INCOMPLETE, NO_STOP_REASON, Provider, Request, RequestOptions, ThinkingLevel,
};
use serde_json::Value;

pub use driver::{RateGate, RateHint};
pub use leash_protocol::secret::ApiKey;

/// One HTTP client for many requests to `base_url` (the items of a
/// batch share its connection pool through [`HttpSettings::client`]). It
/// must be used on the runtime that first uses it: a pooled connection
/// belongs to its runtime.
pub fn shared_client(base_url: &str) -> Result<reqwest::Client, String> {
    http::client(http::Tls::for_url(base_url))
}

/// What the HTTP providers share from the configuration.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// The API base, e.g. `https://api.openai.com/v1` (a trailing slash is fine).
    pub base_url: String,
    /// The key; `None` only for keyless local servers.
    pub api_key: Option<ApiKey>,
    /// Retries after the first attempt (`--retries`).
    pub retries: u32,
    /// `--max-tokens`.
    pub max_tokens: Option<u32>,
    /// `--temperature`.
    pub temperature: Option<f32>,
    /// When the run's abort timer fires; no retry waits past it.
    pub deadline: Option<tokio::time::Instant>,
    /// `--output-schema`: ask the API for JSON valid against this schema.
    pub output_schema: Option<Value>,
    /// Prompt caching on (the default) or off (`--no-cache`). Anthropic
    /// reads it to place its `cache_control` breakpoints; OpenAI caches by
    /// prefix on its own and cannot be told not to, so its formats ignore it.
    pub cache: bool,
    /// The rate budget this request shares with others (the items of a
    /// batch): it waits at the gate before it is sent, and a refusal
    /// pauses every request that holds the same gate.
    pub gate: Option<std::sync::Arc<RateGate>>,
    /// An HTTP client to share (one connection pool for every item of a
    /// batch, from [`shared_client`]); `None`: the provider builds its own.
    pub client: Option<reqwest::Client>,
    /// `--prompt-cache-key`: sent as `prompt_cache_key` by the OpenAI
    /// formats (it routes requests that share a prefix to the same cache);
    /// Anthropic has no such field.
    pub prompt_cache_key: Option<String>,
    /// Azure OpenAI's `api-version` query parameter (`OPENAI_API_VERSION`);
    /// `None` on every other provider, and on Azure for its default.
    pub api_version: Option<String>,
    /// Amazon Bedrock's region and access keys (`None` on every other
    /// provider); with keys, requests are signed with SigV4 and `api_key`
    /// holds the secret key only so that errors are redacted of it.
    pub aws: Option<bedrock::auth::AwsAuth>,
    /// Vertex AI's project and location (`None` on every other provider).
    pub google: Option<vertex::place::GoogleCloud>,
    /// Where a bearer token is got before each request when the key is
    /// not known up front (Vertex AI's access token, exchanged from a
    /// credentials file); `None`: `api_key` is the key.
    pub token: Option<std::sync::Arc<dyn token::TokenSource>>,
}

impl HttpSettings {
    /// The secrets besides `api_key` that a provider's message could
    /// quote and that are redacted from it like the key: Bedrock's session
    /// token.
    pub fn other_secrets(&self) -> Vec<ApiKey> {
        let session = self
            .aws
            .as_ref()
            .and_then(|aws| aws.keys.as_ref())
            .and_then(|keys| keys.session_token.clone());
        session.into_iter().collect()
    }

    /// The retries of a failed request when the caller says nothing: the
    /// default of `--retries`.
    pub const DEFAULT_RETRIES: u32 = 2;

    /// Settings for the API at `base_url` with `api_key`, everything else
    /// as a run without flags has it: [`Self::DEFAULT_RETRIES`], no
    /// output limit, temperature, deadline, schema or cache key, caching
    /// on. The one place those defaults live; a caller changes a field by
    /// struct update (`HttpSettings { retries: 0, ..HttpSettings::new(…) }`).
    pub fn new(base_url: impl Into<String>, api_key: Option<ApiKey>) -> Self {
        HttpSettings {
            base_url: base_url.into(),
            api_key,
            retries: Self::DEFAULT_RETRIES,
            max_tokens: None,
            temperature: None,
            deadline: None,
            output_schema: None,
            cache: true,
            gate: None,
            client: None,
            prompt_cache_key: None,
            api_version: None,
            aws: None,
            google: None,
            token: None,
        }
    }
}
