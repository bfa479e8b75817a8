//! The request body, field by field.

use super::*;
use crate::RequestOptions;
use crate::testing::user;
use leash_protocol::{AssistantMessage, ToolCall, ToolResultMessage};
use pretty_assertions::assert_eq;
use serde_json::json;

fn body(request: &Request<'_>, settings: &HttpSettings) -> Value {
    serde_json::to_value(request_body(request, settings)).unwrap()
}

fn tool() -> ToolSpec {
    ToolSpec {
        name: "read_file".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }
}

#[test]
fn a_tool_round_trip_maps_onto_contents() {
    let assistant = Message::Assistant(AssistantMessage {
        content: vec![
            AssistantContent::Thinking {
                thinking: String::new(),
                signature: Some("sig-1".into()),
                redacted: false,
            },
            AssistantContent::ToolCall(ToolCall {
                id: format!("{MADE_UP}1_0"),
                name: "read_file".into(),
                arguments: json!({"path": "a.ts"}),
            }),
            AssistantContent::ToolCall(ToolCall {
                id: "fc-2".into(),
                name: "read_file".into(),
                arguments: json!({"path": "b.ts"}),
            }),
        ],
        ..AssistantMessage::default()
    });
    let result = |id: &str, text: &str, is_error| {
        Message::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "read_file".into(),
            content: vec![Content::text(text)],
            details: Value::Null,
            is_error,
            duration_ms: None,
            usage: None,
            timestamp: 0,
        })
    };
    let messages = vec![
        user("hi"),
        assistant,
        result(&format!("{MADE_UP}1_0"), "A", false),
        result("fc-2", "no such file", true),
    ];
    let tools = [tool()];
    let request = Request {
        model: "gemini-test",
        system: "Be terse.",
        messages: &messages,
        tools: &tools,
        transcript: &[],
        options: RequestOptions::default(),
    };
    let settings = HttpSettings::new("", None);
    assert_eq!(
        body(&request, &settings),
        json!({
            "systemInstruction": {"parts": [{"text": "Be terse."}]},
            "tools": [{"functionDeclarations": [{"name": "read_file", "description": "Read a file",
                "parametersJsonSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}]}],
            "contents": [
                {"role": "user", "parts": [{"text": "hi"}]},
                {"role": "model", "parts": [
                    {"functionCall": {"name": "read_file", "args": {"path": "a.ts"}}, "thoughtSignature": "sig-1"},
                    {"functionCall": {"id": "fc-2", "name": "read_file", "args": {"path": "b.ts"}}}
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"name": "read_file", "response": {"output": "A"}}},
                    {"functionResponse": {"id": "fc-2", "name": "read_file", "response": {"error": "no such file"}}}
                ]}
            ]
        })
    );
}

#[test]
fn the_options_go_into_generation_config() {
    let messages = vec![user("q")];
    let schema = json!({"type": "object"});
    let settings = HttpSettings {
        max_tokens: Some(100),
        temperature: Some(0.5),
        output_schema: Some(schema.clone()),
        ..HttpSettings::new("", None)
    };
    let request = Request {
        model: "m",
        system: "",
        messages: &messages,
        tools: &[],
        transcript: &[],
        options: RequestOptions {
            thinking: ThinkingLevel::Medium,
            session_id: None,
        },
    };
    let sent = body(&request, &settings);
    assert_eq!(
        sent["generationConfig"],
        json!({"maxOutputTokens": 100, "temperature": 0.5, "responseMimeType": "application/json",
               "responseJsonSchema": schema, "thinkingConfig": {"thinkingBudget": 8192, "includeThoughts": true}})
    );
    assert!(sent.get("tools").is_none() && sent.get("systemInstruction").is_none());
    let plain = HttpSettings::new("", None);
    let request = Request {
        options: RequestOptions::default(),
        ..request
    };
    assert!(body(&request, &plain).get("generationConfig").is_none());
}

#[test]
fn the_budgets_grow_with_the_level() {
    let levels = [
        ThinkingLevel::Off,
        ThinkingLevel::Minimal,
        ThinkingLevel::Low,
        ThinkingLevel::Medium,
        ThinkingLevel::High,
        ThinkingLevel::XHigh,
    ];
    let budgets: Vec<_> = levels.into_iter().map(budget).collect();
    assert_eq!(
        budgets,
        [
            None,
            Some(512),
            Some(2048),
            Some(8192),
            Some(16384),
            Some(24576)
        ]
    );
}

#[test]
fn a_file_a_tool_returned_follows_its_function_response() {
    let image = Attachment {
        name: "a.png".into(),
        media_type: MediaType::Png,
        size: 2,
        sha256: String::new(),
        data: b"hi".to_vec().into(),
    };
    let messages = vec![Message::ToolResult(ToolResultMessage {
        tool_call_id: "fc-1".into(),
        tool_name: "read_file".into(),
        content: vec![Content::text("an image"), Content::Attachment(image)],
        details: Value::Null,
        is_error: false,
        duration_ms: None,
        usage: None,
        timestamp: 0,
    })];
    let request = Request {
        model: "m",
        system: "",
        messages: &messages,
        tools: &[],
        transcript: &[],
        options: RequestOptions::default(),
    };
    let sent = body(&request, &HttpSettings::new("", None));
    assert_eq!(
        sent["contents"],
        json!([{"role": "user", "parts": [
            {"functionResponse": {"id": "fc-1", "name": "read_file", "response": {"output": "an image"}}},
            {"inlineData": {"mimeType": "image/png", "data": "aGk="}}
        ]}])
    );
}
