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
use leash_protocol::provider::{Provider, Request};
use leash_protocol::{
    AssistantContent, AssistantMessage, Message, StopReason, StreamEvent, ToolCall, now_ms,
};

/// The error text of every aborted message and aborted tool call.
pub const ABORTED: &str = "Operation aborted";

/// The `thinking` of a block the provider encrypted (Pi's placeholder).
pub const REDACTED_THINKING: &str = "[Reasoning redacted]";

/// The error text of a stream that stopped without saying how it ended:
/// the words the HTTP providers use for the same case.
pub const STREAM_ENDED_EARLY: &str = leash_protocol::provider::NO_STOP_REASON;

/// Sends one request and streams the reply, emitting `message_start`,
/// `message_update`s and `message_end`. Returns the final message.
pub async fn stream_assistant_response(
    provider: &dyn Provider,
    request: Request<'_>,
    cancel: &CancellationToken,
    emit: &EmitFn<'_>,
) -> AssistantMessage {
    stream_observed(provider, request, cancel, emit, &|_| {}).await
}

/// [`stream_assistant_response`], showing `observe` every provider event
/// first (the `on_provider_event` hook).
pub(crate) async fn stream_observed(
    provider: &dyn Provider,
    request: Request<'_>,
    cancel: &CancellationToken,
    emit: &EmitFn<'_>,
    observe: &(dyn Fn(&StreamEvent) + Sync),
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
        if let Some(Some(event)) = &event {
            observe(event);
        }
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
pub struct MessageBuilder {
    message: AssistantMessage,
    open: Option<OpenBlock>,
    calls: HashMap<usize, PendingCall>,
    call_order: Vec<usize>,
}

impl MessageBuilder {
    /// An empty message from `provider`'s `model`, to be built up.
    pub fn new(provider: &str, model: &str) -> Self {
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
    pub fn apply(&mut self, event: StreamEvent, out: &mut Vec<AssistantMessageEvent>) {
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
            StreamEvent::Usage(usage) => self.message.usage.merge(&usage),
            // Handled by the caller; harmless here.
            // A provider's own data is for the observer only.
            StreamEvent::Retry { .. }
            | StreamEvent::Provider(_)
            | StreamEvent::Done(_)
            | StreamEvent::Error(_) => {}
        }
    }

    /// Ends the message: closes blocks, parses tool-call arguments, sets the
    /// stop reason.
    pub fn end(
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

    /// The message assembled so far.
    pub fn into_message(self) -> AssistantMessage {
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

#[cfg(test)]
#[path = "assistant_stream_tests.rs"]
mod tests;
