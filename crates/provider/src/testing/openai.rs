//! Builders for a streamed Chat Completions reply in the documented wire
//! format: `data: {chunk}` lines of `chat.completion.chunk` objects, then
//! `data: [DONE]`, and the API's error object.

use serde_json::{Value, json};

/// The payload of the last `data:` line of a reply.
pub const DONE: &str = "[DONE]";

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

/// A delta of tool call `index`: its id and name when given (servers send
/// them on the first delta only, some on none), and a fragment of its
/// argument JSON.
pub fn call_delta(index: usize, id: Option<&str>, name: Option<&str>, arguments: &str) -> Value {
    let mut function = json!({"arguments": arguments});
    if let Some(name) = name {
        function["name"] = json!(name);
    }
    let mut call = json!({"index": index, "function": function});
    if let Some(id) = id {
        call["id"] = json!(id);
        call["type"] = json!("function");
    }
    delta(json!({"tool_calls": [call]}))
}

/// The first delta of tool call `index`: its id and name, no arguments yet.
pub fn call_start(index: usize, id: &str, name: &str) -> Value {
    call_delta(index, Some(id), Some(name), "")
}

/// A fragment of the argument JSON of tool call `index`.
pub fn call_args(index: usize, fragment: &str) -> Value {
    call_delta(index, None, None, fragment)
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

/// The SSE body of `payloads` as they are, each as a `data:` line (for
/// payloads that are not chunks: `[DONE]`, broken JSON).
pub fn data_body<P: std::fmt::Display>(payloads: &[P]) -> String {
    payloads
        .iter()
        .map(|payload| format!("data: {payload}\n\n"))
        .collect()
}

/// The SSE body of `chunks`, each as a `data:` line, then `data: [DONE]`
/// when `done`.
pub fn body(chunks: &[Value], done: bool) -> String {
    let mut out = data_body(chunks);
    if done {
        out.push_str(&data_body(&[DONE]));
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

/// The API's error object, as an HTTP error's body.
pub fn error_json(message: &str) -> Value {
    json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}})
}
