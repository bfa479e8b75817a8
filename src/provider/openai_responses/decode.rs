//! The Responses API stream decoder: one SSE event in, zero or more
//! [`StreamEvent`]s out; pure, no I/O. Events are told apart by their
//! `type` (the SSE `event:` name when a server leaves `type` out); types
//! it does not know are skipped, as the API's versioning asks.
//!
//! Output items are keyed by `output_index` (a tool call's key in the
//! [`StreamEvent`]s is its `output_index`), in a map, so a hostile server's
//! many items cost a logarithm each, not a scan.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::protocol::StreamEvent;
use crate::protocol::{StopReason, Usage};
use crate::provider::driver::{
    Flow, WireDecoder, broken_body, cut_off, provider_error, unreadable_event,
};
use crate::provider::{INCOMPLETE, NO_STOP_REASON, http, sse};

/// One event's `data`, read leniently: each event type uses a few of
/// these fields; the rest (`sequence_number`, `item_id`, `logprobs`, ...)
/// are not needed.
#[derive(Debug, Deserialize)]
struct WireEvent<'a> {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    output_index: Option<usize>,
    #[serde(default)]
    summary_index: Option<usize>,
    #[serde(default)]
    delta: Option<String>,
    /// `response.function_call_arguments.done`: the whole argument JSON.
    #[serde(default)]
    arguments: Option<String>,
    /// `response.output_item.added` / `.done`: the item, kept raw so a
    /// reasoning item goes back byte for byte.
    #[serde(default, borrow)]
    item: Option<&'a RawValue>,
    /// The terminal events: the response as it ended.
    #[serde(default)]
    response: Option<WireResponse>,
    /// The `error` event's text.
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    code: Option<String>,
    /// A proxy's `{"error": {...}}` in place of an event: ends the stream.
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
}

/// One output item (`output_item.added` / `.done`).
#[derive(Debug, Default, Deserialize)]
struct WireItem {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    /// A `function_call`'s id, which its `function_call_output` answers.
    #[serde(default)]
    call_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
    /// A `reasoning` item's encrypted chain (with
    /// `include: ["reasoning.encrypted_content"]`).
    #[serde(default)]
    encrypted_content: Option<String>,
    /// A `reasoning` item's summary parts.
    #[serde(default)]
    summary: Option<Vec<WirePart>>,
    /// A `message` item's content parts.
    #[serde(default)]
    content: Option<Vec<WirePart>>,
}

/// A summary part (`summary_text`) or a content part (`output_text`,
/// `refusal`).
#[derive(Debug, Deserialize)]
struct WirePart {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
}

/// The response object of a terminal event.
#[derive(Debug, Default, Deserialize)]
struct WireResponse {
    /// `completed`, `failed`, `incomplete`, `cancelled`, …: what the
    /// response itself says, which a terminal event's name may not.
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    error: Option<WireError>,
}

