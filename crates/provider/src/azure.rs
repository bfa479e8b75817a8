//! Azure OpenAI (docs/src/azure.md "Azure OpenAI"): the OpenAI wire
//! formats at the addresses the official `openai` SDK's `AzureOpenAI`
//! client sends them to, with the key in `api-key`. The bodies and the
//! decoders are OpenAI's own (`provider::openai`,
//! `provider::openai_responses`); only the URL and the key header differ.
//!
//! - Chat Completions: `{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=V`,
//!   `-m` naming the deployment (the body's `model` too, as the SDK sends it).
//! - Responses: `{endpoint}/openai/responses?api-version=V` when an
//!   `api-version` is set, as the SDK sends it; without one the GA v1
//!   route `{endpoint}/openai/v1/responses`, which takes none.
//!
//! It must never put the key anywhere but its header.

use super::driver::{HttpProvider, WireFormat};
use super::openai::ChatCompletions;
use super::openai_responses::Responses;
use super::{HttpSettings, Request};

/// The `api-version` of a Chat Completions request when
/// `OPENAI_API_VERSION` is unset: the newest dated GA version of Azure
/// OpenAI's data-plane API.
pub const DEFAULT_API_VERSION: &str = "2024-10-21";

/// Azure OpenAI's Chat Completions: a deployment's `chat/completions`.
#[derive(Debug, Clone, Copy)]
pub struct AzureChat;

impl WireFormat for AzureChat {
    const NAME: &'static str = "azure";
    const DEFAULT_BASE_URL: &'static str = "";
    type Decoder = <ChatCompletions as WireFormat>::Decoder;

    fn path() -> &'static str {
        "/chat/completions"
    }

    fn key_header(key: &str) -> (&'static str, String) {
        ("api-key", key.to_owned())
    }

    fn body(request: &Request<'_>, settings: &HttpSettings) -> serde_json::Result<Vec<u8>> {
        ChatCompletions::body(request, settings)
    }

    fn url(settings: &HttpSettings, model: &str) -> String {
        let version = settings.api_version.as_deref();
        address(
            &settings.base_url,
            &["openai", "deployments", model, "chat", "completions"],
            Some(version.unwrap_or(DEFAULT_API_VERSION)),
        )
    }
}

/// Azure OpenAI's Responses API: the resource's `responses`, the model in
/// the body.
#[derive(Debug, Clone, Copy)]
pub struct AzureResponses;

impl WireFormat for AzureResponses {
    const NAME: &'static str = "azure";
    const DEFAULT_BASE_URL: &'static str = "";
    type Decoder = <Responses as WireFormat>::Decoder;

    fn path() -> &'static str {
        "/responses"
    }

    fn key_header(key: &str) -> (&'static str, String) {
        ("api-key", key.to_owned())
    }

    fn body(request: &Request<'_>, settings: &HttpSettings) -> serde_json::Result<Vec<u8>> {
        Responses::body(request, settings)
    }

    fn url(settings: &HttpSettings, _model: &str) -> String {
        match settings.api_version.as_deref() {
            Some(version) => address(&settings.base_url, &["openai", "responses"], Some(version)),
            None => address(&settings.base_url, &["openai", "v1", "responses"], None),
        }
    }
}

/// A model deployed on Azure OpenAI, on Chat Completions.
pub type AzureProvider = HttpProvider<AzureChat>;

/// A model deployed on Azure OpenAI, on the Responses API.
pub type AzureResponsesProvider = HttpProvider<AzureResponses>;

/// `base` with each of `segments` appended as one path segment (escaped:
/// a deployment name never adds a segment or a query) and the
/// `api-version` query. A base that is no URL is returned as given, for
/// the driver to refuse with its own words.
fn address(base: &str, segments: &[&str], version: Option<&str>) -> String {
    let Ok(mut url) = reqwest::Url::parse(base.trim()) else {
        return base.to_owned();
    };
    if let Ok(mut path) = url.path_segments_mut() {
        path.pop_if_empty().extend(segments);
    } else {
        return base.to_owned();
    }
    url.set_query(None);
    if let Some(version) = version {
        url.query_pairs_mut().append_pair("api-version", version);
    }
    url.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(base: &str, version: Option<&str>) -> HttpSettings {
        HttpSettings {
            api_version: version.map(str::to_owned),
            ..HttpSettings::new(base, None)
        }
    }

    #[test]
    fn chat_goes_to_the_deployment_with_the_api_version() {
        assert_eq!(
            AzureChat::url(
                &settings("https://res.openai.azure.com/", None),
                "gpt-4o-mini"
            ),
            "https://res.openai.azure.com/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-10-21"
        );
        assert_eq!(
            AzureChat::url(
                &settings("https://res.openai.azure.com", Some("2025-04-01-preview")),
                "d"
            ),
            "https://res.openai.azure.com/openai/deployments/d/chat/completions?api-version=2025-04-01-preview"
        );
    }

    #[test]
    fn a_hostile_deployment_name_stays_one_segment() {
        let url = AzureChat::url(
            &settings("https://res.openai.azure.com", Some("v&x=1")),
            "../a/b?c=d#e",
        );
        assert_eq!(
            url,
            "https://res.openai.azure.com/openai/deployments/..%2Fa%2Fb%3Fc=d%23e/chat/completions?api-version=v%26x%3D1"
        );
    }

    #[test]
    fn responses_take_the_v1_route_without_a_version() {
        assert_eq!(
            AzureResponses::url(&settings("https://res.openai.azure.com", None), "m"),
            "https://res.openai.azure.com/openai/v1/responses"
        );
        assert_eq!(
            AzureResponses::url(
                &settings("https://r.example/", Some("2025-04-01-preview")),
                "m"
            ),
            "https://r.example/openai/responses?api-version=2025-04-01-preview"
        );
    }

    #[test]
    fn the_key_goes_in_api_key() {
        assert_eq!(AzureChat::key_header("k"), ("api-key", "k".to_owned()));
        assert_eq!(AzureResponses::key_header("k"), ("api-key", "k".to_owned()));
    }
}
