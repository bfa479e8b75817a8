//! The request body, item by item.

use super::*;
use crate::openai_responses::testing::*;
use crate::testing::{b64, with_files};
use leash_protocol::*;
use pretty_assertions::assert_eq;
use serde_json::json;

fn body_json(request: &Request<'_>, settings: &HttpSettings) -> Value {
    serde_json::from_slice(&serde_json::to_vec(&request_body(request, settings)).unwrap()).unwrap()
}

fn endpoint(base_url: &str) -> String {
    crate::driver::endpoint::<super::super::Responses>(base_url)
}

#[test]
fn the_endpoint_is_responses_on_the_openai_base() {
    assert_eq!(endpoint(""), "https://api.openai.com/v1/responses");
    assert_eq!(
        endpoint("http://127.0.0.1:8080/v1/"),
        "http://127.0.0.1:8080/v1/responses"
    );
}

#[test]
fn a_first_request_is_stateless_with_instructions_and_tools() {
    let messages = vec![user("Summarise sample.ts")];
    let tools = vec![read_file_tool()];
    let body = body_json(&request(&messages, &tools), &settings("http://x/v1", None));
    assert_eq!(
        body,
        json!({
            "model": "gpt-test",
            "instructions": "Be brief.",
            "input": [{"type": "message", "role": "user", "content": "Summarise sample.ts"}],
            "tools": [{"type": "function", "name": "read_file", "description": "Read a file",
                       "parameters": read_file_tool().parameters, "strict": false}],
            "stream": true,
            "store": false,
            "include": ["reasoning.encrypted_content"],
        })
    );
}

#[test]
fn no_system_message_and_no_tools_leave_their_fields_out() {
    let messages = vec![user("Hi")];
    let mut request = request(&messages, &[]);
    request.system = "";
    let body = body_json(&request, &settings("http://x/v1", None));
    assert_eq!(body.get("instructions"), None, "{body}");
    assert_eq!(body.get("tools"), None, "{body}");
}

#[test]
fn the_transcript_maps_to_items_with_reasoning_sent_back_verbatim() {
    let raw = r#"{"id":"rs_1", "type":"reasoning","summary":[{"type":"summary_text","text":"Plan"}],"encrypted_content":"gAAA=="}"#;
    let messages = vec![
        user("Summarise sample.ts"),
        Message::Assistant(AssistantMessage {
            content: vec![
                AssistantContent::Thinking {
                    thinking: "Plan".into(),
                    signature: Some(raw.into()),
                    redacted: false,
                },
                // Summary text whose item could not be kept: not sent.
                AssistantContent::Thinking {
                    thinking: "loose".into(),
                    signature: None,
                    redacted: false,
                },
                // Another provider's signature: not a reasoning item.
                AssistantContent::Thinking {
                    thinking: "x".into(),
                    signature: Some("EqQBCkYIBxgCKkA".into()),
                    redacted: false,
                },
                AssistantContent::Text {
                    text: "Reading.".into(),
                },
                AssistantContent::ToolCall(ToolCall {
                    id: "call_1".into(),
                    name: "read_file".into(),
                    arguments: json!({"path": "sample.ts"}),
                }),
                AssistantContent::ToolCall(ToolCall {
                    id: "call_2".into(),
                    name: "read_file".into(),
                    arguments: json!("{\"path\": \"b.ts\""),
                }),
            ],
            stop_reason: StopReason::ToolUse,
            ..AssistantMessage::default()
        }),
        Message::ToolResult(ToolResultMessage {
            tool_call_id: "call_1".into(),
            tool_name: "read_file".into(),
            content: vec![Content::text("export const x = 1;")],
            details: Value::Null,
            is_error: false,
            duration_ms: None,
            usage: None,
            timestamp: 0,
        }),
        Message::ToolResult(ToolResultMessage {
            tool_call_id: "call_2".into(),
            tool_name: "read_file".into(),
            content: vec![Content::text("invalid arguments")],
            details: Value::Null,
            is_error: true,
            duration_ms: None,
            usage: None,
            timestamp: 0,
        }),
    ];
    let settings = settings("http://x/v1", None);
    let request = request(&messages, &[]);
    let bytes = serde_json::to_vec(&request_body(&request, &settings)).unwrap();
    let text = String::from_utf8(bytes).unwrap();
    assert!(text.contains(raw), "the reasoning item changed: {text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        body["input"],
        json!([
            {"type": "message", "role": "user", "content": "Summarise sample.ts"},
            serde_json::from_str::<Value>(raw).unwrap(),
            {"type": "message", "role": "assistant", "content": "Reading."},
            {"type": "function_call", "call_id": "call_1", "name": "read_file",
             "arguments": "{\"path\":\"sample.ts\"}"},
            {"type": "function_call", "call_id": "call_2", "name": "read_file",
             "arguments": "{\"path\": \"b.ts\""},
            {"type": "function_call_output", "call_id": "call_1", "output": "export const x = 1;"},
            {"type": "function_call_output", "call_id": "call_2", "output": "invalid arguments"},
        ])
    );
}

