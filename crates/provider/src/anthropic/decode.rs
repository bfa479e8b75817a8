//! The Messages API stream decoder: one named SSE event in, zero or more
//! [`StreamEvent`]s out; pure, no I/O, no clock.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use crate::driver::{Flow, WireDecoder, broken_body, cut_off, provider_error, unreadable_event};
use crate::{NO_STOP_REASON, sse};
use leash_protocol::StreamEvent;
use leash_protocol::{StopReason, Usage};

/// One SSE event's `data`, by its `type`. Unknown types deserialize to
/// `Unknown` and are skipped, as the API's versioning policy asks.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireEvent {
    MessageStart {
        message: WireMessageStart,
    },
    ContentBlockStart {
        index: usize,
        content_block: WireBlockStart,
    },
    ContentBlockDelta {
        index: usize,
        delta: WireDelta,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        #[serde(default)]
        delta: WireMessageDelta,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: WireError,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Deserialize)]
struct WireMessageStart {
    #[serde(default)]
    usage: Option<WireUsage>,
}

/// Token counts; every field is optional because `message_delta` carries
/// only some of them.
#[derive(Debug, Default, Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlockStart {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
    },
    RedactedThinking {
        #[serde(default)]
        data: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireDelta {
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Default, Deserialize)]
struct WireMessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireError {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

/// An open `tool_use` block.
#[derive(Debug, Default)]
struct OpenToolCall {
    /// Whether any non-empty `partial_json` arrived for it.
    has_fragments: bool,
    /// A non-empty `input` sent whole in `content_block_start` (some
    /// compatible servers do), used when no fragment follows.
    start_input: Option<String>,
}

/// Turns Anthropic's SSE events into [`StreamEvent`]s, one event at a time.
/// Pure: no I/O, no clock, so every wire sequence can be tested directly.
#[derive(Debug, Default)]
pub struct Decoder {
    open_tool_calls: HashMap<usize, OpenToolCall>,
    saw_tool_call: bool,
    usage: Usage,
    stop_reason: Option<String>,
    finished: bool,
}

impl WireDecoder for Decoder {
    /// Feeds one SSE event (`event:` name and `data:` text), appending what
    /// it means to `out`. After [`Flow::End`] further events are ignored.
    fn decode_event(&mut self, name: &str, data: &str, out: &mut Vec<StreamEvent>) -> Flow {
        if self.finished {
            return Flow::End;
        }
        if !is_decoded_event_name(name) {
            return Flow::Continue;
        }
        let event: WireEvent = match serde_json::from_str(data) {
            Ok(event) => event,
            Err(err) => return self.fail(unreadable_event(&err, data), out),
        };
        match event {
            WireEvent::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.update_usage(&usage, out);
                }
            }
            WireEvent::ContentBlockStart {
                index,
                content_block,
            } => self.block_start(index, content_block, out),
            WireEvent::ContentBlockDelta { index, delta } => self.block_delta(index, delta, out),
            WireEvent::ContentBlockStop { index } => self.block_stop(index, out),
            WireEvent::MessageDelta { delta, usage } => {
                if delta.stop_reason.is_some() {
                    self.stop_reason = delta.stop_reason;
                }
                if let Some(usage) = usage {
                    self.update_usage(&usage, out);
                }
            }
            WireEvent::MessageStop => return self.message_stop(out),
            WireEvent::Error { error } => return self.fail(stream_error(&error), out),
            WireEvent::Ping | WireEvent::Unknown => {}
        }
        Flow::Continue
    }

    fn body_failed(&mut self, error: &sse::SseError, out: &mut Vec<StreamEvent>) {
        self.fail(broken_body(error), out);
    }

    /// A stream that ended here was cut off: a finished one ended at its
    /// `message_stop`, and the driver reads no further.
    fn body_ended(&mut self, out: &mut Vec<StreamEvent>) {
        self.fail(cut_off("no message_stop"), out);
    }
}

impl Decoder {
    fn block_start(&mut self, index: usize, block: WireBlockStart, out: &mut Vec<StreamEvent>) {
        match block {
            WireBlockStart::Text { text } if !text.is_empty() => out.push(StreamEvent::Text(text)),
            WireBlockStart::Thinking { thinking } if !thinking.is_empty() => {
                out.push(StreamEvent::Thinking(thinking));
            }
            WireBlockStart::ToolUse { id, name, input } => {
                let start_input = match &input {
                    Value::Object(map) if !map.is_empty() => Some(input.to_string()),
                    _ => None,
                };
                self.saw_tool_call = true;
                self.open_tool_calls.insert(
                    index,
                    OpenToolCall {
                        has_fragments: false,
                        start_input,
                    },
                );
                out.push(StreamEvent::ToolCallStart {
                    key: index,
                    id,
                    name,
                });
            }
            // Encrypted reasoning: nothing to show, but the API wants it
            // back unchanged in the next request of a tool loop.
            WireBlockStart::RedactedThinking { data } if !data.is_empty() => {
                out.push(StreamEvent::RedactedThinking(data));
            }
            // Server tools and whatever comes later: not something leash
            // can show or send back.
            WireBlockStart::Text { .. }
            | WireBlockStart::Thinking { .. }
            | WireBlockStart::RedactedThinking { .. }
            | WireBlockStart::Unknown => {}
        }
    }