#[derive(Debug, Deserialize)]
struct IncompleteDetails {
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireError {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// `usage` of a terminal event. `output_tokens` already counts the
/// reasoning tokens (`output_tokens_details.reasoning_tokens`), which
/// [`Usage`] has no field of their own for: they are in `output`.
#[derive(Debug, Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    input_tokens_details: Option<InputTokensDetails>,
}

#[derive(Debug, Deserialize)]
struct InputTokensDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// What the decoder remembers of one output item.
#[derive(Debug, Default)]
struct ItemState {
    kind: ItemKind,
    /// A function call: `ToolCallStart` was emitted.
    started: bool,
    /// Deltas (text, summary or arguments) arrived for it, so the
    /// item's `.done` must not repeat them.
    streamed: bool,
    /// The summary part the last reasoning delta belonged to.
    summary_index: Option<usize>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum ItemKind {
    #[default]
    Other,
    Message,
    Reasoning,
    FunctionCall,
}

impl ItemKind {
    fn of(kind: Option<&str>) -> Self {
        match kind {
            Some("message") => ItemKind::Message,
            Some("reasoning") => ItemKind::Reasoning,
            Some("function_call") => ItemKind::FunctionCall,
            _ => ItemKind::Other,
        }
    }
}

/// The decoder state machine: fed one SSE event at a time, it produces
/// the events of that one and says when the stream is over.
#[derive(Debug, Default)]
pub struct Decoder {
    items: BTreeMap<usize, ItemState>,
    /// A tool call was started: the reply ends in `toolUse`.
    calls: bool,
    /// Text came in deltas that named no `output_index`: a finished
    /// message must not repeat it.
    unplaced_text: bool,
}

impl WireDecoder for Decoder {
    fn decode_event(&mut self, event: &str, data: &str, out: &mut Vec<StreamEvent>) -> Flow {
        let data = data.trim();
        if data.is_empty() {
            return Flow::Continue;
        }
        if data == "[DONE]" {
            // Not part of this API; a proxy's end marker before any
            // terminal event ends an incomplete reply.
            out.push(StreamEvent::Error(NO_STOP_REASON.to_owned()));
            return Flow::End;
        }
        let wire: WireEvent<'_> = match serde_json::from_str(data) {
            Ok(wire) => wire,
            Err(err) => {
                out.push(unreadable_event(&err, data));
                return Flow::End;
            }
        };
        if wire.error.is_some() {
            out.push(mid_stream_error(None, None, data));
            return Flow::End;
        }
        let kind = wire.kind.as_deref().unwrap_or(event);
        match kind {
            "response.output_text.delta" | "response.refusal.delta" => {
                self.text_delta(&wire, out);
                Flow::Continue
            }
            "response.reasoning_summary_text.delta" => {
                self.summary_delta(&wire, out);
                Flow::Continue
            }
            "response.output_item.added" => self.item_added(&wire, out),
            "response.function_call_arguments.delta" => {
                self.arguments_delta(&wire, out);
                Flow::Continue
            }
            "response.function_call_arguments.done" => {
                self.arguments_done(&wire, out);
                Flow::Continue
            }
            "response.output_item.done" => self.item_done(&wire, out),
            "response.completed" | "response.incomplete" | "response.failed" => {
                self.terminal(kind, wire.response.as_ref(), data, out);
                Flow::End
            }
            "error" => {
                out.push(mid_stream_error(
                    wire.message.as_deref(),
                    wire.code.as_deref(),
                    data,
                ));
                Flow::End
            }
            _ => Flow::Continue,
        }
    }

    fn body_failed(&mut self, error: &sse::SseError, out: &mut Vec<StreamEvent>) {
        out.push(broken_body(error));
    }

    fn body_ended(&mut self, out: &mut Vec<StreamEvent>) {
        out.push(cut_off(
            "no response.completed, response.incomplete or response.failed",
        ));
    }
}

impl Decoder {
    /// A terminal event, judged by the response's own `status` first and
    /// by the event's name where the status says nothing else: a
    /// `response.completed` whose response `failed` is the server's error,
    /// not an answer, and one that is `incomplete` is cut like
    /// `response.incomplete`.
    fn terminal(
        &self,
        kind: &str,
        response: Option<&WireResponse>,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) {
        let status = response.and_then(|r| r.status.as_deref());
        if kind == "response.failed" || status == Some("failed") {
            let error = response.and_then(|r| r.error.as_ref());
            let message = error.and_then(|e| e.message.as_deref());
            let code = error.and_then(|e| e.code.as_deref());
            out.push(mid_stream_error(message, code, data));
            return;
        }
        self.usage(response, out);
        let incomplete_event = kind == "response.incomplete"
            && matches!(status, None | Some("incomplete" | "completed"));
        if incomplete_event || status == Some("incomplete") {
            out.push(incomplete(response));
            return;
        }
        match status {
            None | Some("completed") => out.push(StreamEvent::Done(self.stop_reason())),
            Some(other) => out.push(StreamEvent::Error(format!(
                "the response ended with status '{}' ({kind}); {INCOMPLETE}",
                http::snippet(other)
            ))),
        }
    }

    /// `toolUse` whenever a function call came, `stop` otherwise.
    fn stop_reason(&self) -> StopReason {
        match self.calls {
            true => StopReason::ToolUse,
            false => StopReason::Stop,
        }
    }

    fn item(&mut self, index: Option<usize>) -> Option<&mut ItemState> {
        index.map(|index| self.items.entry(index).or_default())
    }

    fn text_delta(&mut self, wire: &WireEvent<'_>, out: &mut Vec<StreamEvent>) {
        let Some(delta) = wire.delta.as_ref().filter(|delta| !delta.is_empty()) else {
            return;
        };
        match self.item(wire.output_index) {
            Some(item) => item.streamed = true,
            None => self.unplaced_text = true,
        }
        out.push(StreamEvent::Text(delta.clone()));
    }

    /// Reasoning summary text, as thinking; a new summary part of the
    /// same item is set off by a blank line.
    fn summary_delta(&mut self, wire: &WireEvent<'_>, out: &mut Vec<StreamEvent>) {
        let Some(delta) = wire.delta.as_ref().filter(|delta| !delta.is_empty()) else {
            return;
        };
        if let Some(item) = self.item(wire.output_index) {
            item.kind = ItemKind::Reasoning;
            let part = wire.summary_index;
            if item.streamed && part.is_some() && item.summary_index != part {
                out.push(StreamEvent::Thinking("\n\n".to_owned()));
            }
            item.streamed = true;
            item.summary_index = part;
        }
        out.push(StreamEvent::Thinking(delta.clone()));
    }

