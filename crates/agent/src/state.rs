//! What the `Agent` shows of its run while it goes (the runtime-owned part
//! of Pi's `AgentState`, reduced from the run's events as Pi's
//! `processEvents` does): the message being streamed, the tool calls
//! started and not yet ended, the error message of the last failed or
//! aborted run.
//!
//! It only watches events: it must never change one or decide anything.

use super::types::{AgentEvent, AssistantMessageEvent};
use leash_protocol::{AssistantContent, Message, ToolCall};

/// The run's view, updated by each event before any listener sees it.
#[derive(Debug, Default)]
pub(super) struct RunView {
    /// The message between its `message_start` and `message_end`.
    pub(super) streaming: Option<Message>,
    /// Ids of the calls between `tool_execution_start` and `_end`, in start order.
    pub(super) pending_tool_calls: Vec<String>,
    /// The `errorMessage` of the last `turn_end` that carried one.
    pub(super) error: Option<String>,
}

impl RunView {
    /// A run starts: nothing streams, nothing is pending, no error yet.
    pub(super) fn begin(&mut self) {
        *self = RunView::default();
    }

    /// A run is over: nothing streams or is pending; the error stays.
    pub(super) fn finish(&mut self) {
        self.streaming = None;
        self.pending_tool_calls.clear();
    }

    /// Follows one event.
    pub(super) fn observe(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::MessageStart { message } => self.streaming = Some(message.clone()),
            AgentEvent::MessageUpdate { event } => {
                if let Some(Message::Assistant(message)) = &mut self.streaming {
                    apply(&mut message.content, event);
                }
            }
            AgentEvent::MessageEnd { .. } | AgentEvent::AgentEnd { .. } => self.streaming = None,
            AgentEvent::ToolExecutionStart { tool_call_id, .. } => {
                self.pending_tool_calls.push(tool_call_id.clone());
            }
            AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
                self.pending_tool_calls.retain(|id| id != tool_call_id);
            }
            AgentEvent::TurnEnd { message, .. } => {
                if let Some(error) = &message.error_message {
                    self.error = Some(error.clone());
                }
            }
            _ => {}
        }
    }
}

/// Applies one streamed delta to the partial content. Text and thinking
/// grow as they arrive; a tool call shows its id and name at once and its
/// arguments only in the final message (`message_end`).
fn apply(content: &mut Vec<AssistantContent>, event: &AssistantMessageEvent) {
    match event {
        AssistantMessageEvent::TextStart { content_index } => {
            place(
                content,
                *content_index,
                AssistantContent::Text {
                    text: String::new(),
                },
            );
        }
        AssistantMessageEvent::ThinkingStart { content_index } => place(
            content,
            *content_index,
            AssistantContent::Thinking {
                thinking: String::new(),
                signature: None,
                redacted: false,
            },
        ),
        AssistantMessageEvent::ToolCallStart {
            content_index,
            id,
            tool_name,
        } => place(
            content,
            *content_index,
            AssistantContent::ToolCall(ToolCall {
                id: id.clone(),
                name: tool_name.clone(),
                arguments: serde_json::Value::Object(serde_json::Map::new()),
            }),
        ),
        AssistantMessageEvent::TextDelta {
            content_index,
            delta,
        } => {
            if let Some(AssistantContent::Text { text }) = content.get_mut(*content_index) {
                text.push_str(delta);
            }
        }
        AssistantMessageEvent::ThinkingDelta {
            content_index,
            delta,
        } => {
            if let Some(AssistantContent::Thinking { thinking, .. }) =
                content.get_mut(*content_index)
            {
                thinking.push_str(delta);
            }
        }
        AssistantMessageEvent::TextEnd { .. }
        | AssistantMessageEvent::ThinkingEnd { .. }
        | AssistantMessageEvent::ToolCallDelta { .. }
        | AssistantMessageEvent::ToolCallEnd { .. } => {}
    }
}

/// Puts a new block at `index` (the next one, unless a provider skipped).
fn place(content: &mut Vec<AssistantContent>, index: usize, block: AssistantContent) {
    match content.get_mut(index) {
        Some(slot) => *slot = block,
        None => {
            while content.len() < index {
                content.push(AssistantContent::Text {
                    text: String::new(),
                });
            }
            content.push(block);
        }
    }
}
