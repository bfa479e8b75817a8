//! One provider request, streamed into one assistant message
//! (`streamAssistantResponse` in Pi). Provider events update the message in
//! place and go out as `message_update` deltas; the partial message is never
//! re-copied per delta.
//!
//! Whatever the provider does — ends early, fails, or is cut by an abort —
//! this always produces exactly one final assistant message.

use std::collections::HashMap;

use futures::StreamExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::types::{AgentEvent, AssistantMessageEvent, EmitFn};
use crate::protocol::{
    AssistantContent, AssistantMessage, Message, StopReason, StreamEvent, ToolCall, Usage, now_ms,
};
use crate::provider::{Provider, Request};

/// The error text of every aborted message and aborted tool call.
pub const ABORTED: &str = "Operation aborted";

/// The `thinking` of a block the provider encrypted (Pi's placeholder).
pub const REDACTED_THINKING: &str = "[Reasoning redacted]";

/// The error text of a stream that stopped without saying how it ended:
/// the words the HTTP providers use for the same case.
pub const STREAM_ENDED_EARLY: &str = crate::provider::NO_STOP_REASON;

/// Sends one request and streams the reply, emitting `message_start`,
/// `message_update`s and `message_end`. Returns the final message.
pub async fn stream_assistant_response(
    provider: &dyn Provider,
    request: Request<'_>,
    cancel: &CancellationToken,
    emit: &EmitFn<'_>,
) -> AssistantMessage {
    let mut builder = MessageBuilder::new(provider.name(), request.model);
    emit.emit(AgentEvent::MessageStart {
        message: Message::Assistant(builder.message.clone()),
    })
    .await;
    let mut stream = provider.stream(request);
    // The deltas one provider event produced, emitted before the next is read.
    let mut deltas = Vec::new();
    loop {
        let event = tokio::select! {
            biased;
            _ = cancel.cancelled() => None,
            event = stream.next() => Some(event),
        };
        let finished = match event {
            None => {
                builder.end(StopReason::Aborted, Some(ABORTED.to_owned()), &mut deltas);
                true
            }
            Some(Some(StreamEvent::Done(stop))) => {
                builder.end(stop, None, &mut deltas);
                true
            }
            Some(Some(StreamEvent::Error(text))) => {
                builder.end(StopReason::Error, Some(text), &mut deltas);
                true
            }
            Some(Some(StreamEvent::Retry {
                attempt,
                delay_ms,
                reason,
            })) => {
                emit.emit(AgentEvent::Retry {
                    attempt,
                    delay_ms,
                    reason,
                })
                .await;
                false
            }
            Some(Some(other)) => {
                builder.apply(other, &mut deltas);
                false
            }
            Some(None) => {
                builder.end(
                    StopReason::Error,
                    Some(STREAM_ENDED_EARLY.to_owned()),
                    &mut deltas,
                );
                true
            }
        };
        for event in deltas.drain(..) {
            emit.emit(AgentEvent::MessageUpdate { event }).await;
        }
        if finished {
            break;
        }
    }
    // Dropping the stream here (and on abort above) closes the connection.
    drop(stream);
    let message = builder.message;
    emit.emit(AgentEvent::MessageEnd {
        message: Message::Assistant(message.clone()),
    })
    .await;
    message
}

/// The kind of the block deltas currently go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OpenBlock {
    Text(usize),
    Thinking(usize),
}

/// A tool call whose argument JSON is still arriving.
#[derive(Debug)]
struct PendingCall {
    content_index: usize,
    raw_arguments: String,
}

/// Builds an assistant message from stream events.
#[derive(Debug)]
pub(crate) struct MessageBuilder {
    message: AssistantMessage,
    open: Option<OpenBlock>,
    calls: HashMap<usize, PendingCall>,
    call_order: Vec<usize>,
}

impl MessageBuilder {
    pub(crate) fn new(provider: &str, model: &str) -> Self {
        MessageBuilder {
            message: AssistantMessage {
                provider: provider.to_owned(),
                model: model.to_owned(),
                timestamp: now_ms(),
                ..AssistantMessage::default()
            },
            open: None,
            calls: HashMap::new(),
            call_order: Vec::new(),
        }
    }

