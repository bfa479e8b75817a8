//! Builders for a streamed Messages API reply in the documented wire
//! format (`event: NAME\ndata: {...}\n\n`), the API's error object, and
//! the documentation's own text reply byte for byte.

use serde_json::{Value, json};

/// One SSE event: its name, and its data with the same `type`.
pub fn event(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// `message_start` with the input usage.
pub fn message_start(input_tokens: u64) -> String {
    event(
        "message_start",
        json!({
            "type": "message_start",
            "message": {
                "id": "msg_test", "type": "message", "role": "assistant", "content": [],
                "model": "claude-test", "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": input_tokens, "output_tokens": 1}
            }
        }),
    )
}

/// A whole text block at `index`, streamed in `deltas`.
pub fn text_block(index: usize, deltas: &[&str]) -> String {
    let mut out = event(
        "content_block_start",
        json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
    );
    for text in deltas {
        out.push_str(&event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}),
        ));
    }
    out.push_str(&content_block_stop(index));
    out
}

/// A whole `tool_use` block at `index`, its input JSON in `fragments`.
pub fn tool_use_block(index: usize, id: &str, name: &str, fragments: &[&str]) -> String {
    let mut out = event(
        "content_block_start",
        json!({
            "type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}
        }),
    );
    for fragment in fragments {
        out.push_str(&event(
            "content_block_delta",
            json!({
                "type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": fragment}
            }),
        ));
    }
    out.push_str(&content_block_stop(index));
    out
}

/// `content_block_stop` for `index`.
pub fn content_block_stop(index: usize) -> String {
    event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    )
}

/// `ping`.
pub fn ping() -> String {
    event("ping", json!({"type": "ping"}))
}

/// `message_delta` with the stop reason and output usage.
pub fn message_delta(stop_reason: &str, output_tokens: u64) -> String {
    event(
        "message_delta",
        json!({
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": null},
            "usage": {"output_tokens": output_tokens}
        }),
    )
}

/// `message_stop`.
pub fn message_stop() -> String {
    event("message_stop", json!({"type": "message_stop"}))
}

/// A mid-stream `error` event.
pub fn error_event(kind: &str, message: &str) -> String {
    event("error", error_json(kind, message))
}

/// The API's error object `{type: "error", error: {type, message}}`.
pub fn error_json(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// A complete text reply ending with `end_turn`.
pub fn text_reply(text: &str) -> String {
    [
        message_start(10),
        text_block(0, &[text]),
        message_delta("end_turn", 5),
        message_stop(),
    ]
    .concat()
}

/// A complete reply of one tool call, `arguments` in one fragment, ending
/// with `tool_use`.
pub fn tool_call_reply(id: &str, name: &str, arguments: &str) -> String {
    [
        message_start(10),
        tool_use_block(0, id, name, &[arguments]),
        message_delta("tool_use", 5),
        message_stop(),
    ]
    .concat()
}

/// A text reply ("Hello"; 25 tokens in, 15 out) byte for byte as the API
/// documents it: its key order, its spacing, a `ping` among the events.
/// Not built, so a decoder test sees exactly what the documentation shows.
pub const DOCUMENTED_TEXT_REPLY: &str = "event: message_start\n\
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
