//! Google Vertex AI (docs/src/vertex.md "Google Vertex AI"): Gemini and
//! Claude models in a Google Cloud project, chosen by the model's name as
//! the vendors' SDKs do (`claude-*` is Anthropic's publisher, every other
//! name Google's), with a Google access token as a bearer.
//!
//! - Gemini: `POST {base}/v1/projects/{p}/locations/{l}/publishers/google/models/{model}:streamGenerateContent?alt=sse`,
//!   the Gemini API's body and decoder (`provider::gemini`).
//! - Claude: `POST {base}/v1/projects/{p}/locations/{l}/publishers/anthropic/models/{model}:streamRawPredict`,
//!   the Messages body without `model` and with `"anthropic_version":
//!   "vertex-2023-10-16"`, Anthropic's decoder (`provider::anthropic`).
//!
//! `credentials` reads the credentials file, `jwt` signs a service
//! account's assertion, `token` exchanges and caches the access token,
//! which the driver asks for before each request (`provider::token`).
//! It must never put the token or a key anywhere but the one header.

pub mod credentials;
mod jwt;
pub mod place;
pub mod token;

use super::anthropic::AnthropicMessages;
use super::driver::{HttpProvider, WireFormat};
use super::gemini::GenerateContent;
use super::{HttpSettings, Request};

pub use place::GoogleCloud;

/// The `anthropic_version` a Claude request on Vertex AI carries in its body.
pub const ANTHROPIC_VERSION: &str = "vertex-2023-10-16";

/// Whether `model` is one of Anthropic's (Claude on Vertex AI).
pub fn is_claude(model: &str) -> bool {
    model.trim().starts_with("claude-")
}

/// Gemini models on Vertex AI: `streamGenerateContent`.
#[derive(Debug, Clone, Copy)]
pub struct VertexGemini;

impl WireFormat for VertexGemini {
    const NAME: &'static str = "vertex";
    const DEFAULT_BASE_URL: &'static str = "";
    type Decoder = <GenerateContent as WireFormat>::Decoder;

    fn path() -> &'static str {
        "/v1"
    }

    fn key_header(token: &str) -> (&'static str, String) {
        ("authorization", format!("Bearer {token}"))
    }

    fn body(request: &Request<'_>, settings: &HttpSettings) -> serde_json::Result<Vec<u8>> {
        GenerateContent::body(request, settings)
    }

    fn url(settings: &HttpSettings, model: &str) -> String {
        model_url(
            settings,
            "google",
            model.strip_prefix("models/").unwrap_or(model),
            "streamGenerateContent",
            Some("alt=sse"),
        )
    }
}

/// Claude models on Vertex AI: `streamRawPredict`.
#[derive(Debug, Clone, Copy)]
pub struct VertexClaude;

impl WireFormat for VertexClaude {
    const NAME: &'static str = "vertex";
    const DEFAULT_BASE_URL: &'static str = "";
    type Decoder = <AnthropicMessages as WireFormat>::Decoder;

    fn path() -> &'static str {
        "/v1"
    }

    fn key_header(token: &str) -> (&'static str, String) {
        ("authorization", format!("Bearer {token}"))
    }

    fn body(request: &Request<'_>, settings: &HttpSettings) -> serde_json::Result<Vec<u8>> {
        let body = AnthropicMessages::body(request, settings)?;
        let mut body: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&body)?;
        body.remove("model");
        body.insert("anthropic_version".into(), ANTHROPIC_VERSION.into());
        serde_json::to_vec(&body)
    }

    fn url(settings: &HttpSettings, model: &str) -> String {
        model_url(settings, "anthropic", model, "streamRawPredict", None)
    }
}

/// `{base}/v1/projects/{p}/locations/{l}/publishers/{publisher}/models/{model}:{method}`,
/// each name escaped into one path segment; the base is the location's
/// endpoint unless `--base-url` gives one. A base that is no URL is
/// returned as given, for the driver to refuse in its own words.
fn model_url(
    settings: &HttpSettings,
    publisher: &str,
    model: &str,
    method: &str,
    query: Option<&str>,
) -> String {
    let (project, location) = match &settings.google {
        Some(cloud) => (cloud.project.as_str(), cloud.location.as_str()),
        None => ("", "global"),
    };
    let base = match settings.base_url.trim() {
        "" => place::endpoint(location),
        base => base.to_owned(),
    };
    let Ok(mut url) = reqwest::Url::parse(&base) else {
        return base;
    };
    let model = format!("{model}:{method}");
    match url.path_segments_mut() {
        Ok(mut path) => {
            path.pop_if_empty().extend([
                "v1",
                "projects",
                project,
                "locations",
                location,
                "publishers",
                publisher,
                "models",
                &model,
            ]);
        }
        Err(()) => return base,
    }
    url.set_query(query);
    url.into()
}

/// A Gemini model on Vertex AI.
pub type VertexGeminiProvider = HttpProvider<VertexGemini>;

/// A Claude model on Vertex AI.
pub type VertexClaudeProvider = HttpProvider<VertexClaude>;

#[cfg(test)]
mod tests;