    fn item_added(&mut self, wire: &WireEvent<'_>, out: &mut Vec<StreamEvent>) -> Flow {
        let item = match parse_item(wire.item) {
            Ok(item) => item,
            Err(error) => {
                out.push(error);
                return Flow::End;
            }
        };
        let kind = ItemKind::of(item.kind.as_deref());
        let Some(index) = wire.output_index else {
            return Flow::Continue;
        };
        let state = self.items.entry(index).or_default();
        state.kind = kind;
        if kind == ItemKind::FunctionCall {
            self.start_call(index, &item, out);
        }
        Flow::Continue
    }

    /// Opens the call at `index` once; arguments already in the item
    /// (a server that sends them whole) follow at once.
    fn start_call(&mut self, index: usize, item: &WireItem, out: &mut Vec<StreamEvent>) {
        let state = self.items.entry(index).or_default();
        if state.started {
            return;
        }
        state.started = true;
        state.kind = ItemKind::FunctionCall;
        self.calls = true;
        let id = item
            .call_id
            .clone()
            .filter(|id| !id.is_empty())
            .unwrap_or_else(|| format!("call_{index}"));
        out.push(StreamEvent::ToolCallStart {
            key: index,
            id,
            name: item.name.clone().unwrap_or_default(),
        });
        if let Some(arguments) = item.arguments.as_ref().filter(|a| !a.is_empty()) {
            state.streamed = true;
            out.push(StreamEvent::ToolCallArgs {
                key: index,
                fragment: arguments.clone(),
            });
        }
    }

    fn arguments_delta(&mut self, wire: &WireEvent<'_>, out: &mut Vec<StreamEvent>) {
        let (Some(index), Some(delta)) = (wire.output_index, wire.delta.as_ref()) else {
            return;
        };
        if delta.is_empty() {
            return;
        }
        if !self.items.get(&index).is_some_and(|state| state.started) {
            // A fragment before its item was announced: the call opens
            // now, nameless unless `.done` names it (the loop answers a
            // nameless call with an error).
            self.start_call(index, &WireItem::default(), out);
        }
        if let Some(state) = self.items.get_mut(&index) {
            state.streamed = true;
        }
        out.push(StreamEvent::ToolCallArgs {
            key: index,
            fragment: delta.clone(),
        });
    }

    /// The whole argument JSON: used only when no fragment came.
    fn arguments_done(&mut self, wire: &WireEvent<'_>, out: &mut Vec<StreamEvent>) {
        let (Some(index), Some(arguments)) = (wire.output_index, wire.arguments.as_ref()) else {
            return;
        };
        let streamed = self.items.get(&index).is_some_and(|state| state.streamed);
        if streamed || arguments.is_empty() {
            return;
        }
        self.start_call(index, &WireItem::default(), out);
        if let Some(state) = self.items.get_mut(&index) {
            state.streamed = true;
        }
        out.push(StreamEvent::ToolCallArgs {
            key: index,
            fragment: arguments.clone(),
        });
    }

    /// An item is complete. A function call never announced opens here
    /// with its arguments; a reasoning item is kept whole to be sent back;
    /// a message whose text never streamed gives its text now.
    fn item_done(&mut self, wire: &WireEvent<'_>, out: &mut Vec<StreamEvent>) -> Flow {
        let item = match parse_item(wire.item) {
            Ok(item) => item,
            Err(error) => {
                out.push(error);
                return Flow::End;
            }
        };
        let Some(index) = wire.output_index else {
            return Flow::Continue;
        };
        let state = self.items.entry(index).or_default();
        let streamed = state.streamed;
        match ItemKind::of(item.kind.as_deref()) {
            ItemKind::FunctionCall => {
                let started = state.started;
                if !started {
                    self.start_call(index, &item, out);
                } else if !streamed
                    && let Some(arguments) = item.arguments.filter(|a| !a.is_empty())
                {
                    state.streamed = true;
                    out.push(StreamEvent::ToolCallArgs {
                        key: index,
                        fragment: arguments,
                    });
                }
            }
            ItemKind::Reasoning => reasoning_done(wire.item, &item, streamed, out),
            ItemKind::Message if !streamed && !self.unplaced_text => {
                for part in item.content.iter().flatten() {
                    let text = part.text.as_ref().or(part.refusal.as_ref());
                    if let Some(text) = text.filter(|text| !text.is_empty()) {
                        out.push(StreamEvent::Text(text.clone()));
                    }
                }
                state.streamed = true;
            }
            ItemKind::Message | ItemKind::Other => {}
        }
        Flow::Continue
    }

