//! Content capture, opt-in as the GenAI conventions say
//! (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`): the
//! messages of a model request and its reply in the conventions' JSON
//! shape (gen-ai-input-messages.json, gen-ai-output-messages.json), the
//! system message, a tool call's arguments and result. Built only when
//! capture is on; every known key is made `***` in the finished JSON, and
//! each text part is cut at [`PART_CAP`] bytes.

use serde_json::{Value, json};

use leash_protocol::{AssistantContent, AssistantMessage, Content, Message};

/// The most of one text part recorded (a long file read is cut).
pub const PART_CAP: usize = 16 * 1024;

/// `text` cut at [`PART_CAP`] bytes, on a character boundary, marked.
fn capped(text: &str) -> String {
    if text.len() <= PART_CAP {
        return text.to_owned();
    }
    let mut end = PART_CAP;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}… [{} bytes not recorded]",
        &text[..end],
        text.len() - end
    )
}

/// The parts of user or tool content: text, and an attachment named by
/// its digest (its bytes are never recorded).
fn content_parts(content: &[Content]) -> Vec<Value> {
    content
        .iter()
        .map(|part| match part {
            Content::Text { text } => json!({"type": "text", "content": capped(text)}),
            Content::Attachment(attachment) => json!({
                "type": "attachment",
                "name": attachment.name,
                "sha256": attachment.sha256,
                "size": attachment.size,
            }),
        })
        .collect()
}

/// The text of tool content, joined.
fn content_text(content: &[Content]) -> String {
    content
        .iter()
        .filter_map(|part| match part {
            Content::Text { text } => Some(text.as_str()),
            Content::Attachment(_) => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A reply's parts: text, reasoning and tool calls.
fn reply_parts(reply: &AssistantMessage) -> Vec<Value> {
    reply
        .content
        .iter()
        .map(|block| match block {
            AssistantContent::Text { text } => json!({"type": "text", "content": capped(text)}),
            AssistantContent::Thinking { thinking, .. } => {
                json!({"type": "reasoning", "content": capped(thinking)})
            }
            AssistantContent::ToolCall(call) => json!({
                "type": "tool_call",
                "id": call.id,
                "name": call.name,
                "arguments": call.arguments,
            }),
        })
        .collect()
}

/// A message of the conversation as the conventions' `ChatMessage`; none
/// for a message the model is not sent.
pub fn chat_message(message: &Message) -> Option<Value> {
    Some(match message {
        Message::User(user) => json!({"role": "user", "parts": content_parts(&user.content)}),
        Message::Assistant(reply) => json!({"role": "assistant", "parts": reply_parts(reply)}),
        Message::ToolResult(result) => json!({
            "role": "tool",
            "parts": [{
                "type": "tool_call_response",
                "id": result.tool_call_id,
                "response": capped(&content_text(&result.content)),
            }],
        }),
        _ => return None,
    })
}

/// `gen_ai.output.messages` of a reply that finished for `reason`.
pub fn output_messages(reply: &AssistantMessage, reason: &str) -> Value {
    json!([{"role": "assistant", "parts": reply_parts(reply), "finish_reason": reason}])
}

/// `gen_ai.system_instructions` of a system message.
pub fn system_instructions(system: &str) -> Value {
    json!([{"type": "text", "content": capped(system)}])
}

/// A tool result's text, for `gen_ai.tool.call.result`.
pub fn tool_result(content: &[Content]) -> String {
    capped(&content_text(content))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_part_is_cut_on_a_character_boundary() {
        let text = "é".repeat(PART_CAP);
        let cut = capped(&text);
        assert!(cut.len() < PART_CAP + 64);
        assert!(cut.ends_with("bytes not recorded]"));
        assert_eq!(capped("short"), "short");
    }

    #[test]
    fn a_tool_result_is_a_tool_call_response() {
        let message = Message::ToolResult(leash_protocol::ToolResultMessage {
            tool_call_id: "c1".to_owned(),
            tool_name: "read_file".to_owned(),
            content: vec![Content::text("body")],
            details: Value::Null,
            is_error: false,
            duration_ms: None,
            usage: None,
            timestamp: 0,
        });
        assert_eq!(
            chat_message(&message).unwrap(),
            json!({"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "body"}]})
        );
    }
}