    /// Applies one content or usage event.
    pub(crate) fn apply(&mut self, event: StreamEvent, out: &mut Vec<AssistantMessageEvent>) {
        match event {
            StreamEvent::Text(delta) => {
                let content_index = self.open_text(out);
                if let Some(AssistantContent::Text { text }) =
                    self.message.content.get_mut(content_index)
                {
                    text.push_str(&delta);
                }
                out.push(AssistantMessageEvent::TextDelta {
                    content_index,
                    delta,
                });
            }
            StreamEvent::Thinking(delta) => {
                // A signature ends its block: reasoning after it is a
                // block of its own (two reasoning items in a row).
                if self.open_thinking_is_signed() {
                    self.close_open_block(out);
                }
                let content_index = self.open_thinking(out);
                if let Some(AssistantContent::Thinking { thinking, .. }) =
                    self.message.content.get_mut(content_index)
                {
                    thinking.push_str(&delta);
                }
                out.push(AssistantMessageEvent::ThinkingDelta {
                    content_index,
                    delta,
                });
            }
            StreamEvent::ThinkingSignature(value) => {
                let content_index = self.open_thinking(out);
                if let Some(AssistantContent::Thinking { signature, .. }) =
                    self.message.content.get_mut(content_index)
                {
                    signature.get_or_insert_with(String::new).push_str(&value);
                }
            }
            StreamEvent::RedactedThinking(data) => {
                // A whole block at once: opened and closed, no delta (Pi).
                self.close_open_block(out);
                let content_index = self.message.content.len();
                self.message.content.push(AssistantContent::Thinking {
                    thinking: REDACTED_THINKING.to_owned(),
                    signature: Some(data),
                    redacted: true,
                });
                out.push(AssistantMessageEvent::ThinkingStart { content_index });
                out.push(AssistantMessageEvent::ThinkingEnd { content_index });
            }
            StreamEvent::ToolCallStart { key, id, name } => {
                self.close_open_block(out);
                let content_index = self.message.content.len();
                self.message
                    .content
                    .push(AssistantContent::ToolCall(ToolCall {
                        id: id.clone(),
                        name: name.clone(),
                        arguments: Value::Null,
                    }));
                if self
                    .calls
                    .insert(
                        key,
                        PendingCall {
                            content_index,
                            raw_arguments: String::new(),
                        },
                    )
                    .is_none()
                {
                    self.call_order.push(key);
                }
                out.push(AssistantMessageEvent::ToolCallStart {
                    content_index,
                    id,
                    tool_name: name,
                });
            }
            StreamEvent::ToolCallArgs { key, fragment } => {
                // A fragment for a call that never started is dropped: there
                // is no id to answer it by.
                if let Some(call) = self.calls.get_mut(&key) {
                    call.raw_arguments.push_str(&fragment);
                    let content_index = call.content_index;
                    out.push(AssistantMessageEvent::ToolCallDelta {
                        content_index,
                        delta: fragment,
                    });
                }
            }
            StreamEvent::Usage(usage) => merge_usage(&mut self.message.usage, &usage),
            // Handled by the caller; harmless here.
            StreamEvent::Retry { .. } | StreamEvent::Done(_) | StreamEvent::Error(_) => {}
        }
    }

    /// Ends the message: closes blocks, parses tool-call arguments, sets the
    /// stop reason.
    pub(crate) fn end(
        &mut self,
        stop: StopReason,
        error: Option<String>,
        out: &mut Vec<AssistantMessageEvent>,
    ) {
        self.close_open_block(out);
        for key in std::mem::take(&mut self.call_order) {
            let Some(call) = self.calls.remove(&key) else {
                continue;
            };
            if let Some(AssistantContent::ToolCall(tool_call)) =
                self.message.content.get_mut(call.content_index)
            {
                tool_call.arguments = parse_arguments(call.raw_arguments);
            }
            out.push(AssistantMessageEvent::ToolCallEnd {
                content_index: call.content_index,
            });
        }
        self.message.stop_reason = stop;
        self.message.error_message = error;
    }