    fn usage(&self, response: Option<&WireResponse>, out: &mut Vec<StreamEvent>) {
        if let Some(usage) = response.and_then(|r| r.usage.as_ref()).and_then(usage) {
            out.push(StreamEvent::Usage(usage));
        }
    }
}

/// The `item` of an `output_item` event.
fn parse_item(raw: Option<&RawValue>) -> Result<WireItem, StreamEvent> {
    let Some(raw) = raw else {
        return Ok(WireItem::default());
    };
    serde_json::from_str(raw.get()).map_err(|err| {
        StreamEvent::Error(format!(
            "the provider sent an output item of an unexpected shape ({err}): {}",
            http::snippet(raw.get())
        ))
    })
}

/// A finished reasoning item. One with its encrypted chain is kept
/// whole, as received, on the thinking block (its signature) so the next
/// request sends it back: after its streamed summary, or — when no summary
/// streamed — as a block of its own (Anthropic's redacted thinking). One
/// without (a server that ignored `include`) cannot be sent back under
/// `store: false`: its summary is shown and nothing is kept.
fn reasoning_done(
    raw: Option<&RawValue>,
    item: &WireItem,
    streamed: bool,
    out: &mut Vec<StreamEvent>,
) {
    let summary = || {
        item.summary
            .iter()
            .flatten()
            .filter_map(|part| part.text.as_deref())
            .filter(|text| !text.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n")
    };
    let kept = item
        .encrypted_content
        .as_ref()
        .is_some_and(|content| !content.is_empty());
    let raw = raw.map(|raw| raw.get().to_owned());
    match (kept, raw, streamed) {
        (true, Some(raw), true) => out.push(StreamEvent::ThinkingSignature(raw)),
        (true, Some(raw), false) => {
            let summary = summary();
            if summary.is_empty() {
                out.push(StreamEvent::RedactedThinking(raw));
            } else {
                out.push(StreamEvent::Thinking(summary));
                out.push(StreamEvent::ThinkingSignature(raw));
            }
        }
        (_, _, false) => {
            let summary = summary();
            if !summary.is_empty() {
                out.push(StreamEvent::Thinking(summary));
            }
        }
        (_, _, true) => {}
    }
}

/// `response.incomplete`: the output limit is `length`; any other reason
/// (`content_filter`) is an error that names it.
fn incomplete(response: Option<&WireResponse>) -> StreamEvent {
    let reason = response
        .and_then(|r| r.incomplete_details.as_ref())
        .and_then(|details| details.reason.as_deref());
    match reason {
        Some("max_output_tokens") => StreamEvent::Done(StopReason::Length),
        Some("content_filter") => StreamEvent::Error(
            "the provider's content filter stopped the reply (response.incomplete: content_filter)"
                .to_owned(),
        ),
        Some(reason) => StreamEvent::Error(format!(
            "the response ended incomplete ({}); {INCOMPLETE}",
            http::snippet(reason)
        )),
        None => StreamEvent::Error(format!(
            "the response ended incomplete without a reason; {INCOMPLETE}"
        )),
    }
}

/// `response.failed` and `error`: the server's message in the words the
/// other formats use; the event's text when it has no message.
fn mid_stream_error(message: Option<&str>, code: Option<&str>, data: &str) -> StreamEvent {
    let message = message
        .map(str::trim)
        .filter(|message| !message.is_empty())
        .map(str::to_owned)
        .or_else(|| http::provider_error_message(data))
        .unwrap_or_else(|| http::snippet(data));
    match code.filter(|code| !code.is_empty()) {
        Some(code) => provider_error(&format!("{message} ({code})")),
        None => provider_error(&message),
    }
}

/// The usage of a terminal event: cached input apart from the rest.
/// `None` for an all-zero report.
fn usage(wire: &WireUsage) -> Option<Usage> {
    let input = wire.input_tokens.unwrap_or(0);
    let output = wire.output_tokens.unwrap_or(0);
    let cached = wire
        .input_tokens_details
        .as_ref()
        .and_then(|details| details.cached_tokens)
        .unwrap_or(0);
    if input == 0 && output == 0 {
        return None;
    }
    Some(
        Usage {
            input: input.saturating_sub(cached),
            output,
            cache_read: cached.min(input),
            cache_write: 0,
            total_tokens: 0,
        }
        .with_total(),
    )
}

#[cfg(test)]
mod tests;
