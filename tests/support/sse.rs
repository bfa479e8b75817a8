//! The SSE bodies the mock servers send, per provider, in the documented
//! wire formats: [`openai`] (Chat Completions `data:` chunks) and
//! [`anthropic`] (Messages `event:` / `data:` pairs), [`responses`] (the
//! OpenAI Responses API's typed events), with canned error
//! responses and the request log of a mock server. The builders
//! themselves are the library's `provider::testing` (the `testing`
//! feature, on for tests through leash's dev-dependency on itself), the
//! same ones the unit tests use; this module adds the mock-server side.

pub mod anthropic;
pub mod bedrock;
pub mod gemini;
pub mod openai;
pub mod responses;

use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A 200 streaming `body`, byte for byte.
pub fn sse(body: impl Into<String>) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body.into().into_bytes(), "text/event-stream")
}

/// The JSON bodies of every request the server received, in order.
pub async fn request_bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|request| serde_json::from_slice(&request.body).unwrap_or(Value::Null))
        .collect()
}

/// Mounts `replies` on `server` at `endpoint` (a POST path): request `n`
/// gets reply `n`, and the last one answers every request after it — a
/// tool round trip is `[the call, the answer]`.
pub async fn serve_in_order(server: &MockServer, endpoint: &str, replies: Vec<String>) {
    let last = replies.len().saturating_sub(1);
    for (i, reply) in replies.into_iter().enumerate() {
        let mock = Mock::given(method("POST"))
            .and(path(endpoint))
            .respond_with(sse(reply));
        match i < last {
            true => mock.up_to_n_times(1).mount(server).await,
            false => mock.mount(server).await,
        }
    }
}
