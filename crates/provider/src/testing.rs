//! Test support for the providers, shared by the unit tests and (through
//! the `testing` cargo feature, which the integration tests turn on) by
//! `tests/support/sse`: one set of builders for the SSE bodies each API
//! streams, in its documented wire format — [`openai`] (Chat Completions
//! `data:` chunks), [`anthropic`] (Messages `event:` / `data:` pairs) and
//! [`responses`] (the Responses API's typed events) — so a unit test and
//! an integration test feed leash the same bytes.
//!
//! Pure: strings and JSON values only, no mock server (each side wraps the
//! bytes in its own), nothing that talks to a real API. It must never be
//! built into a release binary: it exists only under `cfg(test)` or the
//! `testing` feature, which nothing but the test build turns on.

pub mod anthropic;
pub mod bedrock;
pub mod gemini;
pub mod openai;
pub mod responses;

#[cfg(test)]
use serde_json::Value;
#[cfg(test)]
use wiremock::MockServer;

#[cfg(test)]
use leash_protocol::{Content, Message, UserMessage};

/// A user message of `text`.
#[cfg(test)]
pub(crate) fn user(text: &str) -> Message {
    Message::User(UserMessage {
        content: vec![Content::text(text)],
        timestamp: 0,
    })
}

/// The JSON bodies `server` received, in order.
#[cfg(test)]
pub(crate) async fn bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|request| serde_json::from_slice(&request.body).unwrap())
        .collect()
}

/// A user message of `text` and the files, each made an attachment.
#[cfg(test)]
pub(crate) fn with_files(text: &str, files: &[(&str, Vec<u8>)]) -> Message {
    let mut content = vec![Content::text(text)];
    content.extend(files.iter().map(|(name, bytes)| {
        Content::Attachment(
            leash_media::attachment(*name, bytes.clone(), None).unwrap_or_else(|e| panic!("{e}")),
        )
    }));
    Message::User(UserMessage {
        content,
        timestamp: 0,
    })
}

/// Bytes in standard base64, as every wire carries them.
#[cfg(test)]
pub(crate) fn b64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
