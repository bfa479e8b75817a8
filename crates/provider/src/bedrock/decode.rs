//! The ConverseStream decoder: one event-stream frame at a time (its
//! `:event-type` and JSON payload, `frames.rs`) into [`StreamEvent`]s.
//! `messageStop` says how the reply ended and `metadata` (after it) the
//! usage; the reply is whole when the body ends after a `messageStop`.
//! Pure, no I/O.

mod wire;

use std::collections::HashMap;

use serde::de::DeserializeOwned;

use crate::driver::{Flow, WireDecoder, broken_body, cut_off, provider_error, unreadable_event};
use crate::{http, sse};
use leash_protocol::{StopReason, StreamEvent, Usage};
use wire::{BlockDelta, BlockStart, Exception, MessageStop, Metadata};

/// The state of one streamed reply.
#[derive(Debug, Default)]
pub struct Decoder {
    /// Content block index → tool call handle.
    calls: HashMap<usize, usize>,
    /// The `stopReason`, once `messageStop` came.
    stop: Option<String>,
}

fn read<T: DeserializeOwned>(data: &str, out: &mut Vec<StreamEvent>) -> Option<T> {
    match serde_json::from_str(data) {
        Ok(value) => Some(value),
        Err(err) => {
            out.push(unreadable_event(&err, data));
            None
        }
    }
}

impl WireDecoder for Decoder {
    fn decode_event(&mut self, event: &str, data: &str, out: &mut Vec<StreamEvent>) -> Flow {
        if let Some(kind) = event.strip_prefix("exception:") {
            let message = serde_json::from_str::<Exception>(data)
                .ok()
                .and_then(|e| e.message)
                .unwrap_or_else(|| data.to_owned());
            out.push(provider_error(&http::snippet(&format!(
                "{message} ({kind})"
            ))));
            return Flow::End;
        }
        if let Some(code) = event.strip_prefix("error:") {
            out.push(provider_error(&http::snippet(&format!("{data} ({code})"))));
            return Flow::End;
        }
        match event {
            "contentBlockStart" => {
                let Some(start) = read::<BlockStart>(data, out) else {
                    return Flow::End;
                };
                if let Some(tool) = start.start.and_then(|s| s.tool_use) {
                    let key = self.calls.len();
                    self.calls.insert(start.content_block_index, key);
                    out.push(StreamEvent::ToolCallStart {
                        key,
                        id: tool.tool_use_id,
                        name: tool.name,
                    });
                }
            }
            "contentBlockDelta" => {
                let Some(delta) = read::<BlockDelta>(data, out) else {
                    return Flow::End;
                };
                self.delta(delta, out);
            }
            "messageStop" => {
                let Some(stop) = read::<MessageStop>(data, out) else {
                    return Flow::End;
                };
                self.stop = Some(stop.stop_reason.unwrap_or_default());
            }
            "metadata" => {
                let Some(metadata) = read::<Metadata>(data, out) else {
                    return Flow::End;
                };
                if let Some(usage) = metadata.usage {
                    out.push(StreamEvent::Usage(usage_of(usage)));
                }
            }
            // messageStart, contentBlockStop and whatever is newer.
            _ => {}
        }
        Flow::Continue
    }

    fn body_failed(&mut self, error: &sse::SseError, out: &mut Vec<StreamEvent>) {
        match self.stop {
            Some(_) => self.end(out),
            None => out.push(broken_body(error)),
        }
    }

    fn body_ended(&mut self, out: &mut Vec<StreamEvent>) {
        match self.stop {
            Some(_) => self.end(out),
            None => out.push(cut_off("no messageStop")),
        }
    }
}

impl Decoder {
    fn delta(&mut self, delta: BlockDelta, out: &mut Vec<StreamEvent>) {
        let BlockDelta {
            content_block_index,
            delta,
        } = delta;
        if let Some(text) = delta.text.filter(|t| !t.is_empty()) {
            out.push(StreamEvent::Text(text));
        }
        if let Some(tool) = delta.tool_use {
            // A fragment of a block that never opened as a call is dropped.
            if let Some(&key) = self.calls.get(&content_block_index) {
                out.push(StreamEvent::ToolCallArgs {
                    key,
                    fragment: tool.input,
                });
            }
        }
        if let Some(reasoning) = delta.reasoning_content {
            if let Some(text) = reasoning.text {
                out.push(StreamEvent::Thinking(text));
            }
            if let Some(signature) = reasoning.signature {
                out.push(StreamEvent::ThinkingSignature(signature));
            }
            if let Some(data) = reasoning.redacted_content {
                out.push(StreamEvent::RedactedThinking(data));
            }
        }
    }

    fn end(&mut self, out: &mut Vec<StreamEvent>) {
        let reason = self.stop.clone().unwrap_or_default();
        out.push(match reason.as_str() {
            "max_tokens" | "model_context_window_exceeded" => StreamEvent::Done(StopReason::Length),
            "tool_use" => StreamEvent::Done(StopReason::ToolUse),
            "end_turn" | "stop_sequence" => StreamEvent::Done(match self.calls.is_empty() {
                true => StopReason::Stop,
                false => StopReason::ToolUse,
            }),
            "guardrail_intervened" | "content_filtered" => {
                StreamEvent::Error(format!("Bedrock stopped the reply (stopReason: {reason})"))
            }
            other => StreamEvent::Error(format!(
                "the reply ended for a reason leash does not know (stopReason: {})",
                http::snippet(other)
            )),
        });
    }
}

/// Converse's counts as leash's: they already come apart.
fn usage_of(wire: wire::WireUsage) -> Usage {
    let total = wire
        .input_tokens
        .saturating_add(wire.output_tokens)
        .saturating_add(wire.cache_read_input_tokens)
        .saturating_add(wire.cache_write_input_tokens);
    Usage {
        input: wire.input_tokens,
        output: wire.output_tokens,
        cache_read: wire.cache_read_input_tokens,
        cache_write: wire.cache_write_input_tokens,
        total_tokens: total,
        cost: None,
    }
}

#[cfg(test)]
mod tests;
