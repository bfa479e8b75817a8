//! The Responses API stream decoder: one SSE event in, zero or more
//! [`StreamEvent`]s out; pure, no I/O. Events are told apart by their
//! `type` (the SSE `event:` name when a server leaves `type` out); types
//! it does not know are skipped, as the API's versioning asks.
//!
//! Output items are keyed by `output_index` (a tool call's key in the
//! [`StreamEvent`]s is its `output_index`), in a map, so a hostile server's
//! many items cost a logarithm each, not a scan.
//!
//! This file is the state machine over output items; `wire` reads the
//! events' JSON into structs, `ending` judges how a reply ended.

mod ending;
mod wire;

use std::collections::BTreeMap;

use serde_json::value::RawValue;

use crate::driver::{Flow, WireDecoder, broken_body, cut_off, unreadable_event};
use crate::{NO_STOP_REASON, sse};
use leash_protocol::StopReason;
use leash_protocol::StreamEvent;

use ending::{mid_stream_error, terminal};
use wire::{WireEvent, WireItem, parse_item};

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
                terminal(kind, wire.response.as_ref(), data, self.stop_reason(), out);
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

#[cfg(test)]
mod tests;
