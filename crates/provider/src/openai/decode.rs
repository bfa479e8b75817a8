//! The Chat Completions stream decoder: one SSE `data` payload at a time
//! in, [`StreamEvent`]s out; pure, no I/O.

use serde::Deserialize;
use serde::de::IgnoredAny;

use crate::driver::{Flow, WireDecoder, broken_body, cut_off, provider_error, unreadable_event};
use crate::{NO_STOP_REASON, http, sse};
use leash_protocol::StreamEvent;
use leash_protocol::{StopReason, Usage};

/// One streamed chunk (`chat.completion.chunk`), read leniently: compatible
/// servers leave out or null most fields.
#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    /// Any non-null `error` ends the stream; its text is read by
    /// [`http::provider_error_message`], which knows the variants.
    #[serde(default)]
    error: Option<IgnoredAny>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    /// DeepSeek, llama.cpp.
    #[serde(default)]
    reasoning_content: Option<LenientText>,
    /// OpenRouter, Ollama, newer vLLM.
    #[serde(default)]
    reasoning: Option<LenientText>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptTokensDetails>,
}

#[derive(Debug, Deserialize)]
struct PromptTokensDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// A field that counts only when it is a string (some servers put objects
/// where others put text).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum LenientText {
    Text(String),
    Other(IgnoredAny),
}

impl LenientText {
    fn text(&self) -> Option<&str> {
        match self {
            LenientText::Text(text) if !text.is_empty() => Some(text),
            _ => None,
        }
    }
}

/// A tool call being assembled from its deltas.
#[derive(Debug)]
struct CallState {
    /// The wire `index`, used as the event key.
    index: usize,
    id: Option<String>,
    name: Option<String>,
    /// `ToolCallStart` was emitted.
    started: bool,
    /// Argument fragments that came before the name (emitted after the start).
    early_args: String,
}

/// The decoder state machine: fed one SSE payload at a time, it produces
/// the events of that payload and says when the stream is over.
#[derive(Debug, Default)]
pub struct Decoder {
    calls: Vec<CallState>,
    /// The last `finish_reason` (mapped); the reply is complete once set.
    finish: Option<StopReason>,
}

impl WireDecoder for Decoder {
    fn decode_event(&mut self, event: &str, data: &str, out: &mut Vec<StreamEvent>) -> Flow {
        let data = data.trim();
        if event == "error" {
            out.push(mid_stream_error(data));
            return Flow::End;
        }
        if data.is_empty() {
            return Flow::Continue;
        }
        if data == "[DONE]" {
            return self.done_marker(out);
        }
        let chunk: Chunk = match serde_json::from_str(data) {
            Ok(chunk) => chunk,
            Err(err) => {
                out.push(unreadable_event(&err, data));
                return Flow::End;
            }
        };
        if chunk.error.is_some() {
            out.push(mid_stream_error(data));
            return Flow::End;
        }
        for choice in chunk.choices.into_iter().flatten() {
            if let Some(delta) = choice.delta {
                self.delta(delta, out);
            }
            if let Some(reason) = choice.finish_reason.as_deref() {
                match finish_reason(reason) {
                    Some(stop) => self.finish = Some(stop),
                    None => {
                        out.push(StreamEvent::Error(format!(
                            "the provider's content filter stopped the reply (finish_reason: {reason})"
                        )));
                        return Flow::End;
                    }
                }
            }
        }
        if let Some(usage) = chunk.usage.and_then(usage) {
            out.push(StreamEvent::Usage(usage));
        }
        Flow::Continue
    }

    /// The body could not be read further. After a finish reason the reply
    /// is whole and only the usage may be missing, so that still counts.
    fn body_failed(&mut self, err: &sse::SseError, out: &mut Vec<StreamEvent>) {
        match self.finish {
            Some(_) => self.complete(out),
            None => out.push(broken_body(err)),
        }
    }

    /// The body ended. Complete when a finish reason came (`[DONE]` may be
    /// missing); otherwise the reply was cut off.
    fn body_ended(&mut self, out: &mut Vec<StreamEvent>) {
        match self.finish {
            Some(_) => self.complete(out),
            None => out.push(cut_off("no finish_reason, no [DONE]")),
        }
    }
}

impl Decoder {
    /// `[DONE]`: the reply is complete only when a finish reason came
    /// before it; a server that says "done" without saying how the reply
    /// ended (cut off upstream, a proxy that gave up) sent an incomplete one.
    fn done_marker(&mut self, out: &mut Vec<StreamEvent>) -> Flow {
        match self.finish {
            Some(_) => self.complete(out),
            None => out.push(StreamEvent::Error(NO_STOP_REASON.to_string())),
        }
        Flow::End
    }

    /// The reply is whole: calls never named are still reported, then
    /// `Done`.
    fn complete(&mut self, out: &mut Vec<StreamEvent>) {
        self.start_unnamed_calls(out);
        out.push(StreamEvent::Done(self.stop_reason()));
    }

    /// `toolUse` whenever the message holds tool calls (some servers say
    /// `stop` then), unless the output limit cut it.
    fn stop_reason(&self) -> StopReason {
        match self.finish {
            Some(StopReason::Length) => StopReason::Length,
            _ if !self.calls.is_empty() => StopReason::ToolUse,
            _ => StopReason::Stop,
        }
    }

