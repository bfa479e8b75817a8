//! Builders for a streamed ConverseStream reply in the documented wire
//! format: `application/vnd.amazon.eventstream` frames, each with its
//! `:event-type`, `:content-type` and `:message-type` headers and a JSON
//! payload, written by AWS's own `aws-smithy-eventstream`.

use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use serde_json::{Value, json};

/// One event frame.
pub fn event(kind: &str, payload: Value) -> Vec<u8> {
    frame(
        vec![
            header(":event-type", kind),
            header(":content-type", "application/json"),
            header(":message-type", "event"),
        ],
        payload.to_string(),
    )
}

/// One exception frame (`throttlingException`, `validationException`…).
pub fn exception(kind: &str, message: &str) -> Vec<u8> {
    frame(
        vec![
            header(":exception-type", kind),
            header(":content-type", "application/json"),
            header(":message-type", "exception"),
        ],
        json!({"message": message}).to_string(),
    )
}

fn header(name: &'static str, value: &str) -> Header {
    Header::new(name, HeaderValue::String(value.to_owned().into()))
}

fn frame(headers: Vec<Header>, payload: String) -> Vec<u8> {
    let message = Message::new_from_parts(headers, payload.into_bytes());
    let mut out = Vec::new();
    // Only a header name past 255 bytes fails, and none is.
    match write_message_to(&message, &mut out) {
        Ok(()) => out,
        Err(_) => Vec::new(),
    }
}

/// `messageStart` for the assistant.
pub fn start() -> Vec<u8> {
    event("messageStart", json!({"role": "assistant", "p": "abc"}))
}

/// A text delta of block `index`.
pub fn text(index: usize, text: &str) -> Vec<u8> {
    event(
        "contentBlockDelta",
        json!({"contentBlockIndex": index, "delta": {"text": text}, "p": "abc"}),
    )
}

/// A whole tool call as block `index`: its start, its input in
/// `fragments`, its stop.
pub fn tool_use(index: usize, id: &str, name: &str, fragments: &[&str]) -> Vec<u8> {
    let mut out = event(
        "contentBlockStart",
        json!({"contentBlockIndex": index, "start": {"toolUse": {"toolUseId": id, "name": name}}, "p": "abc"}),
    );
    for fragment in fragments {
        out.extend(event(
            "contentBlockDelta",
            json!({"contentBlockIndex": index, "delta": {"toolUse": {"input": fragment}}, "p": "abc"}),
        ));
    }
    out.extend(stop_block(index));
    out
}

/// `contentBlockStop` of block `index`.
pub fn stop_block(index: usize) -> Vec<u8> {
    event(
        "contentBlockStop",
        json!({"contentBlockIndex": index, "p": "abc"}),
    )
}

/// `messageStop` with `reason`, then `metadata` with the usage.
pub fn finish(reason: &str, input: u64, output: u64, cache_read: u64) -> Vec<u8> {
    let mut out = event("messageStop", json!({"stopReason": reason, "p": "abc"}));
    out.extend(event(
        "metadata",
        json!({"usage": {"inputTokens": input, "outputTokens": output,
                         "totalTokens": input + output + cache_read,
                         "cacheReadInputTokens": cache_read, "cacheWriteInputTokens": 0},
               "metrics": {"latencyMs": 12}, "p": "abc"}),
    ));
    out
}

/// A whole text reply in `deltas`.
pub fn text_reply(deltas: &[&str]) -> Vec<u8> {
    let mut out = start();
    for delta in deltas {
        out.extend(text(0, delta));
    }
    out.extend(stop_block(0));
    out.extend(finish("end_turn", 50, 10, 0));
    out
}
