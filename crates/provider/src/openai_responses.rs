//! The OpenAI Responses API wire format (`--api responses`), the API the
//! newer reasoning models need when tools and reasoning are combined:
//! `request` maps a request onto the wire, `decode::Decoder` turns one SSE
//! event at a time into [`StreamEvent`]s, and [`Responses`] names the
//! endpoint and headers for the shared driver (`provider::driver`), which
//! sends, retries and redacts exactly as for the other formats.
//!
//! Stateless: `store: false`, the whole context every turn, and each
//! reasoning item (with `include: ["reasoning.encrypted_content"]`) kept
//! as received on a thinking block — its `signature` holds the item's JSON
//! — and sent back unchanged, so a reasoning model keeps its chain across
//! tool calls.
//!
//! It must never end a stream without exactly one `Done` or `Error`, never
//! panic on what a server sends, and never let the key into an event.

mod decode;
pub(super) mod request;
#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;

use futures::stream::BoxStream;

use super::driver::{HttpProvider, WireFormat, decode_with};
use super::{HttpSettings, Request, StreamEvent, sse};

/// The Responses wire format: `POST {base}/responses` with a bearer key,
/// on the same base URL and key as Chat Completions.
#[derive(Debug, Clone, Copy)]
pub struct Responses;

impl WireFormat for Responses {
    const NAME: &'static str = "openai";
    const DEFAULT_BASE_URL: &'static str = super::openai::DEFAULT_BASE_URL;
    type Decoder = decode::Decoder;

    fn path() -> &'static str {
        "/responses"
    }

    fn key_header(key: &str) -> (&'static str, String) {
        ("authorization", format!("Bearer {key}"))
    }

    fn body(request: &Request<'_>, settings: &HttpSettings) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(&request::request_body(request, settings))
    }
}

/// A model behind the Responses API.
pub type ResponsesProvider = HttpProvider<Responses>;

/// The stream of one response body, decoded by this format's decoder;
/// public so the fuzz targets and benches can feed it any event sequence.
pub fn decode<S>(events: S) -> BoxStream<'static, StreamEvent>
where
    S: futures::Stream<Item = Result<sse::SseEvent, sse::SseError>> + Send + 'static,
{
    decode_with::<decode::Decoder, S>(events)
}
