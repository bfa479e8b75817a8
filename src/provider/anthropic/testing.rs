//! The event and request builders every Anthropic unit test shares.

use super::AnthropicProvider;
use crate::protocol::{
    AssistantContent, AssistantMessage, Content, Message, StopReason, ToolCall, ToolResultMessage,
    Usage,
};
use crate::protocol::{StreamEvent, ToolSpec};
pub(crate) use crate::provider::testing::{bodies, user};
use crate::provider::{HttpSettings, Provider, Request};
use futures::StreamExt;
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
        }
        .with_total(),
    )
}

pub(crate) const KEY: &str = "sk-ant-test-SECRET-0123456789";

/// A text reply, byte for byte as the API documents it.
pub(crate) const TEXT_REPLY: &str = "event: message_start\n\
data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-test\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n\
event: content_block_start\n\
data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
event: ping\n\
data: {\"type\": \"ping\"}\n\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n\
event: content_block_stop\n\
data: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
event: message_delta\n\
data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":15}}\n\n\
event: message_stop\n\
data: {\"type\":\"message_stop\"}\n\n";

pub(crate) fn sse(body: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body.as_bytes().to_vec(), "text/event-stream")
}

pub(crate) fn error_body(kind: &str, message: &str) -> String {
    json!({"type": "error", "error": {"type": kind, "message": message}}).to_string()
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
        model: "claude-test",
        system: "You are terse.",
        messages,
        tools: &tools,
    };
    provider.stream(request).collect().await
}

pub(crate) fn assert_key_absent(events: &[StreamEvent]) {
    let text = format!("{events:?}");
    assert!(!text.contains(KEY), "key leaked: {text}");
}
