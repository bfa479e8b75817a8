//! The event and request builders every OpenAI unit test shares.

use super::OpenAiProvider;
use super::request::request_body;
use crate::protocol::Message;
use crate::protocol::{StreamEvent, ToolSpec};
pub(crate) use crate::provider::testing::{bodies, user};
use crate::provider::{ApiKey, HttpSettings, Provider, Request};
use futures::StreamExt;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

pub(crate) fn settings(base_url: &str, key: Option<&str>) -> HttpSettings {
    HttpSettings::new(base_url, key.map(ApiKey::new))
}

pub(crate) fn text_delta(text: &str) -> String {
    json!({"choices":[{"index":0,"delta":{"content":text},"finish_reason":null}]}).to_string()
}

pub(crate) fn finish(reason: &str) -> String {
    json!({"choices":[{"index":0,"delta":{},"finish_reason":reason}]}).to_string()
}

pub(crate) fn call_delta(index: usize, id: Option<&str>, name: Option<&str>, args: &str) -> String {
    let mut function = json!({"arguments": args});
    if let Some(name) = name {
        function["name"] = json!(name);
    }
    let mut call = json!({"index": index, "function": function});
    if let Some(id) = id {
        call["id"] = json!(id);
        call["type"] = json!("function");
    }
    json!({"choices":[{"index":0,"delta":{"tool_calls":[call]}}]}).to_string()
}

pub(crate) fn done() -> String {
    "[DONE]".to_string()
}

pub(crate) fn sse_body(payloads: &[String]) -> String {
    payloads
        .iter()
        .map(|payload| format!("data: {payload}\n\n"))
        .collect()
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
        model: "gpt-test",
        system: "Be brief.",
        messages,
        tools,
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
    ResponseTemplate::new(200).set_body_raw(sse_body(payloads).into_bytes(), "text/event-stream")
}

pub(crate) async fn run(settings: HttpSettings, messages: &[Message]) -> Vec<StreamEvent> {
    let provider = OpenAiProvider::new(settings);
    provider
        .stream(request(messages, &[read_file_tool()]))
        .collect()
        .await
}

pub(crate) fn body_json(request: &Request<'_>, settings: &HttpSettings) -> Value {
    // Through the text, as on the wire (f32 temperatures stay 0.2).
    serde_json::from_str(&serde_json::to_string(&request_body(request, settings)).unwrap()).unwrap()
}
