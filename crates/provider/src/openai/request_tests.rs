//! The request body, message by message.

use super::*;
use leash_protocol::*;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::openai::testing::*;
use crate::testing::{b64, with_files};

fn endpoint(base_url: &str) -> String {
    crate::driver::endpoint::<super::super::ChatCompletions>(base_url)
}

#[test]
fn the_transcript_is_mapped_message_by_message() {
    let messages = vec![
        user("Summarise sample.ts"),
        Message::Assistant(AssistantMessage {
            content: vec![
                AssistantContent::Thinking {
                    thinking: "I should read it".to_string(),
                    signature: None,
                    redacted: false,
                },
                AssistantContent::Text {
                    text: "Reading.".to_string(),
                },
                AssistantContent::ToolCall(ToolCall {
                    id: "call_1".to_string(),
                    name: "read_file".to_string(),
                    arguments: json!({"path":"sample.ts"}),
                }),
                AssistantContent::ToolCall(ToolCall {
                    id: "call_2".to_string(),
                    name: "read_file".to_string(),
                    arguments: json!("{\"path\": \"b.ts\""),
                }),
            ],
            stop_reason: StopReason::ToolUse,
            ..AssistantMessage::default()
        }),
        Message::ToolResult(ToolResultMessage {
            tool_call_id: "call_1".to_string(),
            tool_name: "read_file".to_string(),
            content: vec![Content::text("export const x = 1;\n")],
            details: json!({"bytes": 20}),
            is_error: false,
            duration_ms: Some(2),
            usage: None,
            timestamp: 3,
        }),
        Message::ToolResult(ToolResultMessage {
            tool_call_id: "call_2".to_string(),
            tool_name: "read_file".to_string(),
            content: vec![],
            details: Value::Null,
            is_error: true,
            duration_ms: None,
            usage: None,
            timestamp: 3,
        }),
    ];
    let tools = [read_file_tool()];
    let mut settings = settings("http://x/v1", None);
    settings.max_tokens = Some(256);
    settings.temperature = Some(0.2);
    assert_eq!(
        body_json(&request(&messages, &tools), &settings),
        json!({
            "model": "gpt-test",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Summarise sample.ts"},
                {"role": "assistant", "content": "Reading.", "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "read_file", "arguments": "{\"path\":\"sample.ts\"}"}},
                    {"id": "call_2", "type": "function",
                     "function": {"name": "read_file", "arguments": "{\"path\": \"b.ts\""}},
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "export const x = 1;\n"},
                {"role": "tool", "tool_call_id": "call_2", "content": ""},
            ],
            "tools": [{"type": "function", "function": {
                "name": "read_file",
                "description": "Read a file",
                "parameters": {"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},
            }}],
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_completion_tokens": 256,
            "temperature": 0.2,
        })
    );
}

#[test]
fn optional_parts_are_left_out() {
    let messages = vec![
        user("hi"),
        Message::Assistant(AssistantMessage {
            content: vec![AssistantContent::ToolCall(ToolCall {
                id: "c".to_string(),
                name: "list_dir".to_string(),
                arguments: json!({}),
            })],
            ..AssistantMessage::default()
        }),
        Message::Assistant(AssistantMessage::default()),
    ];
    let request = Request {
        transcript: &[],
        model: "m",
        system: "",
        messages: &messages,
        tools: &[],
        options: Default::default(),
    };
    assert_eq!(
        body_json(&request, &settings("http://x", None)),
        json!({
            "model": "m",
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "list_dir", "arguments": "{}"}}
                ]},
                {"role": "assistant", "content": ""},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
        })
    );
}

#[test]
fn the_endpoint_joins_the_base_with_or_without_a_slash() {
    assert_eq!(endpoint("http://h:1/v1"), "http://h:1/v1/chat/completions");
    assert_eq!(endpoint("http://h:1/v1/"), "http://h:1/v1/chat/completions");
    assert_eq!(endpoint(""), "https://api.openai.com/v1/chat/completions");
}