    #[cfg(test)]
    pub(crate) fn into_message(self) -> AssistantMessage {
        self.message
    }

    fn open_text(&mut self, out: &mut Vec<AssistantMessageEvent>) -> usize {
        if let Some(OpenBlock::Text(index)) = self.open {
            return index;
        }
        self.close_open_block(out);
        let index = self.message.content.len();
        self.message.content.push(AssistantContent::Text {
            text: String::new(),
        });
        self.open = Some(OpenBlock::Text(index));
        out.push(AssistantMessageEvent::TextStart {
            content_index: index,
        });
        index
    }

    fn open_thinking(&mut self, out: &mut Vec<AssistantMessageEvent>) -> usize {
        if let Some(OpenBlock::Thinking(index)) = self.open {
            return index;
        }
        self.close_open_block(out);
        let index = self.message.content.len();
        self.message.content.push(AssistantContent::Thinking {
            thinking: String::new(),
            signature: None,
            redacted: false,
        });
        self.open = Some(OpenBlock::Thinking(index));
        out.push(AssistantMessageEvent::ThinkingStart {
            content_index: index,
        });
        index
    }

    fn open_thinking_is_signed(&self) -> bool {
        match self.open {
            Some(OpenBlock::Thinking(index)) => matches!(
                self.message.content.get(index),
                Some(AssistantContent::Thinking {
                    signature: Some(_),
                    ..
                })
            ),
            _ => false,
        }
    }

    fn close_open_block(&mut self, out: &mut Vec<AssistantMessageEvent>) {
        match self.open.take() {
            Some(OpenBlock::Text(content_index)) => {
                out.push(AssistantMessageEvent::TextEnd { content_index })
            }
            Some(OpenBlock::Thinking(content_index)) => {
                out.push(AssistantMessageEvent::ThinkingEnd { content_index })
            }
            None => {}
        }
    }
}

/// Tool-call arguments from the streamed JSON text. No text means no
/// arguments (`{}`); text that does not parse is kept as a string so the
/// call fails validation with a message instead of disappearing.
fn parse_arguments(raw: String) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(serde_json::Map::new());
    }
    serde_json::from_str(&raw).unwrap_or(Value::String(raw))
}

