//! The request body, message by message.

use super::*;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::anthropic::testing::*;
use crate::testing::{b64, with_files};

fn messages_url(base_url: &str) -> String {
    crate::driver::endpoint::<super::super::AnthropicMessages>(base_url)
}
fn body(request: &Request<'_>, settings: &HttpSettings) -> Value {
    serde_json::to_value(request_body(request, settings)).unwrap()
}

#[test]
fn tool_round_trip_maps_to_tool_use_and_one_user_message_of_results() {
    let messages = vec![
        user("Summarize sample.ts"),
        assistant(vec![
            AssistantContent::Text {
                text: "Reading both.".to_string(),
            },
            call("toolu_1", "read_file", json!({"path": "sample.ts"})),
            call("toolu_2", "read_file", json!({"path": "missing.ts"})),
        ]),
        result("toolu_1", "export const x = 1;\n", false),
        result("toolu_2", "no such file: missing.ts", true),
    ];
    let tools = vec![ToolSpec {
        name: "read_file".to_string(),
        description: "Read a file".to_string(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }];
    let request = Request {
        transcript: &[],
        model: "claude-test",
        system: "Be brief.",
        messages: &messages,
        tools: &tools,
        options: Default::default(),
    };
    assert_eq!(
        body(&request, &settings()),
        json!({
            "model": "claude-test",
            "max_tokens": 8192,
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Summarize sample.ts"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Reading both."},
                    {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "sample.ts"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {"path": "missing.ts"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "export const x = 1;\n", "is_error": false},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "no such file: missing.ts", "is_error": true,
                     "cache_control": {"type": "ephemeral"}}
                ]}
            ],
            "tools": [{
                "name": "read_file",
                "description": "Read a file",
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
                "cache_control": {"type": "ephemeral"}
            }],
            "stream": true
        })
    );
}

#[test]
fn empty_system_and_no_tools_are_omitted_and_settings_are_sent() {
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
        max_tokens: Some(100),
        temperature: Some(0.5),
        ..settings()
    };
    assert_eq!(
        body(&request, &settings),
        json!({
            "model": "m",
            "max_tokens": 100,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}],
            "temperature": 0.5,
            "stream": true
        })
    );
}

#[test]
fn signed_thinking_is_sent_back_unsigned_thinking_and_empty_text_are_dropped() {
    let messages = vec![
        user("q"),
        assistant(vec![
            AssistantContent::Thinking {
                thinking: "let me see".to_string(),
                signature: Some("sig==".to_string()),
                redacted: false,
            },
            AssistantContent::Thinking {
                thinking: "from elsewhere".to_string(),
                signature: None,
                redacted: false,
            },
            AssistantContent::Text {
                text: String::new(),
            },
            call("toolu_1", "list_dir", json!({})),
        ]),
        result("toolu_1", "a\nb\n", false),
        user("and now?"),
    ];
    let request = Request {
        transcript: &[],
        model: "m",
        system: "",
        messages: &messages,
        tools: &[],
        options: Default::default(),
    };
    // Without breakpoints: this test is about which blocks go back.
    let settings = HttpSettings {
        cache: false,
        ..settings()
    };
    let value = body(&request, &settings);
    assert_eq!(
        value["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "q"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "let me see", "signature": "sig=="},
                {"type": "tool_use", "id": "toolu_1", "name": "list_dir", "input": {}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a\nb\n", "is_error": false}
            ]},
            {"role": "user", "content": [{"type": "text", "text": "and now?"}]}
        ])
    );
}

#[test]
fn a_redacted_thinking_block_goes_back_with_its_data_unchanged() {
    let data = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP";
    let messages = vec![
        user("q"),
        assistant(vec![
            AssistantContent::Thinking {
                thinking: "[Reasoning redacted]".to_string(),
                signature: Some(data.to_string()),
                redacted: true,
            },
            call("toolu_1", "list_dir", json!({})),
        ]),
        result("toolu_1", "a\n", false),
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
        body(&request, &settings())["messages"][1]["content"],
        json!([
            {"type": "redacted_thinking", "data": data},
            {"type": "tool_use", "id": "toolu_1", "name": "list_dir", "input": {}}
        ])
    );
}

#[test]
fn unparsable_arguments_are_sent_as_an_empty_object() {
    let messages = vec![
        user("q"),
        assistant(vec![call(
            "toolu_1",
            "read_file",
            json!("{\"path\": \"sam"),
        )]),
        result("toolu_1", "invalid arguments", true),
    ];
    let request = Request {
        transcript: &[],
        model: "m",
        system: "",
        messages: &messages,
        tools: &[],
        options: Default::default(),
    };
    let value = body(&request, &settings());
    assert_eq!(value["messages"][1]["content"][0]["input"], json!({}));
}

#[test]
fn an_assistant_message_with_nothing_to_send_is_skipped() {
    let messages = vec![
        user("q"),
        assistant(vec![AssistantContent::Text {
            text: String::new(),
        }]),
        user("again"),
    ];
    let request = Request {
        transcript: &[],
        model: "m",
        system: "",
        messages: &messages,
        tools: &[],
        options: Default::default(),
    };
    let value = body(&request, &settings());
    assert_eq!(value["messages"].as_array().map(Vec::len), Some(2));
}