#[test]
fn the_prompt_cache_key_is_sent_when_set_and_messages_come_last() {
    let messages = vec![user("hi")];
    let request = Request {
        transcript: &[],
        model: "m",
        system: "",
        messages: &messages,
        tools: &[],
        options: Default::default(),
    };
    let settings = HttpSettings {
        prompt_cache_key: Some("repo-42".to_string()),
        ..settings("http://x", None)
    };
    let body = serde_json::to_string(&request_body(&request, &settings)).unwrap();
    assert_eq!(
        body,
        r#"{"model":"m","prompt_cache_key":"repo-42","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}"#
    );
    let without = serde_json::to_string(&request_body(&request, &settings_without_key())).unwrap();
    assert!(!without.contains("prompt_cache_key"), "{without}");
}

fn settings_without_key() -> HttpSettings {
    settings("http://x", None)
}

#[test]
fn strictness_needs_closed_objects_with_everything_required() {
    assert!(strict_compatible(&json!({
        "type": "object",
        "properties": {"verdict": {"enum": ["pass", "fail"]}, "reasons": {"type": "array", "items": {"type": "string"}}},
        "required": ["verdict", "reasons"],
        "additionalProperties": false
    })));
    assert!(!strict_compatible(
        &json!({"type": "object", "properties": {"a": {}}})
    ));
    assert!(!strict_compatible(&json!({
        "type": "object", "properties": {"a": {"type": "object", "properties": {}}},
        "required": ["a"], "additionalProperties": false
    })));
}

#[test]
fn attachments_become_image_url_file_and_named_text_parts() {
    use leash_media::testing::{jpeg_of, pdf};
    let jpeg = jpeg_of(4, 3);
    let messages = vec![with_files(
        "Why?",
        &[
            ("shots/fail.jpg", jpeg.clone()),
            ("docs/spec.pdf", pdf()),
            ("ci.log", b"FAIL\n".to_vec()),
        ],
    )];
    let body = body_json(&request(&messages, &[]), &settings("http://x/v1", None));
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": [
            {"type": "text", "text": "Why?"},
            {"type": "image_url", "image_url": {"url": format!("data:image/jpeg;base64,{}", b64(&jpeg))}},
            {"type": "file", "file": {"filename": "spec.pdf",
                                      "file_data": format!("data:application/pdf;base64,{}", b64(&pdf()))}},
            {"type": "text", "text": "<file name=\"ci.log\">\nFAIL\n</file>"}
        ]})
    );
    // Text alone stays one string, as before attachments.
    let plain = vec![user("hi")];
    let body = body_json(&request(&plain, &[]), &settings("http://x/v1", None));
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "hi"})
    );
}

#[test]
fn an_image_in_a_tool_result_is_a_note_on_this_api() {
    use leash_media::testing::png_of;
    let image = leash_media::attachment("shot.png", png_of(2, 2), None).unwrap();
    let messages = vec![
        user("look"),
        Message::Assistant(AssistantMessage {
            content: vec![AssistantContent::ToolCall(ToolCall {
                id: "call_1".into(),
                name: "read_file".into(),
                arguments: json!({"path": "shot.png"}),
            })],
            stop_reason: StopReason::ToolUse,
            ..AssistantMessage::default()
        }),
        Message::ToolResult(ToolResultMessage {
            tool_call_id: "call_1".into(),
            tool_name: "read_file".into(),
            content: vec![
                Content::text("Read image file shot.png\n"),
                Content::Attachment(image),
            ],
            details: Value::Null,
            is_error: false,
            duration_ms: None,
            usage: None,
            timestamp: 0,
        }),
    ];
    let body = body_json(&request(&messages, &[]), &settings("http://x/v1", None));
    assert_eq!(
        body["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_1", "content":
            "Read image file shot.png\n[shot.png (image/png, 33 bytes) not shown: a tool result on this API (Chat Completions) holds text only]"})
    );
}