    fn block_delta(&mut self, index: usize, delta: WireDelta, out: &mut Vec<StreamEvent>) {
        match delta {
            WireDelta::TextDelta { text } if !text.is_empty() => out.push(StreamEvent::Text(text)),
            WireDelta::ThinkingDelta { thinking } if !thinking.is_empty() => {
                out.push(StreamEvent::Thinking(thinking));
            }
            WireDelta::SignatureDelta { signature } if !signature.is_empty() => {
                out.push(StreamEvent::ThinkingSignature(signature));
            }
            WireDelta::InputJsonDelta { partial_json } if !partial_json.is_empty() => {
                // A fragment for a block that never opened as tool_use has
                // no call to belong to.
                if let Some(call) = self.open_tool_calls.get_mut(&index) {
                    call.has_fragments = true;
                    out.push(StreamEvent::ToolCallArgs {
                        key: index,
                        fragment: partial_json,
                    });
                }
            }
            _ => {}
        }
    }

    fn block_stop(&mut self, index: usize, out: &mut Vec<StreamEvent>) {
        if let Some(call) = self.open_tool_calls.remove(&index) {
            close_tool_call(index, call, out);
        }
    }

    fn message_stop(&mut self, out: &mut Vec<StreamEvent>) -> Flow {
        // `message_stop` without a `message_delta` that said how the reply
        // ended: the server (or a proxy) cut the message short.
        if self.stop_reason.is_none() {
            return self.fail(StreamEvent::Error(NO_STOP_REASON.to_string()), out);
        }
        // A block left open still gets its arguments, in block order.
        let mut open: Vec<_> = self.open_tool_calls.drain().collect();
        open.sort_by_key(|(index, _)| *index);
        for (index, call) in open {
            close_tool_call(index, call, out);
        }
        self.finished = true;
        out.push(stop_event(self.stop_reason.as_deref(), self.saw_tool_call));
        Flow::End
    }

    fn update_usage(&mut self, usage: &WireUsage, out: &mut Vec<StreamEvent>) {
        let fields = [
            (usage.input_tokens, &mut self.usage.input),
            (usage.output_tokens, &mut self.usage.output),
            (usage.cache_read_input_tokens, &mut self.usage.cache_read),
            (
                usage.cache_creation_input_tokens,
                &mut self.usage.cache_write,
            ),
        ];
        for (value, field) in fields {
            if let Some(value) = value {
                *field = value;
            }
        }
        self.usage = self.usage.with_total();
        out.push(StreamEvent::Usage(self.usage));
    }

    /// Ends the stream with `error`.
    fn fail(&mut self, error: StreamEvent, out: &mut Vec<StreamEvent>) -> Flow {
        self.finished = true;
        out.push(error);
        Flow::End
    }
}

/// The SSE event names the decoder reads. `ping` and names the API may add
/// later are skipped without looking at their data; an unnamed event is
/// judged by the `type` inside it.
fn is_decoded_event_name(name: &str) -> bool {
    matches!(
        name,
        "" | "message"
            | "message_start"
            | "content_block_start"
            | "content_block_delta"
            | "content_block_stop"
            | "message_delta"
            | "message_stop"
            | "error"
    )
}

/// A `tool_use` block is complete: a call whose input never came in
/// fragments has the arguments of its start, or `{}`.
fn close_tool_call(index: usize, call: OpenToolCall, out: &mut Vec<StreamEvent>) {
    if !call.has_fragments {
        out.push(StreamEvent::ToolCallArgs {
            key: index,
            fragment: call.start_input.unwrap_or_else(|| "{}".to_string()),
        });
    }
}

/// The API's `stop_reason` in ARCHITECTURE.md §1.1 terms, as the stream's last event.
fn stop_event(stop_reason: Option<&str>, saw_tool_call: bool) -> StreamEvent {
    match stop_reason {
        Some("end_turn" | "stop_sequence") => StreamEvent::Done(StopReason::Stop),
        Some("tool_use") => StreamEvent::Done(StopReason::ToolUse),
        Some("max_tokens" | "model_context_window_exceeded") => {
            StreamEvent::Done(StopReason::Length)
        }
        Some("refusal") => {
            StreamEvent::Error("the model refused to answer (stop_reason: refusal)".to_string())
        }
        // Newer than leash: what the content says is the best guess. (A
        // missing one never gets here: that reply is incomplete.)
        _ if saw_tool_call => StreamEvent::Done(StopReason::ToolUse),
        _ => StreamEvent::Done(StopReason::Stop),
    }
}

/// `{type: "error", error: {type, message}}` in the words every wire
/// uses for a mid-stream error, the error's type after the message.
fn stream_error(error: &WireError) -> StreamEvent {
    let message = if error.message.is_empty() {
        "no message"
    } else {
        error.message.as_str()
    };
    if error.kind.is_empty() {
        provider_error(message)
    } else {
        provider_error(&format!("{message} ({})", error.kind))
    }
}

#[cfg(test)]
#[path = "decode_tests.rs"]
mod tests;
