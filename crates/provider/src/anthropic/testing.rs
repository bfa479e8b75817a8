//! The messages, request builders and mock server every Anthropic unit
//! test shares; the wire bytes come from `provider::testing::anthropic`.

use super::AnthropicProvider;
pub(crate) use crate::testing::{bodies, user};
use crate::{HttpSettings, Provider, Request};
use futures::StreamExt;
use leash_protocol::{
    AssistantContent, AssistantMessage, Content, Message, StopReason, ToolCall, ToolResultMessage,
    Usage,
};
use leash_protocol::{StreamEvent, ToolSpec};
use serde_json::{Value, json};
use wiremock::{MockServer, ResponseTemplate};

pub(crate) fn settings() -> HttpSettings {
    HttpSettings {
        retries: 0,
        ..HttpSettings::new("http://localhost", None)
    }
}

pub(crate) fn assistant(content: Vec<AssistantContent>) -> Message {
    Message::Assistant(AssistantMessage {
        content,
        stop_reason: StopReason::ToolUse,
        ..AssistantMessage::default()
    })
}

pub(crate) fn call(id: &str, name: &str, arguments: Value) -> AssistantContent {
    AssistantContent::ToolCall(ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        arguments,
    })
}

pub(crate) fn result(id: &str, text: &str, is_error: bool) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: id.to_string(),
        tool_name: "read_file".to_string(),
        content: vec![Content::text(text)],
        details: json!({"private": true}),
        is_error,
        duration_ms: Some(1),
        usage: None,
        timestamp: 0,
    })
}

pub(crate) fn usage(input: u64, output: u64, cache_read: u64, cache_write: u64) -> StreamEvent {
    StreamEvent::Usage(
        Usage {
            input,
            output,
            cache_read,
            cache_write,
            total_tokens: 0,
            cost: None,
        }
        .with_total(),
    )
}

pub(crate) const KEY: &str = "sk-ant-test-SECRET-0123456789";

/// A text reply, byte for byte as the API documents it.
pub(crate) use crate::testing::anthropic::DOCUMENTED_TEXT_REPLY as TEXT_REPLY;

pub(crate) fn sse(body: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body.as_bytes().to_vec(), "text/event-stream")
}

pub(crate) fn error_body(kind: &str, message: &str) -> String {
    crate::testing::anthropic::error_json(kind, message).to_string()
}

pub(crate) fn provider(server: &MockServer, retries: u32) -> AnthropicProvider {
    AnthropicProvider::new(HttpSettings {
        base_url: format!("{}/", server.uri()),
        api_key: Some(super::super::ApiKey::new(KEY)),
        retries,
        ..settings()
    })
}

pub(crate) async fn run(provider: &AnthropicProvider, messages: &[Message]) -> Vec<StreamEvent> {
    let tools = vec![ToolSpec {
        name: "read_file".to_string(),
        description: "Read a UTF-8 file under the root".to_string(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }];
    let request = Request {
        transcript: &[],
        model: "claude-test",
        system: "You are terse.",
        messages,
        tools: &tools,
        options: Default::default(),
    };
    provider
        .stream(request)
        // The response's data for the observer has its own test.
        .filter(|event| std::future::ready(!matches!(event, StreamEvent::Provider(_))))
        .collect()
        .await
}

pub(crate) fn assert_key_absent(events: &[StreamEvent]) {
    let text = format!("{events:?}");
    assert!(!text.contains(KEY), "key leaked: {text}");
}