/// Providers report usage in pieces (Anthropic: input at the start, output
/// at the end); a later non-zero count replaces an earlier one.
fn merge_usage(into: &mut Usage, from: &Usage) {
    fn take(into: &mut u64, from: u64) {
        if from != 0 {
            *into = from;
        }
    }
    take(&mut into.input, from.input);
    take(&mut into.output, from.output);
    take(&mut into.cache_read, from.cache_read);
    take(&mut into.cache_write, from.cache_write);
    *into = into.with_total();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(events: Vec<StreamEvent>) -> (AssistantMessage, Vec<AssistantMessageEvent>) {
        let mut seen = Vec::new();
        let mut builder = MessageBuilder::new("test", "m");
        let mut stop = None;
        for event in events {
            match event {
                StreamEvent::Done(reason) => stop = Some(reason),
                other => builder.apply(other, &mut seen),
            }
        }
        builder.end(stop.unwrap_or(StopReason::Error), None, &mut seen);
        let message = builder.into_message();
        (message, seen)
    }

    #[test]
    fn text_deltas_append_to_one_block() {
        let (message, updates) = build(vec![
            StreamEvent::Text("Hel".into()),
            StreamEvent::Text("lo".into()),
            StreamEvent::Done(StopReason::Stop),
        ]);
        assert_eq!(message.text(), "Hello");
        assert_eq!(message.content.len(), 1);
        assert_eq!(
            updates,
            vec![
                AssistantMessageEvent::TextStart { content_index: 0 },
                AssistantMessageEvent::TextDelta {
                    content_index: 0,
                    delta: "Hel".into()
                },
                AssistantMessageEvent::TextDelta {
                    content_index: 0,
                    delta: "lo".into()
                },
                AssistantMessageEvent::TextEnd { content_index: 0 },
            ]
        );
    }

    #[test]
    fn interleaved_tool_call_fragments_are_assembled_by_key() {
        let (message, _) = build(vec![
            StreamEvent::Text("Reading.".into()),
            StreamEvent::ToolCallStart {
                key: 0,
                id: "a".into(),
                name: "read_file".into(),
            },
            StreamEvent::ToolCallStart {
                key: 1,
                id: "b".into(),
                name: "list_dir".into(),
            },
            StreamEvent::ToolCallArgs {
                key: 1,
                fragment: "{\"pa".into(),
            },
            StreamEvent::ToolCallArgs {
                key: 0,
                fragment: "{\"path\":".into(),
            },
            StreamEvent::ToolCallArgs {
                key: 0,
                fragment: "\"x.ts\"}".into(),
            },
            StreamEvent::ToolCallArgs {
                key: 1,
                fragment: "th\":\"src\"}".into(),
            },
            StreamEvent::Done(StopReason::ToolUse),
        ]);
        let calls: Vec<_> = message.tool_calls().collect();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].id, "a");
        assert_eq!(calls[0].arguments, serde_json::json!({"path": "x.ts"}));
        assert_eq!(calls[1].id, "b");
        assert_eq!(calls[1].arguments, serde_json::json!({"path": "src"}));
        assert_eq!(message.stop_reason, StopReason::ToolUse);
    }

    #[test]
    fn missing_arguments_are_an_empty_object_and_broken_json_is_kept_raw() {
        let (message, _) = build(vec![
            StreamEvent::ToolCallStart {
                key: 0,
                id: "a".into(),
                name: "list_dir".into(),
            },
            StreamEvent::ToolCallStart {
                key: 1,
                id: "b".into(),
                name: "read_file".into(),
            },
            StreamEvent::ToolCallArgs {
                key: 1,
                fragment: "{\"path\": ".into(),
            },
            StreamEvent::Done(StopReason::Length),
        ]);
        let calls: Vec<_> = message.tool_calls().collect();
        assert_eq!(calls[0].arguments, serde_json::json!({}));
        assert_eq!(calls[1].arguments, Value::String("{\"path\": ".into()));
    }

    #[test]
    fn thinking_then_text_opens_two_blocks_and_keeps_the_signature() {
        let (message, _) = build(vec![
            StreamEvent::Thinking("hmm".into()),
            StreamEvent::ThinkingSignature("sig".into()),
            StreamEvent::Text("answer".into()),
            StreamEvent::Done(StopReason::Stop),
        ]);
        assert_eq!(
            message.content,
            vec![
                AssistantContent::Thinking {
                    thinking: "hmm".into(),
                    signature: Some("sig".into()),
                    redacted: false,
                },
                AssistantContent::Text {
                    text: "answer".into()
                },
            ]
        );
    }

    #[test]
    fn reasoning_after_a_signed_block_opens_a_block_of_its_own() {
        // Two reasoning items in a row (Responses), or two Anthropic
        // thinking blocks: each keeps its own signature.
        let (message, _) = build(vec![
            StreamEvent::Thinking("first".into()),
            StreamEvent::ThinkingSignature("sig1".into()),
            StreamEvent::Thinking("second".into()),
            StreamEvent::ThinkingSignature("sig2".into()),
            StreamEvent::Done(StopReason::Stop),
        ]);
        let thinking = |text: &str, sig: &str| AssistantContent::Thinking {
            thinking: text.into(),
            signature: Some(sig.into()),
            redacted: false,
        };
        assert_eq!(
            message.content,
            vec![thinking("first", "sig1"), thinking("second", "sig2")]
        );
    }

    #[test]
    fn usage_pieces_merge_and_total_is_recomputed() {
        let (message, _) = build(vec![
            StreamEvent::Usage(Usage {
                input: 10,
                cache_read: 5,
                ..Usage::default()
            }),
            StreamEvent::Usage(Usage {
                output: 7,
                ..Usage::default()
            }),
            StreamEvent::Done(StopReason::Stop),
        ]);
        assert_eq!(message.usage.input, 10);
        assert_eq!(message.usage.output, 7);
        assert_eq!(message.usage.cache_read, 5);
        assert_eq!(message.usage.total_tokens, 22);
    }
}
