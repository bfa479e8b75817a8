//! The OpenAI Chat Completions wire format (ARCHITECTURE.md §2.4), which also serves
//! every compatible server (Ollama, llama.cpp, vLLM, LM Studio,
//! OpenRouter…): `request` maps a request onto the wire, `decode::Decoder`
//! turns one SSE `data` payload at a time into [`StreamEvent`]s,
//! and [`ChatCompletions`] names the endpoint and headers for the shared
//! driver (`provider::driver`), which sends, retries and redacts.
//!
//! It must never end a stream without exactly one `Done` or `Error`, never
//! panic on what a server sends, and never let the key into an event.

mod decode;
/// Also the Responses format's: the argument and text helpers both APIs share.
pub(super) mod request;
#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;

use futures::stream::BoxStream;

use super::driver::{HttpProvider, WireFormat, decode_with};
use super::{HttpSettings, Request, StreamEvent, sse};

/// The API base used when the configuration gives none.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// The Chat Completions wire format: `POST {base}/chat/completions` with a
/// bearer key.
#[derive(Debug, Clone, Copy)]
pub struct ChatCompletions;

impl WireFormat for ChatCompletions {
    const NAME: &'static str = "openai";
    const DEFAULT_BASE_URL: &'static str = DEFAULT_BASE_URL;
    type Decoder = decode::Decoder;

    fn path() -> &'static str {
        "/chat/completions"
    }

    fn key_header(key: &str) -> (&'static str, String) {
        ("authorization", format!("Bearer {key}"))
    }

    fn body(request: &Request<'_>, settings: &HttpSettings) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(&request::request_body(request, settings))
    }
}

/// A model behind the Chat Completions API.
pub type OpenAiProvider = HttpProvider<ChatCompletions>;

/// The stream of one response body, decoded by this format's decoder;
/// public so the fuzz targets can feed it any event sequence.
pub fn decode<S>(events: S) -> BoxStream<'static, StreamEvent>
where
    S: futures::Stream<Item = Result<sse::SseEvent, sse::SseError>> + Send + 'static,
{
    decode_with::<decode::Decoder, S>(events)
}
