//! The Anthropic Messages API wire format (`POST {base}/v1/messages`,
//! streamed): `request` builds the body from leash's messages,
//! `decode::Decoder` turns the named SSE events of a reply into
//! [`StreamEvent`]s, and [`AnthropicMessages`] names the endpoint and
//! headers for the shared driver (`provider::driver`), which sends, retries
//! and redacts.
//!
//! It must never panic on what a server sends (unknown event, block and delta
//! types are skipped) and never put the API key into an event.

mod decode;
pub(super) mod request;
#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;

use futures::stream::BoxStream;

use super::driver::{HttpProvider, WireFormat, decode_with};
use super::{HttpSettings, Request, StreamEvent, sse};

/// The API base used when the configuration gives none.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The `anthropic-version` header leash speaks.
const API_VERSION: &str = "2023-06-01";

/// The Messages API wire format: `POST {base}/v1/messages` with an
/// `anthropic-version` header and the key in `x-api-key`.
#[derive(Debug, Clone, Copy)]
pub struct AnthropicMessages;

impl WireFormat for AnthropicMessages {
    const NAME: &'static str = "anthropic";
    const DEFAULT_BASE_URL: &'static str = DEFAULT_BASE_URL;
    type Decoder = decode::Decoder;

    fn path() -> &'static str {
        "/v1/messages"
    }

    fn headers() -> &'static [(&'static str, &'static str)] {
        &[("anthropic-version", API_VERSION)]
    }

    fn key_header(key: &str) -> (&'static str, String) {
        ("x-api-key", key.to_owned())
    }

    fn body(request: &Request<'_>, settings: &HttpSettings) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(&request::request_body(request, settings))
    }
}

/// The Anthropic Messages API as a [`super::Provider`].
pub type AnthropicProvider = HttpProvider<AnthropicMessages>;

/// The stream of one response body, decoded by this format's decoder;
/// public so the fuzz targets can feed it any event sequence.
pub fn decode<S>(events: S) -> BoxStream<'static, StreamEvent>
where
    S: futures::Stream<Item = Result<sse::SseEvent, sse::SseError>> + Send + 'static,
{
    decode_with::<decode::Decoder, S>(events)
}
