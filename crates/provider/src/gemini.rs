//! Google's own Gemini API (docs/src/gemini.md "Gemini"):
//! `POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse` with
//! the key in `x-goog-api-key`. `request` builds the body (tools as
//! `functionDeclarations`, results as `functionResponse`, `--output-schema`
//! as `responseJsonSchema`, `--reasoning-effort` as the thinking budget);
//! `decode::Decoder` turns each streamed chunk into [`StreamEvent`]s. The
//! shared driver (`provider::driver`) sends, retries and redacts.
//!
//! It must never end a stream without exactly one `Done` or `Error`, never
//! panic on what a server sends, and never let the key into an event.

mod decode;
mod request;
#[cfg(test)]
mod tests;

use futures::stream::BoxStream;

use super::driver::{HttpProvider, WireFormat, decode_with};
use super::{HttpSettings, Request, StreamEvent, sse};

/// The API base used when the configuration gives none.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";

/// The Gemini API's `streamGenerateContent`, as server-sent events.
#[derive(Debug, Clone, Copy)]
pub struct GenerateContent;

impl WireFormat for GenerateContent {
    const NAME: &'static str = "gemini";
    const DEFAULT_BASE_URL: &'static str = DEFAULT_BASE_URL;
    type Decoder = decode::Decoder;

    fn path() -> &'static str {
        "/v1beta/models"
    }

    fn key_header(key: &str) -> (&'static str, String) {
        ("x-goog-api-key", key.to_owned())
    }

    fn body(request: &Request<'_>, settings: &HttpSettings) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(&request::request_body(request, settings))
    }

    fn url(settings: &HttpSettings, model: &str) -> String {
        model_url(&settings.base_url, model)
    }
}

/// `{base}/v1beta/models/{model}:streamGenerateContent?alt=sse`, the model
/// escaped into one path segment (a `models/` prefix, as the SDK accepts
/// it, is dropped). A base that is no URL is returned as given, for the
/// driver to refuse in its own words.
fn model_url(base: &str, model: &str) -> String {
    let base = match base.trim() {
        "" => DEFAULT_BASE_URL,
        base => base,
    };
    let Ok(mut url) = reqwest::Url::parse(base) else {
        return base.to_owned();
    };
    let model = model.strip_prefix("models/").unwrap_or(model);
    let method = format!("{model}:streamGenerateContent");
    match url.path_segments_mut() {
        Ok(mut path) => {
            path.pop_if_empty().extend(["v1beta", "models", &method]);
        }
        Err(()) => return base.to_owned(),
    }
    url.set_query(Some("alt=sse"));
    url.into()
}

/// A model behind the Gemini API.
pub type GeminiProvider = HttpProvider<GenerateContent>;

/// The stream of one response body, decoded by this format's decoder;
/// public so the fuzz targets can feed it any event sequence.
pub fn decode<S>(events: S) -> BoxStream<'static, StreamEvent>
where
    S: futures::Stream<Item = Result<sse::SseEvent, sse::SseError>> + Send + 'static,
{
    decode_with::<decode::Decoder, S>(events)
}
