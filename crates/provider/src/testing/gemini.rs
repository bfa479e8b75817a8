//! Builders for a streamed Gemini reply in the documented wire format:
//! `data: {GenerateContentResponse}` lines (`alt=sse`), no end event —
//! the last chunk carries the `finishReason` and the `usageMetadata`.

use serde_json::{Value, json};

/// One chunk holding `parts` of the model's content, with `finish` when
/// given.
pub fn chunk(parts: Value, finish: Option<&str>) -> Value {
    let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
    if let Some(reason) = finish {
        candidate["finishReason"] = json!(reason);
    }
    json!({"candidates": [candidate], "modelVersion": "gemini-test", "responseId": "resp-1"})
}

/// A chunk of text.
pub fn text(text: &str) -> Value {
    chunk(json!([{"text": text}]), None)
}

/// A chunk of a thought summary with its signature.
pub fn thought(text: &str, signature: &str) -> Value {
    chunk(
        json!([{"text": text, "thought": true, "thoughtSignature": signature}]),
        None,
    )
}

/// A chunk of one function call (no id, as the Gemini API sends it) with
/// `signature` on its part when given.
pub fn call(name: &str, args: Value, signature: Option<&str>) -> Value {
    let mut part = json!({"functionCall": {"name": name, "args": args}});
    if let Some(signature) = signature {
        part["thoughtSignature"] = json!(signature);
    }
    chunk(json!([part]), None)
}

/// The last chunk: `reason` and the usage (`prompt` includes `cached`).
pub fn finish(reason: &str, prompt: u64, cached: u64, output: u64, thoughts: u64) -> Value {
    let mut last = chunk(json!([{"text": ""}]), Some(reason));
    let mut usage = json!({"promptTokenCount": prompt, "candidatesTokenCount": output,
                           "totalTokenCount": prompt + output + thoughts});
    if cached > 0 {
        usage["cachedContentTokenCount"] = json!(cached);
    }
    if thoughts > 0 {
        usage["thoughtsTokenCount"] = json!(thoughts);
    }
    last["usageMetadata"] = usage;
    last
}

/// The SSE body of `chunks`, each a `data:` line, as the API frames them
/// (`\r\n\r\n` between events).
pub fn body(chunks: &[Value]) -> String {
    chunks
        .iter()
        .map(|chunk| format!("data: {chunk}\r\n\r\n"))
        .collect()
}

/// A whole text reply in `deltas`, ending with `STOP`.
pub fn text_reply(deltas: &[&str]) -> String {
    let mut chunks: Vec<Value> = deltas.iter().map(|delta| text(delta)).collect();
    chunks.push(finish("STOP", 50, 0, 10, 0));
    body(&chunks)
}

/// The API's error object, as an HTTP error's body.
pub fn error_json(code: u16, message: &str, status: &str) -> Value {
    json!({"error": {"code": code, "message": message, "status": status}})
}