#[test]
fn max_tokens_temperature_and_the_output_schema() {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}},
                        "required": ["n"], "additionalProperties": false});
    let mut settings = settings("http://x/v1", None);
    settings.max_tokens = Some(300);
    settings.temperature = Some(0.2);
    settings.output_schema = Some(schema.clone());
    let messages = vec![user("Count")];
    let body = body_json(&request(&messages, &[]), &settings);
    assert_eq!(body["max_output_tokens"], 300);
    assert_eq!(body.get("max_tokens"), None);
    assert_eq!(body["temperature"], json!(0.2));
    assert_eq!(
        body["text"],
        json!({"format": {"type": "json_schema", "name": "leash_output", "schema": schema, "strict": true}})
    );
}

#[test]
fn attachments_become_input_image_input_file_and_named_text() {
    use leash_media::testing::{pdf, webp_vp8x_of};
    let webp = webp_vp8x_of(4, 3);
    let messages = vec![with_files(
        "Why?",
        &[
            ("fail.webp", webp.clone()),
            ("spec.pdf", pdf()),
            ("ci.log", b"FAIL\n".to_vec()),
        ],
    )];
    let body = body_json(&request(&messages, &[]), &settings("http://x/v1", None));
    assert_eq!(
        body["input"],
        json!([{"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Why?"},
            {"type": "input_image", "image_url": format!("data:image/webp;base64,{}", b64(&webp)), "detail": "auto"},
            {"type": "input_file", "filename": "spec.pdf",
             "file_data": format!("data:application/pdf;base64,{}", b64(&pdf()))},
            {"type": "input_text", "text": "<file name=\"ci.log\">\nFAIL\n</file>"}
        ]}])
    );
}

#[test]
fn an_image_a_tool_returned_goes_in_the_function_call_output() {
    use leash_media::testing::gif_of;
    let gif = gif_of(2, 2);
    let image = leash_media::attachment("a.gif", gif.clone(), None).unwrap();
    let messages = vec![
        user("look"),
        Message::Assistant(AssistantMessage {
            content: vec![AssistantContent::ToolCall(ToolCall {
                id: "call_1".into(),
                name: "read_file".into(),
                arguments: json!({"path": "a.gif"}),
            })],
            stop_reason: StopReason::ToolUse,
            ..AssistantMessage::default()
        }),
        Message::ToolResult(ToolResultMessage {
            tool_call_id: "call_1".into(),
            tool_name: "read_file".into(),
            content: vec![
                Content::text("Read image file a.gif"),
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
        body["input"][2],
        json!({"type": "function_call_output", "call_id": "call_1", "output": [
            {"type": "input_text", "text": "Read image file a.gif"},
            {"type": "input_image", "image_url": format!("data:image/gif;base64,{}", b64(&gif)), "detail": "auto"}
        ]})
    );
}
