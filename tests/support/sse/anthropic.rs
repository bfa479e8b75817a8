//! Test helpers for the Anthropic Messages API: SSE event builders that
//! write bodies in the documented wire format (`event: NAME\ndata: {...}\n\n`),
//! canned responses, and the request log of a mock server.
//!
//! Test code only; it must never talk to the real API.

#![allow(dead_code)]

use serde_json::{Value, json};
use wiremock::ResponseTemplate;

#[allow(unused_imports)] // not every test binary uses both
pub use super::{request_bodies, sse};

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

/// An HTTP error with the API's error JSON.
pub fn http_error(status: u16, kind: &str, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_raw(
        error_json(kind, message).to_string().into_bytes(),
        "application/json",
    )
}
