//! Test helpers for the OpenAI Chat Completions API: builders for the
//! `data: {chunk}` lines of a streamed reply in the documented wire format,
//! canned error responses, and the request log of a mock server.
//!
//! Test code only; it must never talk to the real API.

#![allow(dead_code)]

use serde_json::{Value, json};
use wiremock::ResponseTemplate;

#[allow(unused_imports)] // not every test binary uses both
pub use super::{request_bodies, sse};

/// One `chat.completion.chunk` holding `delta` for choice 0.
pub fn delta(delta: Value) -> Value {
    json!({
        "id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": null}]
    })
}

/// The first chunk of a reply: the role, empty content.
pub fn role() -> Value {
    delta(json!({"role": "assistant", "content": ""}))
}

/// A text delta.
pub fn text(text: &str) -> Value {
    delta(json!({"content": text}))
}

/// The first delta of tool call `index`: its id and name, no arguments yet.
pub fn call_start(index: usize, id: &str, name: &str) -> Value {
    delta(json!({"tool_calls": [{
        "index": index, "id": id, "type": "function",
        "function": {"name": name, "arguments": ""}
    }]}))
}

/// A fragment of the argument JSON of tool call `index`.
pub fn call_args(index: usize, fragment: &str) -> Value {
    delta(json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}))
}

/// The chunk with the finish reason and an empty delta.
pub fn finish(reason: &str) -> Value {
    json!({
        "id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
        "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]
    })
}

/// The usage chunk `stream_options.include_usage` asks for (empty `choices`).
pub fn usage(prompt: u64, completion: u64) -> Value {
    json!({
        "id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    })
}

/// The SSE body of `chunks`, each as a `data:` line, then `data: [DONE]`
/// when `done`.
pub fn body(chunks: &[Value], done: bool) -> String {
    let mut out: String = chunks
        .iter()
        .map(|chunk| format!("data: {chunk}\n\n"))
        .collect();
    if done {
        out.push_str("data: [DONE]\n\n");
    }
    out
}

/// A complete text reply in `deltas`, with usage and `[DONE]`.
pub fn text_reply(deltas: &[&str]) -> String {
    let mut chunks = vec![role()];
    chunks.extend(deltas.iter().map(|delta| text(delta)));
    chunks.push(finish("stop"));
    chunks.push(usage(50, 10));
    body(&chunks, true)
}

/// An HTTP error with the API's error JSON.
pub fn http_error(status: u16, message: &str) -> ResponseTemplate {
    let error = json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}});
    ResponseTemplate::new(status).set_body_raw(error.to_string().into_bytes(), "application/json")
}