#[test]
fn url_takes_base_with_or_without_trailing_slash() {
    assert_eq!(
        messages_url("https://api.anthropic.com/"),
        "https://api.anthropic.com/v1/messages"
    );
    assert_eq!(
        messages_url("http://127.0.0.1:9"),
        "http://127.0.0.1:9/v1/messages"
    );
}

/// A request with a system message, two tools and a tool round trip.
fn cached_request_parts() -> (Vec<Message>, Vec<ToolSpec>) {
    let messages = vec![
        user("Summarize sample.ts"),
        assistant(vec![call("toolu_1", "read_file", json!({"path": "a"}))]),
        result("toolu_1", "text of a", false),
    ];
    let tool = |name: &str| ToolSpec {
        name: name.to_string(),
        description: "d".to_string(),
        parameters: json!({"type": "object"}),
    };
    (messages, vec![tool("read_file"), tool("list_dir")])
}

#[test]
fn caching_puts_breakpoints_on_the_last_tool_the_system_and_the_last_block() {
    let (messages, tools) = cached_request_parts();
    let request = Request {
        transcript: &[],
        model: "m",
        system: "Be brief.",
        messages: &messages,
        tools: &tools,
        options: Default::default(),
    };
    let sent = body(&request, &settings());
    let ephemeral = json!({"type": "ephemeral"});
    assert_eq!(sent["tools"][0].get("cache_control"), None);
    assert_eq!(sent["tools"][1]["cache_control"], ephemeral);
    assert_eq!(
        sent["system"],
        json!([{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(sent["messages"][0]["content"][0].get("cache_control"), None);
    assert_eq!(sent["messages"][1]["content"][0].get("cache_control"), None);
    assert_eq!(
        sent["messages"][2]["content"][0]["cache_control"],
        ephemeral
    );
    // Three breakpoints: the API allows four.
    let text = serde_json::to_string(&request_body(&request, &settings())).unwrap();
    assert_eq!(text.matches("\"cache_control\"").count(), 3);
    // The breakpoint is the block's last field, and messages the body's last.
    assert!(
        text.ends_with(r#""is_error":false,"cache_control":{"type":"ephemeral"}}]}]}"#),
        "{text}"
    );
}

#[test]
fn no_cache_sends_no_breakpoint_and_a_plain_system_string() {
    let (messages, tools) = cached_request_parts();
    let request = Request {
        transcript: &[],
        model: "m",
        system: "Be brief.",
        messages: &messages,
        tools: &tools,
        options: Default::default(),
    };
    let settings = HttpSettings {
        cache: false,
        ..settings()
    };
    let sent = body(&request, &settings);
    assert_eq!(sent["system"], "Be brief.");
    assert!(!sent.to_string().contains("cache_control"), "{sent}");
}

#[test]
fn a_thinking_block_last_gets_no_breakpoint() {
    let messages = vec![
        user("q"),
        assistant(vec![AssistantContent::Thinking {
            thinking: "hm".to_string(),
            signature: Some("sig".to_string()),
            redacted: false,
        }]),
    ];
    let request = Request {
        transcript: &[],
        model: "m",
        system: "",
        messages: &messages,
        tools: &[],
        options: Default::default(),
    };
    let sent = body(&request, &settings());
    assert!(!sent.to_string().contains("cache_control"), "{sent}");
    assert_eq!(sent.get("system"), None);
}

#[test]
fn attachments_become_image_document_and_named_text_blocks() {
    use leash_media::testing::{pdf, png_of};
    let png = png_of(4, 3);
    let messages = vec![with_files(
        "Why does the test fail?",
        &[
            ("shots/fail.png", png.clone()),
            ("spec.pdf", pdf()),
            ("ci.log", b"FAIL login\n".to_vec()),
        ],
    )];
    let request = Request {
        transcript: &[],
        model: "m",
        system: "",
        messages: &messages,
        tools: &[],
        options: Default::default(),
    };
    assert_eq!(
        body(&request, &settings())["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "Why does the test fail?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(&png)}},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": b64(&pdf())}},
            {"type": "text", "text": "<file name=\"ci.log\">\nFAIL login\n</file>",
             "cache_control": {"type": "ephemeral"}}
        ]}])
    );
}

#[test]
fn an_image_a_tool_returned_goes_in_the_tool_result_as_blocks() {
    use leash_media::testing::png_of;
    let png = png_of(2, 2);
    let image = leash_media::attachment("shot.png", png.clone(), None).unwrap();
    let mut image_result = result("toolu_1", "Read image file shot.png", false);
    if let Message::ToolResult(result) = &mut image_result {
        result.content.push(Content::Attachment(image));
    }
    let messages = vec![
        user("look"),
        assistant(vec![call(
            "toolu_1",
            "read_file",
            json!({"path": "shot.png"}),
        )]),
        image_result,
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
        body(&request, &settings())["messages"][2],
        json!({"role": "user", "content": [{
            "type": "tool_result", "tool_use_id": "toolu_1", "is_error": false,
            "content": [
                {"type": "text", "text": "Read image file shot.png"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(&png)}}
            ],
            "cache_control": {"type": "ephemeral"}
        }]})
    );
}
