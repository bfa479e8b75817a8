//! The Gemini stream decoder: each SSE `data:` payload is a whole
//! `GenerateContentResponse` chunk (`decode/wire.rs`); its parts become
//! [`StreamEvent`]s as they arrive, its `usageMetadata` (cumulative) the
//! usage, and its `finishReason` how the reply ended — known for sure
//! only once the body ends, since Gemini sends no end event. Pure, no I/O.

mod wire;

use std::sync::atomic::{AtomicU64, Ordering};

use crate::driver::{Flow, WireDecoder, broken_body, cut_off, provider_error, unreadable_event};
use crate::{http, sse};
use leash_protocol::{StopReason, StreamEvent, Usage};
use wire::{Chunk, Part, UsageMetadata};

/// The state of one streamed reply.
#[derive(Debug, Default)]
pub struct Decoder {
    /// The calls opened so far (their handles are 0, 1, ...).
    calls: usize,
    /// The last `finishReason`, once one came.
    finish: Option<String>,
    /// Its `finishMessage`, when the API gave one.
    finish_message: Option<String>,
    /// The latest (cumulative) token counts.
    usage: Option<UsageMetadata>,
}

impl WireDecoder for Decoder {
    fn decode_event(&mut self, _event: &str, data: &str, out: &mut Vec<StreamEvent>) -> Flow {
        let chunk: Chunk = match serde_json::from_str(data) {
            Ok(chunk) => chunk,
            Err(err) => {
                out.push(unreadable_event(&err, data));
                return Flow::End;
            }
        };
        if let Some(error) = chunk.error {
            let message = error.message.unwrap_or_default();
            let status = error.status.map(|status| format!(" ({status})"));
            out.push(provider_error(&http::snippet(&format!(
                "{message}{}",
                status.unwrap_or_default()
            ))));
            return Flow::End;
        }
        if let Some(reason) = chunk.prompt_feedback.and_then(|f| f.block_reason) {
            out.push(StreamEvent::Error(format!(
                "Gemini blocked the prompt (blockReason: {})",
                http::snippet(&reason)
            )));
            return Flow::End;
        }
        if let Some(usage) = chunk.usage_metadata {
            self.usage = Some(usage);
        }
        for candidate in chunk.candidates.into_iter().take(1) {
            let parts = candidate.content.map(|c| c.parts).unwrap_or_default();
            for part in parts {
                self.part(part, out);
            }
            if let Some(reason) = candidate.finish_reason {
                self.finish = Some(reason);
                self.finish_message = candidate.finish_message;
            }
        }
        Flow::Continue
    }

    fn body_failed(&mut self, error: &sse::SseError, out: &mut Vec<StreamEvent>) {
        match self.finish {
            // The ending came; only what followed it was lost.
            Some(_) => self.end(out),
            None => out.push(broken_body(error)),
        }
    }

    fn body_ended(&mut self, out: &mut Vec<StreamEvent>) {
        match self.finish {
            Some(_) => self.end(out),
            None => out.push(cut_off("no finishReason")),
        }
    }
}

impl Decoder {
    fn part(&mut self, part: Part, out: &mut Vec<StreamEvent>) {
        // The signature belongs to this part: a thinking block right before
        // it carries it, and the request puts it back on the same part.
        if let Some(signature) = part.thought_signature.filter(|s| !s.is_empty()) {
            if part.thought {
                out.push(StreamEvent::Thinking(part.text.clone().unwrap_or_default()));
                out.push(StreamEvent::ThinkingSignature(signature));
                return;
            }
            out.push(StreamEvent::Thinking(String::new()));
            out.push(StreamEvent::ThinkingSignature(signature));
        }
        if let Some(call) = part.function_call {
            let key = self.calls;
            self.calls += 1;
            let id = call
                .id
                .filter(|id| !id.is_empty())
                .unwrap_or_else(new_call_id);
            let arguments = call.args.unwrap_or_else(|| serde_json::json!({}));
            out.push(StreamEvent::ToolCallStart {
                key,
                id,
                name: call.name,
            });
            out.push(StreamEvent::ToolCallArgs {
                key,
                fragment: arguments.to_string(),
            });
            return;
        }
        match part.text {
            Some(text) if !text.is_empty() && part.thought => {
                out.push(StreamEvent::Thinking(text));
            }
            Some(text) if !text.is_empty() => out.push(StreamEvent::Text(text)),
            _ => {}
        }
    }

    /// The usage, then how the reply ended.
    fn end(&mut self, out: &mut Vec<StreamEvent>) {
        if let Some(usage) = self.usage {
            out.push(StreamEvent::Usage(usage_of(usage)));
        }
        let reason = self.finish.as_deref().unwrap_or_default();
        out.push(match ending(reason, self.calls > 0) {
            Ok(stop) => StreamEvent::Done(stop),
            Err(why) => {
                let detail = self
                    .finish_message
                    .as_deref()
                    .map(|message| format!(": {}", http::snippet(message)))
                    .unwrap_or_default();
                StreamEvent::Error(format!(
                    "{why} (finishReason: {}){detail}",
                    http::snippet(reason)
                ))
            }
        });
    }
}

/// A `finishReason` as the exit table reads it: `STOP` a whole reply (or
/// a turn of tool calls), `MAX_TOKENS` a cut one; the safety and policy
/// endings, and a function call the model garbled, are errors.
fn ending(reason: &str, calls: bool) -> Result<StopReason, &'static str> {
    match reason {
        "MAX_TOKENS" => Ok(StopReason::Length),
        "STOP" | "FINISH_REASON_UNSPECIFIED" | "" => Ok(match calls {
            true => StopReason::ToolUse,
            false => StopReason::Stop,
        }),
        "SAFETY"
        | "RECITATION"
        | "LANGUAGE"
        | "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION" => Err("Gemini stopped the reply"),
        "MALFORMED_FUNCTION_CALL" | "UNEXPECTED_TOOL_CALL" | "TOO_MANY_TOOL_CALLS" => {
            Err("Gemini could not make the model's tool call")
        }
        _ => Err("the reply ended for a reason leash does not know"),
    }
}

/// Gemini's counts as leash's: `input` the prompt less its cached part
/// (and the tool-use prompt, which is input too), `output` the reply and
/// the thoughts, both billed as output.
fn usage_of(wire: UsageMetadata) -> Usage {
    let cached = wire.cached_content_token_count.min(wire.prompt_token_count);
    let input = (wire.prompt_token_count - cached).saturating_add(wire.tool_use_prompt_token_count);
    let output = wire
        .candidates_token_count
        .saturating_add(wire.thoughts_token_count);
    Usage {
        input,
        output,
        cache_read: cached,
        cache_write: 0,
        total_tokens: input.saturating_add(output).saturating_add(cached),
        cost: None,
    }
}

/// An id for a call the API sent without one (the Gemini API often does):
/// unique within the process and, by the clock, across the runs a
/// `--resume` chain joins.
fn new_call_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or_default();
    format!("{MADE_UP}{nanos:x}_{n}")
}

/// How the id of a call leash named itself starts: the request sends such
/// an id back to no one (`functionResponse` gets an `id` only when the
/// model gave the call one).
pub(super) const MADE_UP: &str = "leash_call_";

#[cfg(test)]
mod tests;
