//! The request builders and mock server every OpenAI unit test shares,
//! and the shared wire builders' chunks as payload strings.

use super::OpenAiProvider;
use super::request::request_body;
use crate::testing::openai as wire;
pub(crate) use crate::testing::{bodies, user};
use crate::{ApiKey, HttpSettings, Provider, Request};
use futures::StreamExt;
use leash_protocol::Message;
use leash_protocol::{StreamEvent, ToolSpec};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

pub(crate) fn settings(base_url: &str, key: Option<&str>) -> HttpSettings {
    HttpSettings::new(base_url, key.map(ApiKey::new))
}

// The shared builders' chunks (`provider::testing::openai`) as the `data`
// payloads the decoder tests feed one by one.

pub(crate) fn text_delta(text: &str) -> String {
    wire::text(text).to_string()
}

pub(crate) fn finish(reason: &str) -> String {
    wire::finish(reason).to_string()
}

pub(crate) fn call_delta(index: usize, id: Option<&str>, name: Option<&str>, args: &str) -> String {
    wire::call_delta(index, id, name, args).to_string()
}

pub(crate) fn done() -> String {
    wire::DONE.to_string()
}

pub(crate) fn read_file_tool() -> ToolSpec {
    ToolSpec {
        name: "read_file".to_string(),
        description: "Read a file".to_string(),
        parameters: json!({"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}),
    }
}

pub(crate) fn request<'a>(messages: &'a [Message], tools: &'a [ToolSpec]) -> Request<'a> {
    Request {
        transcript: &[],
        model: "gpt-test",
        system: "Be brief.",
        messages,
        tools,
        options: Default::default(),
    }
}

pub(crate) async fn server_replying(template: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(template)
        .mount(&server)
        .await;
    server
}

pub(crate) fn sse_reply(payloads: &[String]) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .set_body_raw(wire::data_body(payloads).into_bytes(), "text/event-stream")
}

pub(crate) async fn run(settings: HttpSettings, messages: &[Message]) -> Vec<StreamEvent> {
    let provider = OpenAiProvider::new(settings);
    provider
        .stream(request(messages, &[read_file_tool()]))
        // The response's data for the observer has its own test.
        .filter(|event| std::future::ready(!matches!(event, StreamEvent::Provider(_))))
        .collect()
        .await
}

pub(crate) fn body_json(request: &Request<'_>, settings: &HttpSettings) -> Value {
    // Through the text, as on the wire (f32 temperatures stay 0.2).
    serde_json::from_str(&serde_json::to_string(&request_body(request, settings)).unwrap()).unwrap()
}