    fn delta(&mut self, delta: Delta, out: &mut Vec<StreamEvent>) {
        let reasoning = delta.reasoning_content.as_ref().and_then(LenientText::text);
        if let Some(thinking) =
            reasoning.or_else(|| delta.reasoning.as_ref().and_then(LenientText::text))
        {
            out.push(StreamEvent::Thinking(thinking.to_string()));
        }
        for text in [delta.content, delta.refusal].into_iter().flatten() {
            if !text.is_empty() {
                out.push(StreamEvent::Text(text));
            }
        }
        for call in delta.tool_calls.into_iter().flatten() {
            self.tool_call(call, out);
        }
    }

    /// A tool-call delta: the id and name come first, argument fragments
    /// after; several calls interleave, told apart by `index`.
    fn tool_call(&mut self, delta: ToolCallDelta, out: &mut Vec<StreamEvent>) {
        let id = delta.id.filter(|id| !id.is_empty());
        let index = delta
            .index
            .unwrap_or_else(|| self.guess_index(id.as_deref()));
        let (name, fragment) = match delta.function {
            Some(function) => (
                function.name.filter(|name| !name.is_empty()),
                function.arguments,
            ),
            None => (None, None),
        };
        let position = match self.calls.iter().position(|call| call.index == index) {
            Some(position) => position,
            None => {
                self.calls.push(CallState {
                    index,
                    id: None,
                    name: None,
                    started: false,
                    early_args: String::new(),
                });
                self.calls.len() - 1
            }
        };
        let Some(call) = self.calls.get_mut(position) else {
            return;
        };
        let fragment = fragment.filter(|fragment| !fragment.is_empty());
        if call.started {
            // Servers that repeat the id or name on every delta: ignored.
            if let Some(fragment) = fragment {
                out.push(StreamEvent::ToolCallArgs {
                    key: index,
                    fragment,
                });
            }
            return;
        }
        if id.is_some() {
            call.id = id;
        }
        if name.is_some() {
            call.name = name;
        }
        if let Some(fragment) = fragment {
            call.early_args.push_str(&fragment);
        }
        if call.name.is_some() {
            start_call(call, out);
        }
    }

    /// Servers that leave out `index` send one call after the other: a new
    /// id opens a new call, anything else continues the last one.
    fn guess_index(&self, id: Option<&str>) -> usize {
        let last = self.calls.last();
        let is_new = match id {
            Some(id) => !self.calls.iter().any(|call| call.id.as_deref() == Some(id)),
            None => last.is_none(),
        };
        match last {
            Some(last) if !is_new => last.index,
            _ => self.unused_index(),
        }
    }

    /// The index after the highest in use, or — when a server sent the
    /// largest index there is — the lowest free one.
    fn unused_index(&self) -> usize {
        let used = |index: usize| self.calls.iter().any(|call| call.index == index);
        let after_highest = self
            .calls
            .iter()
            .map(|call| call.index.saturating_add(1))
            .max()
            .unwrap_or(0);
        if !used(after_highest) {
            return after_highest;
        }
        (0..=self.calls.len())
            .find(|&index| !used(index))
            .unwrap_or(0)
    }

    /// Calls that never got a name are still reported, so the loop answers
    /// them with an error instead of losing them.
    fn start_unnamed_calls(&mut self, out: &mut Vec<StreamEvent>) {
        for call in self.calls.iter_mut().filter(|call| !call.started) {
            start_call(call, out);
        }
    }
}

/// Emits the start of a call and the fragments that came before it. A call
/// without an id gets one from its index.
fn start_call(call: &mut CallState, out: &mut Vec<StreamEvent>) {
    call.started = true;
    out.push(StreamEvent::ToolCallStart {
        key: call.index,
        id: call
            .id
            .clone()
            .unwrap_or_else(|| format!("call_{}", call.index)),
        name: call.name.clone().unwrap_or_default(),
    });
    if !call.early_args.is_empty() {
        out.push(StreamEvent::ToolCallArgs {
            key: call.index,
            fragment: std::mem::take(&mut call.early_args),
        });
    }
}

/// A mid-stream error (an `error` event, or a chunk with an `error`):
/// the provider's message when it has one, else the start of the data.
fn mid_stream_error(data: &str) -> StreamEvent {
    provider_error(&http::provider_error_message(data).unwrap_or_else(|| http::snippet(data)))
}

/// A wire `finish_reason` as a stop reason; `None` for `content_filter`,
/// which ends the reply as an error. Unknown reasons count as `stop`.
fn finish_reason(reason: &str) -> Option<StopReason> {
    match reason {
        "content_filter" => None,
        "length" | "max_tokens" => Some(StopReason::Length),
        "tool_calls" | "function_call" => Some(StopReason::ToolUse),
        _ => Some(StopReason::Stop),
    }
}

/// The usage chunk: cached prompt tokens are reported apart from the rest
/// of the prompt. `None` for an all-zero report (some servers send one per
/// chunk).
fn usage(wire: WireUsage) -> Option<Usage> {
    let prompt = wire.prompt_tokens.unwrap_or(0);
    let output = wire.completion_tokens.unwrap_or(0);
    let cached = wire
        .prompt_tokens_details
        .and_then(|details| details.cached_tokens)
        .unwrap_or(0);
    if prompt == 0 && output == 0 {
        return None;
    }
    Some(
        Usage {
            input: prompt.saturating_sub(cached),
            output,
            cache_read: cached.min(prompt),
            cache_write: 0,
            total_tokens: 0,
            cost: None,
        }
        .with_total(),
    )
}

#[cfg(test)]
#[path = "decode_tests.rs"]
mod tests;
