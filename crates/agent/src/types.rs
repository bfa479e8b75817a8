//! The agent's own shapes: the events a run emits (ARCHITECTURE.md §1.2, §2.2), the
//! streamed deltas they carry, the hook decisions and the event sink. The
//! vocabulary it shares with providers and tools (messages, content, tool
//! calls and outputs, usage, stop reasons) lives in `leash_protocol`.
//!
//! Nothing here does I/O or keeps state between runs.

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;

use leash_protocol::{AssistantMessage, Content, Message, ToolResultMessage, Usage};

/// One streamed change to the assistant message being built, carried by
/// `message_update`. Only the delta travels: the partial message is not
/// repeated on every event.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AssistantMessageEvent {
    /// A text block opened at `content_index`.
    TextStart {
        /// Index of the block in the message's content.
        #[serde(rename = "contentIndex")]
        content_index: usize,
    },
    /// Text appended to the block at `content_index`.
    TextDelta {
        /// Index of the block in the message's content.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The new text.
        delta: String,
    },
    /// The text block at `content_index` is complete.
    TextEnd {
        /// Index of the block in the message's content.
        #[serde(rename = "contentIndex")]
        content_index: usize,
    },
    /// A thinking block opened.
    ThinkingStart {
        /// Index of the block in the message's content.
        #[serde(rename = "contentIndex")]
        content_index: usize,
    },
    /// Reasoning text appended.
    ThinkingDelta {
        /// Index of the block in the message's content.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The new text.
        delta: String,
    },
    /// The thinking block is complete.
    ThinkingEnd {
        /// Index of the block in the message's content.
        #[serde(rename = "contentIndex")]
        content_index: usize,
    },
    /// A tool call opened.
    #[serde(rename = "toolcall_start")]
    ToolCallStart {
        /// Index of the block in the message's content.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The call's id.
        id: String,
        /// The tool's name.
        #[serde(rename = "toolName")]
        tool_name: String,
    },
    /// A fragment of the call's argument JSON.
    #[serde(rename = "toolcall_delta")]
    ToolCallDelta {
        /// Index of the block in the message's content.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The fragment.
        delta: String,
    },
    /// The call's arguments are complete.
    #[serde(rename = "toolcall_end")]
    ToolCallEnd {
        /// Index of the block in the message's content.
        #[serde(rename = "contentIndex")]
        content_index: usize,
    },
}

/// Everything a run reports, in order (ARCHITECTURE.md §1.2, §2.2).
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    /// The run began.
    AgentStart,
    /// A turn began.
    TurnStart,
    /// A message began (prompt and queued messages, or a streaming reply).
    MessageStart {
        /// The message as it is now (empty for a reply that starts streaming).
        message: Message,
    },
    /// A streamed reply changed.
    MessageUpdate {
        /// The change.
        event: AssistantMessageEvent,
    },
    /// A message is final and part of the context.
    MessageEnd {
        /// The final message.
        message: Message,
    },
    /// A tool call entered the batch (also the ones that will never run).
    ToolExecutionStart {
        /// The call's id.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// The arguments as the model sent them.
        args: Value,
    },
    /// A running tool reported progress.
    ToolExecutionUpdate {
        /// The call's id.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// Whatever the tool reported.
        partial: Value,
    },
    /// A tool call is final.
    ToolExecutionEnd {
        /// The call's id.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// The result as the model will see it.
        result: ToolResultMessage,
        /// Whether it failed.
        is_error: bool,
        /// How long `execute` ran; absent when it never ran.
        duration_ms: Option<u64>,
    },
    /// A turn is over.
    TurnEnd {
        /// The turn's assistant message.
        message: AssistantMessage,
        /// The turn's tool results, in the model's order.
        tool_results: Vec<ToolResultMessage>,
    },
    /// The provider is about to retry a failed request.
    Retry {
        /// 1 for the first retry.
        attempt: u32,
        /// How long leash waits before it.
        delay_ms: u64,
        /// Why the previous attempt failed.
        reason: String,
    },
    /// The run is over.
    AgentEnd {
        /// Every message this run added.
        messages: Vec<Message>,
    },
}

/// A `before_tool_call` verdict that stops a call from running.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Block {
    /// What the model is told; `None` uses "Tool execution was blocked".
    pub reason: Option<String>,
    /// Mark the error result as wanting the batch to terminate.
    pub terminate: bool,
}

/// Field-by-field replacements `after_tool_call` may make to a result.
///
/// A tool that ran a model of its own (a sub-agent) can have its result
/// carry what that cost, as Pi's `afterToolCall` replaces `usage`:
///
/// ```
/// use leash_agent::types::ResultOverride;
/// use leash_protocol::{Usage, UsageCost};
///
/// let spent = Usage {
///     input: 1200,
///     output: 300,
///     cost: Some(UsageCost { input: 0.0036, output: 0.0045, total: 0.0081, ..UsageCost::default() }),
///     ..Usage::default()
/// }
/// .with_total();
/// let changes = ResultOverride { usage: Some(spent), ..ResultOverride::default() };
/// assert_eq!(changes.usage.map(|usage| usage.total_tokens), Some(1500));
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResultOverride {
    /// Replaces the content.
    pub content: Option<Vec<Content>>,
    /// Replaces the details.
    pub details: Option<Value>,
    /// Replaces the error flag.
    pub is_error: Option<bool>,
    /// Replaces the terminate hint.
    pub terminate: Option<bool>,
    /// Replaces the tokens (and cost) the result carries: the tool-result
    /// message's `usage`, never sent to the model.
    pub usage: Option<Usage>,
}

/// What `finish_turn` decides about the schedule (ARCHITECTURE.md §1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnDecision {
    /// Stop the run right after `turn_end`: no queue polling, no request.
    End,
    /// Guarantee one more provider request.
    Continue,
}

/// Where the loop sends its events. Called from one task at a time, in
/// event order; the loop awaits each event before it goes on, as Pi awaits
/// its `emit` (so a sink may run async listeners). Every plain
/// `Fn(AgentEvent)` closure is a sink.
pub trait EventSink: Send + Sync {
    /// Delivers one event; the loop continues once the future is done.
    fn emit(&self, event: AgentEvent) -> BoxFuture<'_, ()>;
}

impl<F> EventSink for F
where
    F: Fn(AgentEvent) + Send + Sync,
{
    fn emit(&self, event: AgentEvent) -> BoxFuture<'_, ()> {
        self(event);
        Box::pin(std::future::ready(()))
    }
}

/// The event sink as the loop borrows it.
pub type EmitFn<'a> = dyn EventSink + 'a;
